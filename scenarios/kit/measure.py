"""What every benchmark measures: seconds, bytes and peak memory of a step, and its one-party life.

A benchmark prints seconds, bytes and memory of a piece of the suite beside a baseline measured in the same run
(docs/benchmarks.md).  Threat model: none (public benchmark data; timings stay at the party that measured them)."""
from __future__ import annotations

import resource
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["peak_rss_bytes", "measure_step", "bench_main"]


def peak_rss_bytes() -> int:
    """Peak resident set of this process so far, in bytes (Linux reports kilobytes, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


async def measure_step(name: str, work: Callable[[], Awaitable[list[Any]]]) -> tuple[Any, list[Any]]:
    """Run ``work`` after a barrier, inside phase ``name`` of a :class:`secure.meter.CostMeter`, until its secure
    values are computed; its cost (this party's seconds, all parties' bytes) and the values."""
    from mpyc.runtime import mpc

    from secure.meter import CostMeter

    meter = CostMeter()
    await mpc.barrier()
    with meter.phase(name):
        values = await work()
        await meter.settle(*values)
    return (await meter.totals_over_parties())[name], values


def bench_main(parse: Callable[[list[str]], Any], body: Callable[[Any], Awaitable[Any]], argv: Sequence[str] | None,
               public: Callable[[Any], dict[str, Any]] | None = None) -> int:
    """One party of a benchmark on public data (it spends no budget); the options without ``json`` are public."""
    from scenarios.kit.cli import run_scenario
    from scenarios.kit.experiments import benchmark_spend

    return run_scenario(parse, body, public or (lambda options: vars(options) | {"json": None}), argv,
                        spend=benchmark_spend)
