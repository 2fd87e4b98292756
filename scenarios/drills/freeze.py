"""Freeze drills: party 1 stops answering (``SIGSTOP``) on entering a phase of ``ustat``, ``ecdf`` or ``rank_auc``.

What: :func:`freeze_drill` runs one case with three real local parties (:func:`scenarios.drills.harness.run_three`):
party 1 runs ``scenarios.drills.party --scenario SCENARIO --freeze-at PHASE`` and sends itself ``SIGSTOP``
on entering PHASE -- a host that stops answering without closing its connections.  Every party runs with
``--silence-limit`` (10 s with ``--quick``, 60 s in the full run).  Both survivors must exit 1 within the
limit plus :data:`FREEZE_MARGIN_SECONDS` of the freeze, each with one line ``error: party i: party 1
stopped answering during the PHASE phase (no message for N s; ...); nothing was released``, no traceback,
and nothing released (no table, no ``--json``, no ``--curve``); the drill then ends party 1 with
``SIGKILL``.  A survivor names the phase it waits in (:func:`freeze_phases`); one that names the other
survivor, which had already given up on party 1, is a cascade (``ok*``).  :func:`run_freeze_drills` runs
the cases :data:`FREEZE_WORKERS` at a time (a frozen run mostly waits) and :func:`print_freeze_report`
prints their table.  Part of ``python -m scenarios.drills.faults`` (see its docstring for the cases).

Threat model drilled (docs/design.md, "Threat model"): passive (semi-honest), static adversary, at most
``t < m/2`` corrupted parties; a party that is alive but silent ends the run for the others within a
bounded silence limit, in every phase including shutdown, never a hang.
"""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from scenarios.drills.harness import (FULL_ROWS, HISTOGRAM_KENDALL_ARGS, HISTOGRAM_ORDER, KENDALL_ARGS, QUICK_ROWS,
                                      RESULT_NAME, RUN_TIMEOUT_SECONDS, VICTIM, _LOST, _ORDER, _SILENT_PHASES, DrillOptions, DrillResult, PartySpec, _codes,
                                      _print_notes, _released, drill_main, format_table, parse_drill_argv, framingham_columns, run_three,
                                      write_party_files)

__all__ = ["freeze_drill", "freeze_phases", "run_freeze_drills", "print_freeze_report", "FREEZE_CASES",
           "FULL_EXTRA_FREEZE_CASES", "FREEZE_LIMIT_QUICK", "FREEZE_LIMIT_FULL", "FREEZE_MARGIN_SECONDS",
           "FREEZE_WORKERS", "SCENARIO_PHASES", "JOB_MODULES"]

_SILENT = re.compile(r"party (\d+) stopped answering during the (.+?) phase \(no message for \d+ s; "
                     r"--silence-limit SECONDS to wait longer\); nothing was released")
#: freeze cases: (scenario, phase at whose entry party 1 sends itself SIGSTOP)
FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "intake"), ("ustat", "seed"), ("ustat", "kernel"), ("ustat", "noise"), ("ustat", "reveal"),
    ("ustat", "shutdown"), ("ustat histogram", "histogram"), ("ecdf", "noise"), ("rank_auc", "sort"))
FULL_EXTRA_FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "parameter check"), ("ustat histogram", "sums"), ("ustat sort", "sort"), ("ecdf", "shutdown"),
    ("rank_auc", "shutdown"))
#: the module each drilled job runs (a job name other than a module is a module with other options)
JOB_MODULES = {"ustat histogram": "ustat", "ustat sort": "ustat"}
#: --silence-limit of every party in the freeze drills (quick: short, to keep ``make drills`` short)
FREEZE_LIMIT_QUICK = 10.0
FREEZE_LIMIT_FULL = 60.0
#: the issue's bound on the survivors' exit after a freeze: the silence limit plus this
FREEZE_MARGIN_SECONDS = 10.0
#: freeze cases run at once (a frozen run mostly waits)
FREEZE_WORKERS = 4
#: per scenario: the phases a run enters, in order, and those that exchange no message
SCENARIO_PHASES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ustat": (_ORDER[1:], _SILENT_PHASES),
    "ecdf": (("parameter check", "intake", "noise", "reveal", "shutdown"), ()),
    "rank_auc": (("parameter check", "intake", "sort", "noise", "reveal", "shutdown"), ()),
    "ustat histogram": (HISTOGRAM_ORDER[1:], ()),
    "ustat sort": (("parameter check", "intake", "sort", "noise", "reveal", "shutdown"), ()),
}


def freeze_phases(scenario: str, phase: str) -> tuple[str, ...]:
    """The phases a survivor may name when party 1 of ``scenario`` freezes on entering ``phase``.

    A survivor names the phase it is waiting in. Party 1 had sent everything of the phases before
    ``phase``, but a survivor may still be finishing the last earlier phase that exchanges messages
    (as after a crash, :func:`noticing_phases`), and a phase that exchanges no message (``seed``
    under a fixed ``--seed``) is crossed without waiting: the survivors then wait in the next phase.
    """
    order, silent = SCENARIO_PHASES[scenario]
    index = order.index(phase)
    allowed = [phase]
    previous = index - 1
    while previous >= 0 and order[previous] in silent:
        previous -= 1
    if previous >= 0:
        allowed.insert(0, order[previous])
    following = index
    while order[following] in silent and following + 1 < len(order):
        following += 1
        allowed.append(order[following])
    return tuple(allowed)


def _freeze_args(scenario: str, data: str, limit: float) -> list[str]:
    """The arguments of every party of a freeze case (the job, ``--json``, ``--silence-limit``)."""
    jobs = {
        "ustat": [*KENDALL_ARGS],
        "ustat histogram": [*HISTOGRAM_KENDALL_ARGS],
        "ustat sort": ["--stat", "gini", "--columns", "sysBP", "--pairs", "all", "--domain", "sysBP=80:300:8",
                       "--path", "sort"],
        "ecdf": ["--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "64", "--smooth", "none",
                 "--curve", "curve.csv"],
        "rank_auc": ["--columns", "sysBP,TenYearCHD", "--domain", "80:300:8", "--path", "sort"],
    }
    return ["--data", data, *jobs[scenario], "--json", RESULT_NAME, "--silence-limit", f"{limit:g}"]


def freeze_drill(scenario: str, phase: str, workdir: str, data: str, limit: float,
                 party_args: Sequence[str] = ()) -> DrillResult:
    """Party 1 of ``scenario`` sends itself ``SIGSTOP`` on entering ``phase``; both survivors must exit 1
    within ``limit`` + :data:`FREEZE_MARGIN_SECONDS` seconds, one line each naming party 1 and the
    phase, no traceback, nothing released. Party 1 is then ended with ``SIGKILL``.

    :param scenario: ``ustat``, ``ecdf``, ``rank_auc``, or a job of :data:`JOB_MODULES` (``ustat histogram``:
        the complete statistic on the histogram path; ``ustat sort``: on the sort path).
    :param workdir: a directory holding the party files (columns sysBP, diaBP, TenYearCHD).
    :param data: the ``--data`` pattern (relative to ``workdir``).
    :param limit: the ``--silence-limit`` of every party.
    """
    base = _freeze_args(scenario, data, limit)
    module = JOB_MODULES.get(scenario, scenario)
    specs = [PartySpec(module, tuple(base)),
             PartySpec("drills.party", ("--scenario", module, "--freeze-at", phase, *base)),
             PartySpec(module, tuple(base))]
    results, launch = run_three(specs, workdir, party_args=party_args, frozen=VICTIM,
                                timeout=max(RUN_TIMEOUT_SECONDS, limit + 90.0))
    victim = results[VICTIM]
    survivors = [r for r in results if r.party != VICTIM]
    freeze_times = [stamp for name, _, stamp in victim.phases if name == phase]
    freeze_time = freeze_times[0] if freeze_times else None
    problems: list[str] = []
    if not freeze_times or victim.code != -9:
        problems.append(f"party 1 did not stay frozen at the {phase} phase (exit {victim.code}, "
                        f"phases {[name for name, _, _ in victim.phases]})")
    stops = [None if r.exit_time is None or freeze_time is None else r.exit_time - freeze_time for r in survivors]
    known = [stop for stop in stops if stop is not None]
    seconds = max(known) if len(known) == len(survivors) else None
    bound = limit + FREEZE_MARGIN_SECONDS
    if seconds is None or seconds > bound:
        problems.append(f"the survivors did not stop within {bound:g} s of the freeze")
    allowed = freeze_phases(scenario, phase)
    named: dict[int, tuple[int, str, str]] = {}
    for survivor in survivors:
        lines = survivor.error_lines
        if survivor.code != 1:
            problems.append(f"party {survivor.party} exited {survivor.code}, expected 1")
        if "Traceback" in survivor.stderr:
            problems.append(f"party {survivor.party} printed a traceback")
        prefix = f"error: party {survivor.party}: "
        text = lines[0][len(prefix):] if len(lines) == 1 and lines[0].startswith(prefix) else None
        silent = _SILENT.fullmatch(text) if text is not None else None
        lost = _LOST.fullmatch(text) if text is not None else None
        found = silent or lost
        if found is None:
            problems.append(f"party {survivor.party} printed {lines!r}, expected one line '{prefix}party 1 "
                            "stopped answering during the PHASE phase (...); nothing was released'")
            continue
        named[survivor.party] = (int(found.group(1)), found.group(2), "silent" if silent else "lost")
        if found.group(2) not in allowed:
            problems.append(f"party {survivor.party} named the {found.group(2)} phase, expected one of {list(allowed)}")
    notes: list[str] = []
    for party, (other, _, kind) in named.items():
        if other == VICTIM and kind == "silent":
            continue
        if other == VICTIM:
            problems.append(f"party {party} reported a lost connection to the frozen party 1, which never closed it")
        elif other in named and named[other][0] == VICTIM:
            notes.append(f"party {party} named party {other}, which had already given up on party {VICTIM} "
                         "(a cascade)")
        else:
            problems.append(f"party {party} named party {other}, not the frozen party {VICTIM}")
    if named and not any(other == VICTIM for other, _, _ in named.values()):
        problems.append(f"no survivor named party {VICTIM}")
    released = _released(workdir, results) or os.path.exists(os.path.join(workdir, "curve.csv"))
    if released:
        problems.append("something was released")
    first = results[0].error_lines
    noticed = ", ".join(f"p{party}: {named[party][1]}" if party in named else f"p{party}: ?"
                        for party in (r.party for r in survivors))
    return DrillResult(f"freeze {scenario} at {phase}", "freeze", [r.code for r in results], seconds, noticed,
                       released, first[0] if first else "", [r.error_lines for r in results], None, problems,
                       notes, stops, limit)


def run_freeze_drills(options: DrillOptions, root: str,
                      progress: Callable[[str], None] = lambda text: None) -> list[DrillResult]:
    """Run the freeze cases, :data:`FREEZE_WORKERS` at a time, in fresh subdirectories of ``root``."""
    count = QUICK_ROWS if options.quick else FULL_ROWS
    header = ["sysBP", "diaBP", "TenYearCHD"]
    rows = framingham_columns(header, count)
    cases = FREEZE_CASES if options.quick else (*FULL_EXTRA_FREEZE_CASES, *FREEZE_CASES)
    limit = FREEZE_LIMIT_QUICK if options.quick else FREEZE_LIMIT_FULL
    directories = []
    for scenario, phase in cases:
        directory = os.path.join(root, re.sub(r"[^a-z0-9]+", "_", f"freeze {scenario} {phase}").strip("_"))
        os.makedirs(directory)
        write_party_files(directory, header, rows)
        directories.append(directory)
    progress(f"{len(cases)} freeze cases, {FREEZE_WORKERS} at a time, --silence-limit {limit:g}")
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
    table = []
    for result in results:
        stop = "-" if result.seconds_to_stop is None else f"{result.seconds_to_stop:.2f}"
        each = " / ".join("-" if value is None else f"{value:.2f}" for value in result.survivor_seconds)
        table.append([result.name, _codes(result.codes), stop, each, result.phase,
                      "RELEASED" if result.released else "nothing",
                      ("ok*" if result.notes else "ok") if result.ok else "FAILED", result.message])
    print(format_table(["drill", "exits", "seconds to stop", "p0 / p2", "phase", "released", "check", "message"],
                       table))
    print("  exits: parties 0 1 2 (-9: the frozen party 1, ended with SIGKILL by the drill once both survivors "
          "had exited).")
    print("  seconds to stop: from the freeze to the last survivor's exit (p0 / p2: each survivor's).  phase: the "
          "phase each survivor named.")
    _print_notes(results)


def main(argv: Sequence[str] | None = None) -> int:
    """Run only the freeze cases (``python -m scenarios.drills.freeze [--quick] [--json PATH]``); the fault
    drill (:mod:`scenarios.drills.faults`) runs them too, after its crash and refusal cases.

    :return: 0 all as expected, 1 some not (one ``error:`` line), 2 bad usage.
    """
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
