"""The public grid of the private ECDF, the indexing of its dyadic tree (nodes level by level, leaves first) and the
per-party counts ``#{x <= tau_i}`` (Barczewski, Mawass & Ramon §3.1, eq. 2 and 4; derivations: docs/ecdf.md).
No privacy here: everything is public or computed by a party on its own rows."""
from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import scipy.sparse

from dp.validation import check_finite, check_positive, check_positive_int

__all__ = ["MAX_GRID_POINTS", "Node", "uniform_grid", "grid_of_points", "tree_depth", "tree_nodes",
           "node_count", "prefix_positions", "prefix_incidence", "level_offsets",
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
    """``values`` as a one-dimensional finite float64 array: the family's one check of a party's column (TypeError:
    not numeric; ValueError: not one-dimensional, or a NaN or infinite value)."""
    data = np.asarray(values)
    if data.dtype == np.bool_ or not (np.issubdtype(data.dtype, np.integer) or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"{name} must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {data.shape}")
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} must be finite")
    return data


def uniform_grid(lower: float, upper: float, step: float) -> np.ndarray:
    """The uniform grid ``tau_1 = lower, lower + step, ..., tau_N = upper`` (§3.1, ``psi = step``; docs/ecdf.md),
    strictly increasing (``lower == upper``: one point); ValueError or TypeError on a bad parameter."""
    lo = check_finite(lower, "lower")
    hi = check_finite(upper, "upper")
    st = check_positive(step, "step")
    if hi < lo:
        raise ValueError(f"upper must be at least lower ({lower}), got {upper}")
    if hi == lo:
        return np.array([lo])
    span = (hi - lo) / st
    if span + 2 > MAX_GRID_POINTS:
        raise ValueError(f"the grid would have {span + 2:.6g} points, at most 2**24 are allowed; increase the step")
    inner = lo + st * np.arange(math.floor(span) + 1, dtype=np.float64)
    inner = inner[inner < hi - _MERGE_FRACTION * st]
    return np.append(inner, hi)


def grid_of_points(lower: float, upper: float, points: int, *, kind: str = "uniform") -> np.ndarray:
    """Exactly ``points`` grid points ``tau_1 = lower < ... < tau_N = upper``, ``kind`` ``uniform`` (equal gaps) or
    ``geometric`` (equal ratios; docs/ecdf.md); ValueError or TypeError on a bad parameter."""
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


def tree_depth(points: int) -> int:
    """The depth ``L = ceil(log2 N)`` of the tree over ``N`` grid points (``N = 1`` gives 0); ValueError out of range."""
    return (check_points(points) - 1).bit_length()


def _level_sizes(points: int) -> list[int]:
    """``ceil(N / 2^l)`` for ``l = 0..L``."""
    return [((points - 1) >> level) + 1 for level in range((points - 1).bit_length() + 1)]


def level_offsets(points: int) -> list[int]:
    """Position of node ``(1, l)`` for ``l = 0..L``, then the total number of nodes."""
    return [0, *itertools.accumulate(_level_sizes(points))]


def node_count(points: int) -> int:
    """``|I[L]| = sum_{l=0}^{L} ceil(N / 2^l)`` (fewer than ``2 N + L``); ValueError if ``points`` is out of range."""
    return level_offsets(check_points(points))[-1]


def tree_nodes(points: int) -> list[Node]:
    """The nodes ``(j, level)`` of ``I[L]``, 1-based ``j``, leaves first (docs/ecdf.md, "Node order")."""
    return [(j, level) for level, size in enumerate(_level_sizes(check_points(points))) for j in range(1, size + 1)]


def prefix_positions(points: int) -> np.ndarray:
    """The ``N x (L + 1)`` int64 node positions entering each released count: the index sets ``I[L, i+1]`` of eq. (4)
    (docs/ecdf.md); ValueError if ``points`` is out of range."""
    count = check_points(points)
    offsets = level_offsets(count)
    index = np.arange(count, dtype=np.int64)
    columns = [offsets[level] + (index >> level) for level in range(len(offsets) - 1)]
    return np.stack(columns, axis=1)


def prefix_incidence(points: int) -> scipy.sparse.csr_matrix:
    """The ``N x |I[L]|`` 0/1 int64 CSR matrix mapping node noise to each count's noise (eq. 2; docs/ecdf.md);
    ValueError if ``points`` is out of range."""
    positions = prefix_positions(points)
    count, levels = positions.shape
    rows = np.repeat(np.arange(count, dtype=np.int64), levels)
    data = np.ones(count * levels, dtype=np.int64)
    shape = (count, level_offsets(count)[-1])
    return scipy.sparse.csr_matrix((data, (rows, positions.ravel())), shape=shape)


def true_counts(values: npt.ArrayLike, grid: npt.ArrayLike) -> np.ndarray:
    """``#{x in values : x <= tau_i}`` for every grid point (what each party computes; ``values`` may be empty),
    int64 of length ``len(grid)``; ValueError or TypeError on a bad array."""
    sorted_values, taus = np.sort(check_column(values)), check_column(grid, "grid")
    if taus.shape[0] == 0:
        raise ValueError(f"grid must be a non-empty one-dimensional array, got shape {taus.shape}")
    if np.any(np.diff(taus) <= 0):
        raise ValueError("grid must be strictly increasing")
    return np.searchsorted(sorted_values, taus, side="right").astype(np.int64)
