"""The public grid of the private ECDF and the indexing of its dyadic tree (Barczewski, Mawass & Ramon §3.1).

Grids ``tau_1 < ... < tau_N`` (uniform, geometric, or exactly N points), depth ``L = ceil(log2 N)``, the
nodes ``(j, l)`` of ``I[L]`` ordered level by level (leaves first, ``j`` ascending, 1-based), the node
positions summed into each count (eq. 2, eq. 4) and the per-party counts ``#{x <= tau_i}``.  Derivations:
docs/ecdf.md.  No privacy here: everything is public or computed by a party on its own rows.
"""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import scipy.sparse

from dp.validation import check_finite, check_integer, check_positive, check_positive_int

__all__ = ["MAX_GRID_POINTS", "Node", "uniform_grid", "geometric_grid", "grid_of_points", "tree_depth", "tree_nodes",
           "node_count", "node_position", "node_interval", "prefix_positions", "prefix_incidence", "level_offsets",
           "check_points", "check_column", "true_counts"]

#: Largest number of grid points a grid function builds or the tree accepts (the tree then has
#: fewer than ``2 * MAX_GRID_POINTS`` nodes).
MAX_GRID_POINTS: int = 2**24

# Points closer than this fraction of a step to an endpoint are merged into the endpoint, so that
# rounding in ``lower + k * step`` never produces a near-duplicate of ``upper``.
_MERGE_FRACTION = 1e-9

Node = tuple[int, int]

def check_points(points: int) -> int:
    """``points`` if it is an integer in ``[1, MAX_GRID_POINTS]``; the one check of a grid size in the family."""
    count = check_positive_int(points, "points")
    if count > MAX_GRID_POINTS:
        raise ValueError(f"points must be at most 2**24, got {points}")
    return count


def check_column(values: npt.ArrayLike, name: str = "values") -> np.ndarray:
    """``values`` as a one-dimensional finite float64 array: the family's one check of a party's column.

    :raise TypeError: not numeric.  :raise ValueError: not one-dimensional, or a NaN or infinite value.
    """
    data = np.asarray(values)
    if data.dtype == np.bool_ or not (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"{name} must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {data.shape}")
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} must be finite")
    return data


def _check_grid_size(count: float) -> None:
    if count > MAX_GRID_POINTS:
        raise ValueError(f"the grid would have {count:.6g} points, at most 2**24 are allowed; "
                         "increase the step")


# --------------------------------------------------------------------------------------------------
# grids

def uniform_grid(lower: float, upper: float, step: float) -> np.ndarray:
    """Return the grid ``tau_1 = lower, lower + step, lower + 2 step, ..., tau_N = upper``.

    The paper's uniform grid (§3.1, precision ``psi = step``) with ``tau_1`` and ``tau_N`` the
    declared domain ends.  The last point is ``upper`` even when ``step`` does not divide
    ``upper - lower`` (the last gap is then shorter than ``step``); a point within ``1e-9 * step``
    of ``upper`` is merged into ``upper``.  ``lower == upper`` gives the one-point grid.

    :param lower: first grid point (the smallest value of the domain).
    :param upper: last grid point, ``upper >= lower``.
    :param step: spacing, positive.
    :return: strictly increasing float64 array.
    :raise ValueError: if a bound is not finite, ``upper < lower``, ``step <= 0``, or the grid
        would have more than :data:`MAX_GRID_POINTS` points.
    :raise TypeError: if a parameter is not a number.
    """
    lo = check_finite(lower, "lower")
    hi = check_finite(upper, "upper")
    st = check_positive(step, "step")
    if hi < lo:
        raise ValueError(f"upper must be at least lower ({lower}), got {upper}")
    if hi == lo:
        return np.array([lo])
    span = (hi - lo) / st
    _check_grid_size(span + 2)
    inner = lo + st * np.arange(math.floor(span) + 1, dtype=np.float64)
    inner = inner[inner < hi - _MERGE_FRACTION * st]
    return np.append(inner, hi)


def geometric_grid(lower: float, upper: float, ratio_step: float) -> np.ndarray:
    """Return ``{lower} ∪ {e^(psi z) : z integer, lower < e^(psi z) < upper} ∪ {upper}``.

    The paper's grid for relative precision (§3.1, ``psi = ratio_step``): consecutive interior
    points have ratio ``e^psi``.  The paper assumes ``tau_1 = min`` and ``tau_N = max``, so both
    endpoints are always included; a lattice point within ``1e-9 * psi`` (in log scale) of an
    endpoint is merged into it.  ``lower == upper`` gives the one-point grid.

    :param lower: first grid point, positive.
    :param upper: last grid point, ``upper >= lower``.
    :param ratio_step: ``psi > 0``, the step in ``log`` scale.
    :return: strictly increasing float64 array.
    :raise ValueError: if ``lower <= 0``, ``upper < lower``, ``ratio_step <= 0``, a value is not
        finite, or the grid would have more than :data:`MAX_GRID_POINTS` points.
    :raise TypeError: if a parameter is not a number.
    """
    lo = check_finite(lower, "lower")
    hi = check_finite(upper, "upper")
    psi = check_positive(ratio_step, "ratio_step")
    if lo <= 0:
        raise ValueError(f"lower must be positive for a geometric grid, got {lower}")
    if hi < lo:
        raise ValueError(f"upper must be at least lower ({lower}), got {upper}")
    if hi == lo:
        return np.array([lo])
    log_lo, log_hi = math.log(lo), math.log(hi)
    _check_grid_size((log_hi - log_lo) / psi + 2)
    first = math.ceil(log_lo / psi)
    last = math.floor(log_hi / psi)
    exponents = psi * np.arange(first, last + 1, dtype=np.float64)
    margin = _MERGE_FRACTION * psi
    exponents = exponents[(exponents > log_lo + margin) & (exponents < log_hi - margin)]
    inner = np.exp(exponents)
    inner = inner[(inner > lo) & (inner < hi)]
    return np.concatenate(([lo], inner, [hi]))


def grid_of_points(lower: float, upper: float, points: int, *, kind: str = "uniform") -> np.ndarray:
    """Return exactly ``points`` grid points ``tau_1 = lower < ... < tau_N = upper`` of the given kind.

    What a user means by "a grid of N points" (§3.1): ``uniform`` has equal gaps
    ``(upper - lower) / (N - 1)``; ``geometric`` has equal ratios ``(upper / lower)^(1 / (N - 1))``,
    anchored at ``lower`` (``tau_k = lower * ratio^(k - 1)``).  Unlike :func:`geometric_grid`, whose
    points sit on the lattice ``e^(psi z)`` and so add one irregular gap next to ``lower`` (and one
    point more than ``log(upper / lower) / psi + 1``), the count is exact and every gap (ratio) is
    the same up to rounding; both endpoints are the declared bounds exactly.

    :param lower: first grid point (positive for ``geometric``).
    :param upper: last grid point, ``upper > lower``.
    :param points: ``N``, at least 2 and at most :data:`MAX_GRID_POINTS`.
    :param kind: ``uniform`` or ``geometric``.
    :return: strictly increasing float64 array of length ``points``.
    :raise ValueError: a bound not finite, ``upper <= lower``, a non-positive ``lower`` for a geometric
        grid, ``points`` out of range, an unknown kind, or a domain too narrow for ``points`` distinct
        float64 values.
    :raise TypeError: if a parameter is not a number.
    """
    lo = check_finite(lower, "lower")
    hi = check_finite(upper, "upper")
    count = check_points(points)
    if count < 2:
        raise ValueError(f"points must be at least 2, got {points}")
    if not hi > lo:
        raise ValueError(f"upper must be above lower ({lower}), got {upper}")
    if kind == "uniform":
        grid = np.linspace(lo, hi, count, dtype=np.float64)
    elif kind == "geometric":
        if lo <= 0:
            raise ValueError(f"lower must be positive for a geometric grid, got {lower}")
        grid = np.exp(np.linspace(math.log(lo), math.log(hi), count, dtype=np.float64))
    else:
        raise ValueError(f"kind must be 'uniform' or 'geometric', got {kind!r}")
    grid[0], grid[-1] = lo, hi
    if not np.all(np.diff(grid) > 0):
        raise ValueError(f"[{lower:g}, {upper:g}] is too narrow for {count} distinct float64 points")
    return grid


# --------------------------------------------------------------------------------------------------
# the tree I[L]

def tree_depth(points: int) -> int:
    """Return the depth ``L = ceil(log2 N)`` of the tree over ``N`` grid points (``N = 1`` gives 0).

    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if ``points < 1`` or above :data:`MAX_GRID_POINTS`.
    """
    count = check_points(points)
    return (count - 1).bit_length()


def _level_sizes(points: int) -> list[int]:
    """``ceil(N / 2^l)`` for ``l = 0..L``."""
    depth = (points - 1).bit_length()
    return [((points - 1) >> level) + 1 for level in range(depth + 1)]


def level_offsets(points: int) -> list[int]:
    """Position of node ``(1, l)`` for ``l = 0..L``, then the total number of nodes."""
    offsets = [0]
    for size in _level_sizes(points):
        offsets.append(offsets[-1] + size)
    return offsets


def node_count(points: int) -> int:
    """Return ``|I[L]| = sum_{l=0}^{L} ceil(N / 2^l)`` (fewer than ``2 N + L``).

    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if ``points`` is out of range.
    """
    return level_offsets(check_points(points))[-1]


def tree_nodes(points: int) -> list[Node]:
    """Return the nodes ``(j, l)`` of ``I[L]`` in this module's order.

    ``I[L] = {(j, l) : l in 0..L, j in 1..ceil(N / 2^l)}`` (the paper indexes ``j`` up to
    ``2^(L-l)``; nodes covering only indices beyond ``N`` never enter eq. (2) and are left out).
    Order: level ``l = 0`` (leaves, one per grid point) first, then level 1, ..., level ``L`` (the
    root, one node); inside a level ``j = 1, 2, ...``.

    :param points: number of grid points ``N >= 1``.
    :return: list of ``(j, level)`` with 1-based ``j``.
    :raise ValueError: if ``points`` is out of range.
    """
    count = check_points(points)
    return [(j, level) for level, size in enumerate(_level_sizes(count)) for j in range(1, size + 1)]


def node_position(j: int, level: int, points: int) -> int:
    """Return the 0-based position of node ``(j, level)`` in :func:`tree_nodes` order.

    ``position = sum_{l < level} ceil(N / 2^l) + (j - 1)``.

    :param j: 1-based index of the node within its level, ``1 <= j <= ceil(N / 2^level)``.
    :param level: ``0 <= level <= L``.
    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if the node is not in ``I[L]``.
    :raise TypeError: if an argument is not an integer.
    """
    count = check_points(points)
    jj = check_integer(j, "j")
    lv = check_integer(level, "level")
    depth = tree_depth(count)
    if not 0 <= lv <= depth:
        raise ValueError(f"level must lie in [0, {depth}], got {level}")
    size = ((count - 1) >> lv) + 1
    if not 1 <= jj <= size:
        raise ValueError(f"j must lie in [1, {size}] at level {lv}, got {j}")
    return level_offsets(count)[lv] + jj - 1


def node_interval(j: int, level: int, points: int) -> tuple[int, int]:
    """Return the 1-based grid indices ``(first, last)`` covered by node ``(j, level)``.

    ``first = (j - 1) 2^level + 1`` and ``last = min(j 2^level, N)``: the rows ``i`` of
    :func:`prefix_incidence` (1-based) in which the node's column has a one.

    :param j: 1-based index of the node within its level.
    :param level: level of the node.
    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if the node is not in ``I[L]``.
    """
    node_position(j, level, points)
    return (j - 1) * 2**level + 1, min(j * 2**level, int(points))


def prefix_positions(points: int) -> np.ndarray:
    """Return the ``N x (L + 1)`` int64 array of node positions entering each released count.

    Row ``i`` (0-based, grid point ``tau_{i+1}``), column ``l`` is the position of node
    ``(ceil((i+1) / 2^l), l) = (floor(i / 2^l) + 1, l)``: the index set ``I[L, i+1]`` of eq. (4).
    Gathering the node noise with these positions and summing along rows is the same as
    ``prefix_incidence(points) @ node_noise``.

    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if ``points`` is out of range.
    """
    count = check_points(points)
    offsets = level_offsets(count)
    index = np.arange(count, dtype=np.int64)
    columns = [offsets[level] + (index >> level) for level in range(len(offsets) - 1)]
    return np.stack(columns, axis=1)


def prefix_incidence(points: int) -> scipy.sparse.csr_matrix:
    """Return the ``N x |I[L]|`` 0/1 matrix that maps node noise to the noise of each count.

    Row ``i`` (0-based, for ``tau_{i+1}``) has a one in the column of node
    ``(ceil((i+1) / 2^l), l)`` for every level ``l = 0..L`` and zeros elsewhere — exactly the nodes
    summed in eq. (2) — so every row has ``L + 1`` ones.  Columns follow :func:`tree_nodes` order.
    The dtype is int64 so that the product with integer noise stays an exact integer.

    :param points: number of grid points ``N >= 1``.
    :raise ValueError: if ``points`` is out of range.
    """
    positions = prefix_positions(points)
    count, levels = positions.shape
    rows = np.repeat(np.arange(count, dtype=np.int64), levels)
    data = np.ones(count * levels, dtype=np.int64)
    shape = (count, level_offsets(count)[-1])
    return scipy.sparse.csr_matrix((data, (rows, positions.ravel())), shape=shape)


def _check_grid(grid: npt.ArrayLike) -> np.ndarray:
    array = check_column(grid, "grid")
    if array.shape[0] == 0:
        raise ValueError(f"grid must be a non-empty one-dimensional array, got shape {array.shape}")
    if np.any(np.diff(array) <= 0):
        raise ValueError("grid must be strictly increasing")
    return array


def true_counts(values: npt.ArrayLike, grid: npt.ArrayLike) -> np.ndarray:
    """Return ``#{x in values : x <= tau_i}`` for every grid point (what each party computes).

    :param values: one-dimensional array of finite numbers (may be empty).
    :param grid: strictly increasing finite grid.
    :return: int64 array of length ``len(grid)``.
    :raise ValueError: if ``values`` is not one-dimensional or not finite, or the grid is invalid.
    :raise TypeError: if an array is not numeric.
    """
    return np.searchsorted(np.sort(check_column(values)), _check_grid(grid), side="right").astype(np.int64)
