"""The drill harness: start three real local parties, collect what each did, judge and print the outcome.

Shared by the orchestrators (:mod:`scenarios.drills.faults`, :mod:`scenarios.drills.freeze`,
:mod:`scenarios.drills.malicious_input`): their command line (``--quick``, ``--json PATH``, ``-M3``, ``-L``),
the per-party Framingham files, :func:`run_three` (one process per party on a free base port, ending only
processes it started), the checked results and their tables.  This process imports no MPyC runtime.

Threat model drilled: passive, static, ``t < m/2``; a crashed or frozen party is a failure, not an attack
(docs/drills.md)."""
from __future__ import annotations

import csv
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from itertools import islice
from typing import Any

from scenarios.drills.party import CRASH_EXIT_CODE
from scenarios.kit.records import write_record
from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.datasets import load_embedded
from scenarios.kit.outputs import check_output_path
from secure.intake import MISSING_TOKENS
from secure.launcher import free_base_port, mpyc_help, mpyc_options

__all__ = ["DrillOptions", "parse_drill_argv", "framingham_columns", "party_directory", "read_result", "PartySpec",
           "PartyResult", "run_three", "CheckedOutcome", "DrillResult", "judge_survivors", "victim_drill",
           "survivor_phases", "format_table", "number", "drill_row", "print_notes", "exits", "drill_main",
           "REPO_ROOT", "PARTIES", "VICTIM", "CRASH_EXIT_CODE", "QUICK_ROWS", "FULL_ROWS", "KENDALL_ARGS",
           "RESULT_NAME", "RELEASE_MARKERS", "HISTOGRAM_KENDALL_ARGS", "HISTOGRAM_ORDER"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTIES = 3
VICTIM = 1
QUICK_ROWS = 60
FULL_ROWS = 300
#: a run that takes longer than this is ended (by this orchestrator, which started it) and reported as hung
RUN_TIMEOUT_SECONDS = 150.0
KENDALL_ARGS = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8,diaBP=40:160:8",
                "--seed", "4", "--pairs", "2n"]
#: the complete Kendall on the histogram path (issue 13), on the same rows: the grid of 0.5 mmHg steps
HISTOGRAM_KENDALL_ARGS = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain",
                          "sysBP=80:300:8:0.5,diaBP=40:160:8:0.5", "--pairs", "all", "--path", "histogram"]
#: the phases of the histogram path, in order (none is silent)
HISTOGRAM_ORDER = ("connect", "parameter check", "intake", "histogram", "sums", "noise", "reveal", "shutdown")
RESULT_NAME = "result.json"
#: per way party 1 stops (victim_drill): its exit code, what it is called, what a survivor did to it
_STOPS = {"crash": (CRASH_EXIT_CODE, "crashed", "stopped after losing"), "freeze": (-9, "frozen", "given up on"),
          "kill": (CRASH_EXIT_CODE, "crashed", "lost")}
_ORDER = ("connect", "parameter check", "intake", "seed", "kernel", "noise", "reveal", "shutdown")
_SILENT_PHASES = ("seed",)  # no messages with a fixed --seed
_LOST = re.compile(r"lost connection to party (\d+) during the (.+?) phase; nothing was released")
_SILENT = re.compile(r"party (\d+) stopped answering during the (.+?) phase \(no message for \d+ s; "
                     r"--silence-limit SECONDS to wait longer\); nothing was released")
#: what a released result looks like on a party's stdout (the tables of ustat, ecdf, rank_auc)
RELEASE_MARKERS = ("private estimate", "Private U-statistic", "Private ECDF", "private quantiles",
                   "Private AUC")


@dataclass(frozen=True)
class DrillOptions:
    """``--quick`` (a small run, for the tests), ``--json PATH``, and the MPyC options passed on (``-L``)."""

    quick: bool = False
    json: str | None = None
    party_args: tuple[str, ...] = ()


def parse_drill_argv(argv: Sequence[str], prog: str, doc: str) -> DrillOptions | None:
    """Parse an orchestrator's command line; ``None`` if help was asked for (and printed); :raise UsageError:."""
    given, rest = mpyc_options(argv)  # MPyC's options that differ from its defaults; no runtime is started
    parser = ScenarioParser(prog=prog, description=doc, runs_as="launcher")
    parser.add_argument("--quick", action="store_true", help="a small run (fewer rows and drills), for the tests")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the outcomes to PATH (JSON)")
    if given.get("HELP"):
        print(mpyc_help(), end="")
        return None
    if given.get("help"):
        parser.print_help()
        return None
    if given.get("M") not in (None, PARTIES):
        raise UsageError(f"the drills always run {PARTIES} local parties; drop -M {given.get('M')}")
    if refused := sorted(key for key in given if key not in {"M", "bit_length", "no_log", "log_level", "f"}):
        raise UsageError(f"the drills launch their own local parties; MPyC option(s) {', '.join(refused)} "
                         "cannot be used here (only -M3 and -L)")
    args = parser.parse_args(rest)
    check_output_path(args.json, "--json")
    party_args = ("-L", str(given["bit_length"])) if "bit_length" in given else ()
    return DrillOptions(bool(args.quick), args.json, party_args)


def framingham_columns(columns: Sequence[str], rows: int) -> list[list[str]]:
    """The first ``rows`` embedded Framingham rows with no missing value in ``columns``, as strings (no MPyC import)."""
    table = load_embedded("framingham")
    positions = [table.header.index(name) for name in columns]
    chosen = ([row[p] for p in positions] for row in table.rows)
    return list(islice((cells for cells in chosen if not any(c.lower() in MISSING_TOKENS for c in cells)), rows))


def party_directory(root: str, name: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A fresh subdirectory of ``root`` named after ``name``, with ``p0.csv ... p2.csv`` (rows ``i, i+3, ...``)."""
    directory = os.path.join(root, re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_"))
    os.makedirs(directory)
    for party in range(PARTIES):
        with open(os.path.join(directory, f"p{party}.csv"), "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows[party::PARTIES])
    return directory


def read_result(directory: str) -> Any:
    """The ``--json`` record party 0 wrote in ``directory`` (``{}`` if none)."""
    path = pathlib.Path(directory, RESULT_NAME)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@dataclass(frozen=True)
class PartySpec:
    """How to start one party: ``python -m scenarios.<module> <args> -M3 -I i -B port --no-log``."""

    module: str
    args: tuple[str, ...]


@dataclass
class PartyResult:
    """What one party process did: exit code (``None``: hung and ended), the time its exit was seen, its output,
    and from a ``drills.party`` phase log ``(phase, bytes sent so far, monotonic time)`` and the bytes at exit."""

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
        return [line for line in self.stderr.splitlines() if line.startswith("error:")]

    @property
    def released(self) -> bool:
        return any(marker in self.stdout for marker in RELEASE_MARKERS)


def _read_phase_log(path: str) -> tuple[list[tuple[str, int, float]], int | None]:
    phases: list[tuple[str, int, float]] = []
    exit_bytes = None
    if os.path.exists(path):
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
    """Start one process per party in ``workdir`` (``party_args``: MPyC options for each), end one still running
    after ``timeout`` s, and a ``frozen`` one once the others exited; the results and the launch's monotonic time."""
    port = free_base_port(len(specs), first=0)
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    processes: list[subprocess.Popen[bytes]] = []
    sinks = []
    launch = time.monotonic()
    for index, spec in enumerate(specs):
        extra = ["--phase-log", f"party{index}.phases"] if spec.module == "drills.party" else []
        command = [sys.executable, "-m", f"scenarios.{spec.module}", *spec.args, *extra, *party_args,
                   "-M", str(len(specs)), "-I", str(index), "-B", str(port), "--no-log"]
        out, err = (open(os.path.join(workdir, f"party{index}.{kind}"), "wb") for kind in ("out", "err"))
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
        for process in processes:
            if process.poll() is None:  # hung: end the process this function started
                process.kill()
                process.wait()
        for sink in sinks:
            sink.close()
    results = []
    for index, (spec, process) in enumerate(zip(specs, processes)):
        phases, exit_bytes = _read_phase_log(os.path.join(workdir, f"party{index}.phases"))
        code = process.returncode if exit_times[index] is not None else None
        stdout, stderr = (pathlib.Path(workdir, f"party{index}.{kind}").read_text(encoding="utf-8", errors="replace")
                          for kind in ("out", "err"))
        results.append(PartyResult(index, spec.module, code, exit_times[index], stdout, stderr, phases, exit_bytes))
    return results, launch


class CheckedOutcome:
    """A drill outcome whose checks append to ``problems``: ``ok`` when none did; ``record`` for JSON."""

    problems: list[str]

    @property
    def label(self) -> str:
        """How the notes under a table name this outcome (default: its ``name``)."""
        return str(getattr(self, "name"))

    @property
    def ok(self) -> bool:
        return not self.problems

    def record(self) -> dict[str, Any]:
        data = asdict(self)  # type: ignore[call-overload]
        data["ok"] = self.ok
        return data


@dataclass
class DrillResult(CheckedOutcome):
    """The outcome of one drill (``kind``: crash, freeze or refusal) and its checks (fields: docs/drills.md)."""

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


def _released(workdir: str, results: Sequence[PartyResult], problems: list[str], *files: str) -> bool:
    """Whether a party wrote its result (or one of ``files``) or printed a table; a problem if so."""
    released = (any(os.path.exists(os.path.join(workdir, name)) for name in (RESULT_NAME, *files))
                or any(r.released for r in results))
    if released:
        problems.append("something was released")
    return released


def judge_survivors(survivors: Sequence[PartyResult], patterns: dict[str, re.Pattern[str]], allowed: Sequence[str],
                    expected: str, problems: list[str]) -> dict[int, tuple[int, str, str]]:
    """Check that each survivor exited 1 with one line ``error: party i: <a pattern>`` (``patterns``: kind -> groups
    party, phase), no traceback, naming a phase of ``allowed``; append what failed to ``problems``.
    :return: survivor -> (the party it named, the phase, the pattern's kind)."""
    named: dict[int, tuple[int, str, str]] = {}
    for survivor in survivors:
        lines = survivor.error_lines
        if survivor.code != 1:
            problems.append(f"party {survivor.party} exited {survivor.code}, expected 1")
        if "Traceback" in survivor.stderr:
            problems.append(f"party {survivor.party} printed a traceback")
        prefix = f"error: party {survivor.party}: "
        text = lines[0][len(prefix):] if len(lines) == 1 and lines[0].startswith(prefix) else ""
        found = next(((kind, match) for kind, pattern in patterns.items() if (match := pattern.fullmatch(text))), None)
        if found is None:
            problems.append(f"party {survivor.party} printed {lines!r}, expected one line '{prefix}{expected}'")
            continue
        kind, match = found
        named[survivor.party] = (int(match.group(1)), match.group(2), kind)
        if match.group(2) not in allowed:
            problems.append(f"party {survivor.party} named the {match.group(2)} phase, expected one of {list(allowed)}")
    return named


def survivor_phases(order: Sequence[str], silent: Sequence[str], phase: str) -> tuple[str, ...]:
    """The phases a survivor may name when party 1 crashes or freezes on entering ``phase`` of ``order``: the last
    earlier phase that exchanges messages (it may still be finishing it), ``phase``, and after a silent ``phase``
    the phases up to the first that exchanges messages (one is crossed without waiting; docs/drills.md)."""
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


def victim_drill(name: str, kind: str, module: str, base: Sequence[str], phase: str, workdir: str, *,
                 party_args: Sequence[str], allowed: Sequence[str], patterns: dict[str, re.Pattern[str]],
                 expected: str, failed: str, bound: float, late: str, limit: float | None = None,
                 files: Sequence[str] = ()) -> DrillResult:
    """Party 1 runs ``drills.party`` (the others ``scenarios.<module> base``) and crashes (``kind`` crash, kill) or
    freezes on entering ``phase``; the survivors must stop as :func:`judge_survivors` checks, within ``bound`` s,
    nothing (nor ``files``) released.  ``failed``, ``late``, ``limit`` and the cascade: docs/drills.md."""
    code, victim_is, gave_up = _STOPS[kind]
    honest = PartySpec(module, tuple(base))
    victim_args = ("--scenario", module, "--freeze-at" if kind == "freeze" else "--crash-at", phase, *base)
    results, _ = run_three([honest, PartySpec("drills.party", victim_args), honest], workdir, party_args=party_args,
                           frozen=VICTIM if kind == "freeze" else None,
                           timeout=RUN_TIMEOUT_SECONDS if limit is None else max(RUN_TIMEOUT_SECONDS, limit + 90.0))
    victim, survivors = results[VICTIM], [r for r in results if r.party != VICTIM]
    stamps = [stamp for entered, _, stamp in victim.phases if entered == phase]
    problems: list[str] = []
    if victim.code != code or not stamps:
        problems.append(failed.format(code=victim.code, phases=[entered for entered, _, _ in victim.phases]))
    start = stamps[0] if stamps else victim.exit_time if kind == "crash" else None
    stops = [None if r.exit_time is None or start is None else r.exit_time - start for r in survivors]
    known = [stop for stop in stops if stop is not None]
    seconds = max(known) if len(known) == len(survivors) else None
    if seconds is None or seconds > bound:
        problems.append(late)
    named = judge_survivors(survivors, patterns, allowed, expected, problems)
    notes = []
    for party, (other, _, how) in named.items():
        if other == VICTIM:
            if kind == "freeze" and how == "lost":
                problems.append(f"party {party} reported a lost connection to the frozen party 1, which never "
                                "closed it")
        elif other in named and named[other][0] == VICTIM:  # the other survivor closes its connections on exit
            notes.append(f"party {party} named party {other}, which had already {gave_up} party {VICTIM} (a cascade)")
        else:
            problems.append(f"party {party} named party {other}, not the {victim_is} party {VICTIM}")
    if named and not any(other == VICTIM for other, _, _ in named.values()):
        problems.append(f"no survivor named party {VICTIM}")
    released = _released(workdir, results, problems, *files)
    first = results[0].error_lines
    noticed = ", ".join(f"p{r.party}: {named[r.party][1] if r.party in named else '?'}" for r in survivors)
    return DrillResult(name, kind, [r.code for r in results], seconds, noticed, released, first[0] if first else "",
                       [r.error_lines for r in results], None, problems, notes, [] if limit is None else stops, limit)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows aligned under their headers, columns separated by `` | ``."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = [" | ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip()
             for line in [list(headers), *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def exits(codes: Sequence[int | None]) -> str:
    """``0 137 hung``: the exit codes of the parties."""
    return " ".join("hung" if code is None else str(code) for code in codes)


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def drill_row(result: DrillResult, *middle: str) -> list[str]:
    """One table row: name, exits, seconds to stop, ``middle``, released, check, message."""
    return [result.name, exits(result.codes), number(result.seconds_to_stop), *middle,
            "RELEASED" if result.released else "nothing",
            ("ok*" if result.notes else "ok") if result.ok else "FAILED", result.message]


def print_notes(outcomes: Sequence[CheckedOutcome]) -> None:
    """The ``ok*`` notes and ``FAILED`` problems under a drill table."""
    for outcome in outcomes:
        for note in getattr(outcome, "notes", ()):
            print(f"  ok* {outcome.label}: {note}")
        for problem in outcome.problems:
            print(f"  FAILED {outcome.label}: {problem}")


def drill_main(argv: Sequence[str] | None, *, name: str, parse: Callable[[Sequence[str]], Any],
               run: Callable[[Any, str], Any], report: Callable[[Any], None],
               record: Callable[[Any, Any], dict[str, Any]], failures: Callable[[Any], list[str]],
               what: str | None = None) -> int:
    """The life of a drill orchestrator: parse (``None`` after ``-h``), run in a temporary directory, print, write
    JSON, judge; 0 all as expected, 1 some not, 2 bad usage (one ``error:`` line naming ``what``)."""
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
        write_record(options.json, record(options, outcome))
    failed = failures(outcome)
    if failed:
        print(f"error: {what or f'{len(failed)} {name} case(s)'} did not behave as expected: {'; '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """No drill here: ``-h`` lists the drills; anything else is a usage error (exit 2) naming them."""
    drills = ("scenarios.drills.faults", "scenarios.drills.freeze", "scenarios.drills.malicious_input",
              "scenarios.drills.coalition -M3", "scenarios.drills.budget", "scenarios.drills.audit",
              "scenarios.drills.owners")
    doc = (f"{__doc__}\nRun a drill instead (each takes --quick and --json PATH):\n"
           + "".join(f"  python -m {command}\n" for command in drills))
    try:
        if parse_drill_argv(sys.argv[1:] if argv is None else argv, "python -m scenarios.drills.harness", doc) is None:
            return 0  # the help was printed
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"error: scenarios.drills.harness is the drills' shared library, not a drill; run one of: "
          f"{', '.join(drills)} (-h lists them)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
