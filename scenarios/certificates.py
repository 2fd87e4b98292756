"""TEST ONLY certificates for MPyC's ``--ssl``: a throwaway CA plus one key and certificate per party.

MPyC's ``--ssl`` reads ``.config/mpyc_ca.crt``, ``.config/party_{i}.crt`` and ``.config/party_{i}.key``
relative to each party's working directory; this tool writes them (what they protect and what MPyC checks:
docs/command_line.md).  Run it::

    python -m scenarios.certificates                                 # 3 parties into .config/
    python -m scenarios.certificates -M5 --days 7 --force            # replace an existing set
    python -m scenarios.certificates --check 1                       # on party 1's host: ready?

Every option is explained by ``-h``.  Generating needs ``cryptography``.  Exit 0 done, 2 with one line
``error: ...``.  No MPyC, no connections: no threat model of its own."""
from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import re
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.kit.cli import ScenarioParser, UsageError
from secure.errors import InputError
from secure.tls import CA_FILENAME, ca_fingerprint, ca_path, certificate_path, check_party, key_path, mpyc_contexts, party_name

__all__ = ["CA_FILENAME", "CertificateSet", "build_parser", "ca_fingerprint", "ca_path", "certificate_path",
           "check_party", "generate", "key_path", "main", "mpyc_contexts", "party_name", "parse_hosts"]

#: The longest validity allowed (the CA/Browser Forum's limit for TLS certificates).
MAX_DAYS = 397
#: The label in every subject, so that nobody mistakes these files for real credentials.
TEST_ONLY = "TEST ONLY - private-ustats throwaway certificates"

_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


@dataclass(frozen=True)
class CertificateSet:
    """What :func:`generate` wrote."""

    directory: Path
    ca: Path
    certificates: tuple[Path, ...]
    keys: tuple[Path, ...]
    not_after: _dt.datetime
    ca_fingerprint: str


def parse_hosts(text: str | None, parties: int) -> list[str | None]:
    """``"hostA,10.0.0.2,hostC"`` -> one validated host (or ``None``) per party; :raise UsageError: wrong number of
    entries, or an entry that is neither an IP address nor a host name."""
    if text is None:
        return [None] * parties
    hosts = [item.strip() for item in text.split(",")]
    if len(hosts) != parties:
        raise UsageError(f"--hosts needs one host per party: {parties} expected, got {len(hosts)} ('{text}')")
    for host in hosts:
        if not host:
            raise UsageError(f"--hosts has an empty entry in '{text}'")
        try:
            ipaddress.ip_address(host)
            continue
        except ValueError:
            pass
        labels = host.rstrip(".").split(".")
        if len(host) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
            raise UsageError(f"--hosts entry '{host}' is neither an IP address nor a host name")
    return list(hosts)


def _write(path: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``path`` with permissions ``mode``, atomically (a temporary file, then rename)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise


def generate(directory: Path | str, parties: int, *, hosts: Sequence[str | None] | None = None,
             days: int = 30, force: bool = False, now: _dt.datetime | None = None) -> CertificateSet:
    """Create a TEST ONLY CA and a key and certificate for parties ``0..parties-1`` in ``directory`` (mode 0700),
    valid ``days`` (1..397) from ``now`` minus 5 minutes, with an optional host per party in its subjectAltName.
    :raise UsageError: bad parameters, existing files without ``force``, missing ``cryptography``."""
    if isinstance(parties, bool) or not isinstance(parties, int) or parties < 1:
        raise UsageError(f"--parties must be a positive integer, got {parties!r}")
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise UsageError(f"--days must lie in 1..{MAX_DAYS}, got {days!r}")
    hosts = list(hosts) if hosts is not None else [None] * parties
    if len(hosts) != parties:
        raise UsageError(f"--hosts needs one host per party: {parties} expected, got {len(hosts)}")
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"--dir {directory} exists and is not a directory")
    targets = [ca_path(directory)] + [path for party in range(parties)
                                      for path in (certificate_path(directory, party), key_path(directory, party))]
    existing = [path for path in targets if path.exists()]
    if existing and not force:
        more = f" (and {len(existing) - 1} more)" if len(existing) > 1 else ""
        raise UsageError(f"{existing[0]} already exists{more}; pass --force to replace the whole set "
                         "(every party then needs the new files)")
    try:  # imported here: a clear usage error if the package is missing
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    except ImportError:
        raise UsageError("generating certificates needs the 'cryptography' package: "
                         "pip install cryptography (a dependency of the suite)") from None

    start = (now or _dt.datetime.now(_dt.timezone.utc)) - _dt.timedelta(minutes=5)
    not_after = start + _dt.timedelta(days=days, minutes=5)

    def subject(common_name: str) -> Any:
        return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, TEST_ONLY),
                          x509.NameAttribute(NameOID.COMMON_NAME, common_name)])

    def signed(name: Any, key: Any, ca: bool, *extensions: Any) -> Any:
        """A certificate for ``key`` signed by the CA, critical basic constraints and key usage (signatures; a CA
        also signs certificates and revocation lists), then the non-critical ``extensions``."""
        builder = (
            x509.CertificateBuilder()
            .subject_name(name).issuer_name(ca_subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=ca, crl_sign=ca,
                                         encipher_only=False, decipher_only=False), critical=True))
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        return builder.sign(ca_key, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_identifier = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    # a distinct name per set, so that two test CAs are never confused (by people or by OpenSSL)
    ca_subject = subject(f"MPyC TEST ONLY certificate authority {ca_identifier.digest[:4].hex().upper()}")
    ca_certificate = signed(ca_subject, ca_key, True, ca_identifier)

    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    _write(ca_path(directory), ca_certificate.public_bytes(pem), 0o644)
    for party in range(parties):
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[Any] = [x509.DNSName(party_name(party))]
        host = hosts[party]
        if host:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        certificate = signed(
            subject(party_name(party)), key, False,
            # every party is a TLS server (for lower indices) and a TLS client (for higher ones)
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
            x509.SubjectAlternativeName(names), x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_identifier))
        key_bytes = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        _write(key_path(directory, party), key_bytes, 0o600)
        _write(certificate_path(directory, party), certificate.public_bytes(pem), 0o644)
    return CertificateSet(directory, ca_path(directory), tuple(certificate_path(directory, p) for p in range(parties)),
                          tuple(key_path(directory, p) for p in range(parties)), not_after,
                          ca_fingerprint(ca_path(directory)))


def build_parser() -> ScenarioParser:
    parser = ScenarioParser(prog="python -m scenarios.certificates", runs_as="tool",
                            description="Generate TEST ONLY certificates for MPyC's --ssl in its .config/ layout.")
    parser.add_argument("--parties", "-M", type=int, default=3, metavar="M", help="number of parties (3)")
    parser.add_argument("--dir", default=".config", metavar="DIR", help="output directory (.config)")
    parser.add_argument("--hosts", default=None, metavar="H0,H1,...",
                        help="one host name or IP address per party, added to its subjectAltName")
    parser.add_argument("--days", type=int, default=30, metavar="N", help=f"validity in days, 1..{MAX_DAYS} (30)")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")
    parser.add_argument("--check", type=int, default=None, metavar="I",
                        help="do not generate: check party I's files in --dir as MPyC will load them, and "
                             "that the certificate names party I's seat only")
    return parser


def _report(written: CertificateSet, hosts: Sequence[str | None]) -> None:
    directory = written.directory
    print(f"TEST ONLY certificates for {len(written.keys)} MPyC parties in {directory.resolve()}/")
    print(f"  CA          {written.ca.name}  (its private key was not kept)")
    print(f"  CA SHA-256  {written.ca_fingerprint}")
    for party, (certificate, key) in enumerate(zip(written.certificates, written.keys)):
        extra = f", {hosts[party]}" if hosts[party] else ""
        print(f"  party {party:<5} {certificate.name} + {key.name}  (names: {party_name(party)}{extra})")
    print(f"  valid until {written.not_after:%Y-%m-%d %H:%M} UTC")
    print(f"Copy to the host of party i, into .config/ under the directory the party runs from: "
          f"{CA_FILENAME}, party_i.crt, party_i.key (keep the key private; mode 0600).")
    print("Check each host with: python -m scenarios.certificates --check i  (same CA fingerprint everywhere),")
    print("then run every party there with the same -P host:port list, its own -I i, and --ssl.")


def main(argv: Sequence[str] | None = None) -> int:
    """Generate (or ``--check``) and print what was done; 0 on success, 2 with one ``error:`` line otherwise."""
    directory = ".config"
    try:
        options = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
        directory = options.dir
        if options.check is not None:
            if options.check < 0:
                raise UsageError(f"--check expects a party index 0, 1, ..., got {options.check}")
            fingerprint = check_party(options.check, options.dir)
            print(f"party {options.check}: {Path(options.dir).resolve()}/ is ready for --ssl "
                  f"(certificate for '{party_name(options.check)}' verifies under {CA_FILENAME}; "
                  f"the other parties accept it in seat {options.check} only)")
            print(f"  CA SHA-256 {fingerprint}")
            print("  every party must show the same CA fingerprint")
            return 0
        if options.parties < 1:
            raise UsageError(f"--parties must be at least 1, got {options.parties}")
        hosts = parse_hosts(options.hosts, options.parties)
        written = generate(options.dir, options.parties, hosts=hosts, days=options.days, force=options.force)
    except (UsageError, InputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot write or read certificates in {exc.filename or directory}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2
    _report(written, hosts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
