"""Kendall's tau experiment (Bell et al. 2019, Fig. 4): quick run in process, CSV, PNG, one numeric check."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from scenarios.papers.bell_kendall import CSV_COLUMNS, main, method_names, parse_options
from scenarios.kit.cli import UsageError


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("bell_kendall")
    assert main(["--quick", "--seed", "11", "--results-dir", str(directory)]) == 0
    return directory


def test_quick_run_writes_csv_and_png(quick_run: Path) -> None:
    header, rows = _read(quick_run / "bell_kendall.csv")
    assert tuple(header) == CSV_COLUMNS
    methods = method_names((1, 2, 5, 10))
    assert len(rows) == 2 * len(methods)  # two epsilons in quick mode
    assert {row["method"] for row in rows} == set(methods)
    for row in rows:
        assert int(row["runs"]) == 60 and int(row["n"]) == 600 and int(row["bins"]) == 56
        assert math.isfinite(float(row["mse_mean"])) and float(row["mse_se"]) > 0
        assert float(row["predicted_mse"]) > 0
    png = quick_run / "bell_kendall.png"
    assert png.stat().st_size > 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_every_method_improves_from_smallest_to_largest_epsilon(quick_run: Path) -> None:
    """MSE(eps = 5) < MSE(eps = 0.05) by more than 3 combined standard errors, for every method.

    A confidence bound from the run's own standard errors: with 60 runs the relative standard error
    of an MSE is about sqrt(2/60) = 0.18, and the predicted MSEs differ by at least 100x.
    """
    _, rows = _read(quick_run / "bell_kendall.csv")
    by_key = {(float(row["epsilon"]), row["method"]): row for row in rows}
    for method in method_names((1, 2, 5, 10)):
        small, large = by_key[(0.05, method)], by_key[(5.0, method)]
        gap = float(small["mse_mean"]) - float(large["mse_mean"])
        error = math.hypot(float(small["mse_se"]), float(large["mse_se"]))
        assert gap > 3 * error, (method, small["mse_mean"], large["mse_mean"], error)


def test_exact_tau_is_shared_and_subsampling_beats_all_pairs_at_small_epsilon(quick_run: Path) -> None:
    _, rows = _read(quick_run / "bell_kendall.csv")
    assert len({row["exact_tau"] for row in rows}) == 1
    assert -1 < float(rows[0]["exact_tau"]) < 0
    at = {row["method"]: row for row in rows if float(row["epsilon"]) == 0.05}
    sub, base = at["subsampled P=1"], at["all pairs"]
    gap = float(base["mse_mean"]) - float(sub["mse_mean"])
    assert gap > 3 * math.hypot(float(base["mse_se"]), float(sub["mse_se"]))


@pytest.mark.parametrize("argv, message", [
    (["--coalition", "2"], "--coalition"),
    (["--permutations", "1.5"], "whole numbers"),
    (["--epsilon-grid", "0,1"], "--epsilon-grid"),
    (["--delta", "2"], "--delta"),
    (["--age-width", "0"], "--age-width"),
])
def test_bad_options_are_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_options(argv)


def test_bad_option_exits_with_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--coalition", "5", "--results-dir", str(tmp_path)]) == 2
    assert "--coalition" in capsys.readouterr().err
    assert not np.any([p.name.startswith("bell_kendall") for p in tmp_path.iterdir()])
