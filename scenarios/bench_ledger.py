"""Benchmark: how many privacy-budget spends the ledger takes per second (no MPC, one process).

Each spend is a run's at one party: ``reserve`` and, unless ``--reserve-only``, ``mark_released`` of
:class:`dp.budget.ledger.Ledger`; then the account is reopened and verified (docs/benchmarks.md).  Run it::

    python -m scenarios.bench_ledger                       # 10,000 spends in a temporary directory
    python -m scenarios.bench_ledger --spends 1000 --ledger /tmp/L --accountant zcdp

Exit 0, or 2 with one ``error:`` line.  Threat model: none; it reads no data and writes one account of its own."""
from __future__ import annotations

import contextlib
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from dp.budget import ACCOUNTANTS, Accountant, Budget, Ledger, LedgerError, Spend, check_accountant
from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.measure import at_least, timed

__all__ = ["build_parser", "main", "measure"]

#: the benchmark's dataset name (its own account in the ledger directory)
DATASET = "name-bench-ledger"


def build_parser() -> ScenarioParser:
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
    again, reopen = timed(lambda: Ledger.open(directory, party=0, dataset=DATASET, budget=None, accountant=accountant))
    if len(again.spends) != spends:
        raise LedgerError(f"the account holds {len(again.spends)} spends, not {spends}")
    again.close()
    return {"wall": wall, "cpu": cpu, "reopen": reopen}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        options = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        at_least(options.spends, "--spends", 1)
        folder = (tempfile.TemporaryDirectory(prefix="bench-ledger-", ignore_cleanup_errors=True)
                  if options.ledger is None else contextlib.nullcontext(options.ledger))
        with folder as directory:
            numbers = measure(Path(directory), spends=options.spends, accountant=check_accountant(options.accountant),
                              reserve_only=options.reserve_only)
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
