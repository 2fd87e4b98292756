"""The privacy budget of a scenario run: the options every job takes, and the agreement step.

Every job spends from a ledger at each party (docs/design.md, "Noise"; :mod:`dp.budget`): one account per
party and dataset, the spend agreed by all parties before any data is shared and written to disk
(write-ahead, fsync, atomic replace, under a file lock) before the reveal.  A job passes
``run_scenario(..., spend=lambda options: SpendRequest | None)``; :func:`scenarios.kit.cli.run_scenario`
calls :func:`dp.budget.agreement.agree_spend` on it after the parameter check and before the job's
body, and prints the budget line (:meth:`dp.budget.agreement.Reservation.describe`) after the job's
own output.  That function is the one implementation of the agreement: the scripting API
(:func:`dp.umpc.scripting.release`) uses it too.  This module builds the requests.

Options every job takes (:func:`add_budget_arguments`):

- ``--ledger DIR|off``: this party's ledger directory (default ``$PRIVATE_USTATS_LEDGER``, else the
  per-user data directory ``$XDG_DATA_HOME/private-ustats/ledger`` or
  ``~/.local/share/private-ustats/ledger``); ``off`` keeps no budget (and says so);
- ``--budget EPS[:DELTA]``: the total of a new account (an existing account keeps its own: raise it
  on purpose with ``python -m scenarios.budget raise``);
- ``--accountant basic|zcdp``: how spends compose (default basic; every party must use the same);
- ``--dataset NAME`` (also spelled ``--dataset-name``): the account's dataset by a declared name.
  Without it the account is keyed by the digest of the parsed rows of the party's data file
  (:func:`dp.budget.ledger.dataset_key_of_rows`): re-saving the file (CRLF line ends, a trailing
  newline, quoting, spaces, reordered rows or columns) keeps the account, a changed value opens a new
  one.  A dataset whose rows change (appended rows, corrections) keeps one account only by a name.

A pure budget (no delta) -- ``--budget EPS``, or without ``--budget`` an existing account of delta 0 --
makes the jobs' default noise party-drawn, pure epsilon-DP noise (the in-MPC sampler's truncation
costs a delta such an account cannot pay): :func:`pure_budget_of`, read when the options are parsed.

The spend agreed before the run is an upper bound (the comparison leakage depends on ``n``); after the
reveal the job settles its entry to the delta its release states (:func:`settle_spend`, at every party:
it only lowers the charge) and writes ``delta_reserved`` and ``ledger_delta`` beside ``delta`` in its record.

Embedded (public) datasets are exempt unless ``--ledger``, ``--budget`` or ``--dataset`` is given
(then the account is keyed by the embedded file's rows); ``--data`` without an account and without
``--budget`` stops every party with the ledger's one line, and this party's note prints the exact
command that creates it (the job's own command line with ``--budget EPS`` added, or the ledger tool's
command).  No default budget is invented.

Threat model: as :mod:`dp.budget.agreement` -- passive, static, ``t < m/2``; only public values cross.
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
    """The budget options of one party (never compared across parties: each ledger is its party's own).

    :param ledger: ``--ledger`` (a directory or ``off``), or ``None`` for the default.
    :param budget: ``--budget`` parsed, or ``None``.
    :param accountant: ``--accountant``.
    :param dataset_name: ``--dataset`` (or ``--dataset-name``), or ``None``.
    """

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
    """The budget options from parsed arguments.

    :raise UsageError: a bad ``--budget`` (``budget epsilon must be positive and finite, got -1``),
        an empty ``--ledger`` or ``--dataset-name``.
    """
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
    """Whether this party's run would spend from a pure-DP budget: ``--budget`` without a delta, or, without
    ``--budget``, this party's existing account (in ``--ledger`` or the default ledger) of delta 0.

    Called when the options are parsed (MPyC has started: the party index is known), to choose the
    default noise (:func:`dp.noise_defaults.default_noise`, ``pure_budget=``); the same test as the
    scripting API's (:func:`dp.budget.agreement.pure_budget`).  Nothing is written.  Parties whose
    accounts differ choose different noise, and the parameter agreement then stops the run with one line.

    :param data: ``--data`` (``{pid}`` kept), or ``None`` for embedded data.
    :param embedded: the embedded dataset's name when ``data`` is ``None``.
    :param exempt: as :func:`spend_request`.
    """
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
    """The request of one run: the spend, and the account it comes from at this party.

    :param data: ``--data`` (``{pid}`` kept: replaced by each party), or ``None`` for embedded data.
    :param embedded: the embedded dataset's name (``framingham``) when ``data`` is ``None``.
    :param exempt: a reason this run keeps no budget whatever the options (experiments on embedded data).
    """
    if exempt is None and data is None and not budget.asks_for_ledger:
        exempt = EMBEDDED_NOTE
    data_file = data if data is not None else (embedded_file(embedded) if embedded is not None else None)
    return SpendRequest(spend=spend, scenario=scenario, data_file=data_file, dataset_name=budget.dataset_name,
                        budget=budget.budget, ledger=budget.ledger, accountant=budget.accountant, exempt=exempt)



def settle_spend(delta: float) -> dict[str, Any]:
    """After the reveal, at every party: settle the running job's ledger entry to ``delta``, the delta its
    release states (:func:`dp.budget.agreement.settle_active`: lowered from the reservation, never raised),
    and return the record's keys ``delta_reserved`` and ``ledger_delta`` (none if the job reserved nothing).
    The budget line printed after the job's output then shows the settled spend."""
    from dp.budget.agreement import settle_active

    settled = settle_active(delta)
    return {} if settled is None else settled.record()
