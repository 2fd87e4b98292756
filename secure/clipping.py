"""Clipping of inputs to their declared domain, locally (default) or inside MPC: what bounds a kernel's sensitivity.
Threat model: passive; secure clipping also bounds a party that skipped its local clipping (two masked
comparisons per value, :func:`secure.leakage.clip_openings`).  Details: docs/secure_layer.md."""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["clip_secure", "clip_secure_in_steps", "clip_local", "CLIP_STEPS"]

#: :func:`clip_secure_in_steps` clips the rows in about this many slices, reporting each (a long intake shows
#: its progress in steps of about 5 %)
CLIP_STEPS = 20
#: ... of at least this many rows each (a slice costs a few rounds of its own)
MIN_CLIP_ROWS = 256


def clip_local(integers: np.ndarray, widths: Sequence[int]) -> np.ndarray:
    """Clip fixed-point integers column-wise to ``[0, width]`` in the clear."""
    return np.clip(np.asarray(integers, dtype=np.int64), 0, np.asarray(widths, dtype=np.int64))


def clip_secure(shared: Any, widths: Sequence[int | None]) -> Any:
    """Clip a secure ``(rows, columns)`` fixed-point array column-wise to ``[0, width]`` inside MPC (``widths``:
    per column, ``None`` for a column left as is, e.g. labels); the clipped secure array, same shape."""
    from mpyc.runtime import mpc

    chosen = [j for j, width in enumerate(widths) if width is not None]
    if not chosen:
        return shared
    rows = shared.shape[0]
    values = mpc.np_concatenate([shared[:, j] for j in chosen])
    bits = type(shared).sectype.bit_length
    upper = np.repeat(np.array([widths[j] for j in chosen], dtype=object), rows)
    below = mpc.np_sgn(values, l=bits, LT=True)
    values = values - below * values                     # max(x, 0)
    room = -values + upper                                # width - x
    above = mpc.np_sgn(room, l=bits, LT=True)             # x > width
    values = values + above * room                        # min(x, width)
    columns = [shared[:, j] for j in range(shared.shape[1])]
    for position, j in enumerate(chosen):
        columns[j] = values[position * rows:(position + 1) * rows]
    return mpc.np_stack(columns, axis=1)


async def clip_secure_in_steps(shared: Any, widths: Sequence[int | None], *, task: str = "secure clipping") -> Any:
    """:func:`clip_secure` (the same values) on :data:`CLIP_STEPS` slices of at least :data:`MIN_CLIP_ROWS` rows, each
    computed before the next, with the progress of the slices reported (public counts, the same at every party)."""
    from mpyc.runtime import mpc

    from secure.meter import report_progress

    rows = shared.shape[0]
    size = max(MIN_CLIP_ROWS, -(-rows // CLIP_STEPS))
    if rows <= size or all(width is None for width in widths):
        return clip_secure(shared, widths)
    slices = -(-rows // size)
    done = []
    report_progress(task, 0, slices)
    for number, start in enumerate(range(0, rows, size), start=1):
        part = clip_secure(shared[start:start + size], widths)
        await mpc.gather(part)
        done.append(part)
        report_progress(task, number, slices)
    return mpc.np_vstack(done)
