"""Rank sums under MPC by secure sorting: the AUC numerator without revealing scores or labels.
Two sorts with ties broken both ways give ``2 U`` with ties counted 1/2 (Sun et al. eq. 1).
Threat model: passive, static coalition of ``t < m/2`` parties.  Each comparison opens a masked value (:mod:`secure.leakage`).
Details: docs/secure_layer.md."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["twice_mann_whitney", "sorting_stages", "sorting_network_size", "sort_by_stages",
           "sorted_auc_sums", "compact_bit_length", "sorted_gini_sum", "sorted_auc_sums_plain", "sorted_gini_sum_plain", "SortCost", "sort_costs"]

SecureInt = Any  # an MPyC secure integer (e.g. SecInt32), as returned by ``mpc.np_sum``


def sorting_stages(n: int) -> list[tuple[np.ndarray, int]]:
    """The compare-exchange stages of Batcher's odd-even merge sort on ``n`` positions, as in ``mpc.np_sort``: per
    stage the lower positions ``I`` and the distance ``d`` (pairs ``I, I + d``); public, ``t (t + 1) / 2`` stages."""
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


def _positions_with_bit(limit: int, bit: int, value: int) -> int:
    """``#{0 <= i < limit : bit `bit` of i equals value}`` in closed form (no enumeration)."""
    if limit <= 0:
        return 0
    half = 1 << bit
    ones = (limit >> (bit + 1)) * half + max(0, (limit & (2 * half - 1)) - half)
    return ones if value else limit - ones


def sorting_network_size(n: int) -> tuple[int, int]:
    """``(comparators, stages)`` of the network :func:`sorting_stages` builds (Batcher's odd-even merge sort in
    Knuth's formulation, TAOCP vol. 3, 5.2.2, Algorithm M, as in ``mpc.np_sort``), without building it.
    Details: docs/secure_layer.md."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if n <= 1:
        return 0, 0
    t = (n - 1).bit_length()
    comparators = 0
    for level in range(t - 1, -1, -1):  # p = 2^level
        p = 1 << level
        comparators += _positions_with_bit(n - p, level, 0)
        q = 1 << (t - 1)
        while q > p:
            comparators += _positions_with_bit(n - (q - p), level, 1)
            q >>= 1
    return comparators, t * (t + 1) // 2


async def sort_by_stages(a: Any, key: Callable[[Any], Any], *, task: str = "secure sort",
                         ahead: int = 8, bits: int | None = None) -> Any:
    """``mpc.np_sort(a, axis=-1, key=key)`` by the same network, reporting ``task``'s progress, ``ahead`` stages
    scheduled ahead; ``bits`` bounds the keys' signed differences, each comparison then costs ``bits`` random bits
    (``None``: the type's, as ``mpc.np_sort``).  Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    from secure.meter import report_progress

    if bits is not None:
        _check_bits(bits, a.sectype.bit_length)
    stages = sorting_stages(a.shape[-1])
    report_progress(task, 0, len(stages))
    pending: list[Any] = []  # stages scheduled but not yet awaited: a few run ahead, as in one batch
    done = 0
    for lower, distance in stages:
        first, second = a[..., lower], a[..., lower + distance]
        if bits is None:
            less = key(second) < key(first)
        else:
            less = mpc.np_sgn(key(second) - key(first), l=bits, LT=True)
        swap = less * (second - first)
        a = mpc.np_update(a, (..., lower), first + swap)
        a = mpc.np_update(a, (..., lower + distance), second - swap)
        pending.append(a)
        while len(pending) > ahead or (pending and done + len(pending) == len(stages)):
            await mpc.gather(pending.pop(0))
            done += 1
            report_progress(task, done, len(stages))
    return a


async def twice_mann_whitney(scores: Any, labels: Any) -> tuple[Any, Any]:
    """``(2U, P)``, secret: pairs positive > negative count 2, ties 1, of secure ``(n,)`` fixed-point ``scores`` and
    0/1 ``labels``; ``P`` the number of positives. Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    negatives_first = mpc.np_stack([2 * scores + labels, labels])        # on a tie, label 0 sorts first
    positives_first = mpc.np_stack([2 * scores + (1 - labels), labels])  # on a tie, label 1 sorts first
    both = mpc.np_stack([negatives_first, positives_first])              # (2 sorts, 2 rows, n)
    ordered = await sort_by_stages(both, lambda block: block[:, 0:1, :])
    sorted_labels = ordered[:, 1, :]  # (2 sorts, n)
    negative = 1 - sorted_labels
    negatives_before = mpc.np_cumsum(negative, axis=1) - negative
    return mpc.np_sum(sorted_labels * negatives_before), mpc.np_sum(labels)


def _check_bits(bits: int, bit_length: int) -> None:
    """Refuse a comparison bit length the secure type cannot hold (or that holds no sign)."""
    if not isinstance(bits, int) or isinstance(bits, bool):
        raise ValueError(f"bits must be an integer, got {bits!r}")
    if not 2 <= bits <= bit_length:
        raise ValueError(f"bits must lie in [2, {bit_length}] (the secure type's bit length), got {bits}")


def compact_bit_length(statistic: str, n: int, bits: int) -> int:
    """Bit length of the shorter secure type the sort of ``statistic`` (``auc`` or ``gini``) runs on: the keys'
    ``bits``, and for AUC also counts up to ``2n``.  The sort converts into it (and back) only if the
    caller's type is longer (:func:`secure.leakage.sort_openings` counts those conversions)."""
    return max(bits, (2 * n).bit_length() + 1) if statistic == "auc" else bits


def _compact_type(sectype: Any, bit_length: int) -> Any:
    """The secure integer type of ``bit_length`` bits (its field sized for the current ``-K``,
    :func:`secure.security_parameter.secure_integers`), or ``sectype`` itself if that is not longer."""
    from secure.security_parameter import secure_integers

    return secure_integers(bit_length) if bit_length < sectype.bit_length else sectype


def _convert(a: Any, sectype: Any) -> Any:
    """A 1-D secure integer array as an array of ``sectype`` (values must fit both types). Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    if a.sectype is sectype:
        return a
    return mpc.np_fromlist(mpc.convert(mpc.np_tolist(a), sectype))


def _values_at_run_starts(values: Any, starts: Any) -> Any:
    """For each position of the secure ``(n,)`` ``values``, the value at the start of its run (``starts[i] = 1`` where
    position ``i + 1`` starts one; position 0 always does): a segmented copy-forward (Hillis-Steele),
    ``ceil(log2 n)`` rounds of two products per position. Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    n = values.shape[0]
    one = values.sectype.array(np.ones(1, dtype=int))
    state = mpc.np_stack([mpc.np_concatenate([values[:1], starts * values[1:]]),
                          mpc.np_concatenate([one, starts])])
    distance = 1
    while distance < n:
        later = state[:, distance:] + (1 - state[1:2, distance:]) * state[:, :-distance]
        state = mpc.np_concatenate([state[:, :distance], later], axis=1)
        distance *= 2
    return state[0]


async def sorted_auc_sums(scores: Any, labels: Any, *, bits: int,
                          task: str = "secure sort") -> tuple[SecureInt, SecureInt]:
    """``(2U, P)`` as :func:`twice_mann_whitney` (``n >= 2``) by ONE secure sort and equality runs instead of two
    sorts; keys ``2 score + label`` in ``[0, 2^(bits-1))`` (scores in ``[0, 2^w)``: ``bits = w + 2``); the caller
    checks that the type holds ``2U <= 2 floor(n/2) ceil(n/2)``. Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    n = scores.shape[0]
    if scores.shape != (n,) or labels.shape != (n,):
        raise ValueError(f"scores and labels must be 1-D of one length, got {scores.shape} and {labels.shape}")
    if n < 2:
        raise ValueError(f"need at least 2 rows for an AUC, got {n}")
    _check_bits(bits, scores.sectype.bit_length)
    compact = _compact_type(scores.sectype, compact_bit_length("auc", n, bits))  # keys, and counts up to 2n
    rows = mpc.np_stack([_convert(2 * scores + labels, compact), _convert(labels, compact)])
    ordered = await sort_by_stages(rows, lambda block: block[..., 0:1, :], task=task, bits=bits)  # by row 0
    label = ordered[1]
    doubled = ordered[0] - label  # 2 score, ascending
    tied = mpc.np_sgn(doubled[1:] - doubled[:-1], l=bits, EQ=True)  # 1 where the score equals the previous
    negative = 1 - label
    before = mpc.np_cumsum(negative) - negative
    at_start = _values_at_run_starts(before, 1 - tied)
    twice_u = mpc.np_sum(_convert(label * (before + at_start), scores.sectype))  # each term < 2n; the sum may not be
    return twice_u, mpc.np_sum(labels)


async def sorted_gini_sum(values: Any, *, bits: int, task: str = "secure sort") -> SecureInt:
    """``sum over pairs i < j of |x_i - x_j|`` of secure ``(n,)`` fixed-point values in ``[0, 2^(bits-1))`` (values
    in ``[0, 2^w)``: ``bits = w + 1``) by one secure sort; the caller checks that the type holds the sum.
    Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    if len(values.shape) != 1:
        raise ValueError(f"values must be 1-D, got shape {values.shape}")
    n = values.shape[0]
    _check_bits(bits, values.sectype.bit_length)
    compact = _compact_type(values.sectype, compact_bit_length("gini", n, bits))
    ordered = await sort_by_stages(_convert(values, compact), lambda block: block, task=task, bits=bits)
    weights = 2 * np.arange(1, n + 1) - n - 1
    return mpc.np_sum(_convert(ordered, values.sectype) * weights)


def sorted_auc_sums_plain(scores: Sequence[int] | np.ndarray, labels: Sequence[int] | np.ndarray) -> tuple[int, int]:
    """Plaintext mirror of :func:`sorted_auc_sums` (same sort key, same runs): ``(2U, P)`` as ints."""
    score_list, label_list = [int(s) for s in scores], [int(label) for label in labels]
    if len(score_list) != len(label_list):
        raise ValueError(f"scores and labels must have one length, got {len(score_list)} and {len(label_list)}")
    if any(label not in (0, 1) for label in label_list):
        raise ValueError("labels must be 0 or 1")
    twice_u = negatives = at_start = 0
    previous: int | None = None
    for score, label in sorted(zip(score_list, label_list), key=lambda row: 2 * row[0] + row[1]):
        if score != previous:
            at_start, previous = negatives, score
        if label:
            twice_u += negatives + at_start
        else:
            negatives += 1
    return twice_u, sum(label_list)


def sorted_gini_sum_plain(values: Sequence[int] | np.ndarray) -> int:
    """Plaintext mirror of :func:`sorted_gini_sum`: ``sum_k (2k - n - 1) x_(k)`` as an int."""
    ordered = sorted(int(v) for v in values)
    n = len(ordered)
    return sum((2 * k - n - 1) * x for k, x in enumerate(ordered, start=1))


@dataclass(frozen=True)
class SortCost:
    """Public counts of work of one sort-path statistic on ``n`` rows (for the planner): less-than and equality
    tests at ``bits`` bits, products outside them (swaps, run scan, sums), conversions to and from the sort's
    shorter type (one masked opening each) and sequential rounds. Details: docs/secure_layer.md."""

    statistic: str
    n: int
    bits: int
    comparisons: int
    equality_tests: int
    products: int
    conversions: int
    rounds: int


def sort_costs(n: int, bits: int, *, statistic: str = "auc") -> SortCost:
    """The public cost counts of :func:`sorted_auc_sums` (``statistic="auc"``) or :func:`sorted_gini_sum`
    (``"gini"``) on ``n`` rows, in closed form (planning the sort of ``10^7`` rows builds no network)."""
    if n < 2:
        raise ValueError(f"n must be at least 2, got {n}")
    if bits < 2:
        raise ValueError(f"bits must be at least 2, got {bits}")
    if statistic not in ("auc", "gini"):
        raise ValueError(f"unknown statistic '{statistic}'; choose one of: auc, gini")
    comparisons, stages = sorting_network_size(n)  # closed form: no network is built to count it
    if statistic == "gini":
        return SortCost(statistic, n, bits, comparisons, 0, comparisons, 2 * n, stages + 2)
    scan_rounds = (n - 1).bit_length()
    scan_products = sum(2 * (n - (1 << r)) for r in range(scan_rounds))
    products = 2 * comparisons + (n - 1) + scan_products + n
    rounds = 1 + stages + 1 + 1 + scan_rounds + 1 + 1
    return SortCost(statistic, n, bits, comparisons, n - 1, products, 3 * n, rounds)
