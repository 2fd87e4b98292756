"""Public tuple samplers for incomplete U-statistics of degree ``k`` (Sinh & Ramon, Sec. 3, App. F Algorithm 1).

``E`` is public, drawn from a generator seeded with the parties' joint public seed, never from the data.
The noise must be calibrated on the ``E`` drawn (:func:`max_degree`, App. C.2.3).  Details: docs/umpc_analysis.md."""
from __future__ import annotations

import bisect
import math
from itertools import combinations

import numpy as np
from numpy.typing import NDArray

from dp.validation import check_generator, check_integer, check_nonnegative_int, check_positive_int

__all__ = ["SAMPLING_METHODS", "all_tuples", "balanced_tuples", "bernoulli_tuples", "max_degree", "sample_tuples",
           "tuple_count", "uniform_tuples", "vertex_degrees"]

SAMPLING_METHODS: tuple[str, ...] = ("balanced", "uniform", "bernoulli")

_INT64_MAX = (1 << 63) - 1
_RAW_TOP = 1 << 62  # exclusive bound of the raw integers of the exact uniform token draws
_MAX_ENUMERATED_ENTRIES = 1 << 27  # all_tuples refuses more array entries (C(n, k) * k)
_MAX_TABLE_ENTRIES = 1 << 24  # int64 entries of the binomial tables of the vectorised unranking


def _check_shape(n_rows: int, degree: int) -> tuple[int, int, int]:
    """Validate ``(n_rows, degree)`` (TypeError / ValueError unless ``1 <= k <= n``); return ``(n, k, C(n, k))``."""
    k = check_positive_int(degree, "degree")
    n = check_integer(n_rows, "number of rows")
    if n < k:
        raise ValueError(f"need at least k rows for degree k, got n={n}, k={k}")
    return n, k, math.comb(n, k)


def _check_request(n_rows: int, n_tuples: int, degree: int, rng: np.random.Generator) -> tuple[int, int, int, int]:
    """Validate a sampler's arguments (``1 <= n_tuples <= C(n, k)``, a generator); return ``(n, m, k, C(n, k))``."""
    n, k, total = _check_shape(n_rows, degree)
    m = check_positive_int(n_tuples, "number of tuples")
    if m > total:
        raise ValueError(f"number of tuples {m} exceeds C({n}, {k}) = {total} distinct tuples")
    check_generator(rng)
    return n, m, k, total

def tuple_count(n_rows: int, degree: int) -> int:
    """``C(n, k)``, the number of k-subsets of ``n`` rows, exact (ValueError unless ``1 <= k <= n``)."""
    return _check_shape(n_rows, degree)[2]


def all_tuples(n_rows: int, degree: int) -> NDArray[np.int64]:
    """Every k-subset of ``range(n_rows)`` in lexicographic order, an int64 ``(C(n, k), k)`` array with ascending
    rows; ValueError beyond ``2**27`` entries (sample instead)."""
    n, k, total = _check_shape(n_rows, degree)
    if total * k > _MAX_ENUMERATED_ENTRIES:
        raise ValueError(f"C({n}, {k}) = {total} tuples are too many to enumerate; sample a subset instead")
    if k == 1:
        return np.arange(n, dtype=np.int64).reshape(n, 1)
    if k == 2:
        first, second = np.triu_indices(n, 1)
        return np.stack([first, second], axis=1).astype(np.int64, copy=False)
    flat = np.fromiter((i for combo in combinations(range(n), k) for i in combo), dtype=np.int64, count=total * k)
    return flat.reshape(total, k)


def vertex_degrees(tuples: NDArray[np.int64], n_rows: int) -> NDArray[np.int64]:
    """For each row ``i``, the number of tuples of ``E`` (``(|E|, k)`` integers below ``n_rows``) containing ``i``,
    repeated tuples counted each time; ValueError if ``tuples`` is not 2-D integer or has an entry out of range."""
    check_nonnegative_int(n_rows, "number of rows")
    arr = np.asarray(tuples)
    if arr.ndim != 2:
        raise ValueError(f"tuples must be a 2-D array, got shape {arr.shape}")
    if arr.size == 0:
        return np.zeros(int(n_rows), dtype=np.int64)
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"tuples must hold integers, got dtype {arr.dtype}")
    low, high = int(arr.min()), int(arr.max())
    if low < 0 or high >= n_rows:
        bad = low if low < 0 else high
        raise ValueError(f"tuple entry {bad} lies outside the rows 0..{int(n_rows) - 1}")
    return np.bincount(arr.ravel(), minlength=int(n_rows)).astype(np.int64, copy=False)


def max_degree(tuples: NDArray[np.int64], n_rows: int) -> int:
    """``delta_G_max``, the largest number of tuples of ``E`` sharing one row (errors as :func:`vertex_degrees`).
    Details: docs/umpc_analysis.md."""
    degrees = vertex_degrees(tuples, n_rows)
    return int(degrees.max()) if degrees.size else 0

def _balanced_attempt(capacities: list[int], k: int, m: int, rng: np.random.Generator) -> list[int] | None:
    """Lines 4-15 of Algorithm 1 once from ``p = capacities``: the ``m * k`` drawn rows edge by edge, or ``None``
    if line 5 asks for a restart. Details: docs/umpc_analysis.md."""
    tokens: list[int] = np.repeat(np.arange(len(capacities)), capacities).tolist()
    size = len(tokens)
    remaining = list(capacities)
    nonzero = sum(1 for c in capacities if c > 0)
    out: list[int] = []
    batch = min(1 << 16, k * m + 64)
    buffer: list[int] = []
    pos = 0
    top = _RAW_TOP
    for _ in range(m):
        if nonzero < k:  # line 5: restart
            return None
        chosen: list[int] = []
        for _ in range(k):
            while True:
                if pos == len(buffer):
                    buffer = rng.integers(0, top, size=batch, dtype=np.int64).tolist()
                    pos = 0
                raw = buffer[pos]
                pos += 1
                slot = raw % size
                if raw - slot > top - size:  # incomplete last block: reject for exactness
                    continue
                v = tokens[slot]
                if v in chosen:  # without replacement inside the edge
                    continue
                break
            chosen.append(v)
            size -= 1
            tokens[slot] = tokens[size]
            tokens[size] = v
            remaining[v] -= 1
            if remaining[v] == 0:
                nonzero -= 1
        out.extend(chosen)
    return out


def _balanced_tuples_counted(
    n: int, m: int, k: int, rng: np.random.Generator, strict_balance: bool, max_restarts: int
) -> tuple[NDArray[np.int64], int]:
    """BalancedSamp (arguments validated by :func:`balanced_tuples`) and the number of restarts it needed."""
    total = k * m
    ceiling = -(-total // n)  # line 2: M = ceil(k m / n)
    extra = total - (ceiling - 1) * n  # rows that end with degree M under strict balance
    restarts = 0
    while True:
        if strict_balance and extra != n:
            # exact capacities: `extra` rows chosen uniformly get M, the others M - 1; they sum
            # to k m, so the finished E has exactly these degrees.
            capacities = [ceiling - 1] * n
            for v in rng.choice(n, size=extra, replace=False, shuffle=False).tolist():
                capacities[v] = ceiling
        else:
            capacities = [ceiling] * n  # line 3
        drawn = _balanced_attempt(capacities, k, m, rng)
        if drawn is not None:
            tuples = np.asarray(drawn, dtype=np.int64).reshape(m, k)
            tuples.sort(axis=1)
            if strict_balance:
                degrees = np.bincount(tuples.ravel(), minlength=n)
                if int(degrees.max()) - int(degrees.min()) > 1:  # pragma: no cover - by design
                    raise RuntimeError("internal error: strict balanced sampling lost balance")
            return tuples, restarts
        restarts += 1
        if restarts > max_restarts:
            raise RuntimeError(f"balanced sampling needed more than {max_restarts} restarts (n={n}, k={k}, m={m})")


def balanced_tuples(n_rows: int, n_tuples: int, degree: int, rng: np.random.Generator, *,
                    strict_balance: bool = True, max_restarts: int = 10_000) -> NDArray[np.int64]:
    """``m`` edges by BalancedSamp (Sinh & Ramon, App. F, Algorithm 1), an int64 ``(m, k)`` array in draw order,
    rows ascending; ``rng`` (seeded from the joint public seed) is the only randomness, ``strict_balance`` keeps
    vertex degrees within one of each other; RuntimeError past ``max_restarts``. Details: docs/umpc_analysis.md."""
    n, m, k, total = _check_request(n_rows, n_tuples, degree, rng)
    restarts = check_nonnegative_int(max_restarts, "max_restarts")
    tuples, _ = _balanced_tuples_counted(n, m, k, rng, bool(strict_balance), restarts)
    return tuples

def _unrank_python(ranks: list[int], n: int, k: int) -> NDArray[np.int64]:
    """Exact unranking with Python ints (any ``C(n, k)``); O(k log n) ``math.comb`` per rank."""
    out = np.empty((len(ranks), k), dtype=np.int64)
    for row, rank in enumerate(ranks):
        rest = int(rank)
        upper = n
        for i in range(k, 0, -1):
            # the largest c in [i - 1, upper - 1] with C(c, i) <= rest (C(i - 1, i) = 0 always qualifies)
            c = i - 2 + bisect.bisect_right(range(i - 1, upper), rest, key=lambda x: math.comb(x, i))
            out[row, i - 1] = c
            rest -= math.comb(c, i)
            upper = c
    return out


def _unrank_pairs(ranks: NDArray[np.int64]) -> NDArray[np.int64]:
    """Closed-form colex unranking for ``k = 2`` (``rank = C(c_2, 2) + c_1``; the caller keeps it within int64)."""
    r = ranks.astype(np.int64, copy=False)
    c2 = np.floor((1.0 + np.sqrt(1.0 + 8.0 * r.astype(np.float64))) / 2.0).astype(np.int64)
    for _ in range(2):  # float rounding: correct by exact integer comparisons
        c2 = np.where(c2 * (c2 - 1) // 2 > r, c2 - 1, c2)
        c2 = np.where((c2 + 1) * c2 // 2 <= r, c2 + 1, c2)
    c1 = r - c2 * (c2 - 1) // 2
    return np.stack([c1, c2], axis=1)


def _unrank_tables(ranks: NDArray[np.int64], n: int, k: int) -> NDArray[np.int64]:
    """Vectorised colex unranking with tables ``T_i[c] = C(c, i)`` and ``searchsorted``."""
    c = np.arange(n, dtype=np.int64)
    tables = [c.copy()]
    for i in range(2, k + 1):  # C(c, i) = C(c, i-1) (c - i + 1) / i, exact in int64 (checked)
        tables.append(tables[-1] * (c - i + 1) // i)
    rest = ranks.astype(np.int64, copy=True)
    out = np.empty((rest.shape[0], k), dtype=np.int64)
    for i in range(k, 0, -1):
        table = tables[i - 1]
        ci = np.searchsorted(table, rest, side="right") - 1
        out[:, i - 1] = ci
        rest -= table[ci]
    return out


def _unrank_colex(ranks: NDArray[np.int64] | list[int], n: int, k: int) -> NDArray[np.int64]:
    """Map colex ranks in ``[0, C(n, k))`` to ascending k-subsets of ``range(n)``. Details: docs/umpc_analysis.md."""
    if len(ranks) == 0:
        return np.empty((0, k), dtype=np.int64)
    total = math.comb(n, k)
    if total <= _INT64_MAX:
        arr = np.asarray(ranks, dtype=np.int64)
        if k == 1:
            return arr.reshape(-1, 1).copy()
        if k == 2 and n <= 3_000_000_000:
            return _unrank_pairs(arr)
        # the tables fit: small, and i * C(c, i) within int64 for all c < n, i <= k
        if n * k <= _MAX_TABLE_ENTRIES and all(i * math.comb(n - 1, i) <= _INT64_MAX for i in range(1, k + 1)):
            return _unrank_tables(arr, n, k)
        return _unrank_python([int(r) for r in arr.tolist()], n, k)
    return _unrank_python([int(r) for r in ranks], n, k)


def _random_below(bound: int, rng: np.random.Generator, count: int) -> list[int]:
    """``count`` independent exact uniform integers in ``[0, bound)`` (any Python int). Details: docs/umpc_analysis.md."""
    bits = bound.bit_length()
    width = (bits + 7) // 8
    mask = (1 << bits) - 1
    out: list[int] = []
    while len(out) < count:
        want = 2 * (count - len(out)) + 8
        raw = rng.bytes(width * want)
        for j in range(want):
            value = int.from_bytes(raw[j * width : (j + 1) * width], "little") & mask
            if value < bound:
                out.append(value)
                if len(out) == count:
                    break
    return out


def _distinct_ranks(total: int, m: int, rng: np.random.Generator) -> NDArray[np.int64] | list[int]:
    """``m`` distinct ranks drawn uniformly without replacement from ``[0, total)``, sorted."""
    if total <= _INT64_MAX:
        ranks = rng.choice(total, size=m, replace=False, shuffle=False).astype(np.int64)
        ranks.sort()
        return ranks
    # total >= 2**63: the first m distinct values of an i.i.d. uniform stream form a uniform
    # m-subset; collisions are astronomically rare, so this terminates after about m draws.
    seen: set[int] = set()
    picked: list[int] = []
    while len(picked) < m:
        for value in _random_below(total, rng, m - len(picked)):
            if value not in seen:
                seen.add(value)
                picked.append(value)
    picked.sort()
    return picked


def _uniform_unchecked(n: int, m: int, k: int, total: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """:func:`uniform_tuples` without validation."""
    if m == total and total * k <= _MAX_ENUMERATED_ENTRIES:
        return all_tuples(n, k)
    tuples = _unrank_colex(_distinct_ranks(total, m, rng), n, k)
    return tuples if tuples.shape[0] < 2 else tuples[np.lexsort(tuples.T[::-1])]


def uniform_tuples(n_rows: int, n_tuples: int, degree: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """``m`` distinct k-subsets uniformly without replacement, an int64 ``(m, k)`` array, rows ascending and in
    lexicographic order (``m = C(n, k)`` gives :func:`all_tuples`). Details: docs/umpc_analysis.md."""
    n, m, k, total = _check_request(n_rows, n_tuples, degree, rng)
    return _uniform_unchecked(n, m, k, total, rng)

def bernoulli_tuples(n_rows: int, n_tuples: int, degree: int, rng: np.random.Generator) -> NDArray[np.int64]:
    """Keep every k-subset independently with probability ``q = m / C(n, k)`` (``m`` expected tuples): an int64
    ``(S, k)`` array, ``S >= 1``, ordered as :func:`uniform_tuples`. Details: docs/umpc_analysis.md."""
    n, m, k, total = _check_request(n_rows, n_tuples, degree, rng)
    q = m / total
    size = 0
    while size == 0 or size > total:
        if total <= _INT64_MAX:
            size = int(rng.binomial(total, q))
        else:
            size = int(rng.poisson(float(m)))
    return _uniform_unchecked(n, size, k, total, rng)

def sample_tuples(method: str, n_rows: int, n_tuples: int | None, degree: int,
                  rng: np.random.Generator) -> NDArray[np.int64]:
    """The public tuple set ``E`` by ``method`` of :data:`SAMPLING_METHODS` (the ``*_tuples`` function of that name);
    ``n_tuples=None`` gives :func:`all_tuples` (the complete U-statistic, ``rng`` unused)."""
    if method not in SAMPLING_METHODS:
        known = ", ".join(repr(name) for name in SAMPLING_METHODS)
        raise ValueError(f"unknown sampling method {method!r}; known methods: {known}")
    if n_tuples is None:
        return all_tuples(n_rows, degree)
    sampler = {"balanced": balanced_tuples, "uniform": uniform_tuples, "bernoulli": bernoulli_tuples}[method]
    return sampler(n_rows, n_tuples, degree, rng)
