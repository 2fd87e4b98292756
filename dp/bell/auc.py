"""Locally private AUC from Hadamard-response hierarchical histograms (Bell, Bellet, Gascón & Kulkarni).

The pruned top-down traversal (§4, eq. 10), its threshold constant (Corollaries 4 and 5) and MSE bound
(Theorem 3), and :func:`ldp_auc`, the protocol end to end.
Threat model: local DP, one user = one score, against an untrusted server; public: class labels and sizes.
Plain NumPy, no MPyC.  Protocol steps, costs and notes on the paper: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np
import numpy.typing as npt

from dp.bell.hierarchical import (HadamardHierarchy, HierarchyEstimate, _check_domain_size, _check_split, level_epsilon,
                                  randomize_hierarchy)
from dp.validation import (check_bool, check_choice, check_finite, check_indices, check_nonnegative, check_positive,
                           check_positive_int)
from secure.noise.party import noise_generator

__all__ = ["DISCARDS", "variance_constant", "optimal_threshold_constant", "mse_bound", "AUCTraversal",
           "hierarchical_auc", "LocalAUCResult", "ldp_auc"]

Discard = Literal["half", "zero"]

#: What a discarded node contributes: ``half`` (eq. 10, Corollary 4) or ``zero`` (the variant, Corollary 5).
DISCARDS: Final[tuple[str, ...]] = ("half", "zero")


def _check_discard(discard: str) -> Discard:
    return check_choice(discard, DISCARDS, "discard")  # type: ignore[return-value]


def variance_constant(positive: HierarchyEstimate, negative: HierarchyEstimate) -> float:
    """The paper's ``C >= 0`` in ``v± = C n± α``: ``max(v+/(n+ α), v-/(n- α))`` of the two classes' hierarchies."""
    levels = _check_pair(positive, negative)
    return max(float(positive.variance_bound) / (float(positive.total) * levels),
               float(negative.variance_bound) / (float(negative.total) * levels))


def _check_bound_inputs(positive_users: float, negative_users: float, constant: float,
                        levels: int) -> tuple[float, float, float, int]:
    """``n+``, ``n-``, ``C`` and ``α`` of the corollaries' constant and Theorem 3's bound, checked."""
    return (check_positive(positive_users, "positive_users"), check_positive(negative_users, "negative_users"),
            check_nonnegative(constant, "variance_constant"), check_positive_int(levels, "levels"))


def optimal_threshold_constant(positive_users: float, negative_users: float, *, variance_constant: float,
                               levels: int, discard: str = "half") -> float:
    """The pruning constant ``a >= 1`` of Corollary 4 (``discard="half"``) or Corollary 5 (``"zero"``), from
    ``n+, n- > 0``, ``C >= 0`` and ``α >= 1``.  Details: docs/ldp.md."""
    n_pos, n_neg, constant, alpha = _check_bound_inputs(positive_users, negative_users, variance_constant, levels)
    mode = _check_discard(discard)
    n, n_min = n_pos + n_neg, min(n_pos, n_neg)
    if mode == "half":
        root = 1.0 + math.sqrt(21.0 / 8.0) * (2.0 * constant * n * alpha / n_min ** 2) ** 0.25
    else:
        root = 1.0 + math.sqrt(math.sqrt(2.0 * constant * alpha * n) / (16.0 * n_min))
    return root * root


def mse_bound(positive_users: float, negative_users: float, *, variance_constant: float, levels: int,
              threshold_constant: float, discard: str = "half") -> float:
    """Theorem 3's bound on ``E[(AUC_hat - AUC)^2]`` (or the variant's, ``discard="zero"``), from ``n+, n- > 0``,
    ``C >= 0``, ``α >= 1`` and ``a > 1``.  Details: docs/ldp.md."""
    n_pos, n_neg, constant, alpha = _check_bound_inputs(positive_users, negative_users, variance_constant, levels)
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


@dataclass(frozen=True)
class AUCTraversal:
    """Outcome of the pruned traversal of two hierarchical histograms (§4, eq. 10): ``auc = pair_sum / (n+ n-)`` (not
    clipped), ``pair_sum`` the estimated ordered pairs (ties 1/2 if ``count_ties``), ``threshold`` ``τ = a sqrt(v+ v-)``,
    ``threshold_constant`` ``a``, the floors ``sqrt(a v±)/2`` and ``discard``.  Details: docs/ldp.md."""

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
    """The private AUC estimate: pruned top-down traversal of the two classes' hierarchies (§4, eq. 10; parameters:
    docs/ldp.md)."""
    levels = _check_pair(positive, negative)
    mode = _check_discard(discard)
    ties = check_bool(count_ties, "count_ties")
    n_pos, n_neg = float(positive.total), float(negative.total)
    v_pos, v_neg = float(positive.variance_bound), float(negative.variance_bound)
    if threshold_constant is None:
        a = optimal_threshold_constant(n_pos, n_neg, variance_constant=variance_constant(positive, negative),
                                       levels=levels, discard=mode)
    else:
        a = check_nonnegative(threshold_constant, "threshold_constant")
    threshold = a * math.sqrt(v_pos * v_neg)
    floor_pos, floor_neg = math.sqrt(a * v_pos) / 2.0, math.sqrt(a * v_neg) / 2.0
    pair = np.array([0, 1], dtype=np.int64)

    frontier = np.zeros(1, dtype=np.int64)
    here_pos, here_neg = np.array([n_pos]), np.array([n_neg])
    steps: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []  # (expanded, terms, discarded, terms)
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
        steps.append((grow, grow_terms, drop, drop_terms))
        partial_sums.extend((float(grow_terms.sum()), float(drop_terms.sum())))
        frontier = (2 * grow[:, None] + pair).ravel()
        here_pos, here_neg = grow_pos.ravel(), grow_neg.ravel()
    pair_sum = math.fsum(partial_sums)
    expanded, expanded_terms, discarded, discarded_terms = (tuple(column) for column in zip(*steps))
    return AUCTraversal(auc=pair_sum / (n_pos * n_neg), pair_sum=pair_sum, threshold=threshold,
                        threshold_constant=a, positive_floor=floor_pos, negative_floor=floor_neg, discard=mode,
                        count_ties=ties, expanded=expanded, expanded_terms=expanded_terms, discarded=discarded,
                        discarded_terms=discarded_terms)


@dataclass(frozen=True)
class LocalAUCResult:
    """One simulated run of the LDP AUC protocol: the estimate (``traversal.auc``), the server's traversal and its
    estimates of the positive and negative hierarchies, each user's budget ``epsilon`` and ``delta``, the splitting
    strategy and ``level_epsilon`` (``ε_0`` of each report)."""

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
    """Simulate the protocol: every user randomizes (:func:`randomize_hierarchy`), the server groups the reports
    (:class:`HadamardHierarchy`) and traverses (:func:`hierarchical_auc`); parameters: docs/ldp.md."""
    size = _check_domain_size(domain_size)
    mode = _check_split(split)
    _check_discard(discard)
    check_bool(count_ties, "count_ties")
    if threshold_constant is not None:
        check_nonnegative(threshold_constant, "threshold_constant")
    positives = check_indices(positive_scores, size, "positive_scores")
    negatives = check_indices(negative_scores, size, "negative_scores")
    eps0 = level_epsilon(epsilon, levels=size.bit_length() - 1, delta=delta, split=mode)
    generator = noise_generator(rng)
    positive, negative = (HadamardHierarchy(randomize_hierarchy(scores, domain_size=size, epsilon=epsilon, delta=delta,
                                                                split=mode, rng=generator))
                          for scores in (positives, negatives))
    traversal = hierarchical_auc(positive, negative, discard=discard, count_ties=count_ties,
                                 threshold_constant=threshold_constant)
    return LocalAUCResult(auc=traversal.auc, traversal=traversal, positive=positive, negative=negative,
                          epsilon=float(epsilon), delta=float(delta), split=mode, level_epsilon=eps0)
