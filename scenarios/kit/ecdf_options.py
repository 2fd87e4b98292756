"""What the ECDF jobs ``scenarios.ecdf`` (§4.1) and ``scenarios.ecdf_fss`` (§4.2) of Barczewski, Mawass & Ramon
share: their options and checks, the declared domain and grid, and reading the one column.

Threat model: none here (public, declared parameters; each party reads only its own rows, and what it
shares about them is its verdict, :func:`secure.session.agree_verdict`)."""
from __future__ import annotations

import argparse
import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from scenarios.kit.budget_run import add_budget_arguments
from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.missing_values import add_missing_arguments, local_note, missing_policy

if TYPE_CHECKING:
    from dp.ecdf import EcdfQuery
    from dp.ecdf.analysis import SmoothedCurve


@dataclass
class EcdfOptions:
    """A job's parsed options: the query (:class:`dp.ecdf.EcdfQuery`) and what the job does around it."""

    query: EcdfQuery
    data: str | None = None
    curve: str | None = None
    json: str | None = None
    plot: str | None = None
    budget: Any = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {**self.query.public(), "embedded": self.data is None}


def ecdf_parser(prog: str, description: str | None) -> ScenarioParser:
    """The parser of an ECDF job with the options both take (each job adds its own)."""
    parser = ScenarioParser(prog=prog, description=description)
    parser.add_argument("--data", metavar="PATH", help="CSV with a header; '{pid}' in PATH gives each party its own "
                        "file, otherwise party i keeps rows i, i+m, ... (default: the embedded Framingham data)")
    parser.add_argument("--columns", default="totChol", metavar="COLUMN", help="the one column")
    parser.add_argument("--domain", metavar="[COLUMN=]LO:HI", help="declared public grid range; values outside are "
                        "clipped to it at their owner (default: the embedded data's declared domain)")
    parser.add_argument("--points", type=int, default=1024, metavar="N", help="exactly N grid points, both kinds")
    parser.add_argument("--grid", choices=("uniform", "geometric"), default="uniform", help="equal gaps or ratios")
    parser.add_argument("--epsilon", type=float, default=1.0, help="privacy budget of the whole curve")
    parser.add_argument("--smooth", choices=("none", "1", "2"), default="2", help="the norm of the smoothing (eq. 3)")
    parser.add_argument("--quantiles", default="0.1,0.25,0.5,0.75,0.9", metavar="P,P,...",
                        help="private quantiles, each with a 95 %% interval (a warning: line if noise dominates)")
    parser.add_argument("--curve", metavar="PATH", help="party 0 writes threshold, private and smoothed values")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the record")
    parser.add_argument("--plot", metavar="PATH.png",
                        help="party 0 draws the released ECDF, raw and smoothed, with the quantiles' intervals")
    add_missing_arguments(parser)
    add_budget_arguments(parser)
    return parser


def common_query(args: argparse.Namespace, *, bits_refusal: str) -> dict[str, Any]:
    """The query's parameters both jobs take from ``args``, checked; :raise UsageError: a bad budget, domain,
    quantile, output path or missing-value option."""
    from dp.ecdf.tree import plan_tree_noise
    from dp.validation import check_epsilon
    from scenarios.kit.outputs import check_output_path
    from secure.intake import ColumnSpec

    try:
        check_epsilon(args.epsilon)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    column, lower, upper = ecdf_domain(args, bits_refusal=bits_refusal)
    quantiles = parse_quantiles(args.quantiles)
    try:  # the node noise DLap((L + 1) / epsilon) must be drawable (one-process plan: the strictest)
        plan_tree_noise(epsilon=args.epsilon, points=args.points)
        spec = ColumnSpec(column, lower, upper)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    for path, name in ((args.curve, "--curve"), (args.json, "--json"), (args.plot, "--plot")):
        check_output_path(path, name)
    missing = missing_policy(args.missing, args.fill, [spec], dataset=None if args.data is not None else "framingham")
    checked_grid(lower, upper, args.points, args.grid)
    return {"column": column, "lower": lower, "upper": upper, "points": args.points, "grid": args.grid,
            "epsilon": args.epsilon, "smooth": None if args.smooth == "none" else int(args.smooth),
            "quantiles": tuple(quantiles), "missing": missing}


def job_options(args: argparse.Namespace, **query: Any) -> EcdfOptions:
    """The job's options with its :class:`dp.ecdf.EcdfQuery` (a refusal of the query as a usage error)."""
    from dp.ecdf import EcdfQuery
    from scenarios.kit.budget_run import budget_options

    try:
        built = EcdfQuery(**query)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    return EcdfOptions(built, args.data, args.curve, args.json, args.plot, budget_options(args))


def deliver(options: EcdfOptions, release: Any, title: Callable[[dict[str, Any]], str]) -> Callable[[], None]:
    """Party 0's delivery, run after the orderly shutdown (so is the smoothing): print ``release.table()``, write
    ``--curve``, ``--plot`` (titled by ``title(record)``) and ``--json`` (``release.record()``)."""
    from scenarios.kit.records import write_record

    def run() -> None:
        print(release.table())
        if options.curve:
            write_curve(options.curve, release.curve)
        if options.plot:
            draw_ecdf(options.plot, release.curve, title=title(release.record()))
        if options.json:
            write_record(options.json, release.record())

    return run

__all__ = ["EcdfOptions", "ecdf_parser", "common_query", "job_options", "draw_ecdf", "parse_quantiles", "ecdf_domain",
           "checked_grid", "read_column", "write_curve", "deliver"]


def parse_quantiles(text: str) -> list[float]:
    """``0.25,0.5`` -> ``[0.25, 0.5]``.

    :raise UsageError: not numbers, or not strictly between 0 and 1."""
    try:
        quantiles = [float(q) for q in text.split(",") if q.strip()]
    except ValueError:
        raise UsageError(f"--quantiles expects numbers like 0.25,0.5, got '{text}'") from None
    if any(not 0 < q < 1 for q in quantiles):
        raise UsageError(f"--quantiles must lie strictly between 0 and 1, got '{text}'")
    return quantiles


def ecdf_domain(args: argparse.Namespace, *, bits_refusal: str) -> tuple[str, float, float]:
    """The one column and its declared domain ``[lower, upper]``, checked with ``--grid`` and ``--points``.

    :param bits_refusal: why this job takes no ``:BITS`` in ``--domain`` (said in the usage error).
    :raise UsageError: a missing or malformed domain, a geometric grid from a non-positive bound, a number of
        points outside ``[2, 2^20]``."""
    from scenarios.kit.datasets import declared_specs
    from scenarios.kit.options import domain_of, parse_columns, parse_domains

    column = parse_columns(args.columns, expected=1, names="one COLUMN (the ECDF is of one column)")[0]
    declared = domain_of(parse_domains(args.domain, single=column), column, [column])
    if declared is not None:
        lower, upper = declared[0], declared[1]
        if declared[2] is not None:
            raise UsageError(f"--domain {column}=LOW:HIGH takes no BITS here: {bits_refusal}")
    elif args.data is None and column in declared_specs("framingham", [column]):
        spec = declared_specs("framingham", [column])[column]
        lower, upper = spec.lower, spec.upper
    else:
        raise UsageError(f"no declared domain for column '{column}': give --domain {column}=LOW:HIGH")
    if not (math.isfinite(lower) and math.isfinite(upper) and math.isfinite(upper - lower)):
        raise UsageError(f"--domain must be finite (LOW:HIGH with HIGH - LOW below 1.8e308), got {lower:g}:{upper:g}")
    if not lower < upper:
        raise UsageError(f"--domain must have LOW < HIGH, got {lower}:{upper}")
    if args.grid == "geometric" and lower <= 0:
        raise UsageError(f"a geometric grid needs a positive lower bound, got {lower}")
    if not 2 <= args.points <= 1 << 20:
        raise UsageError(f"--points must lie in [2, 2^20], got {args.points}")
    return column, lower, upper


def checked_grid(lower: float, upper: float, points: int, kind: str) -> np.ndarray:
    """The public grid ``tau_1 = lower < ... < tau_N = upper`` of exactly ``points`` points (uniform: equal gaps;
    geometric: equal ratios), :func:`dp.ecdf.grid.grid_of_points`; a failure as a usage error naming the options.

    :raise UsageError: the domain and number of points give no grid of that kind."""
    from dp.ecdf.grid import grid_of_points

    try:
        return grid_of_points(lower, upper, points, kind=kind)
    except ValueError as exc:
        raise UsageError(f"--domain {lower:g}:{upper:g} with --points {points} gives no {kind} grid: {exc}") from None


async def read_column(options: EcdfOptions) -> np.ndarray:
    """Every party: its rows of ``options.query.column`` (``--data``, or its share of the embedded Framingham
    rows), its verdict shared with every party, its values clipped to the declared domain, and its own
    counts of filled cells and clipped values printed here (:func:`local_note`; never sent).

    :return: this party's values, clipped to the query's ``[lower, upper]``.
    :raise secure.errors.InputError: a bad file or cell at any party, at every party alike."""
    from mpyc.runtime import mpc

    from scenarios.kit.datasets import load_embedded
    from secure.intake import party_rows, rows_from_table
    from secure.session import InputError, agree_verdict

    query = options.query
    assert query.lower is not None and query.upper is not None
    error, detail, values, filled = None, None, np.empty(0), 0
    try:
        if options.data is not None:
            rows = party_rows(options.data, [query.column], party=mpc.pid, parties=len(mpc.parties),
                              missing=query.missing)
        else:
            table = load_embedded("framingham")
            rows = rows_from_table(table.header, table.rows, [query.column], source="embedded framingham",
                                   party=mpc.pid, parties=len(mpc.parties), missing=query.missing)
        values, filled = rows.values[:, 0], rows.filled
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    clipped = int(np.count_nonzero((values < query.lower) | (values > query.upper)))
    print(local_note(filled=filled, clipped=clipped))
    return np.clip(values, query.lower, query.upper)


def write_curve(path: str, curve: SmoothedCurve) -> None:
    """``--curve PATH``: one row per released point, ``threshold, private, smoothed``."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["threshold", "private", "smoothed"])
        for i, point in enumerate(curve.points):
            writer.writerow([f"{point:.10g}", f"{curve.raw[i]:.10g}",
                             "" if curve.smoothed is None else f"{curve.smoothed[i]:.10g}"])


def draw_ecdf(path: str, result: Any, *, title: str) -> None:
    """``--plot``: the released ECDF (PNG, Agg canvas): the raw released values at their grid points, the
    smoothed curve (eq. 3) if any, and each private quantile with its 95 % interval.  Only released values and
    their post-processing are drawn.

    :param result: a :class:`dp.ecdf.analysis.SmoothedCurve`."""
    from scenarios.kit.experiments import new_figure, save_figure

    figure, axes = new_figure(6.4, 4.6)
    axes.step(result.points, result.raw, where="post", linewidth=0.8, alpha=0.8, label="released (raw, noisy)")
    if result.smoothed is not None:
        axes.plot(result.points, result.smoothed, linewidth=1.6, label="smoothed (eq. 3)")
    for level, value in result.quantiles.items():
        low, high = result.intervals[level]
        axes.axvspan(low, high, color="grey", alpha=0.15, linewidth=0)
        axes.axvline(value, color="grey", linestyle="--", linewidth=0.8)
        axes.annotate(f"{level:g}", (value, level), textcoords="offset points", xytext=(3, -10), fontsize=8)
    if result.quantiles:
        axes.plot([], [], color="grey", linestyle="--", linewidth=0.8, label="quantiles, 95 % interval shaded")
    axes.set_xlabel("value")
    axes.set_ylabel("fraction of rows at or below")
    axes.set_title(title, fontsize=10)
    axes.legend(loc="lower right")
    save_figure(figure, path)
