"""Barczewski et al., Fig. 4: errors of a private ECDF and of its inverse, raw and smoothed.

Run: ``python -m scenarios.papers.ecdf_inverse [--quick]`` (``-M3 --secure``: run 0 of every epsilon through the
secure tree ECDF on real parties with fixed per-party node draws, equal to the simulation).  Writes
``ecdf_inverse.csv`` and ``.png``.  Findings beside ours: ``docs/papers/barczewski.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, errorbars, format_mean, new_figure,
                                       poisson_cumulative_counts, print_rows, run_seeds, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, axis, monte_carlo
from scenarios.papers.ecdf_smoothing import secure_ecdf_checks, tally_failures
from secure.public_randomness import public_generator

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
LABELS = dict(zip(METRICS, ("F_hat(x)", "F_smoothed(x)", "F_hat^-1(p)", "F_smoothed^-1(p)")))


@dataclass(frozen=True)
class InverseOptions:
    epsilons: tuple[float, ...]
    poisson_rate: float
    points: int
    queries: int
    smoothing_norm: int
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--epsilon-grid", help="epsilons swept (default 0.05,0.1,0.2,0.5,1,2,5,10)")
    parser.add_argument("--lambda", dest="poisson_rate", type=float, default=3.0,
                        help="Poisson rate of X_pois (default 3)")
    parser.add_argument("--points", type=int, help="grid size N (default 2^15; --quick: 2^8)")
    parser.add_argument("--queries", type=int, help="random points x and levels p per run (default 200; --quick: 50)")
    parser.add_argument("--smoothing-norm", type=int, choices=(1, 2), default=2,
                        help="p of eq. (3) for the smoothed curve (default 2)")


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
    """Release, smooth, evaluate and invert for one run (``--secure``: given the total ``node_noise``, or the MPyC
    path's ``released_counts``)."""
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
    from dp.ecdf.grid import grid_of_points, prefix_incidence
    from dp.ecdf.tree import plan_tree_noise

    grid = grid_of_points(1.0 / options.points, 1.0, options.points)  # tau_i = i / N, the values of X_pois / N
    incidence = prefix_incidence(options.points)
    seeds = run_seeds(seed, options.common.runs)
    expected_rows = options.poisson_rate * options.points
    settings = []
    for epsilon in options.epsilons:
        plan = plan_tree_noise(epsilon=epsilon, points=options.points)
        settings.append({"epsilon": epsilon, "lambda": options.poisson_rate, "points": options.points,
                         "queries": options.queries, "smoothing_norm": options.smoothing_norm, "_plan": plan,
                         "predicted_mse_ecdf": plan.point_variance / expected_rows**2})

    def trial(point: Any, run: int, noise: np.random.Generator | None) -> dict[str, float]:
        return _one_run(grid, *_run_data(options, seeds[run]), point["_plan"], incidence, options.smoothing_norm,
                        noise)

    rows = monte_carlo(settings, trial, metrics=METRICS, common=options.common, seed=seed, name="ecdf_inverse",
                       tally=lambda records: tally_failures(records, None))
    return [Output("ecdf_inverse", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def _run_data(options: InverseOptions, run_seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run's public data: ``X_pois(lambda)``'s cumulative counts, the evaluation points ``x``, the levels ``p``."""
    data = public_generator(run_seed)
    cumulative = poisson_cumulative_counts(data, options.poisson_rate, options.points)
    return cumulative, data.uniform(0.0, 1.0, size=options.queries), data.uniform(0.0, 1.0, size=options.queries)


def _plot(options: InverseOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    styles = {"mse_ecdf": ("o", "-"), "mse_smoothed_ecdf": ("^", ":"),
              "mse_inverse": ("s", "-"), "mse_smoothed_inverse": ("D", "-")}
    for metric in METRICS:
        label = LABELS[metric] + ("" if "inverse" in metric or metric == "mse_ecdf" else " (extra)")
        label += f", p = {options.smoothing_norm}" if "smoothed" in metric else ""
        errorbars(axes, rows, "epsilon", metric, marker=styles[metric][0], linestyle=styles[metric][1], label=label)
    axes.plot([row["epsilon"] for row in rows], [row["predicted_mse_ecdf"] for row in rows], color="grey",
              linestyle="--", linewidth=1, label="F_hat predicted (Theorem 1, discrete noise)")
    style_axes(axes, xlabel="epsilon", ylabel="mean squared error",
               title=f"ECDF and inverse ECDF errors: X_pois({options.poisson_rate:g}) on [0, 1], "
                     f"N = {options.points}, {options.common.runs} runs")
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


async def secure_checks(options: InverseOptions, seed: int) -> list[Any]:
    """``--secure``: run 0 of every epsilon (instances ``i / N``) through
    :func:`scenarios.papers.ecdf_smoothing.secure_ecdf_checks` beside :func:`_one_run`
    (``docs/papers/barczewski.md``).  Collective; the checks at party 0, ``[]`` elsewhere."""
    from dp.ecdf.grid import grid_of_points, prefix_incidence

    points = options.points
    grid = grid_of_points(1.0 / points, 1.0, points)  # as run_experiment's
    incidence = prefix_incidence(points)
    cumulative, at, levels = _run_data(options, run_seeds(seed, options.common.runs)[0])
    return await secure_ecdf_checks(
        [(epsilon, options.poisson_rate, cumulative) for epsilon in options.epsilons], grid, seed,
        lambda cumulative, **noise: _one_run(grid, cumulative, at, levels, None, incidence, options.smoothing_norm,
                                             None, **noise), METRICS)


SWEEP = Sweep(module="ecdf_inverse", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=100, quick_runs=6, checks=secure_checks)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
