"""Issue 21 item 4: no party's seconds leave it; only byte counts (public by declaration) are exchanged.

The meter's seconds are made recognisable by a fake clock that advances ``TICK`` seconds per reading,
so every measured duration is a nonzero multiple of ``TICK``; every payload that ``mpc.transfer`` sends
is then searched for such a float.
"""
from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from mpyc.runtime import mpc

import secure.meter
from conftest import record_transfers, small_table
from dp.umpc.protocol import UStatQuery, prepare_rows, run_secure
from secure.intake import ColumnSpec
from secure.kernels import get_kernel
from secure.meter import CostMeter

#: seconds per reading of the fake clock: a value no real payload of these runs contains by chance
TICK = 7919.0


def _install_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    readings = iter(range(1, 10 ** 9))
    monkeypatch.setattr(secure.meter, "time", types.SimpleNamespace(perf_counter=lambda: next(readings) * TICK))


def _numbers(payload: Any) -> Iterator[float]:
    """Every float-like number inside a payload (containers, dataclass-like objects, numpy arrays)."""
    if isinstance(payload, (bool, int, str, bytes, type(None))):
        return
    if isinstance(payload, (float, np.floating)):
        yield float(payload)
    elif isinstance(payload, np.ndarray):
        if payload.dtype.kind == "f":
            yield from (float(v) for v in payload.ravel())
        elif payload.dtype == object:
            for item in payload.ravel():
                yield from _numbers(item)
    elif isinstance(payload, dict):
        for key, value in payload.items():
            yield from _numbers(key)
            yield from _numbers(value)
    elif isinstance(payload, (list, tuple, set, frozenset)):
        for item in payload:
            yield from _numbers(item)
    elif hasattr(payload, "__dict__"):
        yield from _numbers(vars(payload))


def _is_timing(value: float) -> bool:
    return value != 0 and float(value / TICK).is_integer()


def test_totals_send_no_seconds_and_report_this_partys_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second party whose every number is 10^6 is simulated: its bytes are added, its seconds never
    reach this party's totals (the old meter sent {phase: (seconds, bytes)} and took the slowest)."""
    _install_clock(monkeypatch)
    sent: list[Any] = []

    async def exchange(obj: Any, *args: Any, **kwargs: Any) -> list[Any]:
        sent.append(obj)

        def other(value: Any) -> Any:
            if isinstance(value, dict):
                return {k: other(v) for k, v in value.items()}
            if isinstance(value, tuple):
                return tuple(other(v) for v in value)
            return type(value)(10 ** 6)
        return [obj, other(obj)]

    monkeypatch.setattr(mpc, "transfer", exchange)
    meter = CostMeter()
    with meter.phase("intake"):
        pass
    with meter.phase("reveal"):
        pass
    own = {name: cost.seconds for name, cost in meter.phases.items()}
    assert all(_is_timing(seconds) for seconds in own.values())
    totals = mpc.run(meter.totals_over_parties())
    assert len(sent) == 1
    assert not [v for v in _numbers(sent[0]) if _is_timing(v)], f"seconds crossed: {sent[0]}"
    assert {name: cost.seconds for name, cost in totals.items()} == own
    assert all(cost.bytes_sent == 10 ** 6 for cost in totals.values())  # this party sent 0 (-M1)


def test_a_release_sends_no_seconds_and_its_record_has_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole Pi_U-MPC release in process: no transferred payload carries a measured duration, and the
    record's seconds are this party's (sum over its phases of multiples of TICK)."""
    query = UStatQuery(kernel=get_kernel("kendall"),
                       specs=(ColumnSpec("sysBP", 80, 300, 8), ColumnSpec("diaBP", 40, 160, 8)),
                       epsilon=1.0, tuples=40)
    header, values = small_table()
    columns = values[:, [header.index("sysBP"), header.index("diaBP")]]
    _install_clock(monkeypatch)
    sent = record_transfers(monkeypatch)
    release = mpc.run(run_secure(query, prepare_rows(query, columns), seed=5,
                                 noise_source=lambda plan, index: 0))
    assert sent, "the release exchanged nothing: the spy is not where the meter sends"
    leaked = [payload for payload in sent if any(_is_timing(v) for v in _numbers(payload))]
    assert not leaked, f"seconds crossed: {leaked}"
    record = release.record()
    assert _is_timing(record["seconds"])
    assert all(_is_timing(phase["seconds"]) for phase in record["phases"].values())
