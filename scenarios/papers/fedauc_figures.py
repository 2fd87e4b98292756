"""Sun et al. (FedAUC, label-DP AUC in vertical FL): Fig. 1, 4-6, 8, Tables 4-6 and the Gaussian rows.

Run: ``python -m scenarios.papers.fedauc_figures [--quick]`` (``-M3 --secure``: each method once in the paper's
deployment on real parties, no MPC: clients spread over the parties, reports to party 0 with mpc.transfer).
Party 0 writes one CSV and PNG per figure.  Method, data and findings beside ours: ``docs/papers/fedauc.md``."""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, new_figure, noise_generator, print_rows,
                                       progress, save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, axis
from scenarios.kit.sweep import framingham_scores as load_scores
from scenarios.papers.fedauc_tables import DeploymentSetting, deployment_checks, method_grid, simulated_row
from scenarios.papers.fedauc_tables import layout_rng as _layout_rng

__all__ = ["main", "parse_options", "FiguresOptions", "FIGURES", "STD_COLUMNS", "BETA_COLUMNS", "RR_COLUMNS",
           "FILES", "load_scores", "PAPER_TABLE5", "PAPER_TABLE6"]

FIGURES = ("alpha", "allocation", "beta", "rr_sizes", "gaussian")
DEFAULT_EPSILONS = (1.0, 2.0, 4.0, 8.0)
QUICK_EPSILONS = (1.0, 4.0)
DEFAULT_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
QUICK_FRACTIONS = (0.3, 0.5, 0.7)
RR_EPSILONS = (0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 10.0, math.inf)
QUICK_RR_EPSILONS = (1.0, 4.0, math.inf)  # two finite epsilons: a quick figure still draws a line
GAUSSIAN_CLIENTS = (10, 100, 1000, 0)     # 0: one row per client
QUICK_GAUSSIAN_CLIENTS = (10, 100)  # two client counts: a quick figure still draws lines
ALLOCATION_EPSILON = 1.0                  # Fig. 1c and 6
FIG5_EPSILON = 4.0                        # Fig. 5

#: base names (CSV and PNG) per figure choice.
FILES: dict[str, tuple[str, ...]] = {
    "alpha": ("fedauc_fig1b_alpha_iid", "fedauc_fig4_alpha_non_iid", "fedauc_fig5_alpha_eps4"),
    "allocation": ("fedauc_fig1c_allocation_non_iid", "fedauc_fig6_allocation_iid"),
    "beta": ("fedauc_fig8_beta",),
    "rr_sizes": ("fedauc_tables4_6",),
    "gaussian": ("fedauc_gaussian_rows",),
}

STD_COLUMNS = ("figure", "method", "allocation", "counts", "layout", "clients", "rows_per_client", "epsilon",
               "delta", "fraction_name", "fraction", "runs", "mean", "std", "predicted_std", "undefined_runs",
               "exact_auc", "seed")
BETA_COLUMNS = ("figure", "layout", "clients", "client", "size", "mean_rank", "spread", "beta_laplace",
                "beta_gaussian", "seed")
RR_COLUMNS = ("table", "set", "samples", "positives", "negatives", "epsilon", "flip_probability", "runs", "mean",
              "std", "predicted_std", "predicted_mean", "undefined_runs", "exact_auc", "sklearn_auc",
              "paper_samples", "paper_mean", "paper_std", "seed")

#: the paper's Table 4 (Criteo evaluation sets): (M, P, N).
PAPER_TABLE4 = {"small": (458_407, 117_317, 341_090), "large": (4_584_062, 1_173_981, 3_410_081)}
#: the paper's Table 5 (small Criteo set), epoch 1: epsilon -> (mean, std); ground truth 0.749383.
PAPER_TABLE5: dict[float, tuple[float, float]] = {
    0.1: (0.745667, 2.41e-2), 0.25: (0.749169, 8.69e-3), 0.5: (0.749206, 5.39e-3), 1.0: (0.749495, 2.11e-3),
    2.0: (0.749453, 9.43e-4), 3.0: (0.749295, 5.46e-4), 4.0: (0.749207, 3.75e-4), 5.0: (0.749399, 2.05e-4),
    10.0: (0.749383, 1.77e-5), math.inf: (0.749383, 0.0)}
#: the paper's Table 6 (large Criteo set), epoch 1; ground truth 0.750509.
PAPER_TABLE6: dict[float, tuple[float, float]] = {
    0.1: (0.751439, 7.52e-3), 0.25: (0.750405, 2.90e-3), 0.5: (0.750589, 1.32e-3), 1.0: (0.750345, 5.51e-4),
    2.0: (0.750482, 3.03e-4), 3.0: (0.750480, 1.53e-4), 4.0: (0.750509, 9.45e-5), 5.0: (0.750500, 5.87e-5),
    10.0: (0.750509, 5.37e-6), math.inf: (0.750509, 0.0)}


@dataclass(frozen=True)
class FiguresOptions:
    figures: tuple[str, ...]
    epsilons: tuple[float, ...]
    fractions: tuple[float, ...]
    clients: int
    beta_clients: int
    replicas: int
    delta: float
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--figures", default=",".join(FIGURES), help=f"some of {', '.join(FIGURES)} (default all)")
    parser.add_argument("--epsilon-grid", help="epsilons of the sweeps, Gaussian rows (default 1,2,4,8; --quick 1,4)")
    parser.add_argument("--fraction-grid", help="alpha / beta in (0, 1) (default 0.1..0.9; --quick 0.3,0.5,0.7)")
    parser.add_argument("--clients", type=int, default=5, help="clients of the alpha / allocation sweeps (default 5)")
    parser.add_argument("--beta-clients", type=int, default=100, help="clients of the beta histogram (default 100)")
    parser.add_argument("--replicas", type=int, default=10, help="size factor of Tables 4-6's large set (default 10)")
    parser.add_argument("--delta", type=float, default=1e-5, help="delta of the Gaussian rows (default 1e-5)")


def _resolve(args: Any, common: CommonOptions) -> FiguresOptions:
    if common.runs < 2:
        raise UsageError(f"--runs must be at least 2 (a standard deviation), got {common.runs}")
    figures = tuple(item.strip() for item in args.figures.split(",") if item.strip())
    unknown = [item for item in figures if item not in FIGURES]
    if not figures or unknown:
        raise UsageError(f"--figures must list some of {', '.join(FIGURES)}, got '{args.figures}'")
    epsilons = axis(args.epsilon_grid, "--epsilon-grid", default=DEFAULT_EPSILONS, quick=QUICK_EPSILONS,
                    is_quick=args.quick)
    fractions = axis(args.fraction_grid, "--fraction-grid", default=DEFAULT_FRACTIONS, quick=QUICK_FRACTIONS,
                     is_quick=args.quick)
    if max(fractions) >= 1.0:
        raise UsageError(f"--fraction-grid values must lie in (0, 1), got {max(fractions):g}")
    for option, value in (("--clients", args.clients), ("--beta-clients", args.beta_clients),
                          ("--replicas", args.replicas)):
        if value < 2:
            raise UsageError(f"{option} must be at least 2, got {value}")
    delta = check_positive_number(args.delta, "--delta")
    if delta >= 1.0:
        raise UsageError(f"--delta must lie in (0, 1), got {delta:g}")
    return FiguresOptions(figures=tuple(f for f in FIGURES if f in figures), epsilons=epsilons, fractions=fractions,
                          clients=int(args.clients), beta_clients=int(args.beta_clients),
                          replicas=int(args.replicas), delta=delta, common=common)


def _std_jobs(options: FiguresOptions) -> dict[str, list[dict[str, Any]]]:
    """The :func:`scenarios.papers.fedauc_tables.simulated_row` settings of the alpha, allocation and Gaussian
    figures, in run order (the Gaussian rows with their Laplace counterparts; ``clients`` 0: one row per client)."""
    gaussian = []
    for epsilon in options.epsilons[:1] if options.common.quick else options.epsilons:
        for clients in QUICK_GAUSSIAN_CLIENTS if options.common.quick else GAUSSIAN_CLIENTS:
            for noise in ("gaussian", "laplace"):
                gaussian += [dict(method=f"{family}_{noise}", counts=counts, epsilon=epsilon, clients=clients,
                                  layout=layout, fraction_name="" if family == "adaptive" else "alpha",
                                  allocation="adaptive" if family == "adaptive" else "naive")
                             for counts, family, layout in method_grid(clients)]
    allocation: list[dict[str, Any]] = []
    for layout in ("non_iid", "iid"):
        for fraction in options.fractions:
            allocation += [dict(method="local_laplace", layout=layout, fraction_name="alpha", fraction=fraction),
                           dict(method="orthogonal_laplace", layout=layout, fraction_name="beta", fraction=fraction,
                                allocation="orthogonal")]
        allocation.append(dict(method="adaptive_laplace", layout=layout, allocation="adaptive"))
    for job in allocation:
        job.update(epsilon=ALLOCATION_EPSILON, clients=options.clients)
    alpha = [dict(method="local_laplace", epsilon=epsilon, clients=options.clients, layout=layout,
                  fraction_name="alpha", fraction=fraction)
             for layout in ("iid", "non_iid") for epsilon in options.epsilons for fraction in options.fractions]
    for job in (*gaussian, *allocation, *alpha):  # alpha, or the shared beta of Orthogonal; recorded when swept
        fraction, method = job.pop("fraction", 0.5), job["method"]
        job.setdefault("allocation", "naive")
        job.setdefault("fraction_name", "")
        job.update(sum_fraction=1.0 - fraction if method.startswith("orthogonal") else fraction,
                   fraction=fraction if job["fraction_name"] else "",
                   delta=options.delta if method.endswith("_gaussian") else 0.0)
    return {"alpha": alpha, "allocation": allocation, "gaussian": gaussian}


def _beta_rows(options: FiguresOptions, seed: int, scores: np.ndarray, labels: np.ndarray,
               _: Callable[[], Any]) -> list[dict[str, Any]]:
    from dp.fedauc.mechanisms import adaptive_count_fraction
    from dp.fedauc.ranks import average_ranks, client_layout, local_statistics

    ranks = average_ranks(scores)
    rows = []
    for layout in ("iid", "non_iid"):
        client_of = client_layout(scores, clients=options.beta_clients, layout=layout, rng=_layout_rng(seed))
        stats = local_statistics(ranks, labels, client_of)
        laplace = adaptive_count_fraction(stats.mean_rank, stats.spread, mechanism="laplace")
        gaussian = adaptive_count_fraction(stats.mean_rank, stats.spread, mechanism="gaussian")
        for client in range(stats.clients):
            rows.append({"figure": "beta", "layout": layout, "clients": stats.clients, "client": client,
                         "size": int(stats.sizes[client]), "mean_rank": float(stats.mean_rank[client]),
                         "spread": float(stats.spread[client]), "beta_laplace": float(laplace[client]),
                         "beta_gaussian": float(gaussian[client]), "seed": seed})
    return rows


def _rr_rows(options: FiguresOptions, seed: int, scores: np.ndarray, labels: np.ndarray,
             noise: Callable[[], Any]) -> list[dict[str, Any]]:
    from sklearn.metrics import roc_auc_score

    from dp.fedauc.mechanisms import flip_probability

    epsilons = QUICK_RR_EPSILONS if options.common.quick else RR_EPSILONS
    sets = {"small": ("5", PAPER_TABLE5, scores, labels),  # large: every row --replicas times
            "large": ("6", PAPER_TABLE6, np.tile(scores, options.replicas), np.tile(labels, options.replicas))}
    rows = []
    for name, (table, paper, scores, labels) in sets.items():
        sklearn_auc = float(roc_auc_score(labels, scores))
        positives = int(labels.sum())
        for epsilon in epsilons:
            paper_mean, paper_std = paper.get(epsilon, (math.nan, math.nan))
            rows.append(simulated_row(scores, labels, seed, method="rr", epsilon=epsilon,
                                      runs=options.common.runs, noise_rng=noise()) | {
                "table": table, "set": name, "samples": int(scores.size), "positives": positives,
                "negatives": int(scores.size) - positives, "flip_probability": flip_probability(epsilon),
                "sklearn_auc": sklearn_auc, "paper_samples": PAPER_TABLE4[name][0], "paper_mean": paper_mean,
                "paper_std": paper_std, "seed": seed})
    return rows


def _run(options: FiguresOptions, seed: int) -> list[Output]:
    """Every chosen figure's rows (:data:`FIGURES`), one output per file of :data:`FILES`."""
    scores, labels = load_scores(seed)
    jobs = _std_jobs(options)
    rr_epsilons = QUICK_RR_EPSILONS if options.common.quick else RR_EPSILONS
    builders = {"beta": _beta_rows, "rr_sizes": _rr_rows}
    with progress(sum(len(jobs.get(figure, ())) for figure in options.figures)
                  + ("rr_sizes" in options.figures) * 2 * len(rr_epsilons), "fedauc_figures") as bar:
        bar.unit = "setting"
        settings = itertools.count()

        def noise() -> np.random.Generator | None:
            """The next setting's seeded noise stream (``--os-noise``: the OS), one tick of the bar."""
            bar.update(1)
            return noise_generator(seed, next(settings), 0, os_noise=options.common.os_noise)

        # in FIGURES order: the settings' noise streams follow it
        results = {figure: builders[figure](options, seed, scores, labels, noise) if figure in builders
                   else [simulated_row(scores, labels, seed, runs=options.common.runs, noise_rng=noise(),
                                       figure=figure, seed=seed, **job) for job in jobs[figure]]
                   for figure in options.figures}
    columns = {"beta": BETA_COLUMNS, "rr_sizes": RR_COLUMNS}
    return [Output(name, columns.get(figure, STD_COLUMNS), figure_rows(name, results[figure]),
                   lambda rows, path, plot=_PARTS[figure][0], name=name: plot(name, rows, path))  # type: ignore[misc]
            for figure in options.figures for name in FILES[figure]]


def figure_rows(name: str, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows of one output file (base name from :data:`FILES`) among its figure choice's rows."""
    if name == "fedauc_fig5_alpha_eps4":
        # Fig. 5's epsilon: 4 if swept, else the swept epsilon nearest to 4
        epsilon = min({row["epsilon"] for row in rows}, key=lambda e: (abs(math.log(e / FIG5_EPSILON)), e))
        return [row for row in rows if row["epsilon"] == epsilon]
    layout = next((layout for layout in ("non_iid", "iid") if name.endswith(f"_{layout}")), None)
    return [row for row in rows if layout is None or row["layout"] == layout]


def _best(rows: Sequence[dict[str, Any]], key: str) -> dict[str, Any]:
    return min(rows, key=lambda row: (row[key], row["fraction"]))


def _figure(columns: int) -> tuple[Any, list[Any]]:
    return new_figure(5.2 * columns, 4.2, panels=(1, columns))  # type: ignore[no-any-return]


def _sweep_lines(axis: Any, rows: Sequence[dict[str, Any]], key: str, label: Callable[[dict[str, Any]], str]) -> None:
    groups: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row[key], []).append(row)
    for value, chosen in groups.items():
        chosen = sorted(chosen, key=lambda row: row["fraction"])
        x = [row["fraction"] for row in chosen]
        line = axis.plot(x, [row["std"] for row in chosen], "o-", markersize=4, label=label(chosen[0]))
        axis.plot(x, [row["predicted_std"] for row in chosen], ":", color=line[0].get_color())


def _plot_sweep(name: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    """Fig. 1b, 4, 5 (alpha of LocalLaplace) or 1c, 6 (the allocation methods) against the swept fraction."""
    figure, (axis,) = _figure(1)
    first = rows[0]
    layout = first["layout"].replace("_", "-")
    if "allocation" in name:
        _sweep_lines(axis, [row for row in rows if row["allocation"] != "adaptive"], "allocation", lambda row:
                     "Naive (x = alpha)" if row["allocation"] == "naive" else "Orthogonal (x = shared beta)")
        for row in rows:
            if row["allocation"] == "adaptive":
                axis.axhline(row["std"], color="black", linestyle="--", label="Adaptive (own beta per client)")
                axis.axhline(row["predicted_std"], color="black", linestyle=":")
        xlabel = "alpha (Naive) or beta (Orthogonal)"
        title = (f"Fig. {'1c' if first['layout'] == 'non_iid' else '6'}: allocation methods, {layout}, epsilon = "
                 f"{first['epsilon']:g}\nK = {first['clients']} ({first['rows_per_client']:.0f} rows each), "
                 "Framingham (stand-in for Criteo)\nmarkers/dashed: Monte Carlo, dotted: closed form")
    else:
        five = name == "fedauc_fig5_alpha_eps4"
        _sweep_lines(axis, rows, "layout" if five else "epsilon",
                     lambda row: row["layout"].replace("_", "-").upper() if five else f"epsilon = {row['epsilon']:g}")
        xlabel = "alpha (share of epsilon on localSum)"
        title = (f"Fig. 5: IID vs non-IID, epsilon = {first['epsilon']:g}" if five
                 else f"Fig. {'1b' if first['layout'] == 'iid' else '4'}: {layout} layout")
        title += (f"\nLocalLaplace, noisy counts, K = {first['clients']} ({first['rows_per_client']:.0f} rows "
                  f"each)\nFramingham (stand-in for Criteo)\nmarkers: Monte Carlo ({first['runs']} runs), dotted: "
                  "closed form")
    style_axes(axis, xlabel=xlabel, ylabel="std of the AUC estimate", log="y", title=title, fontsize=8)
    save_figure(figure, path)


def _plot_beta(_: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    figure, axes = _figure(2)
    for axis, layout in zip(axes, ("iid", "non_iid")):
        chosen = [row["beta_laplace"] for row in rows if row["layout"] == layout]
        axis.hist(chosen, bins=np.linspace(0.0, 1.0, 41), color="tab:blue", edgecolor="white")
        axis.set_xlim(0.0, 1.0)
        style_axes(axis, xlabel="adaptive beta (share of epsilon on localP')", ylabel="clients", log="", legend=None,
                   title=f"Fig. 8 ({'a' if layout == 'iid' else 'b'}): {layout.replace('_', '-')}, "
                         f"K = {len(chosen)}, Laplace form")
    save_figure(figure, path)


def _plot_rr(_: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    figure, (axis,) = _figure(1)
    for name, colour in (("small", "tab:blue"), ("large", "tab:red")):
        chosen = [row for row in rows if row["set"] == name and math.isfinite(row["epsilon"])]
        x = [row["epsilon"] for row in chosen]
        axis.plot(x, [row["std"] for row in chosen], "o-", color=colour,
                  label=f"{name}: M = {chosen[0]['samples']}")
        axis.plot(x, [row["predicted_std"] for row in chosen], ":", color=colour)
        axis.plot(x, [row["paper_std"] for row in chosen], "x--", color=colour, alpha=0.5,
                  label=f"paper, Criteo {name}: M = {chosen[0]['paper_samples']}")
    style_axes(axis, xlabel="epsilon", ylabel="std of the debiased RR AUC", legend=7, fontsize=8,
               title="Fig. 1a / Tables 5-6: FedAUC_RR on two set sizes (large = small repeated)\n"
                     "Framingham (stand-in for Criteo)\no: Monte Carlo, dotted: closed form, x: the paper")
    save_figure(figure, path)


def _plot_gaussian(_: str, rows: Sequence[dict[str, Any]], path: str) -> None:
    epsilons = sorted({row["epsilon"] for row in rows})
    figure, axes = _figure(len(epsilons))
    series = [("global", "iid"), ("local", "iid"), ("local", "non_iid"), ("adaptive", "iid"), ("adaptive", "non_iid")]
    # colour: the method and layout; marker and line: the noise; fill: noisy counts (Tables 1/7, filled) or exact
    # counts (Table 2, open; the adaptive split has no exact-count form)
    looks = {("noisy", "gaussian"): ("-", "o", "full"), ("noisy", "laplace"): ("--", "s", "full"),
             ("exact", "gaussian"): ("-.", "o", "none"), ("exact", "laplace"): (":", "s", "none")}
    delta = next((row["delta"] for row in rows if row["delta"]), None)
    for axis, epsilon in zip(axes, epsilons):
        for colour, (family, layout) in enumerate(series):
            for (counts, noise), (line, marker, fill) in looks.items():
                chosen = sorted([row for row in rows if row["epsilon"] == epsilon and row["counts"] == counts
                                 and row["method"] == f"{family}_{noise}"
                                 and (row["layout"] in (layout, "one_per_client"))], key=lambda row: row["clients"])
                if not chosen:
                    continue
                axis.plot([row["clients"] for row in chosen], [row["std"] for row in chosen], linestyle=line,
                          marker=marker, fillstyle=fill, markersize=4, color=f"C{colour}",
                          label=f"{family} {layout.replace('_', '-')} {noise}, {counts}")
        style_axes(axis, xlabel="clients K (rightmost: one row each)", ylabel="std of the AUC estimate", legend=None,
                   title=f"Gaussian vs Laplace rows, epsilon = {epsilon:g}, delta = {delta if delta else '-'}\n"
                         "filled: noisy counts (Tables 1/7), open: exact counts (Table 2)", fontsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    columns = 2 * len(epsilons)  # about two legend columns fit under each panel
    figure.legend(handles, labels, loc="outside lower center", fontsize=6, handlelength=4.0, ncol=columns)
    figure.set_figheight(figure.get_figheight() + 0.3 + 0.14 * math.ceil(len(labels) / columns))  # legend room
    save_figure(figure, path)


def _report_alpha(rows: Sequence[dict[str, Any]]) -> None:
    table = []
    for layout in ("iid", "non_iid"):
        for epsilon in sorted({row["epsilon"] for row in rows}):
            chosen = [row for row in rows if row["layout"] == layout and row["epsilon"] == epsilon]
            measured, predicted = _best(chosen, "std"), _best(chosen, "predicted_std")
            half = next((row for row in chosen if row["fraction"] == 0.5), None)
            table.append([layout, f"{epsilon:g}", f"{measured['fraction']:g}", f"{predicted['fraction']:g}",
                          f"{measured['std']:.2e}", f"{predicted['predicted_std']:.2e}",
                          f"{half['std']:.2e}" if half else "-"])
    first = rows[0]
    print_rows("\nFig. 1b / 4 / 5: best alpha (LocalLaplace, noisy counts)",
               ["layout", "epsilon", "best alpha (MC)", "best alpha (closed form)", "MC std at best",
                "closed form at best", "MC std at 0.5"], table,
               notes=[f"K = {first['clients']} clients, {first['rows_per_client']:.0f} rows each; "
                      "paper: K = 1,000 clients, 458 rows each, Criteo"])


def _report_allocation(rows: Sequence[dict[str, Any]]) -> None:
    table = []
    for layout in ("non_iid", "iid"):
        chosen = [row for row in rows if row["layout"] == layout]
        naive = _best([row for row in chosen if row["allocation"] == "naive"], "std")
        orthogonal = _best([row for row in chosen if row["allocation"] == "orthogonal"], "std")
        adaptive = next(row for row in chosen if row["allocation"] == "adaptive")
        table.append([f"Fig. {'1c' if layout == 'non_iid' else '6'} {layout}",
                      f"{naive['std']:.2e} (alpha {naive['fraction']:g})",
                      f"{orthogonal['std']:.2e} (beta {orthogonal['fraction']:g})",
                      f"{adaptive['std']:.2e} ({adaptive['predicted_std']:.2e})",
                      f"{naive['std'] / orthogonal['std']:.2f}", f"{orthogonal['std'] / adaptive['std']:.2f}"])
    print_rows(f"\nFig. 1c / 6: allocation methods at epsilon = {ALLOCATION_EPSILON:g} (best of each sweep, MC)",
               ["figure", "Naive", "Orthogonal", "Adaptive (closed form)", "Naive/Orth.", "Orth./Adaptive"], table,
               notes=["ratios > 1 agree with the paper (Orthogonal below Naive, Adaptive the smallest)"])


def _report_beta(rows: Sequence[dict[str, Any]]) -> None:
    table = []
    for layout in ("iid", "non_iid"):
        beta = np.array([row["beta_laplace"] for row in rows if row["layout"] == layout])
        quantiles = np.quantile(beta, [0.0, 0.1, 0.5, 0.9, 1.0])
        table.append([layout, str(beta.size), f"{beta.mean():.3f}", *(f"{q:.3f}" for q in quantiles)])
    print_rows("\nFig. 8: the clients' adaptive beta (Laplace form)",
               ["layout", "clients", "mean", "min", "10 %", "median", "90 %", "max"], table)


def format_spread(std: float) -> str:
    """``std`` as printed next to a mean: ``0`` when the runs do not vary (every run exact, e.g. epsilon = inf:
    :attr:`dp.fedauc.montecarlo.FedAucSimulation.std` is then exactly 0), else three significant digits."""
    return "0" if std == 0 else f"{std:.2e}"


def _report_rr(rows: Sequence[dict[str, Any]]) -> None:
    table = [[row["set"], f"{row['epsilon']:g}", f"{row['flip_probability']:.2%}",
              f"{row['mean']:.6f} ± {format_spread(row['std'])}", f"{row['predicted_std']:.2e}",
              f"{row['paper_mean']:.6f} ± {row['paper_std']:.2e}"] for row in rows]
    small, large = ([r for r in rows if r["set"] == name] for name in ("small", "large"))
    first_small, first_large = small[0], large[0]
    ratios = []
    for s_row in small:
        l_row = next((r for r in large if r["epsilon"] == s_row["epsilon"]), None)
        if l_row is not None and math.isfinite(s_row["epsilon"]) and l_row["std"] > 0 and s_row["paper_std"] > 0:
            ratios.append(f"eps {s_row['epsilon']:g}: ours {s_row['std'] / l_row['std']:.2f}, "
                          f"paper {s_row['paper_std'] / l_row['paper_std']:.2f}")
    print_rows("\nTables 4-6 / Fig. 1a: FedAUC_RR (debiased) mean ± std over the runs",
               ["set", "epsilon", "rho", "ours", "closed form std", "paper (Criteo, epoch 1)"], table,
               notes=[f"Table 4, ours: small M = {first_small['samples']} (P = {first_small['positives']}, N = "
                      f"{first_small['negatives']}), large M = {first_large['samples']} (every row "
                      f"{first_large['samples'] // first_small['samples']} times); paper: small M = 458,407 "
                      f"(P = 117,317), large M = 4,584,062 (P = 1,173,981)",
                      f"ground truth, ours: eq. (1) {first_small['exact_auc']:.6f}, scikit-learn "
                      f"{first_small['sklearn_auc']:.6f} (large: {first_large['sklearn_auc']:.6f}); paper 0.749383 "
                      f"/ 0.750509",
                      "std small / large (sqrt(10) = 3.16): " + ("; ".join(ratios) if ratios else "-"),
                      *_rr_caveats(small)])


def _rr_caveats(small: Sequence[dict[str, Any]]) -> list[str]:
    """The caveats of the RR rows on the small set: small epsilon makes the debiased ratio heavy-tailed; an epsilon
    with fewer than one expected flip per run (``M rho < 1``) leaves the std of the actual runs rough."""
    lines = ["small epsilon on the small set: 1 - 2 rho near 0 makes the debiased ratio heavy-tailed (closed form "
             "is first order)"]
    for row in small:
        flips = row["samples"] * row["flip_probability"]
        if 0 < flips < 1:
            lines.append(f"epsilon = {row['epsilon']:g}: M rho = {flips:.2g} < 1 flip per run, the std of "
                         f"{row['runs']} runs is rough")
    return lines


def _report_gaussian(rows: Sequence[dict[str, Any]]) -> None:
    table = []
    for row in rows:
        if not row["method"].endswith("_gaussian"):
            continue
        twin = next((r for r in rows if r["method"] == row["method"].replace("_gaussian", "_laplace")
                     and all(r[k] == row[k] for k in ("counts", "epsilon", "clients", "layout"))), None)
        table.append([row["counts"], f"{row['epsilon']:g}", str(row["clients"]), row["layout"],
                      row["method"].replace("_gaussian", ""), f"{row['std']:.2e} ({row['predicted_std']:.2e})",
                      f"{twin['std']:.2e}" if twin else "-",
                      f"{row['std'] / twin['std']:.2f}" if twin and twin["std"] > 0 else "-",
                      str(row["undefined_runs"])])
    print_rows(f"\nGaussian rows of Tables 1/7 (noisy counts) and 2 (exact counts), delta = {rows[0]['delta']:g}",
               ["counts", "epsilon", "K", "layout", "method", "Gaussian MC (closed form)", "Laplace MC",
                "Gauss./Lap.", "undefined"], table)


def _report(options: FiguresOptions, outputs: Sequence[Output]) -> None:
    print("FedAUC (Sun et al.): figures and Tables 4-6 on Framingham logistic-regression scores "
          "(stand-in for the paper's Criteo)")
    for figure in options.figures:  # the first two files of a figure hold all its rows (FILES)
        _PARTS[figure][1]([row for output in outputs if output.name in FILES[figure][:2] for row in output.rows])
    print()


def deployment_settings(options: FiguresOptions) -> list[Any]:
    """The settings the ``--secure`` check runs once each (``docs/papers/fedauc.md``)."""
    epsilon, fraction, clients = options.epsilons[0], options.fractions[0], options.clients
    settings = [DeploymentSetting("local_laplace", epsilon, clients, "iid", fraction),
                DeploymentSetting("orthogonal_laplace", epsilon, clients, "non_iid", 1.0 - fraction),
                DeploymentSetting("adaptive_laplace", epsilon, clients, "non_iid")]
    if "rr_sizes" in options.figures:
        settings.append(DeploymentSetting("rr", epsilon))
    if "gaussian" in options.figures:
        settings += [DeploymentSetting(f"{family}_gaussian", epsilon, clients, "iid", delta=options.delta)
                     for family in ("global", "local", "adaptive")]
    return settings


#: per figure choice: its plot ``(name, rows, path)`` and its report ``(rows)``
_PARTS: dict[str, tuple[Callable[[str, Any, str], None], Callable[[Any], None]]] = {
    "alpha": (_plot_sweep, _report_alpha), "allocation": (_plot_sweep, _report_allocation),
    "beta": (_plot_beta, _report_beta), "rr_sizes": (_plot_rr, _report_rr),
    "gaussian": (_plot_gaussian, _report_gaussian)}


SWEEP = Sweep(module="fedauc_figures", doc=__doc__ or "", page="docs/papers/fedauc.md", declare=_declare,
              resolve=_resolve, run=_run, report=_report, runs=100, quick_runs=20,
              checks=lambda options, seed: deployment_checks(deployment_settings(options), seed))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
