"""The launcher: a party's whole life on the command line -- launch, connect, agree, run, stop, nobody left hanging.
Every scenario and script runs through :func:`run_parties` (scripts through :func:`run`); below ``scenarios/``
this module alone reads ``sys.argv`` and MPyC's option parser.  Threat model: passive, static, ``t < m/2``;
what crosses parties here (verdicts, the digest of the public parameters) is public by declaration.
Contract, checks and launching: docs/session.md."""
from __future__ import annotations

import contextlib
import math
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from secure.errors import DEFAULT_SILENCE_LIMIT, InputError

if TYPE_CHECKING:
    from secure.intake import Party

__all__ = ["SessionOptions", "split_session_options", "check_option_names", "check_mpyc_usage", "check_topology", "free_base_port",
           "launch_local_parties", "child_error_line", "settle_children", "run_party", "dead_child", "party_index",
           "mpyc_options", "mpyc_help", "run_parties", "run", "Deliver", "DEFAULT_SILENCE_LIMIT", "CHILD_GRACE_SECONDS"]

#: seconds party 0 waits for its launched parties after a success (10 after a failure)
CHILD_GRACE_SECONDS = 60.0

#: what a run's body may return: a zero-argument callable run after the orderly shutdown, or ``None``
Deliver = Callable[[], Any] | None


@dataclass
class SessionOptions:
    """The options every run takes, besides MPyC's and its own (``error``: a usage error found in them or in
    the option names, shared as a verdict; ``rest``: the other words)."""

    silence_limit: float = DEFAULT_SILENCE_LIMIT
    allow_t0: bool = False
    error: str | None = None
    rest: list[str] = field(default_factory=list)


def split_session_options(argv: Sequence[str]) -> SessionOptions:
    """Take ``--silence-limit SECONDS`` and ``--allow-t0`` off ``argv``; the rest goes to ``rest``."""
    common = SessionOptions()
    words = iter(argv)
    for word in words:
        if word == "--":
            common.rest.extend([word, *words])
            break
        if word == "--allow-t0":
            common.allow_t0 = True
        elif word == "--silence-limit" or word.startswith("--silence-limit="):
            text = word.split("=", 1)[1] if "=" in word else next(words, None)  # else the value is the next word
            try:
                value = float(text) if text is not None else math.nan
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and value > 0):
                common.error = common.error or f"--silence-limit must be a positive number of seconds, got {text!r}"
            else:
                common.silence_limit = value
        else:
            common.rest.append(word)
    return common


def _mpyc_parser() -> Any:
    """MPyC's own option parser, fresh (``mpyc._get_arg_parser``: the one place it is called); ``mpyc``
    imported without options if ``sys.argv`` would make it exit, its log on stderr (docs/session.md)."""
    import io
    import logging

    swallowed = io.StringIO()
    if "mpyc" not in sys.modules:
        try:
            with contextlib.redirect_stderr(swallowed):
                import mpyc  # noqa: F401
        except SystemExit:
            saved, sys.argv = sys.argv, sys.argv[:1]
            try:
                import mpyc  # noqa: F401
            finally:
                sys.argv = saved
            logging.getLogger().setLevel(logging.WARNING)  # the run ends in its one usage line: no log around it
    for handler in logging.getLogger().handlers:  # --no-log sets up logging on stderr: the real one
        if isinstance(handler, logging.StreamHandler) and handler.stream in (sys.stdout, sys.__stdout__, swallowed):
            handler.setStream(sys.stderr)
    return sys.modules["mpyc"]._get_arg_parser()


def mpyc_options(argv: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """MPyC's options in ``argv`` that differ from MPyC's defaults (by ``argparse`` name: ``M``, ``bit_length``,
    ``HELP``, ...), and the other words."""
    parser = _mpyc_parser()
    defaults = vars(parser.parse_known_args([])[0])
    given, rest = parser.parse_known_args(list(argv))
    return {key: value for key, value in vars(given).items() if value != defaults.get(key)}, rest


def mpyc_help() -> str:
    """MPyC's own usage text (what ``-H`` prints)."""
    return str(_mpyc_parser().format_help())


def _explicit_bit_length(argv: Sequence[str]) -> int | None:
    """The ``-L`` (``--bit-length``) given in ``argv``, or ``None`` for MPyC's default (not mistaken for a choice)."""
    parser = _mpyc_parser()
    parser.set_defaults(bit_length=None)
    bits = parser.parse_known_args(list(argv))[0].bit_length
    return None if bits is None else int(bits)


def check_option_names(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Refuse abbreviations of MPyC's long options, which MPyC's parser would silently expand (docs/session.md).
    :return: ``(error or None, argv without the refused words)``."""
    mpyc_names = [name for action in _mpyc_parser()._actions for name in action.option_strings if name.startswith("--")]
    kept: list[str] = []
    error: str | None = None
    for position, word in enumerate(argv):
        if word == "--":
            kept.extend(argv[position:])
            break
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) > 2 and name not in mpyc_names:
            expansions = [option for option in mpyc_names if option.startswith(name)]
            if len(expansions) > 1:
                error = error or (f"ambiguous option {name} (could be {', '.join(expansions)}): give it in full")
                continue
            if expansions:
                error = error or (f"unknown option {name} (options must be spelled out in full; MPyC would read it "
                                  f"as {expansions[0]})")
                continue
        kept.append(word)
    return error, kept


def check_mpyc_usage(argv: Sequence[str]) -> str | None:
    """What MPyC's own parser would refuse in ``argv`` (abbreviations already taken off), as one line, or
    ``None`` (``MPyC option -M: expected one argument``; docs/session.md)."""
    import argparse

    parser = _mpyc_parser()
    parser.exit_on_error = False

    def refuse(message: str) -> Any:
        raise argparse.ArgumentError(None, message)

    parser.error = refuse  # type: ignore[method-assign]
    try:
        parser.parse_known_args(list(argv))
    except argparse.ArgumentError as exc:
        return f"MPyC {exc}".replace("MPyC argument ", "MPyC option ")
    return None


def check_topology(argv: Sequence[str], *, allow_t0: bool = False) -> tuple[str | None, str | None]:
    """Check ``-M``/``-P``/``-T``/``-B`` before MPyC is imported: ``(fatal, refusal)``, a problem MPyC cannot
    start with (exit 2 at once) and a run that must not go on (``t = 0``, ``m > 1``: a shared verdict);
    docs/session.md."""
    options, _ = _mpyc_parser().parse_known_args(list(argv))
    if options.config:
        return None, None  # the party list is in .config/; checked after start (see run_parties)
    if options.parties:
        seats: dict[tuple[str, str], int] = {}
        for index, entry in enumerate(options.parties):
            host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
            if options.base_port:
                port = str(options.base_port + index)
            elif not port:
                port = str(11365 + index)
            address = (host or "localhost", port)
            if address in seats:
                return (f"-P gives the same address {address[0]}:{address[1]} to parties {seats[address]} and {index}; "
                        "every party needs its own host:port"), None
            seats[address] = index
        parties = len(seats)
    else:
        parties = options.M if options.M is not None else 1
        if parties < 1:  # -M 0 is not "no -M": refused, not run as one party
            return f"-M must be at least 1, got {parties}", None
    threshold = options.threshold if options.threshold is not None else (parties - 1) // 2
    return _check_threshold(parties, threshold, allow_t0)


def _check_threshold(parties: int, threshold: int, allow_t0: bool) -> tuple[str | None, str | None]:
    if threshold < 0 or 2 * threshold + 1 > parties:
        return (f"-T {threshold} is impossible with {parties} parties: Shamir secret sharing needs 2t + 1 <= m, "
                f"so t <= {(parties - 1) // 2}"), None
    if parties > 1 and threshold == 0 and not allow_t0:
        why = ("two parties cannot hide their inputs from each other with Shamir secret sharing"
               if parties == 2 else "with -T 0 every share of an input equals the input")
        return None, (f"threshold t = 0 with {parties} parties hides nothing: {why} (Shamir needs 2t + 1 <= m); "
                      f"use -M3 or more parties with t >= 1, or --allow-t0 to run knowingly in the clear")
    return None, None


def free_base_port(parties: int, *, first: int = 1, attempts: int = 200) -> int:
    """A base port ``b`` such that ``b + first .. b + parties - 1`` are free on this host now (party 0 never listens).
    :raise InputError: no such range found (the user must give ``-B PORT``)."""
    chooser = random.SystemRandom()
    for _ in range(attempts):
        base = chooser.randrange(33000, 59000 - parties)  # away from the tests' fixed ranges
        with contextlib.ExitStack() as probes:  # every probe closed before the next attempt or the return
            try:
                for index in range(first, parties):
                    probes.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)).bind(("", base + index))
            except OSError:
                continue
            return base
    raise InputError(f"no {parties - first} consecutive free ports found; give -B PORT")


#: each launched party's captured stderr (a temporary file), to quote its error when it fails early
_child_errors: dict[int, IO[bytes] | None] = {}


def launch_local_parties(argv: Sequence[str] | None = None, *,
                         script_args: Sequence[str] = ()) -> list[subprocess.Popen[bytes]]:
    """With ``-M m`` (m > 1), no ``-I``, ``-P`` or ``-C``: start parties 1..m-1 and become party 0 (``-I 0``
    appended to ``sys.argv``); before ``mpyc.runtime`` is imported (docs/session.md).
    :return: the child processes (empty when nothing was launched).
    :raise InputError: no free ports (give ``-B``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    options, _ = _mpyc_parser().parse_known_args(check_option_names(argv)[1])
    if options.config or options.parties or (options.M or 0) <= 1 or options.index is not None \
            or options.HELP or options.VERSION or options.help:
        return []
    parties = options.M
    if not options.base_port:
        argv += ["-B", str(free_base_port(parties))]
    command = [sys.executable, os.path.abspath(sys.argv[0]), *script_args, *argv]
    children = []
    for index in range(1, parties):
        if options.output_file:
            sink: Any = open(f"party{parties}_{index}.log", "a")
            errors: Any = subprocess.STDOUT
        else:
            sink = subprocess.DEVNULL
            errors = tempfile.TemporaryFile()
        child = subprocess.Popen(command + ["-I", str(index)], stdout=sink, stderr=errors, stdin=subprocess.DEVNULL)
        _child_errors[id(child)] = errors if errors is not subprocess.STDOUT else None
        children.append(child)
    sys.argv = [sys.argv[0], *argv, "-I", "0"]
    return children


def child_error_line(child: subprocess.Popen[bytes]) -> str | None:
    """The first ``error:`` line of a launched party, else the last line it printed (a traceback's)."""
    handle = _child_errors.get(id(child))
    if handle is None:
        return None
    try:
        size = handle.seek(0, os.SEEK_END)
        handle.seek(max(0, size - (1 << 16)))  # the end: its log lines (on stderr) come before the error
        lines = [line.strip() for line in handle.read(1 << 16).decode("utf-8", "replace").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    errors = [line for line in lines if line.startswith("error:")]
    said = [line for line in lines if not _MPYC_LOG_LINE.match(line)]
    return errors[0] if errors else said[-1] if said else None


#: a line of MPyC's log (``{asctime} {message}``), which a launched party writes on stderr too
_MPYC_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def settle_children(children: Sequence[subprocess.Popen[bytes]], code: int, *, grace: float | None = None) -> int:
    """Wait for the launched parties (``grace`` seconds together: default 60 after a success, 10 after a
    failure), kill those still running; the exit code: ``code`` if it failed, else 1 if a child failed."""
    import time

    failed: list[str] = []
    deadline = time.monotonic() + (grace if grace is not None else CHILD_GRACE_SECONDS if code == 0 else 10.0)
    for index, child in enumerate(children, start=1):
        try:
            child_code = child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
            child_code = -9
        if child_code != 0 and code == 0:
            failed.append(f"party {index} exited with code {child_code}")
    if failed:
        print(f"error: {'; '.join(failed)}", file=sys.stderr)
        return 1
    return code


def run_party(session: Callable[[], Any]) -> int:
    """Run one party's async ``session()`` on MPyC and map failures to exit codes (no traceback).
    :return: 0 on success, 2 for bad usage/input, 1 for a protocol failure."""
    from mpyc.runtime import mpc

    from secure.session import InputError, ProtocolFailure, mark_stopping, party_id, stop_agreed

    try:
        mpc.run(session())
    except (Exception, KeyboardInterrupt) as exc:  # one line, and the others are not left hanging
        stop_agreed()  # after an agreed verdict (only then): every party has it before any connection closes
        mark_stopping()
        if isinstance(exc, InputError):
            print(f"error: {exc}", file=sys.stderr, flush=True)
            return 2
        bug = not isinstance(exc, (ProtocolFailure, KeyboardInterrupt))  # not a user error, nor a lost party
        said = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
        if bug:
            said = f"internal error ({type(exc).__name__}: {exc}); set USTAT_TRACEBACK=1 to see where"
        print(f"error: party {party_id()}: {said}", file=sys.stderr, flush=True)
        if bug and os.environ.get("USTAT_TRACEBACK"):
            raise
        return 1
    return 0


def dead_child(children: Sequence[subprocess.Popen[bytes]]) -> str | None:
    """The ``check_peers`` problem of :func:`secure.session.start_session`: a launched party that died, or ``None``."""
    for index, child in enumerate(children, start=1):
        code = child.poll()
        if code is not None:
            said = child_error_line(child)
            return f"party {index} exited with code {code} before all parties connected" + (f": {said}" if said else "")
    return None


def party_index(argv: Sequence[str], *, parsable: bool = True) -> int:
    """This party's ``-I`` from the command line (0 when not given), before MPyC is imported; ``parsable=False``:
    MPyC's parser cannot read ``argv``, so the words are read one by one."""
    if parsable:
        return int(_mpyc_parser().parse_known_args(list(argv))[0].index or 0)
    words = list(argv)
    found = [words[at + 1] for at in range(len(words) - 1) if words[at] in ("-I", "--index")]
    return next((int(word) for word in found if word.isdigit()), 0)


def run_parties(parse: Callable[[list[str]], Any], body: Callable[[Any], Awaitable[Any]],
                public: Callable[[Any], Mapping[str, Any]], argv: Sequence[str] | None = None, *,
                usage_errors: tuple[type[Exception], ...] = (InputError,), t0_privacy: str | None = None,
                script_args: Sequence[str] = ()) -> int:
    """One party's whole life: check the command line, launch local parties, parse, connect, agree,
    run ``body``, stop, then deliver (the parameters, ``t0_privacy`` included: docs/session.md).
    :return: the process exit code."""
    names_error, checked = check_option_names(list(sys.argv[1:] if argv is None else argv))
    common = split_session_options(checked)
    allow_t0 = common.allow_t0 or t0_privacy is not None
    mpyc_error = check_mpyc_usage(common.rest)  # MPyC's parser cannot read the command line: its -I or 0
    fatal, refusal = (mpyc_error, None) if mpyc_error else check_topology(common.rest, allow_t0=allow_t0)
    try:
        children = [] if fatal else launch_local_parties(argv, script_args=script_args)
    except InputError as exc:
        fatal = str(exc)
    if fatal:  # no party launched: one line, exit 2
        index = party_index(common.rest, parsable=mpyc_error is None)
        print(f"error: party {index}: {fatal}", file=sys.stderr, flush=True)
        return 2
    if argv is None or children:  # MPyC reads sys.argv: it must never see a refused abbreviation
        sys.argv = [sys.argv[0], *check_option_names(sys.argv[1:])[1]]
    code = 1
    try:
        from mpyc.runtime import mpc  # noqa: F401  (MPyC takes its own options off sys.argv here)

        from secure.session import (RunSettings, agree_parameters, agree_verdict, on_fatal, run_with, start_session,
                                    stop_session)

        on_fatal(lambda: None if settle_children(children, 1, grace=3.0) else None)
        own = split_session_options(sys.argv[1:] if argv is None or children
                                    else _mpyc_parser().parse_known_args(list(checked))[1]).rest
        if mpc.options.config and refusal is None:
            fatal, refusal = _check_threshold(len(mpc.parties), int(mpc.threshold), allow_t0)
            refusal = fatal or refusal
        usage_error: str | None = names_error or common.error or refusal
        settings = RunSettings.of_runtime(bit_length=_explicit_bit_length(common.rest))
        options: Any = None
        if usage_error is None:
            try:
                options = parse(own)
            except usage_errors as exc:
                usage_error = str(exc)

        async def session() -> None:
            await start_session(check_peers=lambda: dead_child(children), silence_limit=common.silence_limit)
            await agree_verdict(usage_error)
            await agree_parameters({**public(options), "-M": settings.parties, "-T": settings.threshold,  # MPyC's
                                    "-L": int(mpc.options.bit_length), "-K": settings.sec_param})  # must agree too
            if len(mpc.parties) > 1 and mpc.threshold == 0:
                notice = ("NOT HIDING INPUTS (--allow-t0): threshold t = 0, every party's shares of the other parties' "
                          "inputs are those inputs; only the released value is differentially private")
                if t0_privacy is not None:
                    notice = f"threshold t = 0 (no Shamir secret sharing runs here): {t0_privacy}"
                print(notice, flush=True)
            deliver = await body(options)
            await stop_session()
            if callable(deliver):
                deliver()

        try:
            if mpc.options.ssl and len(mpc.parties) > 1:
                from secure.tls import bind_seats, check_party

                check_party(mpc.pid)
                bind_seats()  # a peer is accepted only in the seat its certificate names
        except InputError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)
            code = 2
        else:
            with run_with(settings):
                code = run_party(session)
    finally:
        code = settle_children(children, code)
    return code


def run(job: Callable[[Party], Awaitable[Deliver]], *, argv: Sequence[str] | None = None,
        public: Mapping[str, Any] | None = None, script_args: Sequence[str] | None = None) -> int:
    """Run a script's ``job`` as one party, with every guarantee of a scenario (``-M3`` launches the others;
    ``public``, ``script_args``: docs/session.md).
    :return: 0 done; 2 bad usage or bad input at any party (one line ``error: party i: ...``);
        1 a protocol failure (lost or silent party, overflow).
    :raise TypeError: ``script_args`` not a list of strings."""
    agreed = dict(public or {})
    own: list[str] = []
    if script_args is not None:
        if isinstance(script_args, str) or not all(isinstance(word, str) for word in script_args):
            raise TypeError(f"script_args must be a list of the script's own command-line words, got {script_args!r}")
        own = list(script_args)
        argv = list(sys.argv[1:] if argv is None else argv)
        sys.argv = [sys.argv[0], *argv]  # MPyC reads sys.argv: only its own options (and ours) are left there

    def parse(words: list[str]) -> None:
        unknown = [word for word in words if word != "--"]
        if unknown:
            raise InputError(f"unknown option {unknown[0]} (a script takes MPyC's options such as -M, -I, -T "
                             "and --silence-limit, --allow-t0)")

    async def body(_: Any) -> Deliver:
        from secure.intake import Party
        from secure.session import party_count, party_id, threshold

        return await job(Party(party_id(), party_count(), threshold()))

    return run_parties(parse, body, lambda _: agreed, argv, script_args=own)
