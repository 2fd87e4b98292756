"""Barczewski et al., Figs. 1, 5, 8, 9: a private ROC curve from two private ECDFs, smoothed.

Run: ``python -m scenarios.papers.roc_curve [--quick]`` (``-M3 --secure``: every epsilon once through the two
secure class ECDFs on real parties with fixed per-party node draws, equal to the simulation).  Writes
``roc_curve_l1.csv``, ``roc_curve_l1.png`` (Fig. 5), ``roc_curve_example.png`` (Fig. 1) and
``roc_curve_auc_error.png``.  Findings beside ours: ``docs/papers/barczewski.md``."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, equal_checks, errorbars, format_mean,
                                       new_figure, noise_generator, party_draws, print_rows, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, axis, framingham_scores, monte_carlo
from scenarios.papers.ecdf_smoothing import counts_check, tally_failures

__all__ = ["main", "parse_options", "RocOptions", "ScoredData", "load_scores", "roc_l1_distance", "tpr_at",
           "secure_checks", "CSV_COLUMNS", "METRICS"]

DEFAULT_EPSILONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
QUICK_EPSILONS = (0.1, 1.0, 10.0)
DEFAULT_POINTS = 256
QUICK_POINTS = 64
NORMS = (1, 2)
FPR_RESOLUTION = 20_000

#: per-run measurements; the CSV has ``<metric>_mean`` and ``<metric>_se`` for each.
METRICS = ("l1_p1", "l1_p2", "auc_p1", "auc_p2", "l1_self_p2", "auc_self_p2", "auc_err_p2", "auc_err_self_p2")
CSV_COLUMNS = ("epsilon", "points", "rows", "positives", "runs", "solver_failures",
               *(f"{metric}_{part}" for metric in METRICS for part in ("mean", "se")),
               "true_auc", "exact_auc", "seed")


@dataclass(frozen=True)
class RocOptions:
    epsilons: tuple[float, ...]
    plot_epsilon: float
    points: int
    common: CommonOptions


@dataclass(frozen=True)
class ScoredData:
    """Scores and labels of the evaluation rows; ``positives``, ``negatives``: the scores of the rows labelled 1, 0."""

    scores: np.ndarray
    labels: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--epsilon-grid", help="total epsilons swept (default 0.01,0.02,0.05,0.1,0.2,0.5,1,2,5,10)")
    parser.add_argument("--plot-epsilon", type=float, default=0.5,
                        help="epsilon of the example curves (default 0.5, as the paper's Fig. 1)")
    parser.add_argument("--points", type=int, help="thresholds on [0, 1] (default 256; --quick: 64)")


def _resolve(args: Any, common: CommonOptions) -> RocOptions:
    epsilons = axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS, quick=QUICK_EPSILONS,
                    is_quick=args.quick)
    points = args.points if args.points is not None else (QUICK_POINTS if args.quick else DEFAULT_POINTS)
    if not 2 <= points <= 2**20:
        raise UsageError(f"--points must lie in [2, 2^20], got {points}")
    return RocOptions(epsilons=epsilons, plot_epsilon=check_positive_number(args.plot_epsilon, "--plot-epsilon"),
                      points=points, common=common)


def load_scores(seed: int) -> ScoredData:
    """Logistic-regression scores (clipped to ``[0, 1]``) and labels of Framingham (:func:`framingham_scores`)."""
    scores, labels = framingham_scores(seed)
    clipped = np.clip(scores, 0.0, 1.0)
    return ScoredData(clipped, labels, clipped[labels == 1], clipped[labels == 0])


def tpr_at(curve: Any, false_positive_rate: np.ndarray) -> np.ndarray:
    """The TPR of a ROC polyline (a :class:`smoothing.roc.RocCurve`: FPRs sorted, from 0 to 1) at the given FPRs:
    between consecutive distinct FPRs ``u < v``, the segment from the highest point at ``u`` to the lowest at ``v``
    (a vertical segment itself has measure zero for the L1 distance)."""
    x = np.asarray(curve.false_positive_rate, dtype=float)
    y = np.asarray(curve.true_positive_rate, dtype=float)
    unique, first = np.unique(x, return_index=True)
    last = np.append(first[1:] - 1, x.size - 1)
    top, bottom = y[last], y[first]  # highest / lowest TPR at each distinct FPR
    query = np.asarray(false_positive_rate, dtype=float)
    segment = np.clip(np.searchsorted(unique, query, side="right") - 1, 0, unique.size - 2)
    start, stop = unique[segment], unique[segment + 1]
    fraction = np.clip((query - start) / (stop - start), 0.0, 1.0)
    return top[segment] + fraction * (bottom[segment + 1] - top[segment])


def roc_l1_distance(reference: Any, other: Any, *, resolution: int = FPR_RESOLUTION) -> float:
    """Area between two ROC curves, ``int_0^1 |TPR_ref(f) - TPR_other(f)| df`` (the paper's Fig. 5 error), by the
    midpoint rule on ``resolution`` cells with both polylines interpolated (:func:`tpr_at`)."""
    midpoints = (np.arange(resolution) + 0.5) / resolution
    return float(np.mean(np.abs(tpr_at(reference, midpoints) - tpr_at(other, midpoints))))


def _release_pair(data: ScoredData, grid: np.ndarray, plan: Any, generator: np.random.Generator | None, *,
                  node_noise: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The private ECDFs of the positives and of the negatives, each with ``plan`` (epsilon / 2); ``node_noise``:
    ``(positives', negatives')`` total node noise instead of drawing it (``--secure``)."""
    from dp.ecdf.tree import private_ecdf

    noise = (None, None) if node_noise is None else node_noise
    return (private_ecdf(data.positives, grid, plan, node_noise=noise[0], rng=generator),
            private_ecdf(data.negatives, grid, plan, node_noise=noise[1], rng=generator))


def _smoothed_roc(positive: np.ndarray, negative: np.ndarray, incidence: Any, grid: np.ndarray,
                  norm: int) -> Any:
    from smoothing.monotone import smooth_ecdf
    from smoothing.roc import roc_from_ecdfs

    return roc_from_ecdfs(*(smooth_ecdf(ecdf, incidence, norm=norm).values for ecdf in (positive, negative)),
                          thresholds=grid)


def _thresholds(points: int, data: ScoredData) -> tuple[np.ndarray, Any, Any]:
    """The grid of ``points`` thresholds on ``[0, 1]``, its prefix incidence and the true ROC curve on it."""
    from dp.ecdf.grid import grid_of_points, prefix_incidence, true_counts
    from smoothing.roc import roc_from_ecdfs

    grid = grid_of_points(0.0, 1.0, points)
    truth = roc_from_ecdfs(*(true_counts(scores, grid) / scores.size for scores in (data.positives, data.negatives)),
                           thresholds=grid)
    return grid, prefix_incidence(points), truth


def _measure(data: ScoredData, positive: np.ndarray, negative: np.ndarray, incidence: Any, grid: np.ndarray,
             truth: Any) -> dict[str, float]:
    """One run's measurements (:data:`METRICS`) of the released class ECDFs, and its solver ``failures``."""
    from dp.ecdf.roc import self_normalise
    from smoothing.monotone import SmoothingError

    failures = 0
    record: dict[str, float] = {metric: float("nan") for metric in METRICS}
    for norm in NORMS:
        try:
            curve = _smoothed_roc(positive, negative, incidence, grid, norm)
        except SmoothingError:
            failures += 1
            continue
        record[f"l1_p{norm}"] = roc_l1_distance(truth, curve)
        record[f"auc_p{norm}"] = curve.auc
    record["auc_err_p2"] = abs(record["auc_p2"] - truth.auc)
    try:  # the same noisy counts, each class over its own noisy total (labels private)
        own_positive, own_negative = (self_normalise(np.rint(ecdf * size).astype(np.int64))[0] for ecdf, size in
                                      ((positive, data.positives.size), (negative, data.negatives.size)))
        curve = _smoothed_roc(own_positive, own_negative, incidence, grid, 2)
        record["l1_self_p2"] = roc_l1_distance(truth, curve)
        record["auc_self_p2"] = curve.auc
        record["auc_err_self_p2"] = abs(curve.auc - truth.auc)
    except SmoothingError:
        failures += 1
    return record | {"failures": failures}


async def secure_checks(options: RocOptions, seed: int) -> list[Any]:
    """``--secure``: every epsilon once through :func:`dp.ecdf.roc.run_secure_roc` beside :func:`_release_pair`
    given the sums of the same draws (``docs/papers/barczewski.md``).  Collective; the checks at party 0."""
    from mpyc.runtime import mpc

    from dp.ecdf.grid import true_counts
    from dp.ecdf.roc import plan_roc_noise, run_secure_roc
    from dp.ecdf.tree import noisy_counts, plan_tree_noise

    parties, threshold, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    data = load_scores(seed)
    grid, incidence, truth = _thresholds(options.points, data)
    checks: list[Any] = []
    for index, epsilon in enumerate(options.epsilons):
        plan = plan_roc_noise(epsilon=epsilon, points=options.points, split="half", parties=parties,
                              threshold=threshold)
        every = party_draws(seed, index, parties, lambda g: {1: plan.draw_party(g), 0: plan.draw_party(g)})  # 1 first
        release = await run_secure_roc(data.scores[pid::parties], data.labels[pid::parties], grid, epsilon=epsilon,
                                       split="half", noise_source=lambda _, label: every[pid][label], receivers=[0])
        if release is None:
            continue
        totals = (np.sum([d[1] for d in every], axis=0), np.sum([d[0] for d in every], axis=0))
        simulated_plan = plan_tree_noise(epsilon=epsilon / 2, points=options.points)  # as _run's
        simulated = _measure(data, *_release_pair(data, grid, simulated_plan, None, node_noise=totals), incidence,
                             grid, truth)
        secure = _measure(data, release.positive_counts / data.positives.size,
                             release.negative_counts / data.negatives.size, incidence, grid, truth)
        label = f"epsilon={epsilon:g} N={options.points} (m={parties} t={threshold})"
        for name, counts, values, total in (("positives", release.positive_counts, data.positives, totals[0]),
                                            ("negatives", release.negative_counts, data.negatives, totals[1])):
            checks.append(counts_check(f"{label}: {name}'", counts, noisy_counts(true_counts(values, grid), total)))
        checks += equal_checks(label, secure, simulated, ("l1_p1", "l1_p2", "auc_p1", "auc_p2", "l1_self_p2",
                                                          "auc_self_p2"))
    return checks


#: the two error figures: (y label, title, curves (metric, marker, label))
_ERROR_FIGURES = {
    "l1": ("L1 distance to the true ROC curve (area between curves)",
           "ROC curve estimation error: Framingham logistic regression",
           (("l1_p1", "o", "smoothed, p = 1"), ("l1_p2", "s", "smoothed, p = 2"),
            ("l1_self_p2", "^", "self-normalised (labels private), p = 2"))),
    "auc": ("|AUC - true AUC| of the smoothed curve", "ROC AUC error, public vs private class sizes: Framingham",
            (("auc_err_p2", "s", "class sizes public (divided by n_c), p = 2"),
             ("auc_err_self_p2", "^", "class sizes private (self-normalised), p = 2")))}


def _plot_errors(options: RocOptions, rows: list[dict[str, Any]], data: ScoredData, path: str,
                 which: str = "l1") -> None:
    """The L1 distances (``which = "l1"``) or the AUC errors of both variants (same draws) against epsilon."""
    ylabel, title, curves = _ERROR_FIGURES[which]
    figure, axes = new_figure()
    for metric, marker, label in curves:
        errorbars(axes, rows, "epsilon", metric, marker=marker, label=label)
    style_axes(axes, xlabel="epsilon (total, epsilon/2 per class ECDF)", ylabel=ylabel, legend=10,
               title=f"{title}, n = {data.scores.size}, N = {options.points}, {options.common.runs} runs")
    save_figure(figure, path)


def _plot_example(options: RocOptions, seed: int, data: ScoredData, path: str) -> dict[str, float]:
    """Draw the true, raw private and smoothed ROC curves of one release; return their L1 errors."""
    from dp.ecdf.tree import plan_tree_noise

    grid, incidence, truth = _thresholds(options.points, data)
    plan = plan_tree_noise(epsilon=options.plot_epsilon / 2, points=options.points)
    generator = noise_generator(seed, len(options.epsilons), 0, os_noise=options.common.os_noise)
    positive, negative = _release_pair(data, grid, plan, generator)
    figure, axes = new_figure(5.6, 5.6)
    axes.plot([0, 1], [0, 1], color="lightgrey", linewidth=1)
    axes.plot(truth.false_positive_rate, truth.true_positive_rate, color="black", linewidth=2,
              label=f"true (AUC {truth.auc:.3f})")
    # the raw release in threshold order (high threshold first), with its folds and excursions
    axes.plot(np.r_[0.0, (1.0 - negative)[::-1], 1.0], np.r_[0.0, (1.0 - positive)[::-1], 1.0],
              color="tab:red", linewidth=0.8, alpha=0.7, label="private, not smoothed")
    errors = {}
    for norm, colour in zip(NORMS, ("tab:blue", "tab:green")):
        curve = _smoothed_roc(positive, negative, incidence, grid, norm)
        errors[f"p{norm}"] = roc_l1_distance(truth, curve)
        axes.plot(curve.false_positive_rate, curve.true_positive_rate, color=colour, linewidth=1.5,
                  label=f"smoothed p = {norm} (AUC {curve.auc:.3f}, L1 {errors[f'p{norm}']:.3f})")
    axes.set(xlim=(-0.05, 1.05), ylim=(-0.05, 1.05), aspect="equal", xlabel="false positive rate",
             ylabel="true positive rate")
    axes.set_title(f"ROC curve, logistic regression on Framingham, epsilon = {options.plot_epsilon:g}", fontsize=9)
    axes.legend(loc="lower right", fontsize=8)
    save_figure(figure, path)
    return errors


def _run(options: RocOptions, seed: int) -> list[Output]:
    """Every epsilon ``options.common.runs`` times: the L1 table (a summary row per epsilon) and its figure, the AUC
    errors' figure, and the example release (its plot writes its L1 errors into its one row)."""
    from sklearn.metrics import roc_auc_score

    from dp.ecdf.tree import plan_tree_noise

    data = load_scores(seed)
    grid, incidence, truth = _thresholds(options.points, data)
    fixed = {"points": options.points, "rows": int(data.scores.size), "positives": int(data.positives.size),
             "true_auc": truth.auc, "exact_auc": float(roc_auc_score(data.labels, data.scores))}
    settings = [{"epsilon": epsilon, **fixed, "_plan": plan_tree_noise(epsilon=epsilon / 2, points=options.points)}
                for epsilon in options.epsilons]

    def trial(point: Any, _: int, noise: np.random.Generator | None) -> dict[str, float]:
        return _measure(data, *_release_pair(data, grid, point["_plan"], noise), incidence, grid, truth)

    rows = monte_carlo(settings, trial, metrics=METRICS, common=options.common, seed=seed, name="roc_curve",
                       tally=lambda records: tally_failures(records, None))
    example: list[dict[str, Any]] = [{}]
    return [Output("roc_curve_l1", CSV_COLUMNS, rows, lambda rows, path: _plot_errors(options, rows, data, path)),
            Output("roc_curve_example", (), example,
                   lambda rows, path: rows[0].update(_plot_example(options, seed, data, path))),
            Output("roc_curve_auc_error", (), rows, lambda rows, path: _plot_errors(options, rows, data, path, "auc"))]


def _report(options: RocOptions, outputs: Sequence[Output]) -> None:
    rows, example = outputs[0].rows, outputs[1].rows[0]
    table = [[f"{row['epsilon']:g}", *(format_mean(row[f"{m}_mean"], row[f"{m}_se"]) for m in METRICS)]
             for row in rows]
    first = rows[0]
    print_rows("Private ROC curve from two smoothed private ECDFs (Barczewski et al., Fig. 5): "
               "mean ± s.e. over runs",
               ["epsilon", "L1 p=1", "L1 p=2", "AUC p=1", "AUC p=2", "L1 self p=2", "AUC self p=2",
                "|dAUC| p=2", "|dAUC| self p=2"], table,
               notes=[f"Framingham logistic-regression scores, n = {first['rows']} rows "
                      f"({first['positives']} positive), N = {options.points} thresholds on [0, 1], "
                      f"epsilon/2 per class ECDF; 'self': class sizes private, "
                      f"each class over its own noisy total (same noise)",
                      f"true AUC {first['true_auc']:.4f} on the grid ({first['exact_auc']:.4f} exact)"])
    print(f"  example at epsilon = {options.plot_epsilon:g}: L1 {example['p1']:.4f} (p = 1), "
          f"{example['p2']:.4f} (p = 2)")


SWEEP = Sweep(module="roc_curve", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=_run, report=_report, runs=100, quick_runs=4, checks=secure_checks)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
