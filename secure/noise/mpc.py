"""Discrete Laplace noise sampled *inside* MPC from jointly generated secret random bits.
The second way of adding noise (docs/design.md, "Noise"): no party, and no coalition of at most ``t``,
knows anything about the noise; one discrete Laplace, not ``m/(m-t)`` times one.  Biased coins ``[U < T]``
(Champion, shelat & Ullman 2019).  Threat model: passive, static coalition of ``t < m/2`` parties (MPyC's Shamir scheme).  Bits from PRSS (computational) or
``--no-prss`` (statistical).  Construction: docs/noise.md."""
from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np

from secure.checks import check_int_range

__all__ = ["threshold_bits", "less_than_public", "secret_bernoulli",
           "secret_discrete_laplace", "MAX_WIDTH"]

#: Largest bit width of one comparison (the dp layer uses 64 and, for large epsilon, up to 256).
MAX_WIDTH: int = 1024

SecureArray = Any  # an MPyC secure NumPy array (e.g. ArraySecInt32)


def _mpc() -> Any:
    from mpyc.runtime import mpc

    return mpc


def _check_width(width: int, name: str = "bits") -> int:
    return check_int_range(width, name, low=1, high=MAX_WIDTH)


def _check_thresholds(thresholds: Sequence[int], width: int) -> list[int]:
    values = list(thresholds)
    for value in values:
        if isinstance(value, bool) or not isinstance(value, Integral):
            raise TypeError(f"thresholds must be integers, got {value!r}")
        if not 0 <= value < 1 << width:
            raise ValueError(f"thresholds must lie in [0, 2**{width}), got {value}")
    return [int(v) for v in values]


def threshold_bits(thresholds: Sequence[int], width: int) -> np.ndarray:
    """The bits of ``N`` public thresholds in ``[0, 2**width)``, most significant first: an int64 ``(N, width)`` array,
    ``out[i, k]`` bit ``width - 1 - k`` of ``thresholds[i]``."""
    w = _check_width(width, "width")
    values = np.array(_check_thresholds(thresholds, w), dtype=object).reshape(-1, 1)
    return ((values >> np.arange(w - 1, -1, -1)) & 1).astype(np.int64).reshape(-1, w)


def _tree_less_than(below: SecureArray, equal: SecureArray) -> SecureArray:
    """``[U < T]`` per row from the digits' pairs ``below = t_k (1 - u_k)``, ``equal = [u_k = t_k]`` (docs/noise.md)
    by a balanced tree: ``ceil(log2 w)`` rounds, two products per combined pair (one at the root; none for w = 1)."""
    mpc = _mpc()
    while below.shape[1] > 1:
        width = below.shape[1]
        pairs = width // 2
        high_l, high_e = below[:, 0:2 * pairs:2], equal[:, 0:2 * pairs:2]
        low_l, low_e = below[:, 1:2 * pairs:2], equal[:, 1:2 * pairs:2]
        if width == 2:  # the root: only L is needed
            return high_l[:, 0] + high_e[:, 0] * low_l[:, 0]
        products = mpc.np_multiply(mpc.np_concatenate((high_e, high_e), axis=1),
                                   mpc.np_concatenate((low_l, low_e), axis=1))
        combined_l, combined_e = high_l + products[:, :pairs], products[:, pairs:]
        if width % 2:  # the least significant digit has no partner: carried up as it is
            combined_l = mpc.np_concatenate((combined_l, below[:, -1:]), axis=1)
            combined_e = mpc.np_concatenate((combined_e, equal[:, -1:]), axis=1)
        below, equal = combined_l, combined_e
    return below[:, 0]


def less_than_public(bits: SecureArray, thresholds: Sequence[int]) -> SecureArray:
    """``[U_i < T_i]`` for secret ``(N, w)`` bits ``U_i`` (most significant first; the caller guarantees 0/1) and
    public ``T_i``, all rows at once: a secure ``(N,)`` array. Details: docs/noise.md."""
    shape = getattr(bits, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"bits must be a secure array of shape (comparisons, width), got shape {shape}")
    rows, width = shape
    tbits = threshold_bits(thresholds, _check_width(width, "width of bits"))
    if tbits.shape[0] != rows:
        raise ValueError(f"got {rows} rows of bits but {tbits.shape[0]} thresholds")
    equal = bits * (2 * tbits - 1) + (1 - tbits)  # e_k = u_k if t_k = 1 else 1 - u_k (local)
    return _tree_less_than(tbits - bits * tbits, equal)  # t_k (1 - u_k): local


def secret_bernoulli(sectype: Any, thresholds: Sequence[int], bits: int) -> SecureArray:
    """Secret independent ``Bernoulli(T_i / 2^bits)`` bits of type ``sectype`` from fresh joint random bits, one per
    threshold (at least one): a secure ``(N,)`` array. Details: docs/noise.md."""
    mpc = _mpc()
    _check_sectype(sectype)
    width = _check_width(bits)
    values = _check_thresholds(thresholds, width)
    if not values:
        raise ValueError("thresholds must not be empty")
    active = [i for i, t in enumerate(values) if t]
    if not active:
        return sectype.array(np.zeros(len(values), dtype=np.int64))
    trailing = min((values[i] & -values[i]).bit_length() - 1 for i in active)  # common trailing zero bits dropped
    narrow, reduced = width - trailing, [values[i] >> trailing for i in active]
    random = mpc.np_reshape(mpc.np_random_bits(sectype, len(active) * narrow), (len(active), narrow))
    coins = less_than_public(random, reduced)
    if len(active) == len(values):
        return coins
    placement = np.zeros((len(values), len(active)), dtype=np.int64)
    placement[active, np.arange(len(active))] = 1
    return placement @ coins


def _check_sectype(sectype: Any) -> None:
    mpc = _mpc()
    if not (isinstance(sectype, type) and issubclass(sectype, mpc.SecureInteger)):
        raise TypeError(f"sectype must be an MPyC secure integer type such as mpc.SecInt(32), got {sectype!r}")


def secret_discrete_laplace(sectype: Any, thresholds: Sequence[Sequence[int]], bits: int) -> SecureArray:
    """``G1 - G2`` per row of digit ``thresholds`` (at least one row, at most ``sectype.bit_length - 2`` digits so
    that ``|G1 - G2| < 2^J`` fits), ``G = sum_j 2^j [U_j < T_j]``, sampled on secret shares. Details: docs/noise.md."""
    mpc = _mpc()
    _check_sectype(sectype)
    width = _check_width(bits)
    rows = [tuple(_check_thresholds(row, width)) for row in thresholds]
    if not rows:
        raise ValueError("thresholds must hold at least one row (one noise value)")
    longest = max(len(row) for row in rows)
    if longest > sectype.bit_length - 2:
        raise ValueError(f"{longest} digits give noise up to 2**{longest}, which does not fit "
                         f"{sectype.bit_length}-bit secure integers")
    groups: dict[tuple[int, ...], list[int]] = {}
    for index, row in enumerate(rows):
        groups.setdefault(row, []).append(index)
    # one batch of comparisons: per group, shape (2, members, active digits), flattened
    flat: list[int] = []
    layout: list[tuple[tuple[int, ...], list[int], list[int], int]] = []
    for row, members in groups.items():
        digits = [j for j, t in enumerate(row) if t]
        layout.append((row, members, digits, len(flat)))
        flat.extend([row[j] for j in digits] * (2 * len(members)))
    coins = secret_bernoulli(sectype, flat, width) if flat else None
    pieces = []
    order: list[int] = []
    for row, members, digits, start in layout:
        order.extend(members)
        if not digits:
            pieces.append(sectype.array(np.zeros(len(members), dtype=np.int64)))
            continue
        size = 2 * len(members) * len(digits)
        assert coins is not None  # some row has digits
        block = mpc.np_reshape(coins[start:start + size], (2 * len(members), len(digits)))
        weights = np.array([1 << j for j in digits], dtype=object)
        geometric = block @ weights  # shape (2 * members,): G1 of every member, then G2
        pieces.append(geometric[:len(members)] - geometric[len(members):])
    noise = pieces[0] if len(pieces) == 1 else mpc.np_concatenate(tuple(pieces))
    if order == list(range(len(rows))):
        return noise
    return noise[np.argsort(order)]  # the inverse of the permutation order
