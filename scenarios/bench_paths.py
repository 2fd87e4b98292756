"""Benchmark "accuracy beside cost": total error and measured cost of every way to compute a U-statistic.

For each kernel (Kendall, Gini, AUC, duplicate, Rand, VUS) on its default embedded data, in one MPyC session,
every path runs on the same prepared rows: sampled tuples ``|E| = 2n, 8n, 32n``, the sort path (AUC, Gini) and
the histogram path.  Each configuration's measured seconds (party 0) and bytes (all parties) stand beside the
planner's model; after the shutdown party 0 computes its RMSE against the exact statistic by Monte Carlo on the
simulated path (public data).  Columns, method and options: docs/benchmarks.md.  Run it with three local parties::

    python -m scenarios.bench_paths -M3                       # all six kernels, all rows, 200 runs
    python -m scenarios.bench_paths -M3 --quick               # first 120 rows, 3 kernels, 100 runs
    python -m scenarios.bench_paths -M3 --kernels kendall,auc --rows 1000 --runs 50 --epsilon 0.5

Threat model of the secure runs: as each path states (passive, static, ``t < m/2``)."""
from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.measure import bench_main
from scenarios.kit.experiments import CommonOptions, add_common_options, common_options

__all__ = ["main", "parse_options", "KERNELS", "MULTIPLES", "COLUMNS"]

#: the six kernels, in the order of the table
KERNELS = ("kendall", "gini", "auc", "duplicate", "rand", "vus")
#: the kernels of ``--quick`` (sampled, sort and histogram paths; one and two released sums)
QUICK_KERNELS = ("kendall", "gini", "auc")
#: sampled ``|E| = K n`` for these ``K``
MULTIPLES = (2, 8, 32)
#: the kernels with a sort path (:data:`dp.umpc.planner.SORT_KERNELS`)
SORT_KERNELS = ("auc", "gini")
QUICK_ROWS = 120
RUNS, QUICK_RUNS = 200, 100
NAME = "bench_paths"
#: CSV columns (docs/benchmarks.md)
COLUMNS = ["kernel", "path", "tuples", "n", "rmse", "mse_se", "noise_sd", "runs", "undefined", "exact", "estimate",
           "seconds", "model_seconds", "bytes", "model_bytes"]


@dataclass
class PathsOptions:
    """Parsed options: the kernels, each with its ``scenarios.ustat`` options (query, data, columns)."""

    kernels: tuple[str, ...]
    jobs: dict[str, Any]
    rows: int | None
    epsilon: float
    common: CommonOptions


def parse_options(argv: Sequence[str]) -> PathsOptions:
    """Parse the options; each kernel's query is the one ``scenarios.ustat --stat K --epsilon E`` builds.
    :raise UsageError: on a bad value."""
    from scenarios.ustat import parse_options as ustat_options

    parser = ScenarioParser(prog="python -m scenarios.bench_paths", description=__doc__)
    parser.add_argument("--kernels", default=None, help="comma-separated kernels (default all six)")
    parser.add_argument("--rows", type=int, default=None, help="first N rows of each dataset")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget of each release (default 1)")
    add_common_options(parser)
    args = parser.parse_args(list(argv))
    common = common_options(args, runs=RUNS, quick_runs=QUICK_RUNS)
    if args.kernels is None:
        kernels = QUICK_KERNELS if common.quick else KERNELS
    else:
        kernels = tuple(k.strip() for k in args.kernels.split(",") if k.strip())
        unknown = [k for k in kernels if k not in KERNELS]
        if unknown or not kernels:
            raise UsageError(f"--kernels takes a comma-separated list of {', '.join(KERNELS)}, got '{args.kernels}'")
        if len(set(kernels)) != len(kernels):
            raise UsageError(f"--kernels lists a kernel twice: '{args.kernels}'")
    rows = args.rows if args.rows is not None else (QUICK_ROWS if common.quick else None)
    if rows is not None and rows < 2 * max(MULTIPLES) + 1:  # K n <= C(n, 2) distinct pairs needs n >= 2 K + 1
        raise UsageError(f"--rows must be at least {2 * max(MULTIPLES) + 1}, got {rows}")
    if not math.isfinite(args.epsilon) or args.epsilon <= 0:
        raise UsageError(f"--epsilon must be positive and finite, got {args.epsilon}")
    jobs = {kernel: ustat_options(["--stat", kernel, "--epsilon", repr(args.epsilon)]) for kernel in kernels}
    return PathsOptions(kernels, jobs, rows, args.epsilon, common)


def public_parameters(options: PathsOptions) -> dict[str, Any]:
    """What every party must agree on."""
    return {"kernels": list(options.kernels), "rows": options.rows, "epsilon": options.epsilon,
            "runs": options.common.runs, "seed": options.common.seed, "quick": options.common.quick,
            "os_noise": options.common.os_noise, "results_dir": options.common.results_dir}


def table_values(job: Any, seed: int, rows: int | None) -> Any:
    """All rows of a kernel's embedded table as ``scenarios.ustat`` reads them (missing values filled),
    the first ``rows`` only if given: a float array in kernel column order.  Party ``i`` keeps rows ``i, i + m, ...``
    (docs/design.md: the embedded data's split)."""
    from scenarios.ustat import load_rows

    values = load_rows(job, seed, 0, 1).values
    return values if rows is None else values[:rows]


@dataclass
class Measured:
    """One configuration as the secure run measured it, with the planner's model."""

    kernel: str
    path: str
    tuples: int
    n: int
    estimate: float
    seconds: float
    bytes_sent: int
    model_seconds: float
    model_bytes: float
    multiple: int | None


def tuple_seed(seed: int, kernel: str, multiple: int) -> int:
    """The public tuple seed of the secure sampled run (``kernel``, ``|E| = multiple n``)."""
    return (seed * 1_000_003 + KERNELS.index(kernel) * 101 + multiple) % (1 << 62)


async def _measure(options: PathsOptions, seed: int) -> list[Measured]:
    """Every party: each kernel's configurations on the same prepared rows, measured."""
    from mpyc.runtime import mpc

    from dp.umpc.complete import plan_for, run_complete
    from dp.umpc.protocol import prepare_rows, run_secure
    from scenarios.kit.cli import log_phase
    from secure.errors import InputError
    from secure.session import agree_verdict

    parties = len(mpc.parties)
    measured: list[Measured] = []
    for kernel in options.kernels:
        job = options.jobs[kernel]
        error, fixed = None, None
        try:
            fixed = prepare_rows(job.query, table_values(job, seed, options.rows)[mpc.pid::parties])
        except InputError as exc:
            error = str(exc)
        await agree_verdict(error)
        assert fixed is not None
        n = sum(await mpc.transfer(int(fixed.integers.shape[0])))
        configurations: list[tuple[str, int | None]] = [(f"{k}n", k) for k in MULTIPLES]
        configurations += [("sort", None)] if kernel in SORT_KERNELS else []
        configurations += [("histogram", None)]
        for label, multiple in configurations:
            log_phase(f"{kernel}: {label}")
            sampled = multiple is not None
            query = replace(job.query, tuples=multiple * n if multiple else None, path="tuples" if sampled else label)
            try:
                plan = plan_for(query, rows=n, parties=parties, pairs="per-row" if sampled else "all")
            except ValueError as exc:
                raise InputError(f"all parties: {exc}") from None
            release = (await run_secure(query, fixed, seed=tuple_seed(seed, kernel, multiple)) if multiple is not None
                       else await run_complete(query, fixed, plan, missing=job.missing.mode))
            cost = plan.costs[query.path]
            assert release is not None
            measured.append(Measured(kernel, label, int(release.pairs), n, float(release.estimate),
                                     float(release.seconds), int(release.bytes_sent), float(cost.seconds),
                                     float(cost.bytes_sent), multiple))
    return measured


def monte_carlo(options: PathsOptions, seed: int, measured: Sequence[Measured],
                parties: int, threshold: int) -> list[dict[str, Any]]:
    """Party 0, after the shutdown: each configuration's RMSE and noise-only sd over ``--runs`` simulated
    releases (docs/benchmarks.md), as CSV rows."""
    import numpy as np

    from dp.umpc.complete import simulate_complete
    from dp.umpc.protocol import estimate_noise_std, simulate
    from scenarios.kit.experiments import noise_generator, progress, run_seeds

    runs, os_noise = options.common.runs, options.common.os_noise
    run_seed = run_seeds(seed, runs)
    results: list[dict[str, Any]] = []
    by_kernel: dict[str, list[Any]] = {}
    exact: dict[str, float] = {}
    bar = progress(len(measured), "configurations")
    for setting, item in enumerate(measured):
        job = options.jobs[item.kernel]
        if item.kernel not in by_kernel:
            values = table_values(job, seed, options.rows)
            by_kernel[item.kernel] = [values[p::parties] for p in range(parties)]
            exact[item.kernel] = float(simulate_complete(replace(job.query, tuples=None), by_kernel[item.kernel],
                                                         threshold=threshold, runs=1).exact_on_tuples)
        rows_by_party, truth = by_kernel[item.kernel], exact[item.kernel]
        if item.multiple is None:
            query = replace(job.query, tuples=None)
            simulation = simulate_complete(query, rows_by_party, threshold=threshold, runs=runs,
                                           noise_rng=noise_generator(seed, setting, 0, os_noise=os_noise))
            estimates = np.asarray(simulation.estimates, dtype=float)
            noise_variance = estimate_noise_std(query, item.tuples, simulation.plans, list(simulation.sums)) ** 2
        else:
            query = replace(job.query, tuples=item.tuples, path="tuples")
            draws, variances = [], []
            for run in range(runs):
                simulation = simulate(query, rows_by_party, threshold=threshold, seed=int(run_seed[run]), runs=1,
                                      noise_rng=noise_generator(seed, setting, run, os_noise=os_noise))
                draws.append(float(simulation.estimates[0]))
                variances.append(estimate_noise_std(query, item.tuples, simulation.plans, list(simulation.sums)) ** 2)
            estimates = np.asarray(draws)
            finite = [variance for variance in variances if math.isfinite(variance)]  # nan: no comparable tuple drawn
            noise_variance = float(np.mean(finite)) if finite else math.nan
        defined = np.isfinite(estimates)  # a ratio (AUC, VUS) is undefined where its noisy denominator is <= 0
        squared = (estimates[defined] - truth) ** 2
        results.append({"kernel": item.kernel, "path": item.path, "tuples": item.tuples, "n": item.n,
                        "rmse": math.sqrt(float(np.mean(squared))) if squared.size else math.nan,
                        "mse_se": float(np.std(squared, ddof=1) / math.sqrt(squared.size))
                        if squared.size > 1 else math.nan,
                        "noise_sd": math.sqrt(noise_variance), "runs": runs, "undefined": int(np.sum(~defined)),
                        "exact": truth, "estimate": item.estimate, "seconds": item.seconds,
                        "model_seconds": item.model_seconds, "bytes": item.bytes_sent, "model_bytes": item.model_bytes})
        bar.update(1)
    bar.close()
    return results


def plot(rows: Sequence[dict[str, Any]], path: str, title: str) -> None:
    """RMSE against measured seconds (log-log), one curve per kernel, points labelled by path."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from scenarios.kit.experiments import new_figure, save_figure, style_axes

    figure, axes = new_figure(7.5, 5.5)
    kernels = list(dict.fromkeys(row["kernel"] for row in rows))
    markers = {"histogram": "*", "sort": "s"}
    for kernel in kernels:
        own = [row for row in rows if row["kernel"] == kernel]
        sampled = sorted((row for row in own if row["path"] not in markers), key=lambda row: row["tuples"])
        line, = axes.plot([max(row["seconds"], 1e-3) for row in sampled], [row["rmse"] for row in sampled],
                          marker="o", label=kernel)
        for row in own:
            x, y = max(row["seconds"], 1e-3), row["rmse"]
            if row["path"] in markers:
                axes.plot([x], [y], marker=markers[row["path"]], markersize=10 if row["path"] == "histogram" else 7,
                          linestyle="none", color=line.get_color())
            axes.annotate("hist" if row["path"] == "histogram" else row["path"], (x, y), textcoords="offset points",
                          xytext=(4, 4), fontsize=7, color=line.get_color())
    style_axes(axes, xlabel="measured seconds at party 0 (release phases)",
               ylabel="total RMSE against the all-tuples statistic",
               title=title + "\nlines: sampled |E| = 2n, 8n, 32n; star: histogram path; square: sort path")
    # Under a decade of seconds matplotlib labels every minor tick of a log axis, and they overlap:
    # label 1, 2 and 5 times a power of ten only.
    axes.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.xaxis.set_minor_formatter(NullFormatter())
    save_figure(figure, path)


def report(rows: Sequence[dict[str, Any]], notes: Sequence[str]) -> None:
    """Print the table (columns: docs/benchmarks.md)."""
    from scenarios.kit.cli import format_bytes
    from scenarios.kit.experiments import print_rows

    header = ["kernel", "path", "|E|", "n", "RMSE", "noise sd", "seconds", "model s", "bytes", "model bytes"]
    lines = [[row["kernel"], row["path"], str(row["tuples"]), str(row["n"]),
              f"{row['rmse']:.3g}" + (f" ({row['undefined']} undef.)" if row["undefined"] else ""),
              f"{row['noise_sd']:.3g}", f"{row['seconds']:.2f}", f"{row['model_seconds']:.2f}",
              format_bytes(row["bytes"]), format_bytes(row["model_bytes"])] for row in rows]
    print_rows("Accuracy beside cost: every path of each kernel", header, lines, notes)


async def _bench(options: PathsOptions) -> Callable[[], None] | None:
    from mpyc.runtime import mpc

    from scenarios.kit.experiments import agree_seed, check_results_dir

    seed = await agree_seed(options.common.seed)
    await check_results_dir(options.common.results_dir)
    measured = await _measure(options, seed)
    if mpc.pid != 0:
        return None
    parties, threshold = len(mpc.parties), int(mpc.threshold)

    def deliver() -> None:
        from scenarios.kit.experiments import seed_note, write_csv

        started = time.perf_counter()
        rows = monte_carlo(options, seed, measured, parties, threshold)
        base = os.path.join(options.common.results_dir, NAME)
        write_csv(base + ".csv", COLUMNS, rows)
        title = (f"{parties} parties (t = {threshold}), epsilon = {options.epsilon:g}, {options.common.runs} "
                 f"simulated releases per point" + (f", first {options.rows} rows" if options.rows else ""))
        plot(rows, base + ".png", title)
        report(rows, [title, seed_note(seed, options.common.os_noise),
                      f"Monte Carlo {time.perf_counter() - started:.1f} s; wrote {base}.csv, {base}.png"])

    return deliver


main = bench_main(parse_options, _bench, public_parameters)


if __name__ == "__main__":
    sys.exit(main())
