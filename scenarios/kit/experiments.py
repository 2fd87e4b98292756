"""What the Monte Carlo experiments, paper sweeps (:mod:`scenarios.kit.sweep`) and benchmarks share: the common
options, seeds, summaries, CSV, PNG, progress and the ``--secure`` checks.

The experiments are *simulated*: the mechanism of the secure path in plain numpy at party 0, repeated
``--runs`` times, inside the standard party lifecycle (:func:`scenarios.kit.cli.run_scenario`: MPyC's options
work; the other parties agree on the parameters and the joint seed and stop).  Threat model: nothing secret
crosses a network; the other parties exchange public values only (with ``--secure``, the protocol runs once
on the MPyC path and party 0 compares it with the simulation).

Seeds: data of run ``r`` comes from ``public_generator(run_seed[r])`` (common random numbers across settings);
the DP noise of run ``r`` at setting ``s`` is, by default, a stream spawned from ``(--seed, s, r)``, for
reproducible *simulations* only; a release draws fresh OS randomness, and ``--os-noise`` makes the
experiments do the same.
"""
from __future__ import annotations

import csv
import math
import os
import time
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError

__all__ = [
    "DEFAULT_RESULTS_DIR",
    "CommonOptions",
    "add_common_options",
    "common_options",
    "parse_positive_list",
    "parse_integer_list",
    "check_positive_number",
    "agree_seed",
    "check_results_dir",
    "run_seeds",
    "data_generator",
    "noise_generator",
    "progress",
    "summarize",
    "summarize_runs",
    "write_csv",
    "new_figure",
    "save_figure",
    "print_rows",
    "format_mean",
    "poisson_cumulative_counts",
    "seed_note",
    "EXEMPT_NOTE",
    "exempt_spend",
    "monte_carlo_spend",
    "SecureCheck",
    "report_secure_checks",
    "check_noise_generator",
    "finish_secure_checks",
]

DEFAULT_RESULTS_DIR = "results"


@dataclass(frozen=True)
class CommonOptions:
    """The options every experiment scenario accepts (already resolved for ``--quick``).

    :ivar runs: Monte Carlo repetitions per setting.
    :ivar quick: the tiny test configuration was asked for.
    :ivar results_dir: directory for the CSV and PNG files (party 0 only).
    :ivar seed: public seed, or ``None`` for a joint seed agreed at run time.
    :ivar os_noise: draw DP noise from OS randomness instead of seeded streams.
    :ivar secure: also run one repetition on the MPyC path and compare (:func:`report_secure_checks`).
    """

    runs: int
    quick: bool
    results_dir: str
    seed: int | None
    os_noise: bool
    secure: bool = False


def add_common_options(parser: ScenarioParser, *, secure: bool = False) -> None:
    """Add ``--runs``, ``--quick``, ``--results-dir``, ``--seed``, ``--os-noise`` to ``parser``, and ``--secure``
    for a scenario that implements its check (:func:`report_secure_checks`)."""
    parser.add_argument("--runs", type=int, default=None,
                        help="Monte Carlo repetitions per setting")
    parser.add_argument("--quick", action="store_true",
                        help="tiny configuration (small grid, few settings and runs), for tests")
    parser.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR,
                        help="directory for the CSV and PNG files (default results/)")
    parser.add_argument("--seed", type=int, default=None,
                        help="public seed for the data (default: a joint seed of all parties)")
    parser.add_argument("--os-noise", action="store_true",
                        help="draw the DP noise from OS randomness (not reproducible), as releases do")
    if secure:
        parser.add_argument("--secure", action="store_true",
                            help="also run one repetition of the protocol on the MPyC path (with -M3: real "
                                 "parties) and show that it agrees with the simulated path")


def common_options(args: Any, *, runs: int, quick_runs: int) -> CommonOptions:
    """Resolve the common options of parsed ``args``.

    :param runs: default number of runs.
    :param quick_runs: default number of runs with ``--quick``.
    :raise UsageError: if ``--runs`` is below 1, ``--seed`` is negative or ``--results-dir`` empty, or
        ``tqdm`` or ``matplotlib`` (progress bars, figures) is not installed.
    """
    from scenarios.kit.packages import require_packages

    require_packages("tqdm", "matplotlib", purpose="this experiment (progress bars and figures)")
    chosen = args.runs if args.runs is not None else (quick_runs if args.quick else runs)
    if chosen < 1:
        raise UsageError(f"--runs must be at least 1, got {chosen}")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be non-negative, got {args.seed}")
    if not args.results_dir:
        raise UsageError("--results-dir must not be empty")
    return CommonOptions(runs=chosen, quick=bool(args.quick), results_dir=str(args.results_dir),
                         seed=args.seed, os_noise=bool(args.os_noise), secure=bool(getattr(args, "secure", False)))


def check_positive_number(value: float, option: str) -> float:
    """Return ``value`` if it is finite and positive.

    :raise UsageError: ``--option must be positive, got ...`` otherwise.
    """
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} must be a positive number, got {value:g}")
    return float(value)


def parse_positive_list(text: str, option: str) -> tuple[float, ...]:
    """Parse a comma-separated list of positive numbers (``"0.1,1,10"``), sorted, without duplicates.

    :raise UsageError: on an empty list, a non-number or a value that is not positive and finite.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{option} expects a comma-separated list of positive numbers, got '{text}'")
    values = []
    for item in items:
        try:
            number = float(item)
        except ValueError:
            raise UsageError(f"{option} expects numbers, got '{item}'") from None
        values.append(check_positive_number(number, option))
    return tuple(sorted(set(values)))


def parse_integer_list(text: str, option: str, *, low: int, high: int) -> tuple[int, ...]:
    """Parse a comma-separated list of integers in ``[low, high]`` (``"4,8,16"``), sorted, without duplicates.

    :raise UsageError: on an empty list, a non-integer or a value outside ``[low, high]``.
    """
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"{option} expects a comma-separated list of integers, got '{text}'")
    values = []
    for item in items:
        try:
            value = int(item)
        except ValueError:
            raise UsageError(f"{option} expects integers, got '{item}'") from None
        if not low <= value <= high:
            raise UsageError(f"{option} must lie in [{low}, {high}], got {value}")
        values.append(value)
    return tuple(sorted(set(values)))


# --------------------------------------------------------------------------------------------------
# party lifecycle helpers (call from a scenario body, at every party)

async def agree_seed(seed: int | None) -> int:
    """The public seed: ``seed`` if given, else a joint seed every party contributes to.

    Collective when ``seed`` is ``None`` (every party must call it).
    """
    if seed is not None:
        return int(seed)
    from secure.public_randomness import joint_seed

    return await joint_seed()


async def check_results_dir(path: str) -> None:
    """Party 0 makes sure it can write to ``path``; every party learns the verdict.

    Collective (every party must call it): a bad directory stops every party with exit code 2 and
    the same one-line message, before any work is done.
    """
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


# --------------------------------------------------------------------------------------------------
# random streams

#: the budget line of a simulated experiment on embedded or synthetic data (docs/design.md: exempt, and said so)
EXEMPT_NOTE = ("simulated on embedded or synthetic public data: exempt from the privacy budget, no budget kept "
               "(a run on a user's --data file charges every noisy value it draws)")


#: the budget line of a benchmark: it measures costs on embedded or synthetic public data
BENCHMARK_NOTE = "a benchmark on embedded or synthetic public data: exempt from the privacy budget, no budget kept"


def exempt_spend(_: Any = None, *, note: str = EXEMPT_NOTE) -> Any:
    """The spend of a simulated experiment (or, with ``note``, a benchmark) on embedded or synthetic public
    data: nothing, said in the output."""
    from dp.budget.accountants import Spend
    from scenarios.kit.budget_run import BudgetOptions, spend_request

    return spend_request(BudgetOptions(), Spend(epsilon=0.0, what="experiment on public data"),
                         scenario="experiment", data=None, exempt=note)


def benchmark_spend(_: Any = None) -> Any:
    """:func:`exempt_spend` of a benchmark scenario (:data:`BENCHMARK_NOTE`)."""
    return exempt_spend(note=BENCHMARK_NOTE)


def monte_carlo_spend(budget: Any, *, epsilon: float, delta: float = 0.0, releases: int, data: str,
                      scenario: str, mechanism: str = "") -> Any:
    """The spend of a Monte Carlo experiment run on a user's data file (``--data FILE``).

    Each of its ``releases`` (runs x settings) draws a noisy value of the same rows, so the run is
    charged their sum by basic composition (Dwork & Roth 2014, Thm 3.16): ``releases * epsilon`` and
    ``releases * delta``, whatever the accountant of the account (it composes the one spend further).

    :param budget: the scenario's :class:`scenarios.kit.budget_run.BudgetOptions` (``--ledger``, ``--budget``).
    :param epsilon: the budget of one release; ``delta`` likewise.
    :param releases: the number of noisy values drawn on the data (runs x settings), at least 1.
    :raise ValueError: ``releases`` below 1.
    """
    from dp.budget.accountants import Spend
    from scenarios.kit.budget_run import spend_request

    if releases < 1:
        raise ValueError(f"releases must be at least 1, got {releases}")
    spend = Spend(epsilon=releases * float(epsilon), delta=min(releases * float(delta), 0.999999),
                  mechanism=mechanism, what=f"{releases} Monte Carlo releases (runs x settings) on the data")
    return spend_request(budget, spend, scenario=scenario, data=data)


def run_seeds(seed: int, runs: int) -> np.ndarray:
    """Public per-run seeds drawn from ``public_generator(seed)`` (the same for every setting)."""
    from secure.public_randomness import public_generator

    return public_generator(seed).integers(0, 2**63 - 1, size=runs, dtype=np.int64)


def data_generator(run_seed: int) -> np.random.Generator:
    """The public data generator of one run."""
    from secure.public_randomness import public_generator

    return public_generator(int(run_seed))


def noise_generator(seed: int, setting: int, run: int, *, os_noise: bool) -> np.random.Generator | None:
    """The noise generator of run ``run`` at setting ``setting``, or ``None`` for OS randomness.

    Seeded noise is for reproducible simulations only (see the module docstring); the stream is
    spawned from ``seed`` with key ``(1, setting, run)``, so it is independent of the data streams.
    """
    if os_noise:
        return None
    sequence = np.random.SeedSequence(int(seed), spawn_key=(1, int(setting), int(run)))
    return np.random.Generator(np.random.PCG64(sequence))


def progress(total: int, description: str) -> Any:
    """A tqdm progress bar on stderr (one tick per run)."""
    from tqdm import tqdm

    return tqdm(total=total, desc=description, unit="run", file=sys.stderr, leave=True,
                dynamic_ncols=True, mininterval=0.5)


def poisson_cumulative_counts(generator: np.random.Generator, rate: float, points: int) -> np.ndarray:
    """The paper's synthetic ``X_pois(lambda)`` (Sec. 6.2) as its cumulative counts on its grid.

    For every value ``i in [N]`` the number of instances with value ``i`` is ``Poisson(lambda)``;
    returned is ``c_i = #{x <= i}``, i.e. :func:`dp.ecdf.tree.true_counts` of those instances on the grid
    ``1..N`` (computed from the per-value counts directly: at ``lambda = 1000`` and ``N = 2^15`` the
    instances themselves would be 33 million floats).

    :param generator: the public data generator.
    :param rate: ``lambda > 0``.
    :param points: ``N``, the number of distinct values (= grid points).
    :return: int64 array of length ``N``, non-decreasing; ``n = c_N``.
    """
    return np.cumsum(generator.poisson(rate, size=points)).astype(np.int64)


# --------------------------------------------------------------------------------------------------
# summaries

def summarize(values: Iterable[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean and count of the finite values (``nan`` if undefined).

    The standard error is ``s / sqrt(k)`` with the sample standard deviation ``s`` (``ddof=1``);
    it needs ``k >= 2`` values.
    """
    data = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    count = int(data.size)
    if count == 0:
        return math.nan, math.nan, 0
    mean = float(np.mean(data))
    error = float(np.std(data, ddof=1) / math.sqrt(count)) if count > 1 else math.nan
    return mean, error, count


def summarize_runs(records: Sequence[Mapping[str, float]], metrics: Sequence[str]) -> dict[str, float]:
    """``{metric}_mean`` and ``{metric}_se`` for every metric over the runs' records."""
    summary: dict[str, float] = {}
    for metric in metrics:
        mean, error, _ = summarize(record[metric] for record in records)
        summary[f"{metric}_mean"] = mean
        summary[f"{metric}_se"] = error
    return summary


def format_mean(mean: float, error: float, digits: int = 3) -> str:
    """``0.123 ± 0.004`` (``nan`` parts shown as ``-``)."""
    if not math.isfinite(mean):
        return "-"
    if not math.isfinite(error):
        return f"{mean:.{digits}g}"
    return f"{mean:.{digits}g} ± {error:.2g}"


# --------------------------------------------------------------------------------------------------
# output

@dataclass(frozen=True)
class SecureCheck:
    """One ``--secure`` comparison: the released value of the MPyC path beside the simulated path's.

    :param setting: what was run (protocol, parameters).
    :param secure: the value the MPyC path released.
    :param simulated: the simulated path's value for the same parameters.
    :param relation: ``equal`` (same tuples and noise draws: must be identical) or ``within K sd`` (fresh noise:
        the difference must lie within ``tolerance``, stated in the protocol's noise sd).
    :param tolerance: the allowed absolute difference (0 for ``equal``).
    """

    setting: str
    secure: float
    simulated: float
    relation: str
    tolerance: float = 0.0

    @property
    def ok(self) -> bool:
        """Whether the two paths agree as the relation says."""
        difference = abs(self.secure - self.simulated)
        return difference == 0.0 if self.tolerance == 0.0 else difference <= self.tolerance


def check_noise_generator(seed: int, setting: int, party: int = 0) -> np.random.Generator:
    """The randomness of ``--secure`` check ``setting`` at ``party``: spawned from the public seed with key
    ``(2, setting, party)``, independent of the experiment's own streams.

    The check feeds the very same draws to the MPyC path and to the simulated path, so party 0 must be able to
    recompute every party's draws: acceptable for a *check* on public (embedded or synthetic) data only; a
    release always draws OS randomness.
    """
    sequence = np.random.SeedSequence(int(seed), spawn_key=(2, int(setting), int(party)))
    return np.random.Generator(np.random.PCG64(sequence))


def report_secure_checks(name: str, checks: Sequence[SecureCheck], results_dir: str) -> bool:
    """Print the ``--secure`` table, write ``<name>_secure.csv``, and say whether every check agreed.

    :return: whether all agreed (a scenario exits 1 with one line when one does not).
    """
    import os

    rows = [[c.setting, f"{c.secure:.10g}", f"{c.simulated:.10g}", c.relation, "agrees" if c.ok else "DISAGREES"]
            for c in checks]
    print_rows(f"--secure: the protocol on the MPyC path beside the simulated path ({name})",
               ["setting", "MPyC path", "simulated", "relation", "check"], rows)
    os.makedirs(results_dir, exist_ok=True)
    write_csv(os.path.join(results_dir, f"{name}_secure.csv"),
              ["setting", "secure", "simulated", "relation", "tolerance", "ok"],
              [{"setting": c.setting, "secure": c.secure, "simulated": c.simulated, "relation": c.relation,
                "tolerance": c.tolerance, "ok": c.ok} for c in checks])
    return all(c.ok for c in checks)


def finish_secure_checks(name: str, checks: Sequence[SecureCheck], results_dir: str, *, note: str = "") -> None:
    """Report the ``--secure`` checks at party 0 (:func:`report_secure_checks`), after ``note`` (what the checks do
    not cover, e.g. other papers' protocols without an MPyC path) if given; a disagreement raises
    :class:`secure.errors.ProtocolFailure`: exit 1 at this party with one line, nothing more claimed."""
    from secure.errors import ProtocolFailure

    if note:
        print(f"  {note}")
    if not report_secure_checks(name, checks, results_dir):
        raise ProtocolFailure(f"--secure: the MPyC path disagrees with the simulated path (see {name}_secure.csv)")


def write_csv(path: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` (dicts keyed by ``columns``) as a CSV file with a header line.

    Floats are written with ``repr`` precision; ``nan`` as ``nan``.
    """
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_cell(row[column]) for column in columns])


def _cell(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    if isinstance(value, (np.integer,)):
        return str(int(value))
    return str(value)


def new_figure(width: float = 6.4, height: float = 4.8) -> tuple[Any, Any]:
    """A matplotlib figure on the Agg canvas (no pyplot, no display) and its single axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def save_figure(figure: Any, path: str) -> None:
    """Save ``figure`` as a PNG at ``path`` (150 dpi)."""
    figure.savefig(path, format="png", dpi=150)


def seed_note(seed: int, os_noise: bool) -> str:
    """One line saying what the seed fixes and how to repeat the run."""
    if os_noise:
        return f"seed {seed} fixes the data (--seed {seed}); the noise came from OS randomness"
    return f"seed {seed} fixes the data and the (simulation-only) noise: --seed {seed} repeats this run"


def print_rows(title: str, header: Sequence[str], rows: Sequence[Sequence[str]],
               notes: Sequence[str] = ()) -> None:
    """Print a title, then ``rows`` of strings as right-aligned columns under ``header``."""
    widths = [max(len(header[k]), *(len(row[k]) for row in rows)) if rows else len(header[k])
              for k in range(len(header))]
    print(title)
    for note in notes:
        print(f"  {note}")
    print("  " + "  ".join(name.rjust(width) for name, width in zip(header, widths)))
    for row in rows:
        print("  " + "  ".join(cell.rjust(width) for cell, width in zip(row, widths)))
    sys.stdout.flush()
