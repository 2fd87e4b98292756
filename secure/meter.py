"""A cost meter: wall-clock seconds and bytes sent, per protocol phase.
Threat model: seconds stay at the party that measured them; only byte counts (a function of public
parameters) are exchanged.  Details: docs/secure_layer.md."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from mpyc.runtime import mpc

from secure.session import sent_on_closed, set_phase

__all__ = ["PhaseCost", "CostMeter", "bytes_sent", "seconds_label", "ProgressReporter", "set_progress_reporter", "report_progress"]

#: ``(task, done, total)``: called as a long MPC phase advances (``done`` of ``total`` steps)
ProgressReporter = Callable[[str, int, int], None]

_progress_reporter: ProgressReporter | None = None


def set_progress_reporter(reporter: ProgressReporter | None) -> None:
    """Where :func:`report_progress` goes for this process: a callback (a terminal bar, drawn by the
    scenarios layer), or ``None`` for log lines through MPyC's logger (silenced by ``--no-log``).
    Details: docs/secure_layer.md."""
    global _progress_reporter
    _progress_reporter = reporter


def report_progress(task: str, done: int, total: int) -> None:
    """Report that ``done`` of ``total`` steps of ``task`` are computed (see :func:`set_progress_reporter`).
    A task of a single step shows nothing (its phase's log line says enough)."""
    if total <= 1:
        return
    if _progress_reporter is not None:
        _progress_reporter(task, done, total)
    else:
        logging.info(f"{task}: {done}/{total} ({100 * done // total} %)")


def bytes_sent() -> int:
    """Bytes this party has sent to all its peers so far (over a closed connection: what it had sent)."""
    return sum(peer.protocol.nbytes_sent if hasattr(peer.protocol, "nbytes_sent") else sent_on_closed(peer.pid)
               for peer in mpc.parties if peer.pid != mpc.pid)


def seconds_label() -> str:
    """How a table names its seconds: ``"seconds at party i"`` for this party ``i`` (its own wall clock;
    no party's seconds are exchanged, see the module's threat model)."""
    return f"seconds at party {mpc.pid}"


@dataclass
class PhaseCost:
    """Seconds and bytes of one phase."""

    seconds: float = 0.0
    bytes_sent: int = 0


@dataclass
class CostMeter:
    """Seconds and bytes sent per named phase (intake, seed, kernel, noise, reveal, ...)."""

    phases: dict[str, PhaseCost] = field(default_factory=dict)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Account the enclosed block to phase ``name`` (phases may be entered more than once, as the streamed
        histogram's two per block of grid rows: logged on the first entry)."""
        set_phase(name)
        if name not in self.phases:
            logging.info(f"phase {name}")
        start_time, start_bytes = time.perf_counter(), bytes_sent()
        try:
            yield
        finally:
            cost = self.phases.setdefault(name, PhaseCost())
            cost.seconds += time.perf_counter() - start_time
            cost.bytes_sent += bytes_sent() - start_bytes

    @staticmethod
    async def settle(*values: object) -> None:
        """Wait until the given secure values are computed, so the work lands in the current phase."""
        if values:
            await mpc.gather(*values)

    async def totals_over_parties(self) -> dict[str, PhaseCost]:
        """Per phase: this party's own seconds and the bytes sent by all parties together. Details: docs/secure_layer.md.
        """
        mine = {name: int(cost.bytes_sent) for name, cost in self.phases.items()}
        everyone = await mpc.transfer(mine)
        return {name: PhaseCost(cost.seconds, sum(int(theirs.get(name, 0)) for theirs in everyone))
                for name, cost in self.phases.items()}
