"""The text of a printed release: two aligned columns under a title, byte counts, the missing-value policy.

What a release's ``.table()`` returns is what its job prints; the job adds nothing to it.
"""
from __future__ import annotations

from collections.abc import Sequence

from secure.intake import MissingPolicy

__all__ = ["text_table", "format_bytes", "policy_text"]


def text_table(rows: Sequence[tuple[str, str]], title: str | None = None) -> str:
    """``name value`` rows aligned in two columns, indented by two spaces, under ``title`` (no final newline)."""
    width = max(len(name) for name, _ in rows)
    return "\n".join(([title] if title else []) + [f"  {name:<{width}}  {value}" for name, value in rows])


def format_bytes(count: float) -> str:
    """``12345678`` -> ``12.3 MB``."""
    for unit in ("B", "kB", "MB"):
        if abs(count) < 1000:
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


def policy_text(policy: MissingPolicy) -> str:
    """The missing-value policy that ran, said as a policy (no count: whether a cell was filled stays at its party)."""
    if policy.mode == "refuse":
        return "refuse: a missing cell stops the run (none found)"
    return "fill a missing cell with the declared value: " + ", ".join(
        f"{name}={value}" if isinstance(value, str) else f"{name}={value:g}" for name, value in policy.fills)
