"""AUC with scores and labels secret (secure sorting): exact, equal to the simulated path, calibrated."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpyc.runtime import mpc
from sklearn.metrics import roc_auc_score

from conftest import ROOT, free_base_port, run_command, small_table
from dp.rank_auc import Query, RankAucRelease, exact, exact_sums, plans_for_rows, release, simulate
from secure.intake import ColumnSpec

QUERY = Query(score=ColumnSpec("score", 0, 1, 8), epsilon=1.0)


def _rows() -> np.ndarray:
    header, values = small_table()
    return values[:, [header.index("score"), header.index("TenYearCHD")]]


def test_exact_sums_give_sklearn_auc_with_ties() -> None:
    rows = _rows()
    twice_u, positives = exact_sums(QUERY.encode(rows))
    assert positives == int(rows[:, 1].sum())
    auc = twice_u / 2 / (positives * (len(rows) - positives))
    assert auc == pytest.approx(roc_auc_score(rows[:, 1].astype(int), rows[:, 0]), abs=1e-12)


@pytest.mark.parametrize("path", ["sort", "histogram"])
def test_secure_sums_in_process_equal_sklearn_without_noise(path: Any) -> None:
    """Both ways of dp.umpc.complete (the one implementation of the secure AUC sums) give sklearn's AUC."""
    rows = _rows()
    query = Query(score=QUERY.score, epsilon=1.0, path=path)
    result = mpc.run(release(query, rows, noise_source=lambda plan, index: 0))
    assert result is not None and result.path == path
    assert result.estimate == pytest.approx(roc_auc_score(rows[:, 1].astype(int), rows[:, 0]), abs=1e-12)
    assert exact(query, [rows]) == result.estimate


def test_sensitivities_are_two_n_minus_one_and_one() -> None:
    plans = plans_for_rows(QUERY, 40, 3, 1)
    assert [plan.sensitivity for plan in plans] == [2 * 39, 1]
    assert [plan.epsilon for plan in plans] == [0.5, 0.5]
    assert plans[0].shape == 0.5


@pytest.mark.multiparty
@pytest.mark.parametrize("path", ["sort", "histogram"])
def test_three_party_release_equals_simulated_with_the_same_noise(small_csv: Path, path: str) -> None:
    program = ROOT / "tests" / "programs" / "fixed_noise_rank_auc.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(small_csv), path])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    rows = _rows()
    noise = np.array([[2 * i - 1 + 3 * j for i in range(3)] for j in range(2)])
    simulated = simulate(QUERY, [rows[i::3] for i in range(3)], seed=0, threshold=1, noise=noise)
    assert record["sums"] == [simulated.twice_u, simulated.positives] and record["n"] == 40 and record["path"] == path
    assert record["estimate"] == pytest.approx(simulated.estimate, abs=1e-15)


def _strict_json(path: Path) -> object:
    """Parse JSON refusing NaN/Infinity (what a strict reader such as jq or JavaScript accepts)."""
    def refuse(constant: str) -> None:
        raise ValueError(f"bare {constant} in {path}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_no_estimate_when_the_noisy_number_of_pairs_is_not_positive() -> None:
    """P (n - P) <= 0 with the noisy P: no AUC, said in terms of the released sums only; None, never NaN."""
    for positives, n in ((0, 40), (3, 3), (-1, 3), (5, 3)):
        result = RankAucRelease(estimate=float("nan"), twice_u=4, positives=positives, n=n, epsilon=1.0, parties=1,
                                threshold=0, query=QUERY, noise_std=float("nan"))
        assert result.no_estimate is not None and result.record()["estimate"] is None
        assert result.no_estimate.startswith("no AUC at this epsilon: the noisy number of pairs P (n - P) is not "
                                              "positive") and "class" not in result.no_estimate
        keys = result.record()
        assert keys["noise_std"] is None and keys["error_bound"] is None
        json.dumps(keys, allow_nan=False)
    fine = RankAucRelease(estimate=0.75, twice_u=600, positives=20, n=40, epsilon=1.0, parties=1, threshold=0,
                          query=QUERY, noise_std=0.1)
    assert fine.no_estimate is None and fine.record()["estimate"] == 0.75 and fine.record()["noise_std"] == 0.1


def test_rank_auc_job_with_one_label_says_no_auc_and_writes_null(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """All labels 0, epsilon 1e9 (P's discrete Laplace noise has scale 2e-9: non-zero with probability below
    e^(-5e8)): the noisy
    P is 0, so there is no AUC; exit 0, the reason printed, "estimate": null in a strict JSON record."""
    from conftest import write_csv
    from scenarios.rank_auc import main

    rows = _rows()
    rows[:, 1] = 0.0
    csv = write_csv(tmp_path / "one_class.csv", ["score", "label"], rows)
    out = tmp_path / "auc.json"
    assert main(["--data", str(csv), "--columns", "score,label", "--epsilon", "1e9", "--noise", "parties",
                 "--json", str(out), "--no-log"]) == 0
    stdout = capsys.readouterr().out
    assert "no AUC at this epsilon: the noisy number of pairs P (n - P) is not positive (noisy P = 0 of n = 40" in stdout
    assert "nan" not in stdout.lower().split()
    record = _strict_json(out)
    assert isinstance(record, list) and record[0]["estimate"] is None and record[0]["noise_std"] is None


@pytest.mark.parametrize("rows, data", [("41", True), ("10,41", True), ("100000", False)])
def test_rows_beyond_the_table_are_refused(rows: str, data: bool, small_csv: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """--rows N above the table's number of rows stops the run (it silently used the whole table)."""
    from scenarios.rank_auc import main

    source = ["--data", str(small_csv), "--columns", "score,TenYearCHD"] if data else []
    assert main([*source, "--rows", rows, "--no-log"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"--rows {rows.split(',')[-1]} asks for more rows than" in err[0], err
    assert str(small_csv) not in err[0] and "small.csv" not in err[0]  # no path leaves a party
