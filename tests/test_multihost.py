"""Parties as separate hosts: ``-P host:port`` x3, ``-I i``, ``--ssl`` with generated TEST ONLY certificates.

- ``scenarios.certificates`` writes MPyC's ``.config/`` layout, refuses to overwrite, and its files pass
  the TLS checks MPyC makes (even under ``VERIFY_X509_STRICT``, the default from Python 3.13 on).
- Three real parties on 127.0.0.1, 127.0.0.2 and 127.0.0.3, each started by hand with ``-I i`` from its
  own directory holding only its own three files (as if copied to its host). With ``--ssl`` they
  release the same value as without it, and that value equals the plaintext reference on the same
  tuples (epsilon = 1e9, so the noise is 0).
- A party with a certificate from another CA, or without ``.config``: every party exits non-zero
  (1 today) within a bounded time with one ``error:`` line, and nobody hangs. The suite's connection
  deadline is 60 s (measured: all parties exit 1 after 60.8 s, ``error: party i: not all 3 parties
  connected within 60 s``). These tests shorten it to 8 s by starting each party through a tiny
  wrapper around ``secure.session.start_session``. Only that number changes.
- With user and network namespaces (``unshare -rn``, no root needed), each party runs in its own
  network namespace on a bridge. The three hosts 10.77.0.1-3 all use port 11365, which is impossible
  on one loopback. The test is skipped where namespaces, veth or bridge devices are unavailable.
"""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, PartyRun, free_base_port, read_record, scenario_command

pytest.importorskip("cryptography", reason="the certificates tool needs the 'ssl' extra (cryptography)")

from scenarios import certificates  # noqa: E402  (after the skip: it needs cryptography to generate)
from secure import tls  # noqa: E402

pytestmark = pytest.mark.multiparty

PUBLIC = ["--seed", "5", "--epsilon", "1e9", "--pairs", "200", "--no-log"]
SHORT_DEADLINE = 8.0
LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")


def party_command(argv: Sequence[str], deadline: float | None = None, *, impostor: bool = False) -> list[str]:
    """``python -m scenarios.ustat argv``; with ``deadline``, the same with a shorter connection deadline.

    ``impostor``: a party that skips its own check of its files (``secure.tls.check_party``), as a
    holder of another seat's key who runs modified code would.
    """
    if deadline is None and not impostor:
        return scenario_command("ustat", *argv)
    skip = 'import secure.tls\nsecure.tls.check_party = lambda party, directory=".config": ""' if impostor else ""
    code = f"""
import runpy
import secure.session as runtime
{skip}

connect = runtime.start_session
DEADLINE = {deadline!r}


async def start_session(timeout=None, check_peers=None, **options):
    return await connect(DEADLINE if DEADLINE is not None else timeout, check_peers, **options)


runtime.start_session = start_session
runpy.run_module("scenarios.ustat", run_name="__main__", alter_sys=True)
"""
    return [sys.executable, "-c", code, *argv]


def run_hosts(commands: Sequence[Sequence[str]], cwds: Sequence[Path], timeout: float = 120.0) -> tuple[list[PartyRun], float]:
    """Start one process per party in its own directory; wait for all (kill after ``timeout``).

    :return: the runs (code -999: killed at the timeout, i.e. it hung) and the seconds until the last exit.
    """
    start = time.monotonic()
    processes = [subprocess.Popen(list(command), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  stdin=subprocess.DEVNULL, text=True) for command, cwd in zip(commands, cwds)]
    runs = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=max(1.0, timeout - (time.monotonic() - start)))
            runs.append(PartyRun(process.returncode, out, err))
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            runs.append(PartyRun(-999, out, err))
    return runs, time.monotonic() - start


def addresses(hosts: Sequence[str], ports: Sequence[int]) -> list[str]:
    """``-P host:port`` for every party."""
    return [item for host, port in zip(hosts, ports) for item in ("-P", f"{host}:{port}")]


def host_directories(root: Path, source: Path, parties: int) -> list[Path]:
    """``root/host{i}/.config`` with only party i's files copied from ``source`` (what goes to host i)."""
    homes = []
    for party in range(parties):
        config = root / f"host{party}" / ".config"
        config.mkdir(parents=True)
        for path in (certificates.ca_path(source), certificates.certificate_path(source, party),
                     certificates.key_path(source, party)):
            shutil.copy2(path, config / path.name)
        homes.append(config.parent)
    return homes


def estimate_line(run: PartyRun) -> str:
    """The one ``private estimate`` line a party printed."""
    lines = [line for line in run.stdout.splitlines() if "private estimate" in line]
    assert len(lines) == 1, run.stdout + run.stderr
    return lines[0]


def plaintext_sums(parties: int) -> tuple[list[int], float]:
    """The exact kernel sums and U-statistic on the tuples the seed picks, parties keeping rows i, i+m, ..."""
    from dp.umpc.protocol import simulate
    from scenarios.kit.datasets import load_embedded
    from scenarios.ustat import parse_options
    from secure.intake import rows_from_table

    options = parse_options([item for item in PUBLIC if item != "--no-log"])
    table = load_embedded("framingham")
    rows = [rows_from_table(table.header, table.rows, options.columns, source="embedded", party=party,
                            parties=parties).values for party in range(parties)]
    simulation = simulate(options.query, rows, threshold=(parties - 1) // 2, seed=5,
                          noise=np.zeros((1, len(options.query.outputs), parties), dtype=np.int64))
    return [int(value) for value in simulation.sums], float(simulation.exact_on_tuples)


# --------------------------------------------------------------------------- the certificates tool


def test_generates_mpyc_layout_and_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "site" / ".config"
    assert certificates.main(["--parties", "3", "--dir", str(config), "--hosts", "hostA,10.0.0.2,hostC"]) == 0
    printed = capsys.readouterr().out
    assert "TEST ONLY" in printed and str(config.resolve()) in printed
    names = sorted(path.name for path in config.iterdir())
    assert names == ["mpyc_ca.crt", "party_0.crt", "party_0.key", "party_1.crt", "party_1.key",
                     "party_2.crt", "party_2.key"]
    assert all((config / f"party_{i}.key").stat().st_mode & 0o077 == 0 for i in range(3))

    from cryptography import x509

    party1 = x509.load_pem_x509_certificate((config / "party_1.crt").read_bytes())
    names_in = party1.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names_in.get_values_for_type(x509.DNSName) == ["MPyC party 1"]
    assert [str(ip) for ip in names_in.get_values_for_type(x509.IPAddress)] == ["10.0.0.2"]
    assert "TEST ONLY" in party1.subject.rfc4514_string()
    lifetime = party1.not_valid_after_utc - party1.not_valid_before_utc
    assert 29 < lifetime.days <= 30

    before = (config / "party_0.key").read_bytes()
    assert certificates.main(["--parties", "3", "--dir", str(config)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and "already exists" in error and "--force" in error and "\n" not in error
    assert (config / "party_0.key").read_bytes() == before
    assert certificates.main(["--parties", "3", "--dir", str(config), "--force"]) == 0
    assert (config / "party_0.key").read_bytes() != before


@pytest.mark.parametrize("argv, fragment", [
    (["--parties", "3", "--hosts", "a,b"], "one host per party: 3 expected, got 2"),
    (["--parties", "2", "--hosts", "a,b_c"], "neither an IP address nor a host name"),
    (["--parties", "0"], "--parties must be at least 1"),
    (["--days", "400"], "--days must lie in 1..397"),
    (["--parties", "three"], "invalid int value"),
])
def test_bad_usage_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                         fragment: str) -> None:
    assert certificates.main([*argv, "--dir", str(tmp_path / ".config")]) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith("error: ") and fragment in captured.err
    assert not (tmp_path / ".config").exists()


def test_missing_cryptography_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['cryptography'] = None; from scenarios.certificates import main; "
            f"sys.exit(main(['--dir', {str(tmp_path / '.config')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert done.stderr.startswith("error: generating certificates needs the 'cryptography' package")
    assert not (tmp_path / ".config").exists()


def _handshake(listening: ssl.SSLContext, connecting: ssl.SSLContext, name: str) -> str | None:
    """``None`` if the in-memory handshake succeeds, else the verification message."""
    try:
        tls._memory_handshake(listening, connecting, name)
    except ssl.SSLCertVerificationError as exc:
        return str(exc.verify_message)
    except ssl.SSLError as exc:
        return str(exc.reason or exc)
    return None


def test_certificates_pass_mpyc_checks_even_strict(tmp_path: Path) -> None:
    good, other = tmp_path / "good", tmp_path / "other"
    certificates.generate(good, 3)
    certificates.generate(other, 3)
    contexts = {(where, party): certificates.mpyc_contexts(where, party) for where in (good, other) for party in range(3)}
    for listening, connecting in contexts.values():  # Python 3.13's default flags
        for context in (listening, connecting):
            context.verify_flags |= ssl.VERIFY_X509_STRICT | getattr(ssl, "VERIFY_X509_PARTIAL_CHAIN", 0)
    # party 0 connects to party 2 (MPyC: lower index connects, server name 'MPyC party 2')
    assert _handshake(contexts[good, 2][0], contexts[good, 0][1], "MPyC party 2") is None
    assert "mismatch" in str(_handshake(contexts[good, 2][0], contexts[good, 0][1], "MPyC party 1")).lower()
    assert _handshake(contexts[other, 2][0], contexts[good, 0][1], "MPyC party 2") is not None
    assert certificates.check_party(1, good) == certificates.ca_fingerprint(good / "mpyc_ca.crt")


def test_check_names_the_party_and_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import datetime as dt

    good, other, old = tmp_path / "good", tmp_path / "other", tmp_path / "old"
    certificates.generate(good, 2)
    certificates.generate(other, 2)
    certificates.generate(old, 2, days=1, now=dt.datetime.now(dt.timezone.utc) - dt.timedelta(days=3))
    assert certificates.main(["--check", "1", "--dir", str(good)]) == 0
    assert certificates.ca_fingerprint(good / "mpyc_ca.crt") in capsys.readouterr().out
    shutil.copy(other / "mpyc_ca.crt", good / "mpyc_ca.crt")
    problems = {}
    for name, directory in (("other CA", good), ("expired", old), ("missing", tmp_path / "none")):
        assert certificates.main(["--check", "1", "--dir", str(directory)]) == 2
        problems[name] = capsys.readouterr().err
    assert all(text.startswith("error: party 1: ") and text.count("\n") == 1 for text in problems.values())
    assert "unable to get local issuer certificate" in problems["other CA"]
    assert "expired" in problems["expired"]
    assert "missing:" in problems["missing"] and "party_1.key" in problems["missing"]


def _peer_certificate(*names: str, common_name: str | None = None) -> dict:
    """A certificate as ``SSLSocket.getpeercert()`` shows it."""
    subject = ((("organizationName", certificates.TEST_ONLY),), (("commonName", common_name or names[0]),))
    return {"subject": subject, "subjectAltName": tuple(("DNS", name) for name in names)}


def test_a_seat_is_accepted_only_with_its_own_name() -> None:
    """Issue 21, item 7: party 2 listens for parties 0 and 1, which claim their index in their first message."""
    one = _peer_certificate("MPyC party 1")
    assert tls.seat_refusal(1, one, own=2, parties=3, listening=True) is None
    assert tls.seat_refusal(0, one, own=2, parties=3, listening=True) == \
        "refused the connection claiming to be party 0: its certificate names MPyC party 1"
    assert tls.seat_refusal(1, one, own=2, parties=3, listening=True, connected=True) == \
        "refused a second connection claiming to be party 1"
    assert "accepts connections only from parties 0..1" in str(tls.seat_refusal(2, one, own=2, parties=3, listening=True))
    assert tls.seat_refusal(0, None, own=2, parties=3, listening=True) == \
        "refused the connection claiming to be party 0: it presented no certificate"
    # the subjectAltName decides, as in OpenSSL's host-name check; the common name only without one
    assert tls.certificate_names(_peer_certificate("MPyC party 1", common_name="MPyC party 0")) == ["MPyC party 1"]
    assert tls.certificate_names({"subject": ((("commonName", "MPyC party 0"),),)}) == ["MPyC party 0"]
    assert "names no MPyC party (names: hostA)" in str(
        tls.seat_refusal(0, _peer_certificate("hostA"), own=1, parties=3, listening=True))
    # the connecting side: party 0 dials party 2
    assert tls.seat_refusal(2, _peer_certificate("MPyC party 2", "10.0.0.3"), own=0, parties=3, listening=False) is None
    assert tls.seat_refusal(2, one, own=0, parties=3, listening=False) == \
        "refused the connection to party 2: its certificate names MPyC party 1"


def test_check_refuses_a_certificate_for_two_seats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A certificate that names two seats would let its holder sit in either: ``--check`` refuses it."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    config = tmp_path / ".config"
    now = dt.datetime.now(dt.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "MPyC party 1")])
    both = x509.SubjectAlternativeName([x509.DNSName("MPyC party 1"), x509.DNSName("MPyC party 0")])
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + dt.timedelta(days=1)).add_extension(both, critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(key, hashes.SHA256()))
    config.mkdir()
    pem = certificate.public_bytes(serialization.Encoding.PEM)
    (config / "mpyc_ca.crt").write_bytes(pem)  # self-signed: its own CA
    (config / "party_1.crt").write_bytes(pem)
    (config / "party_1.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()))
    assert certificates.main(["--check", "1", "--dir", str(config)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("error: party 1: ")
    assert "names MPyC party 1 and MPyC party 0: a certificate must name its own seat only" in error


# --------------------------------------------------------------------------- real parties over TLS


@pytest.fixture(scope="module")
def issued(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One TEST ONLY set for three loopback hosts, generated through the command line."""
    root = tmp_path_factory.mktemp("issued")
    done = subprocess.run([sys.executable, "-m", "scenarios.certificates", "--parties", "3",
                           "--hosts", ",".join(LOOPBACK_HOSTS)], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert str((root / ".config").resolve()) in done.stdout
    return root / ".config"


def test_ssl_across_loopback_hosts_releases_the_plain_value(issued: Path, tmp_path: Path) -> None:
    homes = host_directories(tmp_path, issued, 3)
    assert ROOT not in homes[0].parents  # the package comes from the (editable) install, not the cwd
    record = tmp_path / "ssl.json"
    base = free_base_port()
    peers = addresses(LOOPBACK_HOSTS, [base, base + 1, base + 2])
    secured, seconds = run_hosts([party_command([*peers, "-I", str(i), "--ssl", *PUBLIC, "--json", str(record)])
                                  for i in range(3)], homes)
    assert [run.code for run in secured] == [0, 0, 0], [run.stderr for run in secured]
    assert len({estimate_line(run) for run in secured}) == 1

    plain_record = tmp_path / "plain.json"
    base = free_base_port()
    plain, _ = run_hosts([party_command([*addresses(LOOPBACK_HOSTS, [base, base + 1, base + 2]), "-I", str(i),
                                         *PUBLIC, "--json", str(plain_record)]) for i in range(3)], homes)
    assert [run.code for run in plain] == [0, 0, 0], [run.stderr for run in plain]

    over_tls, in_clear = read_record(record), read_record(plain_record)
    assert over_tls["parties"] == 3 and over_tls["pairs"] == 200 and over_tls["n"] == 4238
    assert over_tls["noisy_sums"] == in_clear["noisy_sums"] and over_tls["estimate"] == in_clear["estimate"]
    sums, exact = plaintext_sums(3)
    assert over_tls["noisy_sums"] == sums and over_tls["estimate"] == pytest.approx(exact, abs=1e-12)
    assert seconds < 60


def _assert_nobody_hangs(runs: list[PartyRun], seconds: float) -> list[str]:
    """Every party failed (1, or 2 for a party that finds its own files wrong) within the bound, one line each."""
    assert all(run.code in (1, 2) for run in runs), [(run.code, run.stderr) for run in runs]
    assert seconds < SHORT_DEADLINE + 30
    lines = []
    for party, run in enumerate(runs):
        assert "Traceback" not in run.stderr and "private estimate" not in run.stdout
        errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1, run.stderr
        assert errors[0].startswith(f"error: party {party}: "), errors[0]
        lines.append(errors[0])
    return lines


def test_party_with_another_ca_stops_everyone(issued: Path, tmp_path: Path) -> None:
    homes = host_directories(tmp_path / "good", issued, 3)
    rogue = tmp_path / "rogue" / ".config"
    certificates.generate(rogue, 3)
    homes[2] = rogue.parent
    base = free_base_port()
    peers = addresses(LOOPBACK_HOSTS, [base, base + 1, base + 2])
    runs, seconds = run_hosts([party_command([*peers, "-I", str(i), "--ssl", *PUBLIC], SHORT_DEADLINE)
                               for i in range(3)], homes, timeout=SHORT_DEADLINE + 60)
    lines = _assert_nobody_hangs(runs, seconds)
    # party 1 dials party 2 and refuses its certificate in the handshake; party 2, which only listens,
    # sees its handshakes abandoned after its certificate and says so (before: it waited out the deadline
    # with "not all 3 parties connected within ... s", a line without "refused").  Party 0 dials party 1
    # first: if party 1 has stopped before party 0 reached it, party 0 learns nothing and waits out the
    # deadline, naming the parties it never connected with
    assert "refused" in lines[1], lines
    assert lines[2].startswith("error: party 2: its certificate was refused by a connecting peer"), lines
    assert "refused" in lines[0] or "connected within" in lines[0], lines


def test_party_without_config_stops_everyone(issued: Path, tmp_path: Path) -> None:
    homes = host_directories(tmp_path, issued, 3)
    shutil.rmtree(homes[1] / ".config")
    base = free_base_port()
    peers = addresses(LOOPBACK_HOSTS, [base, base + 1, base + 2])
    runs, seconds = run_hosts([party_command([*peers, "-I", str(i), "--ssl", *PUBLIC], SHORT_DEADLINE)
                               for i in range(3)], homes, timeout=SHORT_DEADLINE + 60)
    lines = _assert_nobody_hangs(runs, seconds)
    # party 1 listens, so it loads its files at once and fails (today: "internal error
    # (FileNotFoundError: [Errno 2] No such file or directory)", naming no file); 0 and 2 wait out the deadline
    assert "FileNotFoundError" in lines[1] or ".config/party_1.crt" in lines[1]
    assert lines[0].startswith(f"error: party 0: not all 3 parties connected within {SHORT_DEADLINE:g} s")


def seat_directories(root: Path, source: Path, seat: int, holder: int) -> list[Path]:
    """Three hosts' ``.config``; on the host of ``seat``, the key and certificate of ``holder`` under the
    seat's file names (a holder of ``holder``'s key who sits down at ``seat``)."""
    homes = host_directories(root, source, 3)
    config = homes[seat] / ".config"
    shutil.copy2(certificates.certificate_path(source, holder), certificates.certificate_path(config, seat))
    shutil.copy2(certificates.key_path(source, holder), certificates.key_path(config, seat))
    return homes


@pytest.mark.parametrize("seat, holder", [(0, 1), (1, 2)])
def test_a_party_in_another_seat_is_refused_at_every_party(issued: Path, tmp_path: Path, seat: int,
                                                           holder: int) -> None:
    """Issue 21, item 7: the holder of party ``holder``'s key runs as party ``seat`` (skipping its own
    check of its files); the real ``holder`` runs too.  Before seats were bound to certificates, seat 0
    taken by party 1's key released at every party with exit 0.  Now every party exits 1 with one line
    that says what was refused and by whom: the listening parties above the seat refuse the index the
    client claims, a connecting party below it refuses the listener's certificate (MPyC's name check)."""
    homes = seat_directories(tmp_path, issued, seat, holder)
    base = free_base_port()
    peers = addresses(LOOPBACK_HOSTS, [base, base + 1, base + 2])
    runs, seconds = run_hosts([party_command([*peers, "-I", str(i), "--ssl", *PUBLIC], SHORT_DEADLINE,
                                             impostor=i == seat) for i in range(3)],
                              homes, timeout=SHORT_DEADLINE + 60)
    lines = _assert_nobody_hangs(runs, seconds)
    assert all(run.code == 1 for run in runs), lines
    assert all("refused" in line for line in lines), lines
    claim = f"refused the connection claiming to be party {seat}: its certificate names MPyC party {holder}"
    listeners = range(seat + 1, 3)  # each refuses the claim itself, or was told by one that did
    assert all(claim in lines[party] for party in listeners), lines
    assert any(lines[party] == f"error: party {party}: {claim}" for party in listeners), lines
    for party in range(seat):  # it dials the seat and refuses the listener's certificate by its name
        assert f"MPyC party {seat}" in lines[party] and "refused" in lines[party], lines


# --------------------------------------------------------------------------- one network namespace per party

NAMESPACE_HOSTS = ("10.77.0.1", "10.77.0.2", "10.77.0.3")

# Run inside `unshare -rn` (a user + network namespace owned by the caller, no root needed): a bridge,
# and per party a network namespace (held by `sleep`) joined to it by a veth pair, addressed 10.77.0.i+1;
# then party i runs in its namespace with `nsenter -n`. Arguments: the ip binary, then one directory per
# party holding run.sh; each gets rc, out, err.
NAMESPACE_SCRIPT = r"""
set -eu
IP=$1; shift
holders=""
trap 'kill $holders 2>/dev/null || true' EXIT
"$IP" link set lo up
"$IP" link add br0 type bridge
"$IP" link set br0 up
i=0
for dir in "$@"; do
  unshare -n sleep 300 &
  pid=$!
  holders="$holders $pid"
  while [ "$(readlink /proc/$pid/ns/net)" = "$(readlink /proc/self/ns/net)" ]; do sleep 0.05; done
  "$IP" link add v$i type veth peer name eth0 netns $pid
  "$IP" link set v$i master br0 up
  nsenter -t $pid -n "$IP" addr add 10.77.0.$((i + 1))/24 dev eth0
  nsenter -t $pid -n "$IP" link set eth0 up
  nsenter -t $pid -n "$IP" link set lo up
  echo $pid > "$dir/ns"
  i=$((i + 1))
done
parties=""
for dir in "$@"; do
  ( set +e; nsenter -t "$(cat "$dir/ns")" -n sh "$dir/run.sh" > "$dir/out" 2> "$dir/err"; echo $? > "$dir/rc" ) &
  parties="$parties $!"
done
wait $parties
"""


def _ip_binary() -> str | None:
    return shutil.which("ip") or next((path for path in ("/usr/sbin/ip", "/sbin/ip") if os.path.exists(path)), None)


def _namespaces_problem() -> str | None:
    """Why one network namespace per party cannot be set up here, or ``None`` if it can."""
    ip = _ip_binary()
    missing = [name for name, path in (("unshare", shutil.which("unshare")), ("nsenter", shutil.which("nsenter")),
                                       ("ip", ip)) if not path]
    if missing:
        return f"missing {', '.join(missing)}"
    probe = (f"{ip} link add br0 type bridge && unshare -n true && "
             f"{ip} link add v0 type veth peer name v1")
    try:
        done = subprocess.run(["unshare", "-rn", "sh", "-c", probe], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unshare -rn failed: {exc}"
    return None if done.returncode == 0 else f"unshare -rn / bridge / veth unavailable: {done.stderr.strip()}"


def test_each_party_in_its_own_network_namespace(tmp_path: Path) -> None:
    problem = _namespaces_problem()
    if problem:
        pytest.skip(f"network namespaces: {problem}")
    config = tmp_path / "issued" / ".config"
    certificates.generate(config, 3, hosts=NAMESPACE_HOSTS)
    homes = host_directories(tmp_path, config, 3)
    record = tmp_path / "ns.json"
    peers = addresses(NAMESPACE_HOSTS, [11365] * 3)  # the same port on every host
    for party, home in enumerate(homes):
        command = party_command([*peers, "-I", str(party), "--ssl", *PUBLIC, "--json", str(record)])
        (home / "run.sh").write_text(f"cd {shlex.quote(str(home))} && exec {shlex.join(command)}\n")
    process = subprocess.Popen(["unshare", "-rn", "bash", "-c", NAMESPACE_SCRIPT, "namespaces", _ip_binary() or "ip",
                                *map(str, homes)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        _, err = process.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail("the parties in network namespaces did not finish within 120 s")
    codes = [(home / "rc").read_text().strip() if (home / "rc").exists() else "none" for home in homes]
    assert codes == ["0", "0", "0"], (err, [(home / "err").read_text() for home in homes if (home / "err").exists()])
    assert len({estimate_line(PartyRun(0, (home / "out").read_text(), "")) for home in homes}) == 1
    sums, _ = plaintext_sums(3)
    assert read_record(record)["noisy_sums"] == sums
