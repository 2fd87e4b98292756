"""Servers release U-statistics from owners' uploads through the same ``dp.umpc.release`` (issue 24, part 2):
exact at epsilon 1e9 on every path (histogram from DPF keys, value shares), malicious uploads rejected and counted,
the job's record equal to the API's, and a DP run.  Three -M3 runs: the API program, the job twice."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dp.umpc
from dp.umpc.scripting import Statistic
from secure import categorical, numeric
from secure.fss.dpf import gen
from secure.owners import Campaign, FolderTransport, generate_server_key, simulate_owners
from tests.conftest import ROOT, read_record, run_parties, unmeasured
from tests.test_owner_intake import _post

OWNERS = 200


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Two campaigns of 200 simulated owners: ``xy`` (x, y on 0..15 with DPF keys) with two malicious uploads (a
    DPF key of value 2 with honest shares; a share off the grid with an honest key), ``auc`` (score, label)."""
    folder = tmp_path_factory.mktemp("owners")
    public = [generate_server_key(server, folder / "keys")[1].read_text().strip() for server in range(3)]
    generator = np.random.default_rng(24)
    x = generator.integers(0, 16, OWNERS)
    rows = {"xy": {"x": x, "y": np.clip(x + generator.integers(-3, 4, OWNERS), 0, 15)},
            "auc": {"label": generator.integers(0, 2, OWNERS)}}
    rows["auc"]["score"] = np.clip(rows["auc"]["label"] * 5 + generator.integers(0, 27, OWNERS), 0, 31)
    declared = {"xy": [numeric("x", lower=0, upper=15, step=1), numeric("y", lower=0, upper=15, step=1)],
                "auc": [numeric("score", lower=0, upper=31, step=1), categorical("label", categories=[0, 1])]}
    for name, columns in declared.items():
        campaign = Campaign.create(public_keys=public, threshold=1, columns=columns, dpf=name == "xy",
                                   deadline="2100-01-01T00:00:00Z", bits=40, security=60)  # room for -K 57
        campaign.save(folder / f"{name}.json")
        transport = FolderTransport(str(folder / name / "server{pid}"))
        simulate_owners(campaign, rows[name], transport)
    xy = Campaign.load(folder / "xy.json")
    assert xy.dpf_bits is not None
    transport = FolderTransport(str(folder / "xy" / "server{pid}"))
    _post(xy, transport, [[3, 4]], keys=gen(np.array([3 * 16 + 4]), bits=xy.dpf_bits, betas=[2]))  # value 2
    _post(xy, transport, [[16, 9]], cells=[15 * 16 + 9])  # x = 16 off the grid; its key honest at (15, 9)
    (folder / "xy/server2/junk.rec").write_bytes(b"junk")  # refused at server 2 only (no owner token in it)
    return {"folder": folder, "rows": rows, "campaigns": {name: Campaign.load(folder / f"{name}.json")
                                                          for name in declared}}


def _exact(uploads: dict, statistic: Statistic, name: str, columns: tuple[str, ...], extra: list[list[int]]) -> float:
    specs = {spec.name: spec for spec in uploads["campaigns"][name].columns}
    query = dp.umpc.Query(statistic=statistic, columns=[specs[c] for c in columns], epsilon=1.0, tuples="all")
    rows = np.column_stack([uploads["rows"][name][c] for c in columns]).astype(float)
    return dp.umpc.exact(query, [np.vstack([rows, np.array(extra, dtype=float).reshape(-1, len(columns))])])


@pytest.fixture(scope="module")
def api_records(uploads: dict) -> dict:
    run = subprocess.run([sys.executable, str(ROOT / "tests/programs/owner_release.py"), "--dir",
                          str(uploads["folder"]), "-M3", "--no-log"], capture_output=True, text=True, timeout=300,
                         cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def _job(uploads: dict, *words: str) -> list:
    folder = uploads["folder"]
    common = ["--server-key", f"{folder}/keys/server{{pid}}.key", "--ledger", str(folder / "job_ledger"),
              "--budget", "1e12:1e-3"]
    return run_parties([[*words, *common]] * 3, timeout=120)


@pytest.mark.multiparty
def test_every_path_exact_and_malicious_uploads_rejected(uploads: dict, api_records: dict) -> None:
    kendall, duplicate, auc = (api_records[s] for s in ("kendall", "duplicate", "auc"))
    # the histogram path from DPF keys: the value-2 key rejected, the off-grid owner counted at its key's cell
    assert kendall["path"] == "histogram" and kendall["owners"]["rejected"] == 1
    assert kendall["n"] == OWNERS + 1 == kendall["owners"]["rows"]
    assert kendall["estimate"] == pytest.approx(_exact(uploads, "kendall", "xy", ("x", "y"), [[15, 9]]), abs=1e-12)
    # the shares: the off-grid one rejected, the value-2 key's owner (honest shares) kept
    assert duplicate["path"] == "tuples" and duplicate["owners"]["rejected"] == 1 and duplicate["n"] == OWNERS + 1
    assert duplicate["estimate"] == pytest.approx(_exact(uploads, "duplicate", "xy", ("x",), [[3]]), abs=1e-12)
    assert auc["owners"] == {"campaign": uploads["campaigns"]["auc"].id, "owners": OWNERS, "rows": OWNERS,
                             "rows_per_owner": 1, "rejected": 0}
    assert auc["path"] in ("sort", "tuples") and auc["n"] == OWNERS
    assert auc["estimate"] == pytest.approx(_exact(uploads, "auc", "auc", ("score", "label"), []), abs=1e-12)


@pytest.mark.multiparty
def test_job_record_is_the_api_release_record(uploads: dict, api_records: dict) -> None:
    folder = uploads["folder"]
    runs = _job(uploads, "--owners", f"{folder}/xy/server{{pid}}", "--campaign", str(folder / "xy.json"),
                "--stat", "kendall", "--columns", "x,y", "--epsilon", "1e9", "--pairs", "all",
                "--json", str(folder / "kendall.json"))
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    assert "1 owner(s) rejected (public by declaration)" in runs[0].stdout and "missing values" not in runs[0].stdout
    for server, run in enumerate(runs):  # the verdict known to all servers; the junk record's reason local to 2
        assert re.search(rf"^server {server}: owner [0-9a-f]{{32}} rejected by the one-hot check$", run.stdout, re.M)
        assert (f"note (at this server, not shared): server 2: record junk.rec refused: " in run.stdout) == (server == 2)
    assert not re.search("junk|refused|one-hot check", (folder / "kendall.json").read_text())  # no reason leaves
    phases = read_record(folder / "kendall.json")["phases"]  # end to end: the intake (close, DPF + check) counted
    assert list(phases)[:2] == ["close", "intake"] and "histogram" in phases and "phases: close " in runs[0].stdout
    budget = [key for key in api_records["kendall"] if key.startswith(("budget", "ledger", "spend", "run"))]
    assert unmeasured(read_record(folder / "kendall.json"), *budget) == unmeasured(api_records["kendall"], *budget)


@pytest.mark.multiparty
def test_job_dp_release_prints_its_noise(uploads: dict) -> None:
    folder = uploads["folder"]
    runs = _job(uploads, "--owners", f"{folder}/auc/server{{pid}}", "--campaign", str(folder / "auc.json"),
                "--stat", "auc", "--columns", "score,label", "--epsilon", "1", "--pairs", "all")
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    found = re.search(r"private estimate\s+(\S+)\s+\(noise std (\S+);", runs[0].stdout)
    assert found is not None, runs[0].stdout
    estimate, std = float(found[1]), float(found[2])
    # the AUC's noise std at epsilon 1 for n = 200 is about 1e-2; 8 std: P(|X| > 8 sd) < e^(-8 sqrt 2) ~ 1e-5
    assert 1e-4 < std < 0.1 and abs(estimate - _exact(uploads, "auc", "auc", ("score", "label"), [])) < 8 * std


def test_one_owner_of_k_rows_is_the_unit_of_privacy() -> None:
    """Replacing one owner changes up to ``rows_per_owner`` rows: every noise plan's sensitivity scales with it."""
    from dataclasses import replace

    from dp.umpc.complete import complete_plans
    from dp.umpc.protocol import plans_for, sample_for

    columns = [numeric("x", lower=0, upper=15, step=1), numeric("y", lower=0, upper=15, step=1)]
    query = dp.umpc.Query(statistic="kendall", columns=columns, epsilon=1.0, noise="parties").at(60)
    sampled = replace(query, tuples=120)
    tuples = sample_for(sampled, 60, 3)
    for owner_rows in (1, 3):
        complete = complete_plans(replace(query, unit_rows=owner_rows), 60, 3, 1)[0]
        assert complete.sensitivity == owner_rows * complete_plans(query, 60, 3, 1)[0].sensitivity
        tuple_plan = plans_for(replace(sampled, unit_rows=owner_rows), tuples, 60, 3, 1)[0]
        assert tuple_plan.sensitivity == owner_rows * plans_for(sampled, tuples, 60, 3, 1)[0].sensitivity


def test_owner_options_go_together_and_name_campaign_columns(uploads: dict) -> None:
    from scenarios import ustat
    from scenarios.kit.cli import UsageError

    folder = uploads["folder"]
    owners = ["--owners", f"{folder}/xy/server{{pid}}", "--campaign", str(folder / "xy.json")]
    with pytest.raises(UsageError, match="go together, without --data"):
        ustat.parse_options([*owners, "--columns", "x,y"])
    with pytest.raises(UsageError, match="go together, without --data"):
        ustat.parse_options([*owners, "--server-key", "k{pid}", "--data", "a.csv", "--columns", "x,y"])
    with pytest.raises(UsageError, match="--columns z: not in the campaign"):
        ustat.parse_options([*owners, "--server-key", "k{pid}", "--columns", "x,z"])
    options = ustat.parse_options([*owners, "--server-key", "k{pid}", "--columns", "x,y"])
    assert list(options.face.columns) == list(uploads["campaigns"]["xy"].columns) and options.dataset is None


def test_value_paths_run_in_the_campaign_field_or_refuse(uploads: dict) -> None:
    from mpyc.runtime import mpc

    from secure.errors import InputError

    folder = uploads["folder"]
    owners = dp.umpc.Owners(campaign=folder / "xy.json", inbox=f"{folder}/xy/server{{pid}}", key="unused")
    holds = owners.plan.prime.bit_length() - int(mpc.options.sec_param) - 2  # 40 + 60 + 2 bits, less K + 2
    assert owners.secure_type(holds, "kendall").field.modulus == owners.plan.prime
    with pytest.raises(InputError, match=f"needs {holds + 1}-bit secure integers at -K .* holds {holds}"):
        owners.secure_type(holds + 1, "kendall")
