"""Freeze drills: party 1 stops answering (``SIGSTOP``) on entering a phase of ``ustat``, ``ecdf`` or ``rank_auc``;
both survivors must stop within the silence limit plus a margin, one line each, nothing released (docs/drills.md).
Run it (three local parties of its own, like :mod:`scenarios.drills.faults`, which runs these cases too)::

    python -m scenarios.drills.freeze --quick --json freeze.json

Threat model drilled: passive, static, ``t < m/2``; a party alive but silent ends the run for the others within
a bounded silence limit, in every phase including shutdown, never a hang."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from scenarios.drills.harness import (FULL_ROWS, HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER, KENDALL_ARGS, QUICK_ROWS,
                                      RESULT_NAME, _LOST, _ORDER, _SILENT, _SILENT_PHASES, DrillOptions, DrillResult,
                                      print_notes, number, drill_main, drill_row, format_table, framingham_columns,
                                      parse_drill_argv, party_directory, survivor_phases, victim_drill)

__all__ = ["freeze_drill", "run_freeze_drills", "print_freeze_report", "FREEZE_CASES", "FULL_EXTRA_FREEZE_CASES",
           "FREEZE_LIMIT_QUICK", "FREEZE_LIMIT_FULL", "FREEZE_MARGIN_SECONDS", "FREEZE_WORKERS", "JOBS"]

#: freeze cases: (scenario, phase at whose entry party 1 sends itself SIGSTOP)
FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "intake"), ("ustat", "seed"), ("ustat", "kernel"), ("ustat", "noise"), ("ustat", "reveal"),
    ("ustat", "shutdown"), ("ustat histogram", "histogram"), ("ecdf", "noise"), ("rank_auc", "sort"))
FULL_EXTRA_FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "parameter check"), ("ustat histogram", "sums"), ("ustat sort", "sort"), ("ecdf", "shutdown"),
    ("rank_auc", "shutdown"))
#: --silence-limit of every party in the freeze drills (quick: short, to keep ``make drills`` short)
FREEZE_LIMIT_QUICK = 10.0
FREEZE_LIMIT_FULL = 60.0
#: the issue's bound on the survivors' exit after a freeze: the silence limit plus this
FREEZE_MARGIN_SECONDS = 10.0
#: freeze cases run at once (a frozen run mostly waits): every quick case in one wave
FREEZE_WORKERS = len(FREEZE_CASES)
_SORTED = ("parameter check", "intake", "sort", "noise", "reveal", "shutdown")
#: per drilled job: the module it runs, its arguments, the phases a run enters in order, those with no message
JOBS: dict[str, tuple[str, list[str], tuple[str, ...], tuple[str, ...]]] = {
    "ustat": ("ustat", KENDALL_ARGS, _ORDER[1:], _SILENT_PHASES),
    "ustat histogram": ("ustat", HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER[1:], ()),
    "ustat sort": ("ustat", ["--stat", "gini", "--columns", "sysBP", "--pairs", "all", "--domain", "sysBP=80:300:8",
                             "--path", "sort"], _SORTED, ()),
    "ecdf": ("ecdf", ["--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "64", "--smooth", "none",
                      "--curve", "curve.csv"], ("parameter check", "intake", "noise", "reveal", "shutdown"), ()),
    "rank_auc": ("rank_auc", ["--columns", "sysBP,TenYearCHD", "--domain", "80:300:8", "--path", "sort"], _SORTED, ()),
}


def freeze_drill(scenario: str, phase: str, workdir: str, data: str, limit: float,
                 party_args: Sequence[str] = ()) -> DrillResult:
    """Party 1 of ``scenario`` (a job of :data:`JOBS`: ``ustat``, ``ecdf``, ``rank_auc`` ...) sends itself
    ``SIGSTOP`` on entering ``phase``; both survivors must exit 1 within ``limit`` + :data:`FREEZE_MARGIN_SECONDS`
    seconds, one line each naming party 1 and the phase, no traceback, nothing released."""
    module, args, order, silent = JOBS[scenario]
    bound = limit + FREEZE_MARGIN_SECONDS
    return victim_drill(f"freeze {scenario} at {phase}", "freeze", module,
                        ["--data", data, *args, "--json", RESULT_NAME, "--silence-limit", f"{limit:g}"], phase,
                        workdir, party_args=party_args, allowed=survivor_phases(order, silent, phase),
                        patterns={"silent": _SILENT, "lost": _LOST},
                        expected="party 1 stopped answering during the PHASE phase (...); nothing was released",
                        failed=f"party 1 did not stay frozen at the {phase} phase (exit {{code}}, phases {{phases}})",
                        bound=bound, late=f"the survivors did not stop within {bound:g} s of the freeze", limit=limit,
                        files=("curve.csv",))


def run_freeze_drills(options: DrillOptions, root: str) -> list[DrillResult]:
    """Run the freeze cases, :data:`FREEZE_WORKERS` at a time, in fresh subdirectories of ``root``."""
    header = ["sysBP", "diaBP", "TenYearCHD"]
    rows = framingham_columns(header, QUICK_ROWS if options.quick else FULL_ROWS)
    cases = FREEZE_CASES if options.quick else (*FULL_EXTRA_FREEZE_CASES, *FREEZE_CASES)
    limit = FREEZE_LIMIT_QUICK if options.quick else FREEZE_LIMIT_FULL
    directories = [party_directory(root, f"freeze {scenario} {phase}", header, rows) for scenario, phase in cases]
    with ThreadPoolExecutor(max_workers=FREEZE_WORKERS) as pool:
        futures = [pool.submit(freeze_drill, scenario, phase, directory, "p{pid}.csv", limit, options.party_args)
                   for (scenario, phase), directory in zip(cases, directories)]
        return [future.result() for future in futures]


def print_freeze_report(results: Sequence[DrillResult], rows: int) -> None:
    """Print the freeze drill table and the notes under it."""
    limit = results[0].silence_limit or 0.0
    print()
    print(f"Freeze drills: 3 parties on {rows} Framingham rows; party 1 sends itself SIGSTOP on entering the "
          f"phase; --silence-limit {limit:g} s at every party (bound: {limit + FREEZE_MARGIN_SECONDS:g} s)")
    table = [drill_row(result, " / ".join(map(number, result.survivor_seconds)), result.phase) for result in results]
    print(format_table(["drill", "exits", "seconds to stop", "p0 / p2", "phase", "released", "check", "message"],
                       table))
    print("  exits: parties 0 1 2 (-9: the frozen party 1, ended with SIGKILL by the drill once both survivors "
          "had exited).")
    print("  seconds to stop: from the freeze to the last survivor's exit (p0 / p2: each survivor's).  phase: the "
          "phase each survivor named.")
    print_notes(results)


def main(argv: Sequence[str] | None = None) -> int:
    """Run only the freeze cases; 0 all as expected, 1 some not (one ``error:`` line), 2 bad usage."""
    return drill_main(
        argv, name="freeze drill",
        parse=lambda words: parse_drill_argv(words, "python -m scenarios.drills.freeze", __doc__ or ""),
        run=lambda options, root: (run_freeze_drills(options, root), QUICK_ROWS if options.quick else FULL_ROWS),
        report=lambda outcome: print_freeze_report(*outcome),
        record=lambda options, outcome: {"rows": outcome[1], "quick": options.quick,
                                         "drills": [result.record() for result in outcome[0]],
                                         "ok": all(result.ok for result in outcome[0])},
        failures=lambda outcome: [result.name for result in outcome[0] if not result.ok])


if __name__ == "__main__":
    sys.exit(main())
