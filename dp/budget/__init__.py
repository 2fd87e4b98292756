"""Privacy budgets that last across runs: accountants, a ledger at each party, the parties' agreement on a spend.
Threat model: a ledger protects a data holder against its own over-spending (the averaging attack); local to
each party.  The names the scenarios use, from its modules; modules and models: docs/budget.md."""
from __future__ import annotations

from dp.budget.accountants import (ACCOUNTANTS, Accountant, Budget, Spend, Totals, check_accountant, parse_budget,
                                   zcdp_to_epsilon)
from dp.budget.ledger import (BudgetExceeded, Ledger, LedgerError, dataset_key_of_file, dataset_key_of_name,
                              dataset_key_of_rows, default_ledger_directory, ledger_disabled, list_accounts)

__all__ = ["Accountant", "ACCOUNTANTS", "Spend", "Budget", "parse_budget", "check_accountant", "Totals",
           "zcdp_to_epsilon", "LedgerError", "BudgetExceeded", "Ledger", "dataset_key_of_file", "dataset_key_of_rows",
           "dataset_key_of_name", "default_ledger_directory", "ledger_disabled", "list_accounts"]
