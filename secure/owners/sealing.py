"""Server keys and sealed records: ephemeral X25519, HKDF-SHA256, AES-256-GCM (``cryptography``); the payload they
carry, an owner's values as Shamir shares in MPyC's field (:func:`split`, :func:`pack`; layouts: docs/owners.md).
Threat model: only the addressed server's private key opens a record; a changed byte, a record moved to another
campaign or server, or a header with another token fails authentication; any ``t`` servers' shares are independent
of the values (Shamir 1979)."""
from __future__ import annotations

import base64
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from secure.owners.campaign import Campaign

if TYPE_CHECKING:  # cryptography (and OpenSSL, ~7 MB of a party's memory) loads only where a record is sealed or opened
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["RecordError", "HEADER", "generate_server_key", "load_private_key", "seal", "unseal", "split", "pack",
           "unpack", "decode"]

MAGIC = b"OWNR"
VERSION = 1
#: magic, version, campaign id, server, owner token, ephemeral X25519 public key, AES-GCM nonce: 82 bytes
HEADER = struct.Struct(">4sB16sB16s32s12s")
_ROWS = struct.Struct(">H")


class RecordError(ValueError):
    """A record a server refuses; the message is the one-line reason."""


def generate_server_key(server: int, folder: str | Path) -> tuple[Path, Path]:
    """Write server ``server``'s new private key (``serverI.key``, mode 0600) and public key (``serverI.pub``),
    base64 of the raw 32 bytes, into ``folder``; refuses to overwrite.  :return: the two paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    private, public = folder / f"server{server}.key", folder / f"server{server}.pub"
    key = X25519PrivateKey.generate()
    with open(private, "x", opener=lambda path, flags: os.open(path, flags, 0o600)) as stream:
        stream.write(base64.b64encode(key.private_bytes_raw()).decode() + "\n")
    public.write_text(base64.b64encode(key.public_key().public_bytes_raw()).decode() + "\n")
    return private, public


def load_private_key(path: str | Path) -> X25519PrivateKey:
    """A server's private key file; ValueError, one line, if it is not one."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    try:
        return X25519PrivateKey.from_private_bytes(base64.b64decode(Path(path).read_text().strip(), validate=True))
    except ValueError:
        raise ValueError(f"{path} is not a server's private key (base64 of 32 bytes)") from None


def _key(shared: bytes, header: bytes) -> AESGCM:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"secure.owners record v1" + header)
    return AESGCM(derived.derive(shared))


def seal(campaign: Campaign, server: int, token: str, payload: bytes) -> bytes:
    """One owner's record for ``server``: ``payload`` encrypted to its public key under a fresh ephemeral key."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey

    ephemeral = X25519PrivateKey.generate()
    public = X25519PublicKey.from_public_bytes(base64.b64decode(campaign.public_keys[server]))
    header = HEADER.pack(MAGIC, VERSION, bytes.fromhex(campaign.id), server, bytes.fromhex(token),
                         ephemeral.public_key().public_bytes_raw(), os.urandom(12))
    return header + _key(ephemeral.exchange(public), header).encrypt(header[-12:], payload, header)


def unseal(campaign: Campaign, server: int, key: X25519PrivateKey, record: bytes) -> tuple[str, bytes]:
    """Open a record at ``server``.  :return: the owner token (hex) and the payload.
    :raise RecordError: malformed, another format, wrong campaign, wrong server, undecryptable or tampered."""
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey

    if len(record) < HEADER.size + 16:
        raise RecordError("malformed (shorter than a header and a tag)")
    header = record[:HEADER.size]
    magic, version, campaign_id, addressed, token, ephemeral, nonce = HEADER.unpack(header)
    for wrong, reason in ((magic != MAGIC, "malformed (not an owner record)"),
                          (version != VERSION, f"record format {version}, this server reads {VERSION}"),
                          (campaign_id.hex() != campaign.id, f"wrong campaign {campaign_id.hex()}"),
                          (addressed != server, f"addressed to server {addressed}")):
        if wrong:
            raise RecordError(reason)
    try:
        shared = key.exchange(X25519PublicKey.from_public_bytes(ephemeral))
        return token.hex(), _key(shared, header).decrypt(nonce, record[HEADER.size:], header)
    except (InvalidTag, ValueError):
        raise RecordError("undecryptable or tampered") from None


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
