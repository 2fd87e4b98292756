"""ROC and Hosmer-Lemeshow on the dp.ecdf face: each job's --json record is release.record() of the API run with
the same noise draws, and simulate equals exact where the noise vanishes."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dp.ecdf.hosmer_lemeshow
import dp.ecdf.tree
from conftest import read_record, small_table, write_csv
from dp.ecdf import HosmerLemeshowQuery, RocQuery, exact, release, simulate
from secure.intake import MissingPolicy
from tests.conftest import release_at_one_party, unmeasured

#: keys measured by the run (wall clock, bytes on the wire), not released values


def _fixed_os_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS-randomness draws of a release, replaced in both runs by known ones: node p gets (p % 5) - 2, the
    i-th group statistic (i % 7) - 3.  Draws from a seeded generator (the public-seed bands) are left alone."""
    node_draw, polya = dp.ecdf.tree.TreeNoisePlan.draw_party, dp.ecdf.hosmer_lemeshow.polya_difference

    def nodes(self: Any, rng: Any = None, runs: Any = None) -> Any:
        return (np.arange(self.node_count) % 5) - 2 if rng is None else node_draw(self, rng, runs)

    def statistics(shape: float, size: int, rng: Any = None, **kw: Any) -> Any:
        return (np.arange(size) % 7) - 3 if rng is None else polya(shape, size=size, rng=rng, **kw)

    monkeypatch.setattr(dp.ecdf.tree.TreeNoisePlan, "draw_party", nodes)
    monkeypatch.setattr(dp.ecdf.hosmer_lemeshow, "polya_difference", statistics)


def _api_record(query: Any, rows: np.ndarray, **kw: Any) -> dict[str, Any]:
    return release_at_one_party(lambda: release(query, rows, **kw)).record()


def _without(record: dict[str, Any]) -> dict[str, Any]:
    return unmeasured(record)


def _scored(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """The small table's scores (multiples of 1/16, in [0, 1]) and its TenYearCHD labels, as score,label."""
    header, table = small_table()
    rows = table[:, [header.index("score"), header.index("TenYearCHD")]]
    return write_csv(tmp_path / "scored.csv", ["score", "label"], rows), rows


def test_the_roc_job_record_is_the_record_of_the_api_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios.roc_private import main

    path, rows = _scored(tmp_path)
    out = tmp_path / "roc.json"
    _fixed_os_draws(monkeypatch)
    assert main(["--data", str(path), "--columns", "score,label", "--points", "32", "--epsilon", "0.8",
                 "--split", "disjoint", "--smooth", "1", "--json", str(out), "--ledger", "off", "--no-log"]) == 0
    api = _api_record(RocQuery(epsilon=0.8, points=32, split="disjoint", smooth=1, columns=("score", "label"),
                               missing=MissingPolicy("refuse")), rows, receivers=[0])
    job = read_record(out)
    assert set(job) == set(api) and _without(job) == _without(api)
    assert job["positive_counts"][-1] != int(rows[:, 1].sum())  # the fixed draws are there: not the class size


def test_the_hosmer_lemeshow_job_record_is_the_record_of_the_api_release(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios.hosmer_lemeshow import main

    path, rows = _scored(tmp_path)
    out = tmp_path / "hl.json"
    _fixed_os_draws(monkeypatch)
    assert main(["--data", str(path), "--columns", "score,label", "--groups", "4", "--points", "16", "--epsilon", "3",
                 "--accounting", "joint", "--json", str(out), "--ledger", "off", "--no-log"]) == 0
    api = _api_record(HosmerLemeshowQuery(epsilon=3.0, groups=4, grid_points=16, accounting="joint",
                                          columns=("score", "label"), missing=MissingPolicy("refuse")), rows)
    job = read_record(out)
    assert set(job) == set(api) and _without(job) == _without(api)
    assert job["observed"][0][0] % 1 == 0 and job["seed"] is None  # --data: no seed made the rows


def _parts(seed: int = 5) -> list[np.ndarray]:
    """Three parties' (score, label) rows, scores on the grid i/64 (so the exact quantiles are grid points)."""
    generator = np.random.default_rng(seed)
    parts = []
    for size in (60, 71, 59):
        scores = generator.integers(4, 61, size) / 64
        parts.append(np.column_stack([scores, generator.random(size) < scores]).astype(float))
    return parts


def test_roc_simulate_equals_exact_at_huge_epsilon() -> None:
    """At epsilon 1e9 a node's DLap(alpha) has alpha = exp(-5e8 / 7) per class: it is 0 except with odds below
    1e-30000, so the simulated curve is the exact one on the grid; at epsilon 0.5 the noise shows."""
    query = RocQuery(epsilon=1e9, points=64, smooth=None)
    simulated = simulate(query, _parts(), seed=1)
    assert simulated.curve(None).auc == exact(query, _parts())
    assert simulated.parties == 3 and simulated.threshold == 1 and simulated.record()["n"] == 190
    noisy = simulate(RocQuery(epsilon=0.5, points=64, smooth=None), _parts(), seed=1)
    assert noisy.positive_counts.tolist() != simulated.positive_counts.tolist()


def test_hosmer_lemeshow_simulate_equals_exact_at_huge_epsilon() -> None:
    """At epsilon 1e9 every noise is 0 except with odds below 1e-300 (E noise alpha = exp(-1e9/15 / 2^16)), and
    with scores on the grid the private boundaries are the exact quantiles: H and p are the exact ones."""
    query = HosmerLemeshowQuery(epsilon=1e9, groups=5, grid_points=64)
    simulated, reference = simulate(query, _parts(), seed=1), exact(query, _parts())
    assert simulated.boundaries.tolist() == reference.boundaries.tolist()
    assert simulated.statistic == pytest.approx(reference.statistic, rel=1e-12)
    assert simulated.p_value == pytest.approx(reference.p_value, rel=1e-9)
    assert "Hosmer-Lemeshow H" in simulated.table() and simulated.record()["parties"] == 3
