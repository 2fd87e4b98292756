"""Option formats shared by the jobs: ``--domain C=LO:HI[:BITS[:STEP]],...``, ``--columns A,B,...``, the option
groups of every job that reads rows, among them the campaign's servers' ``--owners INBOX --campaign FILE
--server-key KEY`` (docs/owners.md), ``--rtt`` and the deprecated aliases of renamed options
(docs/command_line.md).  Threat model: none (public parameters only)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from scenarios.kit.budget_run import add_budget_arguments
from scenarios.kit.cli import UsageError
from scenarios.kit.missing_values import add_missing_arguments

__all__ = ["parse_columns", "parse_domains", "parse_steps", "domain_of", "add_renamed_option", "add_data_arguments",
           "add_owner_arguments", "owner_intake", "check_rtt"]


def add_data_arguments(parser: argparse.ArgumentParser, *, owners: bool = True) -> None:
    """The options of a job that reads rows: ``--missing``/``--fill``, the budget's (:mod:`scenarios.kit.budget_run`)
    and, with ``owners``, the campaign's servers' (:func:`add_owner_arguments`)."""
    add_missing_arguments(parser)
    add_budget_arguments(parser)
    if owners:
        add_owner_arguments(parser)


def add_owner_arguments(parser: argparse.ArgumentParser) -> None:
    """The owners' option group (MPyC's own options are no prefix of these: docs/command_line.md)."""
    group = parser.add_argument_group("owners' uploads (the parties are the campaign's servers; not with --data)")
    group.add_argument("--owners", metavar="INBOX", help="this server's inbox folder, '{pid}' for its index")
    group.add_argument("--campaign", metavar="FILE", help="the public campaign file: columns, domains, servers")
    group.add_argument("--server-key", metavar="KEY", help="this server's private key file, '{pid}' for its index")


def owner_intake(args: argparse.Namespace, columns: Sequence[str]) -> tuple[Any, list[Any]]:
    """``(Owners, the campaign's declarations of columns)`` (:class:`dp.umpc.owners.Owners`), or ``(None, [])``
    without ``--owners``.  :raise UsageError: one option without the others, with ``--data``, a bad campaign file,
    a column it does not declare."""
    given = [name for name in ("owners", "campaign", "server_key") if getattr(args, name) is not None]
    if not given:
        return None, []
    if len(given) < 3 or getattr(args, "data", None) is not None:
        raise UsageError("--owners, --campaign and --server-key go together, without --data")
    from dp.umpc.owners import Owners

    try:
        owners = Owners(campaign=args.campaign, inbox=args.owners, key=args.server_key, say=print)  # refusals
    except (ValueError, OSError) as exc:
        raise UsageError(f"--campaign: {exc}") from None
    declared = {spec.name: spec for spec in owners.plan.columns}
    if unknown := [name for name in columns if name not in declared]:
        raise UsageError(f"--columns {','.join(unknown)}: not in the campaign (it declares {','.join(declared)})")
    return owners, [declared[name] for name in columns]


def check_rtt(rtt: float) -> None:
    """:raise UsageError: ``--rtt`` not a round-trip time in ``[0, 60000]`` ms (NaN included)."""
    if not 0 <= rtt <= 60000:
        raise UsageError(f"--rtt must be a round-trip time in milliseconds in [0, 60000], got {rtt:g}")


def parse_columns(text: str, *, expected: int | None = None, names: str = "COLUMN,...") -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``; :raise UsageError: an empty name or not ``expected`` columns (as ``names``)."""
    columns = [column.strip() for column in text.split(",")]
    if any(not column for column in columns) or (expected is not None and len(columns) != expected):
        raise UsageError(f"--columns expects {names}, got '{text}'")
    return columns


def parse_domains(text: str | None, *, single: str | None = None) -> dict[str, tuple[float, float, int | None]]:
    """``C=LO:HI[:BITS],...`` -> ``{C: (LO, HI, BITS or None)}`` (``single``: the one column a bare ``LO:HI``
    declares); :raise UsageError: a malformed item."""
    return {name: (low, high, bits) for name, (low, high, bits, _) in _domain_items(text, single)}


def parse_steps(text: str | None, *, single: str | None = None) -> dict[str, float]:
    """``{C: STEP}`` of the ``--domain`` items that declare a recording resolution; :raise UsageError: one line."""
    steps: dict[str, float] = {}
    for name, (_, _, _, step) in _domain_items(text, single):
        if step is not None and not step > 0:
            raise UsageError(f"--domain step of column '{name}' must be positive, got {step:g}")
        if step is not None:
            steps[name] = step
    return steps


def _domain_items(text: str | None, single: str | None) -> list[tuple[str, tuple[float, float, int | None,
                                                                                 float | None]]]:
    """``C=LO:HI[:BITS[:STEP]]`` items as ``(C, (LO, HI, BITS or None, STEP or None))``."""
    items: list[tuple[str, tuple[float, float, int | None, float | None]]] = []
    if not text:
        return items
    expected = "COLUMN=LOW:HIGH[:BITS[:STEP]]" + (" (or LOW:HIGH[:BITS[:STEP]] for the one column)" if single else "")
    for item in text.split(","):
        name, equals, bounds = item.partition("=")
        if not equals:
            name, bounds = single or "", item
        parts = bounds.split(":")
        if not name.strip() or len(parts) not in (2, 3, 4):
            raise UsageError(f"--domain expects {expected}, got '{item}'")
        try:
            low, high = float(parts[0]), float(parts[1])
            bits = int(parts[2]) if len(parts) >= 3 and parts[2].strip() else None
            step = float(parts[3]) if len(parts) == 4 else None
        except ValueError:
            raise UsageError(f"--domain expects numbers in {expected}, got '{item}'") from None
        items.append((name.strip(), (low, high, bits, step)))
    return items


def domain_of(domains: dict[str, tuple[float, float, int | None]], column: str,
              allowed: Sequence[str]) -> tuple[float, float, int | None] | None:
    """The declared domain of ``column``; a domain for a column not in ``allowed`` is refused."""
    if unknown := [name for name in domains if name not in allowed]:
        raise UsageError(f"--domain names column '{unknown[0]}', which takes no domain here "
                         f"(the domain is of: {', '.join(allowed)})")
    return domains.get(column)


class _RenamedOption(argparse.Action):
    """An old option name: stores into the new option's destination and says, once, on stderr, that it is
    deprecated (the run goes on: an old command line still works)."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new: str, **kwargs: Any) -> None:
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"warning: {option_string} is deprecated: use {self.new} (the same option in every job)",
              file=sys.stderr, flush=True)
        setattr(namespace, self.dest, values)


def add_renamed_option(parser: argparse.ArgumentParser, name: str, old: str, **kwargs: Any) -> None:
    """Add ``name`` (with ``kwargs``, as ``add_argument``) and ``old`` as its deprecated alias: the same value,
    one ``warning:`` line on stderr when used, left out of the help's option list."""
    parser.add_argument(name, **kwargs)
    dest = name.lstrip("-").replace("-", "_")
    typed = {"type": kwargs["type"]} if "type" in kwargs else {}
    parser.add_argument(old, dest=dest, action=_RenamedOption, new=name, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS, **typed)
