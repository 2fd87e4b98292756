"""What every scenario shares: launching local parties, parsing options, exit codes, printing.

The command-line contract (DESIGN):

- MPyC's own options come first-class (``-M -I -P -C -T -B -L -K ...``, ``--ssl``, ``--no-*``,
  ``--output-*``, ``--log-level``); scenario options are lower-case long options chosen so that none
  is a prefix of an MPyC option (MPyC's parser accepts abbreviations and would swallow them).
- ``-M m`` without ``-I``: this process becomes party 0 and launches parties ``1..m-1`` itself,
  as ``python .../scenarios/<name>.py <same argv> -I i`` (output discarded unless ``--output-file``,
  then ``party{m}_{i}.log``), then *waits* for them and reports a child that failed.
- Exit codes: 0 done; 2 bad usage or bad input (one line ``error: party i: ...`` on stderr, the
  same at every party); 1 a failure during the protocol (lost party, overflow), one line too.
- Only exact option names: an abbreviation that MPyC's parser would expand (``--se`` for
  ``--sec-param``) is refused, and so is an abbreviation of a scenario option.
- Shamir's scheme needs ``2t + 1 <= m``; ``t = 0`` with ``m > 1`` hides nothing (a party's share of
  another's input is that input) and is refused unless ``--allow-t0`` says the run is meant to
  compute in the clear; an impossible ``-T`` exits 2 at once.
- Local ``-M m`` runs pick free ports unless ``-B``, ``-P`` or ``-C`` is given; a launched party that
  fails before all parties connected is reported with the first line of its error.
- Options every scenario takes: ``--silence-limit SECONDS`` (default 60: how long a party may stay
  silent while another waits for it, before everyone stops) and ``--allow-t0``.
"""
from __future__ import annotations

import argparse
import logging
import math
import os
import random
import socket
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, NoReturn

__all__ = ["UsageError", "ScenarioParser", "launch_local_parties", "settle_children", "run_party",
           "print_table", "format_bytes", "children_alive", "run_scenario", "CommonOptions",
           "split_common_options", "check_option_names", "check_topology", "free_base_port",
           "DEFAULT_SILENCE_LIMIT"]

CHILD_GRACE_SECONDS = 60.0

#: seconds a party may stay silent while another party waits for it (``--silence-limit``)
DEFAULT_SILENCE_LIMIT = 60.0


class UsageError(Exception):
    """Bad command-line usage (exit 2, shared with the other parties like any bad input)."""


class ScenarioParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`UsageError` instead of exiting.

    A party must not exit on its own before the others hear its verdict, or they would wait for it.
    Abbreviations are refused (``allow_abbrev=False``): ``--eps`` is not ``--epsilon``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.startswith("unrecognized arguments: "):
            unknown = [word for word in message.split(": ", 1)[1].split() if word.startswith("-")]
            if unknown:
                raise UsageError(f"unknown option {unknown[0]} (options must be spelled out in full)")
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            raise UsageError(message or "bad usage")
        if message:
            print(message, end="")
        raise SystemExit(0)


@dataclass
class CommonOptions:
    """The options every scenario takes, besides MPyC's and its own.

    :param silence_limit: seconds a party may stay silent while another waits for it.
    :param allow_t0: run with threshold ``t = 0`` and ``m > 1`` although it hides nothing.
    :param error: a usage error found in these options or in the option names (shared as a verdict).
    """

    silence_limit: float = DEFAULT_SILENCE_LIMIT
    allow_t0: bool = False
    error: str | None = None
    rest: list[str] = field(default_factory=list)


def split_common_options(argv: Sequence[str]) -> CommonOptions:
    """Take ``--silence-limit SECONDS`` and ``--allow-t0`` off ``argv``; the rest goes to ``rest``."""
    common = CommonOptions()
    words = list(argv)
    index = 0
    while index < len(words):
        word = words[index]
        if word == "--":
            common.rest.extend(words[index:])
            break
        if word == "--allow-t0":
            common.allow_t0 = True
        elif word == "--silence-limit" or word.startswith("--silence-limit="):
            if "=" in word:
                text: str | None = word.split("=", 1)[1]
            else:
                index += 1
                text = words[index] if index < len(words) else None
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
        index += 1
    return common


def _mpyc_long_options() -> list[str]:
    import mpyc

    return [name for action in mpyc._get_arg_parser()._actions for name in action.option_strings
            if name.startswith("--")]


def check_option_names(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Refuse abbreviations of MPyC's long options, which MPyC's parser would silently expand.

    ``--se 5`` (meant as ``--seed``) would otherwise set MPyC's security parameter to 5 bits, and
    ``--co`` would become ``--config``.  A word that is not exactly an MPyC option but a prefix of one
    is removed (so that MPyC never sees it) and reported.

    :return: ``(error or None, argv without the refused words)``.
    """
    mpyc_names = _mpyc_long_options()
    kept: list[str] = []
    error: str | None = None
    for position, word in enumerate(argv):
        if word == "--":
            kept.extend(argv[position:])
            break
        name = word.split("=", 1)[0]
        if name.startswith("--") and len(name) > 2 and name not in mpyc_names:
            expansions = [option for option in mpyc_names if option.startswith(name)]
            if expansions:
                error = error or (f"unknown option {name} (options must be spelled out in full; MPyC would read it "
                                  f"as {' or '.join(expansions)})")
                continue
        kept.append(word)
    return error, kept


def check_topology(argv: Sequence[str], *, allow_t0: bool = False) -> tuple[str | None, str | None]:
    """Check ``-M``/``-P``/``-T``/``-B`` before MPyC is imported.

    :return: ``(fatal, refusal)``: ``fatal`` is a problem MPyC cannot even start with (an impossible
        ``-T``, a port given to two parties): the party exits 2 at once; ``refusal`` is a run that
        would start but must not go on (``t = 0`` with ``m > 1``): shared as a verdict, every party
        exits 2.
    """
    import mpyc

    options, _ = mpyc._get_arg_parser().parse_known_args(list(argv))
    if options.config:
        return None, None  # the party list is in .config/; checked after start (see run_scenario)
    if options.parties:
        addresses = []
        for index, entry in enumerate(options.parties):
            host, _, port = entry.rpartition(":") if ":" in entry else (entry, "", "")
            if options.base_port:
                port = str(options.base_port + index)
            elif not port:
                port = str(11365 + index)
            addresses.append((host or "localhost", port))
        for index, address in enumerate(addresses):
            if address in addresses[:index]:
                first = addresses.index(address)
                return (f"-P gives the same address {address[0]}:{address[1]} to parties {first} and {index}; "
                        "every party needs its own host:port"), None
        parties = len(addresses)
    else:
        parties = options.M or 1
        if parties < 1:
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
    """A base port ``b`` such that ``b + first .. b + parties - 1`` are free on this host now.

    Party ``i`` listens on ``b + i`` (MPyC's ``-B``); party 0 never listens, hence ``first = 1``.
    """
    chooser = random.SystemRandom()
    for _ in range(attempts):
        base = chooser.randrange(33000, 59000 - parties)  # away from the tests' fixed ranges
        sockets = []
        try:
            for index in range(first, parties):
                probe = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(probe)
                probe.bind(("", base + index))
            return base
        except OSError:
            continue
        finally:
            for probe in sockets:
                probe.close()
    raise UsageError(f"no {parties - first} consecutive free ports found; give -B PORT")


def launch_local_parties(argv: Sequence[str] | None = None) -> list[subprocess.Popen[bytes]]:
    """With ``-M m`` (m > 1), no ``-I``, ``-P`` or ``-C``: start parties 1..m-1 and become party 0.

    Must run before ``mpyc.runtime`` is imported (MPyC would launch its own children, which nobody
    waits for).  Appends ``-I 0`` to ``sys.argv`` so that MPyC treats this process as party 0.

    :return: the child processes (empty when nothing was launched).
    """
    import mpyc

    argv = list(sys.argv[1:] if argv is None else argv)
    options, _ = mpyc._get_arg_parser().parse_known_args(argv)
    if options.config or options.parties or not options.M or options.M <= 1 or options.index is not None:
        return []
    if options.HELP or options.VERSION or options.help:
        return []
    parties = options.M
    if not options.base_port:
        argv += ["-B", str(free_base_port(parties))]
    command = [sys.executable, os.path.abspath(sys.argv[0]), *argv]
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


#: each launched party's captured stderr (a temporary file), to quote its error when it fails early
_child_errors: dict[int, IO[bytes] | None] = {}


def child_error_line(child: subprocess.Popen[bytes]) -> str | None:
    """The first ``error:`` line of a launched party, else the last line it printed (a traceback's)."""
    handle = _child_errors.get(id(child))
    if handle is None:
        return None
    try:
        handle.seek(0)
        lines = [line.strip() for line in handle.read(1 << 16).decode("utf-8", "replace").splitlines() if line.strip()]
    except (OSError, ValueError):
        return None
    for line in lines:
        if line.startswith("error:"):
            return line
    return lines[-1] if lines else None


def settle_children(children: Sequence[subprocess.Popen[bytes]], code: int, *, grace: float | None = None) -> int:
    """Wait for the launched parties; end any still running after the grace period.

    :param code: this party's own exit code.
    :param grace: seconds to wait for all of them together (default: 60 after a success, 10 after
        a failure: a frozen party is then killed, not waited for).
    :return: the exit code to use: ours if it failed, else 1 if a child failed.
    """
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

    :return: 0 on success, 2 for bad usage/input, 1 for a protocol failure.
    """
    from mpyc.runtime import mpc

    from secure.session import InputError, ProtocolFailure, mark_stopping, party_id

    try:
        mpc.run(session())
    except InputError as exc:
        mark_stopping()
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return 2
    except ProtocolFailure as exc:
        mark_stopping()
        print(f"error: party {party_id()}: {exc}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        mark_stopping()
        print(f"error: party {party_id()}: interrupted", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # a bug, not a user error: still one line, and the others are not left hanging
        mark_stopping()
        print(f"error: party {party_id()}: internal error ({type(exc).__name__}: {exc}); "
              "set USTAT_TRACEBACK=1 to see where", file=sys.stderr, flush=True)
        if os.environ.get("USTAT_TRACEBACK"):
            raise
        return 1
    return 0


def children_alive(children: Sequence[subprocess.Popen[bytes]]) -> Callable[[], str | None]:
    """A ``check_peers`` callback for :func:`secure.session.start_session`: a launched party that died."""
    def check() -> str | None:
        for index, child in enumerate(children, start=1):
            code = child.poll()
            if code is not None:
                said = child_error_line(child)
                return (f"party {index} exited with code {code} before all parties connected"
                        + (f": {said}" if said else ""))
        return None

    return check


def _party_index(argv: Sequence[str]) -> int:
    """This party's ``-I`` from the command line (0 when not given), before MPyC is imported."""
    import mpyc

    index = mpyc._get_arg_parser().parse_known_args(list(argv))[0].index
    return int(index) if index is not None else 0


def _mpyc_parameters() -> dict[str, Any]:
    """MPyC's settings every party must share: a different ``-L``, ``-K`` or ``-T`` breaks the protocol."""
    from mpyc.runtime import mpc

    return {"-M": len(mpc.parties), "-T": int(mpc.threshold), "-L": int(mpc.options.bit_length),
            "-K": int(mpc.options.sec_param)}


def run_scenario(parse: Callable[[list[str]], Any], body: Callable[[Any], Awaitable[Any]],
                 public: Callable[[Any], dict[str, Any]], argv: Sequence[str] | None = None) -> int:
    """One party's whole life: check the command line, launch local parties, parse, connect, agree,
    run ``body``, stop, then deliver.

    Before MPyC is imported: abbreviations of MPyC's options are refused (:func:`check_option_names`),
    the common options are taken off (:func:`split_common_options`), and ``-M``/``-P``/``-T`` are
    checked (:func:`check_topology`): an impossible ``-T`` or a port given to two parties exits 2 at
    once, no party launched.  Every other usage problem is a verdict shared with all parties.

    :param parse: ``argv -> options`` (MPyC's and the common options already removed); raises
        :class:`UsageError`.
    :param body: ``async options -> deliver``: the protocol.  It may return a zero-argument callable
        (printing the table, writing ``--json``) that runs only after every party completed the
        orderly shutdown, so that a party lost in the shutdown phase leaves nothing released.
    :param public: ``options -> dict`` of the public parameters every party must share (MPyC's
        ``-M``, ``-T``, ``-L``, ``-K`` are added).
    :param argv: the command line (default ``sys.argv[1:]``).
    :return: the process exit code.
    """
    original = list(sys.argv[1:] if argv is None else argv)
    names_error, checked = check_option_names(original)
    common = split_common_options(checked)
    fatal, refusal = check_topology(common.rest, allow_t0=common.allow_t0)
    if fatal:
        print(f"error: party {_party_index(common.rest)}: {fatal}", file=sys.stderr, flush=True)
        return 2
    children = launch_local_parties(argv)
    if argv is None or children:  # MPyC reads sys.argv: it must never see a refused abbreviation
        sys.argv = [sys.argv[0], *check_option_names(sys.argv[1:])[1]]
    code = 1
    try:
        import mpyc
        from mpyc.runtime import mpc  # noqa: F401  (MPyC takes its own options off sys.argv here)

        from secure.session import agree_parameters, agree_verdict, on_fatal, start_session, stop_session

        on_fatal(lambda: None if settle_children(children, 1, grace=3.0) else None)
        if argv is None or children:
            own = sys.argv[1:]
        else:
            own = mpyc._get_arg_parser().parse_known_args(list(checked))[1]
        own = split_common_options(own).rest
        if mpc.options.config and refusal is None:
            fatal, refusal = _check_threshold(len(mpc.parties), int(mpc.threshold), common.allow_t0)
            refusal = fatal or refusal
        usage_error: str | None = names_error or common.error or refusal
        options: Any = None
        if usage_error is None:
            try:
                options = parse(own)
            except UsageError as exc:
                usage_error = str(exc)

        async def session() -> None:
            await start_session(check_peers=children_alive(children), silence_limit=common.silence_limit)
            await agree_verdict(usage_error)
            await agree_parameters({**public(options), **_mpyc_parameters()})
            if len(mpc.parties) > 1 and mpc.threshold == 0:
                print(f"NOT HIDING INPUTS (--allow-t0): threshold t = 0, every party's shares of the other "
                      "parties' inputs are those inputs; only the released value is differentially private",
                      flush=True)
            deliver = await body(options)
            await stop_session()
            if callable(deliver):
                deliver()

        tls_problem = None
        if mpc.options.ssl and len(mpc.parties) > 1:
            from secure.errors import InputError
            from secure.tls import check_party

            try:
                check_party(mpc.pid)
            except InputError as exc:
                tls_problem = str(exc)
        if tls_problem:
            print(f"error: {tls_problem}", file=sys.stderr, flush=True)
            code = 2
        else:
            code = run_party(session)
    finally:
        code = settle_children(children, code)
    return code


def format_bytes(count: float) -> str:
    """``12345678`` -> ``12.3 MB``."""
    for unit in ("B", "kB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return f"{count:.1f} GB"


def print_table(rows: Sequence[tuple[str, str]], title: str | None = None) -> None:
    """Print ``name value`` rows aligned in two columns."""
    if title:
        print(title)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name:<{width}}  {value}")


def log_phase(message: str) -> None:
    """Log a progress line through MPyC's logger (silenced by ``--no-log``)."""
    logging.info(message)
