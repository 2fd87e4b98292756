"""The drill harness: start three real local parties, collect what each did, judge and print the outcome.

What: the pieces every drill orchestrator (:mod:`scenarios.drills.faults`, :mod:`scenarios.drills.freeze`,
:mod:`scenarios.drills.malicious_input`) shares --

- the command line of an orchestrator (:func:`parse_drill_argv`: ``--quick``, ``--json PATH``, MPyC's
  ``-M3`` and ``-L``; any other MPyC option is refused);
- the data: the first Framingham rows with no missing value, cut into per-party files ``p{pid}.csv``
  (:func:`framingham_columns`, :func:`write_party_files`);
- running: :func:`run_three` starts one process per party, ``python -m scenarios.<module> ... -M3 -I i
  -B PORT --no-log`` on a free base port, polls their exits every 10 ms, ends a hung party (or a frozen
  one, once the others have exited) -- only processes it started -- and returns each party's
  :class:`PartyResult` (exit code and time, output, phase log of a :mod:`scenarios.drills.party`);
- results and tables: :class:`CheckedOutcome` / :class:`DrillResult` (the checks a drill had to pass,
  JSON-ready), :func:`format_table`, and :func:`drill_main`, the life of an orchestrator (parse, run in
  a temporary directory, print, write JSON, exit 0 / 1 / 2).

This process is only an orchestrator: it imports no MPyC runtime (only MPyC's option parser, inside
:func:`parse_drill_argv`).

Threat model drilled (docs/design.md, "Threat model" and "Command-line contract"): passive (semi-honest),
static adversary, at most ``t < m/2`` corrupted parties; a crashed or frozen party is a failure, not
an attack, and the others must stop with one line and exit 1 (2 for bad input), nothing released.
"""
from __future__ import annotations

import csv
import gzip
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scenarios.kit.records import write_record
from scenarios.kit.cli import ScenarioParser, UsageError
from scenarios.kit.outputs import check_output_path
from secure.parties import free_base_port as parties_free_base_port

__all__ = ["DrillOptions", "parse_drill_argv", "framingham_columns", "write_party_files", "PartySpec", "PartyResult",
           "free_base_port", "run_three", "CheckedOutcome", "DrillResult", "format_table", "drill_main", "REPO_ROOT",
           "PARTIES", "VICTIM", "QUICK_ROWS", "FULL_ROWS", "KENDALL_ARGS", "RESULT_NAME", "RELEASE_MARKERS",
           "HISTOGRAM_KENDALL_ARGS", "HISTOGRAM_ORDER"]

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAMINGHAM = os.path.join(REPO_ROOT, "scenarios", "data", "framingham.csv.gz")
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
_ORDER = ("connect", "parameter check", "intake", "seed", "kernel", "noise", "reveal", "shutdown")
_SILENT_PHASES = ("seed",)  # no messages with a fixed --seed
_LOST = re.compile(r"lost connection to party (\d+) during the (.+?) phase; nothing was released")
#: what a released result looks like on a party's stdout (the tables of ustat, ecdf, rank_auc)
RELEASE_MARKERS = ("private estimate", "Private U-statistic", "Private ECDF", "private quantiles",
                   "Private AUC")


# --------------------------------------------------------------------------------- command line


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
    parser = ScenarioParser(prog=prog, description=doc, runs_as="launcher")
    parser.add_argument("--quick", action="store_true", help="a small run (fewer rows and drills), for the tests")
    parser.add_argument("--json", default=None, metavar="PATH", help="write the outcomes to PATH (JSON)")
    if given.get("HELP"):
        mpyc_parser.print_help()
        return None
    if given.get("help"):
        parser.print_help()
        return None
    if given.get("M") not in (None, PARTIES):
        raise UsageError(f"the drills always run {PARTIES} local parties; drop -M {given.get('M')}")
    ignored = {"M", "bit_length", "no_log", "log_level", "f"}
    refused = sorted(key for key, value in given.items() if key not in ignored and value != defaults.get(key))
    if refused:
        raise UsageError(f"the drills launch their own local parties; MPyC option(s) {', '.join(refused)} "
                         "cannot be used here (only -M3 and -L)")
    args = parser.parse_args(rest)
    check_output_path(args.json, "--json")
    party_args: tuple[str, ...] = ()
    if given.get("bit_length") != defaults.get("bit_length"):
        party_args = ("-L", str(given["bit_length"]))
    return DrillOptions(bool(args.quick), args.json, party_args)


# ----------------------------------------------------------------------------------------- data


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
    return parties_free_base_port(parties, first=0)


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


# -------------------------------------------------------------------------------------- results


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


# ------------------------------------------------------------------------------------- printing


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Rows aligned under their headers, columns separated by `` | ``."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows)]
    lines = [" | ".join(str(cell).ljust(width) for cell, width in zip(line, widths)).rstrip()
             for line in [list(headers), *rows]]
    lines.insert(1, "-+-".join("-" * width for width in widths))
    return "\n".join(lines)


def _codes(codes: Sequence[int | None]) -> str:
    return " ".join("hung" if code is None else str(code) for code in codes)


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
        write_record(options.json, record(options, outcome))
    failed = failures(outcome)
    if failed:
        print(f"error: {len(failed)} {name} case(s) did not behave as expected: {'; '.join(failed)}",
              file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """This module runs no drill itself: ``-h`` prints what it is and which drills to run; anything else is
    a usage error (exit 2, one line) naming them."""
    drills = ("scenarios.drills.faults", "scenarios.drills.freeze", "scenarios.drills.malicious_input",
              "scenarios.drills.coalition -M3", "scenarios.drills.budget", "scenarios.drills.audit")
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
