"""AUC with scores and labels secret (secure sorting): exact, equal to the simulated path, calibrated."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc
from sklearn.metrics import roc_auc_score

from conftest import ROOT, free_base_port, run_command, small_table
from dp.rank_auc import RankAucQuery, exact_sums, plans_for_rows, run_secure_rank_auc, simulate_rank_auc
from secure.intake import ColumnSpec

QUERY = RankAucQuery(ColumnSpec("score", 0, 1, 8), 1.0)


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
def test_secure_sums_in_process_equal_sklearn_without_noise(path: str) -> None:
    """Both ways of dp.umpc.complete (the one implementation of the secure AUC sums) give sklearn's AUC."""
    rows = _rows()
    query = RankAucQuery(QUERY.score, 1.0, path=path)
    release = mpc.run(run_secure_rank_auc(query, query.encode(rows), noise_source=lambda plan, index: 0))
    assert release.path == path
    assert release.estimate == pytest.approx(roc_auc_score(rows[:, 1].astype(int), rows[:, 0]), abs=1e-12)


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
    estimate, sums = simulate_rank_auc(QUERY, [rows[i::3] for i in range(3)], threshold=1, noise=noise)
    assert record["sums"] == sums and record["n"] == 40 and record["path"] == path
    assert record["estimate"] == pytest.approx(estimate, abs=1e-15)
