"""Stored FSS keys are authenticated with a key that only their server holds (issue 21, item 9).

The attack of the adversarial catalogue: shift the stored node-noise shares (the released counts move
by the shift) and recompute the tag with what the store itself holds.  Version 1 kept its HMAC key in
the store (``mac.key``), so the forged store was accepted; the tag key now lives outside the store
(:func:`dp.ecdf.fss_release.store_key_path`) and the forged store is refused.
"""
from __future__ import annotations

import json
import secrets
from pathlib import Path

import numpy as np
import pytest

from conftest import read_record, run_command, run_parties, scenario_command, small_table, write_csv
from dp.ecdf import fss_release as fss
from secure.fss import dcf



@pytest.fixture(autouse=True)
def _store_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's servers keep their tag keys here (the parties started by the test inherit it)."""
    folder = tmp_path / "server-keys"
    monkeypatch.setenv(fss.KEY_DIR_VARIABLE, str(folder))
    return folder


def _state() -> fss.ServerState:
    k0, _ = dcf.gen(np.array([1, 5, 9]), 4)
    public = {"version": fss.STATE_VERSION, "points": 16, "bits": 4, "n": 3, "run_id": "abc", "grid": list(range(16))}
    return fss.ServerState(server=0, public=public, keys=[k0.to_bytes()], node_shares=np.arange(31, dtype=np.uint64))


def _forge(folder: Path, shift: int) -> None:
    """Shift every stored node share by ``shift`` and recompute the tag with a key put into the store
    (what an attacker who can write the store, but not read the server's key, can do)."""
    noise = folder / "noise.bin"
    shares = np.frombuffer(noise.read_bytes(), dtype=np.uint64) + np.uint64(shift)
    noise.write_bytes(shares.tobytes())
    record = json.loads((folder / "public.json").read_text(encoding="utf-8"))
    forged = secrets.token_bytes(32)
    (folder / "mac.key").write_bytes(forged)
    record["mac"] = fss._tag(forged, int(record["server"]), record["public"], (folder / "keys.bin").read_bytes(),
                             shares.tobytes())
    (folder / "public.json").write_text(json.dumps(record, sort_keys=True), encoding="utf-8")


def test_the_tag_key_is_created_once_outside_the_store_with_mode_0600(tmp_path: Path, _store_keys: Path) -> None:
    folder = fss.store_state(_state(), tmp_path / "store")
    key = fss.store_key_path(0)
    assert key.parent == _store_keys and key.read_bytes() and len(key.read_bytes()) == 32
    assert oct(key.stat().st_mode & 0o777) == "0o600" and oct(key.parent.stat().st_mode & 0o777) == "0o700"
    assert sorted(p.name for p in folder.iterdir()) == ["keys.bin", "noise.bin", "public.json"]
    first = key.read_bytes()
    fss.store_state(_state(), tmp_path / "again")  # created on first use only
    assert key.read_bytes() == first
    assert fss.load_state(tmp_path / "again", 0).node_shares.tolist() == list(range(31))


def test_shifted_shares_with_a_recomputed_tag_are_refused_without_a_path(tmp_path: Path) -> None:
    folder = fss.store_state(_state(), tmp_path / "store")
    _forge(folder, 5)
    with pytest.raises(fss.InputError) as caught:
        fss.load_state(tmp_path / "store", 0)
    assert str(caught.value) == fss.AUTHENTICATION_FAILED and str(tmp_path) not in str(caught.value)
    assert caught.value.detail is not None and str(folder) in caught.value.detail


def test_a_store_is_refused_by_a_server_without_its_key(tmp_path: Path, _store_keys: Path) -> None:
    fss.store_state(_state(), tmp_path / "store")
    fss.store_key_path(0).unlink()
    with pytest.raises(fss.InputError, match="failed authentication") as caught:
        fss.load_state(tmp_path / "store", 0)
    assert caught.value.detail is not None and "no tag key" in caught.value.detail


def test_a_key_file_open_to_others_is_refused(tmp_path: Path) -> None:
    fss.store_state(_state(), tmp_path / "store")
    fss.store_key_path(0).chmod(0o644)
    with pytest.raises(fss.InputError, match="failed authentication") as caught:
        fss.load_state(tmp_path / "store", 0)
    assert caught.value.detail is not None and "other users" in caught.value.detail


@pytest.mark.multiparty
def test_a_forged_store_is_refused_at_both_servers_and_the_shared_line_has_no_path(tmp_path: Path) -> None:
    header, values = small_table()
    csv = write_csv(tmp_path / "small.csv", header, values)
    store = tmp_path / "keys"
    upload = run_command(scenario_command("ecdf_fss", "-M3", "--data", str(csv), "--columns", "sysBP",
                                          "--domain", "sysBP=80:300", "--points", "64", "--smooth", "none",
                                          "--no-log", "--store", str(store), "--queries", "0",
                                          "--json", str(tmp_path / "up.json")))
    assert upload.code == 0, upload.stderr
    assert read_record(tmp_path / "up.json")["counts"]
    _forge(store / "server1", 3)
    runs = run_parties([["--answer", str(store), "--smooth", "none", "--queries", "1,2,3"]] * 2, module="ecdf_fss")
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2], lines
    assert lines[0] == lines[1] and len(lines[0]) == 1, lines
    assert lines[0][0] == f"error: party 1: {fss.AUTHENTICATION_FAILED}", lines
    assert str(tmp_path) not in runs[0].stdout + runs[0].stderr + runs[1].stderr  # nothing of the path leaves party 1
    assert str(store / "server1") in runs[1].stdout  # the local note at the refusing server
    assert "Traceback" not in runs[0].stderr + runs[1].stderr
