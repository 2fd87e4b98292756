"""Many data owners (issue 24, parts 1 and 5): campaign file, sealed records, refusals at a server, the servers'
agreement at -M3 and the tool's usage errors.  One -M3 run; the rest in this process."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from secure import categorical, numeric
from secure.owners import (Campaign, FolderTransport, load_private_key, open_inbox, pack, seal, simulate_owners,
                           split, submit, unseal)

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def folder(tmp_path: Path) -> Path:
    """Three servers' keys and a campaign (x: 0..10 in halves, y: a|b|c; two rows per owner) in ``tmp_path``."""
    from secure.owners import generate_server_key

    keys = [generate_server_key(server, tmp_path / "keys")[1].read_text().strip() for server in range(3)]
    Campaign.create(public_keys=keys, threshold=1, deadline="2100-01-01T00:00:00Z", rows_per_owner=2,
                    columns=[numeric("x", lower=0, upper=10, bits=1), categorical("y", categories=["a", "b", "c"])]
                    ).save(tmp_path / "campaign.json")
    return tmp_path


def _open(folder: Path, server: int, inbox: str = "inbox/server{pid}"):  # type: ignore[no-untyped-def]
    campaign = Campaign.load(folder / "campaign.json")
    return open_inbox(campaign, server, load_private_key(folder / f"keys/server{server}.key"), folder / inbox)


def test_campaign_file_and_field_are_mpyc_s(folder: Path) -> None:
    campaign = Campaign.load(folder / "campaign.json")
    campaign.save(folder / "again.json")
    assert Campaign.load(folder / "again.json") == campaign
    assert campaign.prime == 2 ** 64 - 189  # MPyC's SecInt32 field at K = 30 (mpyc.runtime: SecInt(32).field.modulus)
    with pytest.raises(ValueError, match="prime 7 is not the prime of MPyC's SecInt"):
        Campaign(**{**campaign.__dict__, "prime": 7})
    with pytest.raises(ValueError, match=r"threshold t must lie in \[1, 1\]"):
        Campaign(**{**campaign.__dict__, "threshold": 2})


def test_sealed_record_round_trip_and_shares_recombine(folder: Path) -> None:
    campaign = Campaign.load(folder / "campaign.json")
    key = load_private_key(folder / "keys/server1.key")
    token, record = "ab" * 16, seal(campaign, 1, "ab" * 16, b"payload")
    assert unseal(campaign, 1, key, record) == (token, b"payload")
    values = campaign.grid_values({"x": [3.5, 12.0, -1], "y": ["b", "a", "c"]})
    assert values.tolist() == [[7, 1], [20, 0], [0, 2]]  # halves; clipped to the domain; codes
    shares = split(campaign, values)
    p = campaign.prime
    assert ((2 * shares[0] - shares[1]) % p).tolist() == values.tolist()  # Lagrange at x = 1, 2 (t = 1)
    assert ((3 * shares[1] - 2 * shares[2]) % p).tolist() == values.tolist()  # at x = 2, 3
    assert not (shares[0] == values).all()


def test_simulated_owners_open_at_every_server(folder: Path) -> None:
    campaign = Campaign.load(folder / "campaign.json")
    generator = np.random.default_rng(3)
    columns = {"x": generator.uniform(0, 10, (40, 2)), "y": generator.choice(["a", "b", "c"], (40, 2))}
    tokens, sent = simulate_owners(campaign, columns, FolderTransport(str(folder / "inbox/server{pid}")))
    assert sent == [40 * (82 + 16 + 2 + 2 * 2 * 8)] * 3  # header, tag, row count, 2 rows x 2 shares of 8 bytes
    opened = [_open(folder, server) for server in range(3)]
    assert all(intake.tokens == tuple(sorted(tokens)) and not intake.rejected for intake in opened)
    order = np.argsort(tokens)
    expected = campaign.grid_values({name: column[order].reshape(-1) for name, column in columns.items()})
    assert ((2 * opened[0].shares - opened[1].shares) % campaign.prime).tolist() == expected.tolist()


def test_bad_records_are_refused_with_one_line_each(folder: Path) -> None:
    campaign = Campaign.load(folder / "campaign.json")
    inbox = folder / "inbox/server0"
    transport = FolderTransport(str(folder / "inbox/server{pid}"))
    good, _ = submit(campaign, [{"x": 1, "y": "a"}], transport)
    tampered, _ = submit(campaign, [{"x": 2, "y": "b"}], transport)
    replayed, _ = submit(campaign, [{"x": 3, "y": "c"}], transport)
    key = load_private_key(folder / "keys/server0.key")
    paths = {unseal(campaign, 0, key, path.read_bytes())[0]: path for path in inbox.iterdir()}
    path = paths[tampered]
    data = bytearray(path.read_bytes())
    data[-20] ^= 1
    path.write_bytes(bytes(data))
    other = Campaign.create(public_keys=campaign.public_keys, threshold=1, deadline=campaign.deadline,
                            columns=campaign.columns)
    transport.post(0, seal(other, 0, "01" * 16, b""))  # wrong campaign
    transport.post(0, seal(campaign, 1, "02" * 16, b""))  # addressed to server 1, found at server 0
    shares = split(campaign, np.zeros((1, 1, 2), dtype=np.int64))[0]
    transport.post(0, seal(campaign, 0, "03" * 16, pack(campaign, np.full((1, 1, 2), campaign.prime, object))[0]))
    transport.post(0, seal(campaign, 0, "04" * 16, pack(campaign, np.zeros((1, 3, 2), dtype=object))[0]))
    transport.post(0, seal(campaign, 0, "05" * 16, pack(campaign, shares)[0] + b"x"))
    shutil.copy(paths[replayed], inbox / "replayed.rec")
    transport.post(0, b"OWNR")
    intake = _open(folder, 0)
    assert intake.tokens == (good,)
    reasons = "\n".join(intake.rejected)
    for reason in ("undecryptable or tampered", f"wrong campaign {other.id}", "addressed to server 1",
                   "share not in [0, p)", "wrong number of rows or columns (3 rows declared",
                   "(1 bytes too many)", f"duplicate owner token {replayed}", "malformed (shorter than"):
        assert reason in reasons, reasons
    assert len(intake.rejected) == 9 and all("\n" not in line for line in intake.rejected)
    assert intake.rejected[0].startswith("server 0: record ")


@pytest.mark.multiparty
def test_servers_agree_and_open_the_owners_values(folder: Path) -> None:
    campaign = Campaign.load(folder / "campaign.json")
    transport = FolderTransport(str(folder / "inbox/server{pid}"))
    rows: list[list[dict[str, Any]]] = [[{"x": 1.5, "y": "c"}], [{"x": 9, "y": "a"}, {"x": 0, "y": "b"}],
                                        [{"x": 4, "y": "b"}]]
    tokens = [submit(campaign, owner, transport)[0] for owner in rows]

    class FirstTwo(FolderTransport):  # an owner whose record never reached server 2
        def post(self, server: int, record: bytes) -> None:
            if server < 2:
                super().post(server, record)

    lost, _ = submit(campaign, [{"x": 5, "y": "a"}], FirstTwo(transport.pattern))
    run = subprocess.run([sys.executable, str(ROOT / "tests/programs/owners_close.py"), "--dir", str(folder),
                          "-M3", "--no-log"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.splitlines()[-1])
    assert lost not in result["tokens"] and sorted(tokens) == result["tokens"]
    by_token = dict(zip(tokens, rows))
    expected = [[2 * row["x"], "abc".index(row["y"])] for token in result["tokens"] for row in by_token[token]]
    assert result["values"] == expected


@pytest.mark.parametrize("argv, message", [
    (["submit", "--campaign", "c.json", "--row", "x=1", "--inbx", "i"], "unknown option --inbx (did you mean --inbox?"),
    (["campaign", "--servers", "a", "--columns", "x", "--save", "c.json"], "column 'x' needs --domain x=LO:HI"),
    (["keygen", "--server", "-1", "--dir", "k"], "--server must be 0, 1, ..., got -1"),
    (["submit", "--campaign", "missing.json", "--row", "x=1", "--inbox", "i"], "missing.json: no such file"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_usage_errors_are_one_line_exit_2(argv: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios.owner import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], lines


def test_tool_writes_keys_campaign_and_uploads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.owner import main

    monkeypatch.chdir(tmp_path)
    assert all(main(["keygen", "--server", str(server), "--dir", "k"]) == 0 for server in range(3))
    assert (tmp_path / "k/server0.key").stat().st_mode & 0o777 == 0o600
    assert main(["keygen", "--server", "0", "--dir", "k"]) == 2  # a server keeps its key
    assert main(["campaign", "--servers", "k/server0.pub", "k/server1.pub", "k/server2.pub", "-T", "1", "--columns",
                 "x,y", "--domain", "x=0:10:1", "--categories", "y=a|b|c", "--save", "c.json"]) == 0
    assert main(["submit", "--campaign", "c.json", "--row", "x=3.5,y=b", "--inbox", "in/server{pid}"]) == 0
    assert main(["submit", "--campaign", "c.json", "--row", "x=3.5,y=d", "--inbox", "in/server{pid}"]) == 2
    assert "column 'y' has a value outside its declared categories" in capsys.readouterr().err
    assert [len(list((tmp_path / f"in/server{server}").iterdir())) for server in range(3)] == [1, 1, 1]


def test_dpf_keys_ride_along_for_servers_0_and_1(folder: Path) -> None:
    from secure.fss.dpf import MODULUS, full_domain_sum, gen

    plain = Campaign.load(folder / "campaign.json")
    campaign = Campaign.create(public_keys=plain.public_keys, threshold=1, deadline=plain.deadline,
                               columns=plain.columns, rows_per_owner=2, dpf=True)
    assert campaign.dpf_bits == 6  # 21 x 3 = 63 cells
    columns = {"x": np.array([[0.5, 10], [0.5, 3]]), "y": np.array([["a", "c"], ["a", "b"]])}
    transport = FolderTransport(str(folder / "inbox/server{pid}"))
    simulate_owners(campaign, columns, transport)
    transport.post(0, seal(campaign, 0, "06" * 16, pack(campaign, split(campaign, np.zeros((1, 1, 2), np.int64))[0],
                                                        [b"DPFK" + bytes(40)])[0]))
    leaf = gen([0], bits=6)[0].to_bytes()[:-1] + b"\xff"  # framed right, a leaf word >= q: refused alone in the batch
    transport.post(0, seal(campaign, 0, "07" * 16, pack(campaign, split(campaign, np.zeros((1, 1, 2), np.int64))[0],
                                                        [leaf])[0]))
    zero, one, two = (open_inbox(campaign, server, load_private_key(folder / f"keys/server{server}.key"),
                                 folder / "inbox/server{pid}") for server in range(3))
    assert zero.dpf is not None and one.dpf is not None and two.dpf is None
    assert len(zero.dpf) == len(one.dpf) == 4 and len(zero.tokens) == 2
    assert len(zero.rejected) == 2 and all(line.endswith("refused: DPF key malformed") for line in zero.rejected)
    swapped = zero.keep(zero.tokens[::-1]).dpf  # keep picks each owner's keys, in the owners' new order
    expected = zero.dpf[2:].to_bytes() + zero.dpf[:2].to_bytes()[16:]
    assert swapped is not None and swapped.to_bytes()[16:] == expected[16:]
    histogram = (full_domain_sum(zero.dpf).astype(object) + full_domain_sum(one.dpf).astype(object)) % MODULUS
    cells = campaign.cells(campaign.grid_values({name: value.reshape(-1) for name, value in columns.items()}))
    assert histogram.tolist() == np.bincount(cells, minlength=64).tolist()


def test_a_party_with_its_own_rows_does_not_load_the_owners_cryptography() -> None:
    """The release path knows the owners' intake but loads ``cryptography`` (OpenSSL: about 7 MB of every
    party's resident memory, issue 25) only where a record is sealed or opened."""
    script = ("import sys\nimport dp.umpc, dp.umpc.complete, dp.rank_auc, scenarios.ustat\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
