"""The privacy-budget options every job takes, handed to its family's ``release``, which spends.

``--ledger DIR|off``, ``--budget EPS[:DELTA]``, ``--accountant basic|zcdp``, ``--dataset NAME``
(:func:`add_budget_arguments`); :meth:`BudgetOptions.account` gives the ledger keywords of ``release``, which
reserves the spend at every party before any data is shared (:mod:`dp.budget.spending`).  Keys, exemptions, pure
budgets and settling: docs/command_line.md."""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from dp.budget.accountants import ACCOUNTANTS, Accountant, Budget, parse_budget
from dp.budget.agreement import pure_budget
from dp.budget.spending import EMBEDDED_DATA
from scenarios.kit.cli import UsageError

__all__ = ["BudgetOptions", "add_budget_arguments", "budget_options", "pure_budget_of", "embedded_file"]


@dataclass(frozen=True)
class BudgetOptions:
    """The budget options of one party: ``--ledger`` (a directory, ``off``, or ``None`` for the default),
    ``--budget`` parsed, ``--accountant``, ``--dataset``; never compared across parties."""

    ledger: str | None = None
    budget: Budget | None = None
    accountant: Accountant = "basic"
    dataset_name: str | None = None

    def account(self, data: str | None, embedded: str = "framingham") -> dict[str, Any]:
        """The ledger keywords of a family's ``release``: these options and ``--data`` or the ``embedded`` file."""
        return {"ledger": self.ledger, "budget": self.budget, "dataset_name": self.dataset_name,
                "accountant": self.accountant, "data_file": data if data is not None else embedded_file(embedded)}


def add_budget_arguments(parser: argparse.ArgumentParser) -> None:
    """``--ledger DIR|off``, ``--budget EPS[:DELTA]``, ``--accountant basic|zcdp``, ``--dataset NAME``."""
    parser.add_argument("--ledger", default=None, metavar="DIR|off",
                        help="this party's privacy-budget ledger (default: the per-user data directory); off: none")
    parser.add_argument("--budget", default=None, metavar="EPS[:DELTA]",
                        help="total budget of a new account (an existing account keeps its own)")
    parser.add_argument("--accountant", choices=ACCOUNTANTS, default="basic",
                        help="how spends compose: basic (sum) or zcdp (pure eps as rho = eps^2/2)")
    parser.add_argument("--dataset", "--dataset-name", dest="dataset_name", default=None, metavar="NAME",
                        help="the account's dataset by a declared name (default: the digest of the data file's "
                             "parsed rows, which a re-saved file keeps)")


def budget_options(args: argparse.Namespace) -> BudgetOptions:
    """The budget options from parsed arguments; :raise UsageError: a bad ``--budget``, an empty name or path."""
    budget = None
    if args.budget is not None:
        try:
            budget = parse_budget(args.budget)
        except ValueError as exc:
            raise UsageError(f"--budget: {exc}") from None
    if args.ledger is not None and not args.ledger.strip():
        raise UsageError("--ledger expects a directory or 'off', got an empty value")
    if args.dataset_name is not None and not args.dataset_name.strip():
        raise UsageError("--dataset expects a name, got an empty value")
    return BudgetOptions(ledger=args.ledger, budget=budget, accountant=args.accountant,
                         dataset_name=args.dataset_name)


def embedded_file(name: str) -> str:
    """The file of an embedded dataset (``scenarios/data/<name>.csv.gz``): the key of its account."""
    return os.path.join(EMBEDDED_DATA, f"{name}.csv.gz")


def pure_budget_of(budget: BudgetOptions, *, data: str | None, embedded: str | None = None) -> bool:
    """Whether this party's run would spend from a pure-DP budget (``--budget`` without a delta, or this party's
    existing account of delta 0), to choose the default noise when the options are parsed; the same test as
    :func:`dp.budget.agreement.pure_budget`.  ``data``: ``--data`` or ``None`` for ``embedded``."""
    if budget.budget is not None:
        return budget.budget.delta == 0
    ledger_given = budget.ledger is not None and budget.ledger.strip().lower() != "off"
    if data is None and not ledger_given and budget.dataset_name is None:
        return False  # embedded public data and no budget asked for: none kept
    from mpyc.runtime import mpc

    data_file = data if data is not None else (embedded_file(embedded) if embedded is not None else None)
    return pure_budget(party=int(mpc.pid), budget=None, ledger=budget.ledger, dataset_name=budget.dataset_name,
                       data_file=data_file)  # a ledger that is off: not pure
