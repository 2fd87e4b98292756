"""Generic local-DP protocol for degree-2 U-statistics: quantize, k-ary randomized response, debias.

Bell, Bellet, Gascón & Kulkarni, "Private Protocols for U-Statistics in the Local Model and
Beyond" (2019/2020): §3 "Generic LDP Protocol from Quantization" and Algorithm 1; App. A.1
(unbiased estimator, Lemma 1, Corollary 2 = Theorem 1); App. A.2 (quantized kernels: eq. (14)
``A^Mid``, eq. (15) ``A^Avg``; Lemmas 2 and 3).

What it computes
----------------
Each user ``i`` holds one value ``x_i`` in a declared domain (an interval, a product grid of
intervals such as ``[0,1]^2`` for Kendall's tau, or a finite set of levels).  The user

1. quantizes ``x_i`` to one of ``k`` bins, by *simple rounding* (to the nearest representative) or
   *randomized rounding* (to one of the two neighbouring representatives on each axis, unbiased:
   ``E[rep] = x``) — :class:`Quantizer`;
2. applies k-ary randomized response (App. A.1 convention): with probability ``1 - beta`` report
   the true bin, with probability ``beta`` a bin drawn uniformly from **all** ``k`` bins (the true
   one included), ``beta = k / (k + e^epsilon - 1)`` — :func:`randomize`.  So
   ``P(report y | bin x) = beta/k + (1 - beta) [x = y]``: ``e^eps / (k + e^eps - 1)`` for the true
   bin and ``1 / (k + e^eps - 1)`` for every other, a ratio of exactly ``e^epsilon``: epsilon-LDP.
   (Algorithm 1, eq. (9), prints ``1 - beta`` / ``beta/k`` for true / other bins, which does not
   sum to one; App. A.1 and the vector ``b`` below fix the convention used here.)

The untrusted server receives only the reports ``r_1..r_n``.  With ``e_r`` the one-hot vector of
a report, ``b = (beta/k) 1`` (so ``E[e_r | bin x] = (1 - beta) e_x + b``) and a quantized kernel
matrix ``A`` (``k x k``), the pair estimator ``(e_r - b)^T A (e_r' - b) / (1 - beta)^2`` is unbiased
for ``A[x, x']`` (App. A.1), and ``U_hat`` is its average over all pairs.

Server in ``O(n + k^2)`` from the histogram (:func:`estimate_from_histogram`).  Let ``c`` be the
report counts, ``s = sum_i (e_{r_i} - b) = c - n b``.  Then ``s^T A s`` sums the pair terms over
all ordered ``(i, j)`` *including* ``i = j``; the diagonal terms depend only on the report, so
``sum_i (e_{r_i} - b)^T A (e_{r_i} - b) = sum_u c_u d_u`` with
``d_u = (e_u - b)^T A (e_u - b) = A_uu - (Ab)_u - (A^T b)_u + b^T A b``.  Hence, exactly,

    U_hat = (s^T A s - c . d) / (n (n - 1) (1 - beta)^2),

the average over ordered pairs ``i != j``; for a symmetric ``A`` it equals the paper's average over
the ``C(n, 2)`` unordered pairs (a non-symmetric ``A`` acts through ``(A + A^T)/2``; the variance
functions symmetrize it).  One ``bincount`` plus one ``k x k`` matrix-vector product:
measured about 2 ms for ``n = 10^6`` reports and ``k = 256`` (1.7 ms histogram, 0.25 ms algebra).

Target.  The protocol estimates the *quantized* U-statistic: ``(1/(n(n-1))) sum_{i != j} A[q_i,
q_j]`` for simple rounding, and its expectation over the rounding,
``(1/(n(n-1))) sum_{i != j} P_i^T A P_j`` with ``P_i`` the rounding distribution of ``x_i``, for
randomized rounding (rounding and response compose into one channel; roundings are independent
across users) — :func:`quantized_ustatistic`.

Quantized kernel matrices (:func:`kernel_matrix`), from any plain numpy kernel ``f(x, y)``:

- ``"midrange"`` — ``A^Mid``, eq. (14): ``(max + min) / 2`` of ``f`` over ``x`` in bin ``i``,
  ``y`` in bin ``j``.  Note that eq. (14) is the midpoint of the *range* of ``f`` on the bin pair,
  not ``f`` at the bins' midpoints: for Gini ``|x - y|`` the two agree off the diagonal but on the
  diagonal eq. (14) gives ``w/2`` (bin width ``w``) where ``f(mid, mid) = 0``; for Kendall and
  other sign/indicator kernels on product grids they agree everywhere.
- ``"midpoint"`` — ``f`` at the bin representatives (the bin midpoints under simple rounding).
- ``"average"`` — ``A^Avg``, eq. (15): the mean of ``f`` over the two bins' areas (Lebesgue measure
  on interval axes, the point itself on level axes).

``"midrange"`` and ``"average"`` are computed on a sub-grid: each interval bin is cut into ``m``
equal sub-cells and ``f`` is evaluated at the sub-cell centres (midpoint rule).  The average is
exact when ``f`` is affine in each coordinate on every pair of sub-cells, and also for sign-type
kernels whose jumps lie on bin boundaries or on the diagonal (Kendall: ``A^Avg_ij =
sign(i1-j1) sign(i2-j2)`` exactly); otherwise its error is ``O(L w^2 / m^2)`` for a smooth
kernel (Gini's diagonal: ``w (m^2-1)/(3 m^2)`` instead of ``w/3``).  The max/min of eq. (14) over
interior sub-cell centres is within ``L w / m`` of the supremum for an ``L``-Lipschitz kernel (for
jump kernels the interior points avoid the boundary values that the open bins never attain).  By
default ``m`` is the largest value (2..64 per interval axis) keeping the ``k^2 M^2`` kernel
evaluations (``M`` sub-cells per bin) within :data:`EVALUATION_BUDGET`.

Bins and representatives.  An interval axis ``[lower, upper]`` with ``B`` bins:

- simple rounding: equal bins of width ``w = (upper - lower)/B``, representatives at their
  midpoints (the layout of Lemma 2); a value goes to the bin containing it (= nearest midpoint);
- randomized rounding: ``B >= 2`` representatives at ``lower + l (upper - lower)/(B - 1)``
  (endpoints included, so rounding is unbiased on the whole domain); a value between two
  representatives goes to the upper one with probability equal to its fractional position.  The
  "bin" of a representative, for eq. (14)/(15), is its nearest-point (Voronoi) cell, half-width at
  the two ends.

A level axis (a finite set of values, e.g. a 0/1 label or a category) rounds to the nearest level.
Several axes form a product grid of ``k = B_1 B_2 ...`` bins, flattened row-major (last axis
fastest); randomized rounding acts independently per interval axis.  Values outside the declared
domain are clipped to it (DESIGN: inputs are clipped so that no row leaves the domain).

Variance.  :func:`lemma1_variance` is the exact variance of Lemma 1 for ``x_i`` i.i.d. from a
distribution ``D`` over the ``k`` bins (Hoeffding's formula with ``zeta_1 = Var(E[f_hat | R_1])`` —
eq. (3) of the paper misprints ``zeta_1`` as a conditional variance):

    Var(U_hat) = C(n,2)^{-1} [ (2n - 3) zeta_1 + (zeta_2 - zeta_1) ],
    zeta_1 = Var(e_{R}^T A D) / (1 - beta)^2,
    zeta_2 - zeta_1 = E_{R_1}[ Var((e_{R_1} - b)^T A e_{R_2} | R_1) ] / (1 - beta)^4,

with ``R, R_1, R_2`` i.i.d. reports, marginally ``(1 - beta) D + b``.
:func:`theorem1_variance_bound` is Theorem 1 (= Corollary 2):
``(hi - lo)^2 [1/(n (1-beta)^2) + (1+beta)^2 / (2 n (n-1) (1-beta)^4)]`` for kernel values in
``[lo, hi]`` (the paper states ``[0, 1]``; the variances are invariant to shifting ``A``).
:func:`conditional_variance` is the exact variance given the sample (over rounding and response
only), derived here: with ``Z_i = (e_{r_i} - b)/(1 - beta) = P_i + W_i``, ``Cov(W_i) = Sigma_i =
(diag(p_i) - p_i p_i^T)/(1 - beta)^2``, ``p_i = (1 - beta) P_i + b`` and ``S = sum_i P_i``,

    n^2 (n-1)^2 Var(U_hat | x) = 4 sum_i g_i^T Sigma_i g_i + 2 sum_{i != j} tr(A Sigma_i A Sigma_j),
    g_i = A (S - P_i)

(the linear and the quadratic parts of ``sum_{i != j} Z_i^T A Z_j`` are uncorrelated).

Rényi-2 entropy (§2.1.2, eq. (5)): with the collision kernel ``I[x = y]`` on ``k`` categories,
``A = I`` and the protocol estimates ``sum_j p_j^2``; ``H_2 = -log`` of it
(:func:`renyi2_entropy_from_histogram`; the estimate is clipped to ``[1/k, 1]`` first, as
post-processing, so that ``H_2`` lies in ``[0, log k]``).

Bias-variance trade-off in ``k``.  Quantization bias falls with the bin diameter ``D ~ 1/k`` per
axis: ``(U_f - U_A)^2 <= L_f^2 / (2 k^2)`` for an ``L_f``-Lipschitz kernel with simple rounding and
``A^Mid`` as Lemma 2 states it — its proof only gives ``L_f^2 / k^2`` (``f`` can vary by
``2 L_f / k`` over a bin pair; two equal atoms just either side of a bin edge give Gini an error of
``3/(4k) > 1/(sqrt(2) k)``) — and ``<= 4 L_mu^2 D^2 (1 + L_mu^2 D^2)`` for an ``L_mu``-Lipschitz
density and ``A^Avg`` (Lemma 3).  The randomization variance grows like ``k^2 / (n epsilon^2)``
(Corollary 3), because ``1 - beta ~ epsilon / k`` for small epsilon.  Balancing gives
``k ~ n^{1/4} sqrt(L epsilon)`` and MSE ``O(L / sqrt(n epsilon))`` (Corollary 1).  On a product grid the variance
grows with the *total* number of bins ``k = B_1 B_2`` while the bias shrinks only with each
``B_a``: keep grids coarse.

Threat model.  Local differential privacy: each user (party) randomizes its own report on its own
device, with its own randomness; the server (aggregator) and every other user are untrusted and may
collude — they see only the reports, and each report is epsilon-LDP with respect to that user's
value (replace-one adjacency of the single value; composition with the pre-processing rounding
keeps it, since every row of the composed channel is a mixture of rows of the RR channel).  No
secure computation is needed: the server's estimate is post-processing of the reports.  The
rounding and response randomness is local privacy noise: it comes from a
:class:`numpy.random.Generator` that defaults to fresh OS entropy
(:func:`secure.noise.party.os_generator`); tests pass seeded generators.  Responses use the generator's
53-bit floating-point uniforms, so the channel probabilities are met to within ``2^-53``.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np
import numpy.typing as npt

from dp.validation import check_epsilon, check_finite, check_integer, check_positive, check_positive_int
from secure.noise.party import noise_generator

__all__ = [
    "check_kernel_matrix","KernelFunction", "Interval", "Levels", "Axis", "Quantizer", "ROUNDING_MODES", "MATRIX_KINDS",
           "EVALUATION_BUDGET", "kernel_matrix", "rr_beta", "rr_channel", "randomize", "histogram",
           "estimate_from_histogram", "estimate", "estimate_pairwise", "quantized_ustatistic",
           "lemma1_variance", "theorem1_variance_bound", "conditional_variance", "simulate_histograms",
           "simulate", "collision_probability_from_histogram", "renyi2_entropy_from_histogram", "renyi2_entropy",
           "gini_kernel", "kendall_kernel", "collision_kernel", "auc_kernel", "comparable_kernel"]

#: A kernel ``f(x, y)``: for one-dimensional domains two arrays of shape ``(N,)``, otherwise two
#: arrays of shape ``(N, d)``; returns ``N`` finite values (or a scalar, broadcast).
KernelFunction = Callable[[np.ndarray, np.ndarray], npt.ArrayLike]

ROUNDING_MODES: tuple[str, ...] = ("simple", "randomized")
MATRIX_KINDS: tuple[str, ...] = ("average", "midrange", "midpoint")

#: Default cap on kernel evaluations ``k^2 M^2`` when building ``A^Avg`` / ``A^Mid`` on a sub-grid.
EVALUATION_BUDGET: int = 1 << 24

_MAX_SUBDIVISIONS = 64
_CHUNK_ELEMENTS = 1 << 22  # elements per block of vectorized work (bounds memory)


# --------------------------------------------------------------------------------------------------
# ready-made kernels (plain numpy functions; any other f(x, y) works the same way)

def gini_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gini mean difference ``|x - y|`` on a one-dimensional domain (§2.1.2, eq. (4))."""
    return np.abs(x - y)


def kendall_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-a ``sign(x_1 - y_1) sign(x_2 - y_2)`` on two-dimensional points (eq. (6))."""
    return np.sign(x[:, 0] - y[:, 0]) * np.sign(x[:, 1] - y[:, 1])


def collision_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Collision indicator ``I[x = y]`` (Rényi-2 entropy, eq. (5)); on any dimension."""
    equal = x == y
    if equal.ndim > 1:
        equal = equal.all(axis=-1)
    return equal.astype(np.float64)


def auc_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AUC numerator on points ``(score, label)``: the positive one scores higher, ties 1/2 (eq. (7)).

    ``AUC = U_auc / U_comparable`` (:func:`comparable_kernel`); both U-statistics can be estimated
    from the *same* histogram of reports, so their ratio costs no extra privacy budget.
    """
    differ = x[:, 1] != y[:, 1]
    positive_first = x[:, 1] > y[:, 1]
    s_pos = np.where(positive_first, x[:, 0], y[:, 0])
    s_neg = np.where(positive_first, y[:, 0], x[:, 0])
    return np.where(differ, (1.0 + np.sign(s_pos - s_neg)) / 2.0, 0.0)


def comparable_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``I[label_x != label_y]`` on points ``(score, label)``: the AUC normaliser."""
    return (x[:, 1] != y[:, 1]).astype(np.float64)


# --------------------------------------------------------------------------------------------------
# parameter checks specific to this module (plain messages, as dp.validation)

def _check_rounding(rounding: str) -> str:
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"rounding must be one of {', '.join(ROUNDING_MODES)}, got {rounding!r}")
    return rounding


def _check_kind(kind: str) -> str:
    if kind not in MATRIX_KINDS:
        raise ValueError(f"kind must be one of {', '.join(MATRIX_KINDS)}, got {kind!r}")
    return kind


def _check_bins(bins: int, name: str = "bins") -> int:
    value = check_integer(bins, name)
    if value < 2:
        raise ValueError(f"{name} must be at least 2, got {value}")
    return value


def _check_runs(runs: int | None) -> int | None:
    if runs is None:
        return None
    return check_positive_int(runs, "runs")


def check_kernel_matrix(matrix: npt.ArrayLike, bins: int | None = None) -> np.ndarray:
    """A finite square kernel matrix with at least 2 bins (``bins`` x ``bins`` if given), as float64.

    :raise ValueError: otherwise, naming the problem.
    """
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"matrix must be square, got shape {a.shape}")
    if a.shape[0] < 2:
        raise ValueError(f"matrix must have at least 2 bins, got {a.shape[0]}")
    if bins is not None and a.shape[0] != bins:
        raise ValueError(f"matrix must be {bins} x {bins} for {bins} bins, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("matrix entries must be finite")
    return a


def _check_counts(counts: npt.ArrayLike, bins: int) -> np.ndarray:
    raw = np.asarray(counts)
    if raw.ndim not in (1, 2) or raw.shape[-1] != bins:
        raise ValueError(f"counts must have shape ({bins},) or (runs, {bins}), got {raw.shape}")
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
            raise ValueError("counts must be integers")
    c = raw.astype(np.int64)
    if np.any(c < 0):
        raise ValueError(f"counts must be non-negative, got minimum {int(c.min())}")
    totals = c.sum(axis=-1)
    if np.any(totals < 2):
        raise ValueError(f"at least 2 reports are needed, got {int(np.min(totals))}")
    return c


def _check_reports(reports: npt.ArrayLike, bins: int) -> np.ndarray:
    r = np.asarray(reports)
    if r.dtype.kind not in "iu":
        raise TypeError(f"reports must be integer bin indices, got dtype {r.dtype}")
    r = r.astype(np.int64)
    if r.size and (r.min() < 0 or r.max() >= bins):
        raise ValueError(f"reports must lie in [0, {bins - 1}], got range [{r.min()}, {r.max()}]")
    return r


def _symmetric(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + a.T)


# --------------------------------------------------------------------------------------------------
# quantization

@dataclass(frozen=True)
class Interval:
    """A continuous axis ``[lower, upper]`` with ``bins`` bins (see the module docstring for layouts).

    :param lower: lower end of the declared domain (finite).
    :param upper: upper end (finite, above ``lower``).
    :param bins: number of bins (at least 1; at least 2 for randomized rounding).
    :raise ValueError: on a non-finite or empty interval, or fewer than 1 bin.
    """

    lower: float
    upper: float
    bins: int

    def __post_init__(self) -> None:
        lower = check_finite(self.lower, "lower")
        upper = check_finite(self.upper, "upper")
        if not lower < upper:
            raise ValueError(f"upper must be greater than lower, got lower={lower}, upper={upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "bins", check_positive_int(self.bins, "bins"))


@dataclass(frozen=True)
class Levels:
    """A discrete axis: a finite set of values (categories, labels); a value rounds to the nearest.

    :param values: the levels (finite, distinct after sorting).
    :raise ValueError: if empty, not finite, or repeated.
    """

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        raw = tuple(check_finite(v, "level") for v in self.values)
        if not raw:
            raise ValueError("levels must not be empty")
        ordered = tuple(sorted(raw))
        if any(a == b for a, b in zip(ordered, ordered[1:])):
            raise ValueError("levels must be distinct")
        object.__setattr__(self, "values", ordered)

    @property
    def bins(self) -> int:
        """Number of levels."""
        return len(self.values)


Axis = Union[Interval, Levels]


class Quantizer:
    """The local quantization ``pi`` of Algorithm 1: values in a declared domain -> ``k`` bins.

    :param axes: one :class:`Interval` or :class:`Levels` per coordinate (product grid, row-major).
    :param rounding: ``"simple"`` (nearest representative) or ``"randomized"`` (unbiased between
        the two neighbouring representatives on every interval axis).
    :raise ValueError: on no axes, fewer than 2 bins in total, an unknown rounding mode, or an
        interval axis with 1 bin under randomized rounding.
    """

    def __init__(self, axes: Sequence[Axis], *, rounding: str = "simple") -> None:
        self.rounding = _check_rounding(rounding)
        self.axes: tuple[Axis, ...] = tuple(axes)
        if not self.axes:
            raise ValueError("a quantizer needs at least one axis")
        for axis in self.axes:
            if not isinstance(axis, (Interval, Levels)):
                raise TypeError(f"axes must be Interval or Levels, got {type(axis).__name__}")
            if isinstance(axis, Interval) and rounding == "randomized" and axis.bins < 2:
                raise ValueError(f"bins must be at least 2 for randomized rounding, got {axis.bins}")
        self.shape: tuple[int, ...] = tuple(axis.bins for axis in self.axes)
        self.bins: int = _check_bins(int(np.prod(self.shape)))
        self.dimension: int = len(self.axes)
        self._strides = np.array([int(np.prod(self.shape[a + 1:])) for a in range(self.dimension)], dtype=np.int64)
        self._axis_reps = [self._axis_representatives(axis) for axis in self.axes]

    # -- constructors ------------------------------------------------------------------------------
    @classmethod
    def interval(cls, *, lower: float, upper: float, bins: int, rounding: str = "simple") -> Quantizer:
        """Quantizer of one interval ``[lower, upper]`` into ``bins`` bins.

        :raise ValueError: if ``bins < 2`` or the interval is empty.
        """
        _check_bins(bins)
        return cls([Interval(lower, upper, bins)], rounding=rounding)

    @classmethod
    def grid(cls, *, lower: Sequence[float], upper: Sequence[float], bins: Sequence[int],
             rounding: str = "simple") -> Quantizer:
        """Quantizer of a box ``prod_a [lower_a, upper_a]`` into ``prod_a bins_a`` bins (e.g. Kendall).

        :raise ValueError: if the three sequences differ in length or an axis is invalid.
        """
        if not (len(lower) == len(upper) == len(bins)):
            raise ValueError(f"lower, upper and bins must have the same length, got {len(lower)}, {len(upper)}, "
                             f"{len(bins)}")
        return cls([Interval(lo, hi, b) for lo, hi, b in zip(lower, upper, bins)], rounding=rounding)

    @classmethod
    def levels(cls, values: Sequence[float]) -> Quantizer:
        """Quantizer of a discrete domain: one bin per level (Rényi-2 entropy on categories).

        :raise ValueError: if there are fewer than 2 levels.
        """
        return cls([Levels(tuple(values))])

    # -- layout ------------------------------------------------------------------------------------
    def _axis_representatives(self, axis: Axis) -> np.ndarray:
        if isinstance(axis, Levels):
            return np.array(axis.values)
        if self.rounding == "simple":
            width = (axis.upper - axis.lower) / axis.bins
            return axis.lower + (np.arange(axis.bins) + 0.5) * width
        return np.linspace(axis.lower, axis.upper, axis.bins)

    def _axis_cells(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ends of the bins of interval axis ``index`` (Voronoi cells if randomized)."""
        axis = self.axes[index]
        assert isinstance(axis, Interval)
        if self.rounding == "simple":
            edges = np.linspace(axis.lower, axis.upper, axis.bins + 1)
            return edges[:-1], edges[1:]
        reps = self._axis_reps[index]
        half = 0.5 * (axis.upper - axis.lower) / (axis.bins - 1)
        return np.maximum(reps - half, axis.lower), np.minimum(reps + half, axis.upper)

    @property
    def representatives(self) -> np.ndarray:
        """Representative value of every bin: shape ``(k,)`` in one dimension, else ``(k, d)``."""
        grids = np.meshgrid(*self._axis_reps, indexing="ij")
        points = np.stack([g.ravel() for g in grids], axis=-1)
        return points[:, 0] if self.dimension == 1 else points

    def subgrid(self, subdivisions: int) -> np.ndarray:
        """Sub-cell centres of every bin, shape ``(k, M, d)`` (``M = subdivisions ** #interval axes``).

        :param subdivisions: sub-cells per bin along every interval axis (levels contribute 1).
        :raise ValueError: if ``subdivisions < 1``.
        """
        m = check_positive_int(subdivisions, "subdivisions")
        points = np.zeros((1, 1, 0))
        for index, axis in enumerate(self.axes):
            if isinstance(axis, Levels):
                along = self._axis_reps[index][:, None]
            else:
                low, high = self._axis_cells(index)
                along = low[:, None] + (np.arange(m)[None, :] + 0.5) / m * (high - low)[:, None]
            kk, mm, dd = points.shape
            size, sub = along.shape
            left = np.broadcast_to(points[:, None, :, None, :], (kk, size, mm, sub, dd))
            right = np.broadcast_to(along[None, :, None, :, None], (kk, size, mm, sub, 1))
            points = np.concatenate([left, right], axis=-1).reshape(kk * size, mm * sub, dd + 1)
        return points

    # -- rounding ----------------------------------------------------------------------------------
    def prepare(self, values: npt.ArrayLike) -> np.ndarray:
        """Validate values and clip them to the declared domain; returns shape ``(n, d)``.

        :param values: shape ``(n,)`` for a one-dimensional domain, ``(n, d)`` otherwise.
        :raise ValueError: on a wrong shape or non-finite values.
        """
        x = np.asarray(values, dtype=np.float64)
        if self.dimension == 1 and x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.dimension:
            expected = "(n,)" if self.dimension == 1 else f"(n, {self.dimension})"
            raise ValueError(f"values must have shape {expected}, got {np.shape(values)}")
        if not np.all(np.isfinite(x)):
            raise ValueError("values must be finite")
        x = x.copy()
        for index, axis in enumerate(self.axes):
            if isinstance(axis, Interval):
                np.clip(x[:, index], axis.lower, axis.upper, out=x[:, index])
        return x

    def _axis_support(self, index: int, column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bins ``(n, r)`` and probabilities ``(n, r)`` of the rounding of one axis (``r`` = 1 or 2)."""
        axis = self.axes[index]
        reps = self._axis_reps[index]
        if isinstance(axis, Levels):
            position = np.clip(np.searchsorted(reps, column), 1, max(reps.size - 1, 1))
            if reps.size == 1:
                return np.zeros((column.size, 1), dtype=np.int64), np.ones((column.size, 1))
            below = reps[position - 1]
            nearest = np.where(column - below <= reps[position] - column, position - 1, position)
            return nearest.astype(np.int64)[:, None], np.ones((column.size, 1))
        if self.rounding == "simple":
            width = (axis.upper - axis.lower) / axis.bins
            bin_index = np.clip(np.floor((column - axis.lower) / width), 0, axis.bins - 1).astype(np.int64)
            return bin_index[:, None], np.ones((column.size, 1))
        step = (axis.upper - axis.lower) / (axis.bins - 1)
        grid_position = (column - axis.lower) / step
        low = np.clip(np.floor(grid_position), 0, axis.bins - 2).astype(np.int64)
        up = np.clip(grid_position - low, 0.0, 1.0)
        return np.stack([low, low + 1], axis=1), np.stack([1.0 - up, up], axis=1)

    def support(self, values: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The rounding distribution ``P_i`` of every value, in sparse form.

        :param values: raw values (clipped to the domain).
        :return: ``(bins, weights)``, both of shape ``(n, r)`` with ``r = 2^(#interval axes)`` under
            randomized rounding and ``r = 1`` otherwise; ``P(bin = bins[i, t]) = weights[i, t]``.
        """
        x = self.prepare(values)
        n = x.shape[0]
        flat = np.zeros((n, 1), dtype=np.int64)
        weight = np.ones((n, 1))
        for index in range(self.dimension):
            axis_bins, axis_weights = self._axis_support(index, x[:, index])
            flat = (flat[:, :, None] + axis_bins[:, None, :] * self._strides[index]).reshape(n, -1)
            weight = (weight[:, :, None] * axis_weights[:, None, :]).reshape(n, -1)
        return flat, weight

    def _sample(self, x: np.ndarray, runs: int, gen: np.random.Generator | None) -> np.ndarray:
        """Bins of prepared values ``x`` (n, d), ``runs`` independent roundings: shape ``(runs, n)``."""
        n = x.shape[0]
        flat = np.zeros((runs, n), dtype=np.int64)
        for index in range(self.dimension):
            axis_bins, axis_weights = self._axis_support(index, x[:, index])
            if axis_bins.shape[1] == 1:
                chosen = np.broadcast_to(axis_bins[:, 0], (runs, n))
            else:
                assert gen is not None
                chosen = axis_bins[:, 0] + (gen.random((runs, n)) < axis_weights[:, 1])
            flat += chosen * self._strides[index]
        return flat

    @property
    def is_random(self) -> bool:
        """Whether quantization draws randomness (randomized rounding on some interval axis)."""
        return self.rounding == "randomized" and any(isinstance(a, Interval) for a in self.axes)

    def quantize(self, values: npt.ArrayLike, *, rng: np.random.Generator | None = None) -> np.ndarray:
        """Bin index of every value (the user-side step 2 of Algorithm 1).

        :param values: raw values, shape ``(n,)`` or ``(n, d)``; clipped to the domain.
        :param rng: randomness for randomized rounding; ``None`` draws from the OS.  Unused (and no
            generator is created) under simple rounding.
        :return: int64 array of ``n`` bins in ``[0, k)``.
        """
        x = self.prepare(values)
        gen = noise_generator(rng) if self.is_random else None
        return self._sample(x, 1, gen)[0]

    def __repr__(self) -> str:
        return f"Quantizer({list(self.axes)!r}, rounding={self.rounding!r})"


# --------------------------------------------------------------------------------------------------
# quantized kernel matrices (eq. (14), eq. (15), and f at the representatives)

def _evaluate(kernel: KernelFunction, x: np.ndarray, y: np.ndarray, vectorized: bool) -> np.ndarray:
    """``f`` on pairs of points given as ``(N, d)`` arrays; one-dimensional points passed as ``(N,)``."""
    if x.shape[1] == 1:
        x, y = x[:, 0], y[:, 0]
    size = x.shape[0]
    if vectorized:
        out = np.asarray(kernel(x, y), dtype=np.float64)
        if out.ndim == 0:
            out = np.full(size, float(out))
    else:
        out = np.array([float(kernel(a, b)) for a, b in zip(x, y)], dtype=np.float64)  # type: ignore[arg-type]
    if out.shape != (size,):
        raise ValueError(f"kernel must return one value per pair, shape ({size},), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError("kernel values must be finite")
    return out


def _default_subdivisions(quantizer: Quantizer) -> int:
    intervals = sum(isinstance(axis, Interval) for axis in quantizer.axes)
    if intervals == 0:
        return 1
    per_bin = math.sqrt(EVALUATION_BUDGET) / quantizer.bins
    m = int(math.floor(max(per_bin, 1.0) ** (1.0 / intervals) + 1e-9))
    return min(max(m, 2), _MAX_SUBDIVISIONS)


def kernel_matrix(kernel: KernelFunction, quantizer: Quantizer, *, kind: str = "average",
                  subdivisions: int | None = None, vectorized: bool = True) -> np.ndarray:
    """The quantized kernel matrix ``A`` (``k x k``) of a plain kernel function on the quantizer's bins.

    ``"average"`` is ``A^Avg`` (eq. (15)), ``"midrange"`` is ``A^Mid`` (eq. (14)), both on a sub-grid
    of sub-cell centres; ``"midpoint"`` is ``f`` at the bin representatives.  See the module
    docstring for their exactness.

    :param kernel: ``f(x, y)``, vectorized over pairs (``(N,)`` arrays in one dimension, ``(N, d)``
        arrays otherwise) unless ``vectorized=False`` (then called once per pair with scalars/rows).
    :param quantizer: the bins.
    :param kind: ``"average"``, ``"midrange"`` or ``"midpoint"``.
    :param subdivisions: sub-cells per bin and interval axis; ``None`` picks the largest value in
        2..64 within :data:`EVALUATION_BUDGET` kernel evaluations.
    :param vectorized: whether ``kernel`` accepts arrays of pairs.
    :return: float64 array of shape ``(k, k)``.
    :raise ValueError: on an unknown kind, invalid subdivisions, or kernel output of the wrong shape
        or not finite.
    """
    _check_kind(kind)
    if not callable(kernel):
        raise TypeError(f"kernel must be callable, got {type(kernel).__name__}")
    if not isinstance(quantizer, Quantizer):
        raise TypeError(f"quantizer must be a Quantizer, got {type(quantizer).__name__}")
    k, d = quantizer.bins, quantizer.dimension
    if kind == "midpoint":
        reps = quantizer.representatives.reshape(k, d)
        x = np.broadcast_to(reps[:, None, :], (k, k, d)).reshape(-1, d)
        y = np.broadcast_to(reps[None, :, :], (k, k, d)).reshape(-1, d)
        return _evaluate(kernel, x, y, vectorized).reshape(k, k)
    m = _default_subdivisions(quantizer) if subdivisions is None else check_positive_int(subdivisions, "subdivisions")
    points = quantizer.subgrid(m)
    sub = points.shape[1]
    out = np.empty((k, k))
    rows = max(1, _CHUNK_ELEMENTS // (k * sub * sub))
    for start in range(0, k, rows):
        block = points[start:start + rows]
        r = block.shape[0]
        x = np.broadcast_to(block[:, None, :, None, :], (r, k, sub, sub, d)).reshape(-1, d)
        y = np.broadcast_to(points[None, :, None, :, :], (r, k, sub, sub, d)).reshape(-1, d)
        values = _evaluate(kernel, x, y, vectorized).reshape(r, k, sub * sub)
        if kind == "average":
            out[start:start + r] = values.mean(axis=-1)
        else:
            out[start:start + r] = 0.5 * (values.max(axis=-1) + values.min(axis=-1))
    return out


# --------------------------------------------------------------------------------------------------
# k-ary randomized response (user side, step 3 of Algorithm 1)

def rr_beta(*, bins: int, epsilon: float) -> float:
    """``beta = k / (k + e^epsilon - 1)``, the probability of answering uniformly (App. A.1).

    Computed as ``k e^-eps / (k e^-eps + 1 - e^-eps)`` so that large epsilon does not overflow.

    :raise ValueError: if ``bins < 2`` or epsilon is not positive.
    """
    k = _check_bins(bins)
    eps = check_epsilon(epsilon)
    shrink = math.exp(-eps)
    return k * shrink / (k * shrink - math.expm1(-eps))


def rr_channel(*, bins: int, epsilon: float) -> np.ndarray:
    """Exact channel ``Q[x, y] = P(report y | bin x) = beta/k + (1 - beta) [x = y]``.

    :raise ValueError: if ``bins < 2`` or epsilon is not positive.
    """
    beta = rr_beta(bins=bins, epsilon=epsilon)
    return np.full((bins, bins), beta / bins) + (1.0 - beta) * np.eye(bins)


def randomize(quantized: npt.ArrayLike, *, bins: int, epsilon: float,
              rng: np.random.Generator | None = None) -> np.ndarray:
    """k-ary randomized response on bin indices, independently per entry: epsilon-LDP per report.

    With probability ``1 - beta`` the true bin, otherwise a uniform draw from all ``bins`` bins.

    :param quantized: bin indices in ``[0, bins)``, any shape.
    :param bins: number of bins ``k >= 2``.
    :param epsilon: privacy-loss parameter per report.
    :param rng: local noise generator; ``None`` draws from the OS (:func:`secure.noise.party.os_generator`).
    :return: int64 reports of the same shape.
    :raise ValueError: on invalid bins, epsilon, or bin indices.
    """
    k = _check_bins(bins)
    beta = rr_beta(bins=k, epsilon=epsilon)
    x = _check_reports(quantized, k)
    gen = noise_generator(rng)
    uniform = gen.random(x.shape) < beta
    return np.where(uniform, gen.integers(0, k, size=x.shape), x)


# --------------------------------------------------------------------------------------------------
# server side

def histogram(reports: npt.ArrayLike, *, bins: int) -> np.ndarray:
    """Counts of the reports per bin: shape ``(bins,)``, or ``(runs, bins)`` for ``(runs, n)`` reports.

    :raise ValueError: on reports outside ``[0, bins)`` or more than two dimensions.
    """
    k = _check_bins(bins)
    r = _check_reports(reports, k)
    if r.ndim == 1:
        return np.bincount(r, minlength=k)
    if r.ndim != 2:
        raise ValueError(f"reports must have shape (n,) or (runs, n), got {r.shape}")
    offsets = (np.arange(r.shape[0], dtype=np.int64) * k)[:, None]
    return np.bincount((r + offsets).ravel(), minlength=r.shape[0] * k).reshape(r.shape[0], k)


def estimate_from_histogram(counts: npt.ArrayLike, matrix: npt.ArrayLike, *,
                            epsilon: float) -> float | np.ndarray:
    """The unbiased estimate ``U_hat`` from the histogram of reports, in ``O(k^2)`` (module docstring).

    ``U_hat = (s^T A s - c . d) / (n (n-1) (1-beta)^2)`` with ``s = c - n b`` and
    ``d_u = (e_u - b)^T A (e_u - b)``: exactly the average of ``(e_r - b)^T A (e_r' - b) / (1-beta)^2``
    over all ordered pairs of distinct reports (= over unordered pairs for a symmetric ``A``).

    :param counts: report counts, shape ``(k,)`` or ``(runs, k)`` (one estimate per row).
    :param matrix: quantized kernel matrix ``A`` (``k x k``).
    :param epsilon: the epsilon the reports were randomized with.
    :return: a float, or an array of ``runs`` floats.
    :raise ValueError: on invalid counts (negative, fewer than 2 reports), matrix, or epsilon.
    """
    a = check_kernel_matrix(matrix)
    k = a.shape[0]
    c = _check_counts(counts, k)
    beta = rr_beta(bins=k, epsilon=epsilon)
    b = np.full(k, beta / k)
    ab, atb = a @ b, a.T @ b
    diagonal = np.diag(a) - ab - atb + b @ ab
    cf = c.astype(np.float64)
    n = cf.sum(axis=-1)
    s = cf - n[..., None] * b
    quadratic = np.einsum("...i,...i->...", s @ a.T, s)  # s^T A s
    result = (quadratic - cf @ diagonal) / (n * (n - 1.0) * (1.0 - beta) ** 2)
    return float(result) if result.ndim == 0 else result


def estimate(reports: npt.ArrayLike, matrix: npt.ArrayLike, *, epsilon: float) -> float:
    """``U_hat`` from the reports (histogram, then :func:`estimate_from_histogram`): ``O(n + k^2)``.

    :raise ValueError: on invalid reports, matrix, or epsilon.
    """
    a = check_kernel_matrix(matrix)
    r = np.asarray(reports)
    if r.ndim != 1:
        raise ValueError(f"reports must be one-dimensional, got shape {r.shape}")
    return float(estimate_from_histogram(histogram(r, bins=a.shape[0]), a, epsilon=epsilon))


def estimate_pairwise(reports: npt.ArrayLike, matrix: npt.ArrayLike, *, epsilon: float) -> float:
    """Reference ``U_hat``: the literal average of the pair estimator over all ``C(n, 2)`` pairs.

    ``f_hat(r, r') = (e_r - b)^T A_s (e_r' - b) / (1 - beta)^2`` with ``A_s = (A + A^T)/2``
    (App. A.1).  ``O(n^2)``; for tests and small ``n`` only.

    :raise ValueError: on invalid reports (fewer than 2), matrix, or epsilon.
    """
    a = _symmetric(check_kernel_matrix(matrix))
    k = a.shape[0]
    r = _check_reports(reports, k)
    if r.ndim != 1 or r.size < 2:
        raise ValueError(f"reports must be one-dimensional with at least 2 entries, got shape {r.shape}")
    beta = rr_beta(bins=k, epsilon=epsilon)
    centred = np.eye(k)[r] - beta / k  # (n, k): e_r - b
    first, second = np.triu_indices(r.size, 1)
    total = 0.0
    step = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, first.size, step):
        i, j = first[start:start + step], second[start:start + step]
        total += float(np.einsum("pk,pk->", centred[i] @ a, centred[j]))
    return total / (first.size * (1.0 - beta) ** 2)


def quantized_ustatistic(values: npt.ArrayLike, quantizer: Quantizer, matrix: npt.ArrayLike) -> float:
    """The value the protocol estimates without bias: the U-statistic of ``A`` on the quantized sample.

    ``(1/(n(n-1))) sum_{i != j} P_i^T A P_j`` with ``P_i`` the rounding distribution of ``x_i``
    (one-hot under simple rounding; the expectation over independent randomized roundings otherwise).

    :raise ValueError: on invalid values (fewer than 2) or a matrix of the wrong size.
    """
    a = check_kernel_matrix(matrix, quantizer.bins)
    idx, w = quantizer.support(values)
    n = idx.shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    totals = np.bincount(idx.ravel(), weights=w.ravel(), minlength=quantizer.bins)
    self_terms = np.einsum("nr,nrs,ns->", w, a[idx[:, :, None], idx[:, None, :]], w)
    return float((totals @ a @ totals - self_terms) / (n * (n - 1.0)))


# --------------------------------------------------------------------------------------------------
# variance (Lemma 1, Theorem 1, and the exact variance given the sample)

def _check_distribution(distribution: npt.ArrayLike, bins: int) -> np.ndarray:
    dist = np.asarray(distribution, dtype=np.float64)
    if dist.shape != (bins,):
        raise ValueError(f"distribution must have shape ({bins},), got {dist.shape}")
    if not np.all(np.isfinite(dist)) or np.any(dist < 0):
        raise ValueError("distribution must be non-negative and finite")
    total = float(dist.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"distribution must sum to 1, got {total}")
    return dist / total


def lemma1_variance(distribution: npt.ArrayLike, matrix: npt.ArrayLike, *, n: int, epsilon: float) -> float:
    """Exact variance of ``U_hat`` when the ``n`` bins are i.i.d. from ``distribution`` (Lemma 1, App. A.1).

    ``C(n,2)^{-1} [ (2n-3) zeta_1 + (zeta_2 - zeta_1) ]`` with
    ``zeta_1 = Var(e_R^T A D)/(1-beta)^2`` and
    ``zeta_2 - zeta_1 = E_{R_1} Var((e_{R_1} - b)^T A e_{R_2} | R_1) / (1-beta)^4``, reports
    ``R, R_1, R_2`` i.i.d. with law ``(1-beta) D + b``.  This is the variance around the population
    quantized value ``D^T A D`` (sampling and randomization together, as in the paper).

    :param distribution: ``D``, the law of one user's bin (length ``k``, sums to 1).
    :param matrix: ``A`` (``k x k``; symmetrized).
    :param n: number of users, at least 2.
    :param epsilon: privacy-loss parameter.
    :raise ValueError: on invalid inputs.
    """
    a = _symmetric(check_kernel_matrix(matrix))
    k = a.shape[0]
    dist = _check_distribution(distribution, k)
    users = check_positive_int(n, "n")
    if users < 2:
        raise ValueError(f"n must be at least 2, got {users}")
    beta = rr_beta(bins=k, epsilon=epsilon)
    keep = 1.0 - beta
    b = np.full(k, beta / k)
    q = keep * dist + b
    ad = a @ dist
    zeta1 = (q @ ad ** 2 - (q @ ad) ** 2) / keep ** 2
    rows = a - (a @ b)[None, :]  # row u: A (e_u - b)
    conditional = rows ** 2 @ q - (rows @ q) ** 2
    excess = float(q @ conditional) / keep ** 4
    pairs = users * (users - 1) / 2.0
    return float(((2 * users - 3) * zeta1 + excess) / pairs)


def theorem1_variance_bound(*, n: int, bins: int, epsilon: float, kernel_range: float = 1.0) -> float:
    """Theorem 1 (= Corollary 2, App. A.1): ``Var(U_hat) <= R^2 [1/(n(1-b)^2) + (1+b)^2/(2n(n-1)(1-b)^4)]``.

    ``b = beta``; ``R = kernel_range`` is ``max A - min A`` (the paper states ``A`` in ``[0, 1]``,
    ``R = 1``; both variance terms are invariant to adding a constant to ``A`` and scale with ``R^2``).

    :raise ValueError: if ``n < 2``, ``bins < 2``, epsilon or kernel_range not positive.
    """
    users = check_positive_int(n, "n")
    if users < 2:
        raise ValueError(f"n must be at least 2, got {users}")
    spread = check_positive(kernel_range, "kernel_range")
    beta = rr_beta(bins=bins, epsilon=epsilon)
    keep = 1.0 - beta
    return spread ** 2 * (1.0 / (users * keep ** 2) + (1.0 + beta) ** 2 / (2.0 * users * (users - 1) * keep ** 4))


def conditional_variance(values: npt.ArrayLike, quantizer: Quantizer, matrix: npt.ArrayLike, *,
                         epsilon: float) -> float:
    """Exact variance of ``U_hat`` given the sample (over rounding and response only).

    ``[4 sum_i g_i^T Sigma_i g_i + 2 sum_{i != j} tr(A Sigma_i A Sigma_j)] / (n(n-1))^2`` (module
    docstring), with ``tr(A Sigma A Sigma) (1-beta)^4 = p^T (A o A) p - 2 sum_u p_u (A p)_u^2 +
    (p^T A p)^2``.  Users with the same rounding distribution are grouped, so simple rounding costs
    ``O(n + k^3)``; randomized rounding ``O(n k^2)``.

    :raise ValueError: on invalid values (fewer than 2), matrix, or epsilon.
    """
    a = _symmetric(check_kernel_matrix(matrix, quantizer.bins))
    k = a.shape[0]
    beta = rr_beta(bins=k, epsilon=epsilon)
    keep = 1.0 - beta
    idx, w = quantizer.support(values)
    n = idx.shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    keys = np.concatenate([idx.astype(np.float64), w], axis=1)
    unique, multiplicity = np.unique(keys, axis=0, return_counts=True)
    r = idx.shape[1]
    u_idx, u_w = unique[:, :r].astype(np.int64), unique[:, r:]
    mult = multiplicity.astype(np.float64)
    totals = np.bincount(idx.ravel(), weights=w.ravel(), minlength=k)  # S = sum_i P_i
    g_total = a @ totals
    a_squared = a * a
    linear = 0.0
    self_trace = 0.0
    report_mass = np.zeros(k)  # sum_i p_i
    outer = np.zeros((k, k))   # sum_i p_i p_i^T
    step = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, u_idx.shape[0], step):
        rows_idx, rows_w, rows_m = u_idx[start:start + step], u_w[start:start + step], mult[start:start + step]
        dense = np.zeros((rows_idx.shape[0], k))
        np.add.at(dense, (np.arange(rows_idx.shape[0])[:, None], rows_idx), rows_w)  # P_i
        p = keep * dense + beta / k
        g = g_total[None, :] - dense @ a
        linear += float(rows_m @ ((p * g * g).sum(axis=1) - (p * g).sum(axis=1) ** 2))
        ap = p @ a
        trace = (p @ a_squared * p).sum(axis=1) - 2.0 * (p * ap * ap).sum(axis=1) + (ap * p).sum(axis=1) ** 2
        self_trace += float(rows_m @ trace)
        report_mass += rows_m @ p
        outer += (p * rows_m[:, None]).T @ p
    sigma_total = np.diag(report_mass) - outer  # (1-beta)^2 * sum_i Sigma_i
    product = a @ sigma_total
    all_trace = float(np.sum(product * product.T))
    quadratic = 2.0 * (all_trace - self_trace) / keep ** 4
    return float((4.0 * linear / keep ** 2 + quadratic) / (n * (n - 1.0)) ** 2)


# --------------------------------------------------------------------------------------------------
# simulation (the whole protocol in one process, many runs vectorized)

def simulate_histograms(values: npt.ArrayLike, *, quantizer: Quantizer, epsilon: float, runs: int = 1,
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """Histograms of the reports of ``runs`` independent executions of the user side on fixed values.

    Every run redraws the randomized rounding (if any) and the randomized response of every user.

    :param values: raw values, one per user (clipped to the domain).
    :param quantizer: the bins and rounding mode.
    :param epsilon: privacy-loss parameter per user.
    :param runs: number of independent executions.
    :param rng: local noise generator; ``None`` draws from the OS.
    :return: int64 counts of shape ``(runs, k)``.
    :raise ValueError: on invalid parameters.
    """
    if not isinstance(quantizer, Quantizer):
        raise TypeError(f"quantizer must be a Quantizer, got {type(quantizer).__name__}")
    check_epsilon(epsilon)
    total_runs = check_positive_int(runs, "runs")
    x = quantizer.prepare(values)
    gen = noise_generator(rng)
    k, n = quantizer.bins, x.shape[0]
    out = np.empty((total_runs, k), dtype=np.int64)
    block = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, total_runs, block):
        count = min(block, total_runs - start)
        bins_drawn = quantizer._sample(x, count, gen)
        reports = randomize(bins_drawn, bins=k, epsilon=epsilon, rng=gen)
        out[start:start + count] = histogram(reports, bins=k)
    return out


def simulate(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
             kind: str = "average", runs: int | None = None, subdivisions: int | None = None,
             rng: np.random.Generator | None = None) -> float | np.ndarray:
    """Algorithm 1 end to end: quantize, randomize, histogram, estimate ``U_hat``.

    :param values: raw values, shape ``(n,)`` (or ``(n, d)`` on a grid), ``n >= 2``.
    :param kernel: plain kernel function ``f(x, y)`` (see :func:`kernel_matrix`).
    :param quantizer: bins ``k`` and rounding mode (``Quantizer.interval`` / ``grid`` / ``levels``).
    :param epsilon: privacy-loss parameter per user.
    :param kind: quantized matrix, ``"average"`` (eq. (15)), ``"midrange"`` (eq. (14)) or ``"midpoint"``.
    :param runs: ``None`` for one estimate (a float), else that many independent runs (an array).
    :param subdivisions: sub-grid resolution for the matrix (see :func:`kernel_matrix`).
    :param rng: local noise generator; ``None`` draws from the OS.
    :raise ValueError: on invalid parameters.
    """
    check_epsilon(epsilon)
    _check_kind(kind)
    count = _check_runs(runs)
    if np.shape(values)[0] < 2:
        raise ValueError(f"at least 2 values are needed, got {np.shape(values)[0]}")
    a = kernel_matrix(kernel, quantizer, kind=kind, subdivisions=subdivisions)
    counts = simulate_histograms(values, quantizer=quantizer, epsilon=epsilon, runs=count or 1, rng=rng)
    estimates = np.asarray(estimate_from_histogram(counts, a, epsilon=epsilon))
    return float(estimates[0]) if count is None else estimates


# --------------------------------------------------------------------------------------------------
# Rényi-2 (collision) entropy

def collision_probability_from_histogram(counts: npt.ArrayLike, *, epsilon: float) -> float | np.ndarray:
    """Unbiased estimate of ``sum_j p_j^2`` (the collision U-statistic, ``A = I``) from the reports' counts.

    :raise ValueError: on invalid counts or epsilon.
    """
    c = np.asarray(counts)
    if c.ndim not in (1, 2):
        raise ValueError(f"counts must have shape (k,) or (runs, k), got {c.shape}")
    return estimate_from_histogram(c, np.eye(c.shape[-1]), epsilon=epsilon)


def renyi2_entropy_from_histogram(counts: npt.ArrayLike, *, epsilon: float) -> float | np.ndarray:
    """``H_2 = -log`` of the collision estimate, clipped to ``[1/k, 1]`` first (eq. (5)).

    The clip (post-processing, no privacy cost) keeps ``H_2`` in ``[0, log k]``; the estimate is no
    longer exactly unbiased (neither is ``-log`` of an unbiased estimate).

    :raise ValueError: on invalid counts or epsilon.
    """
    collision = np.asarray(collision_probability_from_histogram(counts, epsilon=epsilon))
    k = np.asarray(counts).shape[-1]
    entropy = -np.log(np.clip(collision, 1.0 / k, 1.0))
    return float(entropy) if entropy.ndim == 0 else entropy


def renyi2_entropy(values: npt.ArrayLike, *, levels: Sequence[float], epsilon: float,
                   rng: np.random.Generator | None = None) -> float:
    """Locally private Rényi-2 entropy of categorical values: each user reports its category by k-RR.

    :param values: one category per user (rounded to the nearest level).
    :param levels: the ``k >= 2`` categories of the declared domain.
    :param epsilon: privacy-loss parameter per user.
    :param rng: local noise generator; ``None`` draws from the OS.
    :raise ValueError: on invalid parameters.
    """
    quantizer = Quantizer.levels(levels)
    reports = randomize(quantizer.quantize(values), bins=quantizer.bins, epsilon=epsilon, rng=rng)
    if reports.size < 2:
        raise ValueError(f"at least 2 values are needed, got {reports.size}")
    return float(renyi2_entropy_from_histogram(histogram(reports, bins=quantizer.bins), epsilon=epsilon))

