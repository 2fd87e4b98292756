"""The options of a job whose parties are a campaign's servers computing from owners' uploads (docs/owners.md):
``--owners INBOX --campaign FILE --server-key KEY``, each with ``{pid}`` for this server's, in place of ``--data``."""
from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from scenarios.kit.cli import UsageError

__all__ = ["add_owner_arguments", "owner_intake"]


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
