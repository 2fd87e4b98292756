"""Show, create or raise privacy budgets in a ledger: the local tool beside the jobs.

Every job spends from a ledger at each party (one account per party and dataset); the jobs never invent or
raise a budget: this tool creates and raises them, on purpose, and shows what was spent.  Run it::

    python -m scenarios.budget show                                  # every account: spent, left, history
    python -m scenarios.budget --ledger D show --data hospital.csv   # the accounts of one dataset
    python -m scenarios.budget --ledger D create --data 'site{pid}.csv' --party 0,1,2 --budget 3
    python -m scenarios.budget --ledger D create --dataset trial7 --party 1 --budget 4:1e-6 --accountant zcdp
    python -m scenarios.budget --ledger D raise --data 'site{pid}.csv' --party 0,1,2 --budget 5

Commands: ``show`` (default; ``--data FILE`` or ``--dataset NAME``, ``--party P[,P...]``), ``create`` and
``raise`` (``--data FILE | --dataset NAME``, ``--party``, ``--budget EPS[:DELTA]``; ``create`` also
``--accountant basic|zcdp``); ``--ledger DIR`` before or after the command.  Options are spelled out in full.
Exit 0 done; 2 with one line ``error: ...``.  The statuses, keys and formats: docs/command_line.md.

Threat model: no MPC, no connection; it reads and writes one party's own ledger, which protects a data holder
against its own over-spending (see :mod:`dp.budget.ledger`)."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dp.budget import (ACCOUNTANTS, Ledger, LedgerError, dataset_key_of_file, dataset_key_of_name,
                       dataset_key_of_rows, default_ledger_directory, ledger_disabled, list_accounts, parse_budget)
from scenarios.kit.cli import ScenarioParser, UsageError

__all__ = ["build_parser", "main", "show", "dataset_keys", "parse_parties"]


def _add_ledger(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--ledger", default=default, metavar="DIR",
                        help="the ledger directory (default: $PRIVATE_USTATS_LEDGER, else "
                             "$XDG_DATA_HOME/private-ustats/ledger, else ~/.local/share/private-ustats/ledger)")


def _add_dataset(parser: argparse.ArgumentParser, required: bool) -> None:
    which = parser.add_mutually_exclusive_group(required=required)
    which.add_argument("--data", default=None, metavar="FILE",
                       help="the dataset by its file (the digest of its parsed rows); {pid}: each party's index")
    which.add_argument("--dataset", "--dataset-name", dest="dataset_name", default=None, metavar="NAME",
                       help="the dataset by a declared name (the jobs' --dataset)")


def build_parser() -> ScenarioParser:
    parser = ScenarioParser(prog="python -m scenarios.budget", runs_as="tool", description=__doc__)
    _add_ledger(parser, None)
    commands = parser.add_subparsers(dest="command", metavar="{show,create,raise}", parser_class=ScenarioParser)
    show_parser = commands.add_parser("show", help="spent, left and the history of every account (or of one)",
                                      runs_as="tool", description="Show spent, left and the history of accounts.")
    _add_ledger(show_parser, argparse.SUPPRESS)
    _add_dataset(show_parser, required=False)
    show_parser.add_argument("--party", default=None, metavar="P[,P...]", help="only these parties' accounts")
    for name, text in (("create", "create an account with a budget (refused if it exists)"),
                       ("raise", "raise an account's budget (only upward)")):
        sub = commands.add_parser(name, help=text, runs_as="tool", description=text[0].upper() + text[1:] + ".")
        _add_ledger(sub, argparse.SUPPRESS)
        _add_dataset(sub, required=True)
        sub.add_argument("--party", required=True, metavar="P[,P...]",
                         help="the parties whose accounts they are (0,1,2: one per party, {pid} in --data)")
        sub.add_argument("--budget", required=True, metavar="EPS[:DELTA]",
                         help="the total budget (create) or the new, larger one (raise)")
        if name == "create":
            sub.add_argument("--accountant", choices=ACCOUNTANTS, default="basic",
                             help="basic composition (default) or zcdp (needs a delta)")
    return parser


def parse_parties(text: str | None) -> list[int] | None:
    """``--party P[,P...]`` -> the party indices (``None`` if not given); :raise UsageError: not an index."""
    if text is None:
        return None
    try:
        parties = [int(word) for word in str(text).split(",")]  # int() takes the spaces around a word
    except ValueError:
        parties = [-1]
    if min(parties) < 0:
        raise UsageError(f"--party expects a party index 0, 1, ... (or a list 0,1,2), got {text}")
    return sorted(set(parties))


def dataset_keys(options: argparse.Namespace, party: int | None) -> tuple[str, tuple[str, ...]] | None:
    """``(key, earlier keys)`` of ``--data FILE`` (``{pid}`` replaced by ``party``: the digest of its parsed rows,
    and the hash of its bytes for a first-format account) or ``--dataset NAME``; ``None`` if neither.
    :raise UsageError: ``{pid}`` in ``--data`` without a party."""
    if getattr(options, "data", None) is not None:
        if "{pid}" in options.data and party is None:
            raise UsageError("--data with {pid} names one file per party: give --party P[,P...]")
        path = options.data.replace("{pid}", str(party))
        return dataset_key_of_rows(path), (dataset_key_of_file(path),)
    if getattr(options, "dataset_name", None) is not None:
        return dataset_key_of_name(options.dataset_name), ()
    return None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _show_account(ledger: Ledger) -> None:
    spent, left = ledger.spent(), ledger.left()
    counted = sum(1 for entry in ledger.spends if entry.counted)
    terms = "" if ledger.accountant == "basic" else f" (zCDP, stated at delta {ledger.budget.delta:g})"
    old = " (first format: migrated when next used)" if ledger.legacy else ""
    print(f"account {ledger.path.name}: dataset {ledger.dataset}, party {ledger.party}, {ledger.accountant} "
          f"accountant{old}")
    print(f"  budget  epsilon {ledger.budget.epsilon:g}, delta {ledger.budget.delta:g}")
    print(f"  spent   epsilon {spent[0]:g}, delta {spent[1]:g}{terms} in {counted} run(s)")
    print(f"  left    epsilon {left[0]:g}, delta {left[1]:g}")
    for change in ledger.history:
        print(f"  {change.get('event', '?'):<7} {change.get('time', '?')}: epsilon {change.get('epsilon', 0):g}, "
              f"delta {change.get('delta', 0):g}")
    if not ledger.spends:
        print("  no spends")
        return
    header = ("#", "time (UTC)", "run id", "scenario", "epsilon", "delta", "rho", "mechanism", "what", "status")
    rows = [header] + [(str(entry.number), entry.time[:19], entry.run_id[:12], entry.scenario, _number(entry.epsilon),
                        _number(entry.delta), _number(entry.rho), entry.mechanism or "-", entry.what or "-",
                        entry.status) for entry in ledger.spends]
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def show(directory: Path, datasets: Sequence[str] | None = None, parties: Sequence[int] | None = None) -> int:
    """Print every account in ``directory`` (or those of ``datasets``, of ``parties``); the number shown.
    First-format accounts (not yet migrated) are shown as they are, marked."""
    accounts = [Ledger.read(path) for path in [*list_accounts(directory), *list_accounts(directory, legacy=True)]]
    chosen = [ledger for ledger in accounts if (datasets is None or ledger.dataset in datasets)
              and (parties is None or ledger.party in parties)]
    which = "" if datasets is None else f" for dataset {', '.join(dict.fromkeys(datasets))}"
    which += "" if parties is None else f" at party {', '.join(str(each) for each in parties)}"
    if not chosen:
        print(f"ledger {directory}: no account{which}")
        return 0
    print(f"ledger {directory}: {len(chosen)} account(s){which}")
    for ledger in chosen:
        _show_account(ledger)
    return len(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    where = ""
    try:
        parser = build_parser()
        words = list(sys.argv[1:] if argv is None else argv)
        if not {"-h", "--help"} & set(words):  # help first, whatever else the line holds (as the jobs)
            parser.refuse_unknown(words)
        options = parser.parse_args(words)
        directory = default_ledger_directory() if options.ledger is None else Path(options.ledger)
        if ledger_disabled(directory):
            raise UsageError("the ledger is off (--ledger off or PRIVATE_USTATS_LEDGER=off): give --ledger DIR")
        directory = directory.expanduser()
        command = options.command or "show"
        parties = parse_parties(getattr(options, "party", None))
        if command == "show":
            found_keys = [dataset_keys(options, party) for party in parties or (None,)]
            show(directory, None if found_keys[0] is None else [key for key, _ in filter(None, found_keys)], parties)
            return 0
        assert parties is not None  # required
        where = f"party {parties[0]}: " if len(parties) == 1 else f"parties {','.join(map(str, parties))}: "
        try:
            budget = parse_budget(options.budget)
        except ValueError as exc:
            raise UsageError(f"--budget: {exc}") from None
        for party in parties:
            where = f"party {party}: "
            found = dataset_keys(options, party)
            assert found is not None  # the group is required
            key, earlier = found
            if command == "create":
                ledger = Ledger.create(directory, party=party, dataset=key, budget=budget,
                                       accountant=options.accountant, legacy=earlier)
                print(f"created {ledger.path}: budget {ledger.budget}, {ledger.accountant} accountant")
            else:
                existing = Ledger.existing(directory, party=party, dataset=key, legacy=earlier)
                if existing is None:
                    raise LedgerError(f"no account for dataset {key} in {directory}: "  # the line names the party
                                      f"create it with python -m scenarios.budget create")
                ledger = existing
                old = ledger.raise_budget(budget)
                print(f"raised {ledger.path}: budget {old} -> {ledger.budget}")
            _show_account(ledger)
    except (UsageError, LedgerError) as exc:
        print(f"error: {where}{exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
