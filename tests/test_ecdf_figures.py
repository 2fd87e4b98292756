"""The ECDF experiment scenarios (paper Figs. 1-5) run end to end in --quick mode and their numbers
make sense.

Each scenario is run in-process through its ``main`` (exit code 0, CSV columns, non-empty PNG), with
one numeric check that holds either with certainty or with a bound built from the run's own
standard errors.  The runs are seeded (``--seed``), so they are also reproducible.  No timings are
asserted (docs/design.md: timings belong in benchmarks).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from conftest import run_command, scenario_command
from scenarios.papers import ecdf_inverse, ecdf_smoothing, roc_curve

SEED = "20240"


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Header and rows of a CSV file written by a scenario."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        return list(reader.fieldnames or []), rows


def assert_png(path: Path) -> None:
    """``path`` is a non-empty PNG file."""
    assert path.is_file(), f"{path} was not written"
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"


def by_epsilon(rows: list[dict[str, str]]) -> dict[float, dict[str, str]]:
    return {float(row["epsilon"]): row for row in rows}


# --------------------------------------------------------------------------------------------------
# Fig. 2 / Fig. 3: smoothing error ratio

def test_smoothing_vs_epsilon_writes_its_figure_and_p2_does_not_increase_the_error(tmp_path: Path) -> None:
    runs = 8
    code = ecdf_smoothing.main(["--vary", "epsilon", "--quick", "--epsilon-grid", "0.1,10", "--runs", str(runs),
                                "--seed", SEED, "--results-dir", str(tmp_path)])
    assert code == 0
    header, rows = read_rows(tmp_path / "ecdf_smoothing_epsilon.csv")
    assert header == list(ecdf_smoothing.CSV_COLUMNS)
    assert [float(row["epsilon"]) for row in rows] == [0.1, 10.0]
    assert all(int(row["points"]) == 2**8 and int(row["runs"]) == runs for row in rows)
    assert_png(tmp_path / "ecdf_smoothing_epsilon.png")
    large = by_epsilon(rows)[10.0]
    # at epsilon = 10 (node noise mostly 0 or +-1) the noise is not all zero in these runs, so every run
    # has a ratio; the p = 2 projection must not increase the L2 error on average: mean <= 1 up to
    # three standard errors of the runs (one-sided, ~0.1 % false alarm) plus solver tolerance
    assert int(large["ratio_runs"]) == runs and int(large["solver_failures"]) == 0
    mean, error = float(large["ratio_p2_mean"]), float(large["ratio_p2_se"])
    assert math.isfinite(mean) and math.isfinite(error) and mean > 0
    assert mean <= 1.0 + 3.0 * error + 1e-6


def test_smoothing_vs_lambda_writes_its_figure(tmp_path: Path) -> None:
    code = ecdf_smoothing.main(["--vary", "lambda", "--quick", "--seed", SEED, "--results-dir", str(tmp_path)])
    assert code == 0
    header, rows = read_rows(tmp_path / "ecdf_smoothing_lambda.csv")
    assert header == list(ecdf_smoothing.CSV_COLUMNS)
    assert [float(row["lambda"]) for row in rows] == list(ecdf_smoothing.QUICK_LAMBDAS)
    assert all(row["vary"] == "lambda" and float(row["epsilon"]) == 1.0 for row in rows)
    for row in rows:  # smoothing is a projection onto a set containing F: errors are non-negative numbers
        for norm in (1, 2):
            assert 0.0 < float(row[f"ratio_p{norm}_mean"]) < math.inf
            assert float(row[f"seconds_p{norm}_mean"]) > 0.0
    assert_png(tmp_path / "ecdf_smoothing_lambda.png")


# --------------------------------------------------------------------------------------------------
# Fig. 4: ECDF and inverse ECDF errors

def test_inverse_errors_decrease_with_epsilon(tmp_path: Path) -> None:
    # 30 runs: a run's MSE is dominated by a few high tree nodes (heavy-tailed, mean/sd about 1), so
    # with 12 runs the drop below would only be about 3 to 4 standard errors; with 30 it is 5 or more
    runs = 30
    code = ecdf_inverse.main(["--quick", "--runs", str(runs), "--epsilon-grid", "0.05,10", "--seed", SEED,
                              "--results-dir", str(tmp_path)])
    assert code == 0
    header, rows = read_rows(tmp_path / "ecdf_inverse.csv")
    assert header == list(ecdf_inverse.CSV_COLUMNS)
    assert [float(row["epsilon"]) for row in rows] == [0.05, 10.0]
    assert all(int(row["queries"]) == ecdf_inverse.QUICK_QUERIES and int(row["points"]) == 2**8 for row in rows)
    assert_png(tmp_path / "ecdf_inverse.png")
    smallest, largest = rows[0], rows[-1]
    for metric in ecdf_inverse.METRICS:
        high, high_se = float(smallest[f"{metric}_mean"]), float(smallest[f"{metric}_se"])
        low, low_se = float(largest[f"{metric}_mean"]), float(largest[f"{metric}_se"])
        # the drop from epsilon = 0.05 to epsilon = 10 exceeds three standard errors of the difference
        assert high - low > 3.0 * math.hypot(high_se, low_se), metric


# --------------------------------------------------------------------------------------------------
# Figs. 1 and 5: ROC curve

def test_roc_curve_is_exact_without_noise_and_writes_both_figures(tmp_path: Path) -> None:
    code = roc_curve.main(["--quick", "--epsilon-grid", "1,1e9", "--seed", SEED, "--results-dir", str(tmp_path)])
    assert code == 0
    header, rows = read_rows(tmp_path / "roc_curve_l1.csv")
    assert header == list(roc_curve.CSV_COLUMNS)
    assert_png(tmp_path / "roc_curve_l1.png")
    assert_png(tmp_path / "roc_curve_example.png")
    noisy, exact = by_epsilon(rows)[1.0], by_epsilon(rows)[1e9]
    # with epsilon = 1e9 the discrete Laplace node noise is exactly 0, the released ECDFs are the true
    # ones, and the smoothed ROC curve equals the true one up to the solver: for p = 2 CLARABEL's
    # duality-gap tolerance 1e-10 on sum(nu^2) allows node corrections of about 1e-5, i.e. at most
    # (L + 1) * 1e-5 = 7e-5 on a value at N = 64; for p = 1 the corrections are about 1e-12
    for norm in (1, 2):
        assert float(exact[f"l1_p{norm}_mean"]) <= 1e-4
        assert abs(float(exact[f"auc_p{norm}_mean"]) - float(exact["true_auc"])) <= 1e-4
        assert float(noisy[f"l1_p{norm}_mean"]) > float(exact[f"l1_p{norm}_mean"])
    assert abs(float(exact["true_auc"]) - float(exact["exact_auc"])) < 0.01  # grid of 64 thresholds


def test_roc_distance_of_simple_curves() -> None:
    from smoothing.roc import roc_from_ecdfs

    diagonal = roc_from_ecdfs([0.0, 0.5, 1.0], [0.0, 0.5, 1.0])
    worst = roc_from_ecdfs([0.5, 1.0, 1.0], [0.0, 0.0, 1.0])     # positives all below negatives
    perfect = roc_from_ecdfs([0.0, 0.0, 1.0], [0.5, 1.0, 1.0])   # positives all above negatives
    assert roc_curve.roc_l1_distance(diagonal, diagonal) == 0.0
    assert roc_curve.roc_l1_distance(diagonal, perfect) == pytest.approx(0.5, abs=1e-4)
    assert perfect.auc == pytest.approx(1.0)
    assert roc_curve.roc_l1_distance(perfect, worst) == pytest.approx(1.0, abs=1e-4)


# --------------------------------------------------------------------------------------------------
# command-line contract

@pytest.mark.parametrize("module, argv", [
    (ecdf_smoothing, ["--runs", "0"]),
    (ecdf_smoothing, ["--vary", "delta"]),
    (ecdf_inverse, ["--epsilon-grid", "0,1"]),
    (roc_curve, ["--plot-epsilon", "-1"]),
])
def test_bad_usage_exits_2(module: object, argv: list[str], tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    assert module.main([*argv, "--quick", "--results-dir", str(tmp_path)]) == 2  # type: ignore[attr-defined]
    assert "error:" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.multiparty
@pytest.mark.parametrize("parties", ["-M1", "-M3"])
def test_roc_curve_runs_with_mpyc_parties(parties: str, tmp_path: Path) -> None:
    run = run_command(scenario_command("papers.roc_curve", parties, "--no-log", "--quick", "--runs", "2",
                                       "--seed", SEED, "--results-dir", str(tmp_path)))
    assert run.code == 0, run.stderr
    assert "L1 p=1" in run.stdout
    _, rows = read_rows(tmp_path / "roc_curve_l1.csv")
    assert len(rows) == len(roc_curve.QUICK_EPSILONS)
