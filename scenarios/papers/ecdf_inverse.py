"""Experiment: errors of a private ECDF and of its inverse, raw and smoothed (paper Fig. 4).

Run: ``python -m scenarios.papers.ecdf_inverse`` (add ``--quick`` for a tiny run).  Writes
``results/ecdf_inverse.csv`` and ``.png``.

The paper, the data, the method, the threat model and the paper's findings beside ours:
``docs/papers/barczewski.md``.

Options (lower case; MPyC's options such as -M work as usual; the common ones: scenarios.kit.sweep):
  --epsilon-grid E1,E2,...  epsilons swept (default 0.05,0.1,0.2,0.5,1,2,5,10)
  --lambda L                Poisson rate of X_pois (default 3)
  --points N                grid size N (default 2^15; --quick: 2^8)
  --queries Q               random points x and levels p per run (default 200; --quick: 50)
  --smoothing-norm {1,2}    p of eq. (3) for the smoothed curve (default 2)
  --secure                  also run one repetition (run 0) of every epsilon on the MPyC path: with -M3
                            real parties, rows i, i+m, ... of the instances at party i, the secure tree
                            ECDF (dp.ecdf.secure_release.run_secure_ecdf) with fixed per-party node
                            draws fed to both paths; the released counts and the run's four MSEs must be
                            equal (ecdf_inverse_secure.csv; a disagreement exits 1)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, data_generator, format_mean, new_figure,
                                       noise_generator, poisson_cumulative_counts, print_rows, progress, run_seeds,
                                       save_figure, summarize_runs)
from scenarios.kit.sweep import Output, Sweep, axis

__all__ = ["main", "parse_options", "InverseOptions", "run_experiment", "secure_checks", "CSV_COLUMNS", "METRICS"]

DEFAULT_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
QUICK_EPSILONS = (0.05, 1.0, 10.0)
DEFAULT_POINTS = 2**15
QUICK_POINTS = 2**8
DEFAULT_QUERIES = 200
QUICK_QUERIES = 50

#: per-run measurements; the CSV has ``<metric>_mean`` and ``<metric>_se`` for each.
METRICS = ("mse_ecdf", "mse_smoothed_ecdf", "mse_inverse", "mse_smoothed_inverse")
CSV_COLUMNS = ("epsilon", "lambda", "points", "queries", "smoothing_norm", "runs", "solver_failures",
               *(f"{metric}_{part}" for metric in METRICS for part in ("mean", "se")),
               "predicted_mse_ecdf", "seed")
LABELS = {
    "mse_ecdf": "F_hat(x)",
    "mse_smoothed_ecdf": "F_smoothed(x)",
    "mse_inverse": "F_hat^-1(p)",
    "mse_smoothed_inverse": "F_smoothed^-1(p)",
}


@dataclass(frozen=True)
class InverseOptions:
    """Parsed options of the inverse-ECDF experiment."""

    epsilons: tuple[float, ...]
    poisson_rate: float
    points: int
    queries: int
    smoothing_norm: int
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--epsilon-grid", default=None)
    parser.add_argument("--lambda", dest="poisson_rate", type=float, default=3.0)
    parser.add_argument("--points", type=int, default=None)
    parser.add_argument("--queries", type=int, default=None)
    parser.add_argument("--smoothing-norm", type=int, choices=(1, 2), default=2)


def _resolve(args: Any, common: CommonOptions) -> InverseOptions:
    points = args.points if args.points is not None else (QUICK_POINTS if args.quick else DEFAULT_POINTS)
    if not 2 <= points <= 2**20:
        raise UsageError(f"--points must lie in [2, 2^20], got {points}")
    queries = args.queries if args.queries is not None else (QUICK_QUERIES if args.quick else DEFAULT_QUERIES)
    if queries < 1:
        raise UsageError(f"--queries must be at least 1, got {queries}")
    return InverseOptions(epsilons=axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS,
                                        quick=QUICK_EPSILONS, is_quick=args.quick),
                          poisson_rate=check_positive_number(args.poisson_rate, "--lambda"),
                          points=points, queries=queries, smoothing_norm=args.smoothing_norm, common=common)


def _one_run(grid: np.ndarray, cumulative: np.ndarray, at: np.ndarray, levels: np.ndarray, plan: Any,
             incidence: Any, norm: int, generator: np.random.Generator | None, *,
             node_noise: np.ndarray | None = None, released_counts: np.ndarray | None = None) -> dict[str, float]:
    """Release, smooth, evaluate and invert for one run.

    :param node_noise: the total node noise to use instead of ``plan.draw_total(generator)`` (``--secure``:
        the sum of the parties' fixed draws).
    :param released_counts: the noisy counts released by the MPyC path, measured instead of a simulated release.
    """
    from dp.ecdf.tree import noisy_counts
    from smoothing.inverse import evaluate_step, quantiles
    from smoothing.monotone import SmoothingError, smooth_ecdf

    record = {metric: math.nan for metric in METRICS}
    record["failures"] = 0.0
    rows = int(cumulative[-1])
    if rows == 0:
        return record
    truth = cumulative / rows
    if released_counts is None:
        released_counts = noisy_counts(cumulative, plan.draw_total(generator) if node_noise is None else node_noise)
    released = released_counts / rows
    true_values = evaluate_step(grid, truth, at)
    record["mse_ecdf"] = float(np.mean((evaluate_step(grid, released, at) - true_values) ** 2))
    true_inverse = quantiles(grid, truth, levels, lower=0.0, upper=1.0)
    raw_inverse = quantiles(grid, released, levels, lower=0.0, upper=1.0)
    record["mse_inverse"] = float(np.mean((raw_inverse - true_inverse) ** 2))
    try:
        smoothed = smooth_ecdf(released, incidence, norm=norm).values
    except SmoothingError:
        record["failures"] = 1.0
        return record
    record["mse_smoothed_ecdf"] = float(np.mean((evaluate_step(grid, smoothed, at) - true_values) ** 2))
    smoothed_inverse = quantiles(grid, smoothed, levels, lower=0.0, upper=1.0)
    record["mse_smoothed_inverse"] = float(np.mean((smoothed_inverse - true_inverse) ** 2))
    return record


def run_experiment(options: InverseOptions, seed: int) -> list[Output]:
    """Run every epsilon ``options.common.runs`` times; one summary row per epsilon."""
    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.tree import plan_tree_noise

    points = options.points
    grid = _grid(points)  # tau_i = i / N, the values of X_pois / N
    incidence = prefix_incidence(points)
    seeds = run_seeds(seed, options.common.runs)
    rows: list[dict[str, Any]] = []
    bar = progress(len(options.epsilons) * options.common.runs, "ecdf_inverse")
    try:
        for index, epsilon in enumerate(options.epsilons):
            bar.set_postfix_str(f"epsilon={epsilon:g}")
            plan = plan_tree_noise(epsilon=epsilon, points=points)
            records = []
            for run in range(options.common.runs):
                data = data_generator(seeds[run])
                cumulative = poisson_cumulative_counts(data, options.poisson_rate, points)
                at = data.uniform(0.0, 1.0, size=options.queries)        # public evaluation points
                levels = data.uniform(0.0, 1.0, size=options.queries)    # public quantile levels
                generator = noise_generator(seed, index, run, os_noise=options.common.os_noise)
                records.append(_one_run(grid, cumulative, at, levels, plan, incidence,
                                        options.smoothing_norm, generator))
                bar.update(1)
            expected_rows = options.poisson_rate * points
            rows.append({
                "epsilon": epsilon, "lambda": options.poisson_rate, "points": points,
                "queries": options.queries, "smoothing_norm": options.smoothing_norm,
                "runs": options.common.runs, "solver_failures": int(sum(r["failures"] for r in records)),
                **summarize_runs(records, METRICS),
                "predicted_mse_ecdf": plan.point_variance / expected_rows**2, "seed": seed,
            })
    finally:
        bar.close()
    return [Output("ecdf_inverse", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def _plot(options: InverseOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    x = np.array([row["epsilon"] for row in rows])
    styles = {"mse_ecdf": ("o", "-"), "mse_smoothed_ecdf": ("^", ":"),
              "mse_inverse": ("s", "-"), "mse_smoothed_inverse": ("D", "-")}
    for metric in METRICS:
        mean = np.array([row[f"{metric}_mean"] for row in rows])
        error = np.nan_to_num(np.array([row[f"{metric}_se"] for row in rows]))
        marker, line = styles[metric]
        label = LABELS[metric] + ("" if "inverse" in metric or metric == "mse_ecdf" else " (extra)")
        if "smoothed" in metric:
            label += f", p = {options.smoothing_norm}"
        axes.errorbar(x, mean, yerr=error, marker=marker, linestyle=line, capsize=3, label=label)
    axes.plot(x, [row["predicted_mse_ecdf"] for row in rows], color="grey", linestyle="--", linewidth=1,
              label="F_hat predicted (Theorem 1, discrete noise)")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("epsilon")
    axes.set_ylabel("mean squared error")
    axes.set_title(f"ECDF and inverse ECDF errors: X_pois({options.poisson_rate:g}) on [0, 1], "
                   f"N = {options.points}, {options.common.runs} runs", fontsize=9)
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    save_figure(figure, path)


def _report(options: InverseOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    table = [[f"{row['epsilon']:g}", *(format_mean(row[f"{m}_mean"], row[f"{m}_se"]) for m in METRICS),
              f"{row['predicted_mse_ecdf']:.3g}"] for row in rows]
    print_rows("Private ECDF and its inverse (Barczewski et al., Fig. 4): mean squared errors, "
               "mean ± s.e. over runs",
               ["epsilon", *(LABELS[m] for m in METRICS), "F_hat predicted"], table,
               notes=[f"data X_pois({options.poisson_rate:g}) rescaled to [0, 1], N = {options.points}, "
                      f"{options.queries} uniform x and p per run, {options.common.runs} runs, "
                      f"smoothing p = {options.smoothing_norm}, inverses by Algorithm 1 (precision 1/N)"])


def _grid(points: int) -> np.ndarray:
    """``tau_i = i / N``, the values of ``X_pois / N``."""
    from dp.ecdf.grid import grid_of_points

    return grid_of_points(1.0 / points, 1.0, points)


async def secure_checks(options: InverseOptions, seed: int) -> list[Any]:
    """``--secure``: run 0 of every epsilon on the MPyC path, beside the simulated path with the same draws.

    The run's data (``X_pois(lambda)`` on ``[0, 1]``, its points ``x`` and levels ``p``, as in
    :func:`run_experiment`) is expanded to its instances ``i / N`` and split over the parties
    (:func:`scenarios.papers.ecdf_smoothing.party_share`); the MPyC path is
    :func:`scenarios.papers.ecdf_smoothing.secure_ecdf_counts` (:func:`dp.ecdf.secure_release.run_secure_ecdf`
    with fixed node draws), the simulated path this experiment's own :func:`_one_run` given the sum of the
    same draws.  Relation ``equal``: the released counts and the four MSEs (ECDF and Algorithm 1's inverse,
    raw and smoothed) must be identical.  Collective; returns the checks at party 0, ``[]`` elsewhere.
    """
    from mpyc.runtime import mpc

    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.tree import noisy_counts
    from scenarios.kit.experiments import SecureCheck
    from scenarios.papers.ecdf_smoothing import secure_ecdf_counts

    points = options.points
    grid = _grid(points)
    incidence = prefix_incidence(points)
    data = data_generator(run_seeds(seed, options.common.runs)[0])
    cumulative = poisson_cumulative_counts(data, options.poisson_rate, points)
    at = data.uniform(0.0, 1.0, size=options.queries)
    levels = data.uniform(0.0, 1.0, size=options.queries)
    checks: list[Any] = []
    if int(cumulative[-1]) == 0:  # no instance: nothing to release (the experiment records nan too)
        return checks
    instances = np.repeat(grid, np.diff(cumulative, prepend=0))
    for index, epsilon in enumerate(options.epsilons):
        result = await secure_ecdf_counts(instances, grid, epsilon, seed, index)
        if result is None:
            continue
        counts, total = result
        simulated = _one_run(grid, cumulative, at, levels, None, incidence, options.smoothing_norm, None,
                             node_noise=total)
        secure = _one_run(grid, cumulative, at, levels, None, incidence, options.smoothing_norm, None,
                          released_counts=counts)
        label = (f"epsilon={epsilon:g} lambda={options.poisson_rate:g} N={points} run 0 "
                 f"(m={len(mpc.parties)} t={mpc.threshold})")
        differing = int(np.count_nonzero(counts != noisy_counts(cumulative, total)))
        checks.append(SecureCheck(f"{label}: released counts differing (of {points})", float(differing), 0.0,
                                  "equal"))
        for metric in METRICS:
            checks.append(SecureCheck(f"{label}: {metric}", secure[metric], simulated[metric], "equal"))
    return checks


SWEEP = Sweep(module="ecdf_inverse", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=100, quick_runs=6, checks=secure_checks)


def parse_options(argv: Sequence[str]) -> InverseOptions:
    """Parse and validate the options (nothing is computed here); :class:`UsageError` with one line."""
    return SWEEP.parse(argv)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party (``--secure``: :func:`secure_checks` first); returns the exit code."""
    return SWEEP.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
