"""Owners' uploads as the intake of the ECDF family (:mod:`dp.ecdf`): the servers' counts on the campaign's grid from
the owners' one-hot checked DPF keys (:meth:`dp.umpc.owners.Owners.histogram`) in place of each party's own counts;
the tree noise, the release and its record as for parties.  Threat model, what is public and the unit of privacy
(one owner): :mod:`dp.umpc.owners`, docs/owners.md."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dp.ecdf.grid import true_counts
from dp.umpc.owners import Owners
from secure.errors import InputError

__all__ = ["Owners", "owner_cells", "at_points", "by_label"]


async def owner_cells(owners: Owners, names: Sequence[str], what: str, sectype: Callable[[int], Any]
                      ) -> tuple[Any, list[np.ndarray]]:
    """Every server: open and close the inbox, then ``(counts, values)``: the accepted owners' secure counts of type
    ``sectype(rows)``, one axis per column of ``names`` (the others summed), and each such column's cell values;
    InputError at every server alike when the campaign lacks a column or DPF keys."""
    from mpyc.runtime import mpc

    specs = owners.plan.columns
    declared = [spec.name for spec in specs]
    if lacking := [name for name in names if name not in declared]:
        raise InputError(f"all servers: the campaign declares no column {', '.join(lacking)} (it declares "
                         f"{', '.join(declared)})")
    if owners.plan.dpf_bits is None:
        raise InputError(f"all servers: the {what} counts the owners' DPF keys, but the campaign has none (campaign "
                         f"--dpf)")
    rows = await owners.open(specs)
    with owners.meter.phase("histogram"):  # DPF evaluation and one-hot check: the release's phases (Owners.finish)
        counts = await owners.histogram(sectype(rows), [spec.grid_size for spec in specs])
        await owners.meter.settle(counts)
    axes = [declared.index(name) for name in names]
    if others := tuple(sorted(set(range(len(specs))) - set(axes))):
        counts = mpc.np_sum(counts, axis=others)
    if axes != sorted(axes):
        counts = mpc.np_transpose(counts, [sorted(axes).index(axis) for axis in axes])
    try:
        return counts, [np.asarray(specs[axis].labels, dtype=float) if specs[axis].categories is not None
                        else specs[axis].decode(specs[axis].grid_values()) for axis in axes]
    except ValueError:
        raise InputError(f"all servers: the {what} needs numbers, the campaign's categories are text") from None


def at_points(counts: Any, values: np.ndarray, grid: np.ndarray, lower: float, upper: float) -> Any:
    """``#{rows <= tau_i}`` at every grid point from 1-D secure cell ``counts`` (cell ``k`` at ``values[k]``, clipped
    to ``[lower, upper]`` as a party clips its rows): prefix sums read at each point's last cell (local)."""
    from mpyc.runtime import mpc

    prefix = mpc.np_concatenate((counts[:1] * 0, mpc.np_cumsum(counts)))
    return prefix[true_counts(np.clip(values, lower, upper), grid)]


def by_label(counts: Any, labels: np.ndarray, what: str) -> list[Any]:
    """The cell counts of a ``(score, label)`` grid summed per class, label 1 then 0 (InputError unless 0/1)."""
    from mpyc.runtime import mpc

    if set(labels.tolist()) - {0.0, 1.0}:
        raise InputError(f"all servers: the {what} needs a 0/1 label, the campaign's label holds "
                         f"{'/'.join(f'{v:g}' for v in labels)}")
    return [mpc.np_sum(counts[:, labels == label], axis=1) for label in (1, 0)]
