"""Sinh & Ramon, Fig. 3-6: U-MPC vs Bell's generic LDP and Ghazi, Kendall's tau against the bins t (Framingham)
and the UCI Heart Disease statistics against n.

Run: ``python -m scenarios.papers.umpc_bins_and_uci --figure bins|uci [--quick]`` (``-M3 --secure``: one U-MPC
repetition per epsilon or per statistic and n on the MPyC path, equal to the simulation).  Writes
``umpc_<figure>.csv`` / ``.png``.  Findings beside ours: ``docs/papers/sinh_ramon.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.experiments import (CommonOptions, check_positive_number, errorbars, format_mean, new_figure,
                                       noise_generator, parse_positive_list, print_rows, progress, run_seeds,
                                       save_figure, style_axes)
from scenarios.kit.sweep import Output, Sweep, whole_list
from scenarios.kit.sweep import complete_rows as _complete
from scenarios.papers.umpc_samplers import UmpcCheckSetting, umpc_runs, umpc_secure_checks
from scenarios.papers.umpc_vs_baselines import (COLORS, COST_PROTOCOL, ELL, METHODS, baseline_estimates,
                                                fill_ratios, method_rows)
from secure.public_randomness import public_generator

__all__ = ["main", "parse_options", "BinsOptions", "run_figure", "exact_ustat", "grid_shape",
           "CSV_COLUMNS", "METHODS", "COST_PROTOCOL"]

FIGURES = ("bins", "uci")
DEFAULT_GRID = (4, 8, 16, 32, 64)
QUICK_GRID = (4, 64)
DEFAULT_EPSILONS = (0.1, 1.0)
DEFAULT_SIZES = (100, 200, 400, 0)   # 0: all complete rows
QUICK_SIZES = (100, 200)
UCI_BINS = 64
UCI_EPSILON = 1.0
PARTIES = 3       # simulated parties holding the rows (U-MPC)
COALITION = 1     # coalition the U-MPC noise is calibrated for

MARKERS = {"U-MPC": "o", "Bell LDP": "s", "Ghazi": "D", "GhaziSM": "v"}
#: line style and marker fill of the k-th epsilon (bins) or statistic (UCI): one colour and marker per method, the
#: fill tells the series apart in the legend (an errorbar's legend handle hardly shows a dash)
SERIES_STYLES = (("-", "full"), ("--", "none"), (":", "left"), ("-.", "bottom"))
#: length of the legend handles (in font sizes): long enough to show a dashed or dotted line
LEGEND_HANDLE_LENGTH = 4.0

CSV_COLUMNS = ("figure", "statistic", "n", "t", "grid", "epsilon", "method", "edges", "runs", "mse_mean",
               "mse_se", "bias_mean", "bias_se", "exact", "comm_bits", "comm_bits_dis", "compute_ops",
               "ratio_to_umpc", "orders_of_magnitude", "seed", "party_ops", "server_ops")


@dataclass(frozen=True)
class BinsOptions:
    figure: str
    grid: tuple[int, ...]
    epsilons: tuple[float, ...]
    pair: tuple[str, str]
    sizes: tuple[int, ...]
    edges_per_row: float
    common: CommonOptions


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--figure", default="bins", help="bins or uci: which experiment (default bins)")
    parser.add_argument("--grid", help="bins t, powers of two from 4 (bins; default 4,8,16,32,64; --quick: 4,64)")
    parser.add_argument("--epsilon-grid", help="privacy budgets (bins; default 0.1,1)")
    parser.add_argument("--pair", default="sysBP,diaBP", help="Framingham columns of the bins figure (default "
                                                              "sysBP,diaBP)")
    parser.add_argument("--sizes", help="subsample sizes (uci; default 100,200,400,all; --quick: 100,200); a size "
                                        "above the complete rows of a statistic is capped to them")
    parser.add_argument("--edges-per-row", type=float, default=2.0, help="|E| = round(F n) for U-MPC (default 2)")


def _resolve(args: Any, common: CommonOptions) -> BinsOptions:
    if args.figure not in FIGURES:
        raise UsageError(f"--figure must be one of {', '.join(FIGURES)}, got '{args.figure}'")
    grid = whole_list(args.grid, "--grid") if args.grid else (QUICK_GRID if args.quick else DEFAULT_GRID)
    if min(grid) < 4:
        raise UsageError(f"--grid values must be at least 4 (2 bins per axis), got {min(grid)}")
    uneven = [t for t in grid if t & (t - 1)]
    if uneven:
        raise UsageError(f"--grid values must be powers of two (a t_x x t_y grid of exactly t cells, as the paper's "
                         f"t = 4, 8, ..., 64), got {uneven[0]}")
    epsilons = (parse_positive_list(args.epsilon_grid, "--epsilon-grid") if args.epsilon_grid
                else DEFAULT_EPSILONS)
    pair = tuple(c.strip() for c in args.pair.split(","))
    from scenarios.kit.datasets import declared_domains

    known = declared_domains("framingham")
    if len(pair) != 2 or any(c not in known for c in pair):
        raise UsageError(f"--pair must name two Framingham columns, got '{args.pair}'")
    sizes = whole_list(args.sizes, "--sizes") if args.sizes else (QUICK_SIZES if args.quick else DEFAULT_SIZES)
    if min(sizes) < 2 * PARTIES and min(sizes) != 0:
        raise UsageError(f"--sizes must be at least {2 * PARTIES}, got {min(sizes)}")
    return BinsOptions(figure=args.figure, grid=grid, epsilons=tuple(float(e) for e in epsilons),
                       pair=(pair[0], pair[1]), sizes=sizes,
                       edges_per_row=check_positive_number(args.edges_per_row, "--edges-per-row"), common=common)


def grid_shape(t: int) -> tuple[int, int]:
    """``(t_x, t_y)`` with ``t_x = 2^floor(log2(t)/2)`` and ``t_y = ceil(t / t_x)`` (t cells for powers of 2)."""
    tx = 2 ** (int(math.log2(t)) // 2)
    return tx, max(2, math.ceil(t / tx))


def exact_ustat(values: np.ndarray, kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> float:
    """The complete degree-2 U-statistic ``C(n,2)^-1 sum_{i<j} f(x_i, x_j)`` (O(n^2), row by row)."""
    x = np.asarray(values, dtype=float)
    n = x.shape[0]
    total = 0.0
    for i in range(n - 1):
        rest = x[i + 1:]
        total += float(np.sum(kernel(np.broadcast_to(x[i], rest.shape), rest)))
    return total / (n * (n - 1) / 2)


@dataclass(frozen=True)
class _Statistic:
    """One statistic (``kendall`` or ``duplicate``) on the ``columns`` of one dataset."""

    name: str
    dataset: str
    columns: tuple[str, ...]

    def specs(self) -> tuple[Any, ...]:
        from scenarios.kit.datasets import declared_specs

        specs = declared_specs(self.dataset, self.columns)
        return tuple(specs[c] for c in self.columns)

    def ldp_kernel(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        from dp.bell.quantize import collision_kernel, kendall_kernel

        return kendall_kernel if self.name == "kendall" else collision_kernel

    def quantizer(self, t: int) -> tuple[Any, str, int]:
        """LDP quantizer, its description and the t it is costed with."""
        from dp.bell.quantize import Quantizer

        specs = self.specs()
        if self.name == "duplicate":
            levels = [float(v) for v in range(int(specs[0].lower), int(specs[0].upper) + 1)]
            return Quantizer.levels(levels), f"{len(levels)} levels", len(levels)
        tx, ty = grid_shape(t)
        quantizer = Quantizer.grid(lower=[s.lower for s in specs], upper=[s.upper for s in specs], bins=[tx, ty])
        return quantizer, f"{tx}x{ty}", tx * ty

    def shape(self, values: np.ndarray) -> np.ndarray:
        """The rows as the LDP baselines take them (one column: a vector)."""
        return values if self.name == "kendall" else values[:, 0]

    def query(self, epsilon: float, edges: int) -> Any:
        """U-MPC's query: BalancedSamp of ``edges`` tuples, the kernel at the columns' precision."""
        from dp.umpc.protocol import UStatQuery
        from secure.kernels import get_kernel

        specs = self.specs()
        return UStatQuery(kernel=get_kernel(self.name, precision=max(s.precision for s in specs)), specs=specs,
                          epsilon=epsilon, tuples=edges, sampling="balanced")


UCI_STATISTICS = (_Statistic("kendall", "heart_disease_uci", ("trestbps", "chol")),
                  _Statistic("duplicate", "heart_disease_uci", ("num",)))


@dataclass(frozen=True)
class _Setting:
    """One U-MPC setting of a figure: the statistic, its rows and epsilon, ``|E|``, and the setting number that
    offsets the public seed of the tuples and the noise streams (the LDP baselines at t index ``g``: ``+ g + 1``)."""

    stat: _Statistic
    values: np.ndarray
    epsilon: float
    edges: int
    number: int
    label: str


def _settings(options: BinsOptions, seed: int) -> list[_Setting]:
    """The bins figure: Kendall on Framingham at every epsilon; the UCI figure: every statistic at every distinct n
    of ``--sizes``, its rows a uniform subsample drawn from the public seed offset by the setting number."""
    def edges(n: int) -> int:
        return max(1, int(round(options.edges_per_row * n)))

    if options.figure == "bins":
        stat = _Statistic("kendall", "framingham", options.pair)
        values = _complete("framingham", options.pair)
        return [_Setting(stat, values, epsilon, edges(values.shape[0]), 100 * e,
                         f"kendall {','.join(options.pair)}, eps={epsilon:g}")
                for e, epsilon in enumerate(options.epsilons)]
    settings = []
    for s, stat in enumerate(UCI_STATISTICS):
        data = _complete(stat.dataset, stat.columns)
        rows = data.shape[0]  # a size of 0 or above the complete rows: all of them
        for index, n in enumerate(sorted({min(size, rows) if size else rows for size in options.sizes})):
            number = 1000 * (s + 1) + 10 * index
            pick = public_generator(seed + number).choice(rows, size=n, replace=False)  # uniform, kept in data order
            settings.append(_Setting(stat, data[np.sort(pick)], UCI_EPSILON, edges(n), number,
                                     f"{stat.name} {','.join(stat.columns)}, n={n}, eps={UCI_EPSILON:g}"))
    return settings


def run_figure(options: BinsOptions, seed: int) -> list[Output]:
    """Every setting's U-MPC runs (fresh tuples from a per-run public seed, fresh noise) and, at every t of the
    bins figure (t = 64 for UCI), Bell's generic LDP, Ghazi et al. and GhaziSM (:func:`baseline_estimates`)."""
    bins = options.figure == "bins"
    grid = options.grid if bins else (UCI_BINS,)
    runs, os_noise = options.common.runs, options.common.os_noise
    settings = _settings(options, seed)
    rows: list[dict[str, Any]] = []
    with progress(len(settings) * runs * (1 + 3 * len(grid)), f"umpc_{options.figure}") as bar:
        for setting in settings:
            stat, values, epsilon, edges, number = (setting.stat, setting.values, setting.epsilon, setting.edges,
                                                    setting.number)
            n = values.shape[0]
            bar.set_postfix_str(f"eps={epsilon:g}" if bins else f"{stat.name} n={n}")
            exact = exact_ustat(stat.shape(values), stat.ldp_kernel())
            umpc = np.asarray([result.estimates[0] for result in umpc_runs(
                stat.query(epsilon, edges), values, run_seeds(seed + number, runs), parties=PARTIES,
                threshold=COALITION, seed=seed, setting=number, os_noise=os_noise, bar=bar)])
            for g, t in enumerate(grid):
                quantizer, description, cost_t = stat.quantizer(t)
                noise = [noise_generator(seed, number + g + 1, k, os_noise=os_noise) for k in (1, 2, 3)]
                estimates = {"U-MPC": umpc, **baseline_estimates(stat.shape(values), stat.ldp_kernel(), quantizer,
                                                                 epsilon=epsilon, runs=runs, bar=bar, noise=noise)}
                # Fig. 3 right: compute_ops = server + n x party
                rows += [{**row, "compute_ops": row["total_ops"]} for row in method_rows(
                    estimates, exact, {}, n=n, edges=edges, epsilon=epsilon, t=cost_t, kernel=stat.name,
                    figure=options.figure, statistic=stat.name, grid=description, exact=exact, seed=seed)]
    fill_ratios(rows, ("t", "epsilon") if bins else ("statistic", "n"))
    plot = _plot_bins if bins else _plot_uci
    return [Output(f"umpc_{options.figure}", CSV_COLUMNS, rows, lambda rows, path: plot(options, rows, path))]


def _errorbar(axes: Any, rows: list[dict[str, Any]], x: str, label: str, method: str, style: str, fill: str) -> None:
    errorbars(axes, rows, x, "mse", marker=MARKERS[method], linestyle=style, label=label, color=COLORS[method],
              fillstyle=fill)


def _cost_curves(axes: Any, rows: list[dict[str, Any]], x: str, column: str, *, label_suffix: str = "",
                 style: str = "-", fill: str = "full", dis: bool = False) -> None:
    """Every costed method's ``column`` against ``x`` (and U-MPC's ``M_Dis`` communication if ``dis``)."""
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        name = f"{method} (M_HF)" if method == "U-MPC" and column == "comm_bits" else method
        axes.plot([r[x] for r in mine], [r[column] for r in mine], marker=MARKERS[method], linestyle=style,
                  color=COLORS[method], fillstyle=fill, label=name + label_suffix)
        if dis and method == "U-MPC":
            axes.plot([r[x] for r in mine], [r["comm_bits_dis"] for r in mine], marker="o", linestyle=":",
                      color=COLORS[method], fillstyle="none", label="U-MPC (M_Dis)" + label_suffix)


def _plot_bins(options: BinsOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, (comm, compute, mse, tradeoff) = new_figure(12.0, 9.6, panels=(2, 2))
    for e, (epsilon, (style, fill)) in enumerate(zip(options.epsilons, SERIES_STYLES)):
        mine = [r for r in rows if r["epsilon"] == epsilon]
        for axes, column in ((comm, "comm_bits"), (compute, "compute_ops")):
            if e == 0:  # U-MPC's and Bell's costs do not depend on epsilon: drawn once
                _cost_curves(axes, [r for r in mine if r["method"] in ("U-MPC", "Bell LDP")], "t", column,
                             dis=column == "comm_bits")
            _cost_curves(axes, [r for r in mine if r["method"] in ("Ghazi", "GhaziSM")], "t", column,
                         label_suffix=f" eps={epsilon:g}", style=style, fill=fill)
        for method in METHODS:
            rows_of = [r for r in mine if r["method"] == method]
            _errorbar(mse, rows_of, "t", f"{method} eps={epsilon:g}", method, style, fill)
            # Fig. 4 right: one point per t (U-MPC's cost and MSE do not depend on t: one point)
            _errorbar(tradeoff, rows_of[:1] if method == "U-MPC" else rows_of, "comm_bits",
                      f"{method} eps={epsilon:g}", method, style, fill)
    n = rows[0]["n"]
    for axes, ylabel, title in (
            (comm, "modelled online communication (bits)", "Fig. 3 left: total online communication"),
            (compute, "modelled total computation (server + n x party ops)", "Fig. 3 right: total online computation"),
            (mse, "MSE of Kendall's tau-a", "Fig. 4 left: MSE against the bins t"),
            (tradeoff, "MSE of Kendall's tau-a", "Fig. 4 right: MSE against communication (a point per t)")):
        style_axes(axes, xlabel="modelled online communication (bits; U-MPC: M_HF)" if axes is tradeoff else
                   "t (LDP bins, t_x x t_y grid)", ylabel=ylabel, title=title, fontsize=8, legend=6,
                   base=10 if axes is tradeoff else 2, handlelength=LEGEND_HANDLE_LENGTH)
    figure.suptitle(f"Kendall's tau, Framingham {options.pair[0]} vs {options.pair[1]} (stand-in for Bank, Sinh & "
                    f"Ramon Fig. 3-4), n = {n}, |E| = {options.edges_per_row:g} n, l = {ELL}, "
                    f"{options.common.runs} runs", fontsize=9)
    save_figure(figure, path)


def _plot_uci(options: BinsOptions, rows: list[dict[str, Any]], path: str) -> None:
    figure, (comm, mse, party, server) = new_figure(12.0, 9.6, panels=(2, 2))
    for stat, (style, fill) in zip(("kendall", "duplicate"), SERIES_STYLES):
        mine = [r for r in rows if r["statistic"] == stat]
        for axes, column in ((comm, "comm_bits"), (party, "party_ops"), (server, "server_ops")):
            _cost_curves(axes, mine, "n", column, label_suffix=f" {stat}", style=style, fill=fill)
        for method in METHODS:
            _errorbar(mse, [r for r in mine if r["method"] == method], "n", f"{method} {stat}", method, style, fill)
    for axes, ylabel in ((comm, "modelled online communication (bits)"), (mse, "MSE"),
                         (party, "modelled per-party operations"), (server, "modelled server operations")):
        style_axes(axes, xlabel="n (subsample of the complete rows)", ylabel=ylabel, legend=6,
                   handlelength=LEGEND_HANDLE_LENGTH)
    figure.suptitle(f"UCI Heart Disease (Sinh & Ramon Fig. 5-6): Kendall trestbps vs chol (8x8 grid, solid, filled), "
                    f"duplicate ratio of num (5 levels, dashed, open); eps = 1, |E| = {options.edges_per_row:g} n, l = {ELL}, "
                    f"{options.common.runs} runs", fontsize=9)
    save_figure(figure, path)


def _report(options: BinsOptions, outputs: Sequence[Output]) -> None:
    rows = outputs[0].rows
    table = [[r["statistic"], str(r["n"]), str(r["t"]), r["grid"], f"{r['epsilon']:g}", r["method"],
              format_mean(r["mse_mean"], r["mse_se"]), f"{r['comm_bits']:.3g}",
              f"{r['comm_bits_dis']:.3g}" if r["method"] == "U-MPC" else "-", f"{r['party_ops']:.3g}",
              f"{r['server_ops']:.3g}", f"{r['compute_ops']:.3g}",
              "-" if r["method"] == "U-MPC" else f"{r['orders_of_magnitude']:.2f}"] for r in rows]
    title = ("Kendall's tau-a on Framingham vs bins t (Sinh & Ramon Fig. 3-4)" if options.figure == "bins"
             else "UCI Heart Disease vs n (Sinh & Ramon Fig. 5-6)")
    print_rows(f"{title}: MSE against the exact U-statistic (mean ± s.e. over runs), modelled online bits "
               f"(l = {ELL}; U-MPC: M_HF, and M_Dis) and operations (Table 1 / App. D.2, constants 1)",
               ["stat", "n", "t", "grid", "eps", "method", "MSE", "comm bits", "M_Dis bits", "party ops",
                "server ops", "total ops", "log10 MSE/U-MPC"],
               table,
               notes=[f"U-MPC: |E| = {options.edges_per_row:g} n BalancedSamp, {PARTIES} parties, coalition "
                      f"{COALITION}; LDP and shuffled baselines: averaged kernel matrix; "
                      "total ops = server + n x per-party (Fig. 3 right)"])
    for line in orders_lines(rows):
        print(f"  {line}")


def orders_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One summary line per baseline: the range and median of ``log10(MSE / U-MPC's MSE)`` over its rows (positive:
    the baseline's MSE is above U-MPC's), and how many rows are below U-MPC's if any are."""
    lines = []
    for method in METHODS[1:]:
        orders = [r["orders_of_magnitude"] for r in rows
                  if r["method"] == method and math.isfinite(r["orders_of_magnitude"])]
        if not orders:
            continue
        below = sum(1 for value in orders if value < 0)
        lines.append(f"{method}: log10(MSE / U-MPC's MSE) from {min(orders):.2f} to {max(orders):.2f} (median "
                     f"{float(np.median(orders)):.2f}); "
                     + (f"below U-MPC's (negative) in {below} of {len(orders)} settings" if below
                        else f"above U-MPC's in all {len(orders)} settings"))
    return lines


#: what the ``--secure`` check does not cover (printed under its table)
BASELINES_NOTE = ("--secure checks the U-MPC rows only: Bell LDP and Ghazi (local DP) and GhaziSM (shuffled model) "
                  "are protocols of other papers, simulated as baselines, with no MPyC path here")


def secure_settings(options: BinsOptions, seed: int) -> list[Any]:
    """The ``--secure`` repetitions: U-MPC at every setting of the figure, with its rows, query and the tuple seed
    of the experiment's run 0 there."""
    return [UmpcCheckSetting(s.label, s.stat.query(s.epsilon, s.edges), s.values,
                             int(run_seeds(seed + s.number, options.common.runs)[0])) for s in _settings(options, seed)]


SWEEP = Sweep(module="umpc_bins_and_uci", doc=__doc__ or "", page="docs/papers/sinh_ramon.md", declare=_declare,
              resolve=_resolve, run=run_figure, report=_report, runs=100, quick_runs=20, note=BASELINES_NOTE,
              check_name=lambda options: f"umpc_{options.figure}",
              checks=lambda options, seed: umpc_secure_checks(secure_settings(options, seed), seed))

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
