"""U-MPC experiments (Sinh & Ramon Table 2, Fig. 1): quick runs in process, CSV, PNG, one numeric check each."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from scenarios import umpc_samplers, umpc_vs_baselines


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _is_png(path: Path) -> bool:
    return path.stat().st_size > 0 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def samplers_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("umpc_samplers")
    assert umpc_samplers.main(["--quick", "--seed", "5", "--results-dir", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module")
def baselines_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("umpc_vs_baselines")
    assert umpc_vs_baselines.main(["--quick", "--seed", "5", "--results-dir", str(directory)]) == 0
    return directory


def test_samplers_quick_writes_csv_and_png(samplers_run: Path) -> None:
    header, rows = _read(samplers_run / "umpc_samplers.csv")
    assert tuple(header) == umpc_samplers.CSV_COLUMNS
    assert [row["sampler"] for row in rows] == list(umpc_samplers.SAMPLERS)
    for row in rows:
        assert int(row["runs"]) == 40 and int(row["n"]) == 800 and int(row["edges"]) == 1600
        assert math.isfinite(float(row["mse_mean"])) and float(row["mse_se"]) > 0
    assert _is_png(samplers_run / "umpc_samplers.png")


def test_balanced_below_lemma_d3_bound(samplers_run: Path) -> None:
    """BalancedSamp's MSE stays below Lemma D.3's bound (DP term x m/(m-t)) + 3 s.e."""
    _, rows = _read(samplers_run / "umpc_samplers.csv")
    balanced = next(row for row in rows if row["sampler"] == "balanced")
    assert float(balanced["mse_mean"]) < float(balanced["lemma_d3_bound_coalition"]) + 3 * float(balanced["mse_se"])
    # BalancedSamp's largest degree is certain: ceil(2|E|/n) = 4
    assert float(balanced["mean_max_degree"]) == 4.0


def test_baselines_quick_writes_csv_and_png(baselines_run: Path) -> None:
    header, rows = _read(baselines_run / "umpc_vs_baselines.csv")
    assert tuple(header) == umpc_vs_baselines.CSV_COLUMNS
    assert len(rows) == 2 * len(umpc_vs_baselines.METHODS)
    assert {int(row["n"]) for row in rows} == {200, 400}
    for row in rows:
        assert int(row["runs"]) == 30 and math.isfinite(float(row["mse_mean"])) and float(row["mse_se"]) > 0
    assert _is_png(baselines_run / "umpc_vs_baselines.png")


def test_umpc_beats_bell_and_meets_bound(baselines_run: Path) -> None:
    """U-MPC's MSE is below Bell's by more than 3 s.e., and below Lemma D.3 (x m/(m-t)) + 3 s.e."""
    _, rows = _read(baselines_run / "umpc_vs_baselines.csv")
    for n in (200, 400):
        at = {row["method"]: row for row in rows if int(row["n"]) == n}
        umpc, bell = at["U-MPC"], at["Bell LDP"]
        gap = float(bell["mse_mean"]) - float(umpc["mse_mean"])
        assert gap > 3 * math.hypot(float(bell["mse_se"]), float(umpc["mse_se"]))
        assert float(umpc["mse_mean"]) < float(umpc["lemma_d3_bound_coalition"]) + 3 * float(umpc["mse_se"])


def test_exact_statistics() -> None:
    values = np.array([0.1, 0.5, 0.2, 0.9])
    brute = np.mean([abs(a - b) for i, a in enumerate(values) for b in values[i + 1:]])
    assert umpc_vs_baselines.exact_gini(values) == pytest.approx(brute)
    cats = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    assert umpc_samplers.exact_duplicate_ratio(cats) == pytest.approx(3 / 10)


def test_lemma_d3_bound_formula() -> None:
    n, edges = 100, 200
    pairs = n * (n - 1) / 2
    expected = (pairs - edges) / (4 * edges * (pairs - 1)) + 8 / n ** 2
    assert umpc_samplers.lemma_d3_bound(n=n, edges=edges, epsilon=1.0) == pytest.approx(expected)


def test_bad_options_rejected() -> None:
    from scenarios.cli import UsageError

    with pytest.raises(UsageError):
        umpc_samplers.parse_options(["--parties", "3", "--coalition", "2"])
    with pytest.raises(UsageError):
        umpc_vs_baselines.parse_options(["--ldp-bins", "1"])
