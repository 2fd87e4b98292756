"""Show, create or raise privacy budgets in a ledger: the local tool beside the jobs.

Every job spends from a ledger at each party: one account per party and dataset, in a ledger
directory (``--ledger DIR``; default ``$PRIVATE_USTATS_LEDGER``, else
``$XDG_DATA_HOME/private-ustats/ledger``, else ``~/.local/share/private-ustats/ledger``).  The jobs
never invent a budget and never raise one: this tool creates and raises them, on purpose, and shows
what was spent.

Run it::

    python -m scenarios.budget show                                  # every account: spent, left, history
    python -m scenarios.budget --ledger D show --data hospital.csv   # the accounts of one dataset
    python -m scenarios.budget --ledger D create --data hospital.csv --party 0 --budget 3
    python -m scenarios.budget --ledger D create --dataset-name trial7 --party 1 --budget 4:1e-6 --accountant zcdp
    python -m scenarios.budget --ledger D raise --data hospital.csv --party 0 --budget 5

Commands and options:
  --ledger DIR          the ledger directory (before or after the command; ``off`` is refused here)
  show                  every account in the directory (the default command), or those of one dataset:
    --data FILE         the dataset by its file (its key is the sha256 of the contents, as the jobs use)
    --dataset-name N    the dataset by a declared name (the jobs' --dataset-name)
    --party P           only party P's account
  create                a new account; refused if it exists (use raise)
    --data FILE | --dataset-name N, --party P   whose account
    --budget EPS[:DELTA]  the total privacy budget granted on the dataset
    --accountant A      basic (basic composition, the default) or zcdp (zero-concentrated DP, needs a
                        delta; Bun & Steinke 2016): the accountant every job on this account uses
  raise                 raise an account's budget (only upward: epsilon and delta may only grow); prints
                        the old and the new budget
    --data FILE | --dataset-name N, --party P, --budget NEW

Each spend shows its status: ``reserved`` (counted from the moment the parties agreed on it, before any
data was shared; a run that stopped after that point stays so), ``released`` (counted; the run finished
and revealed its release) or ``cancelled`` (not counted: another party refused before any data was shared).

Options are spelled out in full, as in the jobs: an abbreviation (``--led``) is refused with one line.

Exit codes: 0 done; 2 with one line ``error: ...`` for bad usage, a corrupt ledger file (refused,
never reset), an unwritable directory, a budget that is not raised.

Threat model: the tool runs no MPC and opens no connection; it reads and writes one party's own
ledger.  A ledger protects a data holder against its own over-spending on its own rows; it is local
to each party, and a party that deletes its ledger loses that protection (see :mod:`dp.budget.ledger`).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dp.budget import (ACCOUNTANTS, Budget, Ledger, LedgerError, dataset_key_of_file, dataset_key_of_name,
                       default_ledger_directory, ledger_disabled, list_accounts, parse_budget)
from scenarios.kit.cli import ScenarioParser, UsageError

__all__ = ["build_parser", "main", "show", "dataset_key"]


def _add_ledger(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--ledger", default=default, metavar="DIR",
                        help="the ledger directory (default: $PRIVATE_USTATS_LEDGER, else "
                             "$XDG_DATA_HOME/private-ustats/ledger, else ~/.local/share/private-ustats/ledger)")


def _add_dataset(parser: argparse.ArgumentParser, required: bool) -> None:
    which = parser.add_mutually_exclusive_group(required=required)
    which.add_argument("--data", default=None, metavar="FILE", help="the dataset by its file (sha256 of its contents)")
    which.add_argument("--dataset-name", default=None, metavar="N", help="the dataset by a declared name")


def build_parser() -> ScenarioParser:
    """The option parser: ``show`` (default), ``create``, ``raise`` (no MPyC options: a local tool)."""
    parser = ScenarioParser(prog="python -m scenarios.budget", runs_as="tool", description=__doc__)
    _add_ledger(parser, None)
    commands = parser.add_subparsers(dest="command", metavar="{show,create,raise}", parser_class=ScenarioParser)
    show_parser = commands.add_parser("show", help="spent, left and the history of every account (or of one)",
                                      runs_as="tool", description="Show spent, left and the history of accounts.")
    _add_ledger(show_parser, argparse.SUPPRESS)
    _add_dataset(show_parser, required=False)
    show_parser.add_argument("--party", type=int, default=None, metavar="P", help="only party P's account")
    for name, text in (("create", "create an account with a budget (refused if it exists)"),
                       ("raise", "raise an account's budget (only upward)")):
        sub = commands.add_parser(name, help=text, runs_as="tool", description=text[0].upper() + text[1:] + ".")
        _add_ledger(sub, argparse.SUPPRESS)
        _add_dataset(sub, required=True)
        sub.add_argument("--party", type=int, required=True, metavar="P", help="the party whose account it is")
        sub.add_argument("--budget", required=True, metavar="EPS[:DELTA]",
                         help="the total budget (create) or the new, larger one (raise)")
        if name == "create":
            sub.add_argument("--accountant", choices=ACCOUNTANTS, default="basic",
                             help="basic composition (default) or zcdp (needs a delta)")
    return parser


def check_option_words(parser: ScenarioParser, argv: Sequence[str]) -> None:
    """Refuse a long option that is none of the tool's (an abbreviation such as ``--led``) with the jobs'
    line, before argparse would take it for a stray word and report the next one as an invalid command.

    :raise UsageError: ``unknown option --led (did you mean --ledger? options must be spelled out in full)``.
    """
    parsers = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers.extend(action.choices.values())
    known = {option for each in parsers for action in each._actions for option in action.option_strings}
    for word in argv:
        if word == "--":
            return
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) > 2 and name not in known:
            helper = ScenarioParser(prog=parser.prog, runs_as="tool", add_help=False)
            for option in sorted(option for option in known if option.startswith("--")):
                helper.add_argument(option)
            raise UsageError(helper._unknown_option(name))


def dataset_key(options: argparse.Namespace) -> str | None:
    """The dataset key of ``--data FILE`` or ``--dataset-name N`` (``None`` if neither is given)."""
    if getattr(options, "data", None) is not None:
        return dataset_key_of_file(options.data)
    if getattr(options, "dataset_name", None) is not None:
        return dataset_key_of_name(options.dataset_name)
    return None


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _show_account(ledger: Ledger) -> None:
    spent, left = ledger.spent(), ledger.left()
    counted = sum(1 for entry in ledger.spends if entry.counted)
    terms = "" if ledger.accountant == "basic" else f" (zCDP, stated at delta {ledger.budget.delta:g})"
    print(f"account {ledger.path.name}: dataset {ledger.dataset}, party {ledger.party}, {ledger.accountant} accountant")
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


def show(directory: Path, dataset: str | None = None, party: int | None = None) -> int:
    """Print every account in ``directory`` (or those of ``dataset``, of ``party``); the number shown."""
    accounts = [Ledger.read(path) for path in list_accounts(directory)]
    chosen = [ledger for ledger in accounts if (dataset is None or ledger.dataset == dataset)
              and (party is None or ledger.party == party)]
    which = "" if dataset is None else f" for dataset {dataset}"
    which += "" if party is None else f" at party {party}"
    if not chosen:
        print(f"ledger {directory}: no account{which}")
        return 0
    print(f"ledger {directory}: {len(chosen)} account(s){which}")
    for ledger in chosen:
        _show_account(ledger)
    return len(chosen)


def _directory(options: argparse.Namespace) -> Path:
    chosen = default_ledger_directory() if options.ledger is None else Path(options.ledger)
    if ledger_disabled(chosen):
        raise UsageError("the ledger is off (--ledger off or PRIVATE_USTATS_LEDGER=off): give --ledger DIR")
    return chosen.expanduser()


def _parse_budget(text: str) -> Budget:
    try:
        return parse_budget(text)
    except ValueError as exc:
        raise UsageError(f"--budget: {exc}") from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; 0 on success, 2 with one ``error:`` line otherwise."""
    where = ""
    try:
        parser = build_parser()
        words = list(sys.argv[1:] if argv is None else argv)
        if not {"-h", "--help"} & set(words):  # help first, whatever else the line holds (as the jobs)
            check_option_words(parser, words)
        options = parser.parse_args(words)
        directory = _directory(options)
        command = options.command or "show"
        if command == "show":
            if options.command is not None and options.party is not None and options.party < 0:
                raise UsageError(f"--party expects a party index 0, 1, ..., got {options.party}")
            show(directory, dataset_key(options), getattr(options, "party", None))
            return 0
        if options.party < 0:
            raise UsageError(f"--party expects a party index 0, 1, ..., got {options.party}")
        where = f"party {options.party}: "
        budget = _parse_budget(options.budget)
        key = dataset_key(options)
        assert key is not None  # the group is required
        if command == "create":
            ledger = Ledger.create(directory, party=options.party, dataset=key, budget=budget,
                                   accountant=options.accountant)
            print(f"created {ledger.path}: budget {ledger.budget}, {ledger.accountant} accountant")
        else:
            path = directory / f"{key}.p{options.party}.json"
            if not path.exists():
                raise LedgerError(f"no account for dataset {key} in {directory}: "  # the line names the party
                                  f"create it with python -m scenarios.budget create")
            ledger = Ledger.read(path)
            old = ledger.raise_budget(budget)
            print(f"raised {ledger.path}: budget {old} -> {ledger.budget}")
        _show_account(ledger)
    except (UsageError, LedgerError) as exc:
        print(f"error: {where}{exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
