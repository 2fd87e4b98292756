"""Owners' uploads: the transport (a small interface; a folder per server here, a real deployment would post),
one owner's :func:`submit` and :func:`simulate_owners`, many owners generated at once.

Threat model: an owner sees only its own values; each record is sealed to one server
(:mod:`secure.owners.sealing`); values and noise never use ``--seed`` randomness (OS randomness only)."""
from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from secure.owners.campaign import Campaign
from secure.owners.sealing import pack, seal, split

__all__ = ["Transport", "FolderTransport", "submit", "simulate_owners"]


class Transport(Protocol):
    """Where an owner's records go: ``post(server, record)``."""

    def post(self, server: int, record: bytes) -> None: ...


@dataclass(frozen=True)
class FolderTransport:
    """One folder per server (``{pid}`` in ``pattern``: the server's index), one file per record, written
    atomically (a temporary file renamed)."""

    pattern: str

    def folder(self, server: int) -> Path:
        return Path(self.pattern.replace("{pid}", str(server)))

    def post(self, server: int, record: bytes) -> None:
        folder = self.folder(server)
        folder.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-")
        with os.fdopen(handle, "wb") as stream:
            stream.write(record)
        os.replace(temporary, folder / f"{secrets.token_hex(16)}.rec")

    def records(self, server: int) -> Iterator[tuple[str, bytes]]:
        """``(file name, bytes)`` of every record in server ``server``'s folder, by name."""
        for path in sorted(self.folder(server).glob("*.rec"), key=lambda path: path.name):
            yield path.name, path.read_bytes()


def _upload(campaign: Campaign, values: np.ndarray, transport: Transport) -> tuple[list[str], list[int]]:
    """Seal and post the records of ``values`` (grid integers ``(owners, rows, columns)``), each owner under a
    fresh token.  :return: the owners' tokens and the bytes posted to each server."""
    owners, rows = values.shape[:2]
    shares = split(campaign, values)
    keys: list[list[bytes]] | None = None
    if campaign.dpf_bits is not None:
        from secure.fss.dpf import gen

        pair = gen(campaign.cells(values.reshape(-1, values.shape[2])), bits=campaign.dpf_bits)
        keys = [[batch[o * rows:(o + 1) * rows].to_bytes() for o in range(owners)] for batch in pair]
    sent = [0] * campaign.servers
    tokens = [secrets.token_hex(16) for _ in range(owners)]
    for server in range(campaign.servers):
        payloads = pack(campaign, shares[server], keys[server] if keys and server < 2 else None)
        for token, payload in zip(tokens, payloads):
            record = seal(campaign, server, token, payload)
            transport.post(server, record)
            sent[server] += len(record)
    return tokens, sent


def submit(campaign: Campaign, rows: Sequence[Mapping[str, Any]], transport: Transport) -> tuple[str, list[int]]:
    """One owner's upload: its ``rows`` (name -> value of every declared column), quantized on the declared grids
    (the servers check ranges: the owner is not trusted), shared, sealed, posted, one record per server.
    :return: the owner's token (its receipt) and the bytes posted to each server.
    :raise ValueError: after the deadline, too many rows, a bad value."""
    if campaign.closed():
        raise ValueError(f"the campaign closed at {campaign.deadline}")
    if not 1 <= len(rows) <= campaign.rows_per_owner:
        raise ValueError(f"an owner uploads 1 to {campaign.rows_per_owner} rows, got {len(rows)}")
    names = {name for row in rows for name in row}
    values = campaign.grid_values({name: [row.get(name, np.nan) for row in rows] for name in names})
    tokens, sent = _upload(campaign, values[None], transport)
    return tokens[0], sent


def simulate_owners(campaign: Campaign, columns: Mapping[str, np.ndarray], transport: Transport
                    ) -> tuple[list[str], list[int]]:
    """Many owners' uploads at once: ``columns`` name -> values of shape ``(owners,)`` or ``(owners, rows)``;
    quantized and Shamir-shared as arrays, then sealed owner by owner.  :return: the owners' tokens (in the order of
    ``columns``) and the bytes posted to each server."""
    shapes = {np.shape(values) for values in columns.values()}
    if len(shapes) != 1 or len(shape := next(iter(shapes))) not in (1, 2):
        raise ValueError(f"every column needs the shape (owners,) or (owners, rows), got {sorted(shapes)}")
    owners, rows = (*shape, 1)[:2]
    if not 1 <= rows <= campaign.rows_per_owner:
        raise ValueError(f"an owner uploads 1 to {campaign.rows_per_owner} rows, got {rows}")
    values = campaign.grid_values({name: np.reshape(column, -1) for name, column in columns.items()})
    return _upload(campaign, values.reshape(owners, rows, -1), transport)
