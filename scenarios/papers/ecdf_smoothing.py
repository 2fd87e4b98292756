"""Experiment: how much monotone smoothing reduces the error of a private ECDF (paper Figs. 2 and 3).

Run: ``python -m scenarios.papers.ecdf_smoothing --vary epsilon`` (Fig. 2) or ``--vary lambda`` (Fig. 3);
add ``--quick`` for a tiny run.  Writes ``results/ecdf_smoothing_<vary>.csv`` and ``.png``.

The paper, the data, the method, the threat model and the paper's findings beside ours:
``docs/papers/barczewski.md``.

Options (lower case; MPyC's options such as -M work as usual; the common ones: scenarios.kit.sweep):
  --vary {epsilon,lambda}   the swept parameter (default epsilon)
  --epsilon-grid E1,E2,...  epsilons swept (default 0.05,0.1,0.2,0.5,1,2,5,10)
  --lambda-grid L1,L2,...   lambdas swept (default 0.1,0.3,1,3,10,30,100,300,1000)
  --epsilon E               fixed epsilon when lambda varies (default 1)
  --lambda L                fixed lambda when epsilon varies (default 3)
  --points N                grid size N (default 2^15; --quick: 2^8)
  --secure                  also run one repetition (run 0) of every setting on the MPyC path: with -M3
                            real parties, rows i, i+m, ... of the instances at party i, the secure tree
                            ECDF (dp.ecdf.secure_release.run_secure_ecdf) with fixed per-party node
                            draws fed to both paths; the released counts and the run's measurements
                            must be equal (ecdf_smoothing_<vary>_secure.csv; a disagreement exits 1)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_noise_generator, check_positive_number, data_generator,
                                       format_mean, new_figure, noise_generator, poisson_cumulative_counts, print_rows,
                                       progress, run_seeds, save_figure, summarize_runs)
from scenarios.kit.sweep import Output, Sweep, axis

__all__ = ["main", "parse_options", "SmoothingOptions", "run_experiment", "CSV_COLUMNS", "METRICS",
           "check_noise_generator", "party_share", "secure_ecdf_counts", "secure_checks"]

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
    """Parsed options of the smoothing experiment."""

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
    parser.add_argument("--vary", choices=("epsilon", "lambda"), default="epsilon")
    parser.add_argument("--epsilon-grid", default=None)
    parser.add_argument("--lambda-grid", default=None)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--lambda", dest="poisson_rate", type=float, default=3.0)
    parser.add_argument("--points", type=int, default=None)


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
    """Release, smooth with p = 1 and p = 2, and measure one run.

    :param node_noise: the total node noise to use instead of ``plan.draw_total(generator)`` (``--secure``:
        the sum of the parties' fixed draws).
    :param released_counts: the noisy counts released by the MPyC path, measured instead of a simulated release.
    """
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
    settings = options.settings
    rows: list[dict[str, Any]] = []
    bar = progress(len(settings) * options.common.runs, f"ecdf_smoothing ({options.vary})")
    try:
        for index, (epsilon, rate) in enumerate(settings):
            bar.set_postfix_str(f"epsilon={epsilon:g} lambda={rate:g}")
            plan = plan_tree_noise(epsilon=epsilon, points=options.points)
            records = []
            for run in range(options.common.runs):
                cumulative = poisson_cumulative_counts(data_generator(seeds[run]), rate, options.points)
                generator = noise_generator(seed, index, run, os_noise=options.common.os_noise)
                records.append(_one_run(cumulative, plan, incidence, generator))
                bar.update(1)
            summary = summarize_runs(records, METRICS)
            rows.append({
                "vary": options.vary, "epsilon": epsilon, "lambda": rate, "points": options.points,
                "runs": options.common.runs,
                "ratio_runs": sum(1 for r in records if math.isfinite(r["ratio_p2"])),
                "solver_failures": int(sum(r["failures"] for r in records)),
                **summary, "seed": seed,
            })
    finally:
        bar.close()
    return [Output(_name(options), CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def _name(options: SmoothingOptions) -> str:
    return f"ecdf_smoothing_{options.vary}"


def _plot(options: SmoothingOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    key = options.vary
    x = np.array([row[key] for row in rows])
    for norm, marker in zip(NORMS, ("o", "s")):
        mean = np.array([row[f"ratio_p{norm}_mean"] for row in rows])
        error = np.nan_to_num(np.array([row[f"ratio_p{norm}_se"] for row in rows]))
        axes.errorbar(x, mean, yerr=error, marker=marker, capsize=3, label=f"p = {norm}")
    axes.axhline(1.0, color="grey", linestyle="--", linewidth=1)
    axes.set_xscale("log")
    axes.set_yscale("log")
    if key == "epsilon":
        axes.set_xlabel("epsilon")
        fixed = f"lambda = {options.poisson_rate:g}"
    else:
        axes.set_xlabel("lambda (expected instances per value)")
        fixed = f"epsilon = {options.epsilon:g}"
    axes.set_ylabel("||F - F_smoothed||² / ||F - F_hat||²")
    axes.set_title(f"Effect of smoothing on DP error: X_pois, {fixed}, "
                   f"N = {options.points}, {options.common.runs} runs", fontsize=9)
    axes.legend()
    axes.grid(True, which="both", alpha=0.3)
    save_figure(figure, path)


def _report(options: SmoothingOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    key = options.vary
    fixed = (f"lambda = {options.poisson_rate:g}" if key == "epsilon" else f"epsilon = {options.epsilon:g}")
    table = [[f"{row[key]:g}",
              format_mean(row["ratio_p1_mean"], row["ratio_p1_se"]),
              format_mean(row["ratio_p2_mean"], row["ratio_p2_se"]),
              format_mean(row["mse_raw_mean"], row["mse_raw_se"]),
              f"{row['seconds_p1_mean']:.3f}", f"{row['seconds_p2_mean']:.3f}",
              f"{row['ratio_runs']}/{row['runs']}"] for row in rows]
    print_rows("Smoothing a private ECDF (Barczewski et al., Fig. 2/3): error ratio "
               "||F - F_smoothed||² / ||F - F_hat||², mean ± s.e. over runs",
               [key, "ratio p=1", "ratio p=2", "MSE of F_hat", "s p=1", "s p=2", "runs"], table,
               notes=[f"data X_pois(lambda) (Sec. 6.2), {fixed}, N = {options.points} grid points, "
                      f"B = all points, {options.common.runs} runs per setting",
                      "s p=1, s p=2: mean seconds per smoothing call (build + solve)"])


# --------------------------------------------------------------------------------------------------
# --secure: one repetition on the MPyC path beside the simulated path (also used by ecdf_inverse,
# roc_curve and hosmer_lemeshow)


def party_share(values: np.ndarray, party: int, parties: int) -> np.ndarray:
    """The rows ``party, party + m, ...`` of ``values``: what party ``party`` holds in a ``--secure`` check."""
    return np.asarray(values)[party::parties]


async def secure_ecdf_counts(instances: np.ndarray, grid: np.ndarray, epsilon: float, seed: int,
                             setting: int) -> tuple[np.ndarray, np.ndarray] | None:
    """One secure tree-mechanism release of ``instances`` with fixed per-party node draws (collective).

    Every party holds :func:`party_share` of the (public) instances and runs
    :func:`dp.ecdf.secure_release.run_secure_ecdf` with the plan of the real runtime (``m`` parties,
    threshold ``t``) and its node draws from :func:`check_noise_generator` (the function's ``noise_source``
    hook); the counts are opened to party 0 only.

    :return: at party 0 ``(released counts, total node noise)`` -- the sum of every party's draws, which the
        simulated path gets -- and ``None`` elsewhere.
    """
    from mpyc.runtime import mpc

    from dp.ecdf.secure_release import run_secure_ecdf
    from dp.ecdf.tree import plan_tree_noise

    parties, threshold, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    plan = plan_tree_noise(epsilon=epsilon, points=len(grid), parties=parties, threshold=threshold)
    own = plan.draw_party(check_noise_generator(seed, setting, pid))
    release = await run_secure_ecdf(party_share(instances, pid, parties), grid, plan,
                                    noise_source=lambda _: own, receivers=[0])
    if release is None:
        return None
    total = np.zeros(plan.node_count, dtype=np.int64)
    for party in range(parties):
        total += plan.draw_party(check_noise_generator(seed, setting, party))
    return np.asarray(release.counts, dtype=np.int64), total



async def secure_checks(options: SmoothingOptions, seed: int) -> list[Any]:
    """``--secure``: run 0 of every setting on the MPyC path, beside the simulated path with the same draws.

    The run's data (``X_pois(lambda)`` from the run's data seed, as in :func:`run_experiment`) is expanded to
    its instances ``i`` (grid ``1..N``) and split over the parties (:func:`party_share`); the MPyC path is
    :func:`secure_ecdf_counts`, the simulated path this experiment's own :func:`_one_run` given the sum of
    the same draws.  Relation ``equal``: the released counts at every grid point, the MSE of ``F^`` and the
    smoothed errors and ratios (p = 1, 2; same input, same solver) must be identical.  A setting without
    any instance is skipped (nothing to release).  Collective; returns the checks at party 0, ``[]`` elsewhere.
    """
    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.tree import noisy_counts
    from scenarios.kit.experiments import SecureCheck

    from mpyc.runtime import mpc

    grid = np.arange(1, options.points + 1, dtype=float)
    incidence = prefix_incidence(options.points)
    data_seed = run_seeds(seed, options.common.runs)[0]
    checks: list[Any] = []
    for index, (epsilon, rate) in enumerate(options.settings):
        cumulative = poisson_cumulative_counts(data_generator(data_seed), rate, options.points)
        if int(cumulative[-1]) == 0:
            continue
        instances = np.repeat(grid, np.diff(cumulative, prepend=0))
        result = await secure_ecdf_counts(instances, grid, epsilon, seed, index)
        if result is None:
            continue
        counts, total = result
        simulated = _one_run(cumulative, None, incidence, None, node_noise=total)
        secure = _one_run(cumulative, None, incidence, None, released_counts=counts)
        label = f"epsilon={epsilon:g} lambda={rate:g} N={options.points} run 0 (m={len(mpc.parties)} t={mpc.threshold})"
        differing = int(np.count_nonzero(counts != noisy_counts(cumulative, total)))
        checks.append(SecureCheck(f"{label}: released counts differing (of {options.points})", float(differing),
                                  0.0, "equal"))
        for metric in ("mse_raw", "mse_p1", "mse_p2", "ratio_p1", "ratio_p2"):
            checks.append(SecureCheck(f"{label}: {metric}", secure[metric], simulated[metric], "equal"))
    return checks


SWEEP = Sweep(module="ecdf_smoothing", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=20, quick_runs=4, checks=secure_checks,
              check_name=_name)


def parse_options(argv: Sequence[str]) -> SmoothingOptions:
    """Parse and validate the options (nothing is computed here); :class:`UsageError` with one line."""
    return SWEEP.parse(argv)  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party (``--secure``: :func:`secure_checks` first); returns the exit code."""
    return SWEEP.main(argv)


if __name__ == "__main__":
    raise SystemExit(main())
