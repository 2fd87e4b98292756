"""The key batches of :mod:`secure.fss` (DCF and DPF keys alike) and their files: a 16-byte header (magic, format
version, server, width in bits, padding, key count) and fixed-size key records, each the key's arrays one after the
other (integers as little-endian 64-bit words, bits packed in little-endian bit order).  Read from untrusted uploads
too, so every malformed input is a ``ValueError`` with a plain message and nothing else.  Layouts: docs/fss.md."""
from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["HEADER", "FORMAT_VERSION", "KeyBatch"]

HEADER = struct.Struct("<4sBBBxQ")  # magic, version, server, bits, padding, count: 16 bytes
#: serialization format version (DCF and DPF files)
FORMAT_VERSION = 1

Layout = dict[str, tuple[tuple[int, ...], Any]]
K = TypeVar("K", bound="KeyBatch")


@dataclass(frozen=True)
class KeyBatch:
    """A batch of keys of one server (``server`` 0 or 1), all at width ``bits``: ``seeds (count, 2)`` uint64 and the
    subclass's further arrays, in record order, each of shape ``(count, *shape)`` for the shapes of :meth:`layout`
    (uint8 arrays hold bits).  Read-only copies.  :raise ValueError: anything else (keys may come from owners)."""

    KIND: ClassVar[str]
    MAGIC: ClassVar[bytes]
    MAX_BITS: ClassVar[int]
    #: why :meth:`from_bytes` refuses records that :meth:`well_formed` refuses
    MALFORMED: ClassVar[str] = "nonzero padding bits in the control corrections"

    server: int
    bits: int
    seeds: NDArray[np.uint64]

    @classmethod
    def layout(cls, bits: int) -> Layout:
        """Each array's per-key shape and dtype at width ``bits``, in record order.  :raise ValueError: a bad width."""
        raise NotImplementedError

    def _check_values(self) -> None:
        """:raise ValueError: a value out of range in arrays of the right shapes."""

    def __post_init__(self) -> None:
        if isinstance(self.server, bool) or self.server not in (0, 1):
            raise ValueError(f"a {self.KIND} key belongs to server 0 or 1, not {self.server!r}")
        count = self.seeds.shape[0] if getattr(self.seeds, "ndim", 0) == 2 else -1
        for name, (shape, dtype) in self.layout(self.bits).items():
            array, shape = getattr(self, name), (count, *shape)
            if not isinstance(array, np.ndarray) or array.shape != shape or array.dtype != dtype:
                raise ValueError(f"{type(self).__name__}.{name} must be a {np.dtype(dtype).name} array "
                                 f"of shape {shape}")
            array = np.array(array, copy=True)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        self._check_values()

    @classmethod
    def _spans(cls, bits: int) -> dict[str, tuple[tuple[int, ...], Any, slice]]:
        """Each array's per-key shape, dtype and bytes in a record (8 per word; bits packed, padded to a byte)."""
        spans, start = {}, 0
        for name, (shape, dtype) in cls.layout(bits).items():
            size = math.prod(shape)
            stop = start + ((size + 7) // 8 if dtype is np.uint8 else 8 * size)
            spans[name], start = (shape, dtype, slice(start, stop)), stop
        return spans

    @classmethod
    def record_bytes(cls, bits: int) -> int:
        """Serialized bytes per key at width ``bits``."""
        return int(list(cls._spans(bits).values())[-1][2].stop)

    @property
    def nbytes_per_key(self) -> int:
        """Serialized bytes per key (:meth:`to_bytes` writes a 16-byte header plus this many per key)."""
        return self.record_bytes(self.bits)

    @property
    def count(self) -> int:
        return int(self.seeds.shape[0])

    def __len__(self) -> int:
        return self.count

    def __getitem__(self: K, index: int | slice | Sequence[int] | NDArray[Any]) -> K:
        """The keys at ``index`` (an int keeps a batch of one; an index array picks keys in its order)."""
        if isinstance(index, (int, np.integer)) and not -self.count <= index < self.count:
            raise IndexError(f"key {index} of a batch of {self.count}")
        rows = np.atleast_1d(np.arange(self.count)[index])
        return type(self)(self.server, self.bits, *(getattr(self, name)[rows] for name in self.layout(self.bits)))

    @classmethod
    def concatenate(cls: type[K], batches: Sequence[K]) -> K:
        """One batch of all keys of ``batches`` (in order); all of one server and one width.
        :raise ValueError: no batch, or batches of different servers or widths."""
        if not batches:
            raise ValueError(f"no {cls.KIND} key batches to concatenate")
        first = batches[0]
        for batch in batches[1:]:
            if (batch.server, batch.bits) != (first.server, first.bits):
                raise ValueError(f"cannot join {cls.KIND} keys of server {batch.server} at {batch.bits} bits with keys "
                                 f"of server {first.server} at {first.bits} bits")
        return cls(first.server, first.bits, *(np.concatenate([getattr(batch, name) for batch in batches])
                                               for name in cls.layout(first.bits)))

    @classmethod
    def header(cls, server: int, bits: int, count: int) -> bytes:
        """The 16 bytes :meth:`to_bytes` writes before ``count`` keys of ``server`` at width ``bits``."""
        return HEADER.pack(cls.MAGIC, FORMAT_VERSION, server, bits, count)

    def to_bytes(self) -> bytes:
        """The versioned serialization: the header, then one record per key (docs/fss.md)."""
        parts = []
        for name, (shape, dtype, _) in self._spans(self.bits).items():
            flat = getattr(self, name).reshape(self.count, math.prod(shape))
            parts.append(np.packbits(flat, axis=1, bitorder="little") if dtype is np.uint8
                         else flat.astype("<u8").view(np.uint8))
        return self.header(self.server, self.bits, self.count) + np.hstack(parts).tobytes()

    @classmethod
    def well_formed(cls, bits: int, records: NDArray[np.uint8]) -> NDArray[np.bool_]:
        """Which keys of ``records`` (``(n, record_bytes(bits))``: :meth:`to_bytes` after the header) have zero
        padding bits, one verdict per key (an untrusted owner's key is refused alone)."""
        ok = np.ones(len(records), dtype=bool)
        for shape, dtype, span in cls._spans(bits).values():
            if dtype is np.uint8:
                ok &= ~np.unpackbits(records[:, span], axis=1, bitorder="little")[:, math.prod(shape):].any(axis=1)
        return ok

    @classmethod
    def from_bytes(cls: type[K], data: bytes, *, server: int | None = None, bits: int | None = None) -> K:
        """Read :meth:`to_bytes` output; with ``server``/``bits``, also require those.  :raise ValueError: not bytes,
        truncated or overlong, another magic or version, a server other than 0/1 (or ``server``), a width out of
        range (or other than ``bits``), a key that is not :meth:`well_formed`."""
        kind = cls.KIND
        try:
            view = memoryview(data).cast("B")
        except TypeError:
            raise ValueError(f"{kind} keys: not a bytes-like object") from None
        if len(view) < HEADER.size:
            raise ValueError(f"{kind} keys: {len(view)} bytes is shorter than the {HEADER.size}-byte header")
        magic, version, stored_server, stored_bits, count = HEADER.unpack_from(view)
        width_ok = 1 <= stored_bits <= cls.MAX_BITS
        size = cls.record_bytes(stored_bits) if width_ok else 0
        for refused, why in (
                (magic != cls.MAGIC, f"not a {kind} key file (wrong magic bytes)"),
                (version != FORMAT_VERSION, f"format version {version}, this program reads version {FORMAT_VERSION}"),
                (stored_server not in (0, 1), f"server {stored_server} (a key belongs to server 0 or 1)"),
                (server not in (None, stored_server),
                 f"these are server {stored_server}'s keys, expected server {server}'s"),
                (not width_ok, f"width {stored_bits} bits is outside [1, {cls.MAX_BITS}]"),
                (bits not in (None, stored_bits), f"width {stored_bits} bits, expected {bits}"),
                (len(view) != HEADER.size + count * size,
                 f"{len(view)} bytes, but {count} keys of {stored_bits} bits take {HEADER.size + count * size}")):
            if refused:
                raise ValueError(f"{kind} keys: {why}")
        records = np.frombuffer(view, dtype=np.uint8, offset=HEADER.size).reshape(count, size)
        if not cls.well_formed(stored_bits, records).all():
            raise ValueError(f"{kind} keys: {cls.MALFORMED}")
        arrays = []
        for shape, dtype, span in cls._spans(stored_bits).values():
            flat = (np.unpackbits(records[:, span], axis=1, count=math.prod(shape), bitorder="little")
                    if dtype is np.uint8 else np.ascontiguousarray(records[:, span]).view("<u8").astype(np.uint64))
            arrays.append(flat.reshape(count, *shape))
        return cls(stored_server, stored_bits, *arrays)
