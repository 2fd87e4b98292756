"""What the paper sweeps (:mod:`scenarios.kit.sweep`) and benchmarks share: common options, seeds, summaries, CSV,
figures, progress and the ``--secure`` checks.  The experiments are *simulated* at party 0 inside the party
lifecycle (the other parties exchange public values only): run ``r``'s data from ``public_generator(run_seed[r])``,
its noise at setting ``s`` from a stream of ``(--seed, s, r)`` (simulations only; ``--os-noise``: the OS)."""
from __future__ import annotations

import csv
import math
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dp.budget.accountants import Spend
from dp.budget.agreement import SpendRequest
from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.packages import require_packages
from secure.errors import ProtocolFailure
from secure.public_randomness import joint_seed, public_generator

__all__ = ["CommonOptions", "add_common_options", "common_options", "parse_positive_list", "parse_integer_list",
           "check_positive_number", "agree_seed", "check_results_dir", "run_seeds", "noise_generator", "progress",
           "summarize", "summarize_runs", "write_csv", "new_figure", "style_axes", "errorbars", "save_figure",
           "print_rows", "format_mean", "poisson_cumulative_counts", "seed_note", "exempt_spend", "benchmark_spend",
           "SecureCheck", "check_noise_generator", "party_draws", "equal_checks", "finish_secure_checks"]


@dataclass(frozen=True)
class CommonOptions:
    """The options every experiment accepts, resolved for ``--quick`` (``seed`` ``None``: a joint seed;
    ``secure``: also run the protocol once on the MPyC path, :func:`finish_secure_checks`)."""

    runs: int
    quick: bool
    results_dir: str
    seed: int | None
    os_noise: bool
    secure: bool = False


def add_common_options(parser: ScenarioParser, *, secure: bool = False,
                       runs: str = "Monte Carlo repetitions per setting") -> None:
    """Add ``--runs`` (help ``runs``), ``--quick``, ``--results-dir``, ``--seed``, ``--os-noise`` (and ``--secure``)."""
    parser.add_argument("--runs", type=int, default=None, help=runs)
    parser.add_argument("--quick", action="store_true",
                        help="tiny configuration (small grid, few settings and runs), for tests")
    parser.add_argument("--results-dir", default="results",
                        help="directory for the CSV and PNG files (default results/)")
    parser.add_argument("--seed", type=int, default=None,
                        help="public seed for the data (default: a joint seed of all parties)")
    parser.add_argument("--os-noise", action="store_true",
                        help="draw the DP noise from OS randomness (not reproducible), as releases do")
    if secure:
        parser.add_argument("--secure", action="store_true",
                            help="also run one repetition of the protocol on the MPyC path (with -M3: real "
                                 "parties) and show that it agrees with the simulated path")


def common_options(args: Any, *, runs: int, quick_runs: int, min_runs: int = 1) -> CommonOptions:
    """Resolve the common options of parsed ``args`` (``runs`` / ``quick_runs``: the default ``--runs``, also without
    the option; without ``--seed``: a joint seed); :class:`UsageError` for ``--runs`` below ``min_runs``, a negative
    ``--seed``, an empty ``--results-dir``, no tqdm or matplotlib."""
    require_packages("tqdm", "matplotlib", purpose="this experiment (progress bars and figures)")
    chosen, seed = getattr(args, "runs", None), getattr(args, "seed", None)
    chosen = chosen if chosen is not None else (quick_runs if args.quick else runs)
    if chosen < min_runs:
        raise UsageError(f"--runs must be at least {min_runs}, got {chosen}")
    if seed is not None and seed < 0:
        raise UsageError(f"--seed must be non-negative, got {seed}")
    if not args.results_dir:
        raise UsageError("--results-dir must not be empty")
    return CommonOptions(runs=chosen, quick=bool(args.quick), results_dir=str(args.results_dir), seed=seed,
                         os_noise=bool(getattr(args, "os_noise", False)), secure=bool(getattr(args, "secure", False)))


def check_positive_number(value: float, option: str) -> float:
    """``value`` if finite and positive; else :class:`UsageError` ``--option must be a positive number, got ...``."""
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} must be a positive number, got {value:g}")
    return float(value)


def _parse_list(text: str, option: str, kind: str, convert: Callable[[str], Any],
                check: Callable[[Any], Any]) -> tuple[Any, ...]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{option} expects a comma-separated list of {kind}, got '{text}'")
    values = []
    for item in items:
        try:
            value = convert(item)
        except ValueError:
            raise UsageError(f"{option} expects {kind.split()[-1]}, got '{item}'") from None
        values.append(check(value))
    return tuple(sorted(set(values)))


def parse_positive_list(text: str, option: str) -> tuple[float, ...]:
    """Comma-separated positive numbers (``"0.1,1,10"``), sorted, without duplicates; :class:`UsageError`."""
    return _parse_list(text, option, "positive numbers", float, lambda v: check_positive_number(v, option))


def parse_integer_list(text: str, option: str, *, low: int, high: int) -> tuple[int, ...]:
    """Comma-separated integers in ``[low, high]`` (``"4,8,16"``), sorted, without duplicates; :class:`UsageError`."""
    def check(value: int) -> int:
        if not low <= value <= high:
            raise UsageError(f"{option} must lie in [{low}, {high}], got {value}")
        return value

    return _parse_list(text, option, "integers", int, check)


async def agree_seed(seed: int | None) -> int:
    """The public seed: ``seed`` if given, else a joint seed every party contributes to (collective)."""
    return int(seed) if seed is not None else await joint_seed()


async def check_results_dir(path: str) -> None:
    """Party 0 makes sure it can write to ``path``; every party learns the verdict (collective: a bad directory
    stops every party with exit code 2 and the same one line, before any work)."""
    from mpyc.runtime import mpc

    from secure.session import agree_verdict

    error: str | None = None
    if mpc.pid == 0:
        try:
            if os.path.exists(path) and not os.path.isdir(path):  # makedirs would say only "File exists"
                raise NotADirectoryError(path)
            os.makedirs(path, exist_ok=True)
            if not os.access(path, os.W_OK):
                error = f"--results-dir {path}: not writable"
        except NotADirectoryError:  # the path, or a folder on it, is a file
            error = f"--results-dir {path}: not a directory"
        except OSError as exc:
            error = f"--results-dir {path}: {exc.strerror or exc}"
    await agree_verdict(error)


def exempt_spend(_: Any = None, *, note: str = "") -> Any:
    """The spend of a simulated experiment (or, with ``note``, a benchmark) on embedded or synthetic public data:
    nothing, said in the output (docs/design.md: exempt, and said so)."""
    note = note or ("simulated on embedded or synthetic public data: exempt from the privacy budget, no budget kept "
                    "(a run on a user's --data file charges every noisy value it draws)")
    return SpendRequest(spend=Spend(epsilon=0.0, what="experiment on public data"), scenario="experiment", exempt=note)


def benchmark_spend(_: Any = None) -> Any:
    """:func:`exempt_spend` of a benchmark scenario."""
    return exempt_spend(note="a benchmark on embedded or synthetic public data: exempt from the privacy budget, "
                             "no budget kept")


def run_seeds(seed: int, runs: int) -> np.ndarray:
    """Public per-run seeds drawn from ``public_generator(seed)`` (the same for every setting)."""
    return public_generator(seed).integers(0, 2**63 - 1, size=runs, dtype=np.int64)


def _spawned(seed: int, *key: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=tuple(map(int, key)))))


def noise_generator(seed: int, setting: int, run: int, *, os_noise: bool) -> np.random.Generator | None:
    """The noise of run ``run`` at setting ``setting``: spawned from ``seed`` with key ``(1, setting, run)``
    (independent of the data streams; simulations only), or ``None`` (OS randomness) with ``os_noise``."""
    return None if os_noise else _spawned(seed, 1, setting, run)


def progress(total: int, description: str) -> Any:
    """A tqdm progress bar on stderr (one tick per run)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="run", file=sys.stderr, leave=True,
                dynamic_ncols=True, mininterval=0.5)


def poisson_cumulative_counts(generator: np.random.Generator, rate: float, points: int) -> np.ndarray:
    """The paper's synthetic ``X_pois(lambda)`` (Barczewski et al. Sec. 6.2) as cumulative counts on ``1..N``:
    ``Poisson(lambda)`` instances of each value, ``c_i = #{x <= i}`` (int64, non-decreasing, ``n = c_N``)."""
    return np.cumsum(generator.poisson(rate, size=points)).astype(np.int64)


def summarize(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean (``s / sqrt(k)``, ``ddof=1``; needs 2 values) and count of the finite
    values (``nan`` where undefined)."""
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    count = int(data.size)
    if count == 0:
        return math.nan, math.nan, 0
    error = float(np.std(data, ddof=1) / math.sqrt(count)) if count > 1 else math.nan
    return float(np.mean(data)), error, count


def summarize_runs(records: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, float]:
    """``{metric}_mean`` and ``{metric}_se`` for every metric over the runs' records."""
    summaries = {metric: summarize(record[metric] for record in records) for metric in metrics}
    return {f"{metric}_{part}": value for metric, (mean, error, _) in summaries.items()
            for part, value in (("mean", mean), ("se", error))}


def format_mean(mean: float, error: float, digits: int = 3) -> str:
    """``0.123 ± 0.004`` (``nan`` parts shown as ``-``)."""
    if not math.isfinite(mean):
        return "-"
    return f"{mean:.{digits}g}" if not math.isfinite(error) else f"{mean:.{digits}g} ± {error:.2g}"


@dataclass(frozen=True)
class SecureCheck:
    """One ``--secure`` comparison: the value the MPyC path released beside the simulated path's, relation
    ``equal`` (same tuples and draws: identical)."""

    setting: str
    secure: float
    simulated: float

    @property
    def ok(self) -> bool:
        return abs(self.secure - self.simulated) == 0.0


def check_noise_generator(seed: int, setting: int, party: int = 0, *, key: int = 2) -> np.random.Generator:
    """The draws of ``--secure`` check ``setting`` at ``party``: spawned from the public seed with key
    ``(key, setting, party)``, independent of the experiment's streams.  Both paths get the very same draws,
    so party 0 recomputes every party's: for a *check* on public data only; a release draws OS randomness."""
    return _spawned(seed, key, setting, party)


def party_draws(seed: int, setting: int, parties: int, draw: Callable[[np.random.Generator], Any], *,
                key: int = 2) -> list[Any]:
    """Every party's fixed draws of one check: ``draw(check_noise_generator(seed, setting, party, key=key))``."""
    return [draw(check_noise_generator(seed, setting, party, key=key)) for party in range(parties)]


def equal_checks(label: str, secure: Mapping[str, float], simulated: Mapping[str, float],
                 metrics: Iterable[str]) -> list[SecureCheck]:
    """One ``equal`` check per metric: ``"<label>: <metric>"``, the MPyC path's value beside the simulated one."""
    return [SecureCheck(f"{label}: {metric}", float(secure[metric]), float(simulated[metric])) for metric in metrics]


def finish_secure_checks(name: str, checks: Sequence[SecureCheck], results_dir: str, *, note: str = "") -> None:
    """At party 0: print ``note`` (what the checks do not cover) and the ``--secure`` table, write
    ``<name>_secure.csv``; a disagreement raises :class:`secure.errors.ProtocolFailure` (exit 1, one line)."""
    if note:
        print(f"  {note}")
    rows = [[c.setting, f"{c.secure:.10g}", f"{c.simulated:.10g}", "equal", "agrees" if c.ok else "DISAGREES"]
            for c in checks]
    print_rows(f"--secure: the protocol on the MPyC path beside the simulated path ({name})",
               ["setting", "MPyC path", "simulated", "relation", "check"], rows)
    os.makedirs(results_dir, exist_ok=True)
    write_csv(os.path.join(results_dir, f"{name}_secure.csv"),
              ["setting", "secure", "simulated", "relation", "tolerance", "ok"],
              [{"setting": c.setting, "secure": c.secure, "simulated": c.simulated, "relation": "equal",
                "tolerance": 0.0, "ok": c.ok} for c in checks])
    if not all(c.ok for c in checks):
        raise ProtocolFailure(f"--secure: the MPyC path disagrees with the simulated path (see {name}_secure.csv)")


def write_csv(path: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` (dicts keyed by ``columns``) as a CSV file with a header; floats at ``repr`` precision."""
    def cell(value: Any) -> str:
        if isinstance(value, (float, np.floating)):
            return repr(float(value))
        return str(int(value)) if isinstance(value, np.integer) else str(value)

    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows([cell(row[column]) for column in columns] for row in rows)


def new_figure(width: float = 6.4, height: float = 4.8, *, panels: tuple[int, int] | None = None) -> tuple[Any, Any]:
    """A matplotlib figure on the Agg canvas (no pyplot) and its axes: one, or with ``panels`` a flat list of them."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    if panels is None:
        return figure, figure.add_subplot()
    return figure, list(np.asarray(figure.subplots(*panels, squeeze=False)).ravel())


def style_axes(axes: Any, *, xlabel: str | None = None, ylabel: str | None = None, title: str | None = None,
               log: str = "xy", base: int = 10, fontsize: float = 9, legend: float | None = 8,
               handlelength: float | None = None) -> None:
    """The finish of one panel: log scales (``log``: ``"xy"``, ``"y"``, ``""``; ``base`` of x), labels, title,
    a legend (font size ``legend``; ``None``: none) and a grid."""
    if "x" in log:
        axes.set_xscale("log", base=base)
    if "y" in log:
        axes.set_yscale("log")
    if xlabel is not None:
        axes.set_xlabel(xlabel)
    if ylabel is not None:
        axes.set_ylabel(ylabel)
    if title is not None:
        axes.set_title(title, fontsize=fontsize)
    if legend is not None:
        axes.legend(fontsize=legend, handlelength=handlelength)
    axes.grid(True, which="both", alpha=0.3)


def errorbars(axes: Any, rows: Sequence[Mapping[str, Any]], x: str, metric: str, **style: Any) -> Any:
    """``<metric>_mean`` ± ``<metric>_se`` of ``rows`` against ``row[x]`` (capsize 3 unless ``style`` says)."""
    return axes.errorbar([row[x] for row in rows], [row[f"{metric}_mean"] for row in rows],
                         yerr=np.nan_to_num([row[f"{metric}_se"] for row in rows]), **{"capsize": 3, **style})


def save_figure(figure: Any, path: str) -> None:
    figure.savefig(path, format="png", dpi=150)


def seed_note(seed: int, os_noise: bool) -> str:
    """One line saying what the seed fixes and how to repeat the run."""
    if os_noise:
        return f"seed {seed} fixes the data (--seed {seed}); the noise came from OS randomness"
    return f"seed {seed} fixes the data and the (simulation-only) noise: --seed {seed} repeats this run"


def print_rows(title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
               notes: Sequence[str] = ()) -> None:
    """Print a title, the ``notes``, then ``rows`` of strings as right-aligned columns under ``header``."""
    widths = [max(len(header[k]), *(len(row[k]) for row in rows)) if rows else len(header[k])
              for k in range(len(header))]
    print(title)
    for note in notes:
        print(f"  {note}")
    print("  " + "  ".join(name.rjust(width) for name, width in zip(header, widths)))
    for row in rows:
        print("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
    sys.stdout.flush()
