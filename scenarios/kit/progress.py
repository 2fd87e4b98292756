"""Progress of long MPC phases (:func:`secure.meter.report_progress`): a ``tqdm`` bar on a terminal, log lines
otherwise.  Threat model: none; the steps are public (the same at every party)."""
from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

__all__ = ["TerminalBars", "install_progress"]


class TerminalBars:
    """A :data:`secure.meter.ProgressReporter` drawing one ``tqdm`` bar per task on ``stream``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.bars: dict[str, Any] = {}

    def __call__(self, task: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self.bars.get(task)
        if bar is None or bar.total != total:
            if bar is not None:
                bar.close()
            bar = self.bars[task] = tqdm(total=total, desc=task, file=self.stream, leave=False,
                                         dynamic_ncols=True, mininterval=0.5)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
            del self.bars[task]


def install_progress(stream: TextIO | None = None) -> None:
    """Send this party's progress reports to a terminal bar, or to log lines.
    A bar only when ``stream`` (default stderr) is a terminal, MPyC logs at INFO level (not
    ``--no-log``) and ``tqdm`` is installed (an optional package: without it, log lines)."""
    from scenarios.kit.packages import installed
    from secure.meter import set_progress_reporter

    target = sys.stderr if stream is None else stream
    terminal = bool(getattr(target, "isatty", lambda: False)())
    logging_on = logging.getLogger().isEnabledFor(logging.INFO)
    set_progress_reporter(TerminalBars(target) if terminal and logging_on and installed("tqdm") else None)
