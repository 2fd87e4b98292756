"""Rank sums under MPC by secure sorting: the AUC numerator without revealing scores or labels.

For rows ``(score, label)`` held as secret shares, the Mann-Whitney form of the AUC counts, over all
positive-negative pairs, 1 if the positive scores higher and 1/2 on a tie.  Sorting once with ties
broken negatives-first and once positives-first, the number of negatives before each positive is
``#lower + #tied`` resp. ``#lower``; their sum over positives is ``2 U`` with ties counted 1/2
exactly (the average-rank convention of ``sklearn.metrics.roc_auc_score`` and Sun et al. eq. 1).

Both sorts run as one batched Batcher odd-even merge sort (the network of ``mpc.np_sort``, stage by
stage so that progress can be reported, :func:`secure.meter.report_progress`):
``O(n log^2 n)`` secure comparisons in ``O(log^2 n)`` rounds, instead of the ``n(n-1)/2``
comparisons of evaluating the pair kernel on all pairs.  After sorting, the counts are local
(prefix sums of shares) plus ``n`` secure products per sort.

Threat model: passive adversary, at most ``t < m/2`` corrupted parties; only secure comparisons and
arithmetic on shares are used, nothing is opened here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["twice_mann_whitney", "sorting_stages", "sort_by_stages"]


def sorting_stages(n: int) -> list[tuple[np.ndarray, int]]:
    """The compare-exchange stages of Batcher's odd-even merge sort on ``n`` positions, as in
    ``mpc.np_sort``: per stage the lower positions ``I`` and the distance ``d`` (pairs ``I, I + d``).

    Public: depends on ``n`` only.  ``t (t + 1) / 2`` stages for ``t = ceil(log2 n)``.
    """
    stages: list[tuple[np.ndarray, int]] = []
    if n <= 1:
        return stages
    t = (n - 1).bit_length()
    p = 1 << (t - 1)
    while p:
        d, q, r = p, 1 << (t - 1), 0
        while d:
            stages.append((np.fromiter((i for i in range(n - d) if i & p == r), dtype=int), d))
            d, q, r = q - p, q >> 1, p
        p >>= 1
    return stages


async def sort_by_stages(a: Any, key: Callable[[Any], Any], *, task: str = "secure sort",
                         ahead: int = 8) -> Any:
    """``mpc.np_sort(a, axis=-1, key=key)`` by the same network, reporting ``task``'s progress
    (stages computed of all) through :func:`secure.meter.report_progress`.

    :param a: secure array, sorted along its last axis.
    :param key: secure array -> the secure keys to compare (same shape rules as for ``mpc.np_sort``).
    :param ahead: stages scheduled ahead of the one awaited (MPyC overlaps their rounds).
    """
    from mpyc.runtime import mpc

    from secure.meter import report_progress

    stages = sorting_stages(a.shape[-1])
    report_progress(task, 0, len(stages))
    pending: list[Any] = []  # stages scheduled but not yet awaited: a few run ahead, as in one batch
    done = 0
    for lower, distance in stages:
        first, second = a[..., lower], a[..., lower + distance]
        swap = (key(second) < key(first)) * (second - first)
        a = mpc.np_update(a, (..., lower), first + swap)
        a = mpc.np_update(a, (..., lower + distance), second - swap)
        pending.append(a)
        while len(pending) > ahead or (pending and done + len(pending) == len(stages)):
            await mpc.gather(pending.pop(0))
            done += 1
            report_progress(task, done, len(stages))
    return a


async def twice_mann_whitney(scores: Any, labels: Any) -> tuple[Any, Any]:
    """``2 U`` (pairs positive > negative count 2, ties 1) and the number of positives, both secret.

    :param scores: secure integer array of fixed-point scores, shape ``(n,)``.
    :param labels: secure integer array of 0/1 labels, shape ``(n,)``.
    :return: ``(2U, P)`` as secure integers.
    """
    from mpyc.runtime import mpc

    negatives_first = mpc.np_stack([2 * scores + labels, labels])        # on a tie, label 0 sorts first
    positives_first = mpc.np_stack([2 * scores + (1 - labels), labels])  # on a tie, label 1 sorts first
    both = mpc.np_stack([negatives_first, positives_first])              # (2 sorts, 2 rows, n)
    ordered = await sort_by_stages(both, lambda block: block[:, 0:1, :])
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
