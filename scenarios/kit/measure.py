"""What every benchmark measures: seconds, bytes and peak memory of a step, and its one-party life.

A benchmark prints seconds, bytes and memory of a piece of the suite beside a baseline measured in the same run
(docs/benchmarks.md).  Threat model: none (public benchmark data; timings stay at the party that measured them)."""
from __future__ import annotations

import resource
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from scenarios.kit.cli import UsageError, run_scenario
from scenarios.kit.experiments import benchmark_spend
from scenarios.kit.outputs import check_output_path

__all__ = ["peak_rss_bytes", "measure_step", "bench_main", "integer_list"]


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


def integer_list(text: str, option: str, low: int, high: int, read: Callable[[str], int] = int) -> tuple[int, ...]:
    """A comma-separated list of integers in ``[low, high]``, each word read by ``read``, in the given order;
    :class:`scenarios.kit.cli.UsageError` with one line."""
    try:
        values = tuple(read(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, got {text!r}") from None
    for value in values:
        if not low <= value <= high:
            raise UsageError(f"{option}: {value} is outside [{low}, {high}]")
    return values


def bench_main(parse: Callable[[list[str]], Any], body: Callable[[Any], Awaitable[Any]],
               public: Callable[[Any], dict[str, Any]] | None = None) -> Callable[..., int]:
    """The ``main(argv=None)`` of a benchmark on public data: one party, the exit code (it spends no budget);
    ``parse``'s options, ``--json`` checked last if it has one, without ``json`` are public."""
    def checked(argv: list[str]) -> Any:
        options = parse(argv)
        check_output_path(getattr(options, "json", None), "--json")
        return options

    def main(argv: Sequence[str] | None = None) -> int:
        return run_scenario(checked, body, public or (lambda options: vars(options) | {"json": None}), argv,
                            spend=benchmark_spend)

    return main
