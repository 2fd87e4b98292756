"""The FSS ECDF (Barczewski et al. §4.2): two servers answer from DCF keys, equal to the §4.1 release."""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import (ROOT, PartyRun, free_base_port, read_record, run_command, run_parties, scenario_command,
                      small_table, write_csv)
from dp.ecdf import fss_release as fss
from dp.ecdf.grid import true_counts, uniform_grid
from dp.ecdf.tree import noisy_counts, plan_tree_noise
from secure.fss import dcf


PROGRAMS = ROOT / "tests" / "programs"


def _fixed(plan: object, pid: int) -> np.ndarray:
    """Party ``pid``'s node draw at position ``p``: ``(p % 7) - 3 + pid`` (as tests/programs/fixed_noise_ecdf.py)."""
    return (np.arange(plan.node_count) % 7) - 3 + pid  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _store_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test's servers keep their store-tag keys in its own directory (the parties inherit it)."""
    monkeypatch.setenv(fss.KEY_DIR_VARIABLE, str(tmp_path / "server-keys"))


# ------------------------------------------------------------------------------------------- the logic

def test_grid_indices_count_like_the_ecdf_and_clip() -> None:
    grid = uniform_grid(0, 10, 1)
    values = np.array([-5.0, 0.0, 0.5, 3.0, 9.99, 10.0, 42.0])
    indices, outside = fss.grid_indices(values, grid)
    assert outside == 2
    counts = np.array([(indices <= j).sum() for j in range(len(grid))])
    assert counts.tolist() == true_counts(np.clip(values, 0, 10), grid).tolist()


def test_a_value_query_between_grid_points_is_answered_at_the_grid_point_below() -> None:
    """at:100 on [80, 220] with 1024 points: 100 is in the domain, not a grid point; the released step ECDF
    answers at the largest grid point <= 100 (99.98) and says so; values outside the domain are refused."""
    from dp.ecdf import EcdfQuery

    query = EcdfQuery(protocol="fss", lower=80.0, upper=220.0, at=(100.0, 0.0, 220.0))
    grid = query.grid_points()
    below = int(np.searchsorted(grid, 100.0, side="right")) - 1
    assert grid[below] <= 100.0 < grid[below + 1] and round(grid[below], 2) == 99.98
    query = EcdfQuery(protocol="fss", lower=80.0, upper=220.0, at=(100.0, float(grid[7]), 220.0))
    assert fss.resolve_queries(query, grid).tolist() == [7, below, 1023]
    notes = fss.query_notes(query, grid)
    assert notes == [f"at:100 answered at the grid point {grid[below]:.10g} (the ECDF is released on the grid: "
                     f"F(100) = F({grid[below]:.10g}), its step value there)"]
    for outside in (79.9, 220.5):
        with pytest.raises(ValueError, match=f"query at:{outside:g} is outside the grid's domain \\[80, 220\\]"):
            fss.resolve_queries(EcdfQuery(protocol="fss", lower=80.0, upper=220.0, at=(outside,)), grid)


def test_the_answers_to_queries_are_printed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.ecdf_fss import main
    from dp.ecdf.grid import grid_of_points

    csv = _data(tmp_path)
    assert main([*_common(csv), "--epsilon", "1e9", "--queries", "at:100,150"]) == 0
    stdout = capsys.readouterr().out
    header, values = small_table()
    grid = grid_of_points(80.0, 300.0, 256)
    exact = true_counts(values[:, header.index("sysBP")], grid) / len(values)
    lines = [f"    F({grid[j]:.10g}) = {exact[j]:.4f}" for j in np.searchsorted(grid, [100.0, 150.0], side="right") - 1]
    assert "  answers (private ECDF at the queried grid points):\n" + "\n".join(lines) + "\n" in stdout
    assert "at:100 answered at the grid point" in stdout and "at:150 answered at the grid point" in stdout


@pytest.mark.parametrize("unused", [["--epsilon", "3"], ["--points", "64"], ["--grid", "geometric"],
                                    ["--columns", "age"], ["--bits", "12"], ["--fill", "sysBP=120"]])
def test_answer_refuses_the_options_the_upload_fixed(tmp_path: Path, unused: list[str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.ecdf_fss import main

    assert main(["--answer", str(tmp_path), "--no-log", *unused]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(f"it takes no {unused[0]}"), err


def test_bits_must_hold_the_grid() -> None:
    assert fss.check_bits(1024) == 10
    assert fss.check_bits(1025) == 11
    assert fss.check_bits(1024, 12) == 12
    with pytest.raises(ValueError, match="does not fit the DCF's bit width 9"):
        fss.check_bits(1024, 9)


def test_noise_shares_add_up_and_mask_is_uniform_looking() -> None:
    draws = np.array([-3, 0, 5, -(2**40), 7], dtype=np.int64)
    first, second = fss.split_noise(draws)
    assert fss.decode(first, second).tolist() == draws.tolist()
    other, _ = fss.split_noise(draws)
    assert not np.array_equal(first, other)  # a fresh mask every time (probability 2^-320 of a false failure)


def test_server_shares_open_to_the_noisy_counts_of_the_tree() -> None:
    grid = uniform_grid(80, 300, 220 / 63)
    header, table = small_table()
    values = table[:, header.index("sysBP")]
    plan = fss.fss_noise_plan(epsilon=1.0, points=len(grid), owners=3, threshold=1)
    assert plan.draw == plan_tree_noise(epsilon=1.0, points=len(grid), parties=3, threshold=1)
    bits = fss.check_bits(len(grid))
    parts = [values[i::3] for i in range(3)]
    keys: list[list[bytes]] = [[], []]
    shares = [np.zeros(plan.draw.node_count, np.uint64), np.zeros(plan.draw.node_count, np.uint64)]
    for pid, part in enumerate(parts):
        k0, k1 = dcf.gen(fss.grid_indices(part, grid)[0], bits)
        keys[0].append(k0.to_bytes())
        keys[1].append(k1.to_bytes())
        for server, share in enumerate(fss.split_noise(_fixed(plan.draw, pid))):
            shares[server] += share
    public = {"points": len(grid), "bits": bits, "n": len(values), "grid": grid.tolist()}
    states = [fss.ServerState(server=b, public=public, keys=keys[b], node_shares=shares[b]) for b in (0, 1)]
    queries = np.array([0, 5, 31, 63])
    opened = fss.decode(fss.server_shares(states[0], queries), fss.server_shares(states[1], queries))
    total = sum(_fixed(plan.draw, pid) for pid in range(3))
    assert opened.tolist() == noisy_counts(true_counts(values, grid), total)[queries].tolist()


def test_two_owners_calibrate_for_the_server_itself() -> None:
    plan = fss.fss_noise_plan(epsilon=1.0, points=64, owners=2, threshold=0)
    assert plan.coalition == 1 and plan.draw.shape == 1.0 and plan.variance_factor == 2.0


def test_stored_state_round_trip_and_tamper_refusal(tmp_path: Path) -> None:
    k0, _ = dcf.gen(np.array([1, 5, 9]), 4)
    public = {"version": fss.STATE_VERSION, "points": 16, "bits": 4, "n": 3, "run_id": "abc", "grid": list(range(16))}
    state = fss.ServerState(server=0, public=public, keys=[k0.to_bytes()],
                            node_shares=np.arange(31, dtype=np.uint64))
    folder = fss.store_state(state, tmp_path)
    assert oct(folder.stat().st_mode & 0o777) == "0o700"
    assert all(oct(path.stat().st_mode & 0o777) == "0o600" for path in folder.iterdir())
    loaded = fss.load_state(tmp_path, 0)
    assert loaded.keys == state.keys and loaded.node_shares.tolist() == list(range(31)) and loaded.run_id == "abc"
    noise = folder / "noise.bin"
    blob = bytearray(noise.read_bytes())
    blob[3] ^= 1
    noise.write_bytes(bytes(blob))
    with pytest.raises(fss.InputError, match="failed authentication"):
        fss.load_state(tmp_path, 0)


# ----------------------------------------------------------------------------------- multi-party runs

def _data(tmp_path: Path) -> Path:
    header, values = small_table()
    return write_csv(tmp_path / "small.csv", header, values)


def _common(csv: Path, points: int = 256) -> list[str]:
    return ["--data", str(csv), "--columns", "sysBP", "--domain", "sysBP=80:300", "--points", str(points),
            "--smooth", "none", "--no-log"]


@pytest.mark.multiparty
def test_three_parties_release_exactly_the_ecdf_counts_at_huge_epsilon(tmp_path: Path) -> None:
    csv = _data(tmp_path)
    out, reference = tmp_path / "fss.json", tmp_path / "ecdf.json"
    run = run_command(scenario_command("ecdf_fss", "-M3", *_common(csv), "--epsilon", "1e9",
                                       "--json", str(out), "--curve", str(tmp_path / "fss.csv")))
    assert run.code == 0, run.stderr
    ecdf = run_command(scenario_command("ecdf", "-M3", *_common(csv), "--epsilon", "1e9", "--json", str(reference),
                                        "--curve", str(tmp_path / "ecdf.csv")))
    assert ecdf.code == 0, ecdf.stderr
    mine, theirs = read_record(out), read_record(reference)
    header, values = small_table()
    assert mine["counts"] == theirs["counts"] == true_counts(values[:, header.index("sysBP")],
                                                             uniform_grid(80, 300, 220 / 255)).tolist()
    assert mine["n"] == theirs["n"] and mine["statistic"] == theirs["statistic"] == "ecdf"
    assert (tmp_path / "fss.csv").read_text().splitlines()[0] == (tmp_path / "ecdf.csv").read_text().splitlines()[0]
    assert (tmp_path / "fss.csv").read_text() == (tmp_path / "ecdf.csv").read_text()


@pytest.mark.multiparty
def test_fss_and_secure_aggregation_give_the_same_noisy_counts_with_the_same_node_draws(tmp_path: Path) -> None:
    csv = _data(tmp_path)
    args = [str(csv), "sysBP", "80", "300", "128", "0"]
    fss_run = run_command([sys.executable, str(PROGRAMS / "fixed_noise_ecdf_fss.py"), "-M3", "-B", str(free_base_port()),
                           "--no-log", *args])
    assert fss_run.code == 0, fss_run.stderr
    agg_run = run_command([sys.executable, str(PROGRAMS / "fixed_noise_ecdf.py"), "-M3", "-B", str(free_base_port()),
                           "--no-log", *args])
    assert agg_run.code == 0, agg_run.stderr
    mine = json.loads(fss_run.stdout.strip().splitlines()[-1])
    theirs = json.loads(agg_run.stdout.strip().splitlines()[-1])
    assert mine["counts"] == theirs["counts"] and mine["n"] == theirs["n"]


@pytest.mark.multiparty
def test_two_step_mode_answers_two_rounds_from_stored_keys_with_the_servers_only(tmp_path: Path) -> None:
    csv = _data(tmp_path)
    store = tmp_path / "keys"
    first = tmp_path / "first.json"
    upload = run_command(scenario_command("ecdf_fss", "-M3", *_common(csv), "--store", str(store),
                                          "--queries", "3,40,200", "--json", str(first)))
    assert upload.code == 0, upload.stderr
    assert oct((store / "server1").stat().st_mode & 0o777) == "0o700"
    grid = uniform_grid(80, 300, 220 / 255)
    rounds: list[dict] = []
    for queries in ("0,40,100,255", f"at:80,{float(grid[40])!r},300"):
        out = tmp_path / f"round{len(rounds)}.json"
        run = run_command(scenario_command("ecdf_fss", "-M2", "--answer", str(store), "--queries", queries,
                                           "--smooth", "none", "--no-log", "--json", str(out)))
        assert run.code == 0, run.stderr
        assert "threshold t = 0 (no Shamir secret sharing runs here)" in run.stdout
        rounds.append(read_record(out))
    upload_record = read_record(first)
    assert upload_record["queries"] == [3, 40, 200] and rounds[0]["queries"] == [0, 40, 100, 255]
    assert rounds[1]["queries"] == [0, 40, 255]
    assert all(r["run_id"] == upload_record["run_id"] and r["mode"] == "answer" for r in rounds)
    answered = [dict(zip(r["queries"], r["counts"])) for r in (upload_record, *rounds)]
    # repeated points: the node noise was fixed at upload, so every round gives the same noisy count
    assert answered[1][40] == answered[0][40] == answered[2][40]
    assert answered[2][0] == answered[1][0] and answered[2][255] == answered[1][255]
    # and the counts are noisy counts of the data (the noise at epsilon = 1 is far below n = 40 rows' range)
    header, values = small_table()
    exact = true_counts(values[:, header.index("sysBP")], grid)
    slack = 12 * math.sqrt(plan_tree_noise(epsilon=1.0, points=256, parties=3, threshold=1).point_variance)
    assert all(abs(answered[1][j] - exact[j]) <= slack for j in (0, 40, 100, 255))


def _answer_parties(store: Path, *extra: str, timeout: float = 90.0) -> list[PartyRun]:
    """The two servers, each started here, answering from ``store``."""
    return run_parties([["--answer", str(store), "--smooth", "none", *extra]] * 2, module="ecdf_fss", timeout=timeout)


@pytest.mark.multiparty
def test_stored_keys_of_another_run_or_tampered_are_refused_with_one_line(tmp_path: Path) -> None:
    csv = _data(tmp_path)
    stores = [tmp_path / "a", tmp_path / "b"]
    for store in stores:
        run = run_command(scenario_command("ecdf_fss", "-M3", *_common(csv, 64), "--store", str(store),
                                           "--queries", "0"))
        assert run.code == 0, run.stderr
    mixed = tmp_path / "mixed"
    shutil.copytree(stores[0] / "server0", mixed / "server0")
    shutil.copytree(stores[1] / "server1", mixed / "server1")
    runs = _answer_parties(mixed, "--queries", "1")
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2], lines
    assert lines[0] == lines[1] and len(lines[0]) == 1 and "different runs" in lines[0][0], lines
    assert "Traceback" not in runs[0].stderr + runs[1].stderr
    keys = stores[0] / "server1" / "keys.bin"
    blob = bytearray(keys.read_bytes())
    blob[len(blob) // 2] ^= 0x40
    keys.write_bytes(bytes(blob))
    runs = _answer_parties(stores[0], "--queries", "1")
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2], lines
    assert lines[0] == lines[1] and len(lines[0]) == 1, lines
    assert "party 1: its stored FSS keys failed authentication" in lines[0][0] and str(tmp_path) not in lines[0][0]
    runs = _answer_parties(stores[1], "--queries", "64")
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2], lines
    assert lines[0] == lines[1] and "outside the grid" in lines[0][0], lines


@pytest.mark.multiparty
@pytest.mark.parametrize("extra, message", [
    (["--bits", "7"], "does not fit the DCF's bit width 7"),
    (["--queries", "256"], "outside the grid"),
    (["--queries", "at:79"], "query at:79 is outside the grid's domain [80, 300]"),
])
def test_bad_usage_stops_every_party_with_one_line(tmp_path: Path, extra: list[str], message: str) -> None:
    csv = _data(tmp_path)
    runs = run_parties([[*_common(csv)[:-1], *extra]] * 3, module="ecdf_fss")
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2, 2], lines
    assert all(len(line) == 1 and line == lines[0] for line in lines) and message in lines[0][0], lines


@pytest.mark.multiparty
def test_values_outside_the_domain_are_clipped_and_counted_locally(tmp_path: Path) -> None:
    header, values = small_table()
    values = values.copy()
    column = header.index("sysBP")
    values[:3, column] = [10.0, 400.0, 500.0]  # rows 0, 1, 2: one per party
    csv = write_csv(tmp_path / "outside.csv", header, values)
    out = tmp_path / "fss.json"
    run = run_command(scenario_command("ecdf_fss", "-M3", *_common(csv), "--epsilon", "1e9", "--json", str(out)))
    assert run.code == 0, run.stderr
    assert "at this party, not shared: 0 missing value(s) filled, 1 value(s) clipped to the domain" in run.stdout
    grid = uniform_grid(80, 300, 220 / 255)
    assert read_record(out)["counts"] == true_counts(np.clip(values[:, column], 80, 300), grid).tolist()


@pytest.mark.multiparty
def test_a_frozen_server_stops_the_other_within_the_silence_limit(tmp_path: Path) -> None:
    """Server 1 freezes (SIGSTOP) on entering the answer phase of a two-server run: server 0 exits 1 with
    one line naming server 1, no traceback, no record.  Bound: "does not hang" (3 s limit, wide margin)."""
    csv = _data(tmp_path)
    store = tmp_path / "keys"
    run = run_command(scenario_command("ecdf_fss", "-M3", *_common(csv, 64), "--store", str(store),
                                       "--queries", "0"))
    assert run.code == 0, run.stderr
    port = free_base_port()
    out_json = tmp_path / "answer.json"
    options = ["--answer", str(store), "--smooth", "none", "--no-log", "--json", str(out_json),
               "--silence-limit", "3", "-M", "2", "-B", str(port)]
    server0 = subprocess.Popen(scenario_command("ecdf_fss", *options, "-I", "0"), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=ROOT)
    server1 = subprocess.Popen([sys.executable, str(PROGRAMS / "frozen_fss_server.py"), *options, "-I", "1"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        out, err = server0.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        server0.kill()
        out, err = server0.communicate()
        err += "(hung: ended by the test)"
    finally:
        if server1.poll() is None:
            server1.kill()  # the process this test started
        server1.communicate()
    assert server0.returncode == 1, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "party 1 stopped answering during the answer phase" in lines[0], err
    assert not out_json.exists()
