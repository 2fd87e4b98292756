"""Privacy budgets that last across runs: accountants and a ledger at each party.

- :mod:`dp.budget.accountants`  how spends compose: basic composition (Dwork & Roth 2014, Thm 3.16)
  or zCDP (Bun & Steinke 2016, Prop. 1.3, 1.4, Lemma 1.7), and whether one more spend fits a budget.
- :mod:`dp.budget.ledger`       one account (an SQLite database in WAL mode) per (party, dataset) in a
  ledger directory, keyed by a declared name or the digest of the parsed rows; each spend committed
  under SQLite's write lock before any data is shared; corrupt or edited files are refused, never
  reset; a refusal has a shared line (no key, path or figure) and a local one.
- :mod:`dp.budget.agreement`    the parties agree on a run's spend; :func:`~dp.budget.agreement.pure_budget`
  tells whether this party's budget is pure (the default noise then is pure-DP party noise).

Threat model: a ledger protects a data holder against its own over-spending (the averaging attack:
the same query answered until the mean of the noisy answers gives the rows away).  It is local to each
party and each party refuses on its own; it does not stop a party that deletes its own ledger.
Models: OpenDP odometers and privacy filters, Tumult Analytics sessions, diffprivlib's BudgetAccountant."""
from __future__ import annotations

from dp.budget.accountants import (ACCOUNTANTS, RELATIVE_TOLERANCE, Accountant, Budget, Spend, Totals,
                                   check_accountant, parse_budget, spend_rho, total_spent, would_exceed,
                                   would_exceed_totals, zcdp_to_epsilon)
from dp.budget.ledger import (ENVIRONMENT_VARIABLE, FORMAT, LEGACY_FORMAT, LOCK_TIMEOUT, BudgetExceeded, Entry, Ledger,
                              LedgerError, account_filename, dataset_key_of_file, dataset_key_of_name,
                              dataset_key_of_rows, default_ledger_directory, ledger_disabled, legacy_filename,
                              list_accounts, list_legacy_accounts, refusal_lines)

__all__ = ["Accountant", "ACCOUNTANTS", "RELATIVE_TOLERANCE", "Spend", "Budget", "parse_budget", "check_accountant",
           "spend_rho", "total_spent", "would_exceed", "would_exceed_totals", "Totals", "zcdp_to_epsilon",
           "ENVIRONMENT_VARIABLE", "FORMAT", "LEGACY_FORMAT", "LOCK_TIMEOUT", "LedgerError", "BudgetExceeded", "Entry",
           "Ledger", "account_filename", "legacy_filename", "dataset_key_of_file", "dataset_key_of_rows",
           "dataset_key_of_name", "default_ledger_directory", "ledger_disabled", "list_accounts",
           "list_legacy_accounts", "refusal_lines"]
