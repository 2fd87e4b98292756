"""What every benchmark measures: seconds, bytes and peak memory of a step, and its one-party life.

A benchmark prints seconds, bytes and memory of a piece of the suite beside a baseline measured in the same run
(docs/benchmarks.md).  Threat model: none (public benchmark data; timings stay at the party that measured them)."""
from __future__ import annotations

import resource
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from scenarios.kit.cli import UsageError, print_table, run_scenario
from scenarios.kit.experiments import benchmark_spend
from scenarios.kit.outputs import check_output_path
from scenarios.kit.records import write_record

__all__ = ["peak_rss_bytes", "timed", "measure_step", "bench_main", "integer_list", "at_least", "deliver_tables"]

T = TypeVar("T")


def peak_rss_bytes() -> int:
    """Peak resident set of this process so far, in bytes: Linux's ``VmHWM``, not ``ru_maxrss``, which a process
    started by ``vfork`` and ``exec`` inherits from its launcher's peak; elsewhere ``ru_maxrss`` (macOS: bytes)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak if sys.platform == "darwin" else peak * 1024)


def timed(call: Callable[[], T], clock: Callable[[], float] = time.perf_counter) -> tuple[T, float]:
    """``call()`` and the seconds it took on ``clock`` (wall; ``time.process_time``: this process's CPU)."""
    start = clock()
    result = call()
    return result, clock() - start


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
    """Comma-separated integers in ``[low, high]``, each read by ``read``, in the given order; :class:`UsageError`."""
    try:
        values = tuple(read(part) for part in text.split(","))
    except ValueError:
        raise UsageError(f"{option} takes comma-separated integers, got {text!r}") from None
    for value in values:
        if not low <= value <= high:
            raise UsageError(f"{option}: {value} is outside [{low}, {high}]")
    return values


def at_least(value: int, option: str, low: int) -> int:
    """``value``, or :class:`scenarios.kit.cli.UsageError` ``--option must be at least LOW, got VALUE``."""
    if value < low:
        raise UsageError(f"{option} must be at least {low}, got {value}")
    return value


def deliver_tables(tables: Sequence[tuple[Sequence[tuple[str, str]], str]], json: str | None, record: Any, *,
                   then: Callable[[], Any] | None = None) -> Callable[[], None]:
    """A benchmark's ``deliver`` (after the shutdown): print each ``(rows, title)`` table, write ``record`` to
    ``json`` (``--json``; ``None``: no file), then call ``then`` (if given)."""
    def deliver() -> None:
        for rows, title in tables:
            print_table(rows, title)
        if json:
            write_record(json, record)
        if then is not None:
            then()

    return deliver


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
