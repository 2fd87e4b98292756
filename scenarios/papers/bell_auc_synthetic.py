"""Bell et al., Fig. 5-6: AUC-specific vs generic locally private AUC on synthetic data across domain sizes.

Run: ``python -m scenarios.papers.bell_auc_synthetic [--quick]`` (``-M3 --secure``: both protocols once per data
set and alpha as deployed on real parties, local DP, no MPC; equal to the simulation).  Writes
``bell_auc_synthetic.csv`` and ``.png``.  Method, data and findings beside ours: ``docs/papers/bell.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, SecureCheck, check_noise_generator, format_mean, new_figure,
                                       noise_generator, print_rows, progress, save_figure, summarize_runs)
from scenarios.kit.sweep import Output, Sweep, axis
from scenarios.papers.bell_auc_domain import domain_panel, ldp_auc_deployment
from scenarios.papers.bell_auc_domain import quantize_scores as _quantize

__all__ = ["main", "parse_options", "SyntheticOptions", "synthetic_scores", "run_experiment", "DATASETS",
           "PROTOCOLS", "CSV_COLUMNS", "METRICS"]

DATASETS = ("auc_one", "ur")
PROTOCOLS = ("auc_specific", "generic")
DEFAULT_PER_CLASS = 10**6
QUICK_PER_CLASS = 10**3
DEFAULT_ALPHAS = tuple(range(1, 17))
QUICK_ALPHAS = (2, 5, 8)
DEFAULT_GENERIC_MAX_ALPHA = 10
GENERIC_ALPHA_LIMIT = 12
MAX_ALPHA = 40
DEFAULT_EPSILONS = (0.5, 1.0, 5.0)
QUICK_EPSILONS = (1.0,)

#: per-run measurements; the CSV has ``<metric>_mean`` and ``<metric>_se`` for each.
METRICS = ("estimate", "squared_error", "squared_error_clipped")
CSV_COLUMNS = ("dataset", "protocol", "alpha", "domain_size", "bins", "epsilon", "per_class", "runs",
               "exact_auc", "quantized_auc", *(f"{metric}_{part}" for metric in METRICS for part in ("mean", "se")),
               "seed")


@dataclass(frozen=True)
class SyntheticOptions:
    datasets: tuple[str, ...]
    per_class: int
    alphas: tuple[int, ...]
    generic_max_alpha: int
    epsilons: tuple[float, ...]
    common: CommonOptions


def _parse_datasets(text: str) -> tuple[str, ...]:
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UsageError(f"--datasets expects a comma-separated list of {', '.join(DATASETS)}, got '{text}'")
    for item in items:
        if item == "ithdigit":
            raise UsageError("--datasets: ithdigit is not available (its definition is lost in the paper text)")
        if item not in DATASETS:
            raise UsageError(f"--datasets must be among {', '.join(DATASETS)}, got '{item}'")
    return tuple(name for name in DATASETS if name in items)


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--datasets", help="auc_one and/or ur (default both)")
    parser.add_argument("--per-class", type=int, help="users per class (default 10^6; --quick: 10^3)")
    parser.add_argument("--alphas", help="exponents alpha of d = 2^alpha (default 1..16; --quick: 2,5,8)")
    parser.add_argument("--generic-max-alpha", type=int, default=DEFAULT_GENERIC_MAX_ALPHA,
                        help="largest alpha for the generic protocol (default 10, at most 12)")
    parser.add_argument("--epsilon-grid", help="epsilons (default 0.5,1,5; --quick: 1)")


def _resolve(args: Any, common: CommonOptions) -> SyntheticOptions:
    per_class = args.per_class if args.per_class is not None else (QUICK_PER_CLASS if args.quick
                                                                   else DEFAULT_PER_CLASS)
    if not 2 <= per_class <= 10**8:
        raise UsageError(f"--per-class must lie in [2, 10^8], got {per_class}")
    if not 0 <= args.generic_max_alpha <= GENERIC_ALPHA_LIMIT:
        raise UsageError(f"--generic-max-alpha must lie in [0, {GENERIC_ALPHA_LIMIT}] (the generic server "
                         f"is O(k^2) in k = 2^(alpha+1) bins; 0 turns it off), got {args.generic_max_alpha}")
    return SyntheticOptions(datasets=_parse_datasets(args.datasets) if args.datasets else DATASETS,
                            per_class=per_class, generic_max_alpha=args.generic_max_alpha, common=common,
                            alphas=axis(args.alphas, "--alphas", default=DEFAULT_ALPHAS, quick=QUICK_ALPHAS,
                                        is_quick=args.quick, integers=(1, MAX_ALPHA)),
                            epsilons=axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS,
                                          quick=QUICK_EPSILONS, is_quick=args.quick))


def synthetic_scores(dataset: str, per_class: int, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """``per_class`` scores of the positives and of the negatives of ``"auc_one"`` (1 and 0) or ``"ur"`` (uniform on
    ``[0, 1)`` from the public ``generator``)."""
    if dataset == "auc_one":
        return np.ones(per_class), np.zeros(per_class)
    return generator.random(per_class), generator.random(per_class)


def _exact_auc(positives: np.ndarray, negatives: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    labels = np.concatenate([np.ones(positives.size, dtype=np.int64), np.zeros(negatives.size, dtype=np.int64)])
    return float(roc_auc_score(labels, np.concatenate([positives, negatives])))


def _record(estimate: float, exact: float) -> dict[str, float]:
    clipped = min(max(estimate, 0.0), 1.0) if math.isfinite(estimate) else math.nan
    return {"estimate": estimate, "squared_error": (estimate - exact) ** 2,
            "squared_error_clipped": (clipped - exact) ** 2}


def _generic_points(positives: np.ndarray, negatives: np.ndarray, domain_size: int) -> tuple[Any, np.ndarray]:
    """The generic protocol's quantizer (score bins x label) and points (positives first, then negatives)."""
    from dp.bell.quantize import Interval, Levels, Quantizer

    quantizer = Quantizer([Interval(0.0, 1.0, domain_size), Levels((0.0, 1.0))])
    return quantizer, np.column_stack([np.concatenate([positives, negatives]),
                                       np.concatenate([np.ones(positives.size), np.zeros(negatives.size)])])


def _generic_ratio(counts: np.ndarray, quantizer: Any, epsilon: float) -> np.ndarray:
    """The AUC estimate of noisy histograms: the ratio of two U-statistics (AUC and comparable pairs)."""
    from dp.bell.generic import estimate_from_histogram
    from dp.bell.quantize import auc_kernel, comparable_kernel, kernel_matrix

    numerator, comparable = (np.asarray(estimate_from_histogram(counts, kernel_matrix(
        kernel, quantizer, kind="average", subdivisions=1), epsilon=epsilon), dtype=float)
        for kernel in (auc_kernel, comparable_kernel))
    with np.errstate(divide="ignore", invalid="ignore"):
        return numerator / comparable  # type: ignore[no-any-return]


def _generic_estimates(positives: np.ndarray, negatives: np.ndarray, domain_size: int, epsilon: float,
                       runs: int, generator: np.random.Generator | None) -> np.ndarray:
    """``runs`` AUC estimates of the generic protocol: ratio of two U-statistics from one histogram per run."""
    from dp.bell.generic import simulate_histograms

    quantizer, points = _generic_points(positives, negatives, domain_size)
    counts = simulate_histograms(points, quantizer=quantizer, epsilon=epsilon, runs=runs, rng=generator)
    return _generic_ratio(counts, quantizer, epsilon)


def run_experiment(options: SyntheticOptions, seed: int) -> list[Output]:
    """Run every (data set, alpha, epsilon, protocol) ``options.common.runs`` times; one row per setting."""
    from dp.bell.auc import ldp_auc
    from secure.public_randomness import public_generator

    runs, os_noise = options.common.runs, options.common.os_noise
    generic_alphas = [alpha for alpha in options.alphas if alpha <= options.generic_max_alpha]
    total = len(options.datasets) * len(options.epsilons) * runs * (len(options.alphas) + len(generic_alphas))
    rows: list[dict[str, Any]] = []
    setting = 0  # two per (data set, alpha, epsilon): the AUC-specific protocol's runs, the generic one's
    with progress(total, "bell_auc_synthetic") as bar:
        for dataset_index, dataset in enumerate(options.datasets):
            data = public_generator(int(seed) + dataset_index)
            positives, negatives = synthetic_scores(dataset, options.per_class, data)
            exact = _exact_auc(positives, negatives)
            for alpha in options.alphas:
                size = 2**alpha
                pos, neg = _quantize(positives, size), _quantize(negatives, size)
                base = {"dataset": dataset, "alpha": alpha, "domain_size": size, "per_class": options.per_class,
                        "runs": runs, "exact_auc": exact, "quantized_auc": _exact_auc(pos, neg), "seed": seed}
                for epsilon in options.epsilons:
                    bar.set_postfix_str(f"{dataset} alpha={alpha} epsilon={epsilon:g}")
                    estimates = []
                    for run in range(runs):
                        estimates.append(ldp_auc(pos, neg, domain_size=size, epsilon=epsilon, split="users",
                                                 rng=noise_generator(seed, setting, run, os_noise=os_noise)).auc)
                        bar.update(1)
                    protocols: list[tuple[str, int, Any]] = [("auc_specific", size, estimates)]
                    if alpha <= options.generic_max_alpha:
                        generic = _generic_estimates(positives, negatives, size, epsilon, runs,
                                                     noise_generator(seed, setting + 1, 0, os_noise=os_noise))
                        protocols.append(("generic", 2 * size, generic))
                        bar.update(runs)
                    rows += [{**base, "protocol": protocol, "bins": bins, "epsilon": epsilon,
                              **summarize_runs([_record(float(value), exact) for value in values], METRICS)}
                             for protocol, bins, values in protocols]
                    setting += 2
    return [Output("bell_auc_synthetic", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def _plot(options: SyntheticOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes_list = new_figure(5.2 * len(options.datasets), 4.4, panels=(1, len(options.datasets)))
    for axes, dataset in zip(axes_list, options.datasets):
        domain_panel(axes, [(f"{name}, epsilon = {{:g}}", [row for row in rows if row["dataset"] == dataset
                                                            and row["protocol"] == protocol], index)
                            for index, (protocol, name) in enumerate(zip(PROTOCOLS, ("AUC-specific", "generic")))],
                     options.epsilons, legend=7, title=f"{dataset}: {options.per_class} users per class, "
                                                       f"{options.common.runs} runs")
    figure.suptitle("Bell et al. Fig. 5-6: AUC-specific (solid, filled circles) vs generic (dashed, open squares) "
                    "LDP protocol; colour: epsilon", fontsize=10)
    save_figure(figure, path)


def _report(options: SyntheticOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    table = [[row["dataset"], row["protocol"], str(row["alpha"]), f"{row['epsilon']:g}",
              f"{row['quantized_auc']:.4f}", format_mean(row["estimate_mean"], row["estimate_se"], 4),
              format_mean(row["squared_error_mean"], row["squared_error_se"]),
              format_mean(row["squared_error_clipped_mean"], row["squared_error_clipped_se"])] for row in rows]
    exact = ", ".join(f"{dataset} {next(r['exact_auc'] for r in rows if r['dataset'] == dataset):.4f}"
                      for dataset in options.datasets)
    print_rows("AUC-specific vs generic LDP protocol on synthetic data (Bell et al., Fig. 5-6): mean ± s.e. "
               "over runs", ["dataset", "protocol", "alpha", "epsilon", "quantized AUC", "estimate", "MSE",
                             "MSE clipped"], table,
               notes=[f"{options.per_class} users per class; exact AUC {exact}; generic protocol only for alpha <= "
                      f"{options.generic_max_alpha} (O(k^2) server, k = 2d)"])


async def _generic_deployment(label: str, positives: np.ndarray, negatives: np.ndarray, *, alpha: int,
                              epsilon: float, seed: int, setting: int) -> list[SecureCheck]:
    """One run of the generic protocol (Algorithm 1) at ``d = 2^alpha`` as deployed: user ``i`` (positives first)
    randomises at party ``i % m`` (the others' points zeroed first) and its report goes to party 0 with
    ``mpc.transfer``, which builds the histogram and the ratio, and runs :func:`_generic_estimates` once with the
    same stream.  Collective; at party 0 the ``equal`` check ``"<label>, m=<m>"``, else ``[]``."""
    from mpyc.runtime import mpc

    from dp.bell.generic import histogram, randomize

    parties, pid = len(mpc.parties), int(mpc.pid)
    quantizer, points = _generic_points(positives, negatives, 2**alpha)
    mine = np.arange(points.shape[0]) % parties == pid
    generator = check_noise_generator(seed, setting)
    prepared = quantizer.prepare(np.where(mine[:, None], points, 0.0))
    reports = randomize(quantizer._sample(prepared, 1, generator), bins=quantizer.bins, epsilon=epsilon,
                        rng=generator)[0]
    received = await mpc.transfer((np.flatnonzero(mine), reports[mine]), senders=list(range(parties)), receivers=[0])
    if pid != 0:
        return []
    everyone = np.zeros(points.shape[0], dtype=np.int64)
    for positions, values in received:
        everyone[positions] = values
    deployed = float(_generic_ratio(histogram(everyone, bins=quantizer.bins), quantizer, epsilon))
    simulated = float(_generic_estimates(positives, negatives, 2**alpha, epsilon, 1,
                                         check_noise_generator(seed, setting))[0])
    return [SecureCheck(f"{label}, m={parties}", deployed, simulated)]


async def secure_checks(options: SyntheticOptions, seed: int) -> list[Any]:
    """``--secure``: per data set and checked alpha (every one with ``--quick``, else the smallest and the
    largest), at the first epsilon, one run of the AUC-specific protocol
    (:func:`scenarios.papers.bell_auc_domain.ldp_auc_deployment`) and, for alpha up to ``--generic-max-alpha``,
    of the generic one (:func:`_generic_deployment`), deployed on the real parties; relation ``equal``."""
    from secure.public_randomness import public_generator

    epsilon = options.epsilons[0]
    checks: list[Any] = []
    setting = 0  # two per data set and alpha: the AUC-specific protocol's, the generic one's
    for dataset_index, dataset in enumerate(options.datasets):
        positives, negatives = synthetic_scores(dataset, options.per_class, public_generator(int(seed) + dataset_index))
        for alpha in options.alphas if options.common.quick else sorted({min(options.alphas), max(options.alphas)}):
            where = f"{dataset}, alpha={alpha}, epsilon={epsilon:g}"
            checks += await ldp_auc_deployment(f"AUC-specific, {where}", (positives, negatives), alpha=alpha,
                                               epsilon=epsilon, split="users", seed=seed, setting=setting)
            if alpha <= options.generic_max_alpha:
                checks += await _generic_deployment(f"generic, {where}", positives, negatives, alpha=alpha,
                                                    epsilon=epsilon, seed=seed, setting=setting + 1)
            setting += 2
    return checks


SWEEP = Sweep(module="bell_auc_synthetic", doc=__doc__ or "", page="docs/papers/bell.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=20, quick_runs=3, checks=secure_checks)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
