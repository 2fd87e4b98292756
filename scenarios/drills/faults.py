"""Fault drills: real three-party runs of the main job in which one party crashes, freezes, holds a bad
file, or disagrees on a parameter. The drills check that every party stops as DESIGN promises, and print a table.

Run it (the drills start their own parties; there is no ``-M``, ``-I`` or ``-P`` to give)::

    python -m scenarios.drills.faults                     # every drill, 300 Framingham rows
    python -m scenarios.drills.faults --quick --json drills.json   # 60 rows (what the tests run)

This process is only an orchestrator and runs no MPyC itself. Each drill starts three separate
processes, party ``i`` with ``-M3 -I i -B PORT --no-log``, in a fresh directory. The job is always
Kendall's tau of ``sysBP`` and ``diaBP`` on per-party files ``p{pid}.csv`` cut from the embedded
Framingham data, with a fixed ``--seed``. Honest parties run ``python -m scenarios.ustat``
unchanged. A misbehaving party runs :mod:`scenarios.drills.party`, which wraps the secure layer in
that one process only.

Drills and what they must show (DESIGN, "Errors and exit codes" and "Threat model"):

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
- ``disagree on --epsilon / --stat / --columns``: party 1 is started with another value. The
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

import csv
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.cli import free_base_port as cli_free_base_port
from scenarios.kit.outputs import check_output_path

__all__ = ["main", "parse_options", "DrillOptions", "PartySpec", "PartyResult", "DrillResult", "run_three",
           "framingham_columns", "write_party_files", "drill_main", "CheckedOutcome", "free_base_port", "format_table", "parse_drill_argv",
           "crash_drill", "refusal_drill", "noticing_phases", "CRASH_PHASES", "QUICK_ROWS", "FULL_ROWS", "SURVIVOR_LIMIT_SECONDS",
           "KENDALL_ARGS", "REPO_ROOT", "freeze_drill", "freeze_phases", "FREEZE_CASES", "FULL_EXTRA_FREEZE_CASES",
           "FREEZE_LIMIT_QUICK", "FREEZE_LIMIT_FULL", "FREEZE_MARGIN_SECONDS", "SCENARIO_PHASES",
           "run_freeze_drills", "print_freeze_report"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAMINGHAM = os.path.join(REPO_ROOT, "scenarios", "data", "framingham.csv.gz")
PARTIES = 3
VICTIM = 1
QUICK_ROWS = 60
FULL_ROWS = 300
#: the issue's bound on the survivors' exit after the crash
SURVIVOR_LIMIT_SECONDS = 60.0
#: a run that takes longer than this is ended (by this orchestrator, which started it) and reported as hung
RUN_TIMEOUT_SECONDS = 150.0
#: phases at whose entry party 1 crashes: the issue's four, and in the full run also the parameter check
CRASH_PHASES = ("intake", "kernel", "noise", "reveal")
FULL_EXTRA_CRASH_PHASES = ("parameter check",)
CRASH_EXIT_CODE = 137  # scenarios.drills.party.CRASH_EXIT_CODE (not imported: that module pulls in MPyC)
KENDALL_ARGS = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8,diaBP=40:160:8",
                "--seed", "4"]
RESULT_NAME = "result.json"
_ORDER = ("connect", "parameter check", "intake", "seed", "kernel", "noise", "reveal", "shutdown")
_SILENT_PHASES = ("seed",)  # no messages with a fixed --seed
_LOST = re.compile(r"lost connection to party (\d+) during the (.+?) phase; nothing was released")
_SILENT = re.compile(r"party (\d+) stopped answering during the (.+?) phase \(no message for \d+ s; "
                     r"--silence-limit SECONDS to wait longer\); nothing was released")
#: freeze cases: (scenario, phase at whose entry party 1 sends itself SIGSTOP)
FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "intake"), ("ustat", "seed"), ("ustat", "kernel"), ("ustat", "noise"), ("ustat", "reveal"),
    ("ustat", "shutdown"), ("ecdf", "noise"), ("rank_auc", "sort"))
FULL_EXTRA_FREEZE_CASES: tuple[tuple[str, str], ...] = (
    ("ustat", "parameter check"), ("ecdf", "shutdown"), ("rank_auc", "shutdown"))
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
}
#: what a released result looks like on a party's stdout (the tables of ustat, ecdf, rank_auc)
RELEASE_MARKERS = ("private estimate", "Private U-statistic", "Private ECDF", "private quantiles",
                   "Private AUC")


# ------------------------------------------------------------------------------------ command line


@dataclass(frozen=True)
class DrillOptions:
    """Options of a drill orchestrator.

    :param quick: a small run (fewer rows and drills), for the tests.
    :param json: where to write the outcomes, or ``None``.
    :param party_args: MPyC options passed on to every party (``-L``).
    """

    quick: bool = False
    json: str | None = None
    party_args: tuple[str, ...] = ()


def parse_drill_argv(argv: Sequence[str], prog: str, doc: str) -> DrillOptions | None:
    """Parse an orchestrator's command line: ``--quick``, ``--json PATH``, and MPyC's ``-M3`` and ``-L``.

    :param argv: the command line without the program name.
    :param prog: program name for messages.
    :param doc: the text printed for ``-h``/``--help`` (the module docstring).
    :return: the options, or ``None`` if help was asked for (and printed).
    :raise UsageError: on bad usage (one line).
    """
    import mpyc  # only MPyC's option parser, to recognise its options; no runtime is started

    mpyc_parser = mpyc._get_arg_parser()
    defaults = vars(mpyc_parser.parse_known_args([])[0])
    mpyc_options, rest = mpyc_parser.parse_known_args(list(argv))
    given = vars(mpyc_options)
    if given.get("help") or given.get("HELP"):
        print(doc)
        return None
    if given.get("M") not in (None, PARTIES):
        raise UsageError(f"the drills always run {PARTIES} local parties; drop -M {given.get('M')}")
    ignored = {"M", "bit_length", "no_log", "log_level", "f"}
    refused = sorted(key for key, value in given.items() if key not in ignored and value != defaults.get(key))
    if refused:
        raise UsageError(f"the drills launch their own local parties; MPyC option(s) {', '.join(refused)} "
                         "cannot be used here (only -M3 and -L)")
    parser = ScenarioParser(prog=prog, add_help=False)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(rest)
    check_output_path(args.json, "--json")
    party_args: tuple[str, ...] = ()
    if given.get("bit_length") != defaults.get("bit_length"):
        party_args = ("-L", str(given["bit_length"]))
    return DrillOptions(bool(args.quick), args.json, party_args)


def parse_options(argv: Sequence[str]) -> DrillOptions | None:
    """Parse this scenario's command line (see the module docstring).

    :raise UsageError: on bad usage.
    """
    return parse_drill_argv(argv, "python -m scenarios.drills.faults", __doc__ or "")


# ------------------------------------------------------------------------------------------ data


def framingham_columns(columns: Sequence[str], rows: int) -> list[list[str]]:
    """The first ``rows`` Framingham rows with no missing value in ``columns``, as strings.

    Read straight from the embedded file, so this process imports no MPyC.
    """
    with gzip.open(FRAMINGHAM, "rt", newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle)
        header = [name.strip() for name in next(reader)]
        positions = [header.index(name) for name in columns]
        chosen: list[list[str]] = []
        for row in reader:
            cells = [row[p].strip() for p in positions]
            if any(cell.lower() in ("", "na", "nan", "?") for cell in cells):
                continue
            chosen.append(cells)
            if len(chosen) == rows:
                break
    return chosen


def write_party_files(directory: str, header: Sequence[str], rows: Sequence[Sequence[str]],
                      parties: int = PARTIES) -> str:
    """Write ``p0.csv ... p{m-1}.csv`` (party ``i`` gets rows ``i, i+m, ...``); return ``p{pid}.csv``."""
    for party in range(parties):
        with open(os.path.join(directory, f"p{party}.csv"), "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows[party::parties])
    return "p{pid}.csv"


# -------------------------------------------------------------------------------------- running


@dataclass(frozen=True)
class PartySpec:
    """How to start one party: ``python -m scenarios.<module> <args> -M3 -I i -B port --no-log``.

    :param module: ``ustat`` (honest, unchanged) or ``drill_party`` (misbehaving on purpose).
    :param args: its arguments. A ``drill_party`` also gets ``--phase-log`` from :func:`run_three`.
    """

    module: str
    args: tuple[str, ...]


@dataclass
class PartyResult:
    """What one party process did.

    :param code: exit code, or ``None`` if it had to be ended after the run timeout.
    :param exit_time: ``time.monotonic()`` when its exit was seen (``None`` if ended).
    :param phases: ``(phase, bytes sent so far, monotonic time)`` per phase entered (drill parties only).
    :param exit_bytes: bytes this party sent in all, if it exited normally (drill parties only).
    """

    party: int
    module: str
    code: int | None
    exit_time: float | None
    stdout: str
    stderr: str
    phases: list[tuple[str, int, float]] = field(default_factory=list)
    exit_bytes: int | None = None

    @property
    def error_lines(self) -> list[str]:
        """The ``error: ...`` lines this party printed on stderr."""
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    @property
    def released(self) -> bool:
        """Whether this party printed a result table."""
        return any(marker in self.stdout for marker in RELEASE_MARKERS)


def free_base_port(parties: int = PARTIES) -> int:
    """A base port ``b`` such that ``b .. b+parties-1`` can be bound on this host right now."""
    return cli_free_base_port(parties, first=0)


def _read_phase_log(path: str) -> tuple[list[tuple[str, int, float]], int | None]:
    phases: list[tuple[str, int, float]] = []
    exit_bytes = None
    if not os.path.exists(path):
        return phases, exit_bytes
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            kind, name, sent, stamp = line.rstrip("\n").split("\t")
            if kind == "phase":
                phases.append((name, int(sent), float(stamp)))
            elif kind == "exit":
                exit_bytes = int(sent)
    return phases, exit_bytes


def run_three(specs: Sequence[PartySpec], workdir: str, *, party_args: Sequence[str] = (),
              timeout: float = RUN_TIMEOUT_SECONDS, frozen: int | None = None) -> tuple[list[PartyResult], float]:
    """Start one process per party in ``workdir`` and wait until all have exited.

    Exit times are polled every 10 ms. A party still running after ``timeout`` seconds is ended;
    only processes started here are ever ended.

    :param frozen: a party that stops itself (``SIGSTOP``) and never exits: it is ended with
        ``SIGKILL`` as soon as every other party has exited (its code is then -9).

    :param specs: one :class:`PartySpec` per party, in party order.
    :param workdir: the working directory of every party (data files, ``result.json``, phase logs).
    :param party_args: MPyC options added to every party (e.g. ``-L 40``).
    :return: the results in party order, and the ``time.monotonic()`` of the launch.
    """
    port = free_base_port(len(specs))
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    processes: list[subprocess.Popen[bytes]] = []
    sinks = []
    launch = time.monotonic()
    for index, spec in enumerate(specs):
        extra = ["--phase-log", f"party{index}.phases"] if spec.module == "drills.party" else []
        command = [sys.executable, "-m", f"scenarios.{spec.module}", *spec.args, *extra, *party_args,
                   "-M", str(len(specs)), "-I", str(index), "-B", str(port), "--no-log"]
        out = open(os.path.join(workdir, f"party{index}.out"), "wb")
        err = open(os.path.join(workdir, f"party{index}.err"), "wb")
        sinks += [out, err]
        processes.append(subprocess.Popen(command, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                          cwd=workdir, env=env))
    exit_times: list[float | None] = [None] * len(processes)
    try:
        while any(t is None for t in exit_times) and time.monotonic() - launch < timeout:
            for index, process in enumerate(processes):
                if exit_times[index] is None and process.poll() is not None:
                    exit_times[index] = time.monotonic()
            if (frozen is not None and exit_times[frozen] is None and processes[frozen].returncode is None
                    and all(t is not None for i, t in enumerate(exit_times) if i != frozen)):
                processes[frozen].kill()  # the frozen party this function started: SIGKILL works on a stopped one
            time.sleep(0.01)
    finally:
        for index, process in enumerate(processes):
            if process.poll() is None:  # hung: end the process this function started
                process.kill()
                process.wait()
        for sink in sinks:
            sink.close()
    results = []
    for index, (spec, process) in enumerate(zip(specs, processes)):
        with open(os.path.join(workdir, f"party{index}.out"), encoding="utf-8", errors="replace") as handle:
            stdout = handle.read()
        with open(os.path.join(workdir, f"party{index}.err"), encoding="utf-8", errors="replace") as handle:
            stderr = handle.read()
        phases, exit_bytes = _read_phase_log(os.path.join(workdir, f"party{index}.phases"))
        code = process.returncode if exit_times[index] is not None else None
        results.append(PartyResult(index, spec.module, code, exit_times[index], stdout, stderr, phases, exit_bytes))
    return results, launch


# --------------------------------------------------------------------------------------- drills


class CheckedOutcome:
    """A drill outcome whose checks append to ``problems``: ``ok`` when none did; ``record`` for JSON."""

    problems: list[str]

    @property
    def ok(self) -> bool:
        """Whether every check passed."""
        return not self.problems

    def record(self) -> dict[str, Any]:
        """JSON-ready form, with ``ok``."""
        data = asdict(self)  # type: ignore[call-overload]
        data["ok"] = self.ok
        return data


@dataclass
class DrillResult(CheckedOutcome):
    """The outcome of one drill, with the checks it had to pass.

    :param name: e.g. ``crash at kernel``.
    :param kind: ``crash``, ``freeze`` or ``refusal``.
    :param codes: exit codes of parties 0..2 (``None``: hung and ended).
    :param seconds_to_stop: crash to last survivor exit (crash), or launch to last exit (refusal).
    :param phase: crash: the phase each survivor named (``p0: kernel, p2: kernel``); refusal: the last
        phase any party entered.
    :param released: whether a result table was printed or ``result.json`` written.
    :param message: party 0's error line.
    :param lines: every party's error lines.
    :param bytes_sent: bytes sent by all parties (refusals, from the phase logs), or ``None``.
    :param problems: the checks that failed (empty: the drill behaved as expected).
    :param notes: deviations that are not failures (a survivor that named the other survivor, which
        had already stopped after losing party 1).
    :param survivor_seconds: freeze: seconds from the freeze to each survivor's exit (parties 0, 2).
    :param silence_limit: freeze: the ``--silence-limit`` every party ran with.
    """

    name: str
    kind: str
    codes: list[int | None]
    seconds_to_stop: float | None
    phase: str
    released: bool
    message: str
    lines: list[list[str]]
    bytes_sent: int | None = None
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    survivor_seconds: list[float | None] = field(default_factory=list)
    silence_limit: float | None = None


def _released(workdir: str, results: Sequence[PartyResult]) -> bool:
    return os.path.exists(os.path.join(workdir, RESULT_NAME)) or any(r.released for r in results)


def _base_args(data: str) -> list[str]:
    return ["--data", data, *KENDALL_ARGS, "--json", RESULT_NAME]


def noticing_phases(crash_phase: str) -> tuple[str, ...]:
    """The phases a survivor may name when party 1 crashes on entering ``crash_phase``.

    A survivor names the phase *it* is in when it sees the connection close. Party 1 enters
    ``crash_phase`` only after it has received every message of the phase before, but a survivor may
    not yet have finished that phase. Its event loop can process the closed connection before it
    resumes the coroutine that was waiting for party 1's last message. So the survivor names
    ``crash_phase`` itself or the last earlier phase that exchanges messages. A survivor notices
    only while it waits for a message. The seed phase waits for none under a fixed ``--seed``, so
    after a crash at ``kernel`` the survivor names ``intake`` or ``kernel``, never ``seed``.
    """
    index = _ORDER.index(crash_phase)
    previous = index - 1
    while previous > 0 and _ORDER[previous] in _SILENT_PHASES:
        previous -= 1
    return (_ORDER[previous], crash_phase) if previous >= 0 else (crash_phase,)


def crash_drill(phase: str, workdir: str, data: str, party_args: Sequence[str] = ()) -> DrillResult:
    """Party 1 crashes (``os._exit``) on entering ``phase``; the survivors must exit 1 within 60 s.

    :param phase: the phase at whose entry party 1 ends itself.
    :param workdir: a directory holding the party files.
    :param data: the ``--data`` pattern (relative to ``workdir``).
    """
    base = _base_args(data)
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
    allowed = noticing_phases(phase)
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
    return DrillResult(f"crash at {phase}", "crash", [r.code for r in results], seconds, noticed, released,
                       first[0] if first else "", [r.error_lines for r in results], None, problems, notes)


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
        "ecdf": ["--column", "sysBP", "--domain", "80:300", "--points", "64", "--smooth", "none",
                 "--curve", "curve.csv"],
        "rank_auc": ["--columns", "sysBP,TenYearCHD", "--domain", "80:300:8"],
    }
    return ["--data", data, *jobs[scenario], "--json", RESULT_NAME, "--silence-limit", f"{limit:g}"]


def freeze_drill(scenario: str, phase: str, workdir: str, data: str, limit: float,
                 party_args: Sequence[str] = ()) -> DrillResult:
    """Party 1 of ``scenario`` sends itself ``SIGSTOP`` on entering ``phase``; both survivors must exit 1
    within ``limit`` + :data:`FREEZE_MARGIN_SECONDS` seconds, one line each naming party 1 and the
    phase, no traceback, nothing released. Party 1 is then ended with ``SIGKILL``.

    :param scenario: ``ustat``, ``ecdf`` or ``rank_auc``.
    :param workdir: a directory holding the party files (columns sysBP, diaBP, TenYearCHD).
    :param data: the ``--data`` pattern (relative to ``workdir``).
    :param limit: the ``--silence-limit`` of every party.
    """
    base = _freeze_args(scenario, data, limit)
    specs = [PartySpec(scenario, tuple(base)),
             PartySpec("drills.party", ("--scenario", scenario, "--freeze-at", phase, *base)),
             PartySpec(scenario, tuple(base))]
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
                                 "error: party 2: cannot read data file p2.csv", "", party_args))

    disagreements = [
        ("--epsilon", ["--epsilon", "2"], "parameters differ from party 0: epsilon=2.0 at party 1 but 1.0 at party 0"),
        ("--stat", ["--stat", "rand"], "parameters differ from party 0: stat='rand' at party 1 but 'kendall' at party 0"),
        ("--columns", ["--columns", "diaBP,sysBP"], "parameters differ from party 0: columns=['diaBP', 'sysBP'] "
                                                   "at party 1 but ['sysBP', 'diaBP'] at party 0"),
    ]
    for option, override, fragment in disagreements:
        progress(f"disagree on {option}")
        directory = _prepare(root, f"disagree {option}", rows)
        results.append(refusal_drill(f"party 1 disagrees on {option}", directory, [argv, argv + override, argv],
                                     "error: party 1: ", fragment, party_args))
    results.extend(run_freeze_drills(options, root, progress))
    return results, len(rows)


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


# -------------------------------------------------------------------------------------- printing


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows aligned under their headers, columns separated by `` | ``."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = [" | ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip()
             for line in [list(headers), *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def _codes(codes: Sequence[int | None]) -> str:
    return " ".join("hung" if code is None else str(code) for code in codes)


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


def _print_notes(results: Sequence[DrillResult]) -> None:
    """The ``ok*`` notes and ``FAILED`` problems under a drill table."""
    for result in results:
        for note in result.notes:
            print(f"  ok* {result.name}: {note}")
        for problem in result.problems:
            print(f"  FAILED {result.name}: {problem}")


def drill_main(argv: Sequence[str] | None, *, name: str, parse: Callable[[Sequence[str]], DrillOptions | None],
               run: Callable[[DrillOptions, str], Any],
               report: Callable[[Any], None], record: Callable[[DrillOptions, Any], dict[str, Any]],
               failures: Callable[[Any], list[str]]) -> int:
    """The life of a drill orchestrator: parse, run in a temporary directory, print, write JSON, judge.

    :param name: what is drilled (the temporary directory's prefix and the error line's subject).
    :param parse: the scenario's option parser (``None`` after ``--help``).
    :param run: ``(options, directory) -> outcome``; ``report(outcome)`` prints it.
    :param record: ``(options, outcome) -> dict`` written with ``--json``.
    :param failures: ``outcome -> names`` of the drills that did not behave as expected.
    :return: 0 all as expected, 1 some not (one ``error:`` line), 2 bad usage (one ``error:`` line).
    """
    try:
        options = parse(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if options is None:
        return 0
    with tempfile.TemporaryDirectory(prefix=f"{name.replace(' ', '_')}_") as root:
        outcome = run(options, root)
    report(outcome)
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(record(options, outcome), handle, indent=2)
    failed = failures(outcome)
    if failed:
        print(f"error: {len(failed)} {name} case(s) did not behave as expected: {'; '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


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
