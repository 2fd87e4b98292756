"""Close at a server: open every record of its inbox, refuse the bad ones with a reason each, then agree with the
other servers on the owners present at all of them.

Threat model: owners may be malicious: a record that does not decrypt, is addressed elsewhere, repeats an owner
token, or carries a malformed share vector or DPF key is refused (one line each, kept at this server; the number
of refusals is public by declaration).  The owner tokens are visible to the servers (by declaration): they are
what the servers exchange to agree, as a digest first, as lists only when the digests differ."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from secure.owners.campaign import Campaign
from secure.owners.inbox import FolderTransport
from secure.owners.sealing import RecordError, unseal
from secure.owners.shares import decode, unpack

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from secure.fss.dpf import DpfKeys

__all__ = ["Intake", "open_inbox", "agree_owners", "close", "load_shares"]


@dataclass(frozen=True, kw_only=True)
class Intake:
    """What one server holds after opening its inbox.

    :param tokens: the accepted owners, in canonical (sorted) order.  :param rows: each owner's row count.
    :param shares: this server's shares, ``(rows, columns)`` Python ints, the owners' rows in ``tokens`` order.
    :param dpf: servers 0 and 1 of a DPF campaign: one key per row, in the same order (else ``None``).
    :param rejected: one line per refused record (local to this server)."""

    campaign: Campaign
    server: int
    tokens: tuple[str, ...]
    rows: np.ndarray
    shares: np.ndarray
    dpf: DpfKeys | None = None
    rejected: tuple[str, ...] = ()

    def keep(self, tokens: Sequence[str]) -> Intake:
        """Only the owners ``tokens`` (a subset of :attr:`tokens`), in that order."""
        position = {token: i for i, token in enumerate(self.tokens)}
        chosen = np.array([position[token] for token in tokens], dtype=np.int64)
        index = _rows_of(np.cumsum(self.rows) - self.rows, self.rows, chosen)
        return replace(self, tokens=tuple(tokens), rows=self.rows[chosen], shares=self.shares[index],
                       dpf=None if self.dpf is None or not len(index) else self.dpf[index])


def _rows_of(starts: np.ndarray, counts: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """The indices of the rows of owners ``chosen`` (owner ``i``: ``counts[i]`` rows from ``starts[i]``), in order."""
    counts = counts[chosen]
    return np.repeat(starts[chosen] - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())


def open_inbox(campaign: Campaign, server: int, private_key: X25519PrivateKey, inbox: str | Path) -> Intake:
    """Open and check every record of server ``server``'s inbox (``{pid}`` in ``inbox``: this server's folder).
    A token with two records is refused whole (a replay, or an owner who changed its mind).  The shares and DPF keys
    of all records are read and checked at once (``decode``, ``dpf.well_formed``), a bad one refusing its record."""
    from secure.fss import dpf

    bits = campaign.dpf_bits if server < 2 else None
    size = dpf.key_bytes(bits) if bits else 0
    lines: list[tuple[float, str]] = []
    found = []  # position, file name, token, rows, shares' bytes, keys' bytes
    for position, (name, record) in enumerate(FolderTransport(str(inbox)).records(server)):
        try:
            token, payload = unseal(campaign, server, private_key, record)
            rows, data, rest = unpack(campaign, payload)
            if bits is not None and (rest[:16] != dpf.header(server, bits, rows) or len(rest) != 16 + rows * size):
                raise RecordError("DPF key malformed")
            if rest and bits is None:
                raise RecordError(f"wrong number of rows or columns ({len(rest)} bytes too many)")
            found.append((position, name, token, rows, data, rest[16:]))
        except RecordError as exc:
            lines.append((position, f"server {server}: record {name} refused: {exc}"))
    counts = np.array([entry[3] for entry in found], dtype=np.int64)
    values, share_ok = decode(campaign, b"".join(entry[4] for entry in found))
    records = np.frombuffer(b"".join(entry[5] for entry in found), dtype=np.uint8).reshape(-1, size or 1)
    key_ok = np.ones_like(share_ok) if bits is None else dpf.well_formed(bits, records)
    owner = np.repeat(np.arange(len(found)), counts)
    bad = {**dict.fromkeys(owner[~key_ok].tolist(), "DPF key malformed"),
           **dict.fromkeys(owner[~share_ok].tolist(), "share not in [0, p)")}
    accepted, repeated = dict[str, int](), set[str]()
    for i, (position, name, token, *_) in enumerate(found):
        if i not in bad and token in accepted:
            repeated.add(token)
            bad[i] = f"duplicate owner token {token}: every record of it refused"
        if i in bad:
            lines.append((position, f"server {server}: record {name} refused: {bad[i]}"))
        else:
            accepted[token] = i
    lines += [(np.inf, f"server {server}: a first record of owner {token} refused: its token came again")
              for token in repeated]
    tokens = sorted(set(accepted) - repeated)
    chosen = np.array([accepted[token] for token in tokens], dtype=np.int64)
    index = _rows_of(np.cumsum(counts) - counts, counts, chosen)
    keys = dpf.DpfKeys.from_bytes(dpf.header(server, bits, len(index)) + records[index].tobytes()) if bits else None
    return Intake(campaign=campaign, server=server, tokens=tuple(tokens), rows=counts[chosen], shares=values[index],
                  dpf=keys if len(index) else None, rejected=tuple(line for _, line in sorted(lines)))


async def agree_owners(tokens: Sequence[str]) -> list[str]:
    """Run by every server: the owners present at all of them, sorted (the canonical order).
    The servers exchange a SHA-256 digest of their sorted lists, and the lists only if the digests differ."""
    from mpyc.runtime import mpc

    mine = sorted(tokens)
    digests = await mpc.transfer(hashlib.sha256("\n".join(mine).encode()).hexdigest())
    if len(set(digests)) == 1:
        return mine
    lists = await mpc.transfer(mine)
    return sorted(set(mine).intersection(*lists))


async def close(intake: Intake) -> Intake:
    """Run by every server: :func:`agree_owners`, then :meth:`Intake.keep` of the owners present everywhere."""
    return intake.keep(await agree_owners(intake.tokens))


def load_shares(intake: Intake, sectype: Any) -> Any:
    """The secure array ``(rows, columns)`` of a closed intake's shares, without ``mpc.input``:
    ``sectype.array(field.array(shares))``, what ``mpc.input`` builds from the shares it receives.
    :raise ValueError: ``sectype``'s field is not the campaign's (run with its ``-L`` and ``-K``)."""
    campaign = intake.campaign
    if sectype.field.modulus != campaign.prime:
        raise ValueError(f"the run's field is not the campaign's: run the servers with -L {campaign.bits} "
                         f"-K {campaign.security}")
    return sectype.array(sectype.field.array(intake.shares, check=False))
