"""One party of a secure scenario that misbehaves on purpose, for the threat-model drills.

This module runs ``scenarios.ustat`` (the main job, unchanged) as one MPyC party, or with
``--scenario ecdf`` / ``--scenario rank_auc`` one of those scenarios. Given the drill
options below, it first wraps a few functions of the secure layer, *in this process only*. The
production code is never changed. :mod:`scenarios.drills.faults` and :mod:`scenarios.drills.malicious_input`
launch it as one of three parties and run the honest parties as plain ``scenarios.ustat``.

Run it as one party among others (every other argument is passed to ``scenarios.ustat``)::

    python -m scenarios.drills.party --crash-at kernel --data 'p{pid}.csv' --stat kendall \\
        --columns sysBP,diaBP --seed 4 -M3 -I 1 -B 40000 --no-log
    python -m scenarios.drills.party --skip-local-clipping --clip secure --data 'p{pid}.csv' \\
        --stat gini --columns sysBP --domain sysBP=0:300:8 -M3 -I 2 -B 40000 --no-log

The other parties run ``python -m scenarios.ustat`` (or the ``--scenario``) with the same options
and their own ``-I``. With ``-M m`` and no ``-I``, this process becomes party 0 (the drill party). It launches
parties ``1..m-1`` as this file *without* the drill options, so they are honest.

Drill options (none of them is a prefix of an MPyC option):

``--scenario NAME``
    The scenario this party runs: ``ustat`` (default), ``ecdf`` or ``rank_auc``. Parties
    launched by this one (``-M m`` without ``-I``) run the same scenario, honestly.
``--freeze-at PHASE``
    Sends this process ``SIGSTOP`` the moment the named phase is entered: a host that stops
    answering without closing its connections. PHASE is one of those of ``--crash-at`` or ``sort``
    (``rank_auc``). The phase log line is written first, so its timestamp is the freeze. The
    process never resumes by itself; whoever started it ends it (the freeze drill sends ``SIGKILL``
    once the other parties have exited).

``--crash-at PHASE``
    Ends this process abruptly, with ``os._exit(137)``, at the moment the named phase is entered.
    There is no cleanup, no flushing of MPyC's connections and no goodbye to the peers, so it
    behaves like ``kill -9``. PHASE is a phase of :func:`secure.session.set_phase`:
    ``parameter check``, ``budget`` (the privacy-budget agreement, before anything is reserved),
    ``intake``, ``seed``, ``kernel``, ``noise``, ``reveal`` or ``shutdown``
    (``-`` or ``_`` may stand for the space). This works by wrapping ``secure.session.set_phase``
    and the name ``secure.meter.set_phase`` that the cost meter imported from it.
``--skip-local-clipping``
    This party shares its raw fixed-point values, without clipping them to the declared domain.
    It also prints 0 values clipped (its own, local count: clip counts are never shared), as a party
    that skipped its domain check would. This works
    by wrapping ``secure.intake.to_fixed_point`` (and the name ``dp.umpc.protocol.to_fixed_point``) so
    that it always runs with ``clip=False``. With ``--clip secure`` the intake already shares raw
    values (``dp.umpc.protocol.prepare_rows`` passes ``clip=False``), so the wrapper changes only the
    reported count there. The clipping inside MPC (:func:`secure.clipping.clip_secure`) is left
    alone: it is what the drill tests. With ``--clip local`` nothing clips this party's rows.
``--phase-log PATH``
    Appends one tab-separated line per phase entered: ``phase``, the name, the bytes this party
    had sent so far and a monotonic timestamp. It appends a final ``exit`` line with the exit code
    and the bytes sent, unless the process crashed or the watchdog ended it. The orchestrators use
    it to show which phases a refused run reached, and how many bytes it sent.

A bad drill option is a usage error like any other. It is shared with the other parties, and
every party exits 2 with the same line.

Threat model being drilled: the suite claims a passive (semi-honest), static adversary corrupting
at most ``t < m/2`` parties. A crash is a failure, not an attack: the others must stop within
seconds and release nothing. A frozen party is a failure too: the others must stop within their
``--silence-limit`` and release nothing. A party that skips its clipping steps outside the passive model. The
claim under test is that ``--clip secure`` still bounds its influence by the sensitivity.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

if __package__ in (None, ""):  # run as a file (party 0 relaunching itself): import the installed packages
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from scenarios.kit.cli import ScenarioParser, UsageError, asks_for_help

__all__ = ["main", "DrillOptions", "split_drill_options", "install_drills", "PHASES", "CRASH_EXIT_CODE",
           "SCENARIOS"]

#: phases named by :func:`secure.session.set_phase`, in the order a run enters them (``sort``:
#: ``rank_auc`` only, where it stands in place of ``seed`` and ``kernel``)
PHASES: tuple[str, ...] = ("connect", "parameter check", "budget", "intake", "seed", "kernel", "histogram", "sums", "sort",
                           "noise", "reveal", "shutdown")
#: the scenarios this party can run (``--scenario``)
SCENARIOS: tuple[str, ...] = ("ustat", "ecdf", "rank_auc")
#: exit code of a crashed drill party (what a shell reports for ``kill -9``: 128 + 9)
CRASH_EXIT_CODE = 137


@dataclass(frozen=True)
class DrillOptions:
    """The drill options of this party.

    :param crash_at: phase at whose entry the process ends abruptly, or ``None``.
    :param freeze_at: phase at whose entry the process stops itself (``SIGSTOP``), or ``None``.
    :param scenario: the scenario this party runs (one of :data:`SCENARIOS`).
    :param skip_local_clipping: share raw values, without local clipping or domain count.
    :param phase_log: file to which phase entries are appended, or ``None``.
    :param error: a usage error in the drill options, shared with the other parties as a verdict.
    """

    crash_at: str | None = None
    skip_local_clipping: bool = False
    phase_log: str | None = None
    error: str | None = None
    freeze_at: str | None = None
    scenario: str = "ustat"


def _phase_name(text: str, option: str = "--crash-at") -> str:
    """``parameter-check`` -> ``parameter check``; raises :class:`UsageError` for an unknown phase."""
    name = text.strip().lower().replace("-", " ").replace("_", " ")
    if name not in PHASES or name == "connect":
        raise UsageError(f"{option} expects one of: {', '.join(p for p in PHASES if p != 'connect')}; "
                         f"got '{text}'")
    return name


def split_drill_options(argv: Sequence[str]) -> tuple[DrillOptions, list[str]]:
    """Separate the drill options from the rest of the command line, which goes to ``scenarios.ustat``.

    :param argv: the whole command line of this party, without the program name.
    :return: the drill options (with ``error`` set on bad usage) and the remaining arguments.
    """
    parser = ScenarioParser(prog="python -m scenarios.drills.party", description=__doc__, add_help=False)
    parser.add_argument("--crash-at", default=None, metavar="PHASE")
    parser.add_argument("--skip-local-clipping", action="store_true")
    parser.add_argument("--phase-log", default=None, metavar="PATH")
    parser.add_argument("--freeze-at", default=None, metavar="PHASE")
    parser.add_argument("--scenario", default="ustat", metavar="NAME")
    if asks_for_help(argv):  # the drill options, then the scenario's own help (printed by its run_scenario)
        parser.print_help()
        print("\nEvery other option goes to the scenario (-h/--help: show this help and the scenario's, then exit); "
              "the scenario's help follows.\n", flush=True)
    cleaned = [arg for arg in argv if not arg.startswith(("--crash-at", "--skip-local-clipping", "--phase-log",
                                                          "--freeze-at", "--scenario"))]
    try:
        known, rest = parser.parse_known_args(list(argv))
    except UsageError as exc:
        return DrillOptions(error=str(exc)), cleaned
    scenario = known.scenario if known.scenario in SCENARIOS else "ustat"
    try:
        crash_at = _phase_name(known.crash_at) if known.crash_at is not None else None
        freeze_at = _phase_name(known.freeze_at, "--freeze-at") if known.freeze_at is not None else None
        if known.scenario not in SCENARIOS:
            raise UsageError(f"--scenario expects one of: {', '.join(SCENARIOS)}; got '{known.scenario}'")
        if crash_at is not None and freeze_at is not None:
            raise UsageError("give --crash-at or --freeze-at, not both")
    except UsageError as exc:
        return DrillOptions(error=str(exc), scenario=scenario), cleaned
    return DrillOptions(crash_at, bool(known.skip_local_clipping), known.phase_log, None, freeze_at,
                        known.scenario), rest


def _append_log(path: str | None, *fields: object) -> None:
    if path is None:
        return
    with open(path, "a", encoding="utf-8") as handle:
        handle.write("\t".join(str(field) for field in fields) + "\n")


def _bytes_so_far() -> int:
    from secure.meter import bytes_sent

    try:
        return int(bytes_sent())
    except Exception:  # before the runtime has any connection
        return 0


def install_drills(options: DrillOptions) -> None:
    """Wrap the secure layer's functions in this process, as the drill options ask.

    Call only after ``mpyc.runtime`` has been imported with this party's MPyC options, since
    :mod:`secure.session` imports it. :func:`main` calls it from inside ``scenarios.ustat``'s option
    parsing, which runs after the import.
    """
    import dp.umpc.protocol
    import secure.intake
    import secure.meter
    import secure.session

    original_set_phase: Callable[[str], None] = secure.session.set_phase

    def drill_set_phase(name: str) -> None:
        _append_log(options.phase_log, "phase", name, _bytes_so_far(), f"{time.monotonic():.6f}")
        if options.crash_at is not None and name == options.crash_at:
            os._exit(CRASH_EXIT_CODE)  # like kill -9: no cleanup, no flush, no goodbye to the peers
        if options.freeze_at is not None and name == options.freeze_at:
            sys.stdout.flush()
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSTOP)  # a frozen host: connections open, nothing answers
        original_set_phase(name)

    if options.crash_at is not None or options.freeze_at is not None or options.phase_log is not None:
        secure.session.set_phase = drill_set_phase  # type: ignore[assignment]
        secure.meter.set_phase = drill_set_phase  # type: ignore[assignment]

    if options.skip_local_clipping:
        original_to_fixed_point = secure.intake.to_fixed_point

        def raw_to_fixed_point(values: Any, specs: Sequence[Any], *, clip: bool = True) -> Any:
            fixed = original_to_fixed_point(values, specs, clip=False)
            fixed.clipped = {name: 0 for name in fixed.clipped}  # the skipped domain check counts nothing
            return fixed

        secure.intake.to_fixed_point = raw_to_fixed_point  # type: ignore[assignment]
        dp.umpc.protocol.to_fixed_point = raw_to_fixed_point  # type: ignore[assignment]


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of ``scenarios.ustat`` (or ``--scenario``) with the drills installed; returns the
    exit code.

    :param argv: the command line without the program name (default ``sys.argv[1:]``).
    """
    options, rest = split_drill_options(sys.argv[1:] if argv is None else argv)
    # Parties launched by this one (-M m without -I) rerun this file without the drill options
    # (but in the same scenario).  Set before the scenario is imported, in case that imports MPyC.
    same = [] if options.scenario == "ustat" else ["--scenario", options.scenario]
    sys.argv = [os.path.abspath(__file__), *same, *rest]
    scenario = importlib.import_module(f"scenarios.{options.scenario}")
    original_parse: Callable[[Sequence[str]], Any] = getattr(scenario, "parse_options")

    def parse_with_drills(own: Sequence[str]) -> Any:
        # Runs inside scenarios.kit.cli.run_scenario, after mpyc.runtime has taken its options from argv.
        if options.error is not None:
            raise UsageError(options.error)
        if asks_for_help(own):  # the scenario's help only: MPyC is not started, nothing to wrap
            return original_parse(list(own))
        install_drills(options)
        words = list(own)
        if same and "--scenario" in words:  # kept on the command line only for the parties launched by this one
            del words[words.index("--scenario"):words.index("--scenario") + 2]
        return original_parse(words)

    setattr(scenario, "parse_options", parse_with_drills)
    try:
        code = int(scenario.main(None))
    finally:
        setattr(scenario, "parse_options", original_parse)
    if asks_for_help(rest):  # help printed; MPyC never started, so no bytes to log
        return code
    _append_log(options.phase_log, "exit", code, _bytes_so_far(), f"{time.monotonic():.6f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
