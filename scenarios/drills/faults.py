"""Fault drills: real three-party runs of the main job in which one party crashes, freezes, holds a bad
file, or disagrees on a parameter; every party must stop with one line and the right exit code.

Run it (the drills start their own parties; there is no ``-M``, ``-I`` or ``-P`` to give)::

    python -m scenarios.drills.faults                     # every drill, 300 Framingham rows
    python -m scenarios.drills.faults --quick --json drills.json   # 60 rows (what the tests run)

The cases, the table's columns, the options and the exit codes (0 / 1 / 2): docs/drills.md.

Threat model drilled: passive, static, ``t < m/2``; a crashed or frozen party is a failure, not an attack:
the others stop within seconds of a crash, or within the silence limit of a freeze, with exit 1, and nothing
is released."""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from scenarios.drills.freeze import (FREEZE_LIMIT_FULL, FREEZE_LIMIT_QUICK, FREEZE_MARGIN_SECONDS, print_freeze_report,
                                     run_freeze_drills)
from scenarios.drills.harness import (FULL_ROWS, HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER, KENDALL_ARGS, PARTIES,
                                      QUICK_ROWS, RESULT_NAME, VICTIM, _LOST, _ORDER, _SILENT_PHASES, DrillOptions,
                                      DrillResult, PartySpec, print_notes, _released, drill_main, drill_row,
                                      format_table, framingham_columns, parse_drill_argv, party_directory, run_three,
                                      survivor_phases, victim_drill)

__all__ = ["main", "crash_drill", "refusal_drill", "run_drills", "print_report", "CRASH_JOBS", "SURVIVOR_LIMIT_SECONDS"]

#: the issue's bound on the survivors' exit after the crash
SURVIVOR_LIMIT_SECONDS = 60.0
#: per crash job: its ustat arguments, its phases in order, the phases at whose entry party 1 crashes in the quick
#: run and in the full run (tuples: the issue's four, and the parameter check; histogram: the complete statistic on
#: the histogram path, issue 13)
CRASH_JOBS: dict[str, tuple[list[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "tuples": (KENDALL_ARGS, _ORDER, ("intake", "kernel", "noise", "reveal"),
               ("parameter check", "intake", "kernel", "noise", "reveal")),
    "histogram": (HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER, ("histogram",), ("histogram", "sums"))}


def crash_drill(phase: str, workdir: str, data: str, party_args: Sequence[str] = (),
                job: str = "tuples") -> DrillResult:
    """Party 1 crashes (``os._exit``) on entering ``phase``; the survivors must exit 1 within 60 s, one line each
    naming party 1 and the phase, nothing released.

    :param job: ``tuples`` (Kendall on sampled pairs) or ``histogram`` (the complete Kendall, issue 13)."""
    args, order, _, _ = CRASH_JOBS[job]
    return victim_drill(f"crash at {phase}" if job == "tuples" else f"crash {job} at {phase}", "crash", "ustat",
                        ["--data", data, *args, "--json", RESULT_NAME], phase, workdir, party_args=party_args,
                        allowed=survivor_phases(order, _SILENT_PHASES, phase), patterns={"lost": _LOST},
                        expected="lost connection to party j during the PHASE phase; nothing was released",
                        failed=f"party 1 did not crash at the {phase} phase (exit {{code}}, phases {{phases}})",
                        bound=SURVIVOR_LIMIT_SECONDS,
                        late=f"the survivors did not stop within {SURVIVOR_LIMIT_SECONDS:g} s of the crash")


def _overridden(argv: Sequence[str], option: str, value: str) -> list[str]:
    """``argv`` with ``option`` taking ``value`` in place (a repeated option is refused), or added."""
    if option not in argv:
        return [*argv, option, value]
    out = list(argv)
    out[out.index(option) + 1] = value
    return out


def refusal_drill(name: str, workdir: str, argvs: Sequence[Sequence[str]], expected_start: str, fragment: str,
                  party_args: Sequence[str] = ()) -> DrillResult:
    """Every party runs ``drills.party --phase-log``; all must exit 2 with one and the same line (starting with
    ``expected_start``, containing ``fragment``), and no party may enter the intake phase."""
    results, launch = run_three([PartySpec("drills.party", tuple(argv)) for argv in argvs], workdir,
                                party_args=party_args)
    problems: list[str] = []
    lines = [r.error_lines for r in results]
    for result in results:
        if result.code != 2:
            problems.append(f"party {result.party} exited {result.code}, expected 2")
        if len(result.error_lines) != 1:
            problems.append(f"party {result.party} printed {len(result.error_lines)} error lines, expected 1")
        if "Traceback" in result.stderr:
            problems.append(f"party {result.party} printed a traceback")
    if len({tuple(party_lines) for party_lines in lines}) != 1:
        problems.append("the parties printed different lines")
    message = lines[0][0] if lines[0] else ""
    if not (message.startswith(expected_start) and fragment in message):
        problems.append(f"the line {message!r} does not start with {expected_start!r} and contain {fragment!r}")
    entered = [phase for r in results for phase, _, _ in r.phases]
    if "intake" in entered:
        problems.append("a party entered the intake phase")
    if not all(r.phases for r in results):
        problems.append("a party left no phase log")
    times = [r.exit_time for r in results]
    seconds = max(t for t in times if t is not None) - launch if all(t is not None for t in times) else None
    sent = [r.exit_bytes for r in results]
    total = sum(s for s in sent if s is not None) if all(s is not None for s in sent) else None
    released = _released(workdir, results, problems)
    return DrillResult(name, "refusal", [r.code for r in results], seconds,
                       max(entered, key=_ORDER.index) if entered else "?", released, message, lines, total, problems)


def run_drills(options: DrillOptions, root: str) -> tuple[list[DrillResult], int]:
    """Run every drill in fresh subdirectories of ``root``; the results and the number of rows used."""
    rows = framingham_columns(["sysBP", "diaBP"], QUICK_ROWS if options.quick else FULL_ROWS)
    party_args = options.party_args

    def prepare(name: str) -> str:
        return party_directory(root, name, ["sysBP", "diaBP"], rows)

    results: list[DrillResult] = []
    for job, (_, _, quick, full) in CRASH_JOBS.items():
        for phase in quick if options.quick else full:
            results.append(crash_drill(phase, prepare(f"crash {job} {phase}"), "p{pid}.csv", party_args, job=job))
    argv = ["--data", "p{pid}.csv", *KENDALL_ARGS, "--json", RESULT_NAME]
    spoiled = [list(row) for row in rows]
    spoiled[1 + PARTIES * 2][1] = "high"  # party 1's third data row (line 4 of its file), column diaBP
    directory = party_directory(root, "bad cell", ["sysBP", "diaBP"], spoiled)
    results.append(refusal_drill("bad file: non-numeric cell at party 1", directory, [argv] * PARTIES,
                                 "error: party 1: column 'diaBP' has a value that is not a number", "", party_args))
    directory = prepare("missing file")
    os.remove(os.path.join(directory, "p2.csv"))
    results.append(refusal_drill("bad file: party 2's file is missing", directory, [argv] * PARTIES,
                                 "error: party 2: cannot read its data file: no such file", "", party_args))
    for option, value, fragment in (
            ("--epsilon", "2", "epsilon=2.0 at party 1 but 1.0 at party 0"),
            ("--sampling", "uniform", "sampling='uniform' at party 1 but 'balanced' at party 0"),
            ("--columns", "diaBP,sysBP", "columns=['diaBP', 'sysBP'] at party 1 but ['sysBP', 'diaBP'] at party 0")):
        results.append(refusal_drill(f"party 1 disagrees on {option}", prepare(f"disagree {option}"),
                                     [argv, _overridden(argv, option, value), argv], "error: party 1: ",
                                     f"parameters differ from party 0: {fragment}", party_args))
    results.extend(run_freeze_drills(options, root))
    return results, len(rows)


def print_report(results: Sequence[DrillResult], rows: int) -> None:
    """Print the drill table and the notes under it (then the freeze table)."""
    print(f"Fault drills: 3 parties, Kendall's tau of sysBP, diaBP on {rows} Framingham rows "
          f"(p{{pid}}.csv), --seed 4")
    freezes = [result for result in results if result.kind == "freeze"]
    results = [result for result in results if result.kind != "freeze"]
    table = [drill_row(result, result.phase + ("" if result.bytes_sent is None else f" ({result.bytes_sent} B sent)"))
             for result in results]
    print(format_table(["drill", "exits", "seconds to stop", "phase", "released", "check", "message"], table))
    print("  exits: parties 0 1 2 (137: the crashed party).  seconds to stop: from the crash to the last "
          "survivor's exit; for refusals from launch to the last exit.")
    print("  phase: for crashes, the phase each survivor was in when it lost party 1 (the crash phase, or the "
          "phase before it that it was still finishing);")
    print("         for refusals, the last phase any party entered (never intake: no data was shared) and the "
          "bytes all parties sent in all.")
    print("  message: party 0's line (party 2's names itself; for refusals all three lines are identical).  "
          "ok*: see the note below the table.")
    print_notes(results)
    if freezes:
        print_freeze_report(freezes, rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fault drills; returns the exit code (0 all as expected, 1 some not, 2 bad usage)."""
    return drill_main(
        argv, name="fault drill", run=run_drills, report=lambda outcome: print_report(*outcome),
        parse=lambda words: parse_drill_argv(words, "python -m scenarios.drills.faults", __doc__ or ""),
        record=lambda options, outcome: {
            "rows": outcome[1], "parties": PARTIES, "victim": VICTIM, "quick": options.quick,
            "survivor_limit_seconds": SURVIVOR_LIMIT_SECONDS,
            "freeze_limit_seconds": FREEZE_LIMIT_QUICK if options.quick else FREEZE_LIMIT_FULL,
            "freeze_margin_seconds": FREEZE_MARGIN_SECONDS,
            "drills": [result.record() for result in outcome[0]], "ok": all(result.ok for result in outcome[0])},
        failures=lambda outcome: [result.name for result in outcome[0] if not result.ok])


if __name__ == "__main__":
    sys.exit(main())
