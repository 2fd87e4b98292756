"""Output files of the scenarios (``--json``, ``--curve``): checked when the options are parsed.

A scenario writes its result files at the very end, after the parties shared their data and the
release was opened.  A path that cannot be written (a missing directory, a directory, no write
permission) must not be found out then -- the budget would be spent and the run lost -- so every
scenario option that names an output file is checked here, at parse time, before any data is
shared.  The check runs at the party that writes the file (party 0 for ``--json`` and ``--curve``):
a party on another host need not have that directory.  Its verdict is a usage error, which
:func:`scenarios.kit.cli.run_scenario` shares with every party like any other (exit 2, one line
``error: party 0: cannot write --json /nonexistent/x.json: no such directory``).

Threat model: none of this touches data; the line names the option and the path the user gave.
"""
from __future__ import annotations

import os
import sys

from scenarios.kit.cli import UsageError

__all__ = ["check_output_path", "writing_party"]


def writing_party(writer: int = 0) -> bool:
    """Whether this process is party ``writer`` (MPyC's ``-I``; one process without MPyC is party 0).

    Reads the party index from MPyC's runtime if it was already imported (scenarios parse their
    options after that), so that calling a parser in a test never starts MPyC.
    """
    runtime = sys.modules.get("mpyc.runtime")
    if runtime is None:
        return writer == 0
    return int(runtime.mpc.pid) == writer


def check_output_path(path: str | None, option: str, *, writer: int = 0) -> None:
    """Refuse an output file that party ``writer`` could not create or overwrite.

    :param path: the path given (``None``: the option is absent, nothing to check).
    :param option: the option's name, for the message (``--json``).
    :param writer: the party that writes the file; other parties do not check it.
    :raise UsageError: ``cannot write --json PATH: no such directory`` (or: is a directory, an empty
        path, or what opening the file for writing says: ``permission denied``, ``read-only file system``).
    """
    if path is None or not writing_party(writer):
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
        try:
            os.remove(path)
        except OSError:
            pass
