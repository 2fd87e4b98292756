"""The missing-value options shared by the data-reading scenarios: ``--missing refuse|fill`` and ``--fill C=V,...``.

Threat model: the policy and fill values are public and agreed; how many cells a party filled stays at that
party (docs/command_line.md)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from dp.umpc.report import local_note
from scenarios.kit.cli import UsageError, usage_errors
from scenarios.kit.datasets import declared_categories, declared_domains, declared_fills
from secure.intake import MISSING_POLICIES, ColumnSpec, MissingPolicy

__all__ = ["add_missing_arguments", "missing_policy", "parse_fills", "local_note"]


def add_missing_arguments(parser: Any) -> None:
    """Add ``--missing {refuse,fill}`` and ``--fill C=V,...`` (neither is a prefix of an MPyC option)."""
    parser.add_argument("--missing", choices=MISSING_POLICIES, help="a missing cell stops the run (refuse, the "
                        "default with --data) or takes the column's declared fill value (fill, the default with "
                        "embedded data: scenarios/data/domains.json)")
    parser.add_argument("--fill", action="append", metavar="C=V,...", help="declared public fill value per column "
                        "(in its domain or categories); turns on --missing fill; repeated --fill accumulate")


def parse_fills(text: str | Sequence[str] | None) -> dict[str, float | str]:
    """``age=55,BMI=25.5,region=north`` (one ``--fill`` or the list of every ``--fill`` given: they accumulate)
    -> ``{"age": 55.0, "BMI": 25.5, "region": "north"}``; a non-number stays a string; a column given two
    different values is refused.  :raise UsageError: with a one-line message."""
    fills: dict[str, float | str] = {}
    if not text:
        return fills
    for item in (item for part in ([text] if isinstance(text, str) else text) for item in part.split(",")):
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise UsageError(f"--fill expects COLUMN=VALUE[,COLUMN=VALUE...], got '{item}'")
        if not value.strip():
            raise UsageError(f"--fill expects a value in COLUMN=VALUE, got '{item}'")
        parsed: float | str
        try:
            parsed = float(value)
        except ValueError:
            parsed = value.strip()
        if name in fills and fills[name] != parsed:
            raise UsageError(f"--fill gives column '{name}' two values, {_shown(fills[name])} and {_shown(parsed)}: "
                             f"give one")
        fills[name] = parsed
    return fills


def _shown(value: float | str) -> str:
    return repr(value) if isinstance(value, str) else f"{value:g}"


def _misfit(spec: ColumnSpec, dataset: str, role: tuple[str, str] | None) -> str:
    """The line for an embedded column whose declaration does not fit the job's ``spec`` (public:
    declarations only).  ``role`` is ``(role, remedy)``, e.g. ``("score", "give --domain LO:HI")``."""
    kind, remedy = role if role is not None else ("", f"give --domain {spec.name}=LO:HI or --fill {spec.name}=V")
    categories = declared_categories(dataset).get(spec.name)
    domain = declared_domains(dataset).get(spec.name)
    if categories is not None:
        theirs = "categories " + "/".join(f"{c:g}" if isinstance(c, (int, float)) else str(c) for c in categories)
    else:
        theirs = "without a domain" if domain is None else f"numeric on [{float(domain[0]):g}, {float(domain[1]):g}]"
    if spec.categories is not None:
        return (f"column '{spec.name}' is not a {spec.describe_categories()} {kind or 'categorical'} column "
                f"(embedded data {dataset} declares it {theirs})" + (f": {remedy}" if role is not None else ""))
    ours = f"the {kind} domain" if kind else "the declared domain"
    return (f"{kind + ' ' if kind else ''}column '{spec.name}' is declared {theirs} in the embedded data {dataset}, "
            f"outside {ours} [{spec.lower:g}, {spec.upper:g}]: {remedy}")


def missing_policy(mode: str | None, fill: str | Sequence[str] | None, specs: Sequence[ColumnSpec], *,
                   dataset: str | None, roles: Mapping[str, tuple[str, str]] | None = None) -> MissingPolicy:
    """The agreed missing-value policy from ``--missing`` (``None``: fill for embedded data, refuse for ``--data``)
    and ``--fill``, checked against the declared ``specs``.  A fill value the embedded ``dataset`` declares that does
    not fit the job's column means the column does not fit the job: the line says so (``roles``: column -> (role,
    remedy) for that line).  :raise UsageError: a fill value outside its domain, ``--fill`` with refuse, a misfit."""
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
    if dataset is not None:
        for spec in specs:
            if spec.name in fills and spec.name not in given:
                try:
                    MissingPolicy("fill", ((spec.name, fills[spec.name]),)).check([spec])
                except ValueError:
                    raise UsageError(_misfit(spec, dataset, (roles or {}).get(spec.name))) from None
    with usage_errors():
        policy = MissingPolicy("fill", tuple(sorted(fills.items())))
        policy.check(specs)
    return policy
