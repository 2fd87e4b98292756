"""The PRGs of :mod:`secure.fss`: fixed-key AES-128 in the Matyas-Meyer-Oseas style for GGM trees
(``G_j(s) = AES_k(s xor c_j) xor s xor c_j``, public ``k`` and tweaks ``c_j``), and an AES-256-CTR stream
from a secret 32-byte seed.  Threat model and argument (Guo, Katz, Wang & Yu, IEEE S&P 2020): docs/fss.md#prg."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from numpy.typing import NDArray

__all__ = ["TWEAKS", "bit_reversal", "expand", "fixed_key_aes", "prg", "seed_stream"]

U64 = NDArray[np.uint64]

_PRG_KEY = hashlib.sha256(b"secure.fss.dcf: fixed AES-128 key of the PRG, v1").digest()[:16]
#: public 128-bit tweaks ``c_j`` (two little-endian words each): 0-3 the DCF's, 0-1 and 4-11 the DPF's
TWEAKS: U64 = np.frombuffer(b"".join(hashlib.sha256(f"secure.fss.dcf: PRG tweak {j}, v1".encode()).digest()[:16]
                                     for j in range(12)), dtype="<u8").reshape(12, 2).astype(np.uint64)
_ENCRYPTOR = Cipher(algorithms.AES(_PRG_KEY), modes.ECB()).encryptor()


def fixed_key_aes(blocks: U64) -> U64:
    """``AES_k`` of every 128-bit block of ``blocks`` (shape ``(..., 2)``, two little-endian words per block)
    in one AES-ECB call; a new writable array of the same shape."""
    data = np.ascontiguousarray(blocks, dtype=np.uint64)
    out = np.empty(data.nbytes + 16, dtype=np.uint8)
    _ENCRYPTOR.update_into(data.reshape(-1).data.cast("B"), out.data)  # whole blocks: all of them at once
    return out[:data.nbytes].view(np.uint64).reshape(data.shape)


def prg(seeds: U64, blocks: NDArray[Any]) -> U64:
    """``G_j(s)`` for each seed (shape ``(..., 2)``) and each tweak index ``j`` of ``blocks`` (shape ``(nb,)`` or
    broadcastable to ``seeds.shape[:-1] + (nb,)``): shape ``(..., nb, 2)``."""
    tweaked = seeds[..., None, :] ^ TWEAKS[blocks]
    # in place, so the AES output (not the input) is freed here: the other way round, glibc trimmed and regrew its
    # heap at every chunk of the DPF's full-domain sum (2.4 times slower at 2^14 cells)
    tweaked ^= fixed_key_aes(tweaked)
    return tweaked


def expand(seeds: U64, first: int, count: int) -> U64:
    """``G_j(s)`` for tweaks ``j = first .. first + count - 1`` of every node seed of ``seeds (rows, nodes, 2)``:
    shape ``(rows, count, nodes, 2)``, so a tree level's children ``(rows, [L, R], nodes)`` are a view of it (the
    tweaks are xored word by word: NumPy broadcasts slowly over a last axis of length 2)."""
    tweaked = np.empty((seeds.shape[0], count, seeds.shape[1], 2), dtype=np.uint64)
    for word in (0, 1):
        np.bitwise_xor(seeds[:, None, :, word], TWEAKS[None, first:first + count, None, word], out=tweaked[..., word])
    tweaked ^= fixed_key_aes(tweaked)  # in place: see prg
    return tweaked


def bit_reversal(bits: int) -> NDArray[np.intp]:
    """``r[x]``: ``x`` with its ``bits`` bits in reverse order, the node order of :func:`expand`'s levels (a child's
    index is ``side * nodes + parent``, which puts the first bit of the path last)."""
    x = np.arange(1 << bits, dtype=np.intp)
    reversed_x = np.zeros_like(x)
    for i in range(bits):
        reversed_x |= ((x >> i) & 1) << (bits - 1 - i)
    return reversed_x


def seed_stream(seed: bytes, count: int) -> U64:
    """``count`` pseudorandom 128-bit blocks (shape ``(count, 2)``): AES-256-CTR under the secret ``seed``."""
    if not isinstance(seed, bytes) or len(seed) != 32:
        raise ValueError("the PRG seed must be 32 bytes")
    stream = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor().update(bytes(16 * count))
    return np.frombuffer(stream, dtype="<u8").astype(np.uint64).reshape(count, 2)
