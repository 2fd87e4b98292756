"""Barczewski et al., Fig. 2-3: how much monotone smoothing reduces the error of a private ECDF.

Run: ``python -m scenarios.papers.ecdf_smoothing --vary epsilon|lambda [--quick]`` (``-M3 --secure``: run 0 of
every setting through the secure tree ECDF on real parties with fixed per-party node draws, equal to the
simulation).  Writes ``ecdf_smoothing_<vary>.csv`` and ``.png``.  Findings beside ours: ``docs/papers/barczewski.md``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, SecureCheck, check_positive_number, equal_checks, errorbars,
                                       format_mean, new_figure, party_draws, poisson_cumulative_counts, print_rows,
                                       run_seeds, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, axis, monte_carlo
from secure.public_randomness import public_generator

__all__ = ["main", "parse_options", "SmoothingOptions", "run_experiment", "CSV_COLUMNS", "METRICS",
           "secure_ecdf_checks", "secure_checks"]

DEFAULT_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
DEFAULT_LAMBDAS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0)
QUICK_EPSILONS = (0.1, 1.0, 10.0)
QUICK_LAMBDAS = (0.3, 3.0, 30.0)
DEFAULT_POINTS = 2**15
QUICK_POINTS = 2**8
NORMS = (1, 2)

#: per-run measurements; the CSV has ``<metric>_mean`` and ``<metric>_se`` for each.
METRICS = ("ratio_p1", "ratio_p2", "mse_raw", "mse_p1", "mse_p2", "seconds_p1", "seconds_p2")
CSV_COLUMNS = ("vary", "epsilon", "lambda", "points", "runs", "ratio_runs", "solver_failures",
               *(f"{metric}_{part}" for metric in METRICS for part in ("mean", "se")), "seed")


@dataclass(frozen=True)
class SmoothingOptions:
    vary: str
    epsilons: tuple[float, ...]
    lambdas: tuple[float, ...]
    epsilon: float
    poisson_rate: float
    points: int
    common: CommonOptions

    @property
    def settings(self) -> list[tuple[float, float]]:
        """``(epsilon, lambda)`` of every setting, in sweep order."""
        if self.vary == "epsilon":
            return [(eps, self.poisson_rate) for eps in self.epsilons]
        return [(self.epsilon, rate) for rate in self.lambdas]


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--vary", choices=("epsilon", "lambda"), default="epsilon",
                        help="the swept parameter (default epsilon: Fig. 2; lambda: Fig. 3)")
    parser.add_argument("--epsilon-grid", help="epsilons swept (default 0.05,0.1,0.2,0.5,1,2,5,10)")
    parser.add_argument("--lambda-grid", help="lambdas swept (default 0.1,0.3,1,3,10,30,100,300,1000)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="fixed epsilon when lambda varies (default 1)")
    parser.add_argument("--lambda", dest="poisson_rate", type=float, default=3.0,
                        help="fixed lambda when epsilon varies (default 3)")
    parser.add_argument("--points", type=int, help="grid size N (default 2^15; --quick: 2^8)")


def _resolve(args: Any, common: CommonOptions) -> SmoothingOptions:
    points = args.points if args.points is not None else (QUICK_POINTS if args.quick else DEFAULT_POINTS)
    if not 2 <= points <= 2**20:
        raise UsageError(f"--points must lie in [2, 2^20], got {points}")
    return SmoothingOptions(vary=args.vary, epsilon=check_positive_number(args.epsilon, "--epsilon"),
                            epsilons=axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS,
                                          quick=QUICK_EPSILONS, is_quick=args.quick),
                            lambdas=axis(args.lambda_grid, "--lambda-grid", default=DEFAULT_LAMBDAS,
                                         quick=QUICK_LAMBDAS, is_quick=args.quick),
                            poisson_rate=check_positive_number(args.poisson_rate, "--lambda"),
                            points=points, common=common)


def _one_run(cumulative: np.ndarray, plan: Any, incidence: Any,
             generator: np.random.Generator | None, *, node_noise: np.ndarray | None = None,
             released_counts: np.ndarray | None = None) -> dict[str, float]:
    """Release, smooth with p = 1 and p = 2, and measure one run (``--secure``: given the total ``node_noise``, or
    the MPyC path's ``released_counts``)."""
    from dp.ecdf.tree import noisy_counts
    from smoothing.monotone import SmoothingError, smooth_ecdf

    points = cumulative.shape[0]
    rows = int(cumulative[-1])
    record = {metric: math.nan for metric in METRICS}
    record["failures"] = 0.0
    if rows == 0:  # no instance at all (possible only for tiny lambda * N): no ECDF to release
        return record
    truth = cumulative / rows
    if released_counts is None:
        released_counts = noisy_counts(cumulative, plan.draw_total(generator) if node_noise is None else node_noise)
    released = released_counts / rows
    raw = float(np.sum((released - truth) ** 2))
    record["mse_raw"] = raw / points
    for norm in NORMS:
        try:
            result = smooth_ecdf(released, incidence, norm=norm)
        except SmoothingError:
            record["failures"] += 1
            continue
        error = float(np.sum((result.values - truth) ** 2))
        record[f"mse_p{norm}"] = error / points
        record[f"seconds_p{norm}"] = result.seconds
        record[f"ratio_p{norm}"] = error / raw if raw > 0 else math.nan
    return record


def run_experiment(options: SmoothingOptions, seed: int) -> list[Output]:
    """Run every setting ``options.common.runs`` times; one summary row per setting."""
    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.tree import plan_tree_noise

    incidence = prefix_incidence(options.points)
    seeds = run_seeds(seed, options.common.runs)
    grid = [{"vary": options.vary, "epsilon": epsilon, "lambda": rate, "points": options.points,
             "_plan": plan_tree_noise(epsilon=epsilon, points=options.points)} for epsilon, rate in options.settings]

    def trial(point: Any, run: int, noise: np.random.Generator | None) -> dict[str, float]:
        cumulative = poisson_cumulative_counts(public_generator(seeds[run]), point["lambda"], options.points)
        return _one_run(cumulative, point["_plan"], incidence, noise)

    rows = monte_carlo(grid, trial, metrics=METRICS, common=options.common, seed=seed,
                       name=f"ecdf_smoothing ({options.vary})", tally=tally_failures)
    return [Output(_name(options), CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def tally_failures(records: list[Any], ratio: str | None = "ratio_p2") -> dict[str, int]:
    """``solver_failures`` over the runs' records (and ``ratio_runs``: the runs with a finite ``ratio``)."""
    out = {"solver_failures": int(sum(r["failures"] for r in records))}
    return out | ({"ratio_runs": sum(1 for r in records if math.isfinite(r[ratio]))} if ratio else {})


def _name(options: SmoothingOptions) -> str:
    return f"ecdf_smoothing_{options.vary}"


def _plot(options: SmoothingOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    for norm, marker in zip(NORMS, ("o", "s")):
        errorbars(axes, rows, options.vary, f"ratio_p{norm}", marker=marker, label=f"p = {norm}")
    axes.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    epsilon = options.vary == "epsilon"
    fixed = f"lambda = {options.poisson_rate:g}" if epsilon else f"epsilon = {options.epsilon:g}"
    style_axes(axes, xlabel="epsilon" if epsilon else "lambda (expected instances per value)", legend=10,
               ylabel="||F - F_smoothed||² / ||F - F_hat||²",
               title=f"Effect of smoothing on DP error: X_pois, {fixed}, N = {options.points}, "
                     f"{options.common.runs} runs")
    save_figure(figure, path)


def _report(options: SmoothingOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    key = options.vary
    fixed = (f"lambda = {options.poisson_rate:g}" if key == "epsilon" else f"epsilon = {options.epsilon:g}")
    means = ("ratio_p1", "ratio_p2", "mse_raw")
    table = [[f"{row[key]:g}", *(format_mean(row[f"{m}_mean"], row[f"{m}_se"]) for m in means),
              f"{row['seconds_p1_mean']:.3f}", f"{row['seconds_p2_mean']:.3f}",
              f"{row['ratio_runs']}/{row['runs']}"] for row in rows]
    print_rows("Smoothing a private ECDF (Barczewski et al., Fig. 2/3): error ratio "
               "||F - F_smoothed||² / ||F - F_hat||², mean ± s.e. over runs",
               [key, "ratio p=1", "ratio p=2", "MSE of F_hat", "s p=1", "s p=2", "runs"], table,
               notes=[f"data X_pois(lambda) (Sec. 6.2), {fixed}, N = {options.points} grid points, "
                      f"B = all points, {options.common.runs} runs per setting",
                      "s p=1, s p=2: mean seconds per smoothing call (build + solve)"])


async def secure_ecdf_checks(settings: Sequence[tuple[float, float, np.ndarray]], grid: np.ndarray, seed: int,
                             measure: Callable[..., Mapping[str, float]], metrics: Sequence[str]) -> list[SecureCheck]:
    """Per ``(epsilon, lambda, cumulative)`` setting with instances, one secure tree-ECDF release on ``grid`` with
    fixed per-party draws beside the simulated path given their sum (``docs/papers/barczewski.md``): the released
    counts and ``measure(cumulative, released_counts=...)`` against ``measure(cumulative, node_noise=...)`` on
    ``metrics``.  Collective; the checks at party 0, ``[]`` elsewhere."""
    from mpyc.runtime import mpc

    from dp.ecdf.secure_release import run_secure_ecdf
    from dp.ecdf.tree import noisy_counts, plan_tree_noise

    parties, threshold, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    checks: list[SecureCheck] = []
    for setting, (epsilon, rate, cumulative) in enumerate(settings):
        if int(cumulative[-1]) == 0:  # no instance: nothing to release (the experiment records nan too)
            continue
        plan = plan_tree_noise(epsilon=epsilon, points=len(grid), parties=parties, threshold=threshold)
        every = party_draws(seed, setting, parties, plan.draw_party)
        instances = np.repeat(grid, np.diff(cumulative, prepend=0))
        release = await run_secure_ecdf(instances[pid::parties], grid, plan,
                                        noise_source=lambda _: every[pid], receivers=[0])
        if release is None:
            continue
        counts = np.asarray(release.counts, dtype=np.int64)
        total = np.asarray(np.sum(every, axis=0), dtype=np.int64)
        label = f"epsilon={epsilon:g} lambda={rate:g} N={len(grid)} run 0 (m={parties} t={threshold})"
        checks += [counts_check(label, counts, noisy_counts(cumulative, total)),
                   *equal_checks(label, measure(cumulative, released_counts=counts),
                                 measure(cumulative, node_noise=total), metrics)]
    return checks


def counts_check(label: str, secure: Any, simulated: Any, what: str = "released counts") -> SecureCheck:
    """The ``equal`` check of a released array: how many of its entries differ from the simulated path's."""
    return SecureCheck(f"{label}: {what} differing (of {np.asarray(simulated).size})",
                       float(np.count_nonzero(np.asarray(secure) != np.asarray(simulated))), 0.0)


async def secure_checks(options: SmoothingOptions, seed: int) -> list[Any]:
    """``--secure``: run 0 of every setting (instances ``1..N``) through :func:`secure_ecdf_checks` beside
    :func:`_one_run` (``docs/papers/barczewski.md``).  Collective; the checks at party 0, ``[]`` elsewhere."""
    from dp.ecdf.grid import prefix_incidence

    incidence = prefix_incidence(options.points)
    data_seed = run_seeds(seed, options.common.runs)[0]
    settings = [(epsilon, rate, poisson_cumulative_counts(public_generator(data_seed), rate, options.points))
                for epsilon, rate in options.settings]
    return await secure_ecdf_checks(settings, np.arange(1, options.points + 1, dtype=float), seed,
                                    lambda cumulative, **noise: _one_run(cumulative, None, incidence, None, **noise),
                                    ("mse_raw", "mse_p1", "mse_p2", "ratio_p1", "ratio_p2"))


SWEEP = Sweep(module="ecdf_smoothing", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=20, quick_runs=4, checks=secure_checks,
              check_name=_name)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
