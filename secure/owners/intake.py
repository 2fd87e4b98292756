"""The servers' intake of owners' uploads at the secure layer: the joint histogram from DPF keys and the value
columns from Shamir shares, each after its validity check, as the secure arrays the statistics code consumes.

Threat model: at most ``t`` of the ``m >= 3`` servers semi-honest, any number of malicious owners; servers 0 and 1
(the DPF servers) do not collude.  A malicious owner's upload is rejected unless it is what an honest owner could
send, so it moves a statistic by at most one honest owner's rows (input validity as in Prio, Corrigan-Gibbs &
Boneh, NSDI 2017).  Which owners are rejected, and how many, is public to the servers (by declaration: it
depends on the rejected owners' uploads only; an honest owner always passes).  Details: docs/owners.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from secure.columns import ColumnSpec
from secure.owners.campaign import Campaign
from secure.owners.closing import Intake, load_shares

__all__ = ["owner_histogram", "owner_columns", "on_degree"]


def _owners_passing(intake: Intake, row_ok: Any) -> Intake:
    """The owners all of whose rows pass (``row_ok``, one verdict per row in ``intake``'s order)."""
    owner_ok = np.logical_and.reduceat(np.asarray(row_ok, dtype=bool), np.cumsum(intake.rows) - intake.rows)
    return intake if owner_ok.all() else intake.keep([token for token, ok in zip(intake.tokens, owner_ok) if ok])


def _failed(before: Intake, after: Intake, check: str) -> dict[str, str]:
    """The owners of ``before`` not in ``after``, each mapped to ``check``."""
    return dict.fromkeys(sorted(set(before.tokens) - set(after.tokens)), check)


async def owner_histogram(intake: Intake, campaign: Campaign, sectype: Any, shape: Sequence[int]
                          ) -> tuple[Any, dict[str, str], Intake]:
    """Run by every server (``m >= 3``) on its closed intake: the owners' joint count per cell of the campaign's
    grid, a secure array of ``shape`` like :func:`secure.histograms.secure_histogram`'s, from their DPF keys, each
    one-hot checked (:func:`secure.fss.dpf.check_one_hot`; Boyle, Gilboa & Ishai 2015), an owner with a rejected key
    dropped whole.  Why the sums are exact in any field; a key past the grid: docs/owners.md ("The servers' intake").
    :return: the counts, the rejected owners (token -> ``"one-hot"``, public: print them), the intake of the accepted
        owners (for :func:`owner_columns`: an owner rejected here is dropped there too).
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
    kept = _owners_passing(intake, await dpf.check_one_hot(sketch, count=int(intake.rows.sum())))
    mine = np.zeros(1 << bits, dtype=np.uint64)
    if sums is not None:
        q = np.uint64(dpf.MODULUS)
        rejected = intake.keep(sorted(set(intake.tokens) - set(kept.tokens))).dpf
        if rejected is not None:
            sums = (sums + q - dpf.full_domain_sum(rejected)) % q
        mine = sums if server == 0 else (q - sums) % q
    a0, b1 = mpc.input(sectype.array(mine.astype(np.int64)), senders=[0, 1])
    joint = a0 - b1
    if cells < 1 << bits:
        joint = mpc.np_concatenate((joint[:cells - 1], mpc.np_sum(joint[cells - 1:], keepdims=True)))
    return joint.reshape(tuple(shape)), _failed(intake, kept, "one-hot"), kept


def on_degree(points: np.ndarray, threshold: int, prime: int) -> np.ndarray:
    """Whether the ``m`` shares of each entry (``points (m, ...)``, server ``i`` at ``x = i + 1``) lie on one
    polynomial of degree at most ``threshold`` mod ``prime``: at ``m`` consecutive points that holds iff every
    ``(t + 1)``-th finite difference vanishes (the first ``t + 1`` points fix the rest by the recurrence)."""
    order = threshold + 1
    values = np.asarray(points, dtype=object) % prime
    ok = np.ones(values.shape[1:], dtype=bool)
    for start in range(len(values) - order):
        difference = sum((-1) ** i * math.comb(order, i) * values[start + i] for i in range(order + 1))
        ok &= np.asarray(difference % prime == 0, dtype=bool)
    return ok


def _grid(spec: ColumnSpec) -> tuple[int, int]:
    """``(s, last)``: a grid integer ``v`` of ``spec`` is ``s k`` for ``k`` in ``[0, last]``; ``(1, width)`` when
    the grid points are not evenly spaced integers (a step times ``2^precision`` not whole: the range only)."""
    unit = 1.0 if spec.step is None else spec.step * 2 ** spec.precision
    return (round(unit), spec.grid_size - 1) if unit == round(unit) else (1, spec.width)


async def owner_columns(intake: Intake, campaign: Campaign, sectype: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """Run by every server on its closed intake (for the histogram path's owners: its third result): each declared
    column of the accepted owners' rows, a secure array in the canonical owner order, from their Shamir shares
    (:func:`secure.owners.closing.load_shares`), after two checks with a public verdict per owner (an owner failing
    either dropped whole): (a) degree, ``v + R`` opened for a random degree-``t`` sharing ``R`` lies on a degree-``t``
    polynomial (:func:`on_degree`); (b) grid, ``v = s k`` with ``k`` in ``[0, last]`` (:func:`_grid`) by
    ``mpc.np_to_bits`` (Schoenmakers & Tuyls, PKC 2006), on the owners that passed (a).  Why each is sound and
    hides an honest ``v``: docs/owners.md ("The servers' intake").
    :return: column name -> secure array of the accepted rows; the rejected owners (token -> the check failed,
        ``"degree"`` or ``"grid"``; public)."""
    from mpyc.runtime import mpc

    kept = degree = intake
    if intake.tokens:
        shared = load_shares(intake, sectype)
        masked = await mpc.gather(shared + mpc._np_randoms(sectype, shared.size).reshape(shared.shape))
        points = await mpc.transfer(np.asarray(masked.value, dtype=object))
        kept = degree = _owners_passing(intake, on_degree(np.stack(points), campaign.threshold, campaign.prime).all(1))
    if kept.tokens:
        steps, last = zip(*(_grid(spec) for spec in campaign.columns))
        k = load_shares(kept, sectype) * np.array([pow(s, -1, campaign.prime) for s in steps], dtype=object)
        both = mpc.np_concatenate((k, -k + np.array(last, dtype=object))).reshape(-1)
        width = max(last).bit_length()
        inside = await mpc.np_is_zero_public(mpc.np_to_bits(both, width) @ (1 << np.arange(width)) - both)
        rows_ok = np.asarray(inside, dtype=bool).reshape(2, len(kept.shares), -1).all(axis=(0, 2))
        kept = _owners_passing(kept, rows_ok)
    columns = load_shares(kept, sectype)
    return ({spec.name: columns[:, j] for j, spec in enumerate(campaign.columns)},
            {**_failed(intake, degree, "degree"), **_failed(degree, kept, "grid")})
