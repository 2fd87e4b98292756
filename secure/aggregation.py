"""Secure sums, each party's noise share, and the guarded reveal (Sinh & Ramon, Protocol 3.1 steps 3-4; App. B.1).
Threat model: passive, static coalition of ``t < m/2`` parties.  Only the noisy sum is opened; a party whose count vector does not
match its declared row count is named and every party stops before anything is opened. Details: docs/secure_layer.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, AsyncIterator, Sequence

import numpy as np

from secure.errors import InputError, ProtocolFailure

__all__ = ["secure_sum", "add_party_noise", "sum_party_vectors", "sum_counted_vectors", "counted_blocks",
           "refuse_deviating_parties", "count_bits", "DEVIATING_COUNT", "NONNEGATIVE_MAX_ELEMENTS", "RHO_BITS",
           "SumRange", "guarded_reveal", "guarded_reveal_array"]

#: what the check of :func:`sum_counted_vectors` says about a party whose count vector fails it
DEVIATING_COUNT = "its {what} does not sum to its public row count (deviating party); nothing is released"


def secure_sum(values: Any) -> Any:
    """Sum of a secure array (``mpc.np_sum``): a secure integer, no communication."""
    from mpyc.runtime import mpc

    return mpc.np_sum(values)


def add_party_noise(total: Any, own_draw: int) -> Any:
    """``total`` plus every party's secret-shared noise draw (this party's: ``own_draw``), still secret."""
    from mpyc.runtime import mpc

    sectype = type(total)
    draws = mpc.input(sectype(int(own_draw)))  # one secure integer per party, each its sender's
    return total + mpc.sum(draws)


def sum_party_vectors(sectype: Any, own: np.ndarray) -> Any:
    """Every party secret-shares its own integer vector (same length everywhere): the secure elementwise sum.
    Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    vectors = mpc.input(sectype.array(np.asarray(own, dtype=np.int64)))  # one secure array per sender
    return sum(vectors[1:], vectors[0])


async def refuse_deviating_parties(differences: Any, problems: Sequence[str]) -> None:
    """Stop every party alike (InputError ``party i: <problem>``) if an entry of the secure ``(m, k)``
    ``differences`` is nonzero, naming the first such party; ``problems`` holds the ``k`` checks' texts (no value in
    them). Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    from secure.session import mark_stopping

    zero = np.asarray(await mpc.np_is_zero_public(differences), dtype=bool).reshape(differences.shape)
    failing = [(int(i), int(j)) for i, j in zip(*np.nonzero(~zero))]
    if failing:
        mark_stopping()  # every party opened the same bits: every party stops with the same line
        party, check = failing[0]
        others = sorted({i for i, _ in failing[1:] if i != party})
        also = f" (parties {', '.join(map(str, others))} too)" if others else ""
        raise InputError(f"party {party}: {problems[check]}{also}")


#: largest ``cells * bits`` per party for which :func:`sum_counted_vectors` proves its cells non-negative by default
NONNEGATIVE_MAX_ELEMENTS = 1 << 19
#: cells of a count vector secret-shared at a time by :func:`sum_counted_vectors` without the bit proof
INPUT_CELLS = 1 << 15
#: the bit check's random weights lie in ``[1, 2^RHO_BITS)``: a non-bit vector passes w.p. <= ``2^-RHO_BITS``
RHO_BITS = 40


def count_bits(own: np.ndarray, width: int) -> np.ndarray:
    """This party's counts as ``width`` bits each (least significant first), shape ``(cells, width)``; ValueError
    for a count outside ``[0, 2^width)``."""
    counts = np.asarray(own, dtype=np.int64).reshape(-1)
    if counts.size and (int(counts.min()) < 0 or int(counts.max()) >= 1 << width):
        raise ValueError(f"counts must lie in [0, 2^{width}), got [{int(counts.min())}, {int(counts.max())}]")
    return ((counts[:, None] >> np.arange(width, dtype=np.int64)) & 1).astype(np.int64)


def _proves_nonnegative(cells: int, totals: Sequence[int], sectype: Any, nonnegative: bool | None) -> int:
    """The bit width of the non-negativity proof, or 0 for the sum check alone (public parameters only)."""
    width = max(1, max(int(t) for t in totals).bit_length())
    fits = cells * (1 << width) < sectype.field.order  # the sum of the cells cannot wrap around the field
    if nonnegative is None:
        nonnegative = cells * width <= NONNEGATIVE_MAX_ELEMENTS
    return width if nonnegative and fits else 0


async def counted_blocks(sectype: Any, own: np.ndarray, totals: Sequence[int], *, what: str = "count vector",
                         nonnegative: bool | None = None, cells: int | None = None) -> AsyncIterator[Any]:
    """Every party's count table ``own`` (a vector, or rows of cells; same shape everywhere) secret-shared and summed,
    yielded about ``cells`` cells (default :data:`INPUT_CELLS`) of whole rows at a time, or as one block with the bit
    proof (``nonnegative``); refused (InputError naming the party and ``what``) after the last block unless each
    party's table sums to its public row count in ``totals``.  Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    table = np.asarray(own, dtype=np.int64)
    table = table.reshape(len(table), math.prod(table.shape[1:])) if table.ndim > 1 else table.reshape(-1, 1)
    if len(totals) != len(mpc.parties):
        raise ValueError(f"totals must give one row count per party ({len(mpc.parties)}), got {len(totals)}")
    problems = [DEVIATING_COUNT.format(what=what)]
    width = _proves_nonnegative(table.size, totals, sectype, nonnegative)
    if width:
        from secure.public_randomness import joint_seed, public_generator

        size, parties = table.size, len(mpc.parties)
        bits = mpc.input(sectype.array(count_bits(table, width).reshape(-1)))  # one secure array per sender
        stacked = mpc.np_stack(bits)  # (m, cells * width)
        powers = (1 << np.arange(width, dtype=np.int64))
        vectors_matrix = mpc.np_matmul(stacked.reshape(parties * size, width), powers).reshape(parties, size)
        rho = public_generator(await joint_seed()).integers(1, 1 << RHO_BITS, size=size * width, dtype=np.int64)
        weighted = (stacked * rho).reshape(parties, 1, size * width)
        not_bits = mpc.np_matmul(weighted, (stacked - 1).reshape(parties, size * width, 1)).reshape(parties, 1)
        sums = mpc.np_sum(vectors_matrix, axis=1).reshape(parties, 1)
        differences = mpc.np_concatenate([sums - np.asarray([[int(t)] for t in totals], dtype=np.int64), not_bits],
                                         axis=1)
        problems.append(f"its {what} has a cell that is not a count of its rows (deviating party); "
                        "nothing is released")
        await refuse_deviating_parties(differences, problems)
        yield mpc.np_sum(vectors_matrix, axis=0).reshape(table.shape)
        return
    step = max(1, (INPUT_CELLS if cells is None else cells) // max(1, table.shape[1]))
    sums = [sectype(-int(total)) for total in totals]  # each party's sum so far minus its row count
    for start in range(0, max(len(table), 1), step):
        vectors = mpc.input(sectype.array(table[start:start + step]))  # one secure array per sender
        sums = [total + mpc.np_sum(vector) for total, vector in zip(sums, vectors)]
        block = sum(vectors[1:], vectors[0])
        await mpc.gather(block, *sums)
        yield block
    await refuse_deviating_parties(mpc.np_fromlist(sums).reshape(len(sums), 1), problems)


async def sum_counted_vectors(sectype: Any, own: np.ndarray, totals: Sequence[int], *,
                              what: str = "count vector", nonnegative: bool | None = None) -> Any:
    """:func:`sum_party_vectors` for count vectors, checked as :func:`counted_blocks` checks them (the vector secret-
    shared :data:`INPUT_CELLS` cells at a time, or at once with the bit proof). Details: docs/secure_layer.md."""
    from mpyc.runtime import mpc

    vector = np.asarray(own, dtype=np.int64).reshape(-1)
    parts = [part async for part in counted_blocks(sectype, vector, totals, what=what, nonnegative=nonnegative)]
    return (parts[0] if len(parts) == 1 else mpc.np_concatenate(parts)).reshape(-1)


@dataclass(frozen=True)
class SumRange:
    """Where an opened noisy sum may lie: ``[low - slack, high + slack]``, the noiseless sum's range widened by a
    bound on the noise magnitude (exceeded with negligible probability)."""

    low: int
    high: int
    slack: int

    @property
    def bits_needed(self) -> int:
        """Signed bit length that holds every value of the range."""
        return max(abs(self.low - self.slack), abs(self.high + self.slack)).bit_length() + 1


async def guarded_reveal(noisy_sums: Sequence[Any], ranges: Sequence[SumRange],
                         receivers: Sequence[int] | None = None) -> list[int]:
    """Open the noisy sums to ``receivers`` (default all; others get ``[]``) and check each lies in its possible range
    and the secure type's; ProtocolFailure otherwise (wrap-around), naming the ``-L`` that would hold the range."""
    from mpyc.runtime import mpc

    receivers = list(range(len(mpc.parties))) if receivers is None else list(receivers)
    opened = await mpc.output(list(noisy_sums), receivers=receivers)
    if mpc.pid not in receivers:
        return []
    values = [int(v) for v in opened]
    for value, bounds, secure in zip(values, ranges, noisy_sums):
        _check_opened(np.array([value], dtype=object), bounds, type(secure).bit_length)
    return values


def _check_opened(values: np.ndarray, bounds: SumRange, bit_length: int) -> None:
    half = 1 << (bit_length - 1)
    low, high = bounds.low - bounds.slack, bounds.high + bounds.slack
    outside_type = [int(v) for v in values if not -half <= int(v) < half]
    outside_range = [int(v) for v in values if not low <= int(v) <= high]
    if not (outside_type or outside_range):
        return
    from secure.session import mark_stopping

    value = (outside_range or outside_type)[0]
    mark_stopping()  # every receiver sees the same values and stops the same way
    if bounds.bits_needed <= bit_length and outside_range:
        # -L holds every sum the declared domains allow: the inputs themselves left their domains.
        raise ProtocolFailure(
            f"the opened noisy sum {value} lies outside its possible range [{low}, {high}], although "
            f"-L {bit_length} holds that range: some party shared values outside the declared domains "
            f"(it skipped its clipping; --clip secure clips inside MPC) or a noise share far off its "
            f"distribution, so nothing is released")
    needed = max(bounds.bits_needed, bit_length + 1)
    raise ProtocolFailure(
        f"the opened noisy sum {value} lies outside "
        f"{'its possible range' if outside_range else 'the range of the secure integers'} "
        f"[{low}, {high}] with -L {bit_length}: the secure integers are too short and wrapped around, "
        f"so nothing is released; rerun with -L {needed} or more")


async def guarded_reveal_array(noisy: Any, bounds: SumRange, receivers: Sequence[int] | None = None) -> np.ndarray | None:
    """:func:`guarded_reveal` of a secure array of noisy sums that share one range: int64 at receivers, else ``None``."""
    from mpyc.runtime import mpc

    receivers = list(range(len(mpc.parties))) if receivers is None else list(receivers)
    opened = await mpc.output(noisy, receivers=receivers)
    if mpc.pid not in receivers:
        return None
    values = np.array([int(v) for v in np.asarray(opened).ravel()], dtype=object)
    _check_opened(values, bounds, type(noisy).sectype.bit_length)
    return values.astype(np.int64)
