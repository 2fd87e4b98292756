"""Bell et al., Fig. 4: private Kendall's tau, generic LDP vs 2PC subsampled pairs vs all pairs.

Run: ``python -m scenarios.papers.bell_kendall [--quick]`` (``-M3 --secure``: one repetition of the
subsampled-pairs protocol per P on the MPyC path with fixed per-party draws, equal to the simulation).  Writes
``bell_kendall.csv`` and ``.png``.  Method, data and findings beside ours: ``docs/papers/bell.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, SecureCheck, check_positive_number, errorbars, format_mean,
                                       new_figure, noise_generator, party_draws, print_rows, progress, save_figure,
                                       style_axes, summarize_runs)
from scenarios.kit.sweep import (Output, Sweep, add_coalition_options, axis, check_coalition, complete_rows, row_limit,
                                 whole_list)

__all__ = ["main", "parse_options", "KendallOptions", "run_experiment", "CSV_COLUMNS", "method_names"]

DEFAULT_EPSILONS = (0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0)
QUICK_EPSILONS = (0.05, 5.0)
DEFAULT_PERMUTATIONS = (1, 2, 5, 10)
QUICK_ROWS = 600
DEFAULT_DELTA = 1e-8
AGE_DOMAIN = (20.0, 90.0)   # declared domain of Framingham's age (scenarios/data/domains.json)
EDUCATION_LEVELS = (1, 4)
KENDALL_SENSITIVITY = 2.0   # the kernel takes values in [-1, 1]

CSV_COLUMNS = ("epsilon", "method", "permutations", "n", "bins", "parties", "threshold", "runs",
               "mse_mean", "mse_se", "abs_error_mean", "abs_error_se", "predicted_mse", "ldp_theorem1_bound",
               "exact_tau", "seed")


@dataclass(frozen=True)
class KendallOptions:
    epsilons: tuple[float, ...]
    permutations: tuple[int, ...]
    parties: int
    threshold: int
    delta: float
    age_width: int
    rows: int | None
    common: CommonOptions


def method_names(permutations: Sequence[int]) -> list[str]:
    """The methods in table / CSV order: ``generic LDP``, ``subsampled P=..``, ``all pairs``."""
    return ["generic LDP", *(f"subsampled P={p}" for p in permutations), "all pairs"]


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--epsilon-grid", help="epsilons swept (default 0.05,0.1,0.2,0.5,1,2,5; --quick: 0.05,5)")
    parser.add_argument("--permutations", help="numbers of permutations P (default 1,2,5,10)")
    add_coalition_options(parser)
    parser.add_argument("--delta", type=float, default=DEFAULT_DELTA, help="delta of the all-pairs baseline (1e-8)")
    parser.add_argument("--age-width", type=int, default=5,
                        help="width of the age bands in years (default 5; 1 keeps every year, 71 levels)")
    parser.add_argument("--rows", type=int, help="use only the first N complete rows (default all; --quick: 600)")


def _resolve(args: Any, common: CommonOptions) -> KendallOptions:
    epsilons = axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS, quick=QUICK_EPSILONS,
                    is_quick=args.quick)
    permutations = whole_list(args.permutations, "--permutations") if args.permutations else DEFAULT_PERMUTATIONS
    check_coalition(args.parties, args.coalition)
    delta = check_positive_number(args.delta, "--delta")
    if delta >= 1:
        raise UsageError(f"--delta must lie in (0, 1), got {delta:g}")
    if not 1 <= args.age_width <= 70:
        raise UsageError(f"--age-width must lie in [1, 70] years, got {args.age_width}")
    rows = row_limit(args, QUICK_ROWS)
    return KendallOptions(epsilons=epsilons, permutations=permutations, parties=args.parties,
                          threshold=args.coalition, delta=delta, age_width=args.age_width, rows=rows,
                          common=common)


def age_levels(age_width: int) -> int:
    """Number of age bands of the declared domain [20, 90] (the last one also holds 90)."""
    return max(1, math.ceil((AGE_DOMAIN[1] - AGE_DOMAIN[0]) / age_width))


def _ratings(options: KendallOptions) -> tuple[np.ndarray, tuple[Any, ...]]:
    """The ordinal stand-in for Tripadvisor ratings, ``(n, 2)`` floats: Framingham's complete ``(age band,
    education)``, age clipped to its declared domain and cut into ``--age-width``-year bands, the first ``--rows``;
    and their column specs."""
    from secure.intake import ColumnSpec

    values = complete_rows("framingham", ("age", "education"))
    levels = age_levels(options.age_width)
    age = np.clip(values[:, 0], *AGE_DOMAIN)
    bands = np.minimum(np.floor((age - AGE_DOMAIN[0]) / options.age_width), levels - 1)
    ratings = np.column_stack([bands, np.clip(values[:, 1], *EDUCATION_LEVELS)])
    return ratings if options.rows is None else ratings[:options.rows], (
        ColumnSpec("age_band", 0.0, float(max(levels - 1, 1)), 0),
        ColumnSpec("education", float(EDUCATION_LEVELS[0]), float(EDUCATION_LEVELS[1]), 0))


def run_experiment(options: KendallOptions, seed: int) -> list[Output]:
    """Every epsilon and method ``--runs`` times (noise of epsilon ``s``, method ``j``: one stream
    ``noise_generator(seed, s, j)`` over the runs; the same pair permutations for every epsilon); a row per pair."""
    from dp.bell.generic import conditional_variance, quantized_ustatistic, simulate, theorem1_variance_bound
    from dp.bell.quantize import Quantizer, kendall_kernel, kernel_matrix
    from dp.bell.subsampled_analysis import (all_pairs_mse, exact_ustatistic, kernel_zetas, protocol_mse,
                                             simulate_all_pairs)
    from dp.bell.subsampled_pairs import SubsampledPairsQuery, simulate_subsampled
    from secure.kernels import get_kernel

    values, specs = _ratings(options)
    n = values.shape[0]
    levels = age_levels(options.age_width)
    kernel = get_kernel("kendall")
    query = SubsampledPairsQuery(kernel=kernel, specs=specs, epsilon=1.0, permutations=1)
    exact = float(exact_ustatistic(query, values))
    # one bin per ordinal level: bin centres at the integers
    quantizer = Quantizer.grid(lower=(-0.5, EDUCATION_LEVELS[0] - 0.5),
                               upper=(levels - 0.5, EDUCATION_LEVELS[1] + 0.5),
                               bins=(levels, EDUCATION_LEVELS[1] - EDUCATION_LEVELS[0] + 1))
    matrix = kernel_matrix(kendall_kernel, quantizer, kind="average")
    quantized = float(quantized_ustatistic(values, quantizer, matrix))
    if not math.isclose(quantized, exact, rel_tol=1e-9, abs_tol=1e-12):
        raise RuntimeError(f"quantized tau {quantized} differs from the exact tau {exact}")
    moments = kernel_zetas(query, values, distinct=False)
    zeta1, zeta2 = float(moments.zeta1), float(moments.zeta2)
    complete_variance = 2.0 / (n * (n - 1)) * (2.0 * (n - 2) * zeta1 + zeta2)  # Hoeffding (eq. 3)
    by_party = [values[i::options.parties] for i in range(options.parties)]  # party i: rows i, i+m, ...
    runs = options.common.runs
    methods = method_names(options.permutations)
    rows: list[dict[str, Any]] = []

    def generator(setting: int, method: int) -> np.random.Generator | None:
        return noise_generator(seed, setting, method, os_noise=options.common.os_noise)

    def add(epsilon: float, method: str, permutations: int, estimates: Any, predicted: float,
            bound: float = math.nan) -> None:
        errors = np.asarray(estimates, dtype=float) - exact
        records = [{"mse": error ** 2, "abs_error": abs(error)} for error in errors]
        rows.append({"epsilon": epsilon, "method": method, "permutations": permutations, "n": n,
                     "bins": quantizer.bins, "parties": options.parties, "threshold": options.threshold,
                     "runs": len(errors), **summarize_runs(records, ("mse", "abs_error")), "predicted_mse": predicted,
                     "ldp_theorem1_bound": bound, "exact_tau": exact, "seed": seed})
        bar.update(runs)

    with progress(len(options.epsilons) * len(methods) * runs, "bell_kendall") as bar:
        for index, epsilon in enumerate(options.epsilons):
            bar.set_postfix_str(f"epsilon={epsilon:g}")
            # generic LDP protocol (Algorithm 1)
            estimates = simulate(values, kendall_kernel, quantizer=quantizer, epsilon=epsilon,
                                 kind="average", runs=runs, rng=generator(index, 0))
            add(epsilon, methods[0], 0, estimates,
                float(conditional_variance(values, quantizer, matrix, epsilon=epsilon)),
                float(theorem1_variance_bound(n=n, bins=quantizer.bins, epsilon=epsilon,
                                              kernel_range=KENDALL_SENSITIVITY)))
            # 2PC subsampled pairs, P permutations
            for slot, permutations in enumerate(options.permutations, start=1):
                query = SubsampledPairsQuery(kernel=kernel, specs=specs, epsilon=epsilon,
                                             permutations=permutations)
                simulation = simulate_subsampled(query, by_party, threshold=options.threshold, seed=seed,
                                                 runs=runs, resample_pairs=True, noise_rng=generator(index, slot))
                predicted = protocol_mse(query, zeta1, zeta2, n=n, parties=options.parties,
                                         threshold=options.threshold) - complete_variance
                add(epsilon, methods[slot], permutations, simulation.estimates, float(predicted))
            # all pairs, advanced composition
            query = SubsampledPairsQuery(kernel=kernel, specs=specs, epsilon=epsilon, permutations=1)
            baseline = simulate_all_pairs(query, by_party, threshold=options.threshold, delta=options.delta,
                                          runs=runs, noise_rng=generator(index, len(methods) - 1))
            predicted = all_pairs_mse(0.0, 0.0, n=n, epsilon=epsilon, delta=options.delta,
                                      sensitivity=KENDALL_SENSITIVITY, parties=options.parties,
                                      threshold=options.threshold)
            add(epsilon, methods[-1], n - 1, baseline.estimates, float(predicted))
    return [Output("bell_kendall", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, exact, path))]


def _plot(options: KendallOptions, rows: list[dict[str, Any]], exact: float, path: str) -> None:
    figure, axes = new_figure()
    markers = "osD^v<>ph*"
    for k, method in enumerate(method_names(options.permutations)):
        errorbars(axes, [row for row in rows if row["method"] == method], "epsilon", "mse", label=method,
                  marker=markers[k % len(markers)], linestyle="--" if method in ("generic LDP", "all pairs") else "-")
    style_axes(axes, xlabel="epsilon", ylabel="mean squared error of Kendall's tau", fontsize=8,
               title=f"Kendall's tau (Bell et al. Fig. 4): Framingham age band vs education, n = {rows[0]['n']}, "
                     f"tau = {exact:.3f}, {options.common.runs} runs")
    save_figure(figure, path)


def _report(options: KendallOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    exact = rows[0]["exact_tau"]
    table = [[f"{row['epsilon']:g}", row["method"], format_mean(row["mse_mean"], row["mse_se"]),
              f"{row['predicted_mse']:.3g}",
              "-" if not math.isfinite(row["ldp_theorem1_bound"]) else f"{row['ldp_theorem1_bound']:.3g}",
              format_mean(row["abs_error_mean"], row["abs_error_se"])] for row in rows]
    n = rows[0]["n"]
    print_rows("Private Kendall's tau (Bell et al. 2019, Fig. 4): error against the exact tau-a of the data, "
               "mean ± s.e. over runs",
               ["epsilon", "method", "MSE", "predicted MSE", "Thm 1 bound", "mean |error|"], table,
               notes=[f"data: Framingham age in {options.age_width}-year bands x education (1-4), stand-in for "
                      f"Tripadvisor ratings; n = {n}, {rows[0]['bins']} bins, exact tau-a "
                      f"{exact:.4f}",
                      f"subsampled/all pairs: {options.parties} parties, noise calibrated for a coalition of "
                      f"{options.threshold}; all pairs delta = {options.delta:g}; {options.common.runs} runs",
                      "predicted: LDP exact conditional variance; subsampled Thm 5 (discrete noise) minus "
                      "Var U_n; all pairs its noise term"])
    for epsilon in (min(options.epsilons), max(options.epsilons)):  # the Fig. 4 comparisons
        at = {row["method"]: row for row in rows if row["epsilon"] == epsilon}
        best = min((at[m] for m in method_names(options.permutations)[1:-1]), key=lambda row: row["mse_mean"])
        print(f"  epsilon {epsilon:g}: best subsampling P = {best['permutations']} "
              f"(MSE {best['mse_mean']:.3g}); generic LDP / best subsampling = "
              f"{at['generic LDP']['mse_mean'] / best['mse_mean']:.3g}x; all pairs / best subsampling = "
              f"{at['all pairs']['mse_mean'] / best['mse_mean']:.3g}x (mean |error|: generic LDP "
              f"{at['generic LDP']['abs_error_mean'] / best['abs_error_mean']:.3g}x, all pairs "
              f"{at['all pairs']['abs_error_mean'] / best['abs_error_mean']:.3g}x)")


async def secure_checks(options: KendallOptions, seed: int) -> list[Any]:
    """``--secure``: one repetition of the 2PC subsampled-pairs protocol per checked ``P`` at the smallest
    epsilon: party ``i`` holds rows ``i, i+m, ...`` and runs :func:`dp.bell.subsampled_pairs.run_secure_subsampled`
    with fixed per-party draws (``noise_source``); party 0 simulates the same rows, pairs and draws.  Relation
    ``equal``: the tau and every opened per-pair value.  Collective; the checks at party 0, ``[]`` elsewhere."""
    from mpyc.runtime import mpc

    from dp.bell.subsampled_pairs import (SubsampledPairsQuery, pairs_for, party_pair_draws, plans_for_pairs,
                                          run_secure_subsampled, simulate_subsampled)
    from secure.kernels import get_kernel

    values, specs = _ratings(options)
    parties, threshold, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    by_party = [values[i::parties] for i in range(parties)]
    epsilon = min(options.epsilons)
    checks: list[Any] = []
    checked = sorted({min(options.permutations), max(options.permutations)}) if options.common.quick \
        else options.permutations
    for setting, permutations in enumerate(checked):
        query = SubsampledPairsQuery(kernel=get_kernel("kendall"), specs=specs, epsilon=epsilon,
                                     permutations=permutations)
        plans = plans_for_pairs(query, parties, threshold)
        count = len(pairs_for(query, values.shape[0], seed))
        every = party_draws(seed, setting, parties,
                            lambda generator: np.stack([party_pair_draws(plan, count, generator) for plan in plans]))
        release = await run_secure_subsampled(query, query.prepare(by_party[pid]), seed=seed,
                                              noise_source=lambda plan, index, size: every[pid][index])
        if release is None:
            continue
        noise = np.stack(every, axis=1)[None]  # (1, outputs, parties, pairs)
        simulation = simulate_subsampled(query, by_party, threshold=threshold, seed=seed, runs=1, noise=noise)
        label = f"subsampled P={permutations}, epsilon={epsilon:g}, m={parties}, t={threshold}"
        checks.append(SecureCheck(f"{label}: tau", float(release.estimate), float(simulation.estimates[0])))
        mismatched = int(np.count_nonzero(np.stack(release.noisy_values) != simulation.noisy_values))
        checks.append(SecureCheck(f"{label}: per-pair values differing (of {count})", float(mismatched), 0.0))
    return checks


SWEEP = Sweep(module="bell_kendall", doc=__doc__ or "", page="docs/papers/bell.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=100, quick_runs=60, checks=secure_checks)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
