"""What the ECDF jobs share: their options, the declared domain and grid, and reading the one column.

``scenarios.ecdf`` (§4.1, secure aggregation) and ``scenarios.ecdf_fss`` (§4.2, function secret sharing)
of Barczewski, Mawass & Ramon release the same private ECDF of one column on the same public grid: they
take the same options (``--data``, ``--columns COLUMN``, ``--domain COLUMN=LO:HI``, ``--points``,
``--grid``, ``--epsilon``, ``--smooth``, ``--quantiles``, ``--curve``, ``--json``, the missing-value and
budget options), check them the same way, build the grid the same way and read the column the same way
-- here, once.

Threat model: none here (public, declared parameters; each party reads only its own rows, and what it
shares about them is its verdict, :func:`secure.session.agree_verdict`).
"""
from __future__ import annotations

import argparse
import csv
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scenarios.kit.budget_run import add_budget_arguments
from scenarios.kit.cli import UsageError
from scenarios.kit.missing_values import add_missing_arguments, local_note

__all__ = ["add_ecdf_arguments", "draw_ecdf", "parse_quantiles", "ecdf_domain", "ecdf_grid", "checked_grid", "read_column",
           "SmoothedCurve", "smooth_release", "print_quantiles", "write_curve"]


def add_ecdf_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both ECDF jobs take (their own ones are added by each job)."""
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default="totChol", metavar="COLUMN")
    parser.add_argument("--domain", default=None)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--grid", choices=("uniform", "geometric"), default="uniform")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--smooth", choices=("none", "1", "2"), default="2")
    parser.add_argument("--quantiles", default="0.1,0.25,0.5,0.75,0.9")
    parser.add_argument("--curve", default=None)
    parser.add_argument("--json", default=None)
    parser.add_argument("--plot", default=None, metavar="PATH.png")
    add_missing_arguments(parser)
    add_budget_arguments(parser)


def parse_quantiles(text: str) -> list[float]:
    """``0.25,0.5`` -> ``[0.25, 0.5]``.

    :raise UsageError: not numbers, or not strictly between 0 and 1.
    """
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
        points outside ``[2, 2^20]``.
    """
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


def ecdf_grid(lower: float, upper: float, points: int, kind: str) -> np.ndarray:
    """The public grid ``tau_1 = lower < ... < tau_N = upper`` of exactly ``points`` points: uniform (equal
    gaps), or geometric (equal ratios, anchored at ``lower``), :func:`dp.ecdf.tree.grid_of_points`."""
    from dp.ecdf.grid import grid_of_points

    return grid_of_points(lower, upper, points, kind=kind)


def checked_grid(lower: float, upper: float, points: int, kind: str) -> np.ndarray:
    """:func:`ecdf_grid`, a failure as a usage error naming the options.

    :raise UsageError: the domain and number of points give no grid of that kind.
    """
    try:
        return ecdf_grid(lower, upper, points, kind)
    except ValueError as exc:
        raise UsageError(f"--domain {lower:g}:{upper:g} with --points {points} gives no {kind} grid: {exc}") from None


async def read_column(options: Any) -> np.ndarray:
    """Every party: its rows of ``options.column`` (``--data``, or its share of the embedded Framingham
    rows), its verdict shared with every party, its values clipped to the declared domain, and its own
    counts of filled cells and clipped values printed here (:func:`local_note`; never sent).

    :param options: with ``data``, ``column``, ``lower``, ``upper`` and ``missing`` (the agreed
        missing-value policy).
    :return: this party's values, clipped to ``[options.lower, options.upper]``.
    :raise secure.errors.InputError: a bad file or cell at any party, at every party alike.
    """
    from mpyc.runtime import mpc

    from scenarios.kit.datasets import load_embedded
    from secure.intake import party_rows, rows_from_table
    from secure.session import InputError, agree_verdict

    error, detail, values, filled = None, None, np.empty(0), 0
    try:
        if options.data is not None:
            rows = party_rows(options.data, [options.column], party=mpc.pid, parties=len(mpc.parties),
                              missing=options.missing)
        else:
            table = load_embedded("framingham")
            rows = rows_from_table(table.header, table.rows, [options.column], source="embedded framingham",
                                   party=mpc.pid, parties=len(mpc.parties), missing=options.missing)
        values, filled = rows.values[:, 0], rows.filled
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    clipped = int(np.count_nonzero((values < options.lower) | (values > options.upper)))
    print(local_note(filled=filled, clipped=clipped))
    return np.clip(values, options.lower, options.upper)


#: A quantile interval wider than this share of the domain, or a released value's noise margin above
#: :data:`NOISY_MARGIN`, is called noise-dominated.
WIDE_QUANTILE = 0.25
NOISY_MARGIN = 0.1


@dataclass
class SmoothedCurve:
    """A released curve on its points, smoothed (eq. 3) if asked, and its private quantiles (Alg. 1) with their
    intervals (:func:`dp.ecdf.tree.quantile_interval`), or the reason there are none (``note``), and plain
    warnings when the noise dominates."""

    points: np.ndarray
    raw: np.ndarray
    smoothed: np.ndarray | None = None
    solver: str = "-"
    quantiles: dict[float, float] = field(default_factory=dict)
    intervals: dict[float, tuple[float, float]] = field(default_factory=dict)
    margin: float = 0.0
    note: str | None = None
    warnings: list[str] = field(default_factory=list)

    def quantile_text(self) -> str:
        """``0.5: 240 (95 % interval 236 to 245), ...`` (empty without quantiles)."""
        return ", ".join(f"{q:g}: {v:.4g} ({self.intervals[q][0]:.4g} to {self.intervals[q][1]:.4g})"
                         for q, v in self.quantiles.items())

    def interval_meaning(self) -> str:
        """What the quantile intervals are, in one sentence."""
        from dp.ecdf.analysis import QUANTILE_Z

        return (f"95 % interval of each quantile: the grid points between the first whose released value + "
                f"{QUANTILE_Z:.2f} noise std reaches the level and the one after the last whose released value - "
                f"{QUANTILE_Z:.2f} noise std stays below it (margin {self.margin:.3g}; normal approximation of the "
                f"tree noise, each end fails with about 2.5 %)")

    def record(self) -> dict[str, Any]:
        """The record's quantile keys: ``quantiles``, ``interval``, ``quantiles_note``, ``warning``."""
        return {"quantiles": {str(q): v for q, v in self.quantiles.items()},
                "interval": {"quantiles": {str(q): list(self.intervals[q]) for q in self.quantiles},
                             "level": 0.95, "margin": self.margin, "meaning": self.interval_meaning()},
                "quantiles_note": self.note, "warning": " ".join(f"{w}." for w in self.warnings) or None}

    @property
    def curve(self) -> np.ndarray:
        """The smoothed curve if any, else the raw released one."""
        return self.smoothed if self.smoothed is not None else self.raw


def smooth_release(release: Any, incidence: Any, *, smooth: int | None, quantiles: list[float], lower: float,
                   upper: float) -> SmoothedCurve:
    """Post-processing of a released ECDF: smoothing with norm ``smooth`` (:func:`smoothing.smooth_ecdf`, None:
    none; needs at least two released points) and the private quantiles by the inverse ECDF with their intervals
    (:func:`dp.ecdf.tree.quantile_interval` on the raw released values, margin ``z`` times their noise std).
    Quantiles need the whole curve: from a subset of the grid (``--release K``, ``--queries``) a quantile is only
    located between released points, so none is computed and ``note`` says why."""
    from dp.ecdf.analysis import QUANTILE_Z, quantile_interval
    from smoothing import inverse_ecdf, smooth_ecdf

    result = SmoothedCurve(release.grid[release.subset], release.values)
    if len(result.points) >= 2 and smooth is not None:
        smoothed = smooth_ecdf(result.raw, incidence, subset=release.subset, norm=smooth)
        result.smoothed, result.solver = smoothed.values, f"{smoothed.solver}, {smoothed.seconds:.2f} s"
    if not quantiles:
        return result
    if len(result.points) < len(release.grid):
        result.note = (f"quantiles not computed: only {len(result.points)} of {len(release.grid)} grid points are "
                       f"released, and from them a quantile is only located between those points (release or "
                       f"query the whole curve)")
        return result
    result.margin = QUANTILE_Z * float(release.point_std)
    result.quantiles = {q: inverse_ecdf((result.points, result.curve), q, precision=(upper - lower) / 1e6)
                        for q in quantiles}
    for q, value in result.quantiles.items():
        low, high = quantile_interval(result.points, result.raw, q, result.margin)
        result.intervals[q] = (min(low, value), max(high, value))
    if result.margin > NOISY_MARGIN:
        result.warnings.append(f"the released ECDF's noise margin ({QUANTILE_Z:.2f} std = {result.margin:.2g}) exceeds "
                               f"{NOISY_MARGIN:g}: the noise dominates the quantiles")
    wide = [q for q, (low, high) in result.intervals.items() if high - low > WIDE_QUANTILE * (upper - lower)]
    if wide:
        result.warnings.append(f"the interval of quantile(s) {', '.join(f'{q:g}' for q in wide)} spans more than "
                               f"{WIDE_QUANTILE:.0%} of the domain: the noise dominates them")
    return result


def print_quantiles(result: SmoothedCurve) -> None:
    """The quantile lines of both ECDF jobs: the quantiles with their intervals and what those mean, or why there
    are none, and the warnings."""
    if result.quantiles:
        print("  private quantiles (95 % interval): " + result.quantile_text())
        print(f"  interval: {result.interval_meaning()}")
    if result.note:
        print(f"  {result.note}")
    for warning in result.warnings:
        print(f"  warning: {warning}")


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

    :param result: a :class:`scenarios.kit.ecdf_options.SmoothedCurve`.
    """
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
