"""Privacy budgets that last across runs: accountants, a ledger at each party, the parties' agreement on a spend.
Threat model: a ledger protects a data holder against its own over-spending (the averaging attack); local to
each party.  Modules and models: docs/budget.md."""
from __future__ import annotations

from dp.budget.accountants import (ACCOUNTANTS, RELATIVE_TOLERANCE, Accountant, Budget, Spend, Totals,
                                   check_accountant, parse_budget, spend_rho, total_spent, would_exceed,
                                   would_exceed_totals, zcdp_to_epsilon)
from dp.budget.ledger import (ENVIRONMENT_VARIABLE, FORMAT, LEGACY_FORMAT, LOCK_TIMEOUT, BudgetExceeded, Entry, Ledger,
                              LedgerError, account_filename, dataset_key_of_file, dataset_key_of_name,
                              dataset_key_of_rows, default_ledger_directory, ledger_disabled, legacy_filename,
                              list_accounts, refusal_lines)

__all__ = ["Accountant", "ACCOUNTANTS", "RELATIVE_TOLERANCE", "Spend", "Budget", "parse_budget", "check_accountant",
           "spend_rho", "total_spent", "would_exceed", "would_exceed_totals", "Totals", "zcdp_to_epsilon",
           "ENVIRONMENT_VARIABLE", "FORMAT", "LEGACY_FORMAT", "LOCK_TIMEOUT", "LedgerError", "BudgetExceeded", "Entry",
           "Ledger", "account_filename", "legacy_filename", "dataset_key_of_file", "dataset_key_of_rows",
           "dataset_key_of_name", "default_ledger_directory", "ledger_disabled", "list_accounts", "refusal_lines"]
