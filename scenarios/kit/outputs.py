"""Output files of the scenarios (``--json``, ``--curve``), checked when the options are parsed, at the party that
writes them: a path that cannot be written must not be found out after the budget is spent.  The verdict is a
usage error every party shares (:func:`scenarios.kit.cli.run_scenario`: exit 2, one line
``error: party 0: cannot write --json /nonexistent/x.json: no such directory``).  No data is touched."""
from __future__ import annotations

import contextlib
import os
import sys

from scenarios.kit.cli import UsageError

__all__ = ["check_output_path"]


def check_output_path(path: str | None, option: str, *, writer: int = 0) -> None:
    """Refuse an output file (``path``; ``None``: nothing to check) that party ``writer`` could not create or
    overwrite: :class:`UsageError` ``cannot write --json PATH: no such directory`` (or why not).  Without MPyC
    imported this is party 0, so that a parser called in a test never starts MPyC."""
    runtime = sys.modules.get("mpyc.runtime")
    if path is None or writer != (0 if runtime is None else int(runtime.mpc.pid)):
        return
    if not path.strip():
        raise UsageError(f"{option} needs a file path, got an empty one")
    if os.path.isdir(path):
        raise UsageError(f"cannot write {option} {path}: it is a directory, give a file path")
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        reason = "no such directory" if not os.path.exists(directory) else f"{directory} is not a directory"
        raise UsageError(f"cannot write {option} {path}: {reason}")
    # try it: permission bits do not tell (root, read-only mounts, /proc); append mode changes nothing in a file
    # that exists, and a file made by the probe is removed again
    existed = os.path.exists(path)
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise UsageError(f"cannot write {option} {path}: {reason}") from None
    if not existed:
        with contextlib.suppress(OSError):
            os.remove(path)
