"""Benchmark: how many privacy-budget spends the ledger takes per second (no MPC, one process).

Each spend is what a run does at one party: :meth:`dp.budget.ledger.Ledger.reserve` (one locked,
fsync-ed SQLite transaction, before any data would be shared) and, unless ``--reserve-only``,
:meth:`~dp.budget.ledger.Ledger.mark_released` (a second transaction, after the reveal).  The spends
are tiny (epsilon 1e-6 each, on a budget they never exhaust), so every one passes the check.  Then
the account is opened again from disk, which verifies every row (:func:`dp.budget.ledger.Ledger.open`).

Printed: the wall-clock seconds for ``--spends`` spends and the process's CPU seconds (the wall clock
is mostly fsync: it follows the disk, and on a busy machine the disk's other users), the milliseconds
per spend, and the seconds to reopen and verify the account.  The first ledger format (one JSON file
rewritten whole at every spend) needed 19 s for 1,000 spends and grew quadratically (about 1,900 s for
10,000); see docs in :mod:`dp.budget.ledger`.

Run it::

    python -m scenarios.bench_ledger                       # 10,000 spends in a temporary directory
    python -m scenarios.bench_ledger --spends 1000 --ledger /tmp/L --accountant zcdp

Options: ``--spends N`` (default 10000), ``--ledger DIR`` (default a new temporary directory, removed
afterwards; an existing account of the benchmark's dataset there is refused), ``--accountant
basic|zcdp``, ``--reserve-only`` (no ``mark_released``).  Exit 0, or 2 with one ``error:`` line.

Threat model: none; the benchmark reads no data and writes one account of its own.
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from dp.budget import ACCOUNTANTS, Accountant, Budget, Ledger, LedgerError, Spend, check_accountant
from scenarios.kit.cli import ScenarioParser, UsageError

__all__ = ["build_parser", "main", "measure"]

#: the benchmark's dataset name (its own account in the ledger directory)
DATASET = "name-bench-ledger"


def build_parser() -> ScenarioParser:
    """``--spends``, ``--ledger``, ``--accountant``, ``--reserve-only`` (a local tool: no MPyC)."""
    parser = ScenarioParser(prog="python -m scenarios.bench_ledger", runs_as="tool", description=__doc__)
    parser.add_argument("--spends", type=int, default=10_000, metavar="N", help="how many spends (default 10000)")
    parser.add_argument("--ledger", default=None, metavar="DIR", help="the ledger directory (default: a temporary one)")
    parser.add_argument("--accountant", choices=ACCOUNTANTS, default="basic", help="basic (default) or zcdp")
    parser.add_argument("--reserve-only", action="store_true", help="reserve only, no mark_released")
    return parser


def measure(directory: Path, *, spends: int, accountant: Accountant = "basic",
            reserve_only: bool = False) -> dict[str, float]:
    """Make ``spends`` spends on a new account in ``directory``; ``{"wall", "cpu", "reopen"}`` seconds."""
    budget = Budget(1.0, 1e-3) if accountant == "zcdp" else Budget(1.0)
    ledger = Ledger.create(directory, party=0, dataset=DATASET, budget=budget, accountant=accountant)
    spend = Spend(1e-6, mechanism="benchmark", what="a tiny spend")
    wall, cpu = time.perf_counter(), time.process_time()
    for number in range(spends):
        entry = ledger.reserve(spend, run_id=f"bench-{number}", scenario="scenarios.bench_ledger")
        if not reserve_only:
            ledger.mark_released(entry)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ledger.close()
    reopen = time.perf_counter()
    again = Ledger.open(directory, party=0, dataset=DATASET, budget=None, accountant=accountant)
    reopen = time.perf_counter() - reopen
    if len(again.spends) != spends:
        raise LedgerError(f"the account holds {len(again.spends)} spends, not {spends}")
    again.close()
    return {"wall": wall, "cpu": cpu, "reopen": reopen}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; 0, or 2 with one ``error:`` line."""
    try:
        options = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        if options.spends < 1:
            raise UsageError(f"--spends must be at least 1, got {options.spends}")
        temporary = options.ledger is None
        directory = Path(tempfile.mkdtemp(prefix="bench-ledger-")) if temporary else Path(options.ledger)
        try:
            numbers = measure(directory, spends=options.spends, accountant=check_accountant(options.accountant),
                              reserve_only=options.reserve_only)
        finally:
            if temporary:
                shutil.rmtree(directory, ignore_errors=True)
    except (UsageError, LedgerError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    what = "reserve" if options.reserve_only else "reserve + mark released"
    print(f"ledger: {options.spends} spends ({what}, {options.accountant} accountant) in {numbers['wall']:.2f} s wall, "
          f"{numbers['cpu']:.2f} s CPU ({1000 * numbers['wall'] / options.spends:.2f} ms per spend); reopening and "
          f"verifying the account: {numbers['reopen']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
