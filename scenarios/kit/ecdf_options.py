"""What the ECDF family's jobs (``scenarios.ecdf`` §4.1, ``scenarios.ecdf_fss`` §4.2, ``scenarios.roc_private`` §5.1,
``scenarios.hosmer_lemeshow`` §5.2 of Barczewski, Mawass & Ramon) share: their options and checks, the declared
domain and grid, reading each party's rows, and party 0's output files.

Threat model: none here (public, declared parameters; each party reads only its own rows, and what it
shares about them is its verdict, :func:`secure.session.agree_verdict`)."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from scenarios.kit.budget_run import budget_options
from scenarios.kit.cli import ScenarioParser, UsageError, usage_errors
from scenarios.kit.datasets import declared_specs, framingham_with_scores, load_embedded
from scenarios.kit.experiments import new_figure, save_figure, write_csv
from scenarios.kit.missing_values import local_note, missing_policy
from scenarios.kit.options import add_data_arguments, domain_of, owner_intake, parse_columns, parse_domains
from scenarios.kit.outputs import check_output_path
from scenarios.kit.records import write_record
from secure.intake import ColumnSpec, party_rows, rows_from_table
from secure.public_randomness import public_generator

if TYPE_CHECKING:
    from dp.ecdf.analysis import SmoothedCurve


@dataclass
class EcdfOptions:
    """A job's parsed options: the query (:class:`dp.ecdf.EcdfQuery`, :class:`dp.ecdf.roc.RocQuery` or
    :class:`dp.ecdf.HosmerLemeshowQuery`) and what the job does around it (``curve``: ``--curve`` or ``--table``)."""

    query: Any
    data: str | None = None
    curve: str | None = None
    json: str | None = None
    plot: str | None = None
    budget: Any = None
    #: the public split of the embedded data's score model (ROC, Hosmer-Lemeshow)
    seed: int | None = None
    #: the campaign's servers' intake of owners' uploads (``--owners``, :func:`scenarios.kit.options.owner_intake`)
    owners: Any = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        seed = {} if self.seed is None else {"seed": self.seed}
        return {**self.query.public(), **seed, "embedded": self.data is None}


def ecdf_parser(prog: str, description: str | None, *, owners: bool) -> ScenarioParser:
    """The parser of an ECDF job with the options both take (``owners``: also the campaign's servers' options)."""
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
    add_data_arguments(parser, owners=owners)
    return parser


def check_outputs(args: argparse.Namespace, *names: str) -> None:
    """Party 0's output files ``--NAME``, tried in order (:func:`scenarios.kit.outputs.check_output_path`)."""
    for name in names:
        check_output_path(getattr(args, name), f"--{name}")


def common_query(args: argparse.Namespace, *, bits_refusal: str) -> dict[str, Any]:
    """The query's parameters both jobs take from ``args``, checked; :raise UsageError: a bad budget, domain,
    quantile, output path or missing-value option."""
    from dp.ecdf.grid import grid_of_points

    column, lower, upper = ecdf_domain(args, bits_refusal=bits_refusal)
    quantiles = parse_quantiles(args.quantiles)
    with usage_errors():
        spec = ColumnSpec(column, lower, upper)
    check_outputs(args, "curve", "json", "plot")
    embedded = args.data is None and getattr(args, "owners", None) is None
    missing = missing_policy(args.missing, args.fill, [spec], dataset="framingham" if embedded else None)
    try:  # the public grid (dp.ecdf.grid.grid_of_points), a failure as a usage error naming the options
        grid_of_points(lower, upper, args.points, kind=args.grid)
    except ValueError as exc:
        raise UsageError(f"--domain {lower:g}:{upper:g} with --points {args.points} gives no {args.grid} grid: "
                         f"{exc}") from None
    return {"column": column, "lower": lower, "upper": upper, "points": args.points, "grid": args.grid,
            "epsilon": args.epsilon, "smooth": None if args.smooth == "none" else int(args.smooth),
            "quantiles": tuple(quantiles), "missing": missing}


def job_options(args: argparse.Namespace, **query: Any) -> EcdfOptions:
    """The job's options with its :class:`dp.ecdf.EcdfQuery` (a refusal of the query as a usage error: a bad
    epsilon, a node noise that cannot be drawn)."""
    from dp.ecdf import EcdfQuery

    with usage_errors():
        built = EcdfQuery(**query)
    return EcdfOptions(built, args.data, args.curve, args.json, args.plot, budget_options(args),
                       owners=owner_intake(args, [built.column])[0] if "owners" in vars(args) else None)


def scored_options(args: argparse.Namespace, query: Any, specs: Sequence[Any], *, owners: Any, curve: str | None,
                   outputs: Sequence[str], score_role: str) -> EcdfOptions:
    """A ``(score, label)`` job's options (ROC, Hosmer-Lemeshow): ``outputs`` tried, the missing-value policy set
    in ``query`` (``score_role``: the remedy of a misfit score column).  :raise UsageError: a bad path or policy."""
    check_outputs(args, *outputs)
    score, label = query.columns
    missing = missing_policy(args.missing, args.fill, specs, dataset=None if args.data or owners else "framingham",
                             roles={score: ("score", score_role), label: ("label", "choose a column of 0/1 labels")})
    return EcdfOptions(replace(query, missing=missing), args.data, curve, args.json, args.plot, budget_options(args),
                       args.seed, owners)


def deliver(release: Any, outputs: Sequence[tuple[str | None, Callable[[str], None]]]) -> Callable[[], None]:
    """Party 0's delivery, run after the orderly shutdown (so is any smoothing): print ``release.table()``, then
    each output ``(path, write)`` whose path was given, in order."""
    def run() -> None:
        print(release.table())
        for path, write in outputs:
            if path:
                write(path)

    return run


def deliver_ecdf(options: EcdfOptions, release: Any, title: Callable[[dict[str, Any]], str]) -> Callable[[], None]:
    """An ECDF job's delivery: the table, ``--curve``, ``--plot`` (titled by ``title(record)``), ``--json``."""
    return deliver(release, [(options.curve, lambda path: write_curve(path, release.curve)),
                             (options.plot, lambda path: draw_ecdf(path, release.curve, title=title(release.record()))),
                             (options.json, lambda path: write_record(path, release.record()))])

__all__ = ["EcdfOptions", "ecdf_parser", "check_outputs", "common_query", "job_options", "scored_options", "draw_ecdf",
           "parse_quantiles", "ecdf_domain", "agreed_rows", "party_table", "read_column", "write_curve", "deliver",
           "deliver_ecdf", "TABLE_COLUMNS", "write_group_table", "draw_calibration", "write_roc_curve", "draw_roc"]


def parse_quantiles(text: str) -> list[float]:
    """``0.25,0.5`` -> ``[0.25, 0.5]``; :raise UsageError: not numbers, or not strictly between 0 and 1."""
    try:
        quantiles = [float(q) for q in text.split(",") if q.strip()]
    except ValueError:
        raise UsageError(f"--quantiles expects numbers like 0.25,0.5, got '{text}'") from None
    if any(not 0 < q < 1 for q in quantiles):
        raise UsageError(f"--quantiles must lie strictly between 0 and 1, got '{text}'")
    return quantiles


def ecdf_domain(args: argparse.Namespace, *, bits_refusal: str) -> tuple[str, float, float]:
    """The one column and its declared domain ``[lower, upper]``, checked with ``--grid`` and ``--points``
    (``bits_refusal``: why ``--domain`` takes no ``:BITS`` here); :raise UsageError: one line."""
    column = parse_columns(args.columns, expected=1, names="one COLUMN (the ECDF is of one column)")[0]
    declared = domain_of(parse_domains(args.domain, single=column), column, [column])
    if declared is not None:
        lower, upper = declared[0], declared[1]
        if declared[2] is not None:
            raise UsageError(f"--domain {column}=LOW:HIGH takes no BITS here: {bits_refusal}")
    elif campaign := owner_intake(args, [column])[1] if "owners" in vars(args) else []:  # scenarios.ecdf's servers
        lower, upper = campaign[0].lower, campaign[0].upper
    elif args.data is None and (spec := declared_specs("framingham", [column]).get(column)) is not None:
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


async def agreed_rows(read: Callable[[], tuple[np.ndarray, int, int]]) -> np.ndarray:
    """Every party: ``read() -> (rows, filled, clipped)`` of its own input, its verdict shared with every party, its
    own counts of filled cells and clipped values printed here (:func:`local_note`; never sent).
    :raise secure.errors.InputError: a bad file or cell at any party, at every party alike."""
    from secure.session import InputError, agree_verdict

    error, detail, result = None, None, (np.empty(0), 0, 0)
    try:
        result = read()
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    print(local_note(filled=result[1], clipped=result[2]))
    return result[0]


def party_table(data: str | None, columns: Sequence[str], *, missing: Any, specs: Sequence[Any] | None = None,
                scores_seed: int | None = None) -> Any:
    """This party's rows of ``columns``: of ``--data``, or its share of the embedded Framingham rows (with
    ``scores_seed``: the rows not used to fit the public score model split by that seed, its scores as ``score``)."""
    from mpyc.runtime import mpc

    if data is not None:
        return party_rows(data, list(columns), party=mpc.pid, parties=len(mpc.parties), missing=missing, specs=specs)
    table = (load_embedded("framingham") if scores_seed is None
             else framingham_with_scores(public_generator(scores_seed)))
    return rows_from_table(table.header, table.rows, list(columns), source="embedded framingham", party=mpc.pid,
                           parties=len(mpc.parties), missing=missing, specs=specs)


async def read_column(options: EcdfOptions) -> np.ndarray:
    """Every party: its values of ``options.query.column`` (:func:`party_table`), clipped to the query's
    ``[lower, upper]``, through :func:`agreed_rows`."""
    query = options.query
    assert query.lower is not None and query.upper is not None

    def read() -> tuple[np.ndarray, int, int]:
        rows = party_table(options.data, [query.column], missing=query.missing)
        values = rows.values[:, 0]
        clipped = int(np.count_nonzero((values < query.lower) | (values > query.upper)))
        return np.clip(values, query.lower, query.upper), rows.filled, clipped

    return await agreed_rows(read)


def write_curve(path: str, curve: SmoothedCurve) -> None:
    """``--curve PATH``: one row per released point, ``threshold, private, smoothed``."""
    columns = ("threshold", "private", "smoothed")
    write_csv(path, columns, [dict(zip(columns, (f"{point:.10g}", f"{curve.raw[i]:.10g}",
                                                 "" if curve.smoothed is None else f"{curve.smoothed[i]:.10g}")))
                              for i, point in enumerate(curve.points)])


def draw_ecdf(path: str, result: Any, *, title: str) -> None:
    """``--plot``: the released ECDF of a :class:`dp.ecdf.analysis.SmoothedCurve` (PNG, Agg canvas): the raw values,
    the smoothed curve (eq. 3) if any, each private quantile with its 95 % interval."""
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
    axes.set(xlabel="value", ylabel="fraction of rows at or below")
    axes.set_title(title, fontsize=10)
    axes.legend(loc="lower right")
    save_figure(figure, path)


#: the columns of ``--table``, in order
TABLE_COLUMNS: tuple[str, ...] = ("group", "lower", "upper", "expected_positive", "observed_positive",
                                  "expected_negative", "observed_negative", "contribution", "raised", "left_out")


def write_group_table(path: str, release: Any, *, floor: float) -> None:
    """``--table``: one row per group of a :class:`dp.ecdf.HosmerLemeshowRelease` (:data:`TABLE_COLUMNS`), released
    values and their post-processing only (docs/command_line.md); ``floor``: the query's ``expected_floor``."""
    from dp.ecdf.hosmer_lemeshow_statistic import hosmer_lemeshow_terms

    terms = hosmer_lemeshow_terms(release.expected, release.observed, floor=floor, empty=release.empty)
    classes = ((1, "positive"), (0, "negative"))
    rows: list[dict[str, Any]] = []
    for q in range(release.expected.shape[1]):
        raised = [f"{kind}_{name}" for kind, mask in (("expected", terms.expected_raised),
                                                      ("observed", terms.observed_raised))
                  for s, name in classes if mask[s, q]]
        rows.append(dict(zip(TABLE_COLUMNS, (q + 1, float(release.boundaries[q]), float(release.boundaries[q + 1]),
                                             float(release.expected[1, q]), int(release.observed[1, q]),
                                             float(release.expected[0, q]), int(release.observed[0, q]),
                                             float(terms.per_group[q]), " ".join(raised), bool(release.empty[q])))))
    write_csv(path, TABLE_COLUMNS, rows)


def draw_calibration(path: str, release: Any) -> None:
    """``--plot``: the calibration figure of a :class:`dp.ecdf.HosmerLemeshowRelease` (PNG, Agg canvas; its two
    panels: docs/command_line.md)."""
    figure, (left, right) = new_figure(11.0, 4.6, panels=(1, 2))
    expected, observed = release.expected[1], release.observed[1]
    x_error = 1.96 * float(np.sqrt(release.expected_noise_variance))
    y_error = 1.96 * float(np.sqrt(release.observed_noise_variance))
    left.errorbar(expected, observed, xerr=x_error, yerr=y_error, fmt="o", capsize=3,
                  label="group (+-1.96 noise std)")
    for q, (x, y) in enumerate(zip(expected, observed)):
        left.annotate(str(q + 1), (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    low = min(0.0, float(np.min(expected)) - x_error, float(np.min(observed)) - y_error)
    high = max(float(np.max(expected)) + x_error, float(np.max(observed)) + y_error, 1.0)
    left.plot([low, high], [low, high], color="grey", linestyle="--", label="y = x")
    left.set(xlabel="expected positives E_1q (released)", ylabel="observed positives O_1q (released)",
             title=f"H = {release.statistic:.4g}, p = {release.p_value:.3g} ({release.degrees_of_freedom} df)")
    left.legend(loc="upper left")
    right.plot(release.grid, release.ecdf, drawstyle="steps-post", linewidth=0.8, label="released ECDF (raw)")
    if release.smoothed_ecdf is not None:
        right.plot(release.grid, release.smoothed_ecdf, linewidth=1.2, label="smoothed (eq. 3)")
    for k, boundary in enumerate(release.boundaries[1:-1]):
        right.axvline(float(boundary), color="grey", linewidth=0.6, linestyle=":",
                      label="group boundaries" if k == 0 else None)
    right.set(xlabel="predicted probability", ylabel="F(t)",
              title=f"scores' ECDF, epsilon {release.epsilon:g}, n = {release.n}")
    right.legend(loc="lower right")
    figure.suptitle("Private Hosmer-Lemeshow calibration (Barczewski, Mawass & Ramon, Algorithm 2)")
    save_figure(figure, path)


def write_roc_curve(path: str, release: Any, smooth: int | None) -> None:
    """``--curve`` of ``scenarios.roc_private``: one row per threshold, the released cumulative counts of each
    class and the raw and smoothed rates (docs/command_line.md); ``release``: a :class:`dp.ecdf.roc.RocRelease`."""
    positive, negative = release.rates()
    smoothed_positive, smoothed_negative = release.smoothed_rates(smooth)
    columns = ("threshold", "positive_cumulative", "negative_cumulative", "tpr_raw", "fpr_raw", "tpr", "fpr")
    write_csv(path, columns, [dict(zip(columns, (f"{tau:.10g}", int(release.positive_counts[i]),
                                                 int(release.negative_counts[i]), f"{1 - positive[i]:.10g}",
                                                 f"{1 - negative[i]:.10g}", f"{1 - smoothed_positive[i]:.10g}",
                                                 f"{1 - smoothed_negative[i]:.10g}")))
                              for i, tau in enumerate(release.grid)])


def draw_roc(path: str, release: Any, *, smooth: int | None, label: str = "") -> None:
    """``--plot``: the self-normalised ROC curve of a :class:`dp.ecdf.roc.RocRelease` (PNG, Agg canvas), raw and,
    unless ``smooth`` is ``None``, smoothed, with each AUC and the diagonal; ``label`` names the columns (title)."""
    figure, axes = new_figure(6.0, 5.6)
    raw = release.curve(None)
    axes.plot(raw.false_positive_rate, raw.true_positive_rate, linewidth=0.8, alpha=0.8,
              label=f"raw self-normalised, AUC {raw.auc:.4f}")
    if smooth is not None:
        smoothed = release.curve(smooth)
        axes.plot(smoothed.false_positive_rate, smoothed.true_positive_rate, linewidth=1.6,
                  label=f"smoothed (p = {smooth}), AUC {smoothed.auc:.4f}")
    axes.plot([0.0, 1.0], [0.0, 1.0], color="grey", linestyle="--", linewidth=0.8, label="diagonal (AUC 0.5)")
    axes.set(xlabel="false positive rate", ylabel="true positive rate")
    axes.set_title(f"Private ROC of {label}\nepsilon {release.epsilon:g} ({release.split} split, "
                   f"{release.class_epsilon:.4g} per class), class sizes private", fontsize=10)
    axes.legend(loc="lower right")
    save_figure(figure, path)
