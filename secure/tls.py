"""TLS for MPyC's ``--ssl``: the files a party needs in ``.config/`` and a check that they work.
Threat model: TLS protects the channels against the network; it does nothing against a party that
deviates.  Standard library only (``ssl``).  Details: docs/secure_layer.md."""
from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import re
import ssl
import struct
import sys
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from secure.errors import InputError

__all__ = ["CA_FILENAME", "REFUSAL_GRACE", "REFUSAL_PC", "bind_seats", "ca_fingerprint", "ca_path",
           "certificate_names", "certificate_path", "check_party", "key_path", "mpyc_contexts", "party_name",
           "seat_refusal"]

#: MPyC's file names (``mpyc/runtime.py``): the CA, and ``party_{i}.crt`` / ``party_{i}.key``.
CA_FILENAME = "mpyc_ca.crt"


def party_name(party: int) -> str:
    """The name MPyC checks for party ``party`` (its TLS ``server_hostname``): ``MPyC party {i}``."""
    return f"MPyC party {party}"


def ca_path(directory: Path | str) -> Path:
    return Path(directory) / CA_FILENAME


def certificate_path(directory: Path | str, party: int) -> Path:
    return Path(directory) / f"party_{party}.crt"


def key_path(directory: Path | str, party: int) -> Path:
    return Path(directory) / f"party_{party}.key"


def ca_fingerprint(path: Path | str) -> str:
    """SHA-256 fingerprint ``AB:CD:...`` of the first certificate in the PEM file ``path``; every party must show the
    same one: compare them across hosts."""
    text = Path(path).read_text(encoding="ascii", errors="replace")
    end = "-----END CERTIFICATE-----"
    der = ssl.PEM_cert_to_DER_cert(text[:text.index(end) + len(end)] if end in text else text)
    return hashlib.sha256(der).digest().hex(":").upper()


def mpyc_contexts(directory: Path | str, party: int) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The (listening, connecting) TLS contexts MPyC's ``Runtime.start`` builds for ``party`` with ``--ssl``.
    Details: docs/secure_layer.md.
    :raise OSError: a file is missing or unreadable.
    :raise ssl.SSLError: a file is not PEM, or the key does not match the certificate."""
    listening, connecting = (ssl.create_default_context(ssl.Purpose.CLIENT_AUTH),
                             ssl.create_default_context(ssl.Purpose.SERVER_AUTH))
    for context in (listening, connecting):
        context.load_cert_chain(certificate_path(directory, party), keyfile=key_path(directory, party))
        context.load_verify_locations(cafile=ca_path(directory))
    listening.verify_mode = ssl.CERT_REQUIRED
    return listening, connecting


def _memory_handshake(listening: ssl.SSLContext, connecting: ssl.SSLContext, name: str) -> dict[str, Any]:
    """A TLS handshake between two contexts in memory (no sockets); raise the first side's error.
    :return: the listening side's certificate as the connecting side sees it (``getpeercert()``)."""
    server_in, server_out, client_in, client_out = (ssl.MemoryBIO() for _ in range(4))
    server = listening.wrap_bio(server_in, server_out, server_side=True)
    client = connecting.wrap_bio(client_in, client_out, server_hostname=name)
    done = {"server": False, "client": False}
    for _ in range(16):
        for side, endpoint in (("client", client), ("server", server)):
            if not done[side]:
                try:
                    endpoint.do_handshake()
                    done[side] = True
                except ssl.SSLWantReadError:
                    pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        if all(done.values()):
            return dict(client.getpeercert() or {})
    raise ssl.SSLError("TLS handshake did not finish")


def check_party(party: int, directory: Path | str = ".config") -> str:
    """Check that ``party`` can use ``--ssl`` from ``directory``, as MPyC will load it (stdlib only).
    Details: docs/secure_layer.md.
    :return: the SHA-256 fingerprint of this party's ``mpyc_ca.crt``.
    :raise InputError: one line naming the party, the file and the problem."""
    directory = Path(directory)
    needed = [ca_path(directory), certificate_path(directory, party), key_path(directory, party)]
    missing = [str(path) for path in needed if not path.is_file()]
    where = "" if directory.is_absolute() else f" (relative to {Path.cwd()})"
    if missing:
        raise InputError(f"party {party}: --ssl needs {', '.join(map(str, needed))}{where}; "
                         f"missing: {', '.join(missing)}")
    try:
        listening, connecting = mpyc_contexts(directory, party)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or str(exc)
        if reason == "KEY_VALUES_MISMATCH":
            reason = "the key does not belong to the certificate"
        raise InputError(f"party {party}: cannot load {needed[1]} / {needed[2]} / {needed[0]}: {reason}") from None
    try:
        certificate = _memory_handshake(listening, connecting, party_name(party))
    except ssl.SSLCertVerificationError as exc:
        raise InputError(f"party {party}: {needed[1]} is not valid for '{party_name(party)}' under {needed[0]}: "
                         f"{exc.verify_message}") from None
    except ssl.SSLError as exc:
        raise InputError(f"party {party}: TLS handshake with its own files failed: {exc.reason or exc}") from None
    seats = [name for name in certificate_names(certificate) if _SEAT.fullmatch(name)]
    if seats != [party_name(party)]:
        raise InputError(f"party {party}: {needed[1]} names {' and '.join(seats)}: a certificate must name its own "
                         f"seat only, or its holder could sit in the other one too")
    return ca_fingerprint(needed[0])


#: program counter of a refusal notice in MPyC's frame, which no receive asks for (as ``secure.session``'s
#: heartbeats ``-2^63 + 1``, options table ``-2^63 + 2`` and lost-party notices ``-2^63 + 4``)
REFUSAL_PC = -(2 ** 63) + 3
#: seconds a party that refused a peer keeps running before it exits: its notice reaches the parties
#: already connected, and a party the offender also dialled sees the offending connection itself
REFUSAL_GRACE = 1.5
#: seconds between two garbage collections while connecting (they find abandoned TLS handshakes)
COLLECT_INTERVAL = 0.5
#: the longest notice printed (a peer's text, cut and put on one line)
NOTICE_LIMIT = 300

#: the line of a party whose certificate a connecting peer refused (``why``: the TLS alert, or none)
_REFUSED = ("its certificate was refused by a connecting peer ({why}); all parties need the same {ca} and a "
            "certificate naming their own seat")

_SEAT = re.compile(r"MPyC party (\d+)")
#: TLS alerts that say the peer refused this party's certificate
_REFUSAL_ALERTS = ("ALERT_UNKNOWN_CA", "ALERT_BAD_CERTIFICATE", "ALERT_CERTIFICATE_UNKNOWN",
                   "ALERT_CERTIFICATE_EXPIRED", "ALERT_CERTIFICATE_REVOKED", "ALERT_UNSUPPORTED_CERTIFICATE",
                   "ALERT_CERTIFICATE_REQUIRED", "ALERT_ACCESS_DENIED", "ALERT_DECRYPT_ERROR")


def certificate_names(certificate: Mapping[str, Any] | None) -> list[str]:
    """The host names a peer certificate (``SSLSocket.getpeercert()``) is valid for: its subjectAltName
    DNS entries, or its common names when it has none (the rule of OpenSSL's host-name check)."""
    if not certificate:
        return []
    names = [str(value) for kind, value in certificate.get("subjectAltName", ()) if kind == "DNS"]
    if names:
        return names
    return [str(value) for entry in certificate.get("subject", ()) for key, value in entry if key == "commonName"]


def seat_refusal(peer: int, certificate: Mapping[str, Any] | None, *, own: int, parties: int,
                 listening: bool, connected: bool = False) -> str | None:
    """Why this party (``own`` of ``parties``) refuses a connection with ``peer`` (the index it claims, or the one
    dialled), or ``None`` to accept it: the refusal, after ``error: party i:``.  Parameters: docs/secure_layer.md."""
    if listening:
        what = f"the connection claiming to be party {peer}"
        if not 0 <= peer < own:
            allowed = f"parties 0..{own - 1}" if own > 1 else "party 0"
            return f"refused {what}: party {own} accepts connections only from {allowed}"
        if connected:
            return f"refused a second connection claiming to be party {peer}"
    else:
        what = f"the connection to party {peer}"
        if not own < peer < parties:
            return f"refused {what}: party {own} connects only to parties {own + 1}..{parties - 1}"
    if certificate is None:
        return f"refused {what}: it presented no certificate"
    names = certificate_names(certificate)
    if party_name(peer) not in names:
        seats = [name for name in names if _SEAT.fullmatch(name)]
        named = " and ".join(seats) or "no MPyC party" + (f" (names: {', '.join(names)})" if names else "")
        return f"refused {what}: its certificate names {named}"
    return None


def _handshake_refusal(exc: ssl.SSLError, ca: str, server_hostname: str | None = None) -> str | None:
    """The line for a handshake that failed on a certificate (``None``: another failure); ``server_hostname``: the
    name the connecting side asked for (``MPyC party j``), ``None`` when this party is the listening side."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        peer = f"the certificate of {server_hostname}" if server_hostname else "a connecting peer's certificate"
        return f"refused {peer}: {exc.verify_message} (under {ca}; all parties need the same one)"
    reason = str(getattr(exc, "reason", "") or "")
    if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
        return "refused a connecting peer: it presented no certificate"
    if any(reason.endswith(alert) for alert in _REFUSAL_ALERTS):
        return _REFUSED.format(why=reason, ca=ca)
    return None


def _watched_object_class(on_refusal: Callable[[str], None], ca: str) -> type[ssl.SSLObject]:
    """An ``SSLObject`` (``SSLContext.sslobject_class``) that reports a handshake failing on a certificate.
    Details: docs/secure_layer.md."""

    def abandoned(token: dict[str, bool]) -> None:
        if not token["done"]:
            on_refusal(_REFUSED.format(why="which ended the TLS handshake after receiving it", ca=ca))

    class WatchedSSLObject(ssl.SSLObject):
        def do_handshake(self) -> None:
            token = self.__dict__.get("_seat_token")
            if token is None:
                token = self.__dict__["_seat_token"] = {"done": False}
                if self.server_side:
                    weakref.finalize(self, abandoned, token).atexit = False
            try:
                super().do_handshake()
                token["done"] = True
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                raise
            except ssl.SSLError as exc:
                token["done"] = True
                refusal = _handshake_refusal(exc, ca, None if self.server_side else self.server_hostname)
                if refusal is not None:
                    on_refusal(refusal)
                raise

    return WatchedSSLObject


def _told(party: int, refusal: str) -> str:
    """A refusal as the other parties print it: "party 1 refused ...", "party 1's certificate was refused ..."."""
    if refusal.startswith("its certificate"):
        return f"party {party}'s certificate" + refusal[len("its certificate"):]
    return f"party {party} {refusal}"


def _notice_text(payload: object) -> str | None:
    """A peer's notice as one printable line (cut), or ``None`` if ``payload`` is not one."""
    if not isinstance(payload, (bytes, bytearray)):
        return None
    text = " ".join(bytes(payload).decode("utf-8", errors="replace").split())
    text = "".join(char for char in text if char.isprintable())
    return text[:NOTICE_LIMIT] or None


def bind_seats() -> None:
    """With ``--ssl``: accept a peer only in the seat its certificate names; install before ``mpc.start``.
    Details: docs/secure_layer.md."""
    from mpyc import asyncoro
    from mpyc.runtime import mpc

    from secure.session import fail_fast, on_fatal

    register = mpc.set_protocol
    ca = str(ca_path(".config"))
    state: dict[str, Any] = {"refusal": None}

    def notify(protocol: Any) -> None:
        transport = getattr(protocol, "transport", None)
        if state["refusal"] is not None and transport is not None and not transport.is_closing():
            payload = _told(int(mpc.pid), state["refusal"]).encode("utf-8")
            transport.write(struct.pack("<qI", REFUSAL_PC, len(payload)) + payload)

    def connecting() -> bool:
        own = mpc.parties[mpc.pid].protocol
        return isinstance(own, asyncio.Future) and not own.done()

    def refuse(message: str, offender: Any = None) -> None:
        if state["refusal"] is not None or not connecting():
            return
        state["refusal"] = message
        for peer in mpc.parties:
            if peer.pid != mpc.pid and isinstance(peer.protocol, asyncoro.MessageExchanger):
                notify(peer.protocol)
        if offender is not None:
            notify(offender)
        mpc._loop.call_later(REFUSAL_GRACE, fail_fast, message, 1)

    def checked(peer_pid: int, protocol: Any) -> None:
        transport = getattr(protocol, "transport", None)
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        if transport is None or ssl_object is None:  # not a TLS connection: nothing to bind
            register(peer_pid, protocol)
            return
        if state["refusal"] is not None:  # refused already: tell this peer too, accept nothing more
            notify(protocol)
            return
        peer = int(peer_pid)
        listening = bool(ssl_object.server_side)
        connected = listening and 0 <= peer < len(mpc.parties) and mpc.parties[peer].protocol is not None
        refusal = seat_refusal(peer, transport.get_extra_info("peercert"), own=int(mpc.pid),
                               parties=len(mpc.parties), listening=listening, connected=connected)
        if refusal is not None:
            refuse(refusal, protocol)
            return
        register(peer_pid, protocol)

    def announce() -> None:
        message = state["refusal"]
        if message is None:
            for peer in mpc.parties:
                buffers = getattr(peer.protocol, "buffers", None) if peer.pid != mpc.pid else None
                notice = _notice_text(buffers.get(REFUSAL_PC)) if isinstance(buffers, dict) else None
                if notice is not None:
                    own = notice.startswith((f"party {peer.pid} ", f"party {peer.pid}'s "))
                    message = notice if own else f"party {peer.pid}: {notice}"
                    break
        if message is None:
            return
        sys.stdout.flush()
        print(f"error: party {mpc.pid}: {message}", file=sys.stderr, flush=True)
        os._exit(1)

    loop = mpc._loop
    watched = _watched_object_class(refuse, ca)

    def watching(create: Callable[..., Any]) -> Callable[..., Any]:
        async def created(*args: Any, **kwargs: Any) -> Any:
            context = kwargs.get("ssl")
            if isinstance(context, ssl.SSLContext):
                context.sslobject_class = watched
            return await create(*args, **kwargs)

        return created

    def collect() -> None:  # finds the handshakes a peer abandoned (see _watched_object_class)
        if state["refusal"] is None and (connecting() or mpc.parties[mpc.pid].protocol is None):
            gc.collect()
            loop.call_later(COLLECT_INTERVAL, collect)

    mpc.set_protocol = checked
    # instance attributes of MPyC's loop, like secure.session's own wrapper of create_connection (which
    # wraps this one while connecting and then deletes the attribute: both end with the connect phase)
    loop.create_server = watching(loop.create_server)
    loop.create_connection = watching(loop.create_connection)
    on_fatal(announce)
    loop.call_soon(collect)
