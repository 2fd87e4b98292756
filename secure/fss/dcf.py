"""Distributed comparison functions (DCF): two-server function secret sharing of ``beta [x < alpha]``.
Boyle, Gilboa & Ishai 2015; the keys of Boyle et al. 2021.  Batched key generation, pointwise and
full-domain evaluation, shares adding up modulo ``2^64``.  Threat model: two non-colluding servers
(MPyC parties 0 and 1), each with one key per value; one key alone is pseudorandom (lambda = 128);
no integrity.  PRG, key layout and size: docs/fss.md."""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import ClassVar, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from secure.fss.keyfile import FORMAT_VERSION, KeyBatch, Layout
from secure.fss.prg import bit_reversal, expand, prg as _prg

__all__ = ["DcfKeys", "gen", "evaluate", "full_domain_sum", "key_bits",
           "paper_key_bits", "LAMBDA", "MAX_BITS", "MAX_FULL_DOMAIN_BITS", "FORMAT_VERSION"]

U64 = NDArray[np.uint64]

#: security parameter: AES-128 and 128-bit seeds
LAMBDA = 128
#: widest domain of gen/evaluate (x and alpha are handled as int64; grids are far smaller)
MAX_BITS = 32
#: widest domain of full-domain evaluation: one key's tree needs 2^bits * 120 bytes at once
MAX_FULL_DOMAIN_BITS = 22
#: leaves expanded at once by the full-domain evaluation (whole keys; at least one key)
FULL_DOMAIN_CHUNK_LEAVES = 1 << 14
#: (key, point) pairs walked at once by evaluate
EVALUATE_CHUNK_PAIRS = 1 << 15

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_VALUES, _CONTROLS = 2, 3                           # blocks 0 and 1: the left and the right child's seed
_SIDES = np.arange(2, dtype=np.uint64)


def key_bits(bits: int) -> int:
    """Information bits of one key at width ``bits``: ``bits (lambda + 64 + 2) + lambda + 64``."""
    return bits * (LAMBDA + 64 + 2) + LAMBDA + 64


def paper_key_bits(bits: int, n: int) -> int:
    """The ECDF paper's ``O(L (lambda + log n))`` with constant 1: ``bits (128 + ceil(log2 (n + 1)))``."""
    return bits * (LAMBDA + max(1, math.ceil(math.log2(n + 1))))


@dataclass(frozen=True)
class DcfKeys(KeyBatch):
    """A batch of DCF keys of one server (``server`` 0 or 1), all at width ``bits``. Details: docs/fss.md."""

    KIND: ClassVar[str] = "DCF"
    MAGIC: ClassVar[bytes] = b"DCFK"
    MAX_BITS: ClassVar[int] = MAX_BITS

    seed_cw: U64
    value_cw: U64
    control_cw: NDArray[np.uint8]
    leaf_cw: U64

    @classmethod
    def layout(cls, bits: int) -> Layout:
        bits = _check_bits(bits, MAX_BITS)
        return {"seeds": ((2,), np.uint64), "seed_cw": ((bits, 2), np.uint64), "value_cw": ((bits,), np.uint64),
                "control_cw": ((bits, 2), np.uint8), "leaf_cw": ((), np.uint64)}

    def _check_values(self) -> None:
        if np.any(self.control_cw > 1):
            raise ValueError("DcfKeys.control_cw holds bits (0 or 1)")


def _check_bits(bits: object, limit: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ValueError(f"the DCF width must be an integer number of bits, not {bits!r}")
    if not 1 <= int(bits) <= limit:
        why = ("full-domain evaluation holds one key's whole tree, 2^bits * 120 bytes, in memory"
               if limit == MAX_FULL_DOMAIN_BITS else "domains wider than 2^32 points are not supported")
        raise ValueError(f"the DCF width must be between 1 and {limit} bits, not {int(bits)} ({why})")
    return int(bits)


def _integers(values: ArrayLike, what: str, low: int, high: int) -> NDArray[np.int64]:
    array = np.asarray(values)
    if array.ndim > 1:
        raise ValueError(f"{what} must be a 1-D array of integers")
    array = array.reshape(-1)
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"{what} must be integers, not {array.dtype}")
    if array.size and (int(array.min()) < low or int(array.max()) > high):
        raise ValueError(f"{what} must lie in [{low}, {high}]")
    return array.astype(np.int64)


def _betas(beta: Union[int, ArrayLike], count: int) -> U64:
    """``beta`` (an int, taken modulo 2^64, or one integer per key) as ``count`` uint64 words."""
    if isinstance(beta, (int, np.integer)) and not isinstance(beta, bool):
        return np.full(count, int(beta) % (1 << 64), dtype=np.uint64)
    array = np.asarray(beta)
    if array.shape != (count,) or (count and array.dtype.kind not in "iu"):
        raise ValueError(f"beta must be an integer or one integer per alpha ({count})")
    return array.astype(np.uint64)  # two's complement: -1 becomes 2^64 - 1


def gen(alphas: ArrayLike, bits: int, *, beta: Union[int, ArrayLike] = 1) -> tuple[DcfKeys, DcfKeys]:
    """Keys of ``f_alpha(x) = beta [x < alpha]`` (mod 2^64) on ``[0, 2^bits)`` for every alpha (root seeds from
    ``os.urandom``; one pass per level for all keys).
    ``alphas`` in ``[0, 2^bits]`` (``2^bits``: true everywhere), ``bits`` 1 to :data:`MAX_BITS`, ``beta`` an integer
    (mod 2^64: ``-1`` is ``2^64 - 1``) or one per alpha; returns both servers' batches, key ``i`` for ``alphas[i]``.
    :raise ValueError: a width or an alpha out of range, a malformed beta."""
    bits = _check_bits(bits, MAX_BITS)
    top = 1 << bits
    alpha = _integers(alphas, "alphas", 0, top)
    count = alpha.size
    betas = _betas(beta, count)
    path = np.minimum(alpha, top - 1).astype(np.uint64)
    leaf = np.where(alpha == top, betas, _ZERO)
    roots = np.frombuffer(os.urandom(32 * count), dtype="<u8").astype(np.uint64).reshape(2, count, 2)
    seeds = roots.copy()                                   # (server, key, word)
    controls = np.zeros((2, count), dtype=np.uint64)
    controls[1] = 1
    v_alpha = np.zeros(count, dtype=np.uint64)
    seed_cw = np.empty((count, bits, 2), dtype=np.uint64)
    value_cw = np.empty((count, bits), dtype=np.uint64)
    control_cw = np.empty((count, bits, 2), dtype=np.uint8)
    keys = np.arange(count)
    for level in range(bits):
        a = (path >> np.uint64(bits - 1 - level)) & _ONE   # 1: keep right, lose left
        keep, lose = a.astype(np.intp), (a ^ _ONE).astype(np.intp)
        g = _prg(seeds, np.arange(4))                       # (2, count, 4, 2)
        v_left, v_right = g[:, :, _VALUES, 0], g[:, :, _VALUES, 1]
        v_keep, v_lose = np.where(keep, v_right, v_left), np.where(keep, v_left, v_right)
        word = g[:, :, _CONTROLS, 0]                        # bits 0 and 1: the children's control bits
        s_correction = g[0, keys, lose] ^ g[1, keys, lose]
        negate = controls[1].astype(bool)                  # the sign (-1)^{t_1}
        v_correction = v_lose[1] - v_lose[0] - v_alpha + np.where(keep, betas, _ZERO)
        v_correction = np.where(negate, _ZERO - v_correction, v_correction)
        v_alpha = v_alpha - v_keep[1] + v_keep[0] + np.where(negate, _ZERO - v_correction, v_correction)
        t_correction = (((word[0] ^ word[1])[:, None] >> _SIDES) & _ONE) ^ np.stack([a ^ _ONE, a], axis=1)
        mask = _ZERO - controls                             # all ones where the control bit is 1
        seeds = g[:, keys, keep] ^ (mask[:, :, None] & s_correction[None])
        controls = ((word >> a) & _ONE) ^ (controls & t_correction[keys, keep])
        seed_cw[:, level], value_cw[:, level], control_cw[:, level] = s_correction, v_correction, t_correction
    final = seeds[1, :, 0] - seeds[0, :, 0] - v_alpha + leaf
    leaf_cw = np.where(controls[1].astype(bool), _ZERO - final, final)
    return (DcfKeys(0, bits, roots[0], seed_cw, value_cw, control_cw, leaf_cw),
            DcfKeys(1, bits, roots[1], seed_cw, value_cw, control_cw, leaf_cw))


def _signed(values: U64, server: int) -> U64:
    return _ZERO - values if server == 1 else values


def evaluate(keys: DcfKeys, xs: ArrayLike) -> U64:
    """One server's shares ``y_b(x)`` for every key and every ``x`` in ``xs``: shape ``(keys.count, len(xs))``,
    in chunks of about :data:`EVALUATE_CHUNK_PAIRS` (key, point) pairs.
    :raise ValueError: an ``x`` outside ``[0, 2^bits)``."""
    bits = keys.bits
    points = _integers(xs, "xs", 0, (1 << bits) - 1).astype(np.uint64)
    count, size = keys.count, points.size
    out = np.empty((count, size), dtype=np.uint64)
    if count == 0 or size == 0:
        return out
    chunk = max(1, EVALUATE_CHUNK_PAIRS // size)
    for start in range(0, count, chunk):
        stop = min(count, start + chunk)
        rows = stop - start
        seeds = np.broadcast_to(keys.seeds[start:stop, None, :], (rows, size, 2)).copy()
        controls = np.full((rows, size), keys.server, dtype=np.uint64)
        total = np.zeros((rows, size), dtype=np.uint64)
        for level in range(bits):
            x = (points >> np.uint64(bits - 1 - level)) & _ONE
            side = x.astype(np.intp)
            blocks = np.stack([side, np.full(size, _VALUES), np.full(size, _CONTROLS)], axis=1)
            g = _prg(seeds, blocks[None])                  # (rows, size, 3, 2)
            mask = _ZERO - controls
            values = np.where(side, g[:, :, 1, 1], g[:, :, 1, 0])
            total += values + (mask & keys.value_cw[start:stop, level, None])
            seeds = g[:, :, 0] ^ (mask[:, :, None] & keys.seed_cw[start:stop, level, None, :])
            t_correction = keys.control_cw[start:stop, level][:, side].astype(np.uint64)   # (rows, size)
            controls = ((g[:, :, 2, 0] >> x) & _ONE) ^ (controls & t_correction)
        total += seeds[:, :, 0] + ((_ZERO - controls) & keys.leaf_cw[start:stop, None])
        out[start:stop] = _signed(total, keys.server)
    return out


def _expand_chunk(keys: DcfKeys, start: int, stop: int) -> U64:
    """Unsigned accumulated values at every leaf of keys ``start:stop``: shape ``(stop - start, 2^bits)``,
    leaves in bit-reversed order (column ``r`` is ``x = bit_reversal(bits)[r]``). Details: docs/fss.md."""
    rows = stop - start
    seeds = keys.seeds[start:stop, None, :]                  # (rows, nodes, 2)
    controls = np.full((rows, 1), keys.server, dtype=np.uint64)
    total = np.zeros((rows, 1), dtype=np.uint64)
    for level in range(keys.bits):
        nodes = seeds.shape[1]
        g = expand(seeds, 0, 4)                              # (rows, 4, nodes, 2)
        mask = _ZERO - controls                              # all ones where the control bit is 1
        g[:, :2] ^= (mask[:, :, None] & keys.seed_cw[start:stop, level, None, :])[:, None]
        seeds = g[:, :2].reshape(rows, 2 * nodes, 2)
        parent = total + (mask & keys.value_cw[start:stop, level, None])
        total = (g[:, _VALUES].transpose(0, 2, 1) + parent[:, None, :]).reshape(rows, 2 * nodes)
        children = (g[:, _CONTROLS, None, :, 0] >> _SIDES[:, None]) & _ONE                # (rows, [left, right], nodes)
        children ^= controls[:, None, :] & keys.control_cw[start:stop, level, :, None]
        controls = children.reshape(rows, 2 * nodes)
    total += seeds[:, :, 0] + ((_ZERO - controls) & keys.leaf_cw[start:stop, None])
    return total


def full_domain_sum(keys: DcfKeys) -> U64:
    """One server's share of ``sum_i f_{alpha_i}(x)`` at every ``x`` in ``[0, 2^bits)``: shape ``(2^bits,)``.
    Details: docs/fss.md.
    :raise ValueError: ``bits`` above :data:`MAX_FULL_DOMAIN_BITS`."""
    _check_bits(keys.bits, MAX_FULL_DOMAIN_BITS)
    total = np.zeros(1 << keys.bits, dtype=np.uint64)
    chunk = max(1, FULL_DOMAIN_CHUNK_LEAVES >> keys.bits)
    for start in range(0, keys.count, chunk):
        total += _expand_chunk(keys, start, min(keys.count, start + chunk)).sum(axis=0, dtype=np.uint64)
    return _signed(total[bit_reversal(keys.bits)], keys.server)
