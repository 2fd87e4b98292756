"""Owners' values as Shamir shares in MPyC's field and the payload that carries them.

Each grid integer is split with :func:`mpyc.thresha.np_random_split` (degree ``t``, OS randomness, party ``i``
at x-coordinate ``i + 1``: exactly what ``mpc.input`` sends), vectorized across owners.
Threat model: any ``t`` servers' shares are independent of the values (Shamir 1979)."""
from __future__ import annotations

import struct

import numpy as np

from secure.owners.campaign import Campaign
from secure.owners.sealing import RecordError

__all__ = ["split", "pack", "unpack", "decode"]

_ROWS = struct.Struct(">H")


def split(campaign: Campaign, values: np.ndarray) -> np.ndarray:
    """Shamir shares of the grid integers ``values`` (any shape): shape ``(servers, *values.shape)``, Python ints
    in ``[0, p)``."""
    from mpyc import finfields, thresha

    field = finfields.GF(campaign.prime)
    flat = np.asarray(values).reshape(-1).astype(object) % campaign.prime
    return np.asarray(thresha.np_random_split(field, flat, campaign.threshold, campaign.servers)).reshape(
        campaign.servers, *np.shape(values))


def pack(campaign: Campaign, shares: np.ndarray, keys: list[bytes] | None = None) -> list[bytes]:
    """One payload per owner: the row count, the shares of ``shares`` (``(owners, rows, columns)``, one server's)
    row by row, then the owner's DPF key bytes (``keys``, servers 0 and 1 of a DPF campaign)."""
    width = campaign.share_bytes
    return [_ROWS.pack(len(rows)) + b"".join([int(share).to_bytes(width, "big") for share in rows.flat])
            + (keys[o] if keys else b"") for o, rows in enumerate(shares)]


def unpack(campaign: Campaign, payload: bytes) -> tuple[int, bytes, bytes]:
    """A payload's row count, its shares' bytes (read for all owners at once by :func:`decode`) and the bytes
    after them (a DPF key or nothing).  :raise RecordError: no rows, more than declared, too short."""
    if len(payload) < _ROWS.size:
        raise RecordError("malformed payload")
    (rows,) = _ROWS.unpack_from(payload)
    columns, width = len(campaign.columns), campaign.share_bytes
    end = _ROWS.size + rows * columns * width
    if not 1 <= rows <= campaign.rows_per_owner or len(payload) < end:
        raise RecordError(f"wrong number of rows or columns ({rows} rows declared, 1 to {campaign.rows_per_owner} "
                          f"allowed, of {columns} columns)")
    return rows, payload[_ROWS.size:end], payload[end:]


def decode(campaign: Campaign, data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """The shares of whole rows ``data`` (:func:`unpack`'s bytes, joined): ``(rows, columns)`` object ints, and
    whether each row's shares all lie in ``[0, p)`` (a row that fails refuses its owner)."""
    width = campaign.share_bytes
    shares = np.array([int.from_bytes(data[i:i + width], "big") for i in range(0, len(data), width)], dtype=object)
    shares = shares.reshape(-1, len(campaign.columns))
    return shares, np.logical_and.reduce(shares < campaign.prime, axis=1)
