"""Error analysis of the ECDF tree and Lemma 1's interval decomposition (Barczewski, Mawass & Ramon).

Theorem 1's squared error, Lemma 1 / App. A.1 (an interval of grid indices as a ``+-1`` combination of at most
``L + 1`` tree nodes; a suffix needs ``ceil((L + 1)/2)``, Theorem 3), and the quantile intervals read off a
released curve (post-processing).  The derivations are in docs/ecdf.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from dp.ecdf.grid import Node, check_points, level_offsets, tree_depth
from dp.validation import check_epsilon, check_integer

__all__ = ["QUANTILE_Z", "quantile_interval", "theorem1_squared_error", "interval_nodes", "suffix_nodes",
           "SmoothedCurve", "smooth_release"]


#: ``z`` of the quantile intervals: each of their two ends fails with probability 2.5 % under the normal
#: approximation of one released value's noise (a sum of ``L + 1`` independent node noises), 5 % together.
QUANTILE_Z: float = 1.959963984540054


def quantile_interval(grid: npt.ArrayLike, values: npt.ArrayLike, level: float, margin: float) -> tuple[float, float]:
    """An interval ``(low, high)`` of grid points holding the ``level``-quantile of the noiseless ECDF with probability
    at least about 95 % for ``margin = z sd >= 0`` (:data:`QUANTILE_Z`), from the released raw values on the whole
    grid, one per point (post-processing; why: docs/ecdf.md)."""
    points = np.asarray(grid, dtype=float)
    heights = np.asarray(values, dtype=float)
    reached = np.flatnonzero(heights + margin >= level)
    low_index = int(reached[0]) if reached.size else points.size - 1
    below = np.flatnonzero(heights - margin < level)
    high_index = min(int(below[-1]) + 1, points.size - 1) if below.size else 0
    low_index = min(low_index, high_index)
    return float(points[low_index]), float(points[high_index])


def theorem1_squared_error(*, points: int, epsilon: float) -> float:
    """Theorem 1's expected squared error ``2 (L + 1)^3 / epsilon^2`` of one *count* ``n F^`` (continuous Laplace,
    one curator; the integer counterpart is :attr:`TreeNoisePlan.point_variance`; docs/ecdf.md)."""
    eps = check_epsilon(epsilon)
    levels = tree_depth(points) + 1
    return 2.0 * levels**3 / eps**2


def _naf(value: int) -> list[tuple[int, int]]:
    """Non-adjacent form of ``value >= 1``: ``[(exponent, sign)]``, highest first (docs/ecdf.md)."""
    digits: list[tuple[int, int]] = []
    exponent = 0
    while value:
        if value & 1:
            sign = 2 - (value & 3)
            digits.append((exponent, sign))
            value -= sign
        value >>= 1
        exponent += 1
    digits.reverse()
    return digits


def _walk(anchor: int, length: int, rightwards: bool) -> list[tuple[Node, int]]:
    """Signed nodes whose combination is the indicator of ``anchor+1 .. anchor+length`` (``rightwards``) or
    ``anchor-length+1 .. anchor``, following the non-adjacent form of ``length`` (docs/ecdf.md)."""
    nodes: list[tuple[Node, int]] = []
    cursor = anchor
    for exponent, sign in _naf(length):
        size = 1 << exponent
        ahead = int((sign > 0) == rightwards)  # the node (cursor, cursor + size], else (cursor - size, cursor]
        nodes.append(((cursor // size + ahead, exponent), sign))
        cursor += sign * size if rightwards else -sign * size
    return nodes


def _keep_in_tree(nodes: list[tuple[Node, int]], points: int) -> list[tuple[Node, int]]:
    """Drop nodes covering only indices beyond ``N`` (zero on ``1..N``); sort by position."""
    kept = [(node, sign) for node, sign in nodes if (node[0] - 1) << node[1] < points]
    offsets = level_offsets(points)
    return sorted(kept, key=lambda item: offsets[item[0][1]] + item[0][0] - 1)


def _check_interval(a: int, b: int, points: int) -> tuple[int, int, int]:
    count = check_points(points)
    first = check_integer(a, "a")
    last = check_integer(b, "b")
    if not 1 <= first <= count:
        raise ValueError(f"a must lie in [1, {count}], got {a}")
    if not first <= last <= count:
        raise ValueError(f"b must lie in [a, {count}] = [{first}, {count}], got {b}")
    return first, last, count


def interval_nodes(a: int, b: int, points: int) -> list[tuple[Node, int]]:
    """The indicator of grid indices ``a..b`` (1-based) as ``[((j, level), sign)]``, a ``+-1`` combination of at most
    ``L + 1`` distinct nodes sorted by tree position: Lemma 1 and eq. 9, the heart of Theorem 1's proof (App. A.1;
    construction and errors in docs/ecdf.md)."""
    first, last, count = _check_interval(a, b, points)
    low, high = first - 1, last - 1
    if low == 0:
        return _keep_in_tree(_walk(0, last, rightwards=True), count)
    level = high.bit_length()
    while True:  # largest level with a multiple of 2^level in [low, high]
        size = 1 << level
        split = -(-low // size) * size
        if split <= high:
            break
        level -= 1
    nodes = _walk(split, last - split, rightwards=True)
    if split > low:
        nodes += _walk(split, split - low, rightwards=False)
    return _keep_in_tree(nodes, count)


def suffix_nodes(a: int, points: int) -> list[tuple[Node, int]]:
    """The indicator of grid indices ``a..N`` as a ``+-1`` combination of at most ``ceil((L + 1)/2)`` nodes
    (Lemma 1, the suffix case behind Theorem 3; docs/ecdf.md), as :func:`interval_nodes` returns them."""
    first, _, count = _check_interval(a, points, points)
    top = 1 << tree_depth(count)
    return _keep_in_tree(_walk(top, top - first + 1, rightwards=False), count)


#: A quantile interval wider than this share of the domain, or a released value's noise margin above
#: :data:`NOISY_MARGIN`, is called noise-dominated.
WIDE_QUANTILE = 0.25
NOISY_MARGIN = 0.1


@dataclass
class SmoothedCurve:
    """A released curve on its points, smoothed (eq. 3) if asked, its private quantiles (Alg. 1) with their intervals
    (:func:`quantile_interval`) or why there are none (``note``), and warnings when the noise dominates."""

    points: np.ndarray
    raw: np.ndarray
    smoothed: np.ndarray | None = None
    solver: str = "-"
    quantiles: dict[float, float] = field(default_factory=dict)
    intervals: dict[float, tuple[float, float]] = field(default_factory=dict)
    margin: float = 0.0
    note: str | None = None
    warnings: list[str] = field(default_factory=list)

    def interval_meaning(self) -> str:
        """What the quantile intervals are, in one sentence."""
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

    def lines(self) -> list[str]:
        """The printed quantile lines: the quantiles with their intervals and what those mean, or why there are
        none, and the warnings."""
        quantiles = ", ".join(f"{q:g}: {v:.4g} ({self.intervals[q][0]:.4g} to {self.intervals[q][1]:.4g})"
                              for q, v in self.quantiles.items())
        lines = [f"  private quantiles (95 % interval): {quantiles}",
                 f"  interval: {self.interval_meaning()}"] if self.quantiles else []
        return lines + ([f"  {self.note}"] if self.note else []) + [f"  warning: {w}" for w in self.warnings]


def smooth_release(release: Any, incidence: Any, *, smooth: int | None, quantiles: list[float], lower: float,
                   upper: float) -> SmoothedCurve:
    """Post-processing of a released ECDF: smoothing with norm ``smooth`` (eq. 3; ``None``: none) and the private
    quantiles with their intervals (none from a subset of the grid, ``note`` says why; docs/ecdf.md)."""
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
    curve = result.raw if result.smoothed is None else result.smoothed
    result.quantiles = {q: inverse_ecdf((result.points, curve), q, precision=(upper - lower) / 1e6) for q in quantiles}
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
