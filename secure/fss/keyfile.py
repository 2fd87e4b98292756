"""The batched key files of :mod:`secure.fss` (DCF and DPF keys alike): a 16-byte header (magic, format version,
server, width in bits, padding, key count) and fixed-size key records.  Read from untrusted uploads too, so every
malformed input is a ``ValueError`` with a plain message and nothing else.  Layouts: docs/fss.md."""
from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

__all__ = ["HEADER", "read_records"]

HEADER = struct.Struct("<4sBBBxQ")  # magic, version, server, bits, padding, count: 16 bytes


def read_records(data: bytes, *, kind: str, magic: bytes, version: int, max_bits: int,
                 record_bytes: Callable[[int], int], server: int | None = None,
                 bits: int | None = None) -> tuple[int, int, NDArray[np.uint8]]:
    """The server, the width and the ``(count, record_bytes(width))`` records of a key file of ``kind`` ("DCF",
    "DPF"); with ``server``/``bits``, also require those.  :raise ValueError: not bytes, truncated or overlong,
    another magic or version, a server other than 0/1 (or ``server``), a width out of range (or other than ``bits``)."""
    try:
        view = memoryview(data).cast("B")
    except TypeError:
        raise ValueError(f"{kind} keys: not a bytes-like object") from None
    if len(view) < HEADER.size:
        raise ValueError(f"{kind} keys: {len(view)} bytes is shorter than the {HEADER.size}-byte header")
    stored_magic, stored_version, stored_server, stored_bits, count = HEADER.unpack_from(view)
    if stored_magic != magic:
        raise ValueError(f"{kind} keys: not a {kind} key file (wrong magic bytes)")
    if stored_version != version:
        raise ValueError(f"{kind} keys: format version {stored_version}, this program reads version {version}")
    if stored_server not in (0, 1):
        raise ValueError(f"{kind} keys: server {stored_server} (a key belongs to server 0 or 1)")
    if server is not None and stored_server != server:
        raise ValueError(f"{kind} keys: these are server {stored_server}'s keys, expected server {server}'s")
    if not 1 <= stored_bits <= max_bits:
        raise ValueError(f"{kind} keys: width {stored_bits} bits is outside [1, {max_bits}]")
    if bits is not None and stored_bits != bits:
        raise ValueError(f"{kind} keys: width {stored_bits} bits, expected {bits}")
    size = record_bytes(stored_bits)
    if len(view) != HEADER.size + count * size:
        raise ValueError(f"{kind} keys: {len(view)} bytes, but {count} keys of {stored_bits} bits take "
                         f"{HEADER.size + count * size}")
    return stored_server, stored_bits, np.frombuffer(view, dtype=np.uint8, offset=HEADER.size).reshape(count, size)
