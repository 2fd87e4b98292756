"""Running an MPyC session so that no party is ever left hanging.

MPyC's runtime connects the parties and then waits, forever if need be, for every message.  That is
right for a protocol but wrong for a suite whose parties read their own files and may fail: a bad
file at party 2 must stop party 0 too, and a party that dies must not leave the others waiting.
This module adds, on top of ``mpc.start()`` / ``mpc.shutdown()``:

- a connection deadline: :func:`start_session` fails after ``timeout`` seconds if some party never
  connects;
- a watchdog: once connected, a lost connection before the orderly shutdown ends this party at once
  with exit code 1 and one line naming the lost party (nothing is released after that);
- agreement: :func:`agree_parameters` compares every party's public parameters before any data is
  shared, and :func:`agree_verdict` shares each party's input verdict so that one party's bad input
  stops every party with the same one-line message.

Threat model: passive (semi-honest), static adversary corrupting at most ``t < m/2`` parties.  The
verdicts and parameter digests exchanged here are public by design (they say *that* an input was
bad, e.g. "party 1: column 'age' has a non-numeric value", never more of the data than that line).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from mpyc import asyncoro
from mpyc.runtime import mpc

__all__ = [
    "InputError",
    "ProtocolFailure",
    "agree_parameters",
    "agree_verdict",
    "party_count",
    "party_id",
    "threshold",
    "on_fatal",
    "start_session",
    "stop_session",
    "fail_fast",
    "mark_stopping",
    "set_phase",
]


class InputError(Exception):
    """A user mistake (bad file, bad parameter): every party exits 2 with the same line."""


class ProtocolFailure(Exception):
    """A failure during the protocol (lost party, overflow): exit 1, nothing released."""


_state: dict[str, Any] = {"shutting_down": False, "phase": "start", "fatal_hooks": []}


def party_id() -> int:
    """This party's index ``i`` (MPyC's ``-I``)."""
    return int(mpc.pid)


def party_count() -> int:
    """The number of parties ``m`` (MPyC's ``-M`` or the number of ``-P`` addresses)."""
    return len(mpc.parties)


def threshold() -> int:
    """The corruption threshold ``t`` of the Shamir scheme (MPyC's ``-T``, default ``(m-1)//2``)."""
    return int(mpc.threshold)


def set_phase(name: str) -> None:
    """Record the protocol phase, so that a fatal message can say where the run stopped."""
    _state["phase"] = name


def mark_stopping() -> None:
    """Declare that this party is about to stop on an error every party saw (an agreed verdict):
    from now on a peer closing its connection is expected, not a fault."""
    _state["shutting_down"] = True


def on_fatal(hook: Callable[[], None]) -> None:
    """Register a callback run just before a fatal exit (e.g. party 0 ending its child parties)."""
    _state["fatal_hooks"].append(hook)


def fail_fast(message: str, code: int = 1) -> None:
    """Print ``error: party i: message`` on stderr and end the process now with ``code``.

    Used from asyncio callbacks, where raising would only be logged by the event loop.
    """
    for hook in _state["fatal_hooks"]:
        try:
            hook()
        except Exception:  # a cleanup hook must never mask the fatal message
            pass
    sys.stdout.flush()
    print(f"error: party {party_id()}: {message}", file=sys.stderr, flush=True)
    os._exit(code)


_original_connection_lost = asyncoro.MessageExchanger.connection_lost


#: Seconds a party that lost a peer keeps its own connections open before it exits, so that the
#: other survivors notice the original failure first and name the right party.
LOST_PEER_GRACE = 0.5


def _tls_hint() -> str:
    """With ``--ssl``: this party's CA fingerprint, for comparing parties ('' without ``--ssl``)."""
    if not getattr(mpc.options, "ssl", False):
        return ""
    import ssl

    path = os.path.join(".config", "mpyc_ca.crt")
    try:
        with open(path, encoding="ascii") as handle:
            digest = hashlib.sha256(ssl.PEM_cert_to_DER_cert(handle.read())).hexdigest().upper()
    except (OSError, ValueError):
        return f" (--ssl: cannot read {path})"
    short = ":".join(digest[i:i + 2] for i in range(0, 16, 2))
    return f" (--ssl: all parties need the same {path}; this party's is SHA-256 {short}...)"


def _watched_connection_lost(self: asyncoro.MessageExchanger, exc: BaseException | None) -> None:
    if not _state["shutting_down"]:
        peer = self.peer_pid if self.peer_pid is not None else "?"
        time.sleep(LOST_PEER_GRACE)  # blocks this party's event loop only; it is about to exit anyway
        hint = _tls_hint() if _state["phase"] == "connect" else ""  # asyncio hides the TLS alert (exc is None)
        fail_fast(f"lost connection to party {peer} during the {_state['phase']} phase; "
                  f"nothing was released{hint}", code=1)
    _original_connection_lost(self, exc)


async def start_session(timeout: float = 60.0, check_peers: Callable[[], str | None] | None = None) -> None:
    """Start the MPyC runtime and arm the watchdog.

    :param timeout: seconds to wait for all parties to connect.
    :param check_peers: optional callback polled while connecting; it returns a message when a
        locally launched party has already died (then there is no point in waiting).
    :raise ProtocolFailure: if not every party connected within ``timeout`` seconds.
    """
    import ssl

    asyncoro.MessageExchanger.connection_lost = _watched_connection_lost  # type: ignore[method-assign]
    _state["shutting_down"] = False
    set_phase("connect")
    loop = asyncio.get_running_loop()
    refused: list[str] = []
    connect = loop.create_connection

    async def recording_connect(factory: Any, host: Any = None, port: Any = None, **kwargs: Any) -> Any:
        try:
            return await connect(factory, host, port, **kwargs)
        except ssl.SSLCertVerificationError as exc:  # MPyC retries every 0.1 s; this never heals
            name = kwargs.get("server_hostname") or "the peer"
            refused.append(f"TLS certificate of {name} at {host}:{port} refused: {exc.verify_message}")
            raise

    try:
        loop.create_connection = recording_connect  # type: ignore[method-assign,assignment]
        patched = True
    except AttributeError:  # an event loop without instance attributes (uvloop): no early diagnosis
        patched = False
    try:
        starting = asyncio.ensure_future(mpc.start())
        deadline = loop.time() + timeout
        while not starting.done():
            problem = check_peers() if check_peers else None
            if not problem and refused:
                problem = refused[0] + _tls_hint()
            if problem or loop.time() > deadline:
                starting.cancel()
                raise ProtocolFailure(problem or f"not all {party_count()} parties connected within {timeout:g} s"
                                      + _tls_hint())
            await asyncio.wait([starting], timeout=0.25)
        starting.result()
    finally:
        if patched:
            del loop.create_connection


async def stop_session() -> None:
    """Shut the runtime down in order; connection losses after this point are expected."""
    _state["shutting_down"] = True
    set_phase("shutdown")
    await mpc.shutdown()


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


async def agree_parameters(parameters: dict[str, Any]) -> None:
    """Check that every party runs with the same public parameters, before any data is shared.

    :param parameters: this party's public parameters (statistic, epsilon, columns, ...).
    :raise InputError: naming the first disagreeing party and parameter, at every party alike.
    """
    set_phase("parameter check")
    everyone = await mpc.transfer(parameters)
    reference = everyone[0]
    for pid, theirs in enumerate(everyone):
        if _digest(theirs) == _digest(reference):
            continue
        keys = sorted(set(reference) | set(theirs))
        differing = [k for k in keys if _digest(reference.get(k)) != _digest(theirs.get(k))]
        key = differing[0] if differing else "?"
        mark_stopping()
        raise InputError(f"party {pid}: parameters differ from party 0: "
                         f"{key}={theirs.get(key)!r} at party {pid} but {reference.get(key)!r} at party 0")


async def agree_verdict(error: str | None) -> None:
    """Share this party's verdict on its own input; stop everybody if any party failed.

    :param error: ``None`` if this party's input is fine, else a one-line description.
    :raise InputError: with the first failing party's message (prefixed ``party i:``), at every party.
    """
    verdicts = await mpc.transfer(error)
    failures = [(pid, message) for pid, message in enumerate(verdicts) if message]
    if failures:
        mark_stopping()
        pid, message = failures[0]
        same = [other for other, text in failures[1:] if text == message]
        others = [other for other, text in failures[1:] if text != message]
        also = f" (also part{'y' if len(same) == 1 else 'ies'} {', '.join(map(str, same))})" if same else ""
        more = f" (and {len(others)} more failing part{'y' if len(others) == 1 else 'ies'})" if others else ""
        raise InputError(f"party {pid}{also}: {message}{more}")
