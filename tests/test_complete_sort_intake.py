"""The sort path shares the rows it is given: local clipping happens once, in the party's intake.

With ``--clip local`` a party's rows are clipped, and the clipped values counted at that party, by
:func:`secure.intake.to_fixed_point` (via :func:`dp.umpc.protocol.prepare_rows`).  The sort path
(:func:`dp.umpc.complete.secure_complete_sums`) must not clamp them a second time, silently and
uncounted: a party that skips its clipping (the malicious-input drill's ``--skip-local-clipping``) would
otherwise be clipped anyway on this path and on no other, and the drill could not show what
skipping costs.  Single-process MPyC (m = 1).
"""
from __future__ import annotations

import numpy as np
from mpyc.runtime import mpc

from dp.umpc.complete import secure_complete_sums
from dp.umpc.protocol import UStatQuery, prepare_kernel_rows, prepare_rows
from secure.columns import ColumnSpec
from secure.kernels import get_kernel
from secure.meter import CostMeter
from secure.ranking import sorted_gini_sum_plain

PRECISION = 8
SPEC = ColumnSpec("sysBP", 0, 300, PRECISION)
#: 511.99609375 mmHg = 131071 / 2^8: outside [0, 300], yet the sort's 18-bit comparisons order it exactly
#: (values in [0, 2^17)), so an unclipped sum is the exact all-pairs sum of the raw values
OUTSIDE = (2 ** (SPEC.width.bit_length()) - 1) / 2 ** PRECISION
ROWS = np.array([[120.0], [95.5], [OUTSIDE], [300.0], [0.0]])


def _query() -> UStatQuery:
    return UStatQuery(kernel=get_kernel("gini", precision=PRECISION), specs=(SPEC,), epsilon=1.0, path="sort")


def _sort_path_sum(fixed_rows: object) -> int:
    query = _query()

    async def total() -> int:
        sums = await secure_complete_sums(query, fixed_rows, "sort", mpc.SecInt(40), [len(ROWS)],  # type: ignore[arg-type]
                                          CostMeter())
        return int(await mpc.output(sums[0][0]))

    return mpc.run(total())


def test_the_value_is_outside_the_domain_but_inside_the_sorts_comparisons() -> None:
    raw = int(round(OUTSIDE * 2 ** PRECISION))
    assert raw > SPEC.width and raw < 2 ** SPEC.width.bit_length()


def test_sort_path_does_not_clamp_rows_a_second_time() -> None:
    """Rows handed over unclipped (``clip=False``) are summed as they are: the all-pairs sum of the raw
    fixed-point values, not of values silently clamped to the domain."""
    fixed = prepare_kernel_rows(_query(), ROWS, clip=False)
    assert fixed.clipped == {"sysBP": 1}  # counted by to_fixed_point, which did not clip
    raw = [int(v) for v in fixed.integers[:, 0]]
    assert max(raw) > SPEC.width
    clamped = sorted_gini_sum_plain(np.clip(raw, 0, SPEC.width))
    assert sorted_gini_sum_plain(raw) != clamped  # the test can tell the two apart
    assert _sort_path_sum(fixed) == sorted_gini_sum_plain(raw)


def test_local_clipping_is_the_intakes_and_is_counted() -> None:
    """``--clip local``: prepare_rows clips and counts; the sort path sums the clipped values."""
    fixed = prepare_rows(_query(), ROWS)
    assert fixed.clipped == {"sysBP": 1}
    assert int(fixed.integers.max()) == SPEC.width
    assert _sort_path_sum(fixed) == sorted_gini_sum_plain([int(v) for v in fixed.integers[:, 0]])
