"""The text of a printed release: two aligned columns under a title, byte counts, the missing-value policy.

What a release's ``.table()`` returns is what its job prints; the job adds nothing to it."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from secure.intake import MissingPolicy

__all__ = ["text_table", "format_bytes", "policy_text", "run_rows", "owner_rows", "phases_text", "run_costs"]


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


class _Run(Protocol):
    @property
    def parties(self) -> int: ...
    @property
    def threshold(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def bytes_sent(self) -> int: ...


def run_rows(release: _Run, policy: MissingPolicy) -> list[tuple[str, str]]:
    """The rows a release's table ends with: the missing-value policy (owners' rows have none missing), the parties,
    the seconds, the bytes sent."""
    from secure.meter import seconds_label

    return [*([] if (owners := getattr(release, "owners", None)) else [("missing values", policy_text(policy))]),
            ("parties", f"{release.parties} (threshold t = {release.threshold})"), *owner_rows(owners),
            (seconds_label(), f"{release.seconds:.2f}"),
            ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties")]


def owner_rows(owners: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """A release from owners' uploads (its ``owners`` record entry, :meth:`dp.umpc.owners.Owners.record`): the
    owners, rows, campaign and rejected owners (public by declaration), and the unit of privacy; none otherwise."""
    if not owners:
        return []
    unit = owners["rows_per_owner"]
    return [("owners", f"{owners['owners']} owners, {owners['rows']} rows, campaign {owners['campaign']}; "
                       f"{owners['rejected']} owner(s) rejected (public by declaration)"),
            ("privacy unit", f"one owner (up to {unit} rows): sensitivity x {unit}")]


def phases_text(phases: Mapping[str, Mapping[str, float]], title: str = "phases") -> str:
    """The ``  phases: NAME 1.23 s / 4.5 kB, ...`` line (``title`` in place of ``phases``)."""
    return f"  {title}: " + ", ".join(f"{name} {cost['seconds']:.2f} s / {format_bytes(cost['bytes_sent'])}"
                                       for name, cost in phases.items())


def run_costs(phases: Mapping[str, Any]) -> dict[str, Any]:
    """A release's ``seconds``, ``bytes_sent`` and ``phases`` from a meter's totals over parties
    (:meth:`secure.meter.CostMeter.totals_over_parties`)."""
    table = {name: {"seconds": cost.seconds, "bytes_sent": cost.bytes_sent} for name, cost in phases.items()}
    return {"seconds": sum(cost["seconds"] for cost in table.values()),
            "bytes_sent": sum(cost["bytes_sent"] for cost in table.values()), "phases": table}
