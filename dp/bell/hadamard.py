"""Hadamard response: the local randomizer (Alg. 2) and the frequency oracle (Alg. 3) (Bell et al., App. B).

Threat model: each report is epsilon-LDP against an untrusted server; the flip probability is rounded up
to the ``2^-53`` grid so the realised loss never exceeds epsilon.  Plain NumPy, no MPyC.
Variance, Lemmas 5-6 and the split Hadamard sum: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from dp.validation import check_epsilon, check_indices, check_integer, check_int_range
from secure.noise.party import noise_generator

__all__ = ["MAX_LEVELS", "flip_probability", "hadamard_entry", "hadamard_output_probabilities", "HadamardReports",
           "hadamard_randomize", "FrequencyOracle"]

#: Largest number of levels (``domain_size <= 2**62``): rows and values are int64.
MAX_LEVELS: Final[int] = 62

_GRID_BITS: Final[int] = 53        # flips decided by uniform 53-bit integers
_BLOCK: Final[int] = 1 << 21       # largest temporary matrix (elements) in the Hadamard sums
_EXACT_OUTPUT_MAX_BITS: Final[int] = 20


def _check_bits(bits: int) -> int:
    return check_int_range(bits, "bits", low=1, high=MAX_LEVELS)


def _check_nodes(nodes: npt.ArrayLike, level: int) -> np.ndarray:
    array = np.asarray(nodes)
    if array.ndim != 1:
        raise ValueError(f"nodes must be a one-dimensional array, got shape {array.shape}")
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    return check_indices(array, 1 << level, "nodes")


def _freeze(instance: object, **fields: object) -> None:
    """Set the fields of a frozen dataclass from its own ``__init__`` (read-only afterwards)."""
    for name, value in fields.items():
        object.__setattr__(instance, name, value)


def _flip_threshold(epsilon: float) -> int:
    """``T`` with ``T / 2^53 >= 1/(1 + e^ε)``: flip when a uniform 53-bit integer is below ``T`` (docs/ldp.md)."""
    rho = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    threshold = math.ceil(math.ldexp(rho, _GRID_BITS)) + 1
    if 2 * threshold >= 1 << _GRID_BITS:
        raise ValueError(f"epsilon is too small for a flip probability below 1/2 on the 2^-53 grid, got {epsilon}")
    return threshold


def flip_probability(epsilon: float) -> float:
    """The probability ``ρ`` in ``(0, 1/2)`` with which Algorithm 2 negates its bit, as realised here (ValueError if
    epsilon is not finite and positive, or so small that ``ρ`` rounds to 1/2). Details: docs/ldp.md."""
    return math.ldexp(_flip_threshold(check_epsilon(epsilon)), -_GRID_BITS)


def _parity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    return np.bitwise_count(left & right) & np.uint8(1)


def hadamard_entry(row: npt.ArrayLike, column: npt.ArrayLike) -> np.ndarray:
    """Entries ``H[row, column] = (-1)^popcount(row & column)`` of the Sylvester–Hadamard matrix, by bit parity with
    NumPy broadcasting (no matrix is built), as an int8 array of ``±1``."""
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
    """Exact distribution of one report of :func:`hadamard_randomize` for ``value`` in ``[0, 2^bits)``,
    ``1 <= bits <= 20``: shape ``(2^bits, 2)``, column 0 for ``z = -1``, column 1 for ``z = +1`` (docs/ldp.md)."""
    width = _check_bits(bits)
    if width > _EXACT_OUTPUT_MAX_BITS:
        raise ValueError(f"bits must be at most {_EXACT_OUTPUT_MAX_BITS} for the exact distribution, got {bits}")
    index = check_integer(value, "value")
    if not 0 <= index < 1 << width:
        raise ValueError(f"value must lie in [0, {1 << width}), got {value}")
    flip = flip_probability(epsilon)
    keep = 1.0 - flip
    plus = hadamard_entry(np.arange(1 << width, dtype=np.int64), index) > 0
    return np.stack([np.where(plus, flip, keep), np.where(plus, keep, flip)], axis=1) * math.ldexp(1.0, -width)


@dataclass(frozen=True)
class HadamardReports:
    """The ``epsilon``-LDP reports of the users of one frequency oracle on ``2^bits`` values (Algorithm 2): a row
    ``j`` in ``[0, 2^bits)`` (int64) and a bit ``z = ±H[j, q]`` (int8) each."""

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
            check_indices(rows, 1 << self.bits, "rows")
            if not np.all((signs == 1) | (signs == -1)):
                raise ValueError("signs must be +1 or -1")

    @property
    def users(self) -> int:
        return int(np.asarray(self.rows).size)


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
    """Algorithm 2, for each user's value in ``[0, 2^bits)`` (``1 <= bits <= 62``): report a uniform row ``j`` and
    ``H[j, q]``, negated with prob. ``ρ`` (``rng`` ``None``: the OS, :func:`secure.noise.party.os_generator`).
    Details: docs/ldp.md."""
    width = _check_bits(bits)
    eps = check_epsilon(epsilon)
    threshold = _flip_threshold(eps)
    inputs = check_indices(values, 1 << width, "values")
    return _randomize(inputs, width, threshold, eps, noise_generator(rng))


def _signed_parity(left: np.ndarray, right: np.ndarray) -> np.ndarray:
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
    """Hadamard sums by splitting indices into ``split`` high bits and ``bits - split`` low bits (docs/ldp.md)."""
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
    """``Σ_k weights[k] H[rows[k], q]`` for every query ``q`` (float64; exact for integer weights < 2^53), ``split``
    high bits for :func:`_split_sums` (``None``: by cost, 0: direct)."""
    if queries.size == 0 or rows.size == 0:
        return np.zeros(queries.size)
    chosen = _choose_split(rows.size, queries, bits) if split is None else split
    if chosen == 0:
        return _direct_sums(rows, weights, queries)
    return _split_sums(rows, weights, queries, bits, chosen)


@dataclass(frozen=True, init=False, eq=False, repr=False)
class FrequencyOracle:
    """Algorithm 3 on the (at least one) reports of one domain of size ``2^bits``: unbiased counts of any value.
    Attributes and details: docs/ldp.md."""

    bits: int
    users: int
    epsilon: float
    flip_probability: float
    debias_factor: float
    stored_rows: int
    variance_bound: float
    _rows: np.ndarray
    _sums: np.ndarray

    def __init__(self, reports: HadamardReports) -> None:
        if not isinstance(reports, HadamardReports):
            raise TypeError(f"reports must be HadamardReports, got {type(reports).__name__}")
        if reports.users == 0:
            raise ValueError("reports must hold at least one user, got 0")
        threshold = _flip_threshold(reports.epsilon)
        debias = math.ldexp(1.0, _GRID_BITS) / float((1 << _GRID_BITS) - 2 * threshold)  # K = 1/(1 - 2ρ)
        rows = np.asarray(reports.rows, dtype=np.int64)
        signs = np.asarray(reports.signs, dtype=np.float64)
        if (1 << reports.bits) <= 4 * rows.size:
            sums = np.bincount(rows, weights=signs, minlength=1 << reports.bits)
            distinct = np.flatnonzero(sums)
            kept_rows, kept_sums = distinct.astype(np.int64), sums[distinct]
        else:  # rows rarely repeat: grouping (a sort) would save little, keep the reports as they are
            kept_rows, kept_sums = rows.copy(), signs.astype(np.float64)
        _freeze(self, bits=reports.bits, users=reports.users, epsilon=reports.epsilon,
                flip_probability=math.ldexp(threshold, -_GRID_BITS), debias_factor=debias,
                stored_rows=int(kept_rows.size), variance_bound=reports.users * debias ** 2,
                _rows=kept_rows, _sums=kept_sums)

    def counts(self, values: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates (float64, may be negative) of how many users hold each of ``values`` in ``[0, 2^bits)``."""
        return self._unchecked_counts(_check_nodes(values, self.bits))

    def _unchecked_counts(self, queries: np.ndarray) -> np.ndarray:
        return self.debias_factor * _hadamard_sums(self._rows, self._sums, queries, self.bits)

    def variance(self, true_counts: npt.ArrayLike) -> np.ndarray:
        """Exact variance ``n K^2 - count`` of the count estimate of a value held by ``count`` (in ``[0, n]``) users."""
        return self.users * self.debias_factor ** 2 - _check_true_counts(true_counts, self.users)


def _check_true_counts(true_counts: npt.ArrayLike, users: int) -> np.ndarray:
    counts = np.asarray(true_counts, dtype=np.float64)
    if counts.size and (np.any(~np.isfinite(counts)) or counts.min() < 0 or counts.max() > users):
        raise ValueError(f"true_counts must lie in [0, {users}]")
    return counts
