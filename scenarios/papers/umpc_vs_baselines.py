"""Sinh & Ramon, Fig. 1-2: Gini mean difference vs n, U-MPC against Bell's generic LDP and Ghazi et al.

Run: ``python -m scenarios.papers.umpc_vs_baselines [--quick]`` (``-M3 --secure``: one repetition of U-MPC's Gini
per n on the MPyC path, equal to the simulation).  Writes ``umpc_vs_baselines.csv`` and ``.png`` (communication,
MSE, per-party and server computation against n).  Findings beside ours: ``docs/papers/sinh_ramon.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, errorbars, format_mean, new_figure,
                                       noise_generator, print_rows, progress, run_seeds, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, add_coalition_options, check_coalition, error_summary, whole_list
from scenarios.papers.umpc_samplers import UmpcCheckSetting, lemma_d3_bound, umpc_runs, umpc_secure_checks
from secure.public_randomness import public_generator

__all__ = ["main", "parse_options", "BaselineOptions", "run_experiment", "exact_gini", "CSV_COLUMNS", "METHODS",
           "ELL"]

METHODS = ("U-MPC", "Bell LDP", "Ghazi", "GhaziSM")
#: the cost model (dp.umpc.costs.PROTOCOLS) of each method; U-MPC's M_Dis cost goes to ``comm_bits_dis``
COST_PROTOCOL = {"U-MPC": "U-MPC (M_HF)", "Bell LDP": "Bell", "Ghazi": "Ghazi", "GhaziSM": "GhaziSM"}
ELL = 40  # bits per element in the cost models (§6.1)
DEFAULT_SIZES = (500, 1000, 2000, 4000, 8000)
QUICK_SIZES = (200, 400)
DEFAULT_BINS = 256
QUICK_BINS = 64

CSV_COLUMNS = ("n", "method", "epsilon", "bins", "edges", "parties", "threshold", "runs", "mse_mean", "mse_se",
               "bias_mean", "bias_se", "lemma_d3_bound", "lemma_d3_bound_coalition", "ratio_to_umpc",
               "orders_of_magnitude", "exact_gini", "seed", "comm_bits", "comm_bits_dis", "party_ops", "server_ops",
               "total_ops", "kernel_counts", "exact_variance", "exact_mse")


@dataclass(frozen=True)
class BaselineOptions:
    sizes: tuple[int, ...]
    epsilon: float
    bins: int
    edges_per_row: float
    precision: int
    parties: int
    threshold: int
    common: CommonOptions
    kernel_counts: str = "paper"


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--sizes", help="numbers of values n (default 500,1000,2000,4000,8000; --quick 200,400)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget (default 1)")
    parser.add_argument("--ldp-bins", type=int, help="bins of the LDP baselines (default 256; --quick: 64)")
    parser.add_argument("--edges-per-row", type=float, default=2.0, help="|E| = round(F n) for U-MPC (default 2)")
    parser.add_argument("--precision", type=int, default=16, help="fractional bits of U-MPC's fixed point (default 16)")
    add_coalition_options(parser)
    parser.add_argument("--kernel-counts", default="paper",
                        help="paper (default) or implementation: U-MPC's Gini operations in the cost models")


def _resolve(args: Any, common: CommonOptions) -> BaselineOptions:
    sizes = whole_list(args.sizes, "--sizes") if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    bins = args.ldp_bins if args.ldp_bins is not None else (QUICK_BINS if args.quick else DEFAULT_BINS)
    if bins < 2:
        raise UsageError(f"--ldp-bins must be at least 2, got {bins}")
    if not 0 <= args.precision <= 30:
        raise UsageError(f"--precision must lie in [0, 30] bits, got {args.precision}")
    check_coalition(args.parties, args.coalition)
    from dp.umpc.costs import OPERATION_COUNTS

    if args.kernel_counts not in OPERATION_COUNTS:
        raise UsageError(f"--kernel-counts must be one of {', '.join(OPERATION_COUNTS)}, got '{args.kernel_counts}'")
    if min(sizes) < max(4, 2 * args.parties):
        raise UsageError(f"--sizes must be at least {max(4, 2 * args.parties)}, got {min(sizes)}")
    return BaselineOptions(sizes=sizes, epsilon=check_positive_number(args.epsilon, "--epsilon"), bins=bins,
                           edges_per_row=check_positive_number(args.edges_per_row, "--edges-per-row"),
                           precision=args.precision, parties=args.parties, threshold=args.coalition,
                           common=common, kernel_counts=args.kernel_counts)


def exact_gini(values: np.ndarray) -> float:
    """The complete U-statistic ``C(n,2)^-1 sum_{i<j} |x_i - x_j|`` in O(n log n)."""
    x = np.sort(np.asarray(values, dtype=float))
    n = x.shape[0]
    weights = 2.0 * np.arange(1, n + 1) - n - 1
    return float(2.0 * np.dot(weights, x) / (n * (n - 1)))


def fill_ratios(rows: list[dict[str, Any]], keys: Sequence[str]) -> None:
    """``ratio_to_umpc`` and ``orders_of_magnitude`` (log10) of every row, against U-MPC's MSE of its group."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    for group in groups.values():
        umpc = next(r for r in group if r["method"] == "U-MPC")["mse_mean"]
        for row in group:
            row["ratio_to_umpc"] = ratio = row["mse_mean"] / umpc if umpc > 0 else math.nan
            row["orders_of_magnitude"] = math.log10(ratio) if ratio > 0 else math.nan


def baseline_estimates(x: np.ndarray, kernel: Any, quantizer: Any, *, epsilon: float, runs: int,
                       noise: Sequence[np.random.Generator | None], bar: Any) -> dict[str, np.ndarray]:
    """``runs`` estimates of Bell's generic LDP, of Ghazi et al. and of Ghazi et al. in the shuffled model (same
    quantizer, averaged kernel matrix), from the three generators ``noise``."""
    from dp.baselines import ghazi, ghazi_shuffled
    from dp.bell import generic as ldp_generic

    out = {}
    simulators: tuple[tuple[str, Any], ...] = (("Bell LDP", ldp_generic.simulate), ("Ghazi", ghazi.simulate),
                                               ("GhaziSM", ghazi_shuffled.simulate))
    for (name, simulate), rng in zip(simulators, noise):
        extra = {} if name == "Bell LDP" else {"d": None}
        out[name] = np.asarray(simulate(x, kernel, quantizer=quantizer, epsilon=epsilon, kind="average", runs=runs,
                                        rng=rng, **extra))
        bar.update(runs)
    return out


def method_rows(estimates: Mapping[str, Any], reference: float, own: Mapping[str, Mapping[str, float]], *, n: int,
                edges: int, epsilon: float, t: int, counts: str = "paper", kernel: str = "gini",
                **fixed: Any) -> list[dict[str, Any]]:
    """A row per method of :data:`METHODS` with ``t`` LDP bins: ``fixed``, the MSE and bias of its runs'
    ``estimates`` about ``reference`` (:func:`error_summary`), ``edges`` (U-MPC's; 0 for the baselines), its ``own``
    columns (``nan`` where another method has them), its modelled costs (:func:`dp.umpc.costs.protocol_costs`,
    ``l =`` :data:`ELL`; ``comm_bits``: U-MPC's ``M_HF``, ``comm_bits_dis``: its ``M_Dis``, else nan) and ``nan``
    ratios until :func:`fill_ratios`."""
    from dp.umpc.costs import protocol_costs

    blank = {column: math.nan for columns in own.values() for column in columns}
    costs = protocol_costs(n, edges, epsilon=epsilon, t=t, bits=ELL, kernel=kernel, counts=counts)
    rows: list[dict[str, Any]] = []
    for method in METHODS:
        cost = costs[COST_PROTOCOL[method]]
        rows.append({**fixed, "n": n, "t": t, "epsilon": epsilon, "method": method,
                     "edges": edges if method == "U-MPC" else 0, **error_summary(estimates[method], reference),
                     **blank, **own.get(method, {}), "ratio_to_umpc": math.nan, "orders_of_magnitude": math.nan,
                     "comm_bits": cost.comm_bits,
                     "comm_bits_dis": costs["U-MPC (M_Dis)"].comm_bits if method == "U-MPC" else math.nan,
                     "party_ops": cost.party_ops, "server_ops": cost.server_ops, "total_ops": cost.total_ops})
    return rows


def _exact_mse(values: np.ndarray, exact: float, quantizer: Any, epsilon: float) -> dict[str, dict[str, float]]:
    """Ghazi's and GhaziSM's exact noise variance given the bins and their exact MSE against ``exact`` (averaged
    Gini matrix, exact factorization)."""
    from dp.baselines import ghazi, ghazi_shuffled
    from dp.bell.generic import quantized_ustatistic
    from dp.bell.quantize import gini_kernel, kernel_matrix

    bins = quantizer.quantize(values)
    fact = ghazi.factorize(kernel_matrix(gini_kernel, quantizer, kind="average"))
    local_variance = ghazi.variance(bins, fact, epsilon=epsilon)
    local_mean = quantized_ustatistic(values, quantizer, fact.matrix)
    params = ghazi_shuffled.prepare(gini_kernel, quantizer, kind="average")
    shuffled_variance = ghazi_shuffled.variance(bins, params, epsilon=epsilon)
    shuffled_mean = ghazi_shuffled.expected_estimate(bins, params)
    return {"Ghazi": {"exact_variance": local_variance, "exact_mse": local_variance + (local_mean - exact) ** 2},
            "GhaziSM": {"exact_variance": shuffled_variance,
                        "exact_mse": shuffled_variance + (shuffled_mean - exact) ** 2}}


def run_experiment(options: BaselineOptions, seed: int) -> list[Output]:
    """Every n and method ``--runs`` times; one summary row per pair (ratios filled in afterwards)."""
    from dp.bell.quantize import Quantizer, gini_kernel

    runs = options.common.runs
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=options.bins)
    factor = options.parties / (options.parties - options.threshold)
    seeds = run_seeds(seed, runs)
    rows: list[dict[str, Any]] = []
    with progress(len(options.sizes) * len(METHODS) * runs, "umpc_vs_baselines") as bar:
        for index, (n, values, edges, query) in enumerate(_settings(options, seed)):
            bar.set_postfix_str(f"n={n}")
            exact = exact_gini(values)
            umpc = np.asarray([result.estimates[0] for result in umpc_runs(
                query, values.reshape(-1, 1), seeds, parties=options.parties, threshold=options.threshold, seed=seed,
                setting=3 * index, os_noise=options.common.os_noise, bar=bar)])
            settings = (3 * index + 1, 3 * index + 2, 3 * len(options.sizes) + index)
            estimates = {"U-MPC": umpc, **baseline_estimates(
                values, gini_kernel, quantizer, epsilon=options.epsilon, runs=runs, bar=bar,
                noise=[noise_generator(seed, s, 0, os_noise=options.common.os_noise) for s in settings])}
            own = {**_exact_mse(values, exact, quantizer, options.epsilon),
                   "U-MPC": {"lemma_d3_bound": lemma_d3_bound(n=n, edges=edges, epsilon=options.epsilon),
                             "lemma_d3_bound_coalition": lemma_d3_bound(n=n, edges=edges, epsilon=options.epsilon,
                                                                        noise_factor=factor)}}
            rows += method_rows(estimates, exact, own, n=n, edges=edges, epsilon=options.epsilon, t=options.bins,
                                counts=options.kernel_counts, bins=options.bins, parties=options.parties,
                                threshold=options.threshold, exact_gini=exact, seed=seed,
                                kernel_counts=options.kernel_counts)
    fill_ratios(rows, ("n",))
    return [Output("umpc_vs_baselines", CSV_COLUMNS, rows, lambda rows, path: _plot(options, rows, path))]


#: curves of the cost panels: (label, method row, CSV column, marker, style)
_COST_CURVES = (("U-MPC (M_HF)", "U-MPC", "comm_bits", "o", "-"),
                ("U-MPC (M_Dis)", "U-MPC", "comm_bits_dis", "o", "--"),
                ("Bell", "Bell LDP", "comm_bits", "s", "-"), ("Ghazi", "Ghazi", "comm_bits", "D", "-"),
                ("GhaziSM", "GhaziSM", "comm_bits", "v", "-"))
#: one colour per protocol in every panel
COLORS = {"U-MPC": "tab:blue", "Bell LDP": "tab:orange", "Ghazi": "tab:green", "GhaziSM": "tab:red"}


def _cost_panel(axes: Any, rows: list[dict[str, Any]], column: str, label: str, title: str) -> None:
    """One cost panel against n; U-MPC's computation is the same under both threat models (one curve)."""
    for name, method, comm_column, marker, style in _COST_CURVES:
        if column != "comm_bits" and comm_column == "comm_bits_dis":
            continue
        mine = [row for row in rows if row["method"] == method]
        axes.plot([row["n"] for row in mine], [row[comm_column if column == "comm_bits" else column] for row in mine],
                  marker=marker, linestyle=style, color=COLORS[method],
                  label=name if column == "comm_bits" else name.split(" (")[0])
    axes.set_ylabel(label)
    axes.set_title(title, fontsize=8)


def _plot(options: BaselineOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, (comm, mse, party, server) = new_figure(12.0, 9.0, panels=(2, 2))
    _cost_panel(comm, rows, "comm_bits", "modelled online communication (bits)",
                "Fig. 1 left: total online communication")
    for method, marker in zip(METHODS, "osDv"):
        errorbars(mse, [row for row in rows if row["method"] == method], "n", "mse", marker=marker, label=method,
                  color=COLORS[method])
    mine = [row for row in rows if row["method"] == "U-MPC"]
    mse.plot([row["n"] for row in mine], [row["lemma_d3_bound_coalition"] for row in mine], "k--",
             label="Lemma D.3 bound (DP term x m/(m-t))")
    mse.set_ylabel("MSE of the Gini mean difference")
    for method in ("Ghazi", "GhaziSM"):
        mine = [row for row in rows if row["method"] == method]
        mse.plot([row["n"] for row in mine], [row["exact_mse"] for row in mine], linestyle=":",
                 color=COLORS[method], label=f"{method}: exact MSE given the bins")
    mse.set_title(f"Fig. 1 right: MSE ({options.common.runs} runs)", fontsize=8)
    _cost_panel(party, rows, "party_ops", "modelled per-party operations", "Fig. 2 left: per-party computation")
    _cost_panel(server, rows, "server_ops", "modelled server operations", "Fig. 2 right: server computation")
    for axes in (comm, mse, party, server):
        style_axes(axes, xlabel="n (parties, one value each)", legend=7)
    figure.suptitle(f"Gini mean difference, uniform [0,1] (Sinh & Ramon Fig. 1-2): eps = {options.epsilon:g}, "
                    f"t = {options.bins} bins, |E| = {options.edges_per_row:g} n, l = {ELL} bits, U-MPC kernel "
                    f"costed with {options.kernel_counts} operation counts", fontsize=9)
    save_figure(figure, path)


def _report(options: BaselineOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    table = []
    for row in rows:
        is_umpc = row["method"] == "U-MPC"
        table.append([str(row["n"]), row["method"], format_mean(row["mse_mean"], row["mse_se"]),
                      f"{row['lemma_d3_bound_coalition']:.3g}" if is_umpc else
                      ("-" if math.isnan(row["exact_mse"]) else f"{row['exact_mse']:.3g}"),
                      "-" if is_umpc else f"{row['ratio_to_umpc']:.3g}x",
                      "-" if is_umpc else f"{row['orders_of_magnitude']:.2f}"])
    print_rows("Gini mean difference on uniform [0,1] data (Sinh & Ramon Fig. 1, MSE): error against the exact "
               "U-statistic of the sample, mean ± s.e. over runs",
               ["n", "method", "MSE", "theory", "MSE / U-MPC", "log10 ratio"], table,
               notes=["theory: U-MPC Lemma D.3 bound (DP term x m/(m-t)); Ghazi and GhaziSM their exact MSE given "
                      "the bins (noise variance + squared bias of the quantized estimand)",
                      f"epsilon {options.epsilon:g}; LDP baselines: {options.bins} bins, averaged kernel matrix; "
                      f"U-MPC: |E| = {options.edges_per_row:g} n BalancedSamp, {options.parties} parties, coalition "
                      f"{options.threshold}, {options.precision} fractional bits"])
    for n in options.sizes:
        umpc = next(row for row in rows if row["n"] == n and row["method"] == "U-MPC")
        print(f"  n = {n}: U-MPC MSE {umpc['mse_mean']:.3g} vs Lemma D.3 {umpc['lemma_d3_bound']:.3g} "
              f"({umpc['lemma_d3_bound_coalition']:.3g} with m/(m-t)); "
              + "; ".join(f"{row['method']} {row['orders_of_magnitude']:.2f} orders of magnitude worse"
                          for row in rows if row["n"] == n and row["method"] in METHODS[1:]))
    costs = [[str(row["n"]), name, f"{row[comm_column]:.3g}", f"{row['party_ops']:.3g}", f"{row['server_ops']:.3g}",
              f"{row['total_ops']:.3g}"] for row in rows for name, method, comm_column, _, _ in _COST_CURVES
             if row["method"] == method]
    print_rows("Modelled online costs (Sinh & Ramon Fig. 1 left, Fig. 2; Table 1 / Lemma C.3 / App. D.2, constants 1)",
               ["n", "protocol", "comm bits", "per-party ops", "server ops", "total ops"], costs,
               notes=[f"l = {ELL} bits, t = {options.bins} bins, epsilon {options.epsilon:g}, |E| = "
                      f"{options.edges_per_row:g} n; U-MPC Gini kernel: {options.kernel_counts} operation counts; "
                      "M_HF: |Z| = 40 noise delegates; total ops = server + n x per-party"])


#: what the ``--secure`` check does not cover (printed under its table)
BASELINES_NOTE = ("--secure checks the U-MPC rows only: Bell LDP, Ghazi and GhaziSM are local-DP / shuffled-model "
                  "protocols of other papers, simulated as baselines, with no MPyC path here")


def _settings(options: BaselineOptions, seed: int) -> list[tuple[int, np.ndarray, int, Any]]:
    """Per size: ``n``, its public uniform values (drawn from ``seed`` + its index), ``|E|`` and U-MPC's Gini query
    (BalancedSamp)."""
    from dp.umpc.protocol import UStatQuery
    from secure.intake import ColumnSpec
    from secure.kernels import get_kernel

    kernel, spec = get_kernel("gini", precision=options.precision), ColumnSpec("x", 0.0, 1.0, options.precision)
    settings = []
    for index, n in enumerate(options.sizes):
        edges = max(1, int(round(options.edges_per_row * n)))
        query = UStatQuery(kernel=kernel, specs=(spec,), epsilon=options.epsilon, tuples=edges, sampling="balanced")
        settings.append((n, public_generator(seed + index).uniform(0.0, 1.0, size=n), edges, query))
    return settings


def secure_settings(options: BaselineOptions, seed: int) -> list[UmpcCheckSetting]:
    """The ``--secure`` repetitions: U-MPC's Gini at every n, on that n's data, with run 0's tuple seed."""
    run_seed = int(run_seeds(seed, options.common.runs)[0])
    return [UmpcCheckSetting(f"Gini, n={n}, eps={options.epsilon:g}", query, values.reshape(-1, 1), run_seed)
            for n, values, _, query in _settings(options, seed)]


SWEEP = Sweep(module="umpc_vs_baselines", doc=__doc__ or "", page="docs/papers/sinh_ramon.md", declare=_declare,
              resolve=_resolve, run=run_experiment, report=_report, runs=200, quick_runs=30, note=BASELINES_NOTE,
              checks=lambda options, seed: umpc_secure_checks(secure_settings(options, seed), seed))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
