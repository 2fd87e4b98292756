"""TLS for MPyC's ``--ssl``: the files a party needs in ``.config/`` and a check that they work.

MPyC (``Runtime.start``) loads ``.config/mpyc_ca.crt``, ``party_{i}.crt`` and ``party_{i}.key`` and checks
the peer name ``MPyC party {j}``.  :func:`check_party` loads the same files with the same calls and runs
a handshake of the party with itself, so that a missing file, a key of another certificate, an expired
certificate or one of another CA stops the party before it connects, with one line.  Standard library
only (``ssl``); generating test certificates is :mod:`scenarios.certificates`.

Threat model: TLS protects the channels against the network (confidentiality, integrity, and only
holders of a certificate from the CA connect); it does nothing against a party that deviates.
"""
from __future__ import annotations

import hashlib
import ssl
from pathlib import Path

from secure.errors import InputError

__all__ = ["CA_FILENAME", "ca_fingerprint", "ca_path", "certificate_path", "check_party", "key_path",
           "mpyc_contexts", "party_name"]

#: MPyC's file names (``mpyc/runtime.py``): the CA, and ``party_{i}.crt`` / ``party_{i}.key``.
CA_FILENAME = "mpyc_ca.crt"


def party_name(party: int) -> str:
    """The name MPyC checks for party ``party`` (its TLS ``server_hostname``): ``MPyC party {i}``."""
    return f"MPyC party {party}"


def ca_path(directory: Path | str) -> Path:
    """``DIR/mpyc_ca.crt``."""
    return Path(directory) / CA_FILENAME


def certificate_path(directory: Path | str, party: int) -> Path:
    """``DIR/party_{i}.crt``."""
    return Path(directory) / f"party_{party}.crt"


def key_path(directory: Path | str, party: int) -> Path:
    """``DIR/party_{i}.key``."""
    return Path(directory) / f"party_{party}.key"


def ca_fingerprint(path: Path | str) -> str:
    """SHA-256 fingerprint ``AB:CD:...`` of the first certificate in the PEM file ``path``.

    Every party must show the same one: compare them across hosts.
    """
    text = Path(path).read_text(encoding="ascii", errors="replace")
    end = "-----END CERTIFICATE-----"
    der = ssl.PEM_cert_to_DER_cert(text[:text.index(end) + len(end)] if end in text else text)
    digest = hashlib.sha256(der).hexdigest().upper()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


def mpyc_contexts(directory: Path | str, party: int) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """The (listening, connecting) TLS contexts MPyC's ``Runtime.start`` builds for ``party`` with ``--ssl``.

    Same calls as MPyC 0.10/0.11: ``create_default_context`` for client/server authentication,
    ``load_cert_chain(party_i.crt, party_i.key)``, ``load_verify_locations(mpyc_ca.crt)`` and, when
    listening, ``CERT_REQUIRED``.  The connecting side checks the name ``MPyC party {j}``.

    :raise OSError: a file is missing or unreadable.
    :raise ssl.SSLError: a file is not PEM, or the key does not match the certificate.
    """
    directory = Path(directory)
    contexts = []
    for purpose in (ssl.Purpose.CLIENT_AUTH, ssl.Purpose.SERVER_AUTH):
        context = ssl.create_default_context(purpose)
        context.load_cert_chain(certificate_path(directory, party), keyfile=key_path(directory, party))
        context.load_verify_locations(cafile=ca_path(directory))
        if purpose is ssl.Purpose.CLIENT_AUTH:
            context.verify_mode = ssl.CERT_REQUIRED
        contexts.append(context)
    return contexts[0], contexts[1]


def _memory_handshake(listening: ssl.SSLContext, connecting: ssl.SSLContext, name: str) -> None:
    """A TLS handshake between two contexts in memory (no sockets); raise the first side's error."""
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
            return
    raise ssl.SSLError("TLS handshake did not finish")


def check_party(party: int, directory: Path | str = ".config") -> str:
    """Check that ``party`` can use ``--ssl`` from ``directory``, as MPyC will load it (stdlib only).

    Loads the three files with MPyC's calls and runs a handshake of the party with itself: its
    certificate must chain to ``mpyc_ca.crt``, be valid now, and carry the name ``MPyC party {i}``.
    It cannot see whether the *other* parties hold the same CA: compare the returned fingerprints.

    :return: the SHA-256 fingerprint of this party's ``mpyc_ca.crt``.
    :raise InputError: one line naming the party, the file and the problem.
    """
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
        _memory_handshake(listening, connecting, party_name(party))
    except ssl.SSLCertVerificationError as exc:
        raise InputError(f"party {party}: {needed[1]} is not valid for '{party_name(party)}' under {needed[0]}: "
                         f"{exc.verify_message}") from None
    except ssl.SSLError as exc:
        raise InputError(f"party {party}: TLS handshake with its own files failed: {exc.reason or exc}") from None
    return ca_fingerprint(needed[0])
