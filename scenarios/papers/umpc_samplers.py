"""Sinh & Ramon, Table 2: MSE of the U-MPC duplicate-pair ratio under BalancedSamp, uniform and Bernoulli sampling,
beside the exact error decomposition of every sampler.

Run: ``python -m scenarios.papers.umpc_samplers [--quick]`` (``-M3 --secure``: one repetition of Pi_U-MPC per
sampler on the MPyC path with fixed per-party draws, equal to the simulation).  Writes ``umpc_samplers.csv`` and
``.png``.  Method, data and findings beside ours: ``docs/papers/sinh_ramon.md``."""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, equal_checks, format_mean, new_figure,
                                       noise_generator, party_draws, print_rows, progress, run_seeds, save_figure,
                                       style_axes, summarize)
from scenarios.kit.sweep import (Output, Sweep, add_coalition_options, check_coalition, complete_rows, error_summary,
                                 row_limit)

__all__ = ["main", "parse_options", "SamplerOptions", "run_experiment", "bank_job_standin",
           "lemma_d3_bound", "ordering_holds", "CSV_COLUMNS", "SAMPLERS", "BANK_JOB_COUNTS", "DATASETS",
           "UmpcCheckSetting", "umpc_secure_checks", "secure_settings"]

SAMPLERS = ("balanced", "uniform", "bernoulli")
HT_ROW = "bernoulli-ht"
PAPER_MSE = {"balanced": 2.2e-6, "uniform": 2.7e-6, "bernoulli": 9.1e-6}
QUICK_ROWS = 800
EDUCATION_LEVELS = (1, 4)
DATASETS = ("framingham", "bank-job")
#: Bank Marketing (Moro & Cortez, 2014; bank.csv, n = 4521): counts of the ``job`` column
BANK_JOB_COUNTS: dict[str, int] = {
    "management": 969, "blue-collar": 946, "technician": 768, "admin.": 478, "services": 417, "retired": 230,
    "self-employed": 183, "entrepreneur": 168, "unemployed": 128, "housemaid": 112, "student": 84, "unknown": 38}
#: seed of the fixed public permutation of the stand-in's rows
BANK_JOB_PERMUTATION_SEED = 0
#: failure probability of the data-independent degree bound of the what-if calibration
DEGREE_BOUND_FAILURE = 2.0 ** -40

CSV_COLUMNS = ("sampler", "n", "edges", "epsilon", "parties", "threshold", "runs", "mse_mean", "mse_se", "bias_mean",
               "bias_se", "mean_edges", "mean_max_degree", "lemma_d3_bound", "lemma_d3_bound_coalition", "exact_ratio",
               "paper_mse", "seed", "data", "estimator", "inc_theory", "inc_theory_se", "inc_source", "inc_projection",
               "inc_measured", "inc_measured_se", "dp_theory", "theory", "theory_se", "paired_diff", "paired_diff_se",
               "z", "noise_factor", "degree_bound", "dp_at_degree_bound", "mse_at_degree_bound")


@dataclass(frozen=True)
class SamplerOptions:
    edges_per_row: float
    epsilon: float
    parties: int
    threshold: int
    rows: int | None
    common: CommonOptions
    data: str = "framingham"
    edges_fraction: float | None = None
    inc_samples: int | None = None


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--data", default="framingham",
                        help="framingham (default) or bank-job (synthetic frequency-matched stand-in)")
    parser.add_argument("--edges-per-row", type=float, help="|E| = round(F n) (default 2)")
    parser.add_argument("--edges-fraction", type=float, help="|E| = round(Q C(n, 2)) instead, 0 < Q <= 1")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    add_coalition_options(parser)
    parser.add_argument("--rows", type=int, help="use only the first N rows (default all; --quick: 800)")
    parser.add_argument("--inc-samples", type=int, help="noise-free draws of E for BalancedSamp's E_inc (default: R)")


def _resolve(args: Any, common: CommonOptions) -> SamplerOptions:
    if args.data not in DATASETS:
        raise UsageError(f"--data must be one of {', '.join(DATASETS)}, got '{args.data}'")
    if args.edges_per_row is not None and args.edges_fraction is not None:
        raise UsageError("give --edges-per-row or --edges-fraction, not both")
    factor = check_positive_number(args.edges_per_row if args.edges_per_row is not None else 2.0,
                                   "--edges-per-row")
    fraction = None
    if args.edges_fraction is not None:
        fraction = check_positive_number(args.edges_fraction, "--edges-fraction")
        if fraction > 1:
            raise UsageError(f"--edges-fraction must lie in (0, 1], got {args.edges_fraction}")
    epsilon = check_positive_number(args.epsilon, "--epsilon")
    check_coalition(args.parties, args.coalition)
    rows = row_limit(args, QUICK_ROWS)
    if args.inc_samples is not None and args.inc_samples < 2:
        raise UsageError(f"--inc-samples must be at least 2, got {args.inc_samples}")
    return SamplerOptions(edges_per_row=factor, epsilon=epsilon, parties=args.parties, threshold=args.coalition,
                          rows=rows, common=common, data=args.data, edges_fraction=fraction,
                          inc_samples=args.inc_samples)


def bank_job_standin(rows: int | None = None) -> np.ndarray:
    """Synthetic stand-in for Bank Marketing's ``job`` (not real data): codes 0..11, each its
    :data:`BANK_JOB_COUNTS` times, in a fixed public permutation; the first ``rows`` kept."""
    counts = np.asarray(list(BANK_JOB_COUNTS.values()))
    values = np.repeat(np.arange(counts.size, dtype=float), counts)
    values = np.random.default_rng(BANK_JOB_PERMUTATION_SEED).permutation(values)
    return values if rows is None else values[:rows]


DESCRIPTIONS = {"framingham": "Framingham education (4 categories), stand-in for Bank Marketing job (12)",
                "bank-job": "SYNTHETIC stand-in with Bank Marketing job's 12 category counts (not real data)"}


def _load(options: SamplerOptions) -> tuple[np.ndarray, Any]:
    """(values, column spec) of ``--data``: the stand-in, or Framingham ``education`` (levels 1..4) as floats,
    missing rows dropped; the first ``--rows``."""
    from secure.intake import ColumnSpec

    if options.data == "bank-job":
        return bank_job_standin(options.rows), ColumnSpec("job", 0.0, float(len(BANK_JOB_COUNTS) - 1), 0)
    values = np.clip(complete_rows("framingham", ("education",))[:, 0], *EDUCATION_LEVELS)
    spec = ColumnSpec("education", float(EDUCATION_LEVELS[0]), float(EDUCATION_LEVELS[1]), 0)
    return values if options.rows is None else values[:options.rows], spec


def lemma_d3_bound(*, n: int, edges: int, epsilon: float, sensitivity: float = 1.0,
                   noise_factor: float = 1.0) -> float:
    """Lemma D.3: ``(N-|E|)/(4|E|(N-1)) + noise_factor * 2 (2 Delta_f)^2 / (n^2 eps^2)``, ``N = C(n,2)``.

    ``noise_factor = m/(m-t)`` accounts for the coalition calibration (the lemma has 1)."""
    pairs = n * (n - 1) / 2
    return (pairs - edges) / (4 * edges * (pairs - 1)) + noise_factor * 2 * (2 * sensitivity) ** 2 / (
        n ** 2 * epsilon ** 2)


def _edges(options: SamplerOptions, n: int) -> int:
    pairs = n * (n - 1) // 2
    target = options.edges_per_row * n if options.edges_fraction is None else options.edges_fraction * pairs
    return min(pairs, max(1, int(round(target))))


def umpc_runs(query: Any, values: np.ndarray, seeds: np.ndarray, *, parties: int, threshold: int, seed: int,
              setting: int, os_noise: bool, bar: Any) -> Iterator[Any]:
    """Pi_U-MPC simulated once per run, the rows ``(n, columns)`` dealt round-robin to the ``parties``: run ``r``'s
    tuples from the public ``seeds[r]``, its noise from the stream of ``(seed, setting, r)``."""
    from dp.umpc.protocol import simulate

    by_party = [values[i::parties] for i in range(parties)]
    for run, run_seed in enumerate(seeds):
        yield simulate(query, by_party, threshold=threshold, seed=int(run_seed), runs=1,
                       noise_rng=noise_generator(seed, setting, run, os_noise=os_noise))
        bar.update(1)


def _run_sampler(options: SamplerOptions, query: Any, values: np.ndarray, seeds: np.ndarray, index: int,
                 seed: int, exact: float, bar: Any) -> dict[str, list[dict[str, float]]]:
    """All runs of one sampler, a record per run: ``error``, ``size`` (|E|), max ``degree``, ``dp`` (Var(eta | E) /
    (divisor scale)^2) and ``noise_free`` ((U_E - U)^2); for Bernoulli also the Horvitz-Thompson records."""
    scale = query.outputs[0].scale
    out: dict[str, list[dict[str, float]]] = {name: [] for name in (
        ("ratio", "ht") if query.sampling == "bernoulli" else ("ratio",))}
    for result in umpc_runs(query, values.reshape(-1, 1), seeds, parties=options.parties, seed=seed, setting=index,
                            threshold=options.threshold, os_noise=options.common.os_noise, bar=bar):
        size = len(result.tuples)
        degree = int(np.bincount(result.tuples.ravel(), minlength=values.shape[0]).max())
        for name, records in out.items():
            divisor = size if name == "ratio" else query.tuples  # Horvitz-Thompson: q N = m
            ratio = size / divisor
            records.append({"error": float(result.estimates[0]) * ratio - exact, "size": size, "degree": degree,
                            "dp": result.plans[0].variance / (divisor * scale) ** 2,
                            "noise_free": (float(result.exact_on_tuples) * ratio - exact) ** 2})
    return out


def _balanced_inc(options: SamplerOptions, values: np.ndarray, edges: int, exact: float, seed: int,
                  bar: Any) -> tuple[float, float]:
    """Monte Carlo ``E_inc`` of BalancedSamp: noise-free draws of ``E`` from their own public stream (key ``(2,)``
    of ``seed``), independent of the runs."""
    from dp.umpc.sampler_variance import duplicate_on_tuples, monte_carlo_inc
    from dp.sampling import balanced_tuples

    samples = options.inc_samples or options.common.runs
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed), spawn_key=(2,))))
    n = values.shape[0]
    statistic = duplicate_on_tuples(values)

    def draw(generator: np.random.Generator) -> np.ndarray:
        bar.update(1)
        return balanced_tuples(n, edges, 2, generator)

    return monte_carlo_inc(statistic, draw, exact, rng, samples)


def _queries(options: SamplerOptions, spec: Any, edges: int) -> list[Any]:
    """U-MPC's duplicate-ratio query under every sampler of :data:`SAMPLERS`."""
    from dp.umpc.protocol import UStatQuery
    from secure.kernels import get_kernel

    return [UStatQuery(kernel=get_kernel("duplicate"), specs=(spec,), epsilon=options.epsilon, tuples=edges,
                       sampling=sampler) for sampler in SAMPLERS]


def run_experiment(options: SamplerOptions, seed: int) -> list[Output]:
    """Every sampler ``--runs`` times with fresh tuples (public seed per run) and fresh noise, plus theory."""
    from dp.umpc import sampler_variance as sv

    values, spec = _load(options)
    n = values.shape[0]
    edges = _edges(options, n)
    moments = sv.duplicate_moments(values)
    exact = moments.mean
    seeds = run_seeds(seed, options.common.runs)
    factor = options.parties / (options.parties - options.threshold)
    common = {"n": n, "edges": edges, "epsilon": options.epsilon, "parties": options.parties,
              "threshold": options.threshold, "exact_ratio": exact, "seed": seed, "data": options.data,
              "noise_factor": factor, "lemma_d3_bound": lemma_d3_bound(n=n, edges=edges, epsilon=options.epsilon),
              "lemma_d3_bound_coalition": lemma_d3_bound(n=n, edges=edges, epsilon=options.epsilon,
                                                         noise_factor=factor)}
    random_bound = sv.degree_bound(n, edges, failure=DEGREE_BOUND_FAILURE)
    rows: list[dict[str, Any]] = []
    with progress(len(SAMPLERS) * options.common.runs + (options.inc_samples or options.common.runs),
                  "umpc_samplers") as bar:
        for index, query in enumerate(_queries(options, spec, edges)):
            sampler = query.sampling
            bar.set_postfix_str(sampler)
            for estimator, record in _run_sampler(options, query, values, seeds, index, seed, exact, bar).items():
                if sampler == "balanced":
                    inc, inc_se = _balanced_inc(options, values, edges, exact, seed, bar)
                    source, degree_cap = "Monte Carlo over E (no noise)", -(-2 * edges // n)
                elif sampler == "uniform":
                    inc, inc_se = sv.uniform_inc(moments, edges), 0.0
                    source, degree_cap = "exact, Claim D.1", random_bound
                else:
                    inc, inc_se = sv.bernoulli_inc(moments, edges, estimator=estimator), 0.0
                    source = ("exact, realised |E| (Claim D.1 over Binomial |E|)" if estimator == "ratio"
                              else "exact, Horvitz-Thompson (1-q)/(qN) mean f^2")
                    degree_cap = random_bound
                name = sampler if estimator == "ratio" else HT_ROW
                dp_cap = sv.dp_variance(degree_cap, edges, epsilon=options.epsilon, parties=options.parties,
                                        threshold=options.threshold)
                rows.append({**common, **_run_summary(record, inc, inc_se), "sampler": name, "estimator": estimator,
                             "paper_mse": PAPER_MSE.get(name, math.nan), "inc_source": source,
                             "inc_projection": sv.balanced_inc_projection(moments, edges)
                             if sampler == "balanced" else math.nan, "degree_bound": degree_cap,
                             "dp_at_degree_bound": dp_cap, "mse_at_degree_bound": inc + dp_cap})
    return [Output("umpc_samplers", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


def _run_summary(records: list[dict[str, float]], inc: float, inc_se: float) -> dict[str, Any]:
    """The measured errors of one sampler's runs beside the theory ``E_inc`` (``inc`` ± ``inc_se``) + ``E_DP``."""
    errs, dp, sizes, degrees = (np.asarray([r[key] for r in records]) for key in ("error", "dp", "size", "degree"))
    dp_theory = float(np.mean(dp))
    inc_measured, inc_measured_se, _ = summarize(r["noise_free"] for r in records)
    paired, paired_se, _ = summarize(errs ** 2 - inc - dp)
    combined = math.hypot(paired_se, inc_se) if math.isfinite(paired_se) else math.nan
    return {**error_summary(errs, 0.0), "mean_edges": float(np.mean(sizes)),
            "mean_max_degree": float(np.mean(degrees)), "inc_theory": inc, "inc_theory_se": inc_se,
            "inc_measured": inc_measured, "inc_measured_se": inc_measured_se, "dp_theory": dp_theory,
            "theory": inc + dp_theory, "theory_se": inc_se, "paired_diff": paired, "paired_diff_se": paired_se,
            "z": paired / combined if combined and combined > 0 else math.nan}


def ordering_holds(rows: Sequence[dict[str, Any]], bernoulli: str = "bernoulli") -> tuple[bool, bool]:
    """(Balanced < Uniform < Bernoulli by the means, and by more than 2 combined s.e. at each step), for the
    ``bernoulli`` row (realised ``|E|``) or the Horvitz-Thompson row."""
    by = {row["sampler"]: row for row in rows}
    chain = [by["balanced"], by["uniform"], by[bernoulli]]
    means = all(a["mse_mean"] < b["mse_mean"] for a, b in zip(chain, chain[1:]))
    significant = all(b["mse_mean"] - a["mse_mean"] > 2 * math.hypot(a["mse_se"], b["mse_se"])
                      for a, b in zip(chain, chain[1:]))
    return means, significant


def _plot(options: SamplerOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, axes = new_figure()
    x = np.arange(len(rows))
    axes.bar(x - 0.2, [row["mse_mean"] for row in rows], width=0.4, yerr=[row["mse_se"] for row in rows], capsize=4,
             color="tab:blue", label="measured MSE (\u00b11 s.e.)")
    axes.bar(x + 0.2, [row["inc_theory"] for row in rows], width=0.4, color="lightgray", edgecolor="k",
             label="theory: E_inc")
    axes.bar(x + 0.2, [row["dp_theory"] for row in rows], width=0.4, bottom=[row["inc_theory"] for row in rows],
             color="white", edgecolor="k", hatch="//", label="theory: + E_DP (realised max degree)")
    axes.axhline(rows[0]["lemma_d3_bound"], color="k", linestyle="--", label="Lemma D.3 bound")
    axes.axhline(rows[0]["lemma_d3_bound_coalition"], color="gray", linestyle=":",
                 label="Lemma D.3, DP term x m/(m-t)")
    axes.set_xticks(x, [row["sampler"] for row in rows])
    style_axes(axes, ylabel="MSE of the duplicate-pair ratio", log="", legend=None, fontsize=7,
               title=f"U-MPC duplicate-pair ratio (Sinh & Ramon Table 2): {options.data}, n = {rows[0]['n']},\n"
                     f"|E| = {rows[0]['edges']}, eps = {options.epsilon:g}, m = {options.parties}, "
                     f"t = {options.threshold}, {options.common.runs} runs")
    axes.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2)
    save_figure(figure, path)


def _report(options: SamplerOptions, outputs: Sequence[Output]) -> None:
    from dp.umpc.sampler_variance import dp_variance

    rows = outputs[0].rows
    table = [[row["sampler"], format_mean(row["mse_mean"], row["mse_se"]),
              format_mean(row["inc_measured"], row["inc_measured_se"]),
              format_mean(row["inc_theory"], row["inc_theory_se"] if row["inc_theory_se"] > 0 else math.nan),
              f"{row['dp_theory']:.3g}", f"{row['theory']:.3g}", f"{row['z']:+.2f}",
              format_mean(row["bias_mean"], row["bias_se"]), f"{row['mean_edges']:.0f}",
              f"{row['mean_max_degree']:.2f}", f"{row['paper_mse']:.2g}" if math.isfinite(row["paper_mse"]) else "-"]
             for row in rows]
    first = rows[0]
    print_rows("U-MPC duplicate-pair ratio by tuple sampler (Sinh & Ramon Table 2): MSE against the complete "
               "U-statistic, mean ± s.e. over runs (fresh E and noise each run), beside the exact decomposition "
               "E_inc + E_DP (App. D.1.2)",
               ["sampler", "MSE", "(U_E-U)^2 of runs", "E_inc (theory)", "E_DP (theory)", "theory", "z", "bias",
                "mean |E|", "mean max degree", "paper (Bank job)"], table,
               notes=[f"data: {DESCRIPTIONS[options.data]}; n = {first['n']}, exact ratio {first['exact_ratio']:.4f}",
                      f"|E| = {first['edges']} ("
                      + (f"{options.edges_fraction:g} C(n,2)" if options.edges_fraction is not None
                         else f"{options.edges_per_row:g} n")
                      + f"), epsilon {options.epsilon:g}, {options.parties} parties, coalition {options.threshold} "
                        f"(noise x m/(m-t) = {first['noise_factor']:.3g}), {options.common.runs} runs",
                      "E_inc: " + "; ".join(f"{row['sampler']}: {row['inc_source']}" for row in rows),
                      "E_DP = Var(eta | E)/(|E| scale)^2 at each run's realised max degree, mean over runs; "
                      "z = mean(err^2 - E_inc - E_DP(E)) / s.e. (paired over runs, + MC s.e. of E_inc)"])
    for name, estimator in (("bernoulli", "realised |E|"), (HT_ROW, "Horvitz-Thompson")):
        means, significant = ordering_holds(rows, name)
        print(f"  ordering Balanced < Uniform < Bernoulli ({estimator}): "
              f"{'holds' if means else 'does NOT hold'} by the means"
              f"{' (each step > 2 s.e.)' if significant else ' (not every step > 2 s.e.)'}")
    by_sampler = {row["sampler"]: row for row in rows}
    balanced, uniform, bernoulli = (by_sampler[name] for name in SAMPLERS)
    print(f"  BalancedSamp E_inc: Monte Carlo {balanced['inc_theory']:.3g} ± {balanced['inc_theory_se']:.2g}, "
          f"projection approximation {balanced['inc_projection']:.3g}, uniform (Claim D.1) "
          f"{uniform['inc_theory']:.3g}: balancing removes the share 2 Var h_1 / Var f = "
          f"{1 - balanced['inc_projection'] / uniform['inc_theory']:.1%} of the uniform E_inc")
    for row in rows:
        if row["sampler"] == "balanced":
            continue
        print(f"  what-if {row['sampler']}: noise calibrated to d* = {row['degree_bound']} (P(max degree > d*) <= "
              f"2^-40, not the drawn E) instead of the realised {row['mean_max_degree']:.1f}: E_DP "
              f"{row['dp_at_degree_bound']:.3g}, MSE {row['mse_at_degree_bound']:.3g} = "
              f"{row['mse_at_degree_bound'] / balanced['theory']:.2f} x balanced's theory {balanced['theory']:.3g}")
    # the smallest calibration degree d whose E_inc + E_DP(d) reaches the paper's ratio (None beyond n)
    target = PAPER_MSE["bernoulli"] / PAPER_MSE["balanced"] * balanced["theory"]
    degrees = range(1, bernoulli["n"])

    def reaches(d: int) -> bool:
        return target <= bernoulli["inc_theory"] + dp_variance(d, bernoulli["edges"], epsilon=options.epsilon,
                                                               parties=options.parties, threshold=options.threshold)
    found = bisect.bisect_left(degrees, True, key=reaches)
    needed = degrees[found] if found < len(degrees) else None
    print(f"  measured Bernoulli / Balanced = {bernoulli['mse_mean'] / balanced['mse_mean']:.2f} (theory "
          f"{bernoulli['theory'] / balanced['theory']:.2f}); paper {PAPER_MSE['bernoulli'] / PAPER_MSE['balanced']:.2f}"
          + (f", which here needs the Bernoulli noise calibrated to a degree of {needed} (realised max "
             f"{bernoulli['mean_max_degree']:.1f})" if needed else ", unreachable by the noise calibration alone"))
    print(f"  Lemma D.3 bound {first['lemma_d3_bound']:.3g} (with DP term x m/(m-t): "
          f"{first['lemma_d3_bound_coalition']:.3g}); balanced MSE / bound = "
          f"{balanced['mse_mean'] / first['lemma_d3_bound_coalition']:.3g}")


@dataclass(frozen=True)
class UmpcCheckSetting:
    """One ``--secure`` repetition of Pi_U-MPC: the query, all rows (kernel column order) and the public seed
    of the tuples (the run seed of the experiment's run 0 at that setting, so the very tuples it simulates)."""

    label: str
    query: Any
    values: np.ndarray
    tuple_seed: int


async def umpc_secure_checks(settings: Sequence[UmpcCheckSetting], seed: int) -> list[Any]:
    """``--secure``: Pi_U-MPC once per setting (:func:`dp.umpc.protocol.run_secure`, party ``i`` holding rows
    ``i, i+m, ...``, the runtime's ``m`` and ``t``, fixed per-party draws through ``noise_source``), beside the
    simulation of the same rows, tuples and draws; relation ``equal`` for the estimate and every opened noisy sum.
    Collective; the checks at party 0, ``[]`` elsewhere."""
    from mpyc.runtime import mpc

    from dp.umpc.protocol import plans_for, prepare_rows, run_secure, sample_for, simulate

    parties, threshold, pid = len(mpc.parties), int(mpc.threshold), int(mpc.pid)
    checks: list[Any] = []
    for index, setting in enumerate(settings):
        query = setting.query
        values = np.asarray(setting.values, dtype=float).reshape(setting.values.shape[0], -1)
        by_party = [values[i::parties] for i in range(parties)]
        tuples = sample_for(query, values.shape[0], setting.tuple_seed)
        plans = plans_for(query, tuples, values.shape[0], parties, threshold)
        every = party_draws(seed, index, parties, lambda g: [int(p.draw(g)) for p in plans], key=3)
        release = await run_secure(query, prepare_rows(query, by_party[pid]), seed=setting.tuple_seed,
                                   noise_source=lambda plan, output: every[pid][output])
        if release is None or pid != 0:
            continue
        noise = np.array([[draws[output] for draws in every] for output in range(len(plans))],
                         dtype=object)[None]  # (runs = 1, outputs, parties)
        simulation = simulate(query, by_party, threshold=threshold, seed=setting.tuple_seed, runs=1, noise=noise)
        label = f"U-MPC {setting.label}, |E|={len(tuples)}, m={parties}, t={threshold}"
        simulated_sums = simulation.sums + noise[0].sum(axis=1)
        names = ["estimate", *(f"noisy sum {output}" for output in range(len(plans)))]
        checks += equal_checks(label, dict(zip(names, [release.estimate, *release.noisy_sums])),
                               dict(zip(names, [simulation.estimates[0], *simulated_sums])), names)
    return checks


def secure_settings(options: SamplerOptions, seed: int) -> list[UmpcCheckSetting]:
    """The ``--secure`` repetitions: every sampler on the experiment's rows with run 0's tuple seed."""
    values, spec = _load(options)
    run_seed = int(run_seeds(seed, options.common.runs)[0])
    return [UmpcCheckSetting(f"duplicate ratio, {query.sampling}, eps={options.epsilon:g}", query,
                             values.reshape(-1, 1), run_seed)
            for query in _queries(options, spec, _edges(options, values.shape[0]))]


SWEEP = Sweep(module="umpc_samplers", doc=__doc__ or "", page="docs/papers/sinh_ramon.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=500, quick_runs=40,
              checks=lambda options, seed: umpc_secure_checks(secure_settings(options, seed), seed))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
