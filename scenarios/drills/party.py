"""One party of a secure scenario that misbehaves on purpose, for the threat-model drills: it runs
``scenarios.ustat`` (or ``--scenario ecdf`` / ``rank_auc``) after wrapping a few functions of the secure layer
*in this process only* (what each drill option wraps: docs/drills.md).  Run it as one party among honest others::

    python -m scenarios.drills.party --crash-at kernel --data 'p{pid}.csv' --stat kendall \\
        --columns sysBP,diaBP --seed 4 -M3 -I 1 -B 40000 --no-log

Threat model drilled: passive, static, ``t < m/2``; a crash or freeze is a failure (the others stop, nothing
released); skipping the clipping is an active deviation that ``--clip secure`` must still bound."""
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
    """The drill options of this party (``error``: a usage error, shared with the other parties as a verdict)."""

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
    """The drill options (``error`` set on bad usage) and the rest of the command line (for the scenario)."""
    parser = ScenarioParser(prog="python -m scenarios.drills.party", description=__doc__, add_help=False)
    parser.add_argument("--crash-at", metavar="PHASE", help="os._exit(137) on entering PHASE, like kill -9")
    parser.add_argument("--skip-local-clipping", action="store_true", help="share raw values")
    parser.add_argument("--phase-log", metavar="PATH", help="one line per phase entered: name, bytes sent, time")
    parser.add_argument("--freeze-at", metavar="PHASE", help="SIGSTOP on entering PHASE")
    parser.add_argument("--scenario", default="ustat", metavar="NAME", help="the scenario run (ustat, ecdf, rank_auc)")
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
    """Wrap the secure layer's functions in this process, as the drill options ask (after ``mpyc.runtime`` was
    imported with this party's options: :func:`main` calls it from inside the scenario's option parsing)."""
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


def run_wrapped(module: str, program: str, rest: Sequence[str], install: Callable[[], None], error: str | None, *,
                extra: Sequence[str] = (), help_first: bool = True) -> int:
    """Run one party of ``scenarios.<module>`` whose option parsing first raises ``error`` (a usage verdict shared
    with the others) or runs ``install`` (after ``mpyc.runtime`` took its options; not for ``-h``).  Parties this
    one launches (``-M m`` without ``-I``) rerun ``program`` with ``extra`` and ``rest`` only: honestly."""
    sys.argv = [program, *extra, *rest]  # before the scenario is imported, in case that imports MPyC
    scenario = importlib.import_module(f"scenarios.{module}")
    original_parse: Callable[[Sequence[str]], Any] = getattr(scenario, "parse_options")

    def parse_wrapped(own: Sequence[str]) -> Any:
        words = list(own)
        if error is not None and not help_first:
            raise UsageError(error)
        if asks_for_help(words):  # the scenario's help only: MPyC is not started, nothing to wrap
            return original_parse(words)
        if error is not None:
            raise UsageError(error)
        install()
        if extra and extra[0] in words:  # kept on the command line only for the parties launched by this one
            del words[words.index(extra[0]):words.index(extra[0]) + len(extra)]
        return original_parse(words)

    setattr(scenario, "parse_options", parse_wrapped)
    try:
        return int(scenario.main(None))
    finally:
        setattr(scenario, "parse_options", original_parse)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of ``scenarios.ustat`` (or ``--scenario``) with the drills installed; the exit code."""
    options, rest = split_drill_options(sys.argv[1:] if argv is None else argv)
    same = [] if options.scenario == "ustat" else ["--scenario", options.scenario]
    code = run_wrapped(options.scenario, os.path.abspath(__file__), rest, lambda: install_drills(options),
                       options.error, extra=same, help_first=False)
    if asks_for_help(rest):  # help printed; MPyC never started, so no bytes to log
        return code
    _append_log(options.phase_log, "exit", code, _bytes_so_far(), f"{time.monotonic():.6f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
