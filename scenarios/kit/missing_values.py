"""The missing-value options shared by the data-reading scenarios: ``--missing`` and ``--fill``.

``--missing refuse`` (the default for a user's ``--data``): a missing cell stops the run at every
party with one line naming the party and the column (no count, no line, no value is shared).
``--missing fill --fill C=V,...``: a missing cell of column ``C`` takes the declared public value
``V``, which must lie in ``C``'s declared domain (or category list).  The embedded data fills by
default with the values declared in ``scenarios/data/domains.json`` (``fill``; see ``DATA.md``).

Threat model (DESIGN): the policy and the fill values are public parameters, agreed by all parties;
the number of cells a party filled stays at that party (it may print it locally).  With fill, n is
the number of rows (public) and DP holds under replace-one adjacency.  Dropping incomplete rows is
not offered: n would depend on the data.
"""
from __future__ import annotations

from typing import Any, Sequence

from scenarios.kit.cli import UsageError
from secure.intake import MISSING_POLICIES, ColumnSpec, MissingPolicy

__all__ = ["add_missing_arguments", "missing_policy", "parse_fills", "describe_policy", "local_note"]


def add_missing_arguments(parser: Any) -> None:
    """Add ``--missing {refuse,fill}`` and ``--fill C=V,...`` (neither is a prefix of an MPyC option)."""
    parser.add_argument("--missing", choices=MISSING_POLICIES, default=None)
    parser.add_argument("--fill", default=None)


def parse_fills(text: str | None) -> dict[str, float | str]:
    """``age=55,BMI=25.5,region=north`` -> ``{"age": 55.0, "BMI": 25.5, "region": "north"}``.

    A value that is not a number stays a string: the fill value of a column of string categories
    (checked against the column's declaration by :meth:`secure.intake.MissingPolicy.check`).

    :raise UsageError: with a one-line message.
    """
    fills: dict[str, float | str] = {}
    if not text:
        return fills
    for item in text.split(","):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--fill expects COLUMN=VALUE[,COLUMN=VALUE...], got '{item}'")
        if not value.strip():
            raise UsageError(f"--fill expects a value in COLUMN=VALUE, got '{item}'")
        try:
            fills[name] = float(value)
        except ValueError:
            fills[name] = value.strip()
    return fills


def missing_policy(mode: str | None, fill: str | None, specs: Sequence[ColumnSpec], *,
                   dataset: str | None) -> MissingPolicy:
    """The agreed missing-value policy from the options.

    :param mode: ``--missing`` (``None``: fill for embedded data, refuse for ``--data``).
    :param fill: ``--fill`` text; with embedded data it overrides the declared fill values.
    :param specs: the declared columns (domains, category lists) the fill values are checked against.
    :param dataset: the embedded dataset, ``None`` for a user's ``--data``.
    :raise UsageError: a fill value outside its domain, a column without one, ``--fill`` with refuse.
    """
    from scenarios.kit.datasets import declared_fills

    given = parse_fills(fill)
    chosen = mode or ("fill" if dataset is not None or given else "refuse")
    if chosen == "refuse":
        if given:
            raise UsageError("--fill declares fill values, but --missing refuse uses none: give --missing fill")
        return MissingPolicy()
    fills: dict[str, float | str] = {spec.name: value for spec in specs
                                     if (value := declared_fills(dataset).get(spec.name)) is not None} \
        if dataset is not None else {}
    fills.update(given)
    try:
        policy = MissingPolicy("fill", tuple(sorted(fills.items())))
        policy.check(specs)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return policy


def describe_policy(policy: MissingPolicy) -> str:
    """One line for the printed release: which policy ran (no count)."""
    if policy.mode == "refuse":
        return "refused (none found)"
    return "filled with declared values " + ", ".join(
        f"{name}={value}" if isinstance(value, str) else f"{name}={value:g}" for name, value in policy.fills)


def local_note(*, filled: int, clipped: int | None = None) -> str:
    """This party's own counts, said to be local (they are never shared nor written to the record)."""
    parts = [f"{filled} missing value(s) filled"]
    if clipped is not None:
        parts.append(f"{clipped} value(s) clipped to the domain")
    return "  at this party, not shared: " + ", ".join(parts)
