"""The servers' intake of owners' uploads: open an inbox (a bad record refused with its reason), agree with the other
servers on the owners present at all, then the joint histogram from DPF keys and the value columns from Shamir
shares, each after its validity check (input validity as in Prio, Corrigan-Gibbs & Boneh, NSDI 2017).
Threat model: at most ``t`` of the ``m >= 3`` servers semi-honest, any number of malicious owners, servers 0 and 1
(DPF) not colluding; a malicious owner moves a statistic by at most one honest owner's rows; public by declaration:
the owner tokens, the number of refusals and which owners are rejected.  Details: docs/owners.md."""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from secure.columns import ColumnSpec
from secure.owners.campaign import Campaign
from secure.owners.inbox import FolderTransport
from secure.owners.sealing import RecordError, decode, unpack, unseal

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

    from secure.fss.dpf import DpfKeys

__all__ = ["Intake", "open_inbox", "close", "load_shares", "owner_histogram", "owner_columns", "on_degree"]


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
        index = _rows_of(self.rows, chosen)
        return replace(self, tokens=tuple(tokens), rows=self.rows[chosen], shares=self.shares[index],
                       dpf=None if self.dpf is None or not len(index) else self.dpf[index])


def _rows_of(counts: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """The indices of the rows of owners ``chosen``, in order (owner ``i`` has ``counts[i]`` rows, owners in turn)."""
    starts, counts = (np.cumsum(counts) - counts)[chosen], counts[chosen]
    return np.repeat(starts - (np.cumsum(counts) - counts), counts) + np.arange(counts.sum())


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
    index = _rows_of(counts, chosen)
    keys = dpf.DpfKeys.from_bytes(dpf.header(server, bits, len(index)) + records[index].tobytes()) if bits else None
    return Intake(campaign=campaign, server=server, tokens=tuple(tokens), rows=counts[chosen], shares=values[index],
                  dpf=keys if len(index) else None, rejected=tuple(line for _, line in sorted(lines)))


async def close(intake: Intake) -> Intake:
    """Run by every server: :meth:`Intake.keep` of the owners present at all servers, sorted (the canonical order).
    The servers exchange a SHA-256 digest of their sorted lists, and the lists only if the digests differ."""
    from mpyc.runtime import mpc

    mine = sorted(intake.tokens)
    digests = await mpc.transfer(hashlib.sha256("\n".join(mine).encode()).hexdigest())
    if len(set(digests)) == 1:
        return intake.keep(mine)
    lists = await mpc.transfer(mine)
    return intake.keep(sorted(set(mine).intersection(*lists)))


def load_shares(intake: Intake, sectype: Any) -> Any:
    """The secure array ``(rows, columns)`` of a closed intake's shares, without ``mpc.input``:
    ``sectype.array(field.array(shares))``, what ``mpc.input`` builds from the shares it receives.
    :raise ValueError: ``sectype``'s field is not the campaign's (run with its ``-L`` and ``-K``)."""
    campaign = intake.campaign
    if sectype.field.modulus != campaign.prime:
        raise ValueError(f"the run's field is not the campaign's: run the servers with -L {campaign.bits} "
                         f"-K {campaign.security}")
    return sectype.array(sectype.field.array(intake.shares, check=False))


def _passing(intake: Intake, row_ok: Any, check: str) -> tuple[Intake, dict[str, str]]:
    """The owners all of whose rows pass (``row_ok``, one verdict per row in ``intake``'s order), and the others,
    each mapped to ``check``."""
    owner_ok = np.logical_and.reduceat(np.asarray(row_ok, dtype=bool), np.cumsum(intake.rows) - intake.rows)
    if owner_ok.all():
        return intake, {}
    return (intake.keep([token for token, ok in zip(intake.tokens, owner_ok) if ok]),
            dict.fromkeys((token for token, ok in zip(intake.tokens, owner_ok) if not ok), check))


async def owner_histogram(intake: Intake, campaign: Campaign, sectype: Any, shape: Sequence[int]
                          ) -> tuple[Any, dict[str, str], Intake]:
    """Run by every server (``m >= 3``) on its closed intake: the owners' joint count per cell of the campaign's
    grid (a secure array of ``shape``) from their DPF keys, each one-hot checked (:func:`secure.fss.dpf.check_one_hot`;
    Boyle, Gilboa & Ishai 2015), a rejected owner dropped whole; why the sums are exact: docs/owners.md.
    :return: the counts, the rejected owners (token -> ``"one-hot"``, public), the intake of the accepted owners.
    :raise ValueError: no DPF grid in the campaign, ``shape`` not its grid, fewer than 3 servers."""
    from mpyc.runtime import mpc

    from secure.fss import dpf

    bits, cells = campaign.dpf_bits, math.prod(shape)
    if bits is None or cells != math.prod(spec.grid_size for spec in campaign.columns):
        raise ValueError(f"the owners' histogram needs a campaign with DPF keys (dpf) on a grid of shape {tuple(shape)}")
    if len(mpc.parties) < 3:
        raise ValueError(f"the owners' histogram needs at least 3 servers (server 2 deals), got {len(mpc.parties)}")
    if not intake.tokens:
        return sectype.array(np.zeros(tuple(shape), dtype=np.int64)), {}, intake
    seed, server, keys = await dpf.joint_seed(), mpc.pid, intake.dpf
    sums, sketch = dpf.evaluate(keys, seed=seed) if server < 2 and keys is not None and seed else (None, None)
    kept, rejected = _passing(intake, await dpf.check_one_hot(sketch, count=int(intake.rows.sum())), "one-hot")
    mine = np.zeros(1 << bits, dtype=np.uint64)
    if sums is not None:
        q = np.uint64(dpf.MODULUS)
        dropped = intake.keep(list(rejected)).dpf
        if dropped is not None:
            sums = (sums + q - dpf.full_domain_sum(dropped)) % q
        mine = sums if server == 0 else (q - sums) % q
    a0, b1 = mpc.input(sectype.array(mine.astype(np.int64)), senders=[0, 1])
    joint = a0 - b1
    if cells < 1 << bits:
        joint = mpc.np_concatenate((joint[:cells - 1], mpc.np_sum(joint[cells - 1:], keepdims=True)))
    return joint.reshape(tuple(shape)), rejected, kept


def on_degree(points: np.ndarray, threshold: int, prime: int) -> np.ndarray:
    """Whether the ``m`` shares of each entry (``points (m, ...)``, server ``i`` at ``x = i + 1``) lie on one
    polynomial of degree at most ``threshold`` mod ``prime``: at ``m`` consecutive points that holds iff every
    ``(t + 1)``-th finite difference vanishes (the first ``t + 1`` points fix the rest by the recurrence)."""
    differences = np.diff(np.asarray(points, dtype=object) % prime, n=threshold + 1, axis=0) % prime
    return np.asarray(np.all(differences == 0, axis=0), dtype=bool)


def _grid(spec: ColumnSpec) -> tuple[int, int]:
    """``(s, last)``: a grid integer ``v`` of ``spec`` is ``s k`` for ``k`` in ``[0, last]``; ``(1, width)`` when
    the grid points are not evenly spaced integers (a step times ``2^precision`` not whole: the range only)."""
    unit = 1.0 if spec.step is None else spec.step * 2 ** spec.precision
    return (round(unit), spec.grid_size - 1) if unit == round(unit) else (1, spec.width)


async def owner_columns(intake: Intake, campaign: Campaign, sectype: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Run by every server on its closed intake: each declared column of the accepted owners' rows, a secure array in
    the canonical owner order (:func:`load_shares`), after two checks with a public verdict per owner (a failing
    owner dropped whole): (a) degree (:func:`on_degree` of ``v + R`` opened), (b) grid, ``v = s k`` with ``k`` in
    ``[0, last]`` (:func:`_grid`) by ``mpc.np_to_bits`` (Schoenmakers & Tuyls, PKC 2006); why: docs/owners.md.
    :return: column name -> secure array; the rejected owners (token -> ``"degree"`` or ``"grid"``; public)."""
    from mpyc.runtime import mpc

    kept, rejected = intake, dict[str, str]()
    if intake.tokens:
        shared = load_shares(intake, sectype)
        masked = await mpc.gather(shared + mpc._np_randoms(sectype, shared.size).reshape(shared.shape))
        points = await mpc.transfer(np.asarray(masked.value, dtype=object))
        kept, rejected = _passing(intake, on_degree(np.stack(points), campaign.threshold, campaign.prime).all(1),
                                  "degree")
    if kept.tokens:
        steps, last = zip(*(_grid(spec) for spec in campaign.columns))
        k = load_shares(kept, sectype) * np.array([pow(s, -1, campaign.prime) for s in steps], dtype=object)
        both = mpc.np_concatenate((k, -k + np.array(last, dtype=object))).reshape(-1)
        width = max(last).bit_length()
        inside = await mpc.np_is_zero_public(mpc.np_to_bits(both, width) @ (1 << np.arange(width)) - both)
        rows_ok = np.asarray(inside, dtype=bool).reshape(2, len(kept.shares), -1).all(axis=(0, 2))
        kept, off_grid = _passing(kept, rows_ok, "grid")
        rejected |= off_grid
    columns = load_shares(kept, sectype)
    return {spec.name: columns[:, j] for j, spec in enumerate(campaign.columns)}, rejected
