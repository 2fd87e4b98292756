"""Barczewski, Mawass & Ramon, Fig. 6: relative MSE of the private Hosmer-Lemeshow statistic vs epsilon.

Run: ``python -m scenarios.papers.hosmer_lemeshow [--quick]`` (``-M3 --secure``: one repetition of every
(epsilon, accounting) of Algorithm 2 across real parties with fixed per-party draws, equal to the simulation; the
experiment's own runs draw OS noise).  Findings beside ours: ``docs/papers/barczewski.md``."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from typing import Any, Literal, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, print_table
from scenarios.kit.experiments import CommonOptions, equal_checks, new_figure, party_draws, style_axes
from scenarios.kit.sweep import Output, Sweep, framingham_scores

__all__ = ["main", "parse_options", "Options", "COLUMNS", "load_scores", "run_experiment", "write_png",
           "secure_checks", "DEFAULT_EPSILONS", "QUICK_EPSILONS", "CSV_NAME", "PNG_NAME"]

DEFAULT_EPSILONS: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
QUICK_EPSILONS: tuple[float, ...] = (0.5, 5.0)
DEFAULT_RUNS = 100
QUICK_RUNS = 5
ACCOUNTINGS: tuple[Literal["paper", "joint"], ...] = ("paper", "joint")
CSV_NAME = "hosmer_lemeshow_fig6.csv"
PNG_NAME = "hosmer_lemeshow_fig6.png"
#: xor-ed into --seed for the model split, as scenarios.ustat does for its AUC scores
_SPLIT_SALT = 0x5C0E
#: the CSV's columns: relative squared errors of one (epsilon, accounting) over all runs
COLUMNS = ("epsilon", "accounting", "smoothed", "runs", "relative_mse", "standard_error", "median", "q10", "q90",
           "mean_statistic", "exact_statistic", "floored_runs", "epsilon_prime", "ecdf_epsilon",
           "statistics_epsilon", "grid_points", "depth", "groups", "parties", "threshold", "n")


@dataclass(frozen=True)
class Options:
    epsilons: tuple[float, ...]
    groups: int
    grid_points: int
    precision: int
    smoothed: bool
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    from scenarios.kit.options import add_renamed_option

    parser.add_argument("--epsilons", nargs="+", help="budgets to measure, E[,E...] (default 0.1,0.2,0.5,1,2,5,10)")
    parser.add_argument("--runs", type=int, help="repetitions per epsilon (default 100)")
    parser.add_argument("--groups", type=int, default=10, help="quantile groups (default 10)")
    add_renamed_option(parser, "--points", "--grid-points", type=int, default=1024,
                       help="ECDF grid points i/N, a power of two (default 1024: L = 10, eps' = eps/19)")
    parser.add_argument("--precision", type=int, default=16,
                        help="fractional bits of the fixed-point probabilities (default 16)")
    parser.add_argument("--smoothed", action="store_true",
                        help="find the group boundaries on the monotone-smoothed ECDF (eq. 3, p = 2)")
    parser.add_argument("--seed", type=int, default=1, help="public seed of the model's training split (default 1)")
    parser.add_argument("--results-dir", default="results", help="where party 0 writes the CSV and the PNG")
    parser.add_argument("--quick", action="store_true", help="few epsilons and runs (for tests)")
    parser.add_argument("--secure", action="store_true",
                        help="also run one repetition of the protocol on the MPyC path (with -M3: real parties) and "
                             "show that it agrees with the simulated path")


def _parse_epsilons(items: Sequence[str]) -> tuple[float, ...]:
    texts = [text.strip() for item in items for text in item.split(",") if text.strip()]
    if not texts:
        raise UsageError("--epsilons needs at least one value")
    values: list[float] = []
    for text in texts:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(f"--epsilons expects numbers, got '{text}'") from None
        if not (math.isfinite(value) and value > 0):
            raise UsageError(f"epsilon must be positive, got {text}")
        values.append(value)
    return tuple(sorted(set(values)))


def _resolve(args: Any, common: CommonOptions) -> Options:
    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery

    epsilons = _parse_epsilons(args.epsilons) if args.epsilons else (QUICK_EPSILONS if args.quick else DEFAULT_EPSILONS)
    try:
        for epsilon in epsilons:
            HosmerLemeshowQuery(epsilon=epsilon, groups=args.groups, grid_points=args.points, precision=args.precision,
                                smoothed=args.smoothed)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    return Options(epsilons, args.groups, args.points, args.precision, args.smoothed, common)


def load_scores(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Predicted probabilities and labels of the Framingham logistic regression (the Bank stand-in), the model's
    training split drawn from ``seed ^`` :data:`_SPLIT_SALT`."""
    return framingham_scores(seed ^ _SPLIT_SALT)


def run_experiment(probabilities: np.ndarray, labels: np.ndarray, exact: Any, options: Options, *, parties: int,
                   threshold: int) -> list[dict[str, Any]]:
    """Relative squared error of the private HL statistic against the ``exact`` one, ``options.common.runs`` times
    per epsilon and accounting (noise from the OS, never from ``--seed``; ``parties``, ``threshold``: the
    calibration's ``m`` and ``t``); one row (:data:`COLUMNS`) per (epsilon, accounting)."""
    from tqdm import tqdm

    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, private_hosmer_lemeshow, relative_squared_error

    rows: list[dict[str, Any]] = []
    runs = options.common.runs
    total = len(options.epsilons) * len(ACCOUNTINGS) * runs
    with tqdm(total=total, desc="HL runs", unit="run", file=sys.stderr) as bar:
        for epsilon in options.epsilons:
            for accounting in ACCOUNTINGS:
                query = HosmerLemeshowQuery(epsilon=epsilon, groups=options.groups, grid_points=options.grid_points,
                                            precision=options.precision, smoothed=options.smoothed,
                                            accounting=accounting)
                errors, statistics, floored = [], [], 0
                for _ in range(runs):
                    release = private_hosmer_lemeshow(probabilities, labels, query, parties=parties,
                                                      threshold=threshold)
                    statistics.append(release.statistic)
                    errors.append(relative_squared_error(release.statistic, exact.statistic))
                    floored += release.floored > 0
                    bar.update(1)
                values = np.array(errors)
                budget = query.budget
                rows.append(dict(
                    epsilon=epsilon, accounting=accounting, smoothed=options.smoothed, runs=runs,
                    relative_mse=float(values.mean()),
                    standard_error=float(values.std(ddof=1) / math.sqrt(values.size)) if values.size > 1 else math.nan,
                    median=float(np.median(values)), q10=float(np.quantile(values, 0.1)),
                    q90=float(np.quantile(values, 0.9)), mean_statistic=float(np.mean(statistics)),
                    exact_statistic=exact.statistic, floored_runs=int(floored),
                    epsilon_prime=budget.epsilon_prime, ecdf_epsilon=budget.ecdf_epsilon,
                    statistics_epsilon=budget.statistics_epsilon, grid_points=options.grid_points,
                    depth=query.depth, groups=options.groups, parties=parties, threshold=threshold,
                    n=int(probabilities.shape[0])))
    return rows


def write_png(rows: Sequence[dict[str, Any]], path: str, *, floor: float, title: str) -> None:
    """Log-log plot of the relative MSE (mean, median, 10-90 % band) against epsilon, per accounting, and the
    noiseless mechanism's ``floor`` (dotted; skipped if 0)."""
    figure, axes = new_figure(6.4, 4.4)
    colours = {"paper": "tab:blue", "joint": "tab:orange"}
    labels = {"paper": "paper accounting (8 statistics, each eps')", "joint": "joint sensitivity 4 (same 8 eps')"}
    for accounting in ACCOUNTINGS:
        mine = sorted((row for row in rows if row["accounting"] == accounting), key=lambda row: row["epsilon"])
        eps = [row["epsilon"] for row in mine]
        colour = colours[accounting]
        axes.plot(eps, [row["relative_mse"] for row in mine], "o-", color=colour, label=f"mean, {labels[accounting]}")
        axes.plot(eps, [row["median"] for row in mine], "s--", color=colour, alpha=0.7, markersize=4,
                  label=f"median, {accounting}")
        lower = [max(row["q10"], 1e-300) for row in mine]
        axes.fill_between(eps, lower, [row["q90"] for row in mine], color=colour, alpha=0.15)
    if floor > 0:
        axes.axhline(floor, color="grey", linestyle=":", label="no noise (fixed point + grid only)")
    style_axes(axes, xlabel="epsilon", ylabel="relative MSE of H  (shaded: 10-90 % of runs)", title=title, legend=7)
    figure.savefig(path, dpi=120)


async def secure_checks(options: Options, seed: int) -> list[Any]:
    """``--secure``: every (epsilon, accounting) once through the secure Algorithm 2 beside
    :func:`dp.ecdf.hosmer_lemeshow.private_hosmer_lemeshow` given the sums of the same draws
    (``docs/papers/barczewski.md``).  Collective; the checks at party 0."""
    from mpyc.runtime import mpc

    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, private_hosmer_lemeshow
    from dp.ecdf.hosmer_lemeshow import party_group_noise, run_secure_hosmer_lemeshow
    from scenarios.papers.ecdf_smoothing import counts_check

    parties, coalition, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    probabilities, labels = load_scores(seed)
    checks: list[Any] = []
    settings = [(epsilon, accounting) for epsilon in options.epsilons for accounting in ACCOUNTINGS]
    for index, (epsilon, accounting) in enumerate(settings):
        query = HosmerLemeshowQuery(epsilon=epsilon, groups=options.groups, grid_points=options.grid_points,
                                    precision=options.precision, smoothed=options.smoothed, accounting=accounting)
        plan = query.tree_plan(parties=parties, threshold=coalition)

        def draws(generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            nodes = plan.draw_party(generator)  # the tree's draws first, then E and O
            return (nodes, *party_group_noise(query, parties, coalition, rng=generator))

        every = party_draws(seed, index, parties, draws)
        own = every[pid]
        secure = await run_secure_hosmer_lemeshow(
            probabilities[pid::parties], labels[pid::parties], query,
            node_noise_source=lambda _: own[0], statistic_noise_source=lambda *_: (own[1], own[2]))
        if secure is None:
            continue
        simulated = private_hosmer_lemeshow(probabilities, labels, query, parties=parties, threshold=coalition,
                                            node_noise=sum(d[0] for d in every),
                                            expected_noise=sum(d[1] for d in every),
                                            observed_noise=sum(d[2] for d in every))
        label = (f"epsilon={epsilon:g} {accounting} Q={options.groups} N={options.grid_points} "
                 f"(m={parties} t={coalition})")
        checks += equal_checks(label, {"H": secure.statistic, "p-value": secure.p_value},
                               {"H": simulated.statistic, "p-value": simulated.p_value}, ("H", "p-value"))
        checks += [counts_check(label, mine, theirs, name) for name, mine, theirs in (
            ("boundaries", secure.boundaries, simulated.boundaries), ("noisy E", secure.expected, simulated.expected),
            ("noisy O", secure.observed, simulated.observed), ("released ECDF points", secure.ecdf, simulated.ecdf))]
    return checks


def _run(options: Options, seed: int) -> list[Output]:
    from dp.ecdf.grid import node_count
    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, exact_hosmer_lemeshow, private_hosmer_lemeshow, \
        relative_squared_error
    from secure.session import party_count, threshold

    parties, coalition = party_count(), threshold()
    probabilities, labels = load_scores(seed)
    exact = exact_hosmer_lemeshow(probabilities, labels, options.groups)
    rows = run_experiment(probabilities, labels, exact, options, parties=parties, threshold=coalition)
    query = HosmerLemeshowQuery(epsilon=1.0, groups=options.groups, grid_points=options.grid_points,
                                precision=options.precision, smoothed=options.smoothed)
    zeros = np.zeros((2, options.groups), dtype=np.int64)
    noiseless = private_hosmer_lemeshow(probabilities, labels, query, expected_noise=zeros, observed_noise=zeros,
                                        node_noise=np.zeros(node_count(options.grid_points), dtype=np.int64))
    # the discretisation alone (fixed point, grid i/N): the floor the relative MSE approaches as epsilon grows
    floor = relative_squared_error(noiseless.statistic, exact.statistic)
    depth = query.depth
    n = int(probabilities.shape[0])
    title = (f"Private Hosmer-Lemeshow (Fig. 6), Framingham logistic regression (stand-in for Bank)\n"
             f"n = {n}, Q = {options.groups}, N = {options.grid_points} (L = {depth}), {options.common.runs} runs "
             f"per point, {parties} part{'y' if parties == 1 else 'ies'}"
             f"{' (smoothed ECDF)' if options.smoothed else ''}")
    summary = {"n": n, "positives": float(labels.mean()), "exact": exact, "floor": floor, "depth": depth,
               "parties": parties, "threshold": coalition}
    written = [{key: f"{value:.10g}" if isinstance(value, float) else value for key, value in row.items()}
               for row in rows]
    return [Output(CSV_NAME[:-4], COLUMNS, written, lambda _, path: write_png(rows, path, floor=floor, title=title)),
            Output("rows", (), rows), Output("summary", (), [summary])]


def _report(options: Options, outputs: Sequence[Output]) -> None:
    _, rows, (summary,) = (output.rows for output in outputs)
    exact, floor, depth, parties = summary["exact"], summary["floor"], summary["depth"], summary["parties"]
    runs = options.common.runs
    print_table([
        ("data", f"Framingham, logistic-regression scores of TenYearCHD (stand-in for the paper's Bank "
                 f"dataset); n = {summary['n']} rows, {100 * summary['positives']:.1f} % positive"),
        ("exact HL", f"H = {exact.statistic:.4f}, p-value = {exact.p_value:.4f} (chi2, {exact.degrees_of_freedom} df, "
                     f"Q = {options.groups} groups at the exact quantiles)"),
        ("mechanism", f"Algorithm 2, grid i/{options.grid_points} (L = {depth}), eps' = eps/{depth + 9}; "
                      f"ECDF (L+1) eps', group statistics 8 eps'; boundaries on the "
                      f"{'smoothed' if options.smoothed else 'raw'} ECDF; {options.precision}-bit fixed point"),
        ("parties", f"{parties} (threshold t = {summary['threshold']})"
                    + ("" if parties == 1 else f": noise coalition-calibrated, variance x{parties}/"
                                               f"{parties - summary['threshold']}")),
        ("no-noise floor", f"relative squared error {floor:.3g} (fixed point and grid move rows across boundaries)"),
    ], title="Private Hosmer-Lemeshow statistic: relative MSE vs epsilon (paper Fig. 6)")
    print(f"  {'epsilon':>8}  {'rel. MSE paper':>14}  {'median':>9}  {'rel. MSE joint':>14}  {'median':>9}  "
          f"{'E floored':>9}")
    for epsilon in options.epsilons:
        paper, joint = (next(row for row in rows if row["epsilon"] == epsilon and row["accounting"] == name)
                        for name in ACCOUNTINGS)
        floored = f"{paper['floored_runs']}/{runs}"
        print(f"  {epsilon:>8g}  {paper['relative_mse']:>14.4g}  {paper['median']:>9.3g}  "
              f"{joint['relative_mse']:>14.4g}  {joint['median']:>9.3g}  {floored:>9}")
    print(f"  ({runs} runs per cell; 'E floored': runs (paper accounting) where a noisy expected count "
          f"was raised to 1 before dividing)")


SWEEP = Sweep(module="hosmer_lemeshow", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=_run, report=_report, runs=DEFAULT_RUNS, quick_runs=QUICK_RUNS,
              checks=secure_checks, own_options=True, footer=lambda options, seed, files, seconds: print(
                  f"  wrote {files[0]} and {files[1]} in {seconds:.1f} s"))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
