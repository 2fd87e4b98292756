"""Servers release the ECDF family and the rank AUC from owners' uploads through the same ``dp.ecdf.release`` and
``dp.rank_auc.release`` (issue 24, part 2): the tree ECDF, the ROC curve, Hosmer-Lemeshow and the rank AUC (sort path)
exact at epsilon 1e9 over all owners' rows, a malicious upload rejected and counted, one owner of two rows the unit of privacy, the job's record equal to the API's, a campaign without DPF
keys refused in one line.  Three -M3 runs: the API program, the job twice."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import dp.rank_auc
from dp.ecdf import EcdfQuery, HosmerLemeshowQuery, RocQuery, exact
from secure import categorical, numeric
from secure.fss.dpf import gen
from secure.owners import Campaign, FolderTransport, generate_server_key, simulate_owners
from tests.conftest import ROOT, read_record, run_parties, unmeasured
from tests.test_hosmer_lemeshow_job import grid_scores
from tests.test_owner_intake import _post

OWNERS = 200


@pytest.fixture(scope="module")
def uploads(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Campaigns of simulated owners: ``xy`` (x, y on 0..15 with DPF keys; 200 owners, one row each, and an owner
    whose DPF key has value 2), ``scored`` (score on the 1/1024 grid, a 0/1 label, DPF keys; 100 owners of two
    rows each), ``plain`` (x without DPF keys)."""
    folder = tmp_path_factory.mktemp("owners")
    public = [generate_server_key(server, folder / "keys")[1].read_text().strip() for server in range(3)]
    x = np.random.default_rng(24).integers(0, 16, OWNERS)
    scores, labels = grid_scores(OWNERS, seed=11)
    rows = {"xy": {"x": x, "y": np.clip(15 - x, 0, 15)},
            "scored": {"score": scores.reshape(-1, 2), "label": labels.reshape(-1, 2)}, "plain": {"x": x}}
    xs = [numeric("x", lower=0, upper=15, step=1), numeric("y", lower=0, upper=15, step=1)]
    declared = {"xy": (xs, 1), "scored": ([numeric("score", lower=0, upper=1, bits=10),
                                           categorical("label", categories=[0, 1])], 2), "plain": (xs[:1], 1)}
    for name, (columns, per_owner) in declared.items():
        campaign = Campaign.create(public_keys=public, threshold=1, columns=columns, dpf=name != "plain",
                                   deadline="2100-01-01T00:00:00Z", rows_per_owner=per_owner, bits=40,
                                   security=60)  # room for the sort's -K 57
        campaign.save(folder / f"{name}.json")
        simulate_owners(campaign, rows[name], FolderTransport(str(folder / name / "server{pid}")))
    xy = Campaign.load(folder / "xy.json")
    assert xy.dpf_bits is not None
    _post(xy, FolderTransport(str(folder / "xy" / "server{pid}")), [[3, 12]],
          keys=gen(np.array([3 * 16 + 12]), bits=xy.dpf_bits, betas=[2]))  # a DPF key of value 2: rejected
    return {"folder": folder, "x": x, "scores": scores, "labels": labels,
            "ids": {name: Campaign.load(folder / f"{name}.json").id for name in declared}}


@pytest.fixture(scope="module")
def api_records(uploads: dict) -> dict:
    run = subprocess.run([sys.executable, str(ROOT / "tests/programs/owner_ecdf.py"), "--dir", str(uploads["folder"]),
                          "-M3", "--no-log"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def _job(uploads: dict, name: str, *words: str) -> list:
    folder = uploads["folder"]
    common = ["--owners", f"{folder}/{name}/server{{pid}}", "--campaign", str(folder / f"{name}.json"),
              "--server-key", f"{folder}/keys/server{{pid}}.key", "--ledger", str(folder / "job_ledger"),
              "--budget", "1e12", "--columns", "x", "--points", "16", "--epsilon", "1e9", *words]
    return run_parties([common] * 3, module="ecdf", timeout=120)


@pytest.mark.multiparty
def test_each_statistic_exact_over_all_owners_rows(uploads: dict, api_records: dict) -> None:
    ecdf, roc, hosmer = (api_records[name] for name in ("ecdf", "roc", "hosmer_lemeshow"))
    # the value-2 key's owner rejected (public) and left out: the counts are the 200 honest owners' exactly
    assert ecdf["owners"] == {"campaign": uploads["ids"]["xy"], "owners": OWNERS, "rows": OWNERS,
                              "rows_per_owner": 1, "rejected": 1}
    query = EcdfQuery(column="x", lower=0.0, upper=15.0, points=16, epsilon=1.0)
    assert ecdf["n"] == OWNERS and ecdf["counts"] == (exact(query, [uploads["x"]]) * OWNERS).round().tolist()
    scored = [np.column_stack([uploads["scores"], uploads["labels"]])]
    assert roc["owners"]["rows_per_owner"] == 2 and roc["owners"]["rows"] == OWNERS and roc["n"] == OWNERS
    assert roc["auc_raw"] == pytest.approx(exact(RocQuery(points=1025), scored), abs=1e-12)
    truth = exact(HosmerLemeshowQuery(epsilon=1.0, precision=10), scored)
    assert truth.expected.min() >= 1.0  # no floor applies: the private H can equal the exact one
    assert hosmer["estimate"] == pytest.approx(truth.statistic, rel=1e-12)
    assert hosmer["observed"] == truth.observed.tolist() and hosmer["owners"]["rejected"] == 0
    rank = api_records["rank_auc"]  # the sort path on the owners' value shares in the campaign's field
    assert rank["path"] == "sort" and rank["owners"]["rows_per_owner"] == 2 and rank["n"] == OWNERS
    score = numeric("score", lower=0, upper=1, bits=10)
    assert rank["estimate"] == pytest.approx(dp.rank_auc.exact(dp.rank_auc.Query(score=score, epsilon=1.0), scored),
                                             abs=1e-12)


def test_one_owner_of_two_rows_doubles_every_noise() -> None:
    """Replacing one owner of ``k`` rows moves ``k`` rows' counts: every noise scale of the family grows k-fold."""
    from dp.ecdf.roc import plan_roc_noise
    from dp.ecdf.tree import plan_tree_noise

    one, two = (plan_tree_noise(epsilon=1.0, points=1024, parties=3, threshold=1, unit_rows=k) for k in (1, 2))
    assert two.node_scale == 2 * one.node_scale
    assert plan_roc_noise(epsilon=1.0, points=64, unit_rows=2).node_scale == 2 * plan_roc_noise(
        epsilon=1.0, points=64).node_scale
    single, double = (HosmerLemeshowQuery(epsilon=1.0, unit_rows=k) for k in (1, 2))
    assert double.observed_log_alpha == pytest.approx(single.observed_log_alpha / 2)
    assert double.tree_plan().node_scale == 2 * single.tree_plan().node_scale
    assert double.statistics_loss_bound == pytest.approx(single.statistics_loss_bound)  # the same epsilon spent


@pytest.mark.multiparty
def test_job_record_is_the_api_release_record(uploads: dict, api_records: dict) -> None:
    out = uploads["folder"] / "ecdf.json"
    runs = _job(uploads, "xy", "--json", str(out))
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    assert "1 owner(s) rejected (public by declaration)" in runs[0].stdout and "missing values" not in runs[0].stdout
    assert "one owner (up to 1 rows): sensitivity x 1" in runs[0].stdout
    assert unmeasured(read_record(out)) == unmeasured(api_records["ecdf"])
    phases = read_record(out)["phases"]  # end to end: the intake first (close, then DPF evaluation with its check)
    assert list(phases)[:3] == ["close", "histogram", "intake"]  # (the ECDF table prints the seconds only)
    assert read_record(out)["seconds"] == pytest.approx(sum(phase["seconds"] for phase in phases.values()))
    assert {"close", "intake", "sort"} <= set(api_records["rank_auc"]["phases"])
    assert list(api_records["roc"]["phases"])[:2] == list(api_records["hosmer_lemeshow"]["phases"])[:2] == [
        "close", "histogram"]


@pytest.mark.multiparty
def test_campaign_without_dpf_keys_is_refused_in_one_line(uploads: dict) -> None:
    runs = _job(uploads, "plain")
    assert [run.code for run in runs] == [2, 2, 2]
    lines = runs[0].stderr.strip().splitlines()
    assert lines == ["error: all servers: the ECDF counts the owners' DPF keys, but the campaign has none "
                     "(campaign --dpf)"], runs[0].stderr
