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
The steps live in three modules: :mod:`dp.bell.hadamard` (steps 1-2: the randomizer and the
frequency oracle), :mod:`dp.bell.hierarchical` (step 3: the hierarchies per class and the budget
split) and this module (step 4: the pruned traversal, the error bounds and :func:`ldp_auc`).

1. *Local randomizer* (App. B, Algorithm 2), :func:`~dp.bell.hadamard.hadamard_randomize`: a user with value ``q`` in
   a domain of size ``2^l`` draws a row ``j`` uniformly from ``[0, 2^l)`` and reports ``(j, z)``
   with ``z = H[j, q] = (-1)^popcount(j & q)`` (the Sylvester–Hadamard entry, computed by bit
   parity, never from a matrix), kept with probability ``e^ε/(1 + e^ε)`` and negated otherwise.
2. *Frequency oracle* (Algorithm 3), :class:`~dp.bell.hadamard.FrequencyOracle`: the estimated count of ``q`` is
   ``K Σ_i z_i H[j_i, q]`` with ``K = (e^ε + 1)/(e^ε - 1) = 1/(1 - 2ρ)``, ``ρ`` the flip
   probability.  It is unbiased (Lemma 5); its variance is exactly ``n_l K^2 - count(q)``; the
   answers for two values are uncorrelated and pairwise independent (Lemma 6).  The server groups
   the reports by row once where rows repeat (``Σ z_i`` per distinct ``j``), so a query costs at
   most one parity per stored row, and a batch of queries at one level is evaluated by a split ("meet in the middle")
   Hadamard sum: high bits of the queries against high bits of the rows, then low against low.
3. *Hierarchical histograms per class* (App. B.2.2), :func:`~dp.bell.hierarchical.randomize_hierarchy` and
   :class:`~dp.bell.hierarchical.HadamardHierarchy`: node ``p`` at level ``l`` (``1 <= l <= levels``) is the value
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
     larger (:func:`~dp.bell.hierarchical.level_epsilon`).  Variance bound ``v = n K_0^2``.

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
there is no MPyC here, so docs/design.md's secure-layer threat model (``t < m/2`` passive parties) does not
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
  composes to about 15.6); :func:`~dp.bell.hierarchical.level_epsilon` solves the bound instead.
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
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from dp.bell.hierarchical import (HadamardHierarchy, HierarchyEstimate, _check_domain_size, _check_split, level_epsilon,
                                  randomize_hierarchy)
from dp.validation import check_bool, check_choice, check_finite, check_indices, check_nonnegative, check_positive, check_positive_int
from secure.noise.party import noise_generator

__all__ = ["DISCARDS", "variance_constant", "optimal_threshold_constant", "mse_bound", "AUCTraversal",
           "hierarchical_auc", "LocalAUCResult", "ldp_auc"]

Discard = Literal["half", "zero"]

#: What a discarded node contributes: ``half`` (eq. 10, Corollary 4) or ``zero`` (the variant, Corollary 5).
DISCARDS: Final[tuple[str, ...]] = ("half", "zero")


# --------------------------------------------------------------------------------------------------
# validation

def _check_discard(discard: str) -> Discard:
    return check_choice(discard, DISCARDS, "discard")  # type: ignore[return-value]


def _check_count_ties(count_ties: bool) -> bool:
    return check_bool(count_ties, "count_ties")


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
    constant = check_nonnegative(variance_constant, "variance_constant")
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
    constant = check_nonnegative(variance_constant, "variance_constant")
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
        check_positive(tree.total, f"{name}.total")
        check_nonnegative(tree.variance_bound, f"{name}.variance_bound")
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
    positives = check_indices(positive_scores, size, "positive_scores")
    negatives = check_indices(negative_scores, size, "negative_scores")
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
