"""Distributed point functions (DPF) over ``Z_q``, ``q = 2^61 - 1``, and the servers' one-hot check: keys of
``f(x) = beta [x == alpha]`` on ``[0, 2^bits)`` with ``y0(x) + y1(x) = f(x) mod q`` (Boyle, Gilboa & Ishai, CCS 2016,
Fig. 1, early termination at ``nu = min(bits, 3)``, §3.2.1), evaluated on the whole domain by servers 0 and 1.
Threat model: two non-colluding semi-honest servers; one key alone is pseudorandom (lambda = 127); owners may be
malicious, which :func:`check_one_hot` catches.  Construction, key layout, check and costs: docs/fss.md#dpf."""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from secure.fss.keyfile import KeyBatch, Layout
from secure.fss.prg import bit_reversal, expand, prg, seed_stream

__all__ = ["MODULUS", "MAX_BITS", "DpfKeys", "Sketch", "SquareShares", "key_bytes", "gen", "full_domain_sum",
           "evaluate", "deal_squares", "masked_z", "check_share", "one_hot_ok", "check_one_hot", "joint_seed",
           "header", "well_formed"]

U64 = NDArray[np.uint64]
#: the output group Z_q (a Mersenne prime)
MODULUS = 2**61 - 1
#: widest domain: the sketch's float64 limb products stay exact (``2^(32 + bits) <= 2^53``)
MAX_BITS = 21
#: tree levels replaced by one leaf block of 2^NU values (early termination)
NU = 3
#: leaves expanded at once (whole keys; at least one key): about 64 bytes each of working memory
CHUNK_LEAVES = 1 << 17
_Q = np.uint64(MODULUS)
_ONE = np.uint64(1)
_LEAF_TWEAKS = 4                     # G_{4..11}(s): the 2^nu leaf values of a node


def _reduce(v: U64) -> U64:
    """``v mod q`` for uint64 ``v`` (``2^61 = 1 mod q``)."""
    v = (v & _Q) + (v >> np.uint64(61))
    return np.where(v >= _Q, v - _Q, v)


def _rot(x: U64, k: Any) -> U64:
    """``x 2^k mod q`` for ``x < 2^61``, ``0 <= k < 61``: a rotation of 61 bits."""
    k = np.asarray(k, dtype=np.uint64)
    return _reduce(((x << k) & _Q) | (x >> (np.uint64(61) - k)))


def _mul(a: U64, b: U64) -> U64:
    """``a b mod q`` for ``a, b < q``, with 32-bit halves (``2^64 = 8 mod q``)."""
    m32 = np.uint64(0xFFFFFFFF)
    a1, a0, b1, b0 = a >> np.uint64(32), a & m32, b >> np.uint64(32), b & m32
    return _reduce(_reduce(a0 * b0) + ((a1 * b1) << np.uint64(3)) + _rot(_reduce(a1 * b0 + a0 * b1), 32))


def _add(*terms: U64) -> U64:
    return _reduce(np.sum(terms, axis=0, dtype=np.uint64))  # up to 8 terms below q


def _neg(a: U64) -> U64:
    return _reduce(_Q - a)


def _field(words: U64) -> U64:
    """A value of ``Z_q`` from each 128-bit block (``..., 2``): ``(lo mod 2^61) + (hi mod 2^61)``, below 2^62.
    Each half is ``2^-61``-close to uniform on ``Z_q``, so the sum is ``2^-121``-close."""
    return (words[..., 0] & _Q) + (words[..., 1] & _Q)


def _nu(bits: int) -> int:
    return min(bits, NU)


def _check_bits(bits: object) -> int:
    if isinstance(bits, bool) or not isinstance(bits, (int, np.integer)) or not 1 <= int(bits) <= MAX_BITS:
        raise ValueError(f"the DPF width must be an integer between 1 and {MAX_BITS} bits, got {bits!r}")
    return int(bits)


@dataclass(frozen=True)
class DpfKeys(KeyBatch):
    """A batch of DPF keys of one server (``server`` 0 or 1), all at width ``bits``: the arrays of :meth:`layout`
    (``d = bits - nu`` levels), leaf words below ``q``.  :raise ValueError: anything else (keys from owners)."""

    KIND: ClassVar[str] = "DPF"
    MAGIC: ClassVar[bytes] = b"DPFK"
    MAX_BITS: ClassVar[int] = MAX_BITS
    MALFORMED: ClassVar[str] = "nonzero padding bits in the control corrections or a leaf word not below q"

    seed_cw: U64
    control_cw: NDArray[np.uint8]
    leaf_cw: U64

    @classmethod
    def layout(cls, bits: int) -> Layout:
        bits = _check_bits(bits)
        depth = bits - _nu(bits)
        return {"seeds": ((2,), np.uint64), "seed_cw": ((depth, 2), np.uint64), "control_cw": ((depth, 2), np.uint8),
                "leaf_cw": ((1 << _nu(bits),), np.uint64)}

    def _check_values(self) -> None:
        if np.any(self.control_cw > 1) or np.any(self.leaf_cw >= _Q):
            raise ValueError("DPF keys: control corrections must be bits and leaf corrections below 2^61 - 1")

    @classmethod
    def well_formed(cls, bits: int, records: NDArray[np.uint8]) -> NDArray[np.bool_]:
        """Which keys of ``records`` have zero padding bits and leaf words below q, one verdict per key."""
        leaf = np.ascontiguousarray(records[:, cls._spans(bits)["leaf_cw"][2]]).view("<u8")
        return super().well_formed(bits, records) & (leaf < _Q).all(axis=1)


#: serialized bytes of one key: root seed, ``d = bits - nu`` levels of ``s_CW`` (16) and ``t_CW^L, t_CW^R``
#: (2 bits), and ``2^nu`` leaf words: ``16 + 16 d + ceil(2 d / 8) + 8 * 2^nu``
key_bytes = DpfKeys.record_bytes
header = DpfKeys.header
well_formed = DpfKeys.well_formed


def _split(g: U64) -> tuple[U64, U64]:
    """Control bits (low bit of word 0) and seeds with that bit cleared, of PRG blocks ``g (..., 2)``."""
    t = g[..., 0] & _ONE
    g[..., 0] ^= t
    return t, g


def gen(alphas: ArrayLike, *, bits: int, betas: ArrayLike | None = None) -> tuple[DpfKeys, DpfKeys]:
    """Both servers' keys of ``beta_i [x == alpha_i]`` on ``[0, 2^bits)`` for every ``alpha_i`` (``betas``: one
    integer per key, taken mod q; default 1); one pass per level for all keys; root seeds from ``os.urandom``.
    :raise ValueError: a width, an alpha or a beta that is not as above."""
    bits = _check_bits(bits)
    alpha = np.asarray(alphas)
    if alpha.ndim != 1 or (alpha.size and (alpha.dtype.kind not in "iu" or alpha.min() < 0 or alpha.max() >> bits)):
        raise ValueError(f"alphas must be a 1-D array of integers in [0, 2^{bits})")
    n, nu = alpha.size, _nu(bits)
    depth, alpha = bits - nu, alpha.astype(np.uint64)
    beta = np.ones(n, dtype=object) if betas is None else np.asarray(betas)
    if beta.shape != (n,) or (n and beta.dtype.kind not in "iuO"):
        raise ValueError(f"betas must be one integer per alpha ({n})")
    beta = (beta.astype(object) % MODULUS).astype(np.uint64)
    roots = np.frombuffer(os.urandom(32 * n), dtype="<u8").astype(np.uint64).reshape(2, n, 2)
    seeds, t = roots.copy(), np.zeros((2, n), dtype=np.uint64)
    t[1] = 1
    seed_cw = np.empty((n, depth, 2), dtype=np.uint64)
    control_cw = np.empty((n, depth, 2), dtype=np.uint8)
    keys = np.arange(n)
    for level in range(depth):
        bit = (alpha >> np.uint64(bits - 1 - level)) & _ONE                    # 1: keep right, lose left
        a = bit.astype(np.intp)
        tt, s = _split(prg(seeds, np.arange(2)))                                # (2, n, [L, R]), (2, n, 2, 2)
        seed_cw[:, level] = s[0, keys, 1 - a] ^ s[1, keys, 1 - a]
        control_cw[:, level, 0] = tt[0, :, 0] ^ tt[1, :, 0] ^ bit ^ _ONE
        control_cw[:, level, 1] = tt[0, :, 1] ^ tt[1, :, 1] ^ bit
        keep_cw = control_cw[keys, level, a].astype(np.uint64)
        seeds = s[:, keys, a] ^ ((np.uint64(0) - t)[:, :, None] & seed_cw[None, :, level])
        t = tt[:, keys, a] ^ (t & keep_cw)
    values = _reduce(_field(prg(seeds, _LEAF_TWEAKS + np.arange(1 << nu))))      # (2, n, 2^nu)
    target = np.zeros((n, 1 << nu), dtype=np.uint64)
    target[keys, (alpha & np.uint64((1 << nu) - 1)).astype(np.intp)] = beta
    leaf = _add(target, _neg(values[0]), values[1])
    leaf_cw = np.where(t[1].astype(bool)[:, None], _neg(leaf), leaf)
    return (DpfKeys(0, bits, roots[0], seed_cw, control_cw, leaf_cw),
            DpfKeys(1, bits, roots[1], seed_cw, control_cw, leaf_cw))


def _leaves(keys: DpfKeys, start: int, stop: int) -> U64:
    """``u = (-1)^b y_b(x) mod q`` (below 2^63, not reduced) of keys ``start:stop`` at every leaf, shape
    ``(rows, 2^bits)`` in layout order (:func:`_layout`): all nodes of a level in one AES call."""
    rows, nu = stop - start, _nu(keys.bits)
    seeds, t = keys.seeds[start:stop, None, :], np.full((rows, 1), keys.server, dtype=np.uint64)
    for level in range(keys.bits - nu):
        child_t, g = _split(expand(seeds, 0, 2))                           # (rows, [L, R], nodes(, 2))
        mask = (np.uint64(0) - t)[:, None, :]
        for word in (0, 1):
            g[..., word] ^= mask & keys.seed_cw[start:stop, level, None, None, word]
        child_t ^= t[:, None, :] & keys.control_cw[start:stop, level, :, None]
        seeds, t = g.reshape(rows, -1, 2), child_t.reshape(rows, -1)
    u = _field(expand(seeds, _LEAF_TWEAKS, 1 << nu))                       # (rows, 2^nu, nodes)
    u += (np.uint64(0) - t)[:, None, :] & keys.leaf_cw[start:stop, :, None]
    return u.reshape(rows, -1)


def _layout(bits: int) -> NDArray[np.intp]:
    """``x`` at each column of :func:`_leaves`: column ``j 2^d + r`` is leaf ``j`` of the node whose path is ``r``
    read backwards (:func:`secure.fss.prg.bit_reversal`)."""
    nu = _nu(bits)
    return ((bit_reversal(bits - nu)[None, :] << nu) | np.arange(1 << nu)[:, None]).reshape(-1)


def full_domain_sum(keys: DpfKeys, each: Callable[[U64], None] | None = None) -> U64:
    """One server's share of ``sum_i beta_i [x == alpha_i]`` (mod q) at every ``x`` in ``[0, 2^bits)``, calling
    ``each`` with the leaves ``u`` of every chunk of about :data:`CHUNK_LEAVES` leaves (whole keys): the sums of the
    32-bit halves of ``u``, reduced once at the end."""
    halves = np.zeros((1 << keys.bits, 2), dtype=np.uint64)
    step = max(1, CHUNK_LEAVES >> keys.bits)
    for start in range(0, len(keys), step):
        u = _leaves(keys, start, min(len(keys), start + step))
        halves += u.view(np.uint32).reshape(len(u), -1, 2).sum(axis=0, dtype=np.uint64)
        if each is not None:
            each(u)
    total = np.empty(1 << keys.bits, dtype=np.uint64)
    total[_layout(keys.bits)] = _add(_reduce(halves[:, 0]), _rot(_reduce(halves[:, 1]), 32))
    return _neg(total) if keys.server else total


@dataclass(frozen=True)
class Sketch:
    """One server's shares (mod q), per key, of ``sigma = sum_x y(x)``, ``z = sum_x r_x y(x)``, ``w = sum_x r_x^2
    y(x)`` for the servers' joint random ``r`` in ``Z_q^(2^bits)``."""

    sigma: U64
    z: U64
    w: U64


def _combine(p: U64) -> U64:
    """``sum_{a, b} 2^(16 (a + b)) p[a, :, b] mod q`` for ``p (4, rows, limbs)`` below 2^53."""
    shifts = (16 * (np.arange(4)[:, None, None] + np.arange(p.shape[2])[None, None, :])) % 61
    return _reduce(_reduce(_rot(p, shifts).sum(axis=2)).sum(axis=0))


def evaluate(keys: DpfKeys, *, seed: bytes) -> tuple[U64, Sketch]:
    """:func:`full_domain_sum` and, in the same pass, the server's :class:`Sketch` of every key, with
    ``r_x`` from the 32-byte joint ``seed`` (AES-256-CTR, :func:`secure.fss.prg.seed_stream`).  The dot products
    mod q are exact float64 products of 16-bit limbs (sums below ``2^(32 + bits) <= 2^53``)."""
    size, layout = 1 << keys.bits, _layout(keys.bits)
    r = _reduce(_field(seed_stream(seed, size)))
    weights = np.ones((size, 9))
    for b in range(4):
        shift = np.uint64(16 * b)
        weights[:, b], weights[:, 4 + b] = ((r >> shift) & 0xFFFF)[layout], ((_mul(r, r) >> shift) & 0xFFFF)[layout]
    parts = []

    def sketch(u: U64) -> None:
        rows = len(u)
        limbs = np.ascontiguousarray(u.view(np.uint16).reshape(rows, size, 4).transpose(2, 0, 1), dtype=np.float64)
        p = (limbs.reshape(4 * rows, size) @ weights).reshape(4, rows, 9).astype(np.uint64)
        parts.append([_combine(p[:, :, 8:]), _combine(p[:, :, :4]), _combine(p[:, :, 4:8])])

    sums = full_domain_sum(keys, sketch)
    columns = [np.concatenate(column) for column in zip(*parts)] or [np.zeros(0, dtype=np.uint64)] * 3
    return sums, Sketch(*(_neg(c) if keys.server else c for c in columns))


@dataclass(frozen=True)
class SquareShares:
    """One server's shares of Beaver squares, one per key: ``a`` (uniform) and ``c = a^2`` (mod q)."""

    a: U64
    c: U64


def _betas(betas: ArrayLike, count: int) -> U64:
    array = np.broadcast_to(np.asarray(betas), (count,))
    return (array.astype(object) % MODULUS).astype(np.uint64)


def deal_squares(count: int) -> tuple[SquareShares, SquareShares]:
    """Server 2's deal: ``count`` uniform ``a`` with ``c = a^2``, split into shares for servers 0 and 1."""
    blocks = np.frombuffer(os.urandom(48 * count), dtype="<u8").astype(np.uint64).reshape(3, count, 2)
    a, a0, c0 = _reduce(_field(blocks))                 # uniform on Z_q
    return SquareShares(a0, c0), SquareShares(_add(a, _neg(a0)), _add(_mul(a, a), _neg(c0)))


def masked_z(sketch: Sketch, square: SquareShares) -> U64:
    """``e_s = z_s - a_s``: what server ``s`` sends to the other server."""
    return _add(sketch.z, _neg(square.a))


def check_share(sketch: Sketch, square: SquareShares, e: tuple[U64, U64], *, server: int,
                betas: ArrayLike = 1) -> U64:
    """Server ``s``'s share ``d_s`` of ``z^2 - beta w`` from ``e = e_0 + e_1 = z - a``:
    ``z^2 = e^2 + 2 e a + c``, so ``d_s = c_s + 2 e a_s + [s = 0] e^2 - beta w_s``."""
    opened = _add(*e)
    square_z = _add(square.c, _rot(_mul(opened, square.a), 1), _mul(opened, opened) if server == 0 else 0 * opened)
    return _add(square_z, _neg(_mul(_betas(betas, opened.size), sketch.w)))


def one_hot_ok(sigmas: tuple[U64, U64], ds: tuple[U64, U64], *, betas: ArrayLike = 1) -> NDArray[np.bool_]:
    """The verdict per key: ``sigma_0 + sigma_1 = beta`` and ``d_0 + d_1 = 0`` (mod q).  The protocol, why an honest
    key shows nothing else and why any other passes with probability at most ``2 / q``: docs/fss.md#dpf."""
    return (_add(*sigmas) == _betas(betas, sigmas[0].size)) & (_add(*ds) == 0)


async def joint_seed() -> bytes | None:
    """The servers' 32-byte seed of ``r``: SHA-256 of 32 ``os.urandom`` bytes from each of parties 0 and 1 (None at
    other parties).  Draw it after the uploads are closed: an owner who knew ``r`` could pass the check."""
    import hashlib

    from mpyc.runtime import mpc

    parts = await mpc.transfer(os.urandom(32) if mpc.pid < 2 else None, senders=[0, 1], receivers=[0, 1])
    return hashlib.sha256(b"".join(parts)).digest() if mpc.pid < 2 else None


async def check_one_hot(sketch: Sketch | None, *, count: int, betas: ArrayLike = 1) -> NDArray[np.bool_]:
    """Run :func:`one_hot_ok`'s protocol at every party of an MPyC run with ``m >= 3`` (parties 0 and 1 pass their
    :class:`Sketch` of ``count`` keys, the others None); every party gets the per-key verdict."""
    from mpyc.runtime import mpc

    pid, parties = mpc.pid, len(mpc.parties)
    if parties < 3:
        raise ValueError(f"the one-hot check needs at least 3 parties (party 2 deals), got {parties}")
    if pid < 2 and (sketch is None or sketch.z.shape != (count,)):
        raise ValueError(f"party {pid}: the one-hot check needs this server's sketch of {count} keys")
    dealt = deal_squares(count) if pid == 2 else (None, None)
    mine = [await mpc.transfer(dealt[s], senders=[2], receivers=[s]) for s in (0, 1)]
    servers = [0, 1]
    if pid < 2:
        assert sketch is not None
        square = mine[pid][0]
        e = await mpc.transfer(masked_z(sketch, square), senders=servers, receivers=servers)
        mine_d: Any = (sketch.sigma, check_share(sketch, square, (e[0], e[1]), server=pid, betas=betas))
    else:
        await mpc.transfer(None, senders=servers, receivers=servers)
        mine_d = None
    opened = await mpc.transfer(mine_d, senders=servers, receivers=list(range(parties)))
    return one_hot_ok((opened[0][0], opened[1][0]), (opened[0][1], opened[1][1]), betas=betas)
