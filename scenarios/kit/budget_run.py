"""The privacy budget of a scenario run: the options every job takes and its spend request.

``--ledger DIR|off``, ``--budget EPS[:DELTA]``, ``--accountant basic|zcdp``, ``--dataset NAME``
(:func:`add_budget_arguments`); a job passes ``run_scenario(..., spend=...)`` a :class:`SpendRequest` built
here, and :func:`dp.budget.agreement.agree_spend` (the one implementation of the agreement, the scripting API's
too) reserves it at every party before any data is shared.  Keys, exemptions, pure budgets and settling:
docs/command_line.md.  Threat model: as :mod:`dp.budget.agreement` -- passive, static, ``t < m/2``; only
public values cross.
"""
from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any

from dp.budget.accountants import ACCOUNTANTS, Accountant, Budget, Spend, parse_budget
from dp.budget.agreement import Reservation, SpendRequest
from scenarios.kit.cli import UsageError

__all__ = ["BudgetOptions", "SpendRequest", "Reservation", "add_budget_arguments", "budget_options",
           "spend_request", "pure_budget_of", "settle_spend", "embedded_file", "EMBEDDED_NOTE", "MPC_TRUNCATION_DELTA"]

#: the output line of a run on embedded public data without --ledger/--budget
EMBEDDED_NOTE = "embedded public data: no budget kept; give --ledger/--budget to keep one"

#: the in-MPC discrete Laplace sampler's truncation bound per released sum (``delta_s``, :mod:`dp.secret_noise`)
MPC_TRUNCATION_DELTA = 2.0 ** -40


@dataclass(frozen=True)
class BudgetOptions:
    """The budget options of one party: ``--ledger`` (a directory, ``off``, or ``None`` for the default),
    ``--budget`` parsed, ``--accountant``, ``--dataset``; never compared across parties."""

    ledger: str | None = None
    budget: Budget | None = None
    accountant: Accountant = "basic"
    dataset_name: str | None = None

    @property
    def asks_for_ledger(self) -> bool:
        """Whether the user asked to keep a budget (which makes embedded data non-exempt)."""
        return (self.ledger is not None and self.ledger.strip().lower() != "off") or self.budget is not None \
            or self.dataset_name is not None


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
    """The budget options from parsed arguments; :raise UsageError: a bad ``--budget``, an empty ``--ledger`` or
    ``--dataset-name``."""
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
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", f"{name}.csv.gz")


def pure_budget_of(budget: BudgetOptions, *, data: str | None, embedded: str | None = None,
                   exempt: str | None = None) -> bool:
    """Whether this party's run would spend from a pure-DP budget (``--budget`` without a delta, or this party's
    existing account of delta 0), to choose the default noise when the options are parsed; the same test as
    :func:`dp.budget.agreement.pure_budget`.  ``data``: ``--data`` or ``None`` for ``embedded``; ``exempt``: as
    :func:`spend_request`."""
    from dp.budget.agreement import pure_budget

    if exempt is None and data is None and not budget.asks_for_ledger:
        return False  # embedded public data: no budget kept
    if budget.budget is not None:
        return budget.budget.delta == 0
    if exempt is not None or (budget.ledger is not None and budget.ledger.strip().lower() == "off"):
        return False
    from mpyc.runtime import mpc

    data_file = data if data is not None else (embedded_file(embedded) if embedded is not None else None)
    return pure_budget(party=int(mpc.pid), budget=None, ledger=budget.ledger, dataset_name=budget.dataset_name,
                       data_file=data_file)


def spend_request(budget: BudgetOptions, spend: Spend, *, scenario: str, data: str | None,
                  embedded: str | None = None, exempt: str | None = None) -> SpendRequest:
    """The request of one run: the spend, and the account it comes from at this party (``data``: ``--data`` with
    ``{pid}`` kept, or ``None`` for the ``embedded`` dataset; ``exempt``: why no budget is kept whatever the options)."""
    if exempt is None and data is None and not budget.asks_for_ledger:
        exempt = EMBEDDED_NOTE
    data_file = data if data is not None else (embedded_file(embedded) if embedded is not None else None)
    return SpendRequest(spend=spend, scenario=scenario, data_file=data_file, dataset_name=budget.dataset_name,
                        budget=budget.budget, ledger=budget.ledger, accountant=budget.accountant, exempt=exempt)



def settle_spend(delta: float) -> dict[str, Any]:
    """After the reveal, at every party: settle the job's ledger entry down to the ``delta`` its release states
    (:func:`dp.budget.agreement.settle_active`); the record's keys ``delta_reserved`` and ``ledger_delta``."""
    from dp.budget.agreement import settle_active

    settled = settle_active(delta)
    return {} if settled is None else settled.record()
