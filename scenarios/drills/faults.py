"""Fault drills: real three-party runs of the main job in which one party crashes, freezes, holds a bad
file, or disagrees on a parameter. The drills check that every party stops as docs/design.md promises, and print a table.

Run it (the drills start their own parties; there is no ``-M``, ``-I`` or ``-P`` to give)::

    python -m scenarios.drills.faults                     # every drill, 300 Framingham rows
    python -m scenarios.drills.faults --quick --json drills.json   # 60 rows (what the tests run)

This process is only an orchestrator and runs no MPyC itself. Each drill starts three separate
processes, party ``i`` with ``-M3 -I i -B PORT --no-log``, in a fresh directory. The job is always
Kendall's tau of ``sysBP`` and ``diaBP`` on per-party files ``p{pid}.csv`` cut from the embedded
Framingham data, with a fixed ``--seed``. Honest parties run ``python -m scenarios.ustat``
unchanged. A misbehaving party runs :mod:`scenarios.drills.party`, which wraps the secure layer in
that one process only.

Drills and what they must show (docs/design.md, "Errors and exit codes" and "Threat model"):

- ``crash at PHASE`` for PHASE = intake, kernel, noise, reveal (the full run adds
  ``parameter check``). Party 1 ends itself with ``os._exit`` the moment it enters PHASE, like
  ``kill -9``. Both survivors must exit 1 within 60 s of the crash, each with one line
  ``error: party i: lost connection to party 1 during the PHASE phase; nothing was released``, and
  nothing may be released: no result table and no ``--json`` record. Two things the real runs show,
  which the check tolerates and the table reports:

  - A survivor names the phase *it* is in. That is PHASE, or the phase before it if the survivor
    had not yet finished that phase (:func:`noticing_phases`).
  - A cascade, marked ``ok*``. The first survivor to notice exits at once. The other survivor may
    then process that closed connection before party 1's, and name the first survivor rather than
    party 1. In repeated quick runs this happened in about 1 run in 7. It is accepted only when
    the named survivor itself named party 1.
- ``bad file``: party 1 has a non-numeric cell, or party 2's file is missing. All three parties
  must exit 2 with the same single line.
- ``disagree on --epsilon / --sampling / --columns``: party 1 is started with another value. The
  parties must catch it in the ``parameter check`` phase, before any data is shared: all exit 2
  with the same line, and no party enters the ``intake`` phase. Every party runs
  ``scenarios.drills.party --phase-log`` here, which only records the phases entered and the bytes
  sent. The table shows the last phase any party entered and the bytes all parties sent.
- ``freeze SCENARIO at PHASE`` (a second table): party 1 runs ``scenarios.drills.party --scenario
  SCENARIO --freeze-at PHASE`` and sends itself ``SIGSTOP`` on entering PHASE, a host that stops
  answering without closing its connections. Every party runs with ``--silence-limit`` 10 s
  (``--quick``) or 60 s (the default, full run). Cases: ``ustat`` at intake, seed, kernel, noise,
  reveal and shutdown; ``ecdf`` at noise (the tree noise and the secure prefix sums);
  ``rank_auc`` at sort (the full run adds ``ustat`` at parameter check and the shutdown of
  the other two). Both survivors must exit 1 within the limit plus 10 s of the freeze, each with one
  line ``error: party i: party 1 stopped answering during the PHASE phase (no message for N s;
  ...); nothing was released``, no traceback, and nothing released (no table, no ``--json``, no
  ``--curve``). The drill then ends party 1 with ``SIGKILL`` (its exit shows as -9). A survivor
  names the phase it waits in (:func:`freeze_phases`). A survivor that names the other survivor,
  which had already given up on party 1, is a cascade (``ok*``), as for crashes. The cases run
  four at a time: a frozen run costs mostly waiting.

Table columns: ``exits`` are the codes of parties 0, 1, 2 (137 is the crashed party).
``seconds to stop`` runs from the crash to the last survivor's exit for crash drills, and from
launch to the last exit for refusals. ``phase`` is the phase each survivor named (crash), or the
last phase any party entered and the bytes all parties sent (refusal). ``message`` is party 0's
error line. For a crash, party 2's line names party 2.

Options (MPyC's parser takes abbreviations, so none of these is a prefix of an MPyC option):
  --quick       60 rows, the issue's drills only and a 10 s silence limit (a small run, for the tests)
  --json PATH   write every drill's outcome (exit codes, seconds, error lines, phases, bytes) there
``-M3`` is accepted, since the drills always run three parties. ``-L`` is passed to every party.
Any other MPyC option is refused. The exit code is 0 if every drill behaved as expected, 1 if
some did not (one line names them), and 2 for bad usage.

Threat model drilled: passive (semi-honest), static adversary, at most ``t < m/2`` corrupted
parties. A crashed or frozen party is a failure, not an attack. The promise under test is that the
others stop within seconds of a crash, or within the silence limit of a freeze, with exit 1, and
nothing is released.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scenarios.drills.freeze import (FREEZE_LIMIT_FULL, FREEZE_LIMIT_QUICK, FREEZE_MARGIN_SECONDS, print_freeze_report,
                                     run_freeze_drills)
from scenarios.drills.harness import (FULL_ROWS, HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER, KENDALL_ARGS, PARTIES,
                                      QUICK_ROWS, RESULT_NAME, VICTIM, _LOST, _ORDER, _SILENT_PHASES, DrillOptions, DrillResult, PartySpec, _codes, _print_notes,
                                      _released, drill_main, format_table, framingham_columns, parse_drill_argv,
                                      run_three, write_party_files)

__all__ = ["main", "parse_options", "crash_drill", "refusal_drill", "noticing_phases", "run_drills", "print_report",
           "CRASH_PHASES", "FULL_EXTRA_CRASH_PHASES", "SURVIVOR_LIMIT_SECONDS", "HISTOGRAM_CRASH_PHASES",
           "FULL_EXTRA_HISTOGRAM_CRASH_PHASES"]

#: the issue's bound on the survivors' exit after the crash
SURVIVOR_LIMIT_SECONDS = 60.0
#: phases at whose entry party 1 crashes: the issue's four, and in the full run also the parameter check
CRASH_PHASES = ("intake", "kernel", "noise", "reveal")
FULL_EXTRA_CRASH_PHASES = ("parameter check",)
#: crash cases of the complete statistic on the histogram path (issue 13): job "histogram"
HISTOGRAM_CRASH_PHASES = ("histogram",)
FULL_EXTRA_HISTOGRAM_CRASH_PHASES = ("sums",)
CRASH_EXIT_CODE = 137  # scenarios.drills.party.CRASH_EXIT_CODE (not imported: that module pulls in MPyC)


# ------------------------------------------------------------------------------------ command line


def parse_options(argv: Sequence[str]) -> DrillOptions | None:
    """Parse this scenario's command line (see the module docstring).

    :raise UsageError: on bad usage.
    """
    return parse_drill_argv(argv, "python -m scenarios.drills.faults", __doc__ or "")


# --------------------------------------------------------------------------------------- drills


def _base_args(data: str, job: str = "tuples") -> list[str]:
    return ["--data", data, *(HISTOGRAM_KENDALL_ARGS if job == "histogram" else KENDALL_ARGS), "--json", RESULT_NAME]


def noticing_phases(crash_phase: str, job: str = "tuples") -> tuple[str, ...]:
    """The phases a survivor may name when party 1 crashes on entering ``crash_phase``.

    A survivor names the phase *it* is in when it sees the connection close. Party 1 enters
    ``crash_phase`` only after it has received every message of the phase before, but a survivor may
    not yet have finished that phase. Its event loop can process the closed connection before it
    resumes the coroutine that was waiting for party 1's last message. So the survivor names
    ``crash_phase`` itself or the last earlier phase that exchanges messages. A survivor notices
    only while it waits for a message. The seed phase waits for none under a fixed ``--seed``, so
    after a crash at ``kernel`` the survivor names ``intake`` or ``kernel``, never ``seed``.
    """
    order = HISTOGRAM_ORDER if job == "histogram" else _ORDER
    index = order.index(crash_phase)
    previous = index - 1
    while previous > 0 and order[previous] in _SILENT_PHASES:
        previous -= 1
    return (order[previous], crash_phase) if previous >= 0 else (crash_phase,)


def crash_drill(phase: str, workdir: str, data: str, party_args: Sequence[str] = (),
                job: str = "tuples") -> DrillResult:
    """Party 1 crashes (``os._exit``) on entering ``phase``; the survivors must exit 1 within 60 s.

    :param phase: the phase at whose entry party 1 ends itself.
    :param workdir: a directory holding the party files.
    :param data: the ``--data`` pattern (relative to ``workdir``).
    :param job: ``tuples`` (Kendall on sampled pairs) or ``histogram`` (the complete Kendall, issue 13).
    """
    base = _base_args(data, job)
    specs = [PartySpec("ustat", tuple(base)), PartySpec("drills.party", ("--crash-at", phase, *base)),
             PartySpec("ustat", tuple(base))]
    results, launch = run_three(specs, workdir, party_args=party_args)
    victim = results[VICTIM]
    survivors = [r for r in results if r.party != VICTIM]
    crash_times = [stamp for name, _, stamp in victim.phases if name == phase]
    crash_time = crash_times[0] if crash_times else victim.exit_time
    problems: list[str] = []
    if victim.code != CRASH_EXIT_CODE or not crash_times:
        problems.append(f"party 1 did not crash at the {phase} phase (exit {victim.code}, "
                        f"phases {[name for name, _, _ in victim.phases]})")
    stops = [r.exit_time - crash_time for r in survivors if r.exit_time is not None and crash_time is not None]
    seconds = max(stops) if len(stops) == len(survivors) else None
    allowed = noticing_phases(phase, job)
    lost: dict[int, tuple[int, str]] = {}
    for survivor in survivors:
        lines = survivor.error_lines
        if survivor.code != 1:
            problems.append(f"party {survivor.party} exited {survivor.code}, expected 1")
        prefix = f"error: party {survivor.party}: "
        found = _LOST.fullmatch(lines[0][len(prefix):]) if len(lines) == 1 and lines[0].startswith(prefix) else None
        if found is None:
            problems.append(f"party {survivor.party} printed {lines!r}, expected one line '{prefix}lost connection "
                            "to party j during the PHASE phase; nothing was released'")
            continue
        lost[survivor.party] = (int(found.group(1)), found.group(2))
        if found.group(2) not in allowed:
            problems.append(f"party {survivor.party} named the {found.group(2)} phase, expected one of {list(allowed)}")
        if "Traceback" in survivor.stderr:
            problems.append(f"party {survivor.party} printed a traceback")
    notes: list[str] = []
    for survivor in survivors:
        if survivor.party not in lost or lost[survivor.party][0] == VICTIM:
            continue
        other = lost[survivor.party][0]
        # The other survivor closes its connections only when it exits; if it exited because it lost party 1,
        # this survivor saw the consequence of the crash, not a second fault.
        if other in lost and lost[other][0] == VICTIM:
            notes.append(f"party {survivor.party} named party {other}, which had already stopped after losing "
                         f"party {VICTIM} (a cascade)")
        else:
            problems.append(f"party {survivor.party} named party {other}, not the crashed party {VICTIM}")
    if lost and not any(party == VICTIM for party, _ in lost.values()):
        problems.append(f"no survivor named party {VICTIM}")
    if seconds is None or seconds >= SURVIVOR_LIMIT_SECONDS:
        problems.append(f"the survivors did not stop within {SURVIVOR_LIMIT_SECONDS:g} s of the crash")
    released = _released(workdir, results)
    if released:
        problems.append("something was released")
    first = results[0].error_lines
    noticed = ", ".join(f"p{party}: {lost[party][1]}" if party in lost else f"p{party}: ?"
                        for party in (r.party for r in survivors))
    name = f"crash at {phase}" if job == "tuples" else f"crash {job} at {phase}"
    return DrillResult(name, "crash", [r.code for r in results], seconds, noticed, released,
                       first[0] if first else "", [r.error_lines for r in results], None, problems, notes)


def _overridden(argv: Sequence[str], override: Sequence[str]) -> list[str]:
    """``argv`` with ``override``'s option taking its new value in place (a single-valued option given twice is
    itself refused, and the drill is about parties that disagree)."""
    option, value = override
    out = list(argv)
    if option in out:
        out[out.index(option) + 1] = value
        return out
    return [*out, option, value]


def refusal_drill(name: str, workdir: str, argvs: Sequence[Sequence[str]], expected_start: str, fragment: str,
                  party_args: Sequence[str] = ()) -> DrillResult:
    """Every party runs ``drill_party --phase-log`` (an honest party that logs its phases); all must exit 2
    with one and the same line, and no party may enter the intake phase.

    :param argvs: per party, its ``scenarios.ustat`` arguments.
    :param expected_start: how the common line must begin (``error: party 1:``).
    :param fragment: text the line must contain.
    """
    specs = [PartySpec("drills.party", tuple(argv)) for argv in argvs]
    results, launch = run_three(specs, workdir, party_args=party_args)
    problems: list[str] = []
    lines = [r.error_lines for r in results]
    for result in results:
        if result.code != 2:
            problems.append(f"party {result.party} exited {result.code}, expected 2")
        if len(result.error_lines) != 1:
            problems.append(f"party {result.party} printed {len(result.error_lines)} error lines, expected 1")
        if "Traceback" in result.stderr:
            problems.append(f"party {result.party} printed a traceback")
    distinct = {tuple(party_lines) for party_lines in lines}
    if len(distinct) != 1:
        problems.append("the parties printed different lines")
    message = lines[0][0] if lines[0] else ""
    if not (message.startswith(expected_start) and fragment in message):
        problems.append(f"the line {message!r} does not start with {expected_start!r} and contain {fragment!r}")
    entered = [name for r in results for name, _, _ in r.phases]
    last = max(entered, key=_ORDER.index) if entered else "?"
    if "intake" in entered:
        problems.append("a party entered the intake phase")
    if not all(r.phases for r in results):
        problems.append("a party left no phase log")
    times = [r.exit_time for r in results]
    seconds = max(t for t in times if t is not None) - launch if all(t is not None for t in times) else None
    sent = [r.exit_bytes for r in results]
    total = sum(s for s in sent if s is not None) if all(s is not None for s in sent) else None
    released = _released(workdir, results)
    if released:
        problems.append("something was released")
    return DrillResult(name, "refusal", [r.code for r in results], seconds, last, released, message, lines,
                       total, problems)


def _prepare(root: str, name: str, rows: Sequence[Sequence[str]]) -> str:
    directory = os.path.join(root, re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_"))
    os.makedirs(directory)
    write_party_files(directory, ["sysBP", "diaBP"], rows)
    return directory


def _spoil_cell(directory: str) -> None:
    """Party 1's file: line 4 (the third data row), column diaBP, becomes ``high``."""
    path = os.path.join(directory, "p1.csv")
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    cells = lines[3].split(",")
    cells[1] = "high"
    lines[3] = ",".join(cells)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")


def run_drills(options: DrillOptions, root: str,
               progress: Callable[[str], None] = lambda text: None) -> tuple[list[DrillResult], int]:
    """Run every drill in fresh subdirectories of ``root``.

    :return: the results and the number of rows used.
    """
    count = QUICK_ROWS if options.quick else FULL_ROWS
    rows = framingham_columns(["sysBP", "diaBP"], count)
    phases = CRASH_PHASES if options.quick else (*FULL_EXTRA_CRASH_PHASES, *CRASH_PHASES)
    party_args = options.party_args
    results: list[DrillResult] = []
    for phase in phases:
        progress(f"crash at {phase}")
        directory = _prepare(root, f"crash {phase}", rows)
        results.append(crash_drill(phase, directory, "p{pid}.csv", party_args))
    complete = HISTOGRAM_CRASH_PHASES if options.quick else (*HISTOGRAM_CRASH_PHASES, *FULL_EXTRA_HISTOGRAM_CRASH_PHASES)
    for phase in complete:
        progress(f"crash histogram at {phase}")
        directory = _prepare(root, f"crash histogram {phase}", rows)
        results.append(crash_drill(phase, directory, "p{pid}.csv", party_args, job="histogram"))

    progress("bad file: non-numeric cell")
    directory = _prepare(root, "bad cell", rows)
    _spoil_cell(directory)
    argv = _base_args("p{pid}.csv")
    results.append(refusal_drill("bad file: non-numeric cell at party 1", directory, [argv] * PARTIES,
                                 "error: party 1: column 'diaBP' has a value that is not a number", "",
                                 party_args))
    progress("bad file: missing file")
    directory = _prepare(root, "missing file", rows)
    os.remove(os.path.join(directory, "p2.csv"))
    results.append(refusal_drill("bad file: party 2's file is missing", directory, [argv] * PARTIES,
                                 "error: party 2: cannot read its data file: no such file", "", party_args))

    disagreements = [
        ("--epsilon", ["--epsilon", "2"], "parameters differ from party 0: epsilon=2.0 at party 1 but 1.0 at party 0"),
        ("--sampling", ["--sampling", "uniform"],
         "parameters differ from party 0: sampling='uniform' at party 1 but 'balanced' at party 0"),
        ("--columns", ["--columns", "diaBP,sysBP"], "parameters differ from party 0: columns=['diaBP', 'sysBP'] "
                                                   "at party 1 but ['sysBP', 'diaBP'] at party 0"),
    ]
    for option, override, fragment in disagreements:
        progress(f"disagree on {option}")
        directory = _prepare(root, f"disagree {option}", rows)
        argvs = [argv, _overridden(argv, override), argv]
        results.append(refusal_drill(f"party 1 disagrees on {option}", directory, argvs, "error: party 1: ", fragment,
                                     party_args))
    results.extend(run_freeze_drills(options, root, progress))
    return results, len(rows)


# -------------------------------------------------------------------------------------- printing


def print_report(results: Sequence[DrillResult], rows: int) -> None:
    """Print the drill table and the notes under it."""
    print(f"Fault drills: 3 parties, Kendall's tau of sysBP, diaBP on {rows} Framingham rows "
          f"(p{{pid}}.csv), --seed 4")
    freezes = [result for result in results if result.kind == "freeze"]
    results = [result for result in results if result.kind != "freeze"]
    table = []
    for result in results:
        stop = "-" if result.seconds_to_stop is None else f"{result.seconds_to_stop:.2f}"
        reached = result.phase + (f" ({result.bytes_sent} B sent)" if result.bytes_sent is not None else "")
        table.append([result.name, _codes(result.codes), stop, reached,
                      "RELEASED" if result.released else "nothing",
                      ("ok*" if result.notes else "ok") if result.ok else "FAILED", result.message])
    print(format_table(["drill", "exits", "seconds to stop", "phase", "released", "check", "message"], table))
    print("  exits: parties 0 1 2 (137: the crashed party).  seconds to stop: from the crash to the last "
          "survivor's exit; for refusals from launch to the last exit.")
    print("  phase: for crashes, the phase each survivor was in when it lost party 1 (the crash phase, or the "
          "phase before it that it was still finishing);")
    print("         for refusals, the last phase any party entered (never intake: no data was shared) and the "
          "bytes all parties sent in all.")
    print("  message: party 0's line (party 2's names itself; for refusals all three lines are identical).  "
          "ok*: see the note below the table.")
    _print_notes(results)
    if freezes:
        print_freeze_report(freezes, rows)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the fault drills; returns the exit code (0 all as expected, 1 some not, 2 bad usage)."""
    return drill_main(
        argv, name="fault drill", parse=parse_options, run=run_drills, report=lambda outcome: print_report(*outcome),
        record=lambda options, outcome: {
            "rows": outcome[1], "parties": PARTIES, "victim": VICTIM, "quick": options.quick,
            "survivor_limit_seconds": SURVIVOR_LIMIT_SECONDS,
            "freeze_limit_seconds": FREEZE_LIMIT_QUICK if options.quick else FREEZE_LIMIT_FULL,
            "freeze_margin_seconds": FREEZE_MARGIN_SECONDS,
            "drills": [result.record() for result in outcome[0]], "ok": all(result.ok for result in outcome[0])},
        failures=lambda outcome: [result.name for result in outcome[0] if not result.ok])


if __name__ == "__main__":
    sys.exit(main())
