"""Distributed comparison functions (DCF): two-server function secret sharing of ``beta [x < alpha]``.
Boyle, Gilboa & Ishai 2015; the keys of Boyle et al. 2021.  Batched key generation, pointwise and
full-domain evaluation, shares adding up modulo ``2^64``.  Threat model: two non-colluding servers
(MPyC parties 0 and 1), each with one key per value; one key alone is pseudorandom (lambda = 128);
no integrity.  PRG, key layout and size: docs/fss.md."""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np
from numpy.typing import ArrayLike, NDArray

from secure.fss.keyfile import HEADER, read_records
from secure.fss.prg import TWEAKS, fixed_key_aes as _fixed_key_aes, prg as _prg

__all__ = ["DcfKeys", "gen", "evaluate", "full_domain_sum", "full_domain_shares", "key_bits",
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
#: serialization format version
FORMAT_VERSION = 1
MAGIC = b"DCFK"

_ZERO = np.uint64(0)
_ONE = np.uint64(1)
_TWEAKS = TWEAKS[:4]
_LEFT, _RIGHT, _VALUES, _CONTROLS = 0, 1, 2, 3
_ALL_BLOCKS = np.arange(4)


def key_bits(bits: int) -> int:
    """Information bits of one key at width ``bits``: ``bits (lambda + 64 + 2) + lambda + 64``."""
    return bits * (LAMBDA + 64 + 2) + LAMBDA + 64


def paper_key_bits(bits: int, n: int) -> int:
    """The ECDF paper's ``O(L (lambda + log n))`` with constant 1: ``bits (128 + ceil(log2 (n + 1)))``."""
    return bits * (LAMBDA + max(1, math.ceil(math.log2(n + 1))))


def _record_layout(bits: int) -> tuple[int, int, int, int, int]:
    """Byte offsets in one serialized key: seed cw, value cw, control bits, leaf word; and the record size."""
    seed_cw = 16
    value_cw = seed_cw + 16 * bits
    controls = value_cw + 8 * bits
    leaf = controls + (2 * bits + 7) // 8
    return seed_cw, value_cw, controls, leaf, leaf + 8


# the keys

@dataclass(frozen=True)
class DcfKeys:
    """A batch of DCF keys of one server (``server`` 0 or 1), all at width ``bits``. Details: docs/fss.md."""

    server: int
    bits: int
    seeds: U64
    seed_cw: U64
    value_cw: U64
    control_cw: NDArray[np.uint8]
    leaf_cw: U64

    def __post_init__(self) -> None:
        if self.server not in (0, 1) or isinstance(self.server, bool):
            raise ValueError(f"a DCF key belongs to server 0 or 1, not {self.server!r}")
        _check_bits(self.bits, MAX_BITS)
        count = self.seeds.shape[0] if self.seeds.ndim == 2 else -1
        expected = {"seeds": ((count, 2), np.uint64), "seed_cw": ((count, self.bits, 2), np.uint64),
                    "value_cw": ((count, self.bits), np.uint64), "control_cw": ((count, self.bits, 2), np.uint8),
                    "leaf_cw": ((count,), np.uint64)}
        for name, (shape, dtype) in expected.items():
            array = getattr(self, name)
            if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != dtype:
                raise ValueError(f"DcfKeys.{name} must be a {np.dtype(dtype).name} array of shape {shape}")
        if np.any(self.control_cw > 1):
            raise ValueError("DcfKeys.control_cw holds bits (0 or 1)")
        for name in expected:
            array = np.array(getattr(self, name), copy=True)
            array.setflags(write=False)
            object.__setattr__(self, name, array)

    @property
    def count(self) -> int:
        """Number of keys in the batch."""
        return int(self.seeds.shape[0])

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes_per_key(self) -> int:
        """Serialized bytes per key (:meth:`to_bytes` writes a 16-byte header plus this many per key)."""
        return _record_layout(self.bits)[-1]

    def __getitem__(self, index: int | slice | Sequence[int] | NDArray[Any]) -> DcfKeys:
        """The keys at ``index`` (an int keeps a batch of one)."""
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            position = int(index)
            if not -self.count <= position < self.count:
                raise IndexError(f"key {position} of a batch of {self.count}")
            index = slice(position % self.count, position % self.count + 1)
        return DcfKeys(self.server, self.bits, self.seeds[index], self.seed_cw[index], self.value_cw[index],
                       self.control_cw[index], self.leaf_cw[index])

    @staticmethod
    def concatenate(batches: Sequence[DcfKeys]) -> DcfKeys:
        """One batch of all keys of ``batches`` (in order); all of one server and one width.
        :raise ValueError: no batch, or batches of different servers or widths."""
        if not batches:
            raise ValueError("no DCF key batches to concatenate")
        first = batches[0]
        for batch in batches[1:]:
            if batch.server != first.server or batch.bits != first.bits:
                raise ValueError(f"cannot join DCF keys of server {batch.server} at {batch.bits} bits with keys of "
                                 f"server {first.server} at {first.bits} bits")
        return DcfKeys(first.server, first.bits, np.concatenate([b.seeds for b in batches]),
                       np.concatenate([b.seed_cw for b in batches]), np.concatenate([b.value_cw for b in batches]),
                       np.concatenate([b.control_cw for b in batches]), np.concatenate([b.leaf_cw for b in batches]))

    def to_bytes(self) -> bytes:
        """The versioned serialization (docs/fss.md: header, then one record per key)."""
        bits, count = self.bits, self.count
        seed_cw, value_cw, controls, leaf, size = _record_layout(bits)
        records = np.zeros((count, size), dtype=np.uint8)
        records[:, :seed_cw] = self.seeds.astype("<u8").view(np.uint8).reshape(count, 16)
        records[:, seed_cw:value_cw] = self.seed_cw.astype("<u8").view(np.uint8).reshape(count, 16 * bits)
        records[:, value_cw:controls] = self.value_cw.astype("<u8").view(np.uint8).reshape(count, 8 * bits)
        records[:, controls:leaf] = np.packbits(self.control_cw.reshape(count, 2 * bits), axis=1, bitorder="little")
        records[:, leaf:] = self.leaf_cw.astype("<u8").view(np.uint8).reshape(count, 8)
        return HEADER.pack(MAGIC, FORMAT_VERSION, self.server, bits, count) + records.tobytes()

    @staticmethod
    def from_bytes(data: bytes, *, server: int | None = None, bits: int | None = None) -> DcfKeys:
        """Read :meth:`to_bytes` output; with ``server``/``bits``, also require those values.
        :raise ValueError: truncated or overlong data, another magic or version, a server other than 0/1
            (or than ``server``), a width out of range (or other than ``bits``), nonzero padding bits."""
        stored_server, stored_bits, records = read_records(
            data, kind="DCF", magic=MAGIC, version=FORMAT_VERSION, max_bits=MAX_BITS,
            record_bytes=lambda width: _record_layout(width)[4], server=server, bits=bits)
        count = len(records)
        seed_cw, value_cw, controls, leaf, size = _record_layout(stored_bits)
        packed = np.ascontiguousarray(records[:, controls:leaf])
        control = np.unpackbits(packed, axis=1, bitorder="little")
        if np.any(control[:, 2 * stored_bits:]):
            raise ValueError("DCF keys: nonzero padding bits in the control corrections")

        def words(start: int, stop: int) -> U64:
            return np.ascontiguousarray(records[:, start:stop]).view("<u8").astype(np.uint64)

        return DcfKeys(stored_server, stored_bits, words(0, seed_cw).reshape(count, 2),
                       words(seed_cw, value_cw).reshape(count, stored_bits, 2),
                       words(value_cw, controls).reshape(count, stored_bits),
                       np.ascontiguousarray(control[:, :2 * stored_bits]).reshape(count, stored_bits, 2),
                       words(leaf, size).reshape(count))


# validation

def _check_bits(bits: object, limit: int) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)):
        raise ValueError(f"the DCF width must be an integer number of bits, not {bits!r}")
    if not 1 <= int(bits) <= limit:
        why = ("full-domain evaluation holds one key's whole tree, 2^bits * 120 bytes, in memory"
               if limit == MAX_FULL_DOMAIN_BITS else "domains wider than 2^32 points are not supported")
        raise ValueError(f"the DCF width must be between 1 and {limit} bits, not {int(bits)} ({why})")
    return int(bits)


def _integers(values: ArrayLike, what: str, low: int, high: int) -> NDArray[np.int64]:
    """``values`` as a 1-D int64 array, each in ``[low, high]``."""
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


# gen

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
    for level in range(bits):
        a = (path >> np.uint64(bits - 1 - level)) & _ONE   # 1: keep right, lose left
        right = a.astype(bool)
        g = _prg(seeds, _ALL_BLOCKS)                        # (2, count, 4, 2)
        s_left, s_right = g[:, :, _LEFT], g[:, :, _RIGHT]
        v_left, v_right = g[:, :, _VALUES, 0], g[:, :, _VALUES, 1]
        t_left, t_right = g[:, :, _CONTROLS, 0] & _ONE, (g[:, :, _CONTROLS, 0] >> _ONE) & _ONE
        s_keep = np.where(right[None, :, None], s_right, s_left)
        s_lose = np.where(right[None, :, None], s_left, s_right)
        v_keep = np.where(right, v_right, v_left)
        v_lose = np.where(right, v_left, v_right)
        t_keep = np.where(right, t_right, t_left)
        s_correction = s_lose[0] ^ s_lose[1]
        negate = controls[1].astype(bool)                  # the sign (-1)^{t_1}
        v_correction = v_lose[1] - v_lose[0] - v_alpha + np.where(right, betas, _ZERO)
        v_correction = np.where(negate, _ZERO - v_correction, v_correction)
        v_alpha = v_alpha - v_keep[1] + v_keep[0] + np.where(negate, _ZERO - v_correction, v_correction)
        t_correction_left = t_left[0] ^ t_left[1] ^ a ^ _ONE
        t_correction_right = t_right[0] ^ t_right[1] ^ a
        t_correction_keep = np.where(right, t_correction_right, t_correction_left)
        mask = _ZERO - controls                             # all ones where the control bit is 1
        seeds = s_keep ^ (mask[:, :, None] & s_correction[None])
        controls = t_keep ^ (controls & t_correction_keep[None])
        seed_cw[:, level] = s_correction
        value_cw[:, level] = v_correction
        control_cw[:, level, 0] = t_correction_left
        control_cw[:, level, 1] = t_correction_right
    final = seeds[1, :, 0] - seeds[0, :, 0] - v_alpha + leaf
    leaf_cw = np.where(controls[1].astype(bool), _ZERO - final, final)
    return tuple(DcfKeys(server, bits, roots[server], seed_cw, value_cw, control_cw, leaf_cw)  # type: ignore[return-value]
                 for server in (0, 1))


# evaluation

def _signed(values: U64, server: int) -> U64:
    """Server ``b``'s share: ``(-1)^b`` times the accumulated values."""
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
            right = x.astype(bool)
            blocks = np.stack([x.astype(np.intp), np.full(size, _VALUES), np.full(size, _CONTROLS)], axis=1)
            g = _prg(seeds, blocks[None])                  # (rows, size, 3, 2)
            mask = _ZERO - controls
            values = np.where(right, g[:, :, 1, 1], g[:, :, 1, 0])
            total += values + (mask & keys.value_cw[start:stop, level, None])
            seeds = g[:, :, 0] ^ (mask[:, :, None] & keys.seed_cw[start:stop, level, None, :])
            t_correction = np.where(right, keys.control_cw[start:stop, level, 1, None],
                                    keys.control_cw[start:stop, level, 0, None]).astype(np.uint64)
            controls = ((g[:, :, 2, 0] >> x) & _ONE) ^ (controls & t_correction)
        total += seeds[:, :, 0] + ((_ZERO - controls) & keys.leaf_cw[start:stop, None])
        out[start:stop] = _signed(total, keys.server)
    return out


def _bit_reversal(bits: int) -> NDArray[np.intp]:
    """``r[x]``: ``x`` with its ``bits`` bits in reverse order."""
    x = np.arange(1 << bits, dtype=np.intp)
    reversed_x = np.zeros_like(x)
    for i in range(bits):
        reversed_x |= ((x >> i) & 1) << (bits - 1 - i)
    return reversed_x


def _expand_chunk(keys: DcfKeys, start: int, stop: int) -> U64:
    """Unsigned accumulated values at every leaf of keys ``start:stop``: shape ``(stop - start, 2^bits)``,
    leaves in bit-reversed order (column ``r`` is ``x = _bit_reversal(bits)[r]``). Details: docs/fss.md."""
    rows = stop - start
    seeds = keys.seeds[start:stop, None, :]                  # (rows, nodes, 2)
    controls = np.full((rows, 1), keys.server, dtype=np.uint64)
    total = np.zeros((rows, 1), dtype=np.uint64)
    for level in range(keys.bits):
        nodes = seeds.shape[1]
        tweaked = seeds[:, None, :, :] ^ _TWEAKS[None, :, None, :]
        g = _fixed_key_aes(tweaked)                          # (rows, 4, nodes, 2)
        g ^= tweaked
        mask = _ZERO - controls                              # all ones where the control bit is 1
        g[:, :2] ^= (mask[:, :, None] & keys.seed_cw[start:stop, level, None, :])[:, None]
        seeds = g[:, :2].reshape(rows, 2 * nodes, 2)
        parent = total + (mask & keys.value_cw[start:stop, level, None])
        total = (g[:, _VALUES].transpose(0, 2, 1) + parent[:, None, :]).reshape(rows, 2 * nodes)
        word = g[:, _CONTROLS, :, 0]
        t_correction = keys.control_cw[start:stop, level].astype(np.uint64)   # (rows, [left, right])
        children = np.empty((rows, 2, nodes), dtype=np.uint64)
        np.bitwise_xor(word & _ONE, controls & t_correction[:, 0, None], out=children[:, 0])
        np.bitwise_xor((word >> _ONE) & _ONE, controls & t_correction[:, 1, None], out=children[:, 1])
        controls = children.reshape(rows, 2 * nodes)
    total += seeds[:, :, 0] + ((_ZERO - controls) & keys.leaf_cw[start:stop, None])
    return total


def _chunks(keys: DcfKeys) -> list[tuple[int, int]]:
    _check_bits(keys.bits, MAX_FULL_DOMAIN_BITS)
    chunk = max(1, FULL_DOMAIN_CHUNK_LEAVES >> keys.bits)
    return [(start, min(keys.count, start + chunk)) for start in range(0, keys.count, chunk)]


def full_domain_shares(keys: DcfKeys) -> U64:
    """One server's shares of every key at every point: shape ``(keys.count, 2^bits)``. Details: docs/fss.md.
    :raise ValueError: ``bits`` above :data:`MAX_FULL_DOMAIN_BITS`."""
    out = np.empty((keys.count, 1 << keys.bits), dtype=np.uint64)
    order = _bit_reversal(keys.bits)
    for start, stop in _chunks(keys):
        out[start:stop] = _signed(_expand_chunk(keys, start, stop), keys.server)[:, order]
    return out


def full_domain_sum(keys: DcfKeys) -> U64:
    """One server's share of ``sum_i f_{alpha_i}(x)`` at every ``x`` in ``[0, 2^bits)``: shape ``(2^bits,)``.
    Details: docs/fss.md.
    :raise ValueError: ``bits`` above :data:`MAX_FULL_DOMAIN_BITS`."""
    total = np.zeros(1 << keys.bits, dtype=np.uint64)
    for start, stop in _chunks(keys):
        total += _expand_chunk(keys, start, stop).sum(axis=0, dtype=np.uint64)
    return _signed(total[_bit_reversal(keys.bits)], keys.server)
