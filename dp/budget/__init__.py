"""Privacy budgets that last across runs: accountants, a ledger at each party, the parties' agreement on a spend.
Threat model: a ledger protects a data holder against its own over-spending (the averaging attack); local to
each party.  Modules and models: docs/budget.md."""
from __future__ import annotations

from dp.budget import accountants, ledger
from dp.budget.accountants import *  # the package's names: the two modules' __all__
from dp.budget.ledger import *

__all__ = accountants.__all__ + ledger.__all__
