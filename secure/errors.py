"""The two failures every party can meet, importable without starting MPyC.

Importing :mod:`mpyc.runtime` makes MPyC read (and strip) the command line and, with ``-M m``, launch
parties itself; modules that only need to *raise* these errors (intake, validation) import them from
here, so that a scenario can check its command line before MPyC starts.
"""
from __future__ import annotations

__all__ = ["InputError", "ProtocolFailure"]


class InputError(ValueError):
    """A user mistake (bad file, bad parameter): every party exits 2 with the same line.

    A ``ValueError`` (bad data is a bad value), so ``except ValueError`` in a script catches it too.

    The message is what every party sees; ``detail`` (a line number, a cell value, a count) is for
    the party that raised it only and is never shared (see :func:`secure.session.agree_verdict`).
    """

    def __init__(self, *args: object, detail: str | None = None) -> None:
        super().__init__(*args)
        self.detail = detail


class ProtocolFailure(Exception):
    """A failure during the protocol (lost party, overflow): exit 1, nothing released."""
