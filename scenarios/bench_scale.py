"""Benchmark "scale": the complete Kendall's tau and AUC by the histogram path, n = 10^3 ... 10^7, against sampled
``|E| = 2n`` (Kendall) and a bare-MPyC script of the same sums and noise (AUC).

Synthetic rows, one CSV file per party read back as ``--data`` does; every configuration in fresh party processes.
Kernels, configurations, options, the columns and the ratios below the table: docs/benchmarks.md.

Run it with three local parties::

    python -m scenarios.bench_scale -M3                          # n = 10^3, 10^4, 10^5, 10^6, 10^7
    python -m scenarios.bench_scale -M3 --quick                  # n = 10^3, 10^4
    python -m scenarios.bench_scale -M3 --sizes 1000,1000000 --kernels auc --results-dir out

Threat model of the secure runs: passive, static, ``t < m/2``; the synthetic rows are public by construction
(a benchmark), but they enter the computation as private inputs do."""
from __future__ import annotations

import functools
import json
import math
import operator
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from scenarios.kit.records import write_record
from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario

__all__ = ["main", "parse_options", "synthetic_rows", "column_specs", "SIZES", "QUICK_SIZES", "COLUMNS"]

SIZES = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7)
QUICK_SIZES = (10 ** 3, 10 ** 4)
PATHS = ("histogram", "tuples")
KERNELS = ("kendall", "auc")
#: the paths measured per kernel (the AUC's bare-MPyC runs ride along with its histogram run)
KERNEL_PATHS = {"kendall": ("histogram", "tuples"), "auc": ("histogram",)}
KERNEL_COLUMNS = {"kendall": ["x", "y"], "auc": ["score", "label"]}
#: reads of a party's share, by the suite's reader and by the pyarrow floor alike, of which the best counts
READ_REPEATS = 3
#: fractional bits of the AUC's scores
AUC_BITS = 16
#: the sampled baseline runs only while modelled at most this long (seconds)
MAX_MODEL_SECONDS = 600.0
NAME = "bench_scale"
COLUMNS = ["n", "kernel", "path", "tuples", "status", "seconds", "model_seconds", "bytes", "model_bytes", "peak_mb",
           "peak_mb_parties", "model_mb", "load_seconds", "read_seconds", "pyarrow_seconds", "share_mb",
           "count_seconds", "plan_seconds", "total_seconds", "bare_seconds", "bare_bytes", "bare_party_seconds",
           "bare_party_bytes", "estimate"]


@dataclass
class ScaleOptions:
    """Parsed options; ``config`` set: measure that one ``(n, path)`` in this process (the launcher's child)."""

    sizes: tuple[int, ...]
    epsilon: float
    seed: int | None
    results_dir: str
    max_model_seconds: float
    quick: bool
    config: tuple[int, str, str] | None
    json: str | None
    kernels: tuple[str, ...] = KERNELS


def parse_options(argv: Sequence[str]) -> ScaleOptions:
    """Parse the options.
    :raise UsageError: on a bad value."""
    from scenarios.kit.experiments import parse_integer_list
    from scenarios.kit.outputs import check_output_path
    from scenarios.kit.packages import require_packages

    parser = ScenarioParser(prog="python -m scenarios.bench_scale", description=__doc__)
    parser.add_argument("--sizes", default=None, help="comma-separated numbers of rows (default 10^3 ... 10^6)")
    parser.add_argument("--quick", action="store_true", help="sizes 10^3 and 10^4 only")
    parser.add_argument("--kernels", default=",".join(KERNELS), help="kendall,auc (default both)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget of each release (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="public seed of the data (default: joint)")
    parser.add_argument("--max-model-seconds", type=float, default=MAX_MODEL_SECONDS,
                        help="run the sampled baseline only while modelled at most this long (default 600)")
    parser.add_argument("--results-dir", default="results", help="directory for the CSV and PNG (default results/)")
    parser.add_argument("--measure", default=None, help="internal: measure one configuration N:KERNEL:PATH")
    parser.add_argument("--json", default=None, help="internal, with --measure: party 0 writes the numbers")
    args = parser.parse_args(list(argv))
    if args.sizes is not None:
        sizes = parse_integer_list(args.sizes, "--sizes", low=3, high=10 ** 8)
    else:
        sizes = QUICK_SIZES if args.quick else SIZES
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise UsageError(f"--epsilon must be positive and finite, got {args.epsilon}")
    if args.seed is not None and args.seed < 0:
        raise UsageError(f"--seed must be non-negative, got {args.seed}")
    if not math.isfinite(args.max_model_seconds) or args.max_model_seconds <= 0:
        raise UsageError(f"--max-model-seconds must be positive, got {args.max_model_seconds}")
    if not args.results_dir:
        raise UsageError("--results-dir must not be empty")
    kernels = tuple(name.strip() for name in args.kernels.split(",") if name.strip())
    if not kernels or any(name not in KERNELS for name in kernels):
        raise UsageError(f"--kernels takes some of {', '.join(KERNELS)}, got '{args.kernels}'")
    config = None
    if args.measure is not None:
        size, kernel, path = (args.measure.split(":") + ["", ""])[:3]
        if not size.isdigit() or int(size) < 3 or kernel not in KERNELS or path not in KERNEL_PATHS[kernel]:
            raise UsageError(f"--measure expects N:KERNEL:PATH with N >= 3, KERNEL one of {', '.join(KERNELS)} and "
                             f"PATH one of {', '.join(PATHS)} (auc: histogram), got '{args.measure}'")
        config = (int(size), kernel, path)
        if args.seed is None:
            raise UsageError("--measure needs --seed (the launcher passes the agreed seed)")
    else:
        require_packages("matplotlib", purpose="this benchmark's figure")
    check_output_path(args.json, "--json")
    return ScaleOptions(sizes, args.epsilon, args.seed, args.results_dir, args.max_model_seconds, bool(args.quick),
                        config, args.json, kernels)


def public_parameters(options: ScaleOptions) -> dict[str, Any]:
    """What every party must agree on (``--json`` is party 0's own)."""
    return {"sizes": list(options.sizes), "epsilon": options.epsilon, "seed": options.seed,
            "max_model_seconds": options.max_model_seconds, "config": options.config,
            "results_dir": options.results_dir, "kernels": list(options.kernels)}


def column_specs(kernel: str = "kendall") -> tuple[Any, Any]:
    """Kendall: ``x`` on ``0:300`` and ``y`` on ``0:200``, one fractional bit, recorded in steps of 0.5 (601 x 401).
    AUC: ``score`` on ``0:1`` at :data:`AUC_BITS` bits, ``label`` 0/1."""
    from secure.columns import ColumnSpec

    if kernel == "auc":
        return ColumnSpec("score", 0.0, 1.0, AUC_BITS), ColumnSpec("label", 0, 1, 0, (0, 1))
    return ColumnSpec("x", 0, 300, 1, step=0.5), ColumnSpec("y", 0, 200, 1, step=0.5)


def party_size(rows: int, party: int, parties: int) -> int:
    """Rows of party ``party``: ``n // m``, one more for the first ``n mod m`` parties."""
    return rows // parties + (1 if party < rows % parties else 0)


def synthetic_rows(seed: int, party: int, count: int, kernel: str = "kendall") -> Any:
    """Party ``party``'s ``count`` rows from the public seed: ``x ~ N(150, 50)``, ``y`` correlated with
    ``x`` (correlation 0.7, ``N(100, 35)``), both rounded to steps of 0.5 and clipped to their domains; for AUC
    ``label ~ Bernoulli(0.4)`` and ``score = logistic(N(0, 1) + 1.2 label)`` rounded to ``2^-16``."""
    import numpy as np

    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 0x5CA1E, int(party)])))
    if kernel == "auc":
        label = (generator.random(count) < 0.4).astype(np.float64)
        score = 1 / (1 + np.exp(-(generator.standard_normal(count) + 1.2 * label)))
        return np.column_stack([np.round(score * (1 << AUC_BITS)) / (1 << AUC_BITS), label])
    first = generator.standard_normal(count)
    second = 0.7 * first + math.sqrt(1 - 0.7 ** 2) * generator.standard_normal(count)
    x = np.clip(np.round((150 + 50 * first) * 2) / 2, 0, 300)
    y = np.clip(np.round((100 + 35 * second) * 2) / 2, 0, 200)
    return np.column_stack([x, y])


def make_query(epsilon: float, path: str, rows: int, kernel: str = "kendall") -> Any:
    """Kendall's tau of ``x, y`` (or the AUC of ``score, label``) with the ``scenarios.ustat`` default noise:
    complete on the histogram path, or ``|E| = 2n`` sampled pairs."""
    from dp.noise_defaults import default_noise
    from dp.umpc.protocol import UStatQuery
    from secure.kernels import get_kernel

    chosen = get_kernel("auc", precision=AUC_BITS) if kernel == "auc" else get_kernel("kendall")
    return UStatQuery(kernel=chosen, specs=column_specs(kernel), epsilon=epsilon,
                      noise=default_noise("ustat", epsilon), tuples=None if path == "histogram" else 2 * rows,
                      path=path)


def plan(epsilon: float, path: str, rows: int, parties: int, kernel: str = "kendall") -> Any:
    """The planner's plan of the configuration (public parameters only)."""
    from dp.umpc.complete import plan_for

    return plan_for(make_query(epsilon, path, rows, kernel), rows=rows, parties=parties,
                    pairs="all" if path == "histogram" else "per-row")


def planning_seconds(kernel: str, rows: int, parties: int = 3, repeats: int = 5) -> float:
    """The fastest of ``repeats`` complete plans of ``kernel`` at ``rows`` (the planner costs every path, the sort
    included for AUC, in closed form)."""
    plan(1.0, "histogram", rows, parties, kernel)  # imports first
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        plan(1.0, "histogram", rows, parties, kernel)
        best = min(best, time.perf_counter() - started)
    return best


def write_share_file(seed: int, party: int, count: int, kernel: str, target: str) -> None:
    """Generate party ``party``'s rows of ``kernel`` and write its CSV file (run in a child process by
    :func:`write_share`, so that generating the data does not count in the party's peak memory).  A label column
    is written as integers, an AUC score with 6 decimals (exact for 16-bit fixed point: ``10^-6 < 2^-17``)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    values, names = synthetic_rows(seed, party, count, kernel), KERNEL_COLUMNS[kernel]
    first = np.round(values[:, 0], 6) if kernel == "auc" else values[:, 0]
    second = values[:, 1].astype(np.int64) if names[1] == "label" else values[:, 1]
    arrow_csv.write_csv(pa.table({names[0]: first, names[1]: second}), target,
                        arrow_csv.WriteOptions(quoting_style="none"))


def write_share(seed: int, party: int, count: int, kernel: str, folder: str) -> str:
    """Party ``party``'s CSV file in ``folder``, made by a child process (:func:`write_share_file`); its path.
    :raise RuntimeError: the child could not write the file."""
    target = os.path.join(folder, "share.csv")
    maker = (f"from scenarios.bench_scale import write_share_file; "
             f"write_share_file({int(seed)}, {int(party)}, {int(count)}, {kernel!r}, {target!r})")
    made = subprocess.run([sys.executable, "-c", maker], capture_output=True, text=True, timeout=1800,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if made.returncode != 0:
        raise RuntimeError(f"writing the share failed: {made.stderr.strip().splitlines()[-1:]}")
    return target


def time_reads(target: str, kernel: str) -> dict[str, float]:
    """``read_seconds``: the suite's reader on ``target`` into a sink that keeps nothing, and ``pyarrow_seconds``:
    ``pyarrow.csv.read_csv`` of it in a fresh process (so its memory is not this party's), the best of
    :data:`READ_REPEATS` each, taken in turns; and ``share_mb``."""
    import pyarrow.csv  # noqa: F401  (imported before the clock starts, as in the floor's process)

    from secure.reader import read_into

    floor = ("import sys, time, pyarrow.csv\nstarted = time.perf_counter()\npyarrow.csv.read_csv(sys.argv[1])\n"
             "print(time.perf_counter() - started)")
    reads, floors = [], []
    for _ in range(READ_REPEATS):
        started = time.perf_counter()
        read_into(_Discard(), target, KERNEL_COLUMNS[kernel])
        reads.append(time.perf_counter() - started)
        done = subprocess.run([sys.executable, "-c", floor, target], capture_output=True, text=True, timeout=600)
        floors.append(float(done.stdout) if done.returncode == 0 else math.nan)
    return {"read_seconds": min(reads), "share_mb": os.path.getsize(target) / 1e6,
            "pyarrow_seconds": math.nan if math.isnan(sum(floors)) else min(floors)}


def take_share(target: str, query: Any, kernel: str, *, keep_rows: bool) -> tuple[Any, float]:
    """The party's file read as a party reads ``--data``: its rows (``keep_rows``), or its counts on the grid of
    ``query``, block by block, no row kept; and the seconds it took (``count_seconds``)."""
    from dp.umpc.protocol import kernel_specs
    from secure.counting import count_file
    from secure.reader import read_columns

    started = time.perf_counter()
    taken = read_columns(target, KERNEL_COLUMNS[kernel]) if keep_rows else \
        count_file(target, kernel_specs(query), party=0, parties=1)
    return taken, time.perf_counter() - started


class _Discard:
    """A reader's sink that keeps nothing (the reader's own seconds)."""

    def add(self, block: Any) -> None: ...
    def mark(self) -> None: ...
    def restore(self, mark: Any) -> None: ...


async def _bare_auc(sectype: Any, count: Callable[[], Any], plans: Sequence[Any], *,
                    sampler: bool) -> tuple[float, int]:
    """The bare-MPyC AUC of the same sums and noise from this party's rows: ``count()`` its ``(G, 2)`` counts (counted
    while read, as the release's), ``mpc.input`` of every party's histogram, ``2U = P . (2 cumsum(N) - N)`` and
    ``(sum P)(sum N)``, the in-MPC sampler of ``plans`` (``sampler``) or one input noise share per sum and party,
    ``mpc.output``.  ``(seconds at this party, bytes this party sent)``; nothing but the noisy sums is opened (a
    benchmark on public synthetic rows)."""
    import secrets

    import numpy as np
    from mpyc.runtime import mpc

    from dp.secret_noise import secret_laplace_noise
    from secure.meter import bytes_sent

    await mpc.barrier("bare")
    started, sent = time.perf_counter(), bytes_sent()
    local = count()
    shares = mpc.input(sectype.array(np.asarray(local, dtype=np.int64).reshape(-1)))
    joint = mpc.np_reshape(functools.reduce(operator.add, shares), local.shape)
    negatives, positives = joint[:, 0], joint[:, 1]
    twice_u = mpc.np_sum(positives * (2 * mpc.np_cumsum(negatives) - negatives))
    pairs = mpc.np_sum(positives) * mpc.np_sum(negatives)
    if sampler:
        noise = secret_laplace_noise(sectype, [plan.sampler for plan in plans])
    else:  # each party's share: its own draw (the cost of party noise: one input per sum and party)
        draws = mpc.input(sectype.array(np.array([secrets.randbelow(1 << 20) - (1 << 19) for _ in plans])))
        total = functools.reduce(operator.add, draws)
        noise = [total[index] for index in range(len(plans))]
    await mpc.output([twice_u + noise[0], pairs + noise[1]])
    return time.perf_counter() - started, bytes_sent() - sent


async def _measure_one(options: ScaleOptions) -> Callable[[], None] | None:
    """Every party of one configuration: generate its rows, count, release (AUC: then the bare-MPyC script),
    gather the peak memory."""
    from mpyc.runtime import mpc

    from dp.umpc.complete import complete_plans, complete_secure_type, run_complete
    from dp.umpc.protocol import prepare_rows, run_secure
    from scenarios.kit.measure import peak_rss_bytes
    from secure.errors import InputError

    assert options.config is not None and options.seed is not None
    rows, kernel, path = options.config
    parties = len(mpc.parties)
    started = time.perf_counter()
    query = make_query(options.epsilon, path, rows, kernel)
    with tempfile.TemporaryDirectory() as folder:  # the rows go through a party's CSV file and its reader
        target = write_share(options.seed, mpc.pid, party_size(rows, mpc.pid, parties), kernel, folder)
        await mpc.transfer(None)  # every file written: party 0 times its reads while the others wait (own machines)
        reading = time_reads(target, kernel) if mpc.pid == 0 else {}
        await mpc.transfer(None)
        fixed, reading["count_seconds"] = take_share(target, query, kernel, keep_rows=path != "histogram")
    if path != "histogram":
        fixed = prepare_rows(query, fixed)
    load_seconds = time.perf_counter() - started  # this party's own: no party's seconds are exchanged
    try:
        planned = time.perf_counter()
        chosen = plan(options.epsilon, path, rows, parties, kernel)
        plan_seconds = time.perf_counter() - planned
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    if path == "histogram":
        release = await run_complete(query, fixed, chosen)
    else:
        release = await run_secure(query, fixed, seed=options.seed)
    peaks = [int(peak) for peak in await mpc.transfer(peak_rss_bytes())]
    bare: dict[str, float] = {"bare_seconds": math.nan, "bare_bytes": math.nan, "bare_party_seconds": math.nan,
                              "bare_party_bytes": math.nan}
    if kernel == "auc" and path == "histogram":
        counts = await mpc.transfer(int(fixed.integers.shape[0]))
        plans = complete_plans(query, sum(counts), parties, int(mpc.threshold))
        sectype = complete_secure_type(query, sum(counts), "histogram", plans)
        for key, sampler in (("bare", True), ("bare_party", False)):
            seconds, sent = await _bare_auc(sectype, lambda: fixed.histogram, plans,
                                            sampler=sampler and query.noise == "mpc")
            bare[f"{key}_seconds"] = seconds  # party 0's own; the bytes are summed over the parties
            bare[f"{key}_bytes"] = float(sum(await mpc.transfer(sent)))
    if mpc.pid != 0 or release is None or options.json is None:
        return None
    cost = chosen.costs[path]
    record = {"n": rows, "kernel": kernel, "path": path, "tuples": release.pairs, "status": "measured",
              "seconds": release.seconds, "model_seconds": cost.seconds, "bytes": release.bytes_sent,
              "model_bytes": cost.bytes_sent, "peak_mb": max(peaks) / 1e6,
              "peak_mb_parties": "/".join(f"{peak / 1e6:.0f}" for peak in peaks), "model_mb": cost.memory / 1e6,
              "load_seconds": load_seconds, **reading, "plan_seconds": plan_seconds,
              "total_seconds": reading["count_seconds"] + release.seconds, **bare,
              "estimate": release.estimate, "phases": release.phases}
    target = options.json

    def deliver() -> None:
        write_record(target, record)

    return deliver


def run_configuration(options: ScaleOptions, seed: int, rows: int, path: str, parties: int,
                      threshold: int, kernel: str = "kendall") -> dict[str, Any]:
    """Party 0: measure ``(rows, kernel, path)`` in fresh party processes (as many local parties as this run, on
    free ports); its record (or why it did not run)."""
    from secure.launcher import free_base_port
    from secure.session import run_settings

    chosen = plan(options.epsilon, path, rows, parties, kernel)
    cost = chosen.costs[path]
    record: dict[str, Any] = {key: math.nan for key in COLUMNS}
    record.update({"n": rows, "kernel": kernel, "path": path, "tuples": cost.tuples, "status": "measured",
                   "model_seconds": cost.seconds, "model_bytes": cost.bytes_sent, "peak_mb_parties": "",
                   "model_mb": cost.memory / 1e6})
    if path == "tuples" and cost.seconds > options.max_model_seconds:
        record["status"] = (f"skipped: sampled |E| = 2n modelled {cost.seconds:.0f} s > "
                            f"{options.max_model_seconds:g} s")
        return record
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "config.json")
        command = [sys.executable, "-m", "scenarios.bench_scale", "--measure", f"{rows}:{kernel}:{path}", "--seed",
                   str(seed), "--epsilon", repr(options.epsilon), "--json", target, "--no-log"]
        if parties > 1:
            command += ["-M", str(parties), "-T", str(threshold), "-B", str(free_base_port(parties))]
        if run_settings().bit_length is not None:
            command += ["-L", str(run_settings().bit_length)]
        limit = 900.0 + 10 * cost.seconds + rows * 2e-4
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=limit,
                                  cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        except subprocess.TimeoutExpired:
            record["status"] = f"failed: no result within {limit:.0f} s"
            return record
        if done.returncode != 0 or not os.path.exists(target):
            lines = [line for line in done.stderr.splitlines() if line.strip()]
            record["status"] = f"failed: exit {done.returncode}: {lines[-1] if lines else 'no output'}"
            return record
        with open(target, encoding="utf-8") as handle:
            measured = json.load(handle)
    record.update({key: math.nan if measured[key] is None else measured[key] for key in COLUMNS})  # NaN: JSON null
    return record


def plot(rows: Sequence[dict[str, Any]], path: str, title: str) -> None:
    """Two panels, log-log: seconds against ``n`` and peak memory (largest party) against ``n``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scenarios.kit.experiments import save_figure

    figure = Figure(figsize=(10, 4.2), layout="constrained")
    FigureCanvasAgg(figure)
    time_axes, memory_axes = figure.subplots(1, 2)
    labels = {"histogram": "complete, histogram path", "tuples": "sampled |E| = 2n"}
    for kernel in KERNELS:
        for name in PATHS:
            own = [row for row in rows if row["path"] == name and row["kernel"] == kernel
                   and row["status"] == "measured"]
            if not own:
                continue
            label = f"{kernel}, {labels[name]}"
            sizes = [row["n"] for row in own]
            measured, = time_axes.plot(sizes, [row["seconds"] for row in own], marker="o", label=label)
            time_axes.plot(sizes, [row["model_seconds"] for row in own], linestyle=":", color=measured.get_color(),
                           label=f"{label}, modelled")
            memory_axes.plot(sizes, [row["peak_mb"] for row in own], marker="o", label=label)
            memory_axes.plot(sizes, [row["share_mb"] for row in own], linestyle="--", color=measured.get_color(),
                             label=f"{label}: party 0's share of the file")
    for axes, label in ((time_axes, "protocol seconds at party 0 (release phases)"),
                        (memory_axes, "peak memory per party (MB, largest party)")):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("n (rows over all parties)")
        axes.set_ylabel(label)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=7)
    time_axes.set_title(title + " (dotted: modelled)", fontsize=9)
    save_figure(figure, path)


def _ratio(top: Any, bottom: Any) -> float:
    top, bottom = float(top), float(bottom)  # NaN where not measured
    return top / bottom if math.isfinite(top) and math.isfinite(bottom) and bottom > 0 else math.nan


def ratios(row: dict[str, Any]) -> dict[str, float]:
    """Issue 25's ratios of one measured row: peak RSS / share, total / (pyarrow read + protocol), read / pyarrow,
    and (AUC) the release over the bare-MPyC script in time and bytes."""
    return {"rss_over_share": _ratio(row["peak_mb"], row["share_mb"]),
            "total_over_floor": _ratio(row["total_seconds"], float(row["pyarrow_seconds"]) + float(row["seconds"])),
            "read_over_pyarrow": _ratio(row["read_seconds"], row["pyarrow_seconds"]),
            "time_over_bare": _ratio(row["seconds"], row["bare_seconds"]),
            "bytes_over_bare": _ratio(row["bytes"], row["bare_bytes"]),
            "time_over_bare_party": _ratio(row["seconds"], row["bare_party_seconds"]),
            "bytes_over_bare_party": _ratio(row["bytes"], row["bare_party_bytes"])}


def report(rows: Sequence[dict[str, Any]], notes: Sequence[str]) -> None:
    """Print the table (columns: docs/benchmarks.md) and the ratios."""
    from scenarios.kit.cli import format_bytes
    from scenarios.kit.experiments import print_rows

    def number(value: Any, pattern: str) -> str:  # NaN where not measured
        return "-" if not math.isfinite(float(value)) else format(float(value), pattern)

    def size(value: Any) -> str:
        return "-" if not math.isfinite(float(value)) else format_bytes(float(value))

    header = ["n", "kernel", "path", "read s", "pyarrow s", "count s", "protocol s", "model s", "bytes", "peak MB",
              "per party", "share MB", "RSS/share", "total/(pa+prot)", "bare s", "bare bytes", "AUC/bare t",
              "AUC/bare B", "status"]
    lines = []
    for row in rows:
        ratio = ratios(row)
        lines.append([str(row["n"]), row["kernel"], row["path"], number(row["read_seconds"], ".2f"),
                      number(row["pyarrow_seconds"], ".2f"), number(row["count_seconds"], ".3f"),
                      number(row["seconds"], ".2f"), number(row["model_seconds"], ".3g"), size(row["bytes"]),
                      number(row["peak_mb"], ".0f"), row["peak_mb_parties"] or "-", number(row["share_mb"], ".1f"),
                      number(ratio["rss_over_share"], ".2f"), number(ratio["total_over_floor"], ".2f"),
                      number(row["bare_seconds"], ".2f"), size(row["bare_bytes"]),
                      number(ratio["time_over_bare"], ".2f"), number(ratio["bytes_over_bare"], ".2f"), row["status"]])
    print_rows("Scale: complete Kendall's tau and AUC (histogram path); sampled |E| = 2n; AUC beside bare MPyC", header,
               lines, notes)


async def _bench(options: ScaleOptions) -> Callable[[], None] | None:
    if options.config is not None:
        return await _measure_one(options)
    from mpyc.runtime import mpc

    from scenarios.kit.experiments import agree_seed, check_results_dir

    seed = await agree_seed(options.seed)
    await check_results_dir(options.results_dir)
    if mpc.pid != 0:
        return None
    parties, threshold = len(mpc.parties), int(mpc.threshold)

    def deliver() -> None:
        from scenarios.kit.experiments import write_csv

        rows = [run_configuration(options, seed, size, path, parties, threshold, kernel)
                for size in options.sizes for kernel in options.kernels for path in KERNEL_PATHS[kernel]]
        base = os.path.join(options.results_dir, NAME)
        write_csv(base + ".csv", COLUMNS, rows)
        title = (f"Kendall's tau (601 x 401 grid) and AUC ({AUC_BITS}-bit scores), {parties} parties "
                 f"(t = {threshold}), epsilon = {options.epsilon:g}")
        plot(rows, base + ".png", title)
        notes = [title, f"seed {seed} (--seed {seed} repeats the data)"]
        notes += [f"n = {row['n']} {row['kernel']} {row['path']}: {row['status']}" for row in rows
                  if row["status"] != "measured"]
        for row in rows:
            if row["status"] != "measured":
                continue
            ratio = ratios(row)
            smallest = min((other for other in rows if other["kernel"] == row["kernel"] and other["path"] == row["path"]
                            and other["status"] == "measured"), key=lambda other: other["n"])
            growth = _ratio(float(row["peak_mb"]) - float(smallest["peak_mb"]), row["share_mb"])
            line = (f"n = {row['n']} {row['kernel']} {row['path']}: peak RSS / share {ratio['rss_over_share']:.2f} "
                    f"(above the n = {smallest['n']} peak: {growth:.2f}), read / pyarrow "
                    f"{ratio['read_over_pyarrow']:.2f}, total (intake + protocol) / (pyarrow + protocol) "
                    f"{ratio['total_over_floor']:.2f}, planning {float(row['plan_seconds']) * 1e3:.2f} ms")
            if math.isfinite(ratio["time_over_bare"]):
                line += (f"; AUC / bare MPyC (same sampler): time {ratio['time_over_bare']:.2f}, bytes "
                         f"{ratio['bytes_over_bare']:.2f}; / bare with party noise: time "
                         f"{ratio['time_over_bare_party']:.2f}, bytes {ratio['bytes_over_bare_party']:.2f}")
            notes.append(line)
        for kernel in options.kernels:
            timings = ", ".join(f"10^{int(round(math.log10(n)))} {planning_seconds(kernel, n) * 1e3:.2f} ms"
                                for n in (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6, 10 ** 7))
            notes.append(f"planning {kernel} (every path costed, closed forms): {timings}")
        notes.append(f"wrote {base}.csv, {base}.png")
        report(rows, notes)

    return deliver


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the benchmark (or, with ``--measure``, of one configuration); the exit code."""
    from scenarios.kit.experiments import benchmark_spend

    return run_scenario(parse_options, _bench, public_parameters, argv, spend=benchmark_spend)


if __name__ == "__main__":
    sys.exit(main())
