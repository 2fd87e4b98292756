"""Benchmark "scale": the complete Kendall's tau by the histogram path against sampled ``|E| = 2n``, n = 10^3 ... 10^6.

Synthetic data, three parties (``-M3``): each party generates its own rows from the public seed and its
party number -- two correlated columns, ``x`` on ``0:300`` and ``y`` on ``0:200``, both recorded in steps of
0.5 (declared with ``ColumnSpec(..., step=0.5)``: a 601 x 401 grid, many ties); party ``i`` holds
``n // m`` rows (one more for ``i < n mod m``).  For each size ``n`` (``--sizes``) two configurations:

- ``histogram``: the complete Kendall's tau (all ``C(n, 2)`` pairs) by the histogram path
  (:func:`dp.umpc.complete.run_complete`): cost set by the grid, not by ``n``;
- ``tuples``: Pi_U-MPC on ``|E| = 2n`` sampled pairs (:func:`dp.umpc.protocol.run_secure`), the
  baseline, run only where the planner's modelled time (:func:`dp.umpc.planner.path_costs`) is at most
  ``--max-model-seconds`` (default 600 s); a skipped configuration is listed with the reason.

Each configuration runs in a fresh set of party processes (this scenario re-launches itself with
``--measure N:PATH`` on free ports), so a party's peak memory is that configuration's own, not that of
an earlier, larger run.  Per configuration: ``seconds`` (the release's phases at party 0: no party's
seconds leave it; no data generation), ``bytes`` (sent by all parties), peak resident memory of every party
(``resource.getrusage`` ``ru_maxrss`` at the end, gathered with ``mpc.transfer``), and the planner's
modelled seconds, bytes and memory beside them.  Noise: the ``scenarios.ustat`` default
(:func:`dp.noise_defaults.default_noise`), epsilon ``--epsilon`` (default 1).

Run it with three local parties::

    python -m scenarios.bench_scale -M3                          # n = 10^3, 10^4, 10^5, 10^6
    python -m scenarios.bench_scale -M3 --quick                  # n = 10^3, 10^4
    python -m scenarios.bench_scale -M3 --sizes 1000,1000000 --results-dir out

The configurations run as local parties at party 0's host, with as many parties as this run (``-M m``;
``-T`` and ``-L`` passed on).  Options: ``--sizes N,...``, ``--quick``, ``--epsilon E``, ``--seed S``
(public: the data; default a joint seed), ``--max-model-seconds S``, ``--results-dir DIR`` (party 0 writes
``bench_scale.csv`` and ``bench_scale.png``: seconds and peak memory against ``n``, log-log).

Columns of the table and CSV: ``n``; ``path``; ``tuples`` (``C(n, 2)`` or ``2n``); ``status``
(``measured``, or ``skipped: ...`` / ``failed: ...`` with the reason); ``seconds`` and ``model_seconds``;
``bytes`` and ``model_bytes``; ``peak_mb`` (largest party) and ``peak_mb_parties`` (each party, ``/``
separated) and ``model_mb`` (the planner's memory per party); ``load_seconds`` (data generation, the
party's CSV file written and read, fixed point, at party 0, not in ``seconds``); ``read_seconds`` (party 0
reading its own file with :func:`secure.reader.read_columns`, as ``--data site{pid}.csv`` does) beside
``pyarrow_seconds`` (``pyarrow.csv.read_csv`` of the same file, in a fresh process: the floor) and
``share_mb`` (the size of party 0's file, beside ``peak_mb``); ``estimate`` (the released tau).

Threat model of the secure runs: passive, static, ``t < m/2`` (each path's own docstring); the synthetic
rows are public by construction (a benchmark), but they enter the computation as private inputs do.
"""
from __future__ import annotations

import json
import math
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

SIZES = (10 ** 3, 10 ** 4, 10 ** 5, 10 ** 6)
QUICK_SIZES = (10 ** 3, 10 ** 4)
PATHS = ("histogram", "tuples")
#: the columns of a party's CSV file (:func:`read_share`)
COLUMN_NAMES = ["x", "y"]
#: the sampled baseline runs only while modelled at most this long (seconds)
MAX_MODEL_SECONDS = 600.0
NAME = "bench_scale"
COLUMNS = ["n", "path", "tuples", "status", "seconds", "model_seconds", "bytes", "model_bytes", "peak_mb",
           "peak_mb_parties", "model_mb", "load_seconds", "read_seconds", "pyarrow_seconds", "share_mb", "estimate"]


@dataclass
class ScaleOptions:
    """Parsed options; ``config`` set: measure that one ``(n, path)`` in this process (the launcher's child)."""

    sizes: tuple[int, ...]
    epsilon: float
    seed: int | None
    results_dir: str
    max_model_seconds: float
    quick: bool
    config: tuple[int, str] | None
    json: str | None


def parse_options(argv: Sequence[str]) -> ScaleOptions:
    """Parse the options.

    :raise UsageError: on a bad value.
    """
    from scenarios.kit.experiments import parse_integer_list
    from scenarios.kit.outputs import check_output_path
    from scenarios.kit.packages import require_packages

    parser = ScenarioParser(prog="python -m scenarios.bench_scale", description=__doc__)
    parser.add_argument("--sizes", default=None, help="comma-separated numbers of rows (default 10^3 ... 10^6)")
    parser.add_argument("--quick", action="store_true", help="sizes 10^3 and 10^4 only")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget of each release (default 1)")
    parser.add_argument("--seed", type=int, default=None, help="public seed of the data (default: joint)")
    parser.add_argument("--max-model-seconds", type=float, default=MAX_MODEL_SECONDS,
                        help="run the sampled baseline only while modelled at most this long (default 600)")
    parser.add_argument("--results-dir", default="results", help="directory for the CSV and PNG (default results/)")
    parser.add_argument("--measure", default=None, help="internal: measure one configuration N:PATH")
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
    config = None
    if args.measure is not None:
        size, _, path = args.measure.partition(":")
        if not size.isdigit() or int(size) < 3 or path not in PATHS:
            raise UsageError(f"--measure expects N:PATH with N >= 3 and PATH one of {', '.join(PATHS)}, "
                             f"got '{args.measure}'")
        config = (int(size), path)
        if args.seed is None:
            raise UsageError("--measure needs --seed (the launcher passes the agreed seed)")
    else:
        require_packages("matplotlib", purpose="this benchmark's figure")
    check_output_path(args.json, "--json")
    return ScaleOptions(sizes, args.epsilon, args.seed, args.results_dir, args.max_model_seconds, bool(args.quick),
                        config, args.json)


def public_parameters(options: ScaleOptions) -> dict[str, Any]:
    """What every party must agree on (``--json`` is party 0's own)."""
    return {"sizes": list(options.sizes), "epsilon": options.epsilon, "seed": options.seed,
            "max_model_seconds": options.max_model_seconds, "config": options.config,
            "results_dir": options.results_dir}


def column_specs() -> tuple[Any, Any]:
    """``x`` on ``0:300`` and ``y`` on ``0:200``, one fractional bit, recorded in steps of 0.5 (601 x 401)."""
    from secure.columns import ColumnSpec

    return ColumnSpec("x", 0, 300, 1, step=0.5), ColumnSpec("y", 0, 200, 1, step=0.5)


def party_size(rows: int, party: int, parties: int) -> int:
    """Rows of party ``party``: ``n // m``, one more for the first ``n mod m`` parties."""
    return rows // parties + (1 if party < rows % parties else 0)


def synthetic_rows(seed: int, party: int, count: int) -> Any:
    """Party ``party``'s ``count`` rows from the public seed: ``x ~ N(150, 50)``, ``y`` correlated with
    ``x`` (correlation 0.7, ``N(100, 35)``), both rounded to steps of 0.5 and clipped to their domains."""
    import numpy as np

    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 0x5CA1E, int(party)])))
    first = generator.standard_normal(count)
    second = 0.7 * first + math.sqrt(1 - 0.7 ** 2) * generator.standard_normal(count)
    x = np.clip(np.round((150 + 50 * first) * 2) / 2, 0, 300)
    y = np.clip(np.round((100 + 35 * second) * 2) / 2, 0, 200)
    return np.column_stack([x, y])


def make_query(epsilon: float, path: str, rows: int) -> Any:
    """Kendall's tau of ``x, y`` with the ``scenarios.ustat`` default noise: complete on the histogram path,
    or ``|E| = 2n`` sampled pairs."""
    from dp.noise_defaults import default_noise
    from dp.umpc.protocol import UStatQuery
    from secure.kernels import get_kernel

    kernel = get_kernel("kendall")
    return UStatQuery(kernel=kernel, specs=column_specs(), epsilon=epsilon, noise=default_noise("ustat", epsilon),
                      tuples=None if path == "histogram" else 2 * rows, path=path)


def plan(epsilon: float, path: str, rows: int, parties: int) -> Any:
    """The planner's plan of the configuration (public parameters only)."""
    from dp.umpc.complete import plan_for

    return plan_for(make_query(epsilon, path, rows), rows=rows, parties=parties,
                    pairs="all" if path == "histogram" else "per-row")


def read_share(values: Any, folder: str, *, compare: bool) -> tuple[Any, dict[str, float]]:
    """Write a party's rows as its own CSV file (``x,y``) and read them back as a party reads ``--data``.

    :return: the rows read, and ``read_seconds``, ``share_mb`` and (``compare``) ``pyarrow_seconds``:
        ``pyarrow.csv.read_csv`` of the same file in a fresh process, so its memory is not this party's.
    """
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    from secure.reader import read_columns

    target = os.path.join(folder, "share.csv")
    arrow_csv.write_csv(pa.table({"x": values[:, 0], "y": values[:, 1]}), target,
                        arrow_csv.WriteOptions(quoting_style="none"))
    started = time.perf_counter()
    rows = read_columns(target, COLUMN_NAMES)
    numbers = {"read_seconds": time.perf_counter() - started, "share_mb": os.path.getsize(target) / 1e6,
               "pyarrow_seconds": math.nan}
    if compare:
        floor = ("import sys, time, pyarrow.csv; started = time.perf_counter(); pyarrow.csv.read_csv(sys.argv[1]); "
                 "print(time.perf_counter() - started)")
        done = subprocess.run([sys.executable, "-c", floor, target], capture_output=True, text=True, timeout=600)
        numbers["pyarrow_seconds"] = float(done.stdout) if done.returncode == 0 else math.nan
    return rows, numbers


def _peak_rss() -> int:
    """Peak resident memory of this process so far, in bytes (Linux reports kB)."""
    import resource

    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


async def _measure_one(options: ScaleOptions) -> Callable[[], None] | None:
    """Every party of one configuration: generate its rows, release, gather the peak memory."""
    from mpyc.runtime import mpc

    from dp.umpc.complete import run_complete
    from dp.umpc.protocol import prepare_rows, run_secure
    from secure.errors import InputError

    assert options.config is not None and options.seed is not None
    rows, path = options.config
    parties = len(mpc.parties)
    started = time.perf_counter()
    query = make_query(options.epsilon, path, rows)
    with tempfile.TemporaryDirectory() as folder:  # the rows go through a party's CSV file and its reader
        values, reading = read_share(synthetic_rows(options.seed, mpc.pid, party_size(rows, mpc.pid, parties)),
                                     folder, compare=mpc.pid == 0)
    fixed = prepare_rows(query, values)
    load_seconds = time.perf_counter() - started  # this party's own: no party's seconds are exchanged
    try:
        chosen = plan(options.epsilon, path, rows, parties)
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    if path == "histogram":
        release = await run_complete(query, fixed, chosen)
    else:
        release = await run_secure(query, fixed, seed=options.seed)
    peaks = [int(peak) for peak in await mpc.transfer(_peak_rss())]
    if mpc.pid != 0 or release is None or options.json is None:
        return None
    cost = chosen.costs[path]
    record = {"n": rows, "path": path, "tuples": release.pairs, "status": "measured", "seconds": release.seconds,
              "model_seconds": cost.seconds, "bytes": release.bytes_sent, "model_bytes": cost.bytes_sent,
              "peak_mb": max(peaks) / 1e6, "peak_mb_parties": "/".join(f"{peak / 1e6:.0f}" for peak in peaks),
              "model_mb": cost.memory / 1e6, "load_seconds": load_seconds, **reading, "estimate": release.estimate,
              "phases": release.phases}
    target = options.json

    def deliver() -> None:
        write_record(target, record)

    return deliver


def _session_flags(parties: int, threshold: int) -> list[str]:
    """MPyC options of a configuration's run: as many local parties as this run, on free ports."""
    from secure.parties import explicit_bit_length, free_base_port

    flags = ["--no-log"]
    if parties > 1:
        flags += ["-M", str(parties), "-T", str(threshold), "-B", str(free_base_port(parties))]
    bits = explicit_bit_length()
    if bits is not None:
        flags += ["-L", str(bits)]
    return flags


def run_configuration(options: ScaleOptions, seed: int, rows: int, path: str, parties: int,
                      threshold: int) -> dict[str, Any]:
    """Party 0: measure ``(rows, path)`` in fresh party processes; its record (or why it did not run)."""
    chosen = plan(options.epsilon, path, rows, parties)
    cost = chosen.costs[path]
    record: dict[str, Any] = {"n": rows, "path": path, "tuples": cost.tuples, "status": "measured",
                              "seconds": math.nan, "model_seconds": cost.seconds, "bytes": math.nan,
                              "model_bytes": cost.bytes_sent, "peak_mb": math.nan, "peak_mb_parties": "",
                              "model_mb": cost.memory / 1e6, "load_seconds": math.nan, "read_seconds": math.nan,
                              "pyarrow_seconds": math.nan, "share_mb": math.nan, "estimate": math.nan}
    if path == "tuples" and cost.seconds > options.max_model_seconds:
        record["status"] = (f"skipped: sampled |E| = 2n modelled {cost.seconds:.0f} s > "
                            f"{options.max_model_seconds:g} s")
        return record
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "config.json")
        command = [sys.executable, "-m", "scenarios.bench_scale", "--measure", f"{rows}:{path}", "--seed", str(seed),
                   "--epsilon", repr(options.epsilon), "--json", target, *_session_flags(parties, threshold)]
        limit = 600.0 + 10 * cost.seconds
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
    record.update({key: measured[key] for key in COLUMNS})
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
    for name in PATHS:
        own = [row for row in rows if row["path"] == name and row["status"] == "measured"]
        if not own:
            continue
        sizes = [row["n"] for row in own]
        measured, = time_axes.plot(sizes, [row["seconds"] for row in own], marker="o", label=labels[name])
        time_axes.plot(sizes, [row["model_seconds"] for row in own], linestyle=":", color=measured.get_color(),
                       label=f"{labels[name]}, modelled")
        memory_axes.plot(sizes, [row["peak_mb"] for row in own], marker="o", label=labels[name])
    for axes, label in ((time_axes, "seconds at party 0 (release phases)"),
                        (memory_axes, "peak memory per party (MB, largest party)")):
        axes.set_xscale("log")
        axes.set_yscale("log")
        axes.set_xlabel("n (rows over all parties)")
        axes.set_ylabel(label)
        axes.grid(True, which="both", alpha=0.3)
        axes.legend(fontsize=8)
    time_axes.set_title(title + " (dotted: modelled)", fontsize=9)
    save_figure(figure, path)


def report(rows: Sequence[dict[str, Any]], notes: Sequence[str]) -> None:
    """Print the table (module docstring's columns)."""
    from scenarios.kit.cli import format_bytes
    from scenarios.kit.experiments import print_rows

    def number(value: Any, pattern: str) -> str:
        return "-" if isinstance(value, float) and not math.isfinite(value) else format(value, pattern)

    header = ["n", "path", "|E|", "seconds", "model s", "bytes", "model bytes", "peak MB", "per party", "model MB",
              "load s", "read s", "pyarrow s", "share MB", "status"]
    lines = [[str(row["n"]), row["path"], str(row["tuples"]), number(row["seconds"], ".2f"),
              number(row["model_seconds"], ".3g"),
              "-" if not math.isfinite(float(row["bytes"])) else format_bytes(row["bytes"]),
              format_bytes(row["model_bytes"]), number(row["peak_mb"], ".0f"), row["peak_mb_parties"] or "-",
              number(row["model_mb"], ".0f"), number(row["load_seconds"], ".2f"), number(row["read_seconds"], ".2f"),
              number(row["pyarrow_seconds"], ".2f"), number(row["share_mb"], ".1f"), row["status"]] for row in rows]
    print_rows("Scale: complete Kendall's tau (histogram path) against sampled |E| = 2n", header, lines, notes)


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

        rows = [run_configuration(options, seed, size, path, parties, threshold)
                for size in options.sizes for path in PATHS]
        base = os.path.join(options.results_dir, NAME)
        write_csv(base + ".csv", COLUMNS, rows)
        title = f"Kendall's tau on a 601 x 401 grid, {parties} parties (t = {threshold}), epsilon = {options.epsilon:g}"
        plot(rows, base + ".png", title)
        notes = [title, f"seed {seed} (--seed {seed} repeats the data)"]
        notes += [f"n = {row['n']} {row['path']}: {row['status']}" for row in rows if row["status"] != "measured"]
        notes.append(f"wrote {base}.csv, {base}.png")
        report(rows, notes)

    return deliver


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the benchmark (or, with ``--measure``, of one configuration); the exit code."""
    from scenarios.kit.experiments import benchmark_spend

    return run_scenario(parse_options, _bench, public_parameters, argv, spend=benchmark_spend)


if __name__ == "__main__":
    sys.exit(main())
