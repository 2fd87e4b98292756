r"""Locally private AUC from Hadamard-response hierarchical histograms (Bell, Bellet, Gascón & Kulkarni).

What
----
Every user holds one integer score in ``[0, d)``, ``d = 2^levels`` (the paper's ``α = log2 d``), and
a *public* class (positive or negative; the paper's assumption (ii) in §4).  An untrusted server
estimates the AUC of the two classes::

    AUC = (#{(s+, s-) : s+ > s-} + 1/2 #{(s+, s-) : s+ = s-}) / (n+ n-)

(ties count 1/2, as :func:`sklearn.metrics.roc_auc_score`; ``count_ties=False`` gives the paper's
strict ``UAUC / (n+ n-)``).  Each user sends one row index and one bit; the server never builds a
table of size ``d``, so ``d = 2^16`` and far beyond (``2^40`` in the tests) are routine.

Protocol
--------
1. *Local randomizer* (App. B, Algorithm 2), :func:`hadamard_randomize`: a user with value ``q`` in
   a domain of size ``2^l`` draws a row ``j`` uniformly from ``[0, 2^l)`` and reports ``(j, z)``
   with ``z = H[j, q] = (-1)^popcount(j & q)`` (the Sylvester–Hadamard entry, computed by bit
   parity, never from a matrix), kept with probability ``e^ε/(1 + e^ε)`` and negated otherwise.
2. *Frequency oracle* (Algorithm 3), :class:`FrequencyOracle`: the estimated count of ``q`` is
   ``K Σ_i z_i H[j_i, q]`` with ``K = (e^ε + 1)/(e^ε - 1) = 1/(1 - 2ρ)``, ``ρ`` the flip
   probability.  It is unbiased (Lemma 5); its variance is exactly ``n_l K^2 - count(q)``; the
   answers for two values are uncorrelated and pairwise independent (Lemma 6).  The server groups
   the reports by row once where rows repeat (``Σ z_i`` per distinct ``j``), so a query costs at
   most one parity per stored row, and a batch of queries at one level is evaluated by a split ("meet in the middle")
   Hadamard sum: high bits of the queries against high bits of the rows, then low against low.
3. *Hierarchical histograms per class* (App. B.2.2), :func:`randomize_hierarchy` and
   :class:`HadamardHierarchy`: node ``p`` at level ``l`` (``1 <= l <= levels``) is the value
   ``p`` in a domain of size ``2^l``, i.e. the dyadic interval ``[p 2^(levels-l), (p+1) 2^(levels-l))``;
   a user with score ``s`` reports ``s >> (levels - l)`` at level ``l``.  The root is the class
   size, public and exact.  Two splitting strategies:

   - ``split="users"`` (i): the users of a class are split evenly and at random across the
     ``levels`` levels (sizes ``floor`` / ``ceil`` of ``n / levels``); each reports once with the
     full ``ε`` (pure ε-LDP).  Level ``l``'s oracle counts the ``n_l`` users there and is scaled by
     ``n / n_l``; over the random split it is unbiased for the whole class, with variance
     ``n^2/n_l (K^2 - f + f (1 - f)(n - n_l)/(n - 1))``, ``f = h/n`` (sampling without replacement
     adds the last term), at most ``v = n^2 K^2 / min_l n_l``.
   - ``split="budget"`` (ii): every user reports at every level with ``ε_0`` each.  With
     ``delta = 0``, basic composition: ``ε_0 = ε / levels`` (pure ε-LDP).  With ``delta > 0``,
     advanced composition in the form of Dwork, Rothblum & Vadhan (2010): ``k`` reports
     of ``ε_0``-LDP each are ``(sqrt(2 k ln(1/δ)) ε_0 + k ε_0 (e^{ε_0} - 1), δ)``-LDP together;
     ``ε_0`` is the largest value whose bound is ``<= ε`` (bisection), or ``ε / levels`` if that is
     larger (:func:`level_epsilon`).  Variance bound ``v = n K_0^2``.

4. *Pruned top-down traversal* (§4, eq. 10), :func:`hierarchical_auc`: from the root, a node ``p``
   whose floored estimates satisfy ``h~+_p h~-_p >= τ``, with ``h~±_p = max(ĥ±_p, sqrt(a v±)/2)``
   and ``τ = a sqrt(v+ v-)``, is *expanded*: it adds ``ĥ+_{p1} ĥ-_{p0}`` (positives in its right
   half above negatives in its left half) and its two children are visited.  Otherwise it is
   *discarded*: ``discard="half"`` adds ``1/2 (ĥ+_{p0} + ĥ+_{p1})(ĥ-_{p0} + ĥ-_{p1})`` (the paper's
   estimate of ``1/2 h+_p h-_p``, Corollary 4's ``a``), ``discard="zero"`` adds 0 (the paper's
   "algorithm variant", Corollary 5's ``a``).  Ties: a leaf holds one value, so its pairs are all
   ties; with ``count_ties=True`` each leaf below an expanded node adds ``1/2 ĥ+_b ĥ-_b``
   (independent classes, so unbiased for ``1/2 h+_b h-_b``).  :func:`optimal_threshold_constant`
   gives ``a``: Corollary 4, ``a = (1 + sqrt(21/8) (2 C n α / n_min^2)^{1/4})^2``, or Corollary 5,
   ``a = (1 + sqrt(sqrt(2 C α n) / (16 n_min)))^2``, with ``n = n+ + n-``, ``n_min = min(n+, n-)``
   and ``C = max(v±/(n± α))`` (the paper's ``v± = C n± α``).  ``threshold_constant=0`` disables
   pruning (``τ = 0``: every node is expanded, ``O(d)`` nodes, and the estimate is unbiased).

Threat model
------------
Local differential privacy, one user = one score: every user randomizes her own score on her own
device, with her own randomness (:func:`secure.noise.party.os_generator` unless a seeded generator is
passed, as the tests do), and any two scores are neighbours.  Each report is ε-LDP
(``split="users"``, or ``"budget"`` with ``delta = 0``), or the set of a user's reports is
``(ε, δ)``-LDP (``"budget"`` with ``delta > 0``), against an untrusted server that sees every
report and may compute anything from them; the AUC is post-processing.  The flip probability is
``1/(1 + e^ε)`` rounded *up* to the ``2^-53`` grid of the uniform integers that decide the flip, so
the realised privacy loss ``ln((1 - ρ)/ρ)`` never exceeds ``ε``; the debiasing uses the realised
``ρ``.  Public: the class labels and class sizes, and which level a user reports at (drawn
independently of the data).  Not covered: users who lie (each can move any node estimate by ``K``,
or ``K n / n_l`` with the user split), timing channels.  This module is plain NumPy in one process:
there is no MPyC here, so DESIGN's secure-layer threat model (``t < m/2`` passive parties) does not
apply.

Costs
-----
- User: one ``(j, bit)`` report, ``l + 1`` bits at level ``l`` (``split="users"``), or ``levels``
  reports (``"budget"``); ``O(1)`` time per report.
- Server memory: the reports, then per level the distinct rows with a nonzero sign sum (at most
  ``min(n_l, 2^l)``), and the visited nodes; no array of length ``d`` (grouping at a level uses a
  ``bincount`` of length ``2^l`` only when ``2^l <= 4 n_l``; sparser levels keep the reports).
- Server time: grouping ``O(n_l)`` per level; the traversal asks
  level ``l`` for the children of the ``|R_{l-1}|`` expanded nodes, which costs at most
  ``2 |R_{l-1}| u_l`` parities (``u_l`` distinct rows) and much less with the split evaluation.
  Theorem 4's ``O(n log d)`` counts ``|R_l|`` as a constant; Lemma 4 bounds ``E|R_l|`` by
  ``(sqrt(n+) + sqrt(n-)) / (2 (sqrt(a) - 1) sqrt(C α))``, independent of ``d``.

Notes on the paper
------------------
- Algorithm 2 and 3 as printed scale both ``y`` and ``z`` by ``1/sqrt(2^l)``, which makes
  Algorithm 3's ``z_q`` estimate ``count(q)/2^l``; with ``±1`` entries (as here) it estimates
  ``count(q)``, the unbiasedness Lemma 5 states.
- Eq. (23) bounds the MSE by ``4 n_l e^ε/(e^ε - 1)^2 = n_l (K^2 - 1)``; the exact variance is
  ``n_l K^2 - count(q)``, which exceeds that unless every user holds ``q``.  ``v`` here is the true
  bound ``n_l K^2`` (times the split's scaling).
- App. B.2.2's advanced-composition budget ``ε/(sqrt(α)(1 + sqrt(2 ln(1/δ))))`` "for
  ``ε <= sqrt(α) ln 2``" does not always satisfy the DRV bound (``α = 100, δ = 1/2, ε = 10 ln 2``
  composes to about 15.6); :func:`level_epsilon` solves the bound instead.
- Theorem 3 needs conditions 1-4; ``split="budget"`` meets all of them.  ``split="users"`` breaks
  condition 4 (a user reports at one level only): its MSE bound is ``α`` times larger with respect
  to the sample, or Theorem 3's with respect to the population (App. B.2.2, Table 1).
  :func:`mse_bound` is Theorem 3's bound (or the variant's) for a given ``a``.

References: J. Bell, A. Bellet, A. Gascón, T. Kulkarni, *Private Protocols for U-Statistics in the
Local Model and Beyond* (arXiv v1 §4, App. B.1-B.3; v2 App. B, D.1); C. Dwork,
G. Rothblum, S. Vadhan, *Boosting and Differential Privacy* (FOCS 2010); R. Bassily et al. (2017)
and T. Kulkarni, G. Cormode, D. Srivastava (2019) for Hadamard response and hierarchical histograms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, Protocol, Sequence, runtime_checkable

import numpy as np
import numpy.typing as npt

from dp.validation import (check_delta, check_epsilon, check_finite, check_integer, check_positive,
                           check_positive_int)
from secure.noise.party import noise_generator

__all__ = [
    "SPLITS",
    "DISCARDS",
    "MAX_LEVELS",
    "flip_probability",
    "hadamard_entry",
    "hadamard_output_probabilities",
    "HadamardReports",
    "hadamard_randomize",
    "FrequencyOracle",
    "level_epsilon",
    "composed_epsilon",
    "HierarchyReports",
    "randomize_hierarchy",
    "HierarchyEstimate",
    "HadamardHierarchy",
    "ExactHierarchy",
    "HierarchyTable",
    "variance_constant",
    "optimal_threshold_constant",
    "mse_bound",
    "AUCTraversal",
    "hierarchical_auc",
    "LocalAUCResult",
    "ldp_auc",
]

Split = Literal["users", "budget"]
Discard = Literal["half", "zero"]

#: Splitting strategies: ``users`` (each user reports at one level with the full ε) and ``budget``
#: (each user reports at every level with a share of ε).
SPLITS: Final[tuple[str, ...]] = ("users", "budget")
#: What a discarded node contributes: ``half`` (eq. 10, Corollary 4) or ``zero`` (the variant, Corollary 5).
DISCARDS: Final[tuple[str, ...]] = ("half", "zero")
#: Largest number of levels (``domain_size <= 2**62``): rows and values are int64.
MAX_LEVELS: Final[int] = 62

_GRID_BITS: Final[int] = 53        # flips decided by uniform 53-bit integers
_BLOCK: Final[int] = 1 << 21       # largest temporary matrix (elements) in the Hadamard sums
_EXACT_OUTPUT_MAX_BITS: Final[int] = 20
_TABLE_MAX_LEVELS: Final[int] = 24


# --------------------------------------------------------------------------------------------------
# validation

def _check_domain_size(domain_size: int) -> int:
    size = check_positive_int(domain_size, "domain_size")
    if size < 2 or size & (size - 1) or size > 1 << MAX_LEVELS:
        raise ValueError(f"domain_size must be a power of two between 2 and 2**{MAX_LEVELS}, got {domain_size}")
    return size


def _check_bits(bits: int) -> int:
    value = check_integer(bits, "bits")
    if not 1 <= value <= MAX_LEVELS:
        raise ValueError(f"bits must lie in [1, {MAX_LEVELS}], got {bits}")
    return value


def _check_split(split: str) -> Split:
    if split not in SPLITS:
        raise ValueError(f"split must be 'users' or 'budget', got {split!r}")
    return split  # type: ignore[return-value]


def _check_discard(discard: str) -> Discard:
    if discard not in DISCARDS:
        raise ValueError(f"discard must be 'half' or 'zero', got {discard!r}")
    return discard  # type: ignore[return-value]


def _check_count_ties(count_ties: bool) -> bool:
    if not isinstance(count_ties, bool):
        raise TypeError(f"count_ties must be a bool, got {count_ties!r}")
    return count_ties


def _check_values(values: npt.ArrayLike, upper: int, name: str) -> np.ndarray:
    """``values`` as a non-empty one-dimensional int64 array of integers in ``[0, upper)``."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite integers, got {array[~np.isfinite(array)][0]}")
        fractional = array != np.floor(array)
        if np.any(fractional):
            raise ValueError(f"{name} must be integers, got {array[fractional][0]}")
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    low, high = array.min(), array.max()
    if low < 0:
        raise ValueError(f"{name} must lie in [0, {upper}), got {low}")
    if high >= upper:
        raise ValueError(f"{name} must lie in [0, {upper}), got {high}")
    return array.astype(np.int64)


def _check_level(level: int, levels: int) -> int:
    value = check_integer(level, "level")
    if not 0 <= value <= levels:
        raise ValueError(f"level must lie in [0, {levels}], got {level}")
    return value


def _check_nodes(nodes: npt.ArrayLike, level: int) -> np.ndarray:
    array = np.asarray(nodes)
    if array.ndim != 1:
        raise ValueError(f"nodes must be a one-dimensional array, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    return _check_values(array, 1 << level, "nodes")


# --------------------------------------------------------------------------------------------------
# Algorithm 2: the local randomizer

def _flip_threshold(epsilon: float) -> int:
    """``T`` with ``T / 2^53 >= 1/(1 + e^ε)``: flip when a uniform 53-bit integer is below ``T``.

    ``1/(1 + e^ε)`` is computed with a relative error of a few ulps; ``ceil`` then one more grid
    step rounds it up for sure, so ``ln((1 - T/2^53) / (T/2^53)) <= ε``.
    """
    rho = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    threshold = math.ceil(math.ldexp(rho, _GRID_BITS)) + 1
    if 2 * threshold >= 1 << _GRID_BITS:
        raise ValueError(f"epsilon is too small for a flip probability below 1/2 on the 2^-53 grid, got {epsilon}")
    return threshold


def flip_probability(epsilon: float) -> float:
    """Return the probability ``ρ`` with which Algorithm 2 negates its bit, as realised here.

    The paper's ``1/(1 + e^ε)`` rounded *up* to the ``2^-53`` grid (at most ``2^-52`` above it), so
    that the privacy loss ``ln((1 - ρ)/ρ)`` is at most ``ε``.  For ``ε`` above about 36.7 the
    grid's smallest step ``2^-53`` is used, and the realised loss is ``ln(2^53 - 1)``.

    :param epsilon: privacy-loss parameter of one report, finite and positive.
    :return: ``ρ`` in ``(0, 1/2)``.
    :raise ValueError: if epsilon is not finite and positive, or so small that ``ρ`` rounds to 1/2.
    """
    return math.ldexp(_flip_threshold(check_epsilon(epsilon)), -_GRID_BITS)


def _debias_factor(threshold: int) -> float:
    """``K = 1/(1 - 2ρ)`` for ``ρ = threshold / 2^53`` (``(e^ε + 1)/(e^ε - 1)`` at the paper's ρ)."""
    return math.ldexp(1.0, _GRID_BITS) / float((1 << _GRID_BITS) - 2 * threshold)


def _parity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``popcount(left & right) mod 2`` elementwise (with broadcasting), as uint8."""
    return np.bitwise_count(left & right) & np.uint8(1)


def hadamard_entry(row: npt.ArrayLike, column: npt.ArrayLike) -> np.ndarray:
    """Entries ``H[row, column] = (-1)^popcount(row & column)`` of the Sylvester–Hadamard matrix.

    Computed by bit parity, elementwise with NumPy broadcasting; no matrix is built.

    :param row: non-negative integers (array-like).
    :param column: non-negative integers (array-like), broadcastable against ``row``.
    :return: int8 array of ``±1``.
    :raise ValueError: if an index is negative.
    :raise TypeError: if an index is not an integer.
    """
    rows, columns = np.asarray(row), np.asarray(column)
    for name, array in (("row", rows), ("column", columns)):
        if array.dtype.kind not in "iu":
            raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
        if array.size and array.min() < 0:
            raise ValueError(f"{name} must be non-negative, got {array.min()}")
        if array.size and array.max() >= 1 << 63:
            raise ValueError(f"{name} must be below 2**63, got {array.max()}")
    parity = _parity(rows.astype(np.int64), columns.astype(np.int64))
    return (1 - 2 * parity.astype(np.int8)).astype(np.int8)


def hadamard_output_probabilities(value: int, *, bits: int, epsilon: float) -> np.ndarray:
    """Exact distribution of one report of :func:`hadamard_randomize` for the input ``value``.

    ``P[(j, z)] = 2^-bits (1 - ρ)`` if ``z = H[j, value]`` and ``2^-bits ρ`` otherwise, with ``ρ``
    from :func:`flip_probability`; every entry is a float exactly.  This is a table of size
    ``2^(bits+1)``, for audits on small domains.

    :param value: the user's input, an integer in ``[0, 2^bits)``.
    :param bits: the domain has ``2^bits`` values, ``1 <= bits <= 20``.
    :param epsilon: privacy-loss parameter of the report.
    :return: float64 array of shape ``(2^bits, 2)``: column 0 for ``z = -1``, column 1 for ``z = +1``.
    :raise ValueError: if a parameter is out of range.
    """
    width = _check_bits(bits)
    if width > _EXACT_OUTPUT_MAX_BITS:
        raise ValueError(f"bits must be at most {_EXACT_OUTPUT_MAX_BITS} for the exact distribution, got {bits}")
    index = check_integer(value, "value")
    if not 0 <= index < 1 << width:
        raise ValueError(f"value must lie in [0, {1 << width}), got {value}")
    flip = flip_probability(epsilon)
    keep = 1.0 - flip
    entries = hadamard_entry(np.arange(1 << width, dtype=np.int64), index)
    scale = math.ldexp(1.0, -width)
    table = np.empty((1 << width, 2))
    table[:, 1] = np.where(entries > 0, keep, flip) * scale
    table[:, 0] = np.where(entries > 0, flip, keep) * scale
    return table


@dataclass(frozen=True)
class HadamardReports:
    """The reports of the users of one frequency oracle (Algorithm 2): a row and a ``±1`` bit each.

    :param bits: the oracle's domain has ``2^bits`` values.
    :param epsilon: privacy-loss parameter of each report.
    :param rows: int64 row indices ``j`` in ``[0, 2^bits)``, one per user.
    :param signs: int8 reported bits ``z = ±H[j, q]``, one per user.
    """

    bits: int
    epsilon: float
    rows: np.ndarray
    signs: np.ndarray

    def __post_init__(self) -> None:
        _check_bits(self.bits)
        check_epsilon(self.epsilon)
        rows, signs = np.asarray(self.rows), np.asarray(self.signs)
        if rows.ndim != 1 or signs.shape != rows.shape:
            raise ValueError(f"rows and signs must be one-dimensional of equal length, got {rows.shape} and {signs.shape}")
        if rows.size:
            _check_values(rows, 1 << self.bits, "rows")
            if not np.all((signs == 1) | (signs == -1)):
                raise ValueError("signs must be +1 or -1")

    @property
    def users(self) -> int:
        """Number of reports."""
        return int(np.asarray(self.rows).size)

    @property
    def flip_probability(self) -> float:
        """The realised flip probability ``ρ`` (:func:`flip_probability`)."""
        return flip_probability(self.epsilon)


def _randomize(values: np.ndarray, bits: int, threshold: int, epsilon: float,
               generator: np.random.Generator) -> HadamardReports:
    """Algorithm 2 for every entry of ``values`` (already validated)."""
    rows = generator.integers(0, 1 << bits, size=values.size, dtype=np.int64)
    flips = generator.integers(0, 1 << _GRID_BITS, size=values.size, dtype=np.int64) < threshold
    negative = _parity(rows, values) ^ flips.view(np.uint8)
    signs = (1 - 2 * negative.astype(np.int8)).astype(np.int8)
    return HadamardReports(bits=bits, epsilon=epsilon, rows=rows, signs=signs)


def hadamard_randomize(values: npt.ArrayLike, *, bits: int, epsilon: float,
                       rng: np.random.Generator | None = None) -> HadamardReports:
    """Algorithm 2, for each user: report a uniform row ``j`` and ``H[j, q]``, negated with prob. ``ρ``.

    Each report is ε-LDP: for any two inputs, the probabilities of any output differ by the factor
    ``(1 - ρ)/ρ <= e^ε`` at most (:func:`hadamard_output_probabilities`).  Vectorized over users;
    every user's randomness is independent.

    :param values: the users' inputs, integers in ``[0, 2^bits)``.
    :param bits: the domain has ``2^bits`` values, ``1 <= bits <= 62``.
    :param epsilon: privacy-loss parameter of each report.
    :param rng: the users' randomness; ``None`` draws from the OS (:func:`secure.noise.party.os_generator`).
    :return: the reports.
    :raise ValueError: if a value lies outside the domain or epsilon is not finite and positive.
    :raise TypeError: if a parameter has the wrong type.
    """
    width = _check_bits(bits)
    eps = check_epsilon(epsilon)
    threshold = _flip_threshold(eps)
    inputs = _check_values(values, 1 << width, "values")
    return _randomize(inputs, width, threshold, eps, noise_generator(rng))


# --------------------------------------------------------------------------------------------------
# Hadamard sums: sum_k weights[k] * H[rows[k], q] for a batch of q

def _signed_parity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Matrix ``(-1)^popcount(left[i] & right[k])`` as float64."""
    return 1.0 - 2.0 * _parity(left[:, None], right[None, :])


def _direct_sums(rows: np.ndarray, weights: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """One parity per (query, row): ``Σ w - 2 Σ_{odd parity} w``."""
    out = np.empty(queries.size)
    total = float(weights.sum())
    step = max(1, _BLOCK // rows.size)
    for start in range(0, queries.size, step):
        block = queries[start:start + step]
        odd = _parity(block[:, None], rows[None, :]).astype(np.float64)
        out[start:start + step] = total - 2.0 * (odd @ weights)
    return out


def _split_sums(rows: np.ndarray, weights: np.ndarray, queries: np.ndarray, bits: int, split: int) -> np.ndarray:
    """Hadamard sums by splitting indices into ``split`` high bits and ``bits - split`` low bits.

    ``<j, q> = <j_hi, q_hi> + <j_lo, q_lo>``, so with ``S[a, c] = Σ_{j: j_lo = c} w_j H[j_hi, a]`` for
    every distinct high part ``a`` of the queries, ``Σ_j w_j H[j, q] = Σ_c S[q_hi, c] H[c, q_lo]``.
    Cost: (distinct ``q_hi``) x (rows) + (queries) x (distinct ``j_lo``) parities.
    """
    shift = bits - split
    mask = (1 << shift) - 1
    row_high, row_low = rows >> shift, rows & mask
    query_high, query_low = queries >> shift, queries & mask
    ancestors, ancestor_index = np.unique(query_high, return_inverse=True)
    if (1 << shift) <= 4 * rows.size:
        lows = np.arange(1 << shift, dtype=np.int64)
        low_index = row_low
    else:
        lows, low_index = np.unique(row_low, return_inverse=True)
    width = lows.size
    order = np.argsort(ancestor_index, kind="stable")
    bounds = np.searchsorted(ancestor_index[order], np.arange(ancestors.size + 1))
    out = np.empty(queries.size)
    step = max(1, _BLOCK // max(rows.size, width))
    query_step = max(1, _BLOCK // width)
    for start in range(0, ancestors.size, step):
        stop = min(start + step, ancestors.size)
        signed = _signed_parity(ancestors[start:stop], row_high) * weights[None, :]
        flat = (np.arange(stop - start, dtype=np.int64)[:, None] * width + low_index[None, :]).ravel()
        partial = np.bincount(flat, weights=signed.ravel(), minlength=(stop - start) * width)
        partial = partial.reshape(stop - start, width)
        members = order[bounds[start]:bounds[stop]]
        for first in range(0, members.size, query_step):
            chunk = members[first:first + query_step]
            out[chunk] = np.einsum("ij,ij->i", partial[ancestor_index[chunk] - start],
                                   _signed_parity(query_low[chunk], lows))
    return out


def _choose_split(rows: int, queries: np.ndarray, bits: int) -> int:
    """The number of high bits minimising the parity count of :func:`_split_sums` (0: direct)."""
    best_cost, best = queries.size * rows, 0
    for split in range(1, bits):
        shift = bits - split
        ancestors = np.unique(queries >> shift).size
        lows = 1 << shift if (1 << shift) <= 4 * rows else rows
        cost = ancestors * rows + queries.size * lows
        if cost < best_cost:
            best_cost, best = cost, split
    return best


def _hadamard_sums(rows: np.ndarray, weights: np.ndarray, queries: np.ndarray, bits: int, *,
                   split: int | None = None) -> np.ndarray:
    """``Σ_k weights[k] H[rows[k], q]`` for every query ``q`` (float64; exact for integer weights < 2^53).

    :param split: number of high bits for :func:`_split_sums`; ``None`` chooses by cost, 0 is direct.
    """
    if queries.size == 0 or rows.size == 0:
        return np.zeros(queries.size)
    chosen = _choose_split(rows.size, queries, bits) if split is None else split
    if chosen == 0:
        return _direct_sums(rows, weights, queries)
    return _split_sums(rows, weights, queries, bits, chosen)


# --------------------------------------------------------------------------------------------------
# Algorithm 3: the frequency oracle

class FrequencyOracle:
    """Algorithm 3 on the reports of one domain of size ``2^bits``: unbiased counts of any value.

    When rows repeat (``2^bits <= 4 n``) the reports are grouped by row once, in ``O(n)`` time with
    a ``bincount`` of length ``2^bits <= 4 n``: the sum of the bits per distinct row, rows whose bits
    cancel dropped.  In sparser domains rows rarely repeat and the reports are kept as they are.
    Memory is ``O(min(n, 2^bits))``, never ``O(2^bits)`` beyond ``4 n``.

    The count estimate of ``q`` is ``K Σ_i z_i H[j_i, q]``, ``K = 1/(1 - 2ρ)``; it is unbiased
    (Lemma 5) with variance ``n K^2 - count(q)`` (:meth:`variance`), and two different values get
    uncorrelated, pairwise independent answers (Lemma 6).

    :param reports: the users' reports (at least one).
    :raise ValueError: if there are no reports.
    """

    def __init__(self, reports: HadamardReports) -> None:
        if not isinstance(reports, HadamardReports):
            raise TypeError(f"reports must be HadamardReports, got {type(reports).__name__}")
        if reports.users == 0:
            raise ValueError("reports must hold at least one user, got 0")
        self._bits = reports.bits
        self._epsilon = reports.epsilon
        self._users = reports.users
        threshold = _flip_threshold(reports.epsilon)
        self._flip = math.ldexp(threshold, -_GRID_BITS)
        self._debias = _debias_factor(threshold)
        rows = np.asarray(reports.rows, dtype=np.int64)
        signs = np.asarray(reports.signs, dtype=np.float64)
        if (1 << self._bits) <= 4 * rows.size:
            sums = np.bincount(rows, weights=signs, minlength=1 << self._bits)
            distinct = np.flatnonzero(sums)
            self._rows = distinct.astype(np.int64)
            self._sums = sums[distinct]
        else:  # rows rarely repeat: grouping (a sort) would save little, keep the reports as they are
            self._rows = rows.copy()
            self._sums = signs.astype(np.float64)

    @property
    def bits(self) -> int:
        """The domain has ``2^bits`` values."""
        return self._bits

    @property
    def users(self) -> int:
        """Number of reports ``n``."""
        return self._users

    @property
    def epsilon(self) -> float:
        """Privacy-loss parameter of each report."""
        return self._epsilon

    @property
    def flip_probability(self) -> float:
        """The realised flip probability ``ρ``."""
        return self._flip

    @property
    def debias_factor(self) -> float:
        """``K = 1/(1 - 2ρ)``, i.e. ``(e^ε + 1)/(e^ε - 1)`` at the realised ``ρ``."""
        return self._debias

    @property
    def stored_rows(self) -> int:
        """Number of (row, weight) pairs kept: distinct rows with a nonzero sum, or all reports."""
        return int(self._rows.size)

    @property
    def variance_bound(self) -> float:
        """``n K^2``, the largest variance of a count estimate (attained at a value nobody holds)."""
        return self._users * self._debias ** 2

    def counts(self, values: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates of how many users hold each of ``values``.

        :param values: integers in ``[0, 2^bits)``.
        :return: float64 array of estimates (may be negative).
        :raise ValueError: if a value lies outside the domain.
        """
        return self._unchecked_counts(_check_nodes(values, self._bits))

    def _unchecked_counts(self, queries: np.ndarray) -> np.ndarray:
        return self._debias * _hadamard_sums(self._rows, self._sums, queries, self._bits)

    def frequencies(self, values: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates of the fraction of users holding each of ``values`` (counts / n).

        :param values: integers in ``[0, 2^bits)``.
        :return: float64 array.
        :raise ValueError: if a value lies outside the domain.
        """
        return self.counts(values) / self._users

    def variance(self, true_counts: npt.ArrayLike) -> np.ndarray:
        """Exact variance ``n K^2 - count`` of the count estimate of a value held by ``count`` users.

        :param true_counts: the true counts, in ``[0, n]``.
        :return: float64 array.
        :raise ValueError: if a count is outside ``[0, n]``.
        """
        counts = np.asarray(true_counts, dtype=np.float64)
        if counts.size and (np.any(~np.isfinite(counts)) or counts.min() < 0 or counts.max() > self._users):
            raise ValueError(f"true_counts must lie in [0, {self._users}]")
        return self._users * self._debias ** 2 - counts


# --------------------------------------------------------------------------------------------------
# splitting the budget across levels

def composed_epsilon(level_epsilon: float, *, levels: int, delta: float = 0.0) -> float:
    """Total privacy loss of ``levels`` reports that are each ``level_epsilon``-LDP.

    Basic composition ``k ε_0``; with ``delta > 0`` also the advanced composition of Dwork,
    Rothblum & Vadhan (2010), ``sqrt(2 k ln(1/δ)) ε_0 + k ε_0 (e^{ε_0} - 1)``, and the smaller of
    the two (the user's reports are then ``(total, δ)``-LDP).

    :param level_epsilon: ``ε_0`` of each report.
    :param levels: number of reports ``k >= 1``.
    :param delta: ``δ`` in ``[0, 1)``; 0 gives basic composition.
    :return: the total ``ε``.
    :raise ValueError: if a parameter is out of range.
    """
    eps0 = check_epsilon(level_epsilon)
    count = check_positive_int(levels, "levels")
    dlt = check_delta(delta)
    basic = count * eps0
    if dlt == 0.0:
        return basic
    return min(basic, _advanced(eps0, count, dlt))


def _advanced(eps0: float, count: int, delta: float) -> float:
    return math.sqrt(2.0 * count * math.log(1.0 / delta)) * eps0 + count * eps0 * math.expm1(eps0)


def level_epsilon(epsilon: float, *, levels: int, delta: float = 0.0, split: str = "users") -> float:
    """The ε each report gets under a splitting strategy (App. B.2.2).

    ``split="users"``: every user reports once, with ``ε``.  ``split="budget"``: every user reports
    at all ``levels`` levels; ``delta = 0`` gives ``ε / levels`` (basic composition); ``delta > 0``
    gives the largest ``ε_0`` with ``sqrt(2 k ln(1/δ)) ε_0 + k ε_0 (e^{ε_0} - 1) <= ε``
    (Dwork–Rothblum–Vadhan, found by bisection), or ``ε / levels`` if that is larger.

    :param epsilon: the user's total budget.
    :param levels: number of levels ``α = log2 d``.
    :param delta: ``δ`` in ``[0, 1)``; must be 0 with ``split="users"``.
    :param split: ``"users"`` or ``"budget"``.
    :return: ``ε_0``.
    :raise ValueError: if a parameter is out of range.
    """
    eps = check_epsilon(epsilon)
    count = check_positive_int(levels, "levels")
    dlt = check_delta(delta)
    mode = _check_split(split)
    if mode == "users":
        if dlt != 0.0:
            raise ValueError(f"delta must be 0 with split='users' (each user reports once, pure epsilon-LDP), got {delta}")
        return eps
    basic = eps / count
    if dlt == 0.0:
        return basic
    low, high = 0.0, eps
    if _advanced(high, count, dlt) <= eps:
        return max(basic, high)
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if _advanced(middle, count, dlt) <= eps:
            low = middle
        else:
            high = middle
    return max(basic, low)


# --------------------------------------------------------------------------------------------------
# hierarchical histograms: user side

@dataclass(frozen=True)
class HierarchyReports:
    """All reports of one class's users for a hierarchical histogram (user side of App. B.2).

    :param domain_size: ``d = 2^levels``.
    :param split: ``"users"`` or ``"budget"``.
    :param users: number of users ``n`` (public: the class size).
    :param epsilon: each user's total budget.
    :param delta: ``δ`` (0 for pure LDP).
    :param level_epsilon: ``ε_0`` of each report.
    :param reports: ``reports[l - 1]`` are the reports at level ``l`` (``bits = l``).
    """

    domain_size: int
    split: str
    users: int
    epsilon: float
    delta: float
    level_epsilon: float
    reports: tuple[HadamardReports, ...]

    @property
    def levels(self) -> int:
        """``α = log2 d``."""
        return self.domain_size.bit_length() - 1


def randomize_hierarchy(values: npt.ArrayLike, *, domain_size: int, epsilon: float, delta: float = 0.0,
                        split: str = "users", rng: np.random.Generator | None = None) -> HierarchyReports:
    """Every user of one class randomizes her score for a hierarchical histogram (App. B.2.2).

    ``split="users"``: a uniformly random, data-independent assignment puts ``floor``/``ceil`` of
    ``n / levels`` users at each level; a user at level ``l`` sends one Algorithm 2 report of
    ``s >> (levels - l)`` in a domain of size ``2^l`` with the full ``ε``.  ``split="budget"``: every
    user sends one report per level with :func:`level_epsilon`.

    :param values: the class's scores, integers in ``[0, domain_size)``.
    :param domain_size: ``d``, a power of two in ``[2, 2^62]``.
    :param epsilon: each user's total budget.
    :param delta: ``δ`` for advanced composition with ``split="budget"``; 0 otherwise.
    :param split: ``"users"`` or ``"budget"``.
    :param rng: the users' randomness (and the level assignment); ``None`` draws from the OS.
    :return: the reports of every level.
    :raise ValueError: if a parameter is out of range, a score lies outside the domain, or with
        ``split="users"`` there are fewer users than levels.
    :raise TypeError: if a parameter has the wrong type.
    """
    size = _check_domain_size(domain_size)
    levels = size.bit_length() - 1
    mode = _check_split(split)
    eps0 = level_epsilon(epsilon, levels=levels, delta=delta, split=mode)
    threshold = _flip_threshold(eps0)
    scores = _check_values(values, size, "values")
    generator = noise_generator(rng)
    users = scores.size
    reports: list[HadamardReports] = []
    if mode == "users":
        if users < levels:
            raise ValueError(f"split='users' needs at least one user per level ({levels}), got {users} users")
        order = generator.permutation(users)
        for level in range(1, levels + 1):
            members = scores[order[level - 1::levels]]
            reports.append(_randomize(members >> (levels - level), level, threshold, eps0, generator))
    else:
        for level in range(1, levels + 1):
            reports.append(_randomize(scores >> (levels - level), level, threshold, eps0, generator))
    return HierarchyReports(domain_size=size, split=mode, users=users, epsilon=float(epsilon),
                            delta=float(delta), level_epsilon=eps0, reports=tuple(reports))


# --------------------------------------------------------------------------------------------------
# hierarchical histograms: what the traversal needs

@runtime_checkable
class HierarchyEstimate(Protocol):
    """An (estimated) hierarchical histogram ``ĥ`` of one class, as the traversal queries it.

    ``estimate(level, nodes)`` answers node ``p`` at level ``l`` (the dyadic interval
    ``[p 2^(levels-l), (p+1) 2^(levels-l))``); ``total`` is the root (the class size);
    ``variance_bound`` bounds the variance of every estimate (the paper's ``v``).
    """

    @property
    def levels(self) -> int:
        """``α = log2 d``."""
        ...

    @property
    def total(self) -> float:
        """The root count ``h_λ = n``."""
        ...

    @property
    def variance_bound(self) -> float:
        """``v``: a bound on the variance of every node estimate."""
        ...

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """Estimates of the nodes at ``level`` (float64)."""
        ...


class HadamardHierarchy:
    """The server's estimate ``ĥ`` of one class's hierarchical histogram from Hadamard reports.

    One :class:`FrequencyOracle` per level ``1..levels``; level 0 is the public class size.  With
    ``split="users"`` the level-``l`` counts are scaled by ``n / n_l``.

    :param reports: the class's reports from :func:`randomize_hierarchy`.
    :raise TypeError: if ``reports`` is not :class:`HierarchyReports`.
    """

    def __init__(self, reports: HierarchyReports) -> None:
        if not isinstance(reports, HierarchyReports):
            raise TypeError(f"reports must be HierarchyReports, got {type(reports).__name__}")
        self._levels = reports.levels
        self._domain_size = reports.domain_size
        self._users = reports.users
        self._split = reports.split
        self._level_epsilon = reports.level_epsilon
        self._oracles = tuple(FrequencyOracle(level_reports) for level_reports in reports.reports)
        self._scales = tuple(self._users / oracle.users for oracle in self._oracles)
        self._bound = max(scale ** 2 * oracle.variance_bound for scale, oracle in zip(self._scales, self._oracles))

    @property
    def levels(self) -> int:
        """``α = log2 d``."""
        return self._levels

    @property
    def domain_size(self) -> int:
        """``d``."""
        return self._domain_size

    @property
    def total(self) -> float:
        """The class size ``n`` (public)."""
        return float(self._users)

    @property
    def split(self) -> str:
        """The splitting strategy of the reports."""
        return self._split

    @property
    def level_epsilon(self) -> float:
        """``ε_0`` of each report."""
        return self._level_epsilon

    @property
    def variance_bound(self) -> float:
        """``v = max_l (n/n_l)^2 n_l K^2``: bounds the variance of every node estimate."""
        return self._bound

    def oracle(self, level: int) -> FrequencyOracle:
        """The frequency oracle of ``level`` (``1 <= level <= levels``).

        :raise ValueError: if level is out of range.
        """
        index = _check_level(level, self._levels)
        if index == 0:
            raise ValueError("level must be at least 1 (the root has no oracle), got 0")
        return self._oracles[index - 1]

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates of the counts of ``nodes`` (dyadic intervals) at ``level``.

        :param level: ``0..levels``; level 0 (the root) returns the class size.
        :param nodes: integers in ``[0, 2^level)``.
        :return: float64 array.
        :raise ValueError: if level or a node is out of range.
        """
        index = _check_level(level, self._levels)
        queries = _check_nodes(nodes, index)
        if index == 0:
            return np.full(queries.size, float(self._users))
        return self._scales[index - 1] * self._oracles[index - 1]._unchecked_counts(queries)

    def frequencies(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates of the fraction of the class in each dyadic interval (estimate / n).

        :param level: ``0..levels``.
        :param nodes: integers in ``[0, 2^level)``.
        :return: float64 array.
        :raise ValueError: if level or a node is out of range.
        """
        return self.estimate(level, nodes) / self._users

    def variance(self, level: int, true_counts: npt.ArrayLike) -> np.ndarray:
        """Exact variance of :meth:`estimate` for nodes with the given true counts ``h``.

        ``n^2/n_l (K^2 - f + f (1 - f)(n - n_l)/(n - 1))`` with ``f = h/n``: the oracle's variance
        plus, with ``split="users"``, the hypergeometric variance of the random level assignment.

        :param level: ``1..levels``.
        :param true_counts: counts in ``[0, n]``.
        :return: float64 array.
        :raise ValueError: if level or a count is out of range.
        """
        oracle = self.oracle(level)
        counts = np.asarray(true_counts, dtype=np.float64)
        n = float(self._users)
        if counts.size and (np.any(~np.isfinite(counts)) or counts.min() < 0 or counts.max() > n):
            raise ValueError(f"true_counts must lie in [0, {self._users}]")
        share = counts / n
        members = float(oracle.users)
        sampling = share * (1.0 - share) * (n - members) / (n - 1.0) if n > members else 0.0 * share
        return n * n / members * (oracle.debias_factor ** 2 - share + sampling)


def _check_variance_bound(variance_bound: float) -> float:
    value = check_finite(variance_bound, "variance_bound")
    if value < 0:
        raise ValueError(f"variance_bound must be non-negative, got {variance_bound}")
    return value


class ExactHierarchy:
    """The exact hierarchical histogram of a multiset of scores (Definition 3), without noise.

    Stored as the sorted scores (``O(n)``); a node count is two binary searches, so any domain
    size works.  ``variance_bound`` is what the traversal is told (0: no pruning threshold).

    :param values: scores, integers in ``[0, domain_size)``.
    :param domain_size: ``d``, a power of two in ``[2, 2^62]``.
    :param variance_bound: the ``v`` reported to the traversal, non-negative.
    :raise ValueError: if a parameter is out of range.
    """

    def __init__(self, values: npt.ArrayLike, *, domain_size: int, variance_bound: float = 0.0) -> None:
        size = _check_domain_size(domain_size)
        self._levels = size.bit_length() - 1
        self._sorted = np.sort(_check_values(values, size, "values"))
        self._bound = _check_variance_bound(variance_bound)

    @property
    def levels(self) -> int:
        """``α = log2 d``."""
        return self._levels

    @property
    def total(self) -> float:
        """The number of scores."""
        return float(self._sorted.size)

    @property
    def variance_bound(self) -> float:
        """The ``v`` given at construction."""
        return self._bound

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """Exact counts of ``nodes`` at ``level``.

        :param level: ``0..levels``.
        :param nodes: integers in ``[0, 2^level)``.
        :return: float64 array.
        :raise ValueError: if level or a node is out of range.
        """
        index = _check_level(level, self._levels)
        queries = _check_nodes(nodes, index)
        shift = self._levels - index
        low = queries << shift
        high = (queries + 1) << shift
        return (np.searchsorted(self._sorted, high) - np.searchsorted(self._sorted, low)).astype(np.float64)


class HierarchyTable:
    """A hierarchical histogram given level by level, e.g. a hand-built tree (small domains).

    ``counts[l]`` holds the ``2^l`` node values of level ``l`` (``counts[0]`` is the root).  The
    values are taken as estimates: they may be negative or inconsistent across levels, as noisy
    estimates are.  This stores ``O(d)`` numbers by construction.

    :param counts: ``levels + 1`` arrays, ``counts[l]`` of length ``2^l``, finite; root positive.
    :param variance_bound: the ``v`` reported to the traversal, non-negative.
    :raise ValueError: if the shapes or values are invalid.
    """

    def __init__(self, counts: Sequence[npt.ArrayLike], *, variance_bound: float = 0.0) -> None:
        if len(counts) < 2:
            raise ValueError(f"counts must give the root and at least one level, got {len(counts)} level(s)")
        if len(counts) - 1 > _TABLE_MAX_LEVELS:
            raise ValueError(f"counts must have at most {_TABLE_MAX_LEVELS} levels below the root, got {len(counts) - 1}")
        tables: list[np.ndarray] = []
        for level, values in enumerate(counts):
            array = np.asarray(values, dtype=np.float64)
            if array.shape != (1 << level,):
                raise ValueError(f"counts[{level}] must have {1 << level} entries, got shape {array.shape}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"counts[{level}] must be finite")
            tables.append(array)
        if tables[0][0] <= 0:
            raise ValueError(f"the root count must be positive, got {tables[0][0]}")
        self._tables = tuple(tables)
        self._bound = _check_variance_bound(variance_bound)

    @property
    def levels(self) -> int:
        """``α``: number of levels below the root."""
        return len(self._tables) - 1

    @property
    def total(self) -> float:
        """The root value."""
        return float(self._tables[0][0])

    @property
    def variance_bound(self) -> float:
        """The ``v`` given at construction."""
        return self._bound

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """The table's values of ``nodes`` at ``level``.

        :raise ValueError: if level or a node is out of range.
        """
        index = _check_level(level, self.levels)
        return self._tables[index][_check_nodes(nodes, index)].astype(np.float64)


# --------------------------------------------------------------------------------------------------
# threshold constant and error bound (Theorem 3, Corollaries 4 and 5)

def variance_constant(positive: HierarchyEstimate, negative: HierarchyEstimate) -> float:
    """The paper's ``C`` in ``v± = C n± α``: ``max(v+/(n+ α), v-/(n- α))``.

    :param positive: the positive class's hierarchy.
    :param negative: the negative class's hierarchy.
    :return: ``C >= 0``.
    :raise ValueError: if the hierarchies differ in depth or a total is not positive.
    """
    levels = _check_pair(positive, negative)
    return max(float(positive.variance_bound) / (float(positive.total) * levels),
               float(negative.variance_bound) / (float(negative.total) * levels))


def _check_class_sizes(positive_users: float, negative_users: float) -> tuple[float, float]:
    return check_positive(positive_users, "positive_users"), check_positive(negative_users, "negative_users")


def optimal_threshold_constant(positive_users: float, negative_users: float, *, variance_constant: float,
                               levels: int, discard: str = "half") -> float:
    """The pruning constant ``a`` of Corollary 4 (``discard="half"``) or Corollary 5 (``"zero"``).

    Corollary 4: ``a = (1 + sqrt(21/8) (2 C n α / n_min^2)^{1/4})^2``; Corollary 5:
    ``a = (1 + sqrt(sqrt(2 C α n) / (16 n_min)))^2``; ``n = n+ + n-``, ``n_min = min(n+, n-)``.
    Both tend to 1 as ``n`` grows; ``C = 0`` (no noise) gives 1.

    :param positive_users: ``n+ > 0``.
    :param negative_users: ``n- > 0``.
    :param variance_constant: ``C >= 0``.
    :param levels: ``α >= 1``.
    :param discard: ``"half"`` or ``"zero"``.
    :return: ``a >= 1``.
    :raise ValueError: if a parameter is out of range.
    """
    n_pos, n_neg = _check_class_sizes(positive_users, negative_users)
    constant = check_finite(variance_constant, "variance_constant")
    if constant < 0:
        raise ValueError(f"variance_constant must be non-negative, got {variance_constant}")
    alpha = check_positive_int(levels, "levels")
    mode = _check_discard(discard)
    n, n_min = n_pos + n_neg, min(n_pos, n_neg)
    if mode == "half":
        root = 1.0 + math.sqrt(21.0 / 8.0) * (2.0 * constant * n * alpha / n_min ** 2) ** 0.25
    else:
        root = 1.0 + math.sqrt(math.sqrt(2.0 * constant * alpha * n) / (16.0 * n_min))
    return root * root


def mse_bound(positive_users: float, negative_users: float, *, variance_constant: float, levels: int,
              threshold_constant: float, discard: str = "half") -> float:
    """Theorem 3's bound on the MSE of the AUC estimate (or the variant's, ``discard="zero"``).

    ``C α^2 (2n + (4a + 1) n_min + 21 sqrt(2 n C α)/(sqrt(a) - 1)) / (n+ n-)`` for ``"half"`` and
    ``C α^2 (2n + (8a + 2) n_min + sqrt(2 C α n)/(sqrt(a) - 1)) / (n+ n-)`` for ``"zero"``
    (Theorem 3 and the "algorithm variant" divided by ``(n+ n-)^2``).  Valid under conditions 1-4
    of Theorem 3 (``split="budget"``) and ``α <= sqrt(n)``.  At Corollary 4's ``a`` the last term
    is ``sqrt(168) 2^{1/4} (C n n_min^2 α)^{1/4} ≈ 15.4 (...)^{1/4}``; Corollary 4 prints 14.

    :param positive_users: ``n+ > 0``.
    :param negative_users: ``n- > 0``.
    :param variance_constant: ``C >= 0``.
    :param levels: ``α >= 1``.
    :param threshold_constant: ``a > 1``.
    :param discard: ``"half"`` or ``"zero"``.
    :return: the bound on ``E[(AUC_hat - AUC)^2]``.
    :raise ValueError: if a parameter is out of range.
    """
    n_pos, n_neg = _check_class_sizes(positive_users, negative_users)
    constant = check_finite(variance_constant, "variance_constant")
    if constant < 0:
        raise ValueError(f"variance_constant must be non-negative, got {variance_constant}")
    alpha = check_positive_int(levels, "levels")
    a = check_finite(threshold_constant, "threshold_constant")
    if a <= 1:
        raise ValueError(f"threshold_constant must exceed 1 for the bound, got {threshold_constant}")
    mode = _check_discard(discard)
    n, n_min = n_pos + n_neg, min(n_pos, n_neg)
    tail = math.sqrt(2.0 * n * constant * alpha) / (math.sqrt(a) - 1.0)
    if mode == "half":
        inner = 2.0 * n + (4.0 * a + 1.0) * n_min + 21.0 * tail
    else:
        inner = 2.0 * n + (8.0 * a + 2.0) * n_min + tail
    return constant * alpha ** 2 * inner / (n_pos * n_neg)


# --------------------------------------------------------------------------------------------------
# the pruned traversal (eq. 10)

@dataclass(frozen=True)
class AUCTraversal:
    """Outcome of the pruned traversal of two hierarchical histograms (§4, eq. 10).

    Per level ``l = 0..levels-1`` (the nodes where a decision is made; leaves never decide):
    ``expanded[l]`` and ``discarded[l]`` are the node indices, in increasing order, and
    ``expanded_terms[l]`` / ``discarded_terms[l]`` what each contributed to ``pair_sum``
    (an expanded node's own term ``ĥ+_{p1} ĥ-_{p0}``, plus its leaves' tie terms at level
    ``levels - 1``; a discarded node's ``1/2 (Σ ĥ+ children)(Σ ĥ- children)`` or 0).

    :param auc: ``pair_sum / (n+ n-)`` (not clipped to ``[0, 1]``).
    :param pair_sum: the estimated number of ordered pairs (ties 1/2 if ``count_ties``).
    :param threshold: ``τ = a sqrt(v+ v-)``.
    :param threshold_constant: ``a``.
    :param positive_floor: ``sqrt(a v+)/2``.
    :param negative_floor: ``sqrt(a v-)/2``.
    :param discard: ``"half"`` or ``"zero"``.
    :param count_ties: whether leaves add half their pairs.
    """

    auc: float
    pair_sum: float
    threshold: float
    threshold_constant: float
    positive_floor: float
    negative_floor: float
    discard: str
    count_ties: bool
    expanded: tuple[np.ndarray, ...]
    expanded_terms: tuple[np.ndarray, ...]
    discarded: tuple[np.ndarray, ...]
    discarded_terms: tuple[np.ndarray, ...]

    @property
    def nodes_expanded(self) -> int:
        """Total number of expanded nodes."""
        return int(sum(nodes.size for nodes in self.expanded))

    @property
    def nodes_discarded(self) -> int:
        """Total number of discarded nodes."""
        return int(sum(nodes.size for nodes in self.discarded))


def _check_pair(positive: HierarchyEstimate, negative: HierarchyEstimate) -> int:
    for name, tree in (("positive", positive), ("negative", negative)):
        if not isinstance(tree, HierarchyEstimate):
            raise TypeError(f"{name} must provide levels, total, variance_bound and estimate(), got {type(tree).__name__}")
        total = check_finite(tree.total, f"{name}.total")
        if total <= 0:
            raise ValueError(f"{name}.total must be positive, got {tree.total}")
        bound = check_finite(tree.variance_bound, f"{name}.variance_bound")
        if bound < 0:
            raise ValueError(f"{name}.variance_bound must be non-negative, got {tree.variance_bound}")
    levels = check_positive_int(positive.levels, "positive.levels")
    if negative.levels != levels:
        raise ValueError(f"positive and negative must have the same number of levels, got {levels} and {negative.levels}")
    return levels


def hierarchical_auc(positive: HierarchyEstimate, negative: HierarchyEstimate, *, discard: str = "half",
                     count_ties: bool = True, threshold_constant: float | None = None) -> AUCTraversal:
    """The private AUC estimate: pruned top-down traversal of the two histograms (§4, eq. 10).

    Level by level from the root, every frontier node ``p`` with
    ``max(ĥ+_p, sqrt(a v+)/2) max(ĥ-_p, sqrt(a v-)/2) >= τ = a sqrt(v+ v-)`` is expanded (adds
    ``ĥ+_{p1} ĥ-_{p0}``; its children join the frontier); the others are discarded (add
    ``1/2 (ĥ+_{p0} + ĥ+_{p1})(ĥ-_{p0} + ĥ-_{p1})`` with ``discard="half"``, 0 with ``"zero"``).
    Leaves decide nothing; with ``count_ties`` a leaf below an expanded node adds ``1/2 ĥ+_b ĥ-_b``.
    One batched query per class and level: for the children of the whole frontier (``"half"``) or
    of the expanded nodes (``"zero"``).

    :param positive: the positive class's hierarchy (root = ``n+``).
    :param negative: the negative class's hierarchy (root = ``n-``), same depth.
    :param discard: ``"half"`` (Corollary 4) or ``"zero"`` (Corollary 5).
    :param count_ties: count tied pairs 1/2 (``roc_auc_score``), or 0 (the paper's UAUC).
    :param threshold_constant: ``a >= 0``; ``None`` takes :func:`optimal_threshold_constant` with
        :func:`variance_constant`; 0 disables pruning (every node is expanded: ``O(d)`` work).
    :return: the estimate and the traversal's decisions.
    :raise ValueError: if a parameter is out of range or the hierarchies do not match.
    :raise TypeError: if a hierarchy lacks the :class:`HierarchyEstimate` interface.
    """
    levels = _check_pair(positive, negative)
    mode = _check_discard(discard)
    ties = _check_count_ties(count_ties)
    n_pos, n_neg = float(positive.total), float(negative.total)
    v_pos, v_neg = float(positive.variance_bound), float(negative.variance_bound)
    if threshold_constant is None:
        a = optimal_threshold_constant(n_pos, n_neg, variance_constant=variance_constant(positive, negative),
                                       levels=levels, discard=mode)
    else:
        a = check_finite(threshold_constant, "threshold_constant")
        if a < 0:
            raise ValueError(f"threshold_constant must be non-negative, got {threshold_constant}")
    threshold = a * math.sqrt(v_pos * v_neg)
    floor_pos, floor_neg = math.sqrt(a * v_pos) / 2.0, math.sqrt(a * v_neg) / 2.0
    pair = np.array([0, 1], dtype=np.int64)

    frontier = np.zeros(1, dtype=np.int64)
    here_pos, here_neg = np.array([n_pos]), np.array([n_neg])
    expanded: list[np.ndarray] = []
    expanded_terms: list[np.ndarray] = []
    discarded: list[np.ndarray] = []
    discarded_terms: list[np.ndarray] = []
    partial_sums: list[float] = []
    for level in range(levels):
        keep = np.maximum(here_pos, floor_pos) * np.maximum(here_neg, floor_neg) >= threshold
        grow, drop = frontier[keep], frontier[~keep]
        asked = frontier if mode == "half" else grow
        children = (2 * asked[:, None] + pair).ravel()
        child_pos = np.asarray(positive.estimate(level + 1, children), dtype=np.float64).reshape(-1, 2)
        child_neg = np.asarray(negative.estimate(level + 1, children), dtype=np.float64).reshape(-1, 2)
        if mode == "half":
            grow_pos, grow_neg = child_pos[keep], child_neg[keep]
            drop_terms = 0.5 * child_pos[~keep].sum(axis=1) * child_neg[~keep].sum(axis=1)
        else:
            grow_pos, grow_neg = child_pos, child_neg
            drop_terms = np.zeros(drop.size)
        grow_terms = grow_pos[:, 1] * grow_neg[:, 0]
        if level == levels - 1 and ties:
            grow_terms = grow_terms + 0.5 * (grow_pos * grow_neg).sum(axis=1)
        expanded.append(grow)
        expanded_terms.append(grow_terms)
        discarded.append(drop)
        discarded_terms.append(drop_terms)
        partial_sums.extend((float(grow_terms.sum()), float(drop_terms.sum())))
        frontier = (2 * grow[:, None] + pair).ravel()
        here_pos, here_neg = grow_pos.ravel(), grow_neg.ravel()
    pair_sum = math.fsum(partial_sums)
    return AUCTraversal(auc=pair_sum / (n_pos * n_neg), pair_sum=pair_sum, threshold=threshold,
                        threshold_constant=a, positive_floor=floor_pos, negative_floor=floor_neg,
                        discard=mode, count_ties=ties, expanded=tuple(expanded),
                        expanded_terms=tuple(expanded_terms), discarded=tuple(discarded),
                        discarded_terms=tuple(discarded_terms))


# --------------------------------------------------------------------------------------------------
# the whole protocol, simulated

@dataclass(frozen=True)
class LocalAUCResult:
    """One simulated run of the LDP AUC protocol.

    :param auc: the estimate (``traversal.auc``).
    :param traversal: the server's traversal.
    :param positive: the server's estimate of the positive hierarchy.
    :param negative: the server's estimate of the negative hierarchy.
    :param epsilon: each user's budget.
    :param delta: ``δ``.
    :param split: the splitting strategy.
    :param level_epsilon: ``ε_0`` of each report.
    """

    auc: float
    traversal: AUCTraversal
    positive: HadamardHierarchy
    negative: HadamardHierarchy
    epsilon: float
    delta: float
    split: str
    level_epsilon: float


def ldp_auc(positive_scores: npt.ArrayLike, negative_scores: npt.ArrayLike, *, domain_size: int,
            epsilon: float, delta: float = 0.0, split: str = "users", discard: str = "half",
            count_ties: bool = True, threshold_constant: float | None = None,
            rng: np.random.Generator | None = None) -> LocalAUCResult:
    """Simulate the protocol: every user randomizes (:func:`randomize_hierarchy`), the server
    groups the reports (:class:`HadamardHierarchy`) and traverses (:func:`hierarchical_auc`).

    :param positive_scores: scores of the positive class, integers in ``[0, domain_size)``.
    :param negative_scores: scores of the negative class, same domain.
    :param domain_size: ``d``, a power of two in ``[2, 2^62]``.
    :param epsilon: each user's budget.
    :param delta: ``δ`` (advanced composition with ``split="budget"``); 0 for pure LDP.
    :param split: ``"users"`` or ``"budget"``.
    :param discard: ``"half"`` or ``"zero"``.
    :param count_ties: count tied pairs 1/2 (as ``roc_auc_score``) or 0.
    :param threshold_constant: ``a``; ``None`` for the corollary's value, 0 for no pruning.
    :param rng: the users' randomness; ``None`` draws from the OS.
    :return: the estimate with the server's intermediate results.
    :raise ValueError: if a parameter is out of range or a score lies outside the domain.
    :raise TypeError: if a parameter has the wrong type.
    """
    size = _check_domain_size(domain_size)
    mode = _check_split(split)
    _check_discard(discard)
    _check_count_ties(count_ties)
    if threshold_constant is not None:
        a = check_finite(threshold_constant, "threshold_constant")
        if a < 0:
            raise ValueError(f"threshold_constant must be non-negative, got {threshold_constant}")
    positives = _check_values(positive_scores, size, "positive_scores")
    negatives = _check_values(negative_scores, size, "negative_scores")
    eps0 = level_epsilon(epsilon, levels=size.bit_length() - 1, delta=delta, split=mode)
    generator = noise_generator(rng)
    positive = HadamardHierarchy(randomize_hierarchy(positives, domain_size=size, epsilon=epsilon, delta=delta,
                                                     split=mode, rng=generator))
    negative = HadamardHierarchy(randomize_hierarchy(negatives, domain_size=size, epsilon=epsilon, delta=delta,
                                                     split=mode, rng=generator))
    traversal = hierarchical_auc(positive, negative, discard=discard, count_ties=count_ties,
                                 threshold_constant=threshold_constant)
    return LocalAUCResult(auc=traversal.auc, traversal=traversal, positive=positive, negative=negative,
                          epsilon=float(epsilon), delta=float(delta), split=mode, level_epsilon=eps0)
