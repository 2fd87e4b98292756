"""Rank sums under MPC by secure sorting: the AUC numerator without revealing scores or labels.

For rows ``(score, label)`` held as secret shares, the Mann-Whitney form of the AUC counts, over all
positive-negative pairs, 1 if the positive scores higher and 1/2 on a tie.  Sorting once with ties
broken negatives-first and once positives-first, the number of negatives before each positive is
``#lower + #tied`` resp. ``#lower``; their sum over positives is ``2 U`` with ties counted 1/2
exactly (the average-rank convention of ``sklearn.metrics.roc_auc_score`` and Sun et al. eq. 1).

Both sorts run as one batched Batcher odd-even merge sort (``mpc.np_sort``):
``O(n log^2 n)`` secure comparisons in ``O(log^2 n)`` rounds, instead of the ``n(n-1)/2``
comparisons of evaluating the pair kernel on all pairs.  After sorting, the counts are local
(prefix sums of shares) plus ``n`` secure products per sort.

Threat model: passive adversary, at most ``t < m/2`` corrupted parties; only secure comparisons and
arithmetic on shares are used, nothing is opened here.
"""
from __future__ import annotations

from typing import Any

__all__ = ["twice_mann_whitney"]


def twice_mann_whitney(scores: Any, labels: Any) -> tuple[Any, Any]:
    """``2 U`` (pairs positive > negative count 2, ties 1) and the number of positives, both secret.

    :param scores: secure integer array of fixed-point scores, shape ``(n,)``.
    :param labels: secure integer array of 0/1 labels, shape ``(n,)``.
    :return: ``(2U, P)`` as secure integers.
    """
    from mpyc.runtime import mpc

    negatives_first = mpc.np_stack([2 * scores + labels, labels])        # on a tie, label 0 sorts first
    positives_first = mpc.np_stack([2 * scores + (1 - labels), labels])  # on a tie, label 1 sorts first
    both = mpc.np_stack([negatives_first, positives_first])              # (2 sorts, 2 rows, n)
    ordered = mpc.np_sort(both, axis=-1, key=lambda block: block[:, 0:1, :])
    sorted_labels = mpc.np_concatenate([ordered[0, 1, :], ordered[1, 1, :]])
    total = None
    n = scores.shape[0]
    for which in range(2):
        label = sorted_labels[which * n:(which + 1) * n]
        negative = 1 - label
        negatives_before = mpc.np_cumsum(negative) - negative
        count = mpc.np_sum(label * negatives_before)
        total = count if total is None else total + count
    return total, mpc.np_sum(labels)
