"""Running an MPyC session so that no party is ever left hanging: a connection deadline and an options handshake
(:func:`start_session`), watchdogs for lost and silent peers (one line naming the party, exit 1, nothing released),
an orderly shutdown (:func:`stop_session`), agreement on public parameters and input verdicts (:func:`agree_parameters`,
:func:`agree_verdict`).  Threat model: passive, static, ``t < m/2``; verdicts, parameter digests and options are
public by design (never row data); heartbeats carry no payload.  Details: docs/session.md."""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import hashlib
import json
import os
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from mpyc import asyncoro
from mpyc.runtime import mpc

from secure.errors import DEFAULT_SILENCE_LIMIT, InputError, ProtocolFailure

__all__ = ["InputError", "ProtocolFailure", "agree_parameters", "agree_verdict", "party_count", "party_id",
           "threshold", "RunSettings", "run_settings", "run_with", "on_fatal", "start_session", "stop_session",
           "fail_fast", "mark_stopping", "set_phase", "SilenceWatch", "silence_message", "DEFAULT_SILENCE_LIMIT"]


_state: dict[str, Any] = {"shutting_down": False, "in_shutdown": False, "phase": "start", "fatal_hooks": [],
                          "watch": None, "timer": None, "closed_by_us": set(), "heartbeats": 0,
                          "notices": {}, "failing": None, "relayed": False, "first_seen": None, "sent_closed": {}}

#: seconds between two looks of the silence watchdog (at most a quarter of the limit)
WATCH_INTERVAL = 0.5
#: a watchdog look this many seconds later than planned means this party's own event loop was busy
LATE_TICK = 1.0


def party_id() -> int:
    """This party's index ``i`` (MPyC's ``-I``)."""
    return int(mpc.pid)


def party_count() -> int:
    """The number of parties ``m`` (MPyC's ``-M`` or the number of ``-P`` addresses)."""
    return len(mpc.parties)


def threshold() -> int:
    """The corruption threshold ``t`` of the Shamir scheme (MPyC's ``-T``, default ``(m-1)//2``)."""
    return int(mpc.threshold)


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """What a protocol needs from the run's command line, read once by the launcher (:mod:`secure.launcher`): ``m``
    parties, threshold ``t``, this party's ``index``, MPyC's launch ``-K`` and ``bit_length``, the ``-L`` given
    explicitly (``None``: MPyC's default, so a protocol may derive its own length from public parameters)."""

    parties: int
    threshold: int
    index: int
    sec_param: int
    bit_length: int | None = None

    @classmethod
    def of_runtime(cls, *, bit_length: int | None = None) -> RunSettings:
        """The settings of MPyC's runtime ``mpc``, with ``bit_length`` the explicit ``-L``."""
        return cls(parties=len(mpc.parties), threshold=int(mpc.threshold), index=int(mpc.pid),
                   sec_param=int(mpc.options.sec_param), bit_length=bit_length)


#: the run's settings inside :func:`run_with` (a context variable: the run's tasks see it, nothing outlives the run)
_SETTINGS: contextvars.ContextVar[RunSettings] = contextvars.ContextVar("run_settings")


def run_settings() -> RunSettings:
    """This run's :class:`RunSettings`, set once by the launcher before the job's body runs (as MPyC's ``mpc``
    is the runtime's).  Outside a launched run (a program or a test calling ``mpc.run`` itself): those of
    MPyC's runtime, with no explicit ``-L`` (MPyC took its options off ``sys.argv`` when it started)."""
    return _SETTINGS.get(None) or RunSettings.of_runtime()


@contextlib.contextmanager
def run_with(settings: RunSettings) -> Iterator[RunSettings]:
    """Make ``settings`` the run's (:func:`run_settings`) inside the ``with`` block."""
    token = _SETTINGS.set(settings)
    try:
        yield settings
    finally:
        _SETTINGS.reset(token)


def set_phase(name: str) -> None:
    """Record the protocol phase, so that a fatal message can say where the run stopped."""
    _state["phase"] = name


def mark_stopping() -> None:
    """Declare that this party is about to stop on an error every party saw (an agreed verdict):
    from now on a peer closing its connection is expected, not a fault."""
    _state["shutting_down"] = True


#: seconds a party stopping on an agreed verdict waits, at most, in MPyC's shutdown for the others (:func:`stop_agreed`)
AGREED_STOP_WAIT = 3.0


def stop_agreed() -> None:
    """After a verdict every party saw (:func:`mark_stopping`): MPyC's shutdown, so that no party closes its
    connections before every other has the verdict too (docs/session.md).  At most :data:`AGREED_STOP_WAIT` seconds;
    nothing when no verdict was agreed or with one party."""
    if not _state["shutting_down"] or _state["in_shutdown"] or len(mpc.parties) == 1:
        return
    with contextlib.suppress(Exception, KeyboardInterrupt):  # a peer gone, or Ctrl-C: the verdict is the line anyway
        mpc.run(asyncio.wait_for(stop_session(phase=None), AGREED_STOP_WAIT))


def sent_on_closed(peer: int) -> int:
    """Bytes this party had sent to ``peer`` when their connection closed (0 while it is open or never was)."""
    return int(_state["sent_closed"].get(peer, 0))


def on_fatal(hook: Callable[[], None]) -> None:
    """Register a callback run just before a fatal exit (e.g. party 0 ending its child parties)."""
    _state["fatal_hooks"].append(hook)


def fail_fast(message: str, code: int = 1) -> None:
    """Print ``error: party i: message`` on stderr and end the process now with ``code`` (used from asyncio callbacks,
    where raising would only be logged by the event loop)."""
    for hook in _state["fatal_hooks"]:
        with contextlib.suppress(Exception):  # a cleanup hook must never mask the fatal message
            hook()
    sys.stdout.flush()
    print(f"error: party {party_id()}: {message}", file=sys.stderr, flush=True)
    os._exit(code)


class SilenceWatch:
    """Which peer, if any, has been silent too long while this party waits for it (free of MPyC and the clock):
    every peer counts as heard at ``now``; ``limit`` seconds of silence tolerated while waiting, > 0.  Threat model: a
    silent party is a failure (a frozen host, a lost link), not an attack; the watchdog reads only arrival times.
    Details: docs/session.md."""

    def __init__(self, peers: Iterable[int], limit: float, now: float) -> None:
        if not limit > 0:
            raise ValueError(f"silence_limit must be positive, got {limit}")
        self.limit = float(limit)
        self.last_heard: dict[int, float] = {peer: now for peer in peers}
        self.last_message: dict[int, float] = dict(self.last_heard)
        self.waiting_since: dict[int, float] = {}

    def heard(self, peer: int, now: float, *, protocol: bool = True) -> None:
        """Bytes arrived from ``peer`` at ``now``: a protocol message, or (``protocol=False``) only
        heartbeats, which say that ``peer`` is alive but not that it makes progress."""
        self.last_heard[peer] = now
        if protocol:
            self.last_message[peer] = now

    def pause(self, now: float) -> None:
        """This party's own event loop was blocked (local computation) until ``now``: bytes may be
        waiting unread, so no peer is blamed for that time and every clock restarts."""
        for clock in (self.last_heard, self.last_message, self.waiting_since):
            clock.update(dict.fromkeys(clock, now))

    def _since(self, peer: int, clock: dict[int, float]) -> float:
        """Since when this party has waited for ``peer`` (one it waits for) without an arrival in ``clock``."""
        waiting = self.waiting_since[peer]
        return max(clock.get(peer, waiting), waiting)

    def observe(self, waiting: Iterable[int], now: float) -> tuple[int, float] | None:
        """One look: ``waiting`` are the peers this party waits for at ``now``.
        :return: ``(peer, seconds of silence)`` for the peer silent longest beyond the limit, or ``None``."""
        current = set(waiting)
        kept = {peer: since for peer, since in self.waiting_since.items() if peer in current}
        self.waiting_since = kept | {peer: now for peer in current if peer not in kept}
        overdue = [(since, self.last_heard.get(peer, since), peer) for peer in current
                   if now - (since := self._since(peer, self.last_heard)) >= self.limit]
        return _longest(overdue, now)  # silent longest; on a tie, the one heard from least recently

    def stalled(self, now: float) -> tuple[int, float] | None:
        """A peer this party waits for that is alive (heartbeats arrive) but sent no protocol message for
        ``STALL_FACTOR * limit`` seconds (docs/session.md).  Call after :meth:`observe`.
        :return: ``(peer, seconds without a protocol message)`` for the peer stalled longest, or ``None``."""
        stalled = [(since, peer) for peer in self.waiting_since
                   if now - (since := self._since(peer, self.last_message)) >= STALL_FACTOR * self.limit]
        return _longest(stalled, now)

    def root_cause(self, closed: int, now: float) -> tuple[int, float] | None:
        """Peer ``closed`` just closed its connection: was another peer silent first (the frozen one to name)?
        :return: ``(peer, seconds of silence)`` of that peer, or ``None`` (name ``closed``).  Details: docs/session.md.
        """
        closed_heard = self.last_heard.get(closed, now)
        earlier = [(since, heard, peer) for peer in self.waiting_since
                   if peer != closed and now - (since := self._since(peer, self.last_heard)) >= self.limit / 2
                   and (heard := self.last_heard.get(peer, now)) < closed_heard]
        return _longest(earlier, now, key=lambda entry: entry[:2])  # on a full tie, the first waited for


def _longest(candidates: list[tuple[Any, ...]], now: float, *,
             key: Callable[[tuple[Any, ...]], Any] | None = None) -> tuple[int, float] | None:
    """``(peer, seconds)`` of the first least ``(since, ..., peer)`` of ``candidates`` (by ``key``), or ``None``."""
    if not candidates:
        return None
    first = min(candidates, key=key)
    return first[-1], now - first[0]


#: a live peer (heartbeats arrive) that sends no protocol message for this many silence limits while
#: this party waits for it ends the run (:meth:`SilenceWatch.stalled`)
STALL_FACTOR = 2.0


def stall_message(peer: int, phase: str, seconds: float) -> str:
    """The one line (after ``error: party i:``) of a party whose live peer sent no protocol message."""
    return (f"party {peer} sent no protocol message during the {phase} phase for {seconds:.0f} s although it is "
            f"running (its heartbeats arrive): the parties wait for each other; nothing was released")


def silence_message(peer: int, phase: str, seconds: float) -> str:
    """The one line (after ``error: party i:``) of a party that gave up on a silent peer."""
    return (f"party {peer} stopped answering during the {phase} phase (no message for {seconds:.0f} s; "
            f"--silence-limit SECONDS to wait longer); nothing was released")


#: program counter of the heartbeat frames: MPyC's counters are 64-bit tuple hashes, which never
#: meet this one in practice; no receive ever asks for it
HEARTBEAT_PC = -(2 ** 63) + 1
#: one heartbeat: MPyC's frame header (program counter, payload size 0), written straight to the
#: transport so that the cost meter (``nbytes_sent``) does not count it
HEARTBEAT_FRAME = struct.pack("<qI", HEARTBEAT_PC, 0)


class _Sink:
    """Stands in ``MessageExchanger.buffers`` at a counter no receive asks for (:data:`HEARTBEAT_PC`, :data:`LOST_PC`):
    MPyC hands every frame at it to the sink (as to a waiting receive), which puts itself back (frames never pile up)
    and gives the payload to ``take``: a heartbeat is counted, a peer's notice "party j is lost" taken."""

    __slots__ = ("protocol", "pc", "take")

    def __init__(self, protocol: asyncoro.MessageExchanger, pc: int, take: Callable[[bytes], None]) -> None:
        self.protocol, self.pc, self.take = protocol, pc, take

    def set_result(self, payload: bytes) -> None:
        self.protocol.buffers[self.pc] = self
        self.take(payload)


def _heartbeat(payload: bytes) -> None:
    _state["heartbeats"] += 1


def _open_transport(protocol: Any) -> Any:
    transport = getattr(protocol, "transport", None)
    return None if transport is None or transport.is_closing() else transport


def _send_heartbeats() -> None:
    """One heartbeat to every peer whose connection is open (a frozen peer's kernel buffer absorbs them)."""
    for peer in mpc.parties:
        transport = _open_transport(peer.protocol)
        if peer.pid != mpc.pid and isinstance(peer.protocol, asyncoro.MessageExchanger) and transport is not None \
                and int(peer.pid) not in _state["closed_by_us"]:
            transport.write(HEARTBEAT_FRAME)


def _pending(protocol: Any) -> bool:
    """Whether this party waits for a message on this connection (an unresolved receive)."""
    buffers = getattr(protocol, "buffers", None) or {}
    return any(isinstance(value, asyncio.Future) and not value.done() for value in list(buffers.values()))


def _waiting_peers() -> list[int]:
    """The peers this party waits for now: a pending receive, or (in the shutdown's last step) a
    lower-numbered peer that has not yet closed its connection to this party."""
    me = mpc.parties[mpc.pid].protocol
    closing = _state["in_shutdown"] and isinstance(me, asyncio.Future) and not me.done()
    return [int(peer.pid) for peer in mpc.parties
            if peer.pid != mpc.pid and peer.protocol is not None and peer.pid not in _state["closed_by_us"]
            and (_pending(peer.protocol) or (closing and peer.pid < mpc.pid))]


def _disarm_watchdog() -> None:
    if _state["timer"] is not None:
        _state["timer"].cancel()
    _state.update(timer=None, watch=None)


def _arm_watchdog(limit: float) -> None:
    """Start the silence watchdog on the running loop: a plain timer callback every
    ``min(WATCH_INTERVAL, limit / 4)`` seconds (no task, so nothing is left pending at exit)."""
    _disarm_watchdog()
    peers = [int(peer.pid) for peer in mpc.parties if peer.pid != mpc.pid]
    if not peers:
        return
    loop = asyncio.get_running_loop()
    watch = SilenceWatch(peers, limit, time.monotonic())
    interval = min(WATCH_INTERVAL, limit / 4)
    _state["watch"] = watch

    def tick(planned: float) -> None:
        if _state["watch"] is not watch or _state["shutting_down"]:
            return  # disarmed, or every party is stopping on an agreed verdict
        now = time.monotonic()
        _send_heartbeats()
        if now - planned > LATE_TICK:
            watch.pause(now)
        else:
            verdict = watch.observe(_waiting_peers(), now)
            if verdict is not None:
                fail_fast(silence_message(verdict[0], _state["phase"], verdict[1]), code=1)
            stall = watch.stalled(now)
            if stall is not None:
                fail_fast(stall_message(stall[0], _state["phase"], stall[1]), code=1)
        _state["timer"] = loop.call_later(interval, tick, now + interval)

    _state["timer"] = loop.call_later(interval, tick, time.monotonic() + interval)


#: the MPyC options every party must give alike, in the order a mismatch is reported (why: docs/session.md)
AGREED_OPTIONS = ("-M", "-T", "-L", "-K", "--no-prss", "--mix32-64bit", "--no-numpy")
#: first bytes of a frame of the options handshake (before MPyC's own bytes on a connection)
GATE_MAGIC = b"USTg"
#: the longest options frame accepted (a peer sending more is not running this suite)
GATE_FRAME_LIMIT = 1 << 16
#: program counter of the frame relaying the options table on a connection MPyC already uses
TABLE_PC = -(2 ** 63) + 2
#: seconds a party that knows of a difference waits for the options of the parties it has not heard
#: from, before it stops with what it knows
MISMATCH_WAIT = 2.0

_gates: dict[int, _Gate] = {}
#: every party's agreed options as far as this party knows them (its own, its peers', relayed ones)
_table: dict[int, dict[str, Any]] = {}


def _own_options() -> dict[str, Any]:
    """This party's values of :data:`AGREED_OPTIONS` (environment switches included, as MPyC reads them)."""
    options = mpc.options
    return {"-M": len(mpc.parties), "-T": int(mpc.threshold), "-L": int(options.bit_length),
            "-K": int(options.sec_param), "--no-prss": bool(options.no_prss),
            "--mix32-64bit": bool(options.mix32_64bit or os.getenv("MPYC_MIX32_64BIT") == "1"),
            "--no-numpy": bool(options.no_numpy or os.getenv("MPYC_NONUMPY") == "1")}


def _gate_frame(kind: bytes, obj: Any) -> bytes:
    payload = json.dumps(obj, sort_keys=True).encode()
    return GATE_MAGIC + kind + struct.pack("<I", len(payload)) + payload


def _merge_table(payload: bytes) -> None:
    """Take a relayed options table (``{pid: options}``) into this party's."""
    try:
        relayed = json.loads(payload)
        for pid, options in relayed.items():
            if isinstance(options, dict):
                _table.setdefault(int(pid), options)
    except (ValueError, TypeError, AttributeError):
        return
    _state["relayed"] = True


@dataclass(slots=True)
class _Gate:
    """The options handshake of one connection: MPyC's bytes follow only once the peer's options equal this
    party's (docs/session.md)."""

    protocol: asyncoro.MessageExchanger
    client: bool
    open: bool = False
    peer: int | None = None
    lost: bool = False
    buffer: bytearray = field(default_factory=bytearray)

    def take(self, protocol: asyncoro.MessageExchanger, data: bytes) -> bytes:
        """Read handshake frames off ``data``; return the bytes that follow an agreeing handshake (MPyC's)."""
        self.buffer.extend(data)
        while not self.open and len(self.buffer) >= 9:
            kind, size = bytes(self.buffer[4:5]), struct.unpack_from("<I", self.buffer, 5)[0]
            if bytes(self.buffer[:4]) != GATE_MAGIC or size > GATE_FRAME_LIMIT:
                self.buffer.clear()  # not this suite at the other end: never opens (connect deadline)
                return b""
            if len(self.buffer) < 9 + size:
                break
            payload = bytes(self.buffer[9:9 + size])
            del self.buffer[:9 + size]
            if kind == b"T":
                _merge_table(payload)
                continue
            try:
                hello = json.loads(payload)
                peer, options = int(hello["pid"]), dict(hello["options"])
            except (ValueError, TypeError, KeyError):
                continue
            self.peer = peer
            _table.setdefault(peer, options)
            if options == _table.get(int(mpc.pid)):
                self.open = True
                if self.client:
                    _ORIGINAL["connection_made"](protocol, protocol.transport)  # MPyC's index and PRSS keys
        if not self.open:
            return b""
        rest = bytes(self.buffer)
        self.buffer.clear()
        return rest


def _gated_connection_made(self: asyncoro.MessageExchanger, transport: Any) -> None:
    self.transport = transport
    _gates[id(self)] = _Gate(self, client=self.peer_pid is not None)
    transport.write(_gate_frame(b"H", {"pid": int(mpc.pid), "options": _table.get(int(mpc.pid))}))


def _who(pids: list[int]) -> str:
    """``party 2`` or ``parties 1, 2``."""
    return f"part{'y' if len(pids) == 1 else 'ies'} {', '.join(map(str, pids))}"


def _mismatch() -> str | None:
    """The first of :data:`AGREED_OPTIONS` on which the known parties differ, as the line to stop with."""
    known = dict(_table)
    for name in AGREED_OPTIONS:
        values: dict[str, list[int]] = {}
        for pid in sorted(known):
            values.setdefault(json.dumps(known[pid].get(name)), []).append(pid)
        if len(values) < 2:
            continue
        # the odd ones out: every group but the largest (on a tie, the one holding the lowest party)
        groups = sorted(values.items(), key=lambda item: (-len(item[1]), item[1][0]))
        odd = sorted(pid for _, pids in groups[1:] for pid in pids)

        def said(value: str, pids: list[int], named: bool = True) -> str:
            shown = json.loads(value)
            if isinstance(shown, bool):
                return f"{name + ' ' if named else ''}{'given' if shown else 'not given'} at {_who(pids)}"
            return f"{name} {shown} at {_who(pids)}"

        flag = isinstance(json.loads(groups[0][0]), bool)
        parts = "; ".join(said(value, pids) for value, pids in groups[1:])
        return (f"{_who(odd)}: {parts} but {said(*groups[0], named=not flag)}: every party must give the same MPyC options "
                f"({' '.join(AGREED_OPTIONS)})")
    return None


def _options_verdict(now: float) -> str | None:
    """While connecting: the line to stop with if the parties' options differ and this party knows enough
    (docs/session.md)."""
    line = _mismatch()
    if line is None:
        return None
    if _state["first_seen"] is None:
        _state["first_seen"] = now
    lost = any(gate.lost for gate in _gates.values())
    known = not _missing_parties() or _state["relayed"] or lost or now - _state["first_seen"] >= MISMATCH_WAIT
    return line if known else None


def _relay_table() -> None:
    """Tell every connected peer the options table, so that all parties stop with the same line."""
    table = {str(pid): options for pid, options in _table.items()}
    payload = json.dumps(table, sort_keys=True).encode()
    for gate in list(_gates.values()):
        transport = _open_transport(gate.protocol)
        if not gate.lost and transport is not None:  # where MPyC reads: its frame, at a counter nobody asks for
            transport.write(struct.pack("<qI", TABLE_PC, len(payload)) + payload if gate.open
                            else _gate_frame(b"T", table))


def _missing_parties() -> list[int]:
    """The parties no handshake came from (nor was relayed) while connecting."""
    return [pid for pid in range(len(mpc.parties)) if pid not in _table]


#: MPyC's own methods, which the watched ones below call (:func:`start_session` puts the watched ones in their place)
_ORIGINAL: dict[str, Any] = {name: getattr(asyncoro.MessageExchanger, name) for name in (
    "connection_made", "connection_lost", "data_received", "close_connection", "send")}


#: Seconds a party that lost a peer keeps running (its connections open, protocol frozen) at most
#: while it waits for every other survivor to learn which party was lost (:func:`_fail_lost`).
LOST_PEER_GRACE = 3.0
#: Seconds a party that lost a peer while connecting keeps its connections open before it exits
#: (no notices then: the options handshake may still hold MPyC's frames back), so that the other
#: parties notice the original failure first.
CONNECT_LOST_GRACE = 0.5
#: program counter of the frame "party j is lost" (payload: j, 2 bytes little-endian) that a party
#: which lost a peer sends the other survivors before it closes its own connections
LOST_PC = -(2 ** 63) + 4
#: seconds between two looks of a party waiting for the other survivors to acknowledge its notice
_FAILING_LOOK = 0.05


def _take_notice(protocol: asyncoro.MessageExchanger, payload: bytes) -> None:
    """A peer said "party j is lost": remember it (a close of that peer names ``j``), and outside the
    connect phase and the shutdown stop this party at once naming ``j``, as that peer does."""
    sender = protocol.peer_pid
    if sender is None or len(payload) != 2:
        return
    lost = int.from_bytes(payload, "little")
    if lost == mpc.pid or not 0 <= lost < len(mpc.parties):
        return
    _state["notices"][int(sender)] = lost
    if _state["failing"] is not None:
        _check_failing()
    elif not (_state["shutting_down"] or _state["in_shutdown"] or _state["phase"] == "connect"):
        _fail_lost(lost, None)


def _lost_message(peer: int | None, hint: str = "") -> str:
    return (f"lost connection to party {peer if peer is not None else '?'} during the {_state['phase']} phase; "
            f"nothing was released{hint}")


def _fail_lost(culprit: int, gone: int | None) -> None:
    """This party lost party ``culprit`` (its own connection to ``gone``, or a peer's notice): tell the other
    survivors, wait at most :data:`LOST_PEER_GRACE` seconds with the protocol frozen, then exit 1 naming
    ``culprit`` (docs/session.md)."""
    loop = asyncio.get_running_loop()
    _disarm_watchdog()
    _state["failing"] = {"culprit": culprit, "message": _lost_message(culprit),
                         "deadline": time.monotonic() + LOST_PEER_GRACE, "gone": {gone} if gone is not None else set(),
                         "beat": time.monotonic()}
    notice = struct.pack("<qI", LOST_PC, 2) + int(culprit).to_bytes(2, "little")
    for peer in _survivors():  # each with an open transport
        _open_transport(mpc.parties[peer].protocol).write(notice)
    loop.call_later(_FAILING_LOOK, _check_failing)


def _survivors() -> list[int]:
    """While failing: the peers that may not yet know which party was lost (open connection, no notice)."""
    failing = _state["failing"]
    known = {int(mpc.pid), failing["culprit"], *failing["gone"], *_state["notices"]}
    return [int(peer.pid) for peer in mpc.parties
            if int(peer.pid) not in known and isinstance(peer.protocol, asyncoro.MessageExchanger)
            and getattr(_gates.get(id(peer.protocol)), "open", True) and _open_transport(peer.protocol) is not None]


def _check_failing() -> None:
    """One look of a failing party: exit once every other survivor knows, or at the deadline."""
    failing = _state["failing"]
    now = time.monotonic()
    if not _survivors() or now >= failing["deadline"]:
        fail_fast(failing["message"], code=1)
    if now - failing["beat"] >= WATCH_INTERVAL:  # a survivor waiting for this party is not silent for it
        failing["beat"] = now
        _send_heartbeats()
    asyncio.get_running_loop().call_later(_FAILING_LOOK, _check_failing)


def _frozen_data_received(protocol: asyncoro.MessageExchanger, data: bytes) -> None:
    """While failing: read whole frames off the connection, take notices, drop every other frame (no
    protocol step may complete after the lost party was noticed: nothing is released)."""
    buffer = protocol.bytes
    buffer.extend(data)
    while len(buffer) >= 12:
        pc, size = struct.unpack_from("<qI", buffer)
        if len(buffer) < 12 + size:
            break
        payload = bytes(buffer[12:12 + size])
        del buffer[:12 + size]
        if pc == LOST_PC:
            _take_notice(protocol, payload)


def _watched_send(self: asyncoro.MessageExchanger, pc: int, payload: bytes) -> None:
    if _state["failing"] is not None:  # frozen: a survivor must not complete a step (e.g. an output) with it
        return
    _ORIGINAL["send"](self, pc, payload)


def _tls_hint() -> str:
    """With ``--ssl``: this party's CA fingerprint, for comparing parties ('' without ``--ssl``)."""
    if not getattr(mpc.options, "ssl", False):
        return ""
    import ssl  # not secure.tls, which imports this module

    path = os.path.join(".config", "mpyc_ca.crt")
    try:
        with open(path, encoding="ascii") as handle:
            short = hashlib.sha256(ssl.PEM_cert_to_DER_cert(handle.read())).digest()[:8].hex(":").upper()
    except (OSError, ValueError):
        return f" (--ssl: cannot read {path})"
    return f" (--ssl: all parties need the same {path}; this party's is SHA-256 {short}...)"


def _watched_data_received(self: asyncoro.MessageExchanger, data: bytes) -> None:
    gate = _gates.get(id(self))
    if gate is not None and not gate.open:
        data = gate.take(self, data)  # the peer's options first; MPyC's bytes only once they agree
        if not data:
            return
    if _state["failing"] is not None and self.peer_pid is not None:
        _frozen_data_received(self, data)
        return
    for pc, take in ((HEARTBEAT_PC, _heartbeat), (LOST_PC, lambda payload: _take_notice(self, payload))):
        if type(self.buffers.get(pc)) is not _Sink:
            self.buffers[pc] = _Sink(self, pc, take)
    before = len(self.bytes) + len(data)
    beats = _state["heartbeats"]
    _ORIGINAL["data_received"](self, data)
    table = self.buffers.get(TABLE_PC)
    if isinstance(table, (bytes, bytearray)):  # a peer that found the parties' options differ, relayed
        del self.buffers[TABLE_PC]
        _merge_table(bytes(table))
    watch = _state["watch"]
    if watch is not None and self.peer_pid is not None:
        consumed = before - len(self.bytes)
        watch.heard(int(self.peer_pid), time.monotonic(),
                    protocol=consumed > len(HEARTBEAT_FRAME) * (_state["heartbeats"] - beats))


def _watched_close_connection(self: asyncoro.MessageExchanger) -> None:
    if self.peer_pid is not None:
        _state["closed_by_us"].add(int(self.peer_pid))
    _ORIGINAL["close_connection"](self)


def _orderly_close(protocol: asyncoro.MessageExchanger) -> bool:
    """Inside :func:`stop_session`: is this closed connection part of MPyC's orderly shutdown (docs/session.md)?"""
    peer = protocol.peer_pid
    me = mpc.parties[mpc.pid].protocol
    in_barrier = isinstance(me, asyncio.Future) and not me.done()
    return peer is not None and (int(peer) in _state["closed_by_us"]
                                 or (int(peer) < mpc.pid and in_barrier and not _pending(protocol)))


def _watched_connection_lost(self: asyncoro.MessageExchanger, exc: BaseException | None) -> None:
    if self.peer_pid is not None:  # MPyC drops the connection's protocol (and its byte count) on close
        _state["sent_closed"][int(self.peer_pid)] = self.nbytes_sent
    failing = _state["failing"]
    if failing is not None:  # this party is already stopping on a lost party: one more close is expected
        if self.peer_pid is not None:
            failing["gone"].add(int(self.peer_pid))
        return
    gate = _gates.get(id(self))
    if gate is not None and not gate.open:  # MPyC never saw this connection: the connect loop decides
        gate.lost = True
        if gate.peer is not None or _mismatch() is not None:
            return
    if _mismatch() is not None and _state["phase"] == "connect":
        return  # the parties' options differ: the connect loop stops this party (exit 2), not a lost peer
    missing = _missing_parties() if _state["phase"] == "connect" and not _state["shutting_down"] else []
    if missing and self.peer_pid is not None and int(self.peer_pid) not in missing:
        # a peer gave up waiting for a party that never came: name that party, not the one that gave up
        fail_fast(f"not all {party_count()} parties connected (no connection from {_who(missing)}; party "
                  f"{self.peer_pid} stopped waiting)" + _tls_hint(), code=1)
    if _state["shutting_down"] or (_state["in_shutdown"] and _orderly_close(self)):
        with contextlib.suppress(Exception):  # MPyC's bookkeeping, without re-raising the socket error
            _ORIGINAL["connection_lost"](self, None)  # (e.g. the last peer gone outside the shutdown)
        return
    peer = self.peer_pid
    told = _state["notices"].get(int(peer)) if peer is not None else None
    if told is not None:  # a survivor that said which party it lost, then closed: name that party
        _fail_lost(told, int(peer))
        return
    watch = _state["watch"]
    if watch is not None and peer is not None:
        cause = watch.root_cause(int(peer), time.monotonic())
        if cause is not None:  # a survivor that gave up on a silent party: name the silent party
            fail_fast(silence_message(cause[0], _state["phase"], cause[1]), code=1)
    if _state["phase"] != "connect" and peer is not None:
        _fail_lost(int(peer), int(peer))  # tells the other survivors first, then exits
        return
    time.sleep(CONNECT_LOST_GRACE)  # blocks this party's event loop only; it is about to exit anyway
    hint = _tls_hint() if _state["phase"] == "connect" else ""  # asyncio hides the TLS alert (exc is None)
    fail_fast(_lost_message(peer, hint), code=1)


async def start_session(timeout: float | None = None, check_peers: Callable[[], str | None] | None = None,
                        silence_limit: float = DEFAULT_SILENCE_LIMIT) -> None:
    """Start the MPyC runtime and arm both watchdogs (lost connections, silent peers); the parameters:
    docs/session.md.
    :raise ValueError: if ``silence_limit`` is not a positive number.
    :raise ProtocolFailure: if not every party connected within ``timeout`` seconds."""
    import math
    import ssl

    if not (isinstance(silence_limit, (int, float)) and math.isfinite(silence_limit) and silence_limit > 0):
        raise ValueError(f"silence_limit must be a positive number of seconds, got {silence_limit!r}")
    if timeout is None:
        timeout = float(silence_limit)
    _disarm_watchdog()
    for name, method in (("connection_lost", _watched_connection_lost), ("data_received", _watched_data_received),
                         ("close_connection", _watched_close_connection), ("send", _watched_send),
                         ("connection_made", _gated_connection_made)):
        setattr(asyncoro.MessageExchanger, name, method)
    _gates.clear()
    _table.clear()
    _table[int(mpc.pid)] = _own_options()
    _state.update(shutting_down=False, in_shutdown=False, closed_by_us=set(), notices={}, failing=None, relayed=False,
                  sent_closed={}, first_seen=None)
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
            differ = _options_verdict(loop.time())
            if differ is not None:  # exit 2 at every party: a usage mistake, not a lost party
                _relay_table()
                mark_stopping()
                starting.cancel()
                raise InputError(differ)
            problem = check_peers() if check_peers else None
            if not problem and refused:
                problem = refused[0] + _tls_hint()
            if problem or loop.time() > deadline:
                starting.cancel()
                missing = _missing_parties()
                raise ProtocolFailure(problem or f"not all {party_count()} parties connected within {timeout:g} s"
                                      + (f" (no connection from {_who(missing)})" if missing else "") + _tls_hint())
            await asyncio.wait([starting], timeout=0.1)
        starting.result()
    finally:
        if patched:
            del loop.create_connection
    _arm_watchdog(float(silence_limit))


async def stop_session(*, phase: str | None = "shutdown") -> None:
    """Shut the runtime down in order (MPyC's barrier, then the connections close); a peer lost before it
    finished the barrier ends this party with one line and exit 1 (nothing released).  ``phase=None``: the run
    stays in its phase (a stop on an agreed verdict, :func:`stop_agreed`)."""
    _state["in_shutdown"] = True
    _state["closed_by_us"] = set()
    if phase is not None:
        set_phase(phase)
    try:
        await mpc.shutdown()
    finally:
        _disarm_watchdog()
    _state["shutting_down"] = True  # every connection is closed: nothing more to watch


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


async def agree_parameters(parameters: dict[str, Any]) -> None:
    """Check that every party runs with the same public parameters, before any data is shared.
    :raise InputError: naming the first disagreeing party and parameter, at every party alike."""
    set_phase("parameter check")
    everyone = await mpc.transfer(parameters)
    reference = everyone[0]
    for pid, theirs in enumerate(everyone):
        if _digest(theirs) == _digest(reference):
            continue
        keys = sorted(set(reference) | set(theirs))
        key = next((k for k in keys if _digest(reference.get(k)) != _digest(theirs.get(k))), "?")
        mark_stopping()
        raise InputError(f"party {pid}: parameters differ from party 0: "
                         f"{key}={theirs.get(key)!r} at party {pid} but {reference.get(key)!r} at party 0")


async def agree_verdict(error: str | None, *, detail: str | None = None) -> None:
    """Share this party's verdict on its own input (``error``: one line, no row data; ``detail``: printed here,
    never sent); stop everybody if any party failed (docs/session.md).
    :raise InputError: with the first failing party's message (prefixed ``party i:``), at every party."""
    if error and detail:
        print(f"note (at this party, not shared): {detail}", flush=True)
    verdicts = await mpc.transfer(error)
    failures = [(pid, message) for pid, message in enumerate(verdicts) if message]
    if failures:
        mark_stopping()
        pid, message = failures[0]
        same = [other for other, text in failures[1:] if text == message]
        others = [other for other, text in failures[1:] if text != message]
        also = f" (also {_who(same)})" if same else ""
        more = f" (and {len(others)} more failing part{'y' if len(others) == 1 else 'ies'})" if others else ""
        raise InputError(f"party {pid}{also}: {message}{more}")
