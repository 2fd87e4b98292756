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
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

from secure.owners.campaign import Campaign
from secure.owners.inbox import FolderTransport
from secure.owners.sealing import RecordError, unseal
from secure.owners.shares import unpack

if TYPE_CHECKING:
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
    keys: tuple[DpfKeys, ...] = ()
    rejected: tuple[str, ...] = ()

    def keep(self, tokens: Sequence[str]) -> Intake:
        """Only the owners ``tokens`` (a subset of :attr:`tokens`), in that order."""
        position = {token: i for i, token in enumerate(self.tokens)}
        chosen = [position[token] for token in tokens]
        starts = np.concatenate([[0], np.cumsum(self.rows)])
        index = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in chosen] or [np.zeros(0, np.int64)])
        keys = tuple(self.keys[i] for i in chosen) if self.keys else ()
        dpf: DpfKeys | None = None
        if keys:
            from secure.fss.dpf import concatenate

            dpf = concatenate(list(keys))
        return replace(self, tokens=tuple(tokens), rows=self.rows[chosen], shares=self.shares[index], dpf=dpf,
                       keys=keys)


def open_inbox(campaign: Campaign, server: int, private_key: X25519PrivateKey, inbox: str | Path) -> Intake:
    """Open and check every record of server ``server``'s inbox (``{pid}`` in ``inbox``: this server's folder).
    A token with two records is refused whole (a replay, or an owner who changed its mind)."""
    dpf_server = campaign.dpf_bits is not None and server < 2
    accepted: dict[str, tuple[np.ndarray, DpfKeys | None]] = {}
    rejected, repeated = [], set()
    for name, record in FolderTransport(str(inbox)).records(server):
        try:
            token, payload = unseal(campaign, server, private_key, record)
            shares, rest = unpack(campaign, payload)
            key = _dpf_key(campaign, server, rest, len(shares)) if dpf_server else None
            if rest and not dpf_server:
                raise RecordError(f"wrong number of rows or columns ({len(rest)} bytes too many)")
            if token in accepted or token in repeated:
                repeated.add(token)
                raise RecordError(f"duplicate owner token {token}: every record of it refused")
            accepted[token] = shares, key
        except RecordError as exc:
            rejected.append(f"server {server}: record {name} refused: {exc}")
    tokens = sorted(set(accepted) - repeated)
    rejected += [f"server {server}: a first record of owner {token} refused: its token came again" for token in
                 sorted(repeated & set(accepted))]
    columns = len(campaign.columns)
    shares = (np.concatenate([accepted[token][0] for token in tokens]) if tokens
              else np.zeros((0, columns), dtype=object))
    intake = Intake(campaign=campaign, server=server, tokens=tuple(tokens), shares=shares,
                    rows=np.array([len(accepted[token][0]) for token in tokens], dtype=np.int64),
                    keys=tuple(key for token in tokens if (key := accepted[token][1]) is not None),
                    rejected=tuple(rejected))
    return intake.keep(tokens)


def _dpf_key(campaign: Campaign, server: int, data: bytes, rows: int) -> DpfKeys:
    from secure.fss.dpf import DpfKeys

    try:
        keys = DpfKeys.from_bytes(data)
        if len(keys) != rows or keys.bits != campaign.dpf_bits or keys.server != server:
            raise ValueError
    except ValueError:
        raise RecordError("DPF key malformed") from None
    return keys


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
