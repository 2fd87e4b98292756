"""The two failures every party can meet, importable without starting MPyC (whose import reads the command
line; docs/secure_layer.md)."""
from __future__ import annotations

__all__ = ["InputError", "ProtocolFailure", "DEFAULT_SILENCE_LIMIT"]

#: default seconds a party may stay silent while another waits for it (``--silence-limit``): then a lost party
DEFAULT_SILENCE_LIMIT = 60.0


class InputError(ValueError):
    """A user mistake (bad file, bad parameter): every party exits 2 with the same line; a ``ValueError``.
    ``detail`` (a line number, a cell value, a count) stays at the party that raised it, never shared
    (:func:`secure.session.agree_verdict`)."""

    def __init__(self, *args: object, detail: str | None = None) -> None:
        super().__init__(*args)
        self.detail = detail


class ProtocolFailure(Exception):
    """A failure during the protocol (lost party, overflow): exit 1, nothing released."""
