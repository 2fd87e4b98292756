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
"""
from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn

__all__ = ["UsageError", "ScenarioParser", "launch_local_parties", "settle_children", "run_party",
           "print_table", "format_bytes", "children_alive", "run_scenario"]

CHILD_GRACE_SECONDS = 60.0


class UsageError(Exception):
    """Bad command-line usage (exit 2, shared with the other parties like any bad input)."""


class ScenarioParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises :class:`UsageError` instead of exiting.

    A party must not exit on its own before the others hear its verdict, or they would wait for it.
    """

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        if status:
            raise UsageError(message or "bad usage")
        if message:
            print(message, end="")
        raise SystemExit(0)


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
    command = [sys.executable, os.path.abspath(sys.argv[0]), *argv]
    children = []
    for index in range(1, parties):
        if options.output_file:
            sink: Any = open(f"party{parties}_{index}.log", "a")
        else:
            sink = subprocess.DEVNULL
        children.append(subprocess.Popen(command + ["-I", str(index)], stdout=sink, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL))
    sys.argv = [sys.argv[0], *argv, "-I", "0"]
    return children


def settle_children(children: Sequence[subprocess.Popen[bytes]], code: int) -> int:
    """Wait for the launched parties; end any still running after the grace period.

    :param code: this party's own exit code.
    :return: the exit code to use: ours if it failed, else 1 if a child failed.
    """
    failed: list[str] = []
    for index, child in enumerate(children, start=1):
        try:
            child_code = child.wait(timeout=CHILD_GRACE_SECONDS if code == 0 else 10.0)
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

    from secure.runtime import InputError, ProtocolFailure, mark_stopping, party_id

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
    """A ``check_peers`` callback for :func:`secure.runtime.start_session`: a launched party that died."""
    def check() -> str | None:
        for index, child in enumerate(children, start=1):
            code = child.poll()
            if code is not None:
                return f"party {index} exited with code {code} before all parties connected"
        return None

    return check


def run_scenario(parse: Callable[[list[str]], Any], body: Callable[[Any], Awaitable[None]],
                 public: Callable[[Any], dict[str, Any]], argv: Sequence[str] | None = None) -> int:
    """One party's whole life: launch local parties, parse, connect, agree, run ``body``, stop.

    :param parse: ``argv -> options`` (MPyC's options already removed); raises :class:`UsageError`.
    :param body: ``async options -> None``, the protocol and its printing.
    :param public: ``options -> dict`` of the public parameters every party must share.
    :param argv: the command line (default ``sys.argv[1:]``).
    :return: the process exit code.
    """
    children = launch_local_parties(argv)
    code = 1
    try:
        import mpyc
        from mpyc.runtime import mpc  # noqa: F401  (MPyC takes its own options off sys.argv here)

        from secure.runtime import agree_parameters, agree_verdict, on_fatal, start_session, stop_session

        on_fatal(lambda: None if settle_children(children, 1) else None)
        if argv is None or children:
            own = sys.argv[1:]
        else:
            own = mpyc._get_arg_parser().parse_known_args(list(argv))[1]
        usage_error: str | None = None
        options: Any = None
        try:
            options = parse(own)
        except UsageError as exc:
            usage_error = str(exc)

        async def session() -> None:
            await start_session(check_peers=children_alive(children))
            await agree_verdict(usage_error)
            await agree_parameters(public(options))
            await body(options)
            await stop_session()

        tls_problem = None
        if mpc.options.ssl and len(mpc.parties) > 1:
            from scenarios.certificates import check_party

            try:
                check_party(mpc.pid)
            except UsageError as exc:
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
