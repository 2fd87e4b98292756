r"""Tree mechanism for a differentially private empirical CDF (ECDF) across parties.

Barczewski, Mawass & Ramon, "Differentially Private Empirical Cumulative Distribution Functions":
§3.1 eq. (2) and Theorem 1 (the mechanism and its error), App. A.1 (the proof and its Lemma 1 on
intervals) and Theorem 3 (continual observation, Laplace and Gaussian forms).

What is released
----------------
Grid ``tau_1 < ... < tau_N`` (:func:`uniform_grid`, :func:`geometric_grid`), depth
``L = ceil(log2 N)`` (:func:`tree_depth`), and one noise variable ``eta_{j,l}`` per node of the
dyadic tree ``I[L] = {(j, l) : l in 0..L, j in 1..ceil(N / 2^l)}`` (:func:`tree_nodes`); node
``(j, l)`` covers the grid indices ``(j-1) 2^l + 1 .. min(j 2^l, N)``.  The released *counts* are

    c~_i = #{x <= tau_i} + sum_{l=0}^{L} eta_{ceil(i / 2^l), l},        i = 1..N      (eq. 2 times n)

(:func:`noisy_counts`; the sum over ``l`` is the ``i``-th row of :func:`prefix_incidence`), and
``F^(tau_i) = c~_i / n`` (:func:`private_ecdf`).  Counts, not fractions, are noised, and the noise is
*integer*: every node gets discrete Laplace noise ``DLap(alpha)``, ``pmf(z) ∝ alpha^|z|``, with
``alpha = exp(-epsilon / (L + 1))`` — never floating-point Laplace on a released value (Mironov
2012).  The paper's ``Lap((L+1)/epsilon)`` becomes ``DLap(exp(-epsilon/(L+1)))``; the privacy proof
goes through unchanged because it only uses ``P(eta = u + chi) / P(eta = u) <= exp(eps / (L+1))``
for a ``+-1`` shift of one node, which holds for both.

Why it is epsilon-DP (App. A.1)
-------------------------------
Replacing one row moves it from one grid position to another, which changes the count vector by
``+-`` the indicator of an interval ``[a, b]`` of grid indices.  Lemma 1 and the proof of Theorem 1
write that indicator as a ``+-1`` combination ``chi`` of **at most L + 1** tree nodes
(:func:`interval_nodes`), so the two outputs differ by a shift of the node noise by ``chi``, and the
privacy loss is at most ``(L + 1) * epsilon / (L + 1) = epsilon``.  A prefix or suffix of the grid
needs only ``ceil((L + 1) / 2)`` nodes (:func:`suffix_nodes`), which is Theorem 3's improvement for
continual observation: a change at one time step of a stream alters the running sums on a suffix,
so node scale ``ceil((L + 1) / 2) / epsilon`` suffices there (``continual=True``).  For ECDF counts
the same holds under *add/remove-one* adjacency (adding a row raises a suffix of the counts), but
**not** under the suite's default *replace-one* adjacency, where ``continual=True`` only gives
``epsilon * (L + 1) / ceil((L + 1) / 2) <= 2 epsilon``.

Error (Theorem 1)
-----------------
The noise added to one count is a sum of ``L + 1`` independent node noises, so its variance is
``(L + 1)`` times a node's variance.  With the paper's continuous ``Lap((L+1)/eps)`` this is
``2 (L + 1)^3 / eps^2`` (:func:`theorem1_squared_error`) — the squared error of the *count*
``n F^``, i.e. the paper's formula omits the ``1 / n^2`` of ``F^`` itself.  The exact integer
counterpart is :attr:`TreeNoisePlan.point_variance`.

Threat model and the cost of distribution
-----------------------------------------
Passive (semi-honest), static adversary corrupting at most ``t < m/2`` of the ``m`` parties (MPyC's
Shamir threshold).  Each party counts its own rows ``<= tau_i`` in the clear; the counts are summed
securely elsewhere, and every party adds its own secret-shared node draws
(:meth:`TreeNoisePlan.draw_party`): a difference of two ``Polya(1/(m-t), alpha)`` variables per
node (:mod:`secure.noise.party`).  Any ``m - t`` parties' draws sum to exactly ``DLap(alpha)`` per node,
so the honest parties alone supply the calibrated noise and the release is epsilon-DP against any
coalition of ``t`` parties (their own draws are independent of the data: post-processing).  The
price is the variance factor ``m / (m - t)`` (``x1.5`` for ``m = 3, t = 1``); with ``m = 1, t = 0``
the node noise is exactly ``DLap(alpha)``.  Noise randomness comes from the operating system unless
a test passes a generator.

Node order
----------
Everywhere in this module nodes are ordered *level by level* (level 0, the leaves, first), and by
``j`` ascending inside a level: node ``(j, l)`` sits at position
``sum_{l' < l} ceil(N / 2^l') + (j - 1)`` (:func:`node_position`).  Indices ``j`` are 1-based as in
the paper; grid indices in :func:`interval_nodes` and :func:`suffix_nodes` are 1-based too, rows of
:func:`prefix_incidence` are 0-based (row ``i`` is ``tau_{i+1}``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import scipy.sparse

from dp.calibration import (
    discrete_laplace_alpha,
    discrete_laplace_log_alpha,
    discrete_laplace_variance,
    distributed_laplace_variance,
    party_noise_shape,
)
from dp.validation import (check_epsilon, check_finite, check_integer, check_noise_scale, check_parties, check_positive,
                           check_positive_int)
from secure.noise.party import polya_difference

__all__ = [
    "MAX_GRID_POINTS",
    "QUANTILE_Z",
    "quantile_interval",
    "uniform_grid",
    "geometric_grid",
    "grid_of_points",
    "tree_depth",
    "tree_nodes",
    "node_count",
    "node_position",
    "node_interval",
    "prefix_positions",
    "prefix_incidence",
    "TreeNoisePlan",
    "plan_tree_noise",
    "noisy_counts",
    "true_counts",
    "private_ecdf",
    "theorem1_squared_error",
    "continual_gaussian_sigma",
    "draw_gaussian_tree_noise",
    "interval_nodes",
    "suffix_nodes",
]

#: Largest number of grid points a grid function builds or the tree accepts (the tree then has
#: fewer than ``2 * MAX_GRID_POINTS`` nodes).
MAX_GRID_POINTS: int = 2**24

# Points closer than this fraction of a step to an endpoint are merged into the endpoint, so that
# rounding in ``lower + k * step`` never produces a near-duplicate of ``upper``.
_MERGE_FRACTION = 1e-9

Node = tuple[int, int]


# --------------------------------------------------------------------------------------------------
# validation helpers

def _check_points(points: int) -> int:
    count = check_positive_int(points, "points")
    if count > MAX_GRID_POINTS:
        raise ValueError(f"points must be at most 2**24, got {points}")
    return count


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
    count = _check_points(points)
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
    count = _check_points(points)
    return (count - 1).bit_length()


def _level_sizes(points: int) -> list[int]:
    """``ceil(N / 2^l)`` for ``l = 0..L``."""
    depth = (points - 1).bit_length()
    return [((points - 1) >> level) + 1 for level in range(depth + 1)]


def _level_offsets(points: int) -> list[int]:
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
    return _level_offsets(_check_points(points))[-1]


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
    count = _check_points(points)
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
    count = _check_points(points)
    jj = check_integer(j, "j")
    lv = check_integer(level, "level")
    depth = tree_depth(count)
    if not 0 <= lv <= depth:
        raise ValueError(f"level must lie in [0, {depth}], got {level}")
    size = ((count - 1) >> lv) + 1
    if not 1 <= jj <= size:
        raise ValueError(f"j must lie in [1, {size}] at level {lv}, got {j}")
    return _level_offsets(count)[lv] + jj - 1


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
    count = _check_points(points)
    offsets = _level_offsets(count)
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
    shape = (count, _level_offsets(count)[-1])
    return scipy.sparse.csr_matrix((data, (rows, positions.ravel())), shape=shape)


# --------------------------------------------------------------------------------------------------
# the noise plan

@dataclass(frozen=True)
class TreeNoisePlan:
    """Calibration of the integer node noise of the ECDF tree for ``m`` parties, threshold ``t``.

    Every node gets, from every party, a difference of two ``Polya(1/(m-t), alpha)`` draws;
    any ``m - t`` parties' draws sum to ``DLap(alpha)`` per node, independently over nodes.

    - ``continual=False`` (Theorem 1, replace-one rows): node scale ``(L + 1) / epsilon``.
    - ``continual=True`` (Theorem 3): node scale ``ceil((L + 1) / 2) / epsilon``, epsilon-DP when
      one change alters a *suffix* of the released sums (streams; ECDF counts under add/remove-one
      adjacency).  Under replace-one adjacency it is only ``epsilon (L+1)/ceil((L+1)/2)``-DP.

    Threat model: passive, static coalition of at most ``t < m/2`` parties; DP holds against it
    because the honest parties' draws alone are calibrated.

    :param epsilon: privacy budget of the whole released curve, positive.
    :param points: number of grid points ``N >= 1``.
    :param parties: number of parties ``m >= 1``.
    :param threshold: coalition size ``t``, ``0 <= t``, ``2 t < m``.
    :param continual: use Theorem 3's scale ``ceil((L + 1) / 2) / epsilon``.
    :raise ValueError: on an invalid parameter (message names it, e.g.
        ``epsilon must be positive, got 0``).
    :raise TypeError: if a parameter has the wrong type.
    """

    epsilon: float
    points: int
    parties: int = 1
    threshold: int = 0
    continual: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "points", _check_points(self.points))
        m, t = check_parties(self.parties, self.threshold)
        object.__setattr__(self, "parties", m)
        object.__setattr__(self, "threshold", t)
        if not isinstance(self.continual, bool):
            raise TypeError(f"continual must be a bool, got {self.continual!r}")
        # each node's DLap has scale nodes_per_change / epsilon: its party draws must be representable
        check_noise_scale(self.epsilon, self.nodes_per_change)

    @property
    def depth(self) -> int:
        """Tree depth ``L = ceil(log2 N)``."""
        return tree_depth(self.points)

    @property
    def levels(self) -> int:
        """Number of levels ``L + 1``: the number of nodes summed into each count."""
        return self.depth + 1

    @property
    def node_count(self) -> int:
        """Number of nodes ``|I[L]|`` (length of a party's draw)."""
        return node_count(self.points)

    @property
    def nodes_per_change(self) -> int:
        """Nodes a neighbouring input may shift: ``L + 1``, or ``ceil((L + 1)/2)`` if continual."""
        return (self.levels + 1) // 2 if self.continual else self.levels

    @property
    def node_scale(self) -> float:
        """Laplace scale of one node: ``(L + 1)/epsilon``, or ``ceil((L + 1)/2)/epsilon``."""
        return self.nodes_per_change / self.epsilon

    @property
    def alpha(self) -> float:
        """``alpha = exp(-1/node_scale)`` of the per-node ``DLap(alpha)`` (node sensitivity 1)."""
        return discrete_laplace_alpha(self.epsilon, self.nodes_per_change)

    @property
    def log_alpha(self) -> float:
        """``log(alpha) = -epsilon / nodes_per_change`` exactly (used for sampling)."""
        return discrete_laplace_log_alpha(self.epsilon, self.nodes_per_change)

    @property
    def shape(self) -> float:
        """Pólya shape ``1/(m - t)`` of each party's draws."""
        return party_noise_shape(self.parties, self.threshold)

    @property
    def variance_factor(self) -> float:
        """``m/(m - t)``: total node variance over that of a single ``DLap(alpha)``."""
        return self.parties / (self.parties - self.threshold)

    @property
    def honest_node_variance(self) -> float:
        """Variance ``2 alpha/(1 - alpha)^2`` of ``DLap(alpha)``, the honest parties' node noise."""
        return discrete_laplace_variance(self.alpha)

    @property
    def node_variance(self) -> float:
        """Variance of the total noise of one node, summed over all parties:
        ``m/(m - t) * 2 alpha/(1 - alpha)^2``."""
        return distributed_laplace_variance(self.alpha, self.parties, self.threshold)

    @property
    def point_variance(self) -> float:
        """Variance of the noise added to one released count: ``(L + 1) * node_variance``.

        The exact discrete counterpart of Theorem 1's ``2 (L+1)^3/epsilon^2`` (which it approaches
        from below as ``node_scale`` grows; see :func:`theorem1_squared_error`).  Divide by ``n^2``
        for the mean squared error of ``F^`` itself.
        """
        return self.levels * self.node_variance

    def draw_party(self, rng: np.random.Generator | None = None, runs: int | None = None) -> np.ndarray:
        """Draw one party's noise for every node: ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``.

        In the secure path each party calls this once, secret-shares the vector and the shares are
        summed with the counts inside MPC.

        :param rng: a :class:`numpy.random.Generator` (tests), or ``None`` for fresh OS randomness.
        :param runs: ``None`` for one draw, or a number of independent draws of this party's vector
            (the auditor of :mod:`dp.audit.central_cases`, which sums the ``m - t`` honest parties' draws).
        :return: int64 array of length :attr:`node_count`, in :func:`tree_nodes` order, or of shape
            ``(runs, node_count)``.
        """
        count = self.node_count if runs is None else check_positive_int(runs, "runs") * self.node_count
        draws = np.asarray(polya_difference(self.shape, size=count, rng=rng, log_alpha=self.log_alpha), dtype=np.int64)
        return draws if runs is None else draws.reshape(runs, self.node_count)

    def draw_total(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """Draw the total node noise of the simulated path: the sum of ``m`` party draws.

        :param rng: a :class:`numpy.random.Generator` (tests), or ``None`` for fresh OS randomness
            (then every party draw uses its own fresh generator).
        :return: int64 array of length :attr:`node_count`.
        """
        total = np.zeros(self.node_count, dtype=np.int64)
        for _ in range(self.parties):
            total += self.draw_party(rng)
        return total


def plan_tree_noise(*, epsilon: float, points: int, parties: int = 1, threshold: int = 0,
                    continual: bool = False) -> TreeNoisePlan:
    """Return the validated :class:`TreeNoisePlan` for an ECDF on ``points`` grid points.

    :param epsilon: privacy budget of the whole released curve, positive.
    :param points: number of grid points ``N``, ``1 <= N <= 2**24``.
    :param parties: number of parties ``m >= 1``.
    :param threshold: coalition size ``t`` with ``0 <= t`` and ``2 t < m`` (MPyC's ``-T``).
    :param continual: Theorem 3's scale ``ceil((L+1)/2)/epsilon`` (suffix adjacency only).
    :raise ValueError: if a parameter is out of range, e.g. ``epsilon must be positive, got 0``.
    :raise TypeError: if a parameter has the wrong type.
    """
    return TreeNoisePlan(epsilon=epsilon, points=points, parties=parties, threshold=threshold,
                         continual=continual)


# --------------------------------------------------------------------------------------------------
# release

def _integer_vector(values: npt.ArrayLike, name: str, length: int | None = None) -> np.ndarray:
    array = np.asarray(values)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {array.shape[0]}")
    return array.astype(np.int64, copy=False)


def noisy_counts(counts: npt.ArrayLike, node_noise: npt.ArrayLike) -> np.ndarray:
    """Return the released counts ``counts + prefix_incidence(N) @ node_noise`` (eq. 2 times n).

    The node noise is added through the tree: count ``i`` (1-based) gets
    ``sum_l node_noise[(ceil(i / 2^l), l)]``.  Integer arithmetic throughout.

    :param counts: int array of length ``N``: ``#{x <= tau_i}`` (summed over parties).
    :param node_noise: int array of length ``|I[L]|`` in :func:`tree_nodes` order (total noise), or
        of shape ``(runs, |I[L]|)`` for ``runs`` independent releases (the auditor's batches).
    :return: int64 array of length ``N`` (shape ``(runs, N)`` for batched noise).
    :raise ValueError: if a length does not match or ``counts`` is empty.
    :raise TypeError: if an array is not of an integer dtype.
    """
    count_vec = _integer_vector(counts, "counts")
    if count_vec.shape[0] == 0:
        raise ValueError("counts must not be empty")
    points = _check_points(count_vec.shape[0])
    raw = np.asarray(node_noise)
    if raw.ndim == 2:
        if raw.shape[0] == 0:
            raise ValueError("node_noise must hold at least one run")
        _integer_vector(raw[0], "node_noise", node_count(points))  # dtype and length of every run
        return count_vec[None, :] + raw.astype(np.int64, copy=False)[:, prefix_positions(points)].sum(axis=2)
    noise = _integer_vector(raw, "node_noise", node_count(points))
    return count_vec + noise[prefix_positions(points)].sum(axis=1)


def _check_grid(grid: npt.ArrayLike) -> np.ndarray:
    array = np.asarray(grid)
    if array.dtype == np.bool_ or not (np.issubdtype(array.dtype, np.integer)
                                       or np.issubdtype(array.dtype, np.floating)):
        raise TypeError(f"grid must be numeric, got dtype {array.dtype}")
    array = array.astype(np.float64)
    if array.ndim != 1 or array.shape[0] == 0:
        raise ValueError(f"grid must be a non-empty one-dimensional array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("grid must be finite")
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
    taus = _check_grid(grid)
    data = np.asarray(values)
    if data.dtype == np.bool_ or not (np.issubdtype(data.dtype, np.integer)
                                      or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"values must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {data.shape}")
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        raise ValueError("values must be finite")
    return np.searchsorted(np.sort(data), taus, side="right").astype(np.int64)


#: ``z`` of the quantile intervals: each of their two ends fails with probability 2.5 % under the normal
#: approximation of one released value's noise (a sum of ``L + 1`` independent node noises), 5 % together.
QUANTILE_Z: float = 1.959963984540054


def quantile_interval(grid: npt.ArrayLike, values: npt.ArrayLike, level: float, margin: float) -> tuple[float, float]:
    """An interval of grid points for the ``level``-quantile ``x* = min{tau_i : F(tau_i) >= level}`` of the
    noiseless ECDF ``F``, from the released raw values ``F^(tau_i) = F(tau_i) + noise`` (post-processing).

    ``low`` is the first grid point with ``F^ + margin >= level``; ``high`` is the grid point after the last one
    with ``F^ - margin < level`` (the last grid point if that is the last one, the first if there is none).
    Why it covers ``x*``: ``F(x*) >= level``, so ``low > x*`` needs the noise at ``x*`` below ``-margin``; and
    ``F`` is below ``level`` at the grid point before ``x*``, so ``high < x*`` needs the noise there above
    ``margin``.  With ``margin = z sd`` (``sd`` the noise std of one released value, :data:`QUANTILE_Z`) each
    has probability about 2.5 % (normal approximation of the sum of ``L + 1`` node noises), so the interval
    holds ``x*`` with probability at least about 95 % (union bound); with no noise (``margin = 0``) it is the
    single point ``x*``.  On a non-monotone noisy curve the interval is conservative (it spans every crossing).

    :param grid: the grid points (increasing) where ``values`` were released, the whole grid.
    :param values: the released raw ECDF ``F^`` there.
    :param level: the quantile level in ``(0, 1)``.
    :param margin: ``z`` times the noise std of one value, non-negative.
    :return: ``(low, high)``, grid points, ``low <= high``.
    :raise ValueError: shapes differ, the grid is empty, or ``margin`` is negative.
    """
    points = np.asarray(grid, dtype=float)
    heights = np.asarray(values, dtype=float)
    if points.ndim != 1 or points.shape != heights.shape or points.size == 0:
        raise ValueError(f"grid and values must be one-dimensional of one length, got {points.shape} and "
                         f"{heights.shape}")
    if not margin >= 0:
        raise ValueError(f"margin must be non-negative, got {margin}")
    reached = np.flatnonzero(heights + margin >= level)
    low_index = int(reached[0]) if reached.size else points.size - 1
    below = np.flatnonzero(heights - margin < level)
    high_index = min(int(below[-1]) + 1, points.size - 1) if below.size else 0
    low_index = min(low_index, high_index)
    return float(points[low_index]), float(points[high_index])


def private_ecdf(values: npt.ArrayLike, grid: npt.ArrayLike, plan: TreeNoisePlan, *,
                 node_noise: npt.ArrayLike | None = None,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """Return ``F^(tau_i) = (#{x <= tau_i} + sum_l eta_{ceil(i/2^l), l}) / n`` for every grid point.

    The simulated path (one process, all rows at hand) of eq. (2): true counts, plus the total node
    noise — the sum of ``plan.parties`` party draws (:meth:`TreeNoisePlan.draw_total`) unless
    ``node_noise`` is given (then the result equals the secure path's with the same draws) —
    divided by ``n = len(values)``, which is public under replace-one adjacency.  Rows outside the
    grid need no clipping: a row below ``tau_1`` counts at every point, one above ``tau_N`` at
    none, and replacing any row still changes the counts on one interval of grid indices.

    epsilon-DP (``plan.epsilon``) for replace-one rows when ``plan.continual`` is false, against
    any passive coalition of ``plan.threshold`` parties.  The result is not monotone and may leave
    ``[0, 1]``; smoothing (eq. 3) is post-processing, done in :mod:`smoothing`.

    :param values: all rows' values, one-dimensional, finite, at least one.
    :param grid: strictly increasing grid of ``plan.points`` points.
    :param plan: the noise plan.
    :param node_noise: optional total node noise (int array of length ``plan.node_count``).
    :param rng: generator for the noise (tests), or ``None`` for fresh OS randomness.
    :return: float64 array of length ``N``.
    :raise ValueError: if ``values`` is empty, or a length does not match ``plan.points``.
    :raise TypeError: if an argument has the wrong type.
    """
    if not isinstance(plan, TreeNoisePlan):
        raise TypeError(f"plan must be a TreeNoisePlan, got {type(plan).__name__}")
    counts = true_counts(values, grid)
    rows = int(np.asarray(values).shape[0])
    if rows == 0:
        raise ValueError("values must contain at least one row, got 0")
    if counts.shape[0] != plan.points:
        raise ValueError(f"grid must have plan.points = {plan.points} points, got {counts.shape[0]}")
    noise = plan.draw_total(rng) if node_noise is None else _integer_vector(node_noise, "node_noise",
                                                                            plan.node_count)
    return noisy_counts(counts, noise) / rows


# --------------------------------------------------------------------------------------------------
# error analysis

def theorem1_squared_error(*, points: int, epsilon: float) -> float:
    """Return Theorem 1's expected squared error ``2 (L + 1)^3 / epsilon^2``, ``L = ceil(log2 N)``.

    Precisely: the variance of the noise added to one **count** ``n F^(tau_i)`` (not to ``F^``,
    whose mean squared error is this divided by ``n^2``; the paper's statement drops the
    ``1/n^2``), when each node has *continuous* ``Lap((L+1)/epsilon)`` noise and a single curator:
    ``(L + 1)`` nodes of variance ``2 ((L+1)/epsilon)^2``.

    The exact counterpart for the integer noise of this module is
    :attr:`TreeNoisePlan.point_variance` ``= (L + 1) m/(m-t) 2 alpha/(1-alpha)^2`` with
    ``alpha = exp(-epsilon/(L+1))``.  For ``m = 1`` it equals
    ``(L+1) / (2 sinh^2(epsilon / (2 (L+1))))``, i.e. this value times ``1 - 1/(12 s^2) + O(s^-4)``
    with node scale ``s = (L+1)/epsilon``: within 10 % once ``s >= 1``, and much smaller than this
    value when ``s`` is small (the discrete noise is then mostly 0).

    :param points: number of grid points ``N >= 1``.
    :param epsilon: privacy budget, positive.
    :raise ValueError: if ``points`` or ``epsilon`` is out of range.
    """
    eps = check_epsilon(epsilon)
    levels = tree_depth(points) + 1
    return 2.0 * levels**3 / eps**2


def continual_gaussian_sigma(rho: float, points: int, *, replace_one: bool = False) -> float:
    """Return the node standard deviation of Theorem 3's Gaussian tree for ``rho``-zCDP.

    Theorem 3: node noise ``N(0, ceil((L+1)/2) z^2)`` makes the running sums ``1/(2 z^2)``-zCDP when
    one change alters a suffix (at most ``k = ceil((L+1)/2)`` nodes shift by ``+-1``, so the shift
    has squared L2 norm ``<= k`` and the Gaussian mechanism gives ``k / (2 sigma^2)``).  Solving for
    ``rho``: ``sigma = sqrt(k / (2 rho))``.  With ``replace_one=True`` the ECDF's interval
    adjacency is used instead (up to ``L + 1`` nodes, :func:`interval_nodes`):
    ``sigma = sqrt((L + 1) / (2 rho))``.

    :func:`draw_gaussian_tree_noise` samples integer (discrete Gaussian) node noise at this scale for
    one curator; sums of discrete Gaussians are not discrete Gaussian, so a distributed version
    would need its own accounting and is not offered.

    :param rho: target zCDP parameter, positive.
    :param points: number of grid points ``N >= 1``.
    :param replace_one: use the ``L + 1``-node interval adjacency of the ECDF.
    :return: the standard deviation of each node's noise.
    :raise ValueError: if ``rho`` or ``points`` is out of range.
    """
    r = check_positive(rho, "rho")
    levels = tree_depth(points) + 1
    shifted = levels if replace_one else (levels + 1) // 2
    return math.sqrt(shifted / (2.0 * r))


def draw_gaussian_tree_noise(*, rho: float, points: int, replace_one: bool = True,
                             rng: np.random.Generator | None = None) -> np.ndarray:
    """Integer node noise of Theorem 3's Gaussian form: every node ``N_Z(0, sigma^2)``, rho-zCDP.

    ``sigma`` from :func:`continual_gaussian_sigma`: a change shifts at most ``k`` nodes by ``+-1``
    (``k = L + 1`` for the ECDF's replace-one adjacency, ``ceil((L+1)/2)`` for a suffix change), so
    the shift has squared L2 norm ``<= k`` and the discrete Gaussian gives ``k/(2 sigma^2) = rho``
    zCDP, as the continuous one (Canonne, Kamath & Steinke 2020).  Add it with :func:`noisy_counts`.
    One curator only (see :func:`continual_gaussian_sigma`); OS randomness unless a test passes ``rng``.

    :param rho: target zCDP parameter, positive.
    :param points: number of grid points ``N``.
    :param replace_one: ECDF adjacency (default) or the stream/suffix adjacency of Theorem 3.
    :return: int64 array with one draw per tree node.
    """
    from secure.noise.party import sample_discrete_gaussian

    sigma = continual_gaussian_sigma(rho, points, replace_one=replace_one)
    return sample_discrete_gaussian(sigma * sigma, node_count(points), rng)


# --------------------------------------------------------------------------------------------------
# Lemma 1: intervals as +-1 combinations of tree nodes

def _naf(value: int) -> list[tuple[int, int]]:
    """Non-adjacent form of ``value >= 1``: ``[(exponent, sign)]``, highest exponent first.

    ``value = sum sign 2^exponent`` with no two exponents adjacent, so a value below ``2^e`` has
    at most ``ceil((e + 1)/2)`` terms, and the leading sign is ``+1``.
    """
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
    """Signed nodes whose combination is the indicator of ``anchor+1 .. anchor+length``
    (``rightwards``) or ``anchor-length+1 .. anchor`` (leftwards), on all positive integers.

    Follows the non-adjacent form of ``length`` from its top digit: each term moves a cursor by
    ``+-2^e`` and adds or subtracts the dyadic node between the old and new cursor (aligned because
    ``anchor`` is a multiple of ``2^e`` for every exponent used).  The signed intervals telescope.
    """
    nodes: list[tuple[Node, int]] = []
    cursor = anchor
    for exponent, sign in _naf(length):
        size = 1 << exponent
        if rightwards:
            if sign > 0:
                nodes.append(((cursor // size + 1, exponent), 1))   # (cursor, cursor + size]
            else:
                nodes.append(((cursor // size, exponent), -1))      # (cursor - size, cursor]
            cursor += sign * size
        else:
            if sign > 0:
                nodes.append(((cursor // size, exponent), 1))       # (cursor - size, cursor]
            else:
                nodes.append(((cursor // size + 1, exponent), -1))  # (cursor, cursor + size]
            cursor -= sign * size
    return nodes


def _keep_in_tree(nodes: list[tuple[Node, int]], points: int) -> list[tuple[Node, int]]:
    """Drop nodes covering only indices beyond ``N`` (zero on ``1..N``); sort by position."""
    kept = [(node, sign) for node, sign in nodes if (node[0] - 1) << node[1] < points]
    offsets = _level_offsets(points)
    return sorted(kept, key=lambda item: offsets[item[0][1]] + item[0][0] - 1)


def _check_interval(a: int, b: int, points: int) -> tuple[int, int, int]:
    count = _check_points(points)
    first = check_integer(a, "a")
    last = check_integer(b, "b")
    if not 1 <= first <= count:
        raise ValueError(f"a must lie in [1, {count}], got {a}")
    if not first <= last <= count:
        raise ValueError(f"b must lie in [a, {count}] = [{first}, {count}], got {b}")
    return first, last, count


def interval_nodes(a: int, b: int, points: int) -> list[tuple[Node, int]]:
    """Write the indicator of grid indices ``a..b`` as a ``+-1`` combination of at most ``L + 1`` nodes.

    The heart of Theorem 1's privacy proof (App. A.1, Lemma 1 and eq. 9): moving one row from below
    ``tau_a`` to above ``tau_b`` changes the count vector by the indicator of ``[a, b]``; with
    ``chi`` the returned combination, ``prefix_incidence(N) @ chi`` equals that indicator on
    ``1..N``, so the change is a shift of the node noise by ``chi`` and costs at most
    ``(L + 1) * epsilon/(L + 1)``.

    Construction (as in the proof): with ``c`` the multiple of ``2^h`` in ``[a - 1, b - 1]`` of
    largest ``h``, split ``[a, b] = [a, c] ∪ [c + 1, b]``: a suffix of the dyadic block
    ``(c - 2^h, c]`` and a prefix of ``(c, c + 2^h]``.  Each is written with the non-adjacent form of
    its length (at most ``ceil((h + 1)/2)`` nodes of levels ``<= h``), and ``h <= L - 1`` unless
    ``a = 1`` (then ``c = 0`` and only the prefix, of at most ``ceil((L + 1)/2)`` nodes, remains).
    Nodes lying wholly beyond ``N`` are dropped (they contribute nothing on ``1..N``).  The count
    is in fact at most ``max(1, 2 ceil(L/2))`` — ``L + 1`` for odd ``L`` (reached), ``L`` for even
    ``L`` — but the calibration keeps the paper's ``L + 1``.

    :param a: first grid index, 1-based, ``1 <= a <= N``.
    :param b: last grid index, 1-based, ``a <= b <= N``.
    :param points: number of grid points ``N >= 1``.
    :return: ``[((j, level), sign)]`` with distinct nodes, ``sign`` in ``{-1, +1}``, sorted by
        :func:`node_position`.
    :raise ValueError: if the interval is not within ``1..N``.
    :raise TypeError: if an argument is not an integer.
    """
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
    """Write the indicator of grid indices ``a..N`` as a ``+-1`` combination of at most
    ``ceil((L + 1)/2)`` nodes (Lemma 1, the suffix case behind Theorem 3).

    A change at one step of a stream (or adding one row to an ECDF) alters the released sums on a
    suffix; since it needs only ``ceil((L+1)/2)`` nodes, node scale ``ceil((L+1)/2)/epsilon``
    suffices (``continual=True``).  Built as the suffix of the block ``(0, 2^L]`` that ends at
    ``2^L``, nodes beyond ``N`` dropped.

    :param a: first grid index of the suffix, 1-based, ``1 <= a <= N``.
    :param points: number of grid points ``N >= 1``.
    :return: ``[((j, level), sign)]`` as :func:`interval_nodes`.
    :raise ValueError: if ``a`` is not within ``1..N``.
    :raise TypeError: if an argument is not an integer.
    """
    first, _, count = _check_interval(a, points, points)
    top = 1 << tree_depth(count)
    return _keep_in_tree(_walk(top, top - first + 1, rightwards=False), count)
