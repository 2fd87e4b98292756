"""The private ECDF across parties: the secure path equals the simulated one for the same noise."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, free_base_port, read_record, run_command, scenario_command, small_table
from dp.ecdf.grid import true_counts, uniform_grid
from dp.ecdf.tree import noisy_counts, plan_tree_noise, private_ecdf
from scenarios.ecdf import main


@pytest.mark.multiparty
@pytest.mark.parametrize("release", [0, 40])
def test_three_party_ecdf_equals_simulated_with_the_same_node_draws(release: int, small_csv: Path) -> None:
    program = ROOT / "tests" / "programs" / "fixed_noise_ecdf.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(small_csv), "totChol", "100", "700",
                       "300", str(release)])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    header, values = small_table()
    column = values[:, header.index("totChol")]
    grid = uniform_grid(100, 700, 600 / 299)
    plan = plan_tree_noise(epsilon=1.0, points=len(grid), parties=3, threshold=1)
    total = sum((np.arange(plan.node_count) % 7) - 3 + party for party in range(3))
    expected = noisy_counts(true_counts(column, grid), total)
    subset = np.arange(len(grid)) if release == 0 else np.unique(np.linspace(0, len(grid) - 1, release).round())
    assert record["subset"] == subset.astype(int).tolist()
    assert record["counts"] == expected[subset.astype(int)].tolist()
    np.testing.assert_allclose(np.array(record["counts"]) / record["n"],
                               private_ecdf(column, grid, plan, node_noise=total)[subset.astype(int)])


def test_ecdf_scenario_with_huge_epsilon_releases_the_exact_counts(small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "ecdf.json"
    assert main(["--data", str(small_csv), "--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "256",
                 "--epsilon", "1e9", "--json", str(out)]) == 0
    record = read_record(out)
    header, values = small_table()
    grid = uniform_grid(80, 300, 220 / 255)
    assert record["counts"] == true_counts(values[:, header.index("sysBP")], grid).tolist()
    median = float(np.quantile(values[:, header.index("sysBP")], 0.5, method="inverted_cdf"))
    assert abs(record["quantiles"]["0.5"] - median) <= 220 / 255  # the grid's resolution


@pytest.mark.multiparty
def test_ecdf_scenario_runs_with_three_parties(tmp_path: Path) -> None:
    out = tmp_path / "ecdf.json"
    run = run_command(scenario_command("ecdf", "-M3", "--no-log", "--release", "32", "--json", str(out)))
    assert run.code == 0, run.stderr
    record = read_record(out)
    assert record["parties"] == 3 and record["released"] == 32 and record["n"] == 4238  # missing cells filled
    assert record["missing"] == "fill" and record["fill"] == {"totChol": 400.0}
    # 32 of the 1024 grid points released: no quantile from them, one line says why (full curve: test above)
    assert record["quantiles"] == {} and record["quantiles_note"].startswith("quantiles not computed: only 32 of 1024")
    assert "private quantiles" not in run.stdout and "quantiles not computed" in run.stdout


@pytest.mark.parametrize("flags, message", [
    (["--epsilon", "0"], "epsilon must be positive"),
    (["--columns", "weight"], "no declared domain for column 'weight'"),
    (["--release", "1"], "--release must lie in"),
    (["--quantiles", "0.5,1.5"], "--quantiles must lie strictly between 0 and 1"),
])
def test_ecdf_scenario_rejects_bad_options(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(flags) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("kind", ["uniform", "geometric"])
@pytest.mark.parametrize("points", [2, 64, 100, 1024])
def test_points_n_gives_a_grid_of_n_points_of_every_kind(kind: str, points: int) -> None:
    """--points N, --grid KIND on [80, 220]: N points (the geometric grid had N + 1 and an irregular first gap)."""
    from dp.ecdf.grid import grid_of_points

    grid = grid_of_points(80.0, 220.0, points, kind=kind)
    assert len(grid) == points and grid[0] == 80.0 and grid[-1] == 220.0
    gaps = np.diff(grid) if kind == "uniform" else grid[1:] / grid[:-1]
    np.testing.assert_allclose(gaps, gaps[0], rtol=1e-9)


def test_ecdf_scenario_geometric_grid_has_the_points_asked(small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "ecdf.json"
    assert main(["--data", str(small_csv), "--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "64",
                 "--grid", "geometric", "--smooth", "none", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["points"] == 64 and len(record["counts"]) == 64
    assert record["point_std"] == pytest.approx(plan_tree_noise(epsilon=1.0, points=64).point_variance ** 0.5 / record["n"])  # per point of F


def test_ecdf_scenario_prints_the_local_note_of_clipped_values(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Out-of-domain values are clipped at their owner and counted in its local note (as ustat's), not shared."""
    from conftest import write_csv

    header, values = small_table()
    values = values.copy()
    column = header.index("sysBP")
    values[:3, column] = [10.0, 400.0, 500.0]
    csv = write_csv(tmp_path / "outside.csv", header, values)
    out = tmp_path / "ecdf.json"
    assert main(["--data", str(csv), "--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "256",
                 "--epsilon", "1e9", "--smooth", "none", "--json", str(out)]) == 0
    stdout = capsys.readouterr().out
    assert "  at this party, not shared: 0 missing value(s) filled, 3 value(s) clipped to the domain" in stdout
    record = read_record(out)
    assert record["counts"] == true_counts(np.clip(values[:, column], 80, 300), uniform_grid(80, 300, 220 / 255)).tolist()
    assert "clipped" not in json.dumps(record)


@pytest.mark.multiparty
@pytest.mark.parametrize("case, line", [
    ("ecdf-nan", "error: party 1: the ECDF values hold a missing value (NaN or infinite): refuse it or fill it with a "
                 "declared value (secure.intake.MissingPolicy) before the release"),
    ("ecdf-plan", "error: party 0 (also parties 1, 2): the tree noise plan is calibrated for parties=1, threshold=0, "
                  "but this run has m = 3 parties and threshold t = 1: plan it with "
                  "plan_tree_noise(..., parties=3, threshold=1)"),
])
def test_run_secure_ecdf_refuses_a_missing_value_or_a_plan_for_another_run(case: str, line: str) -> None:
    """A NaN at party 1 (it crashed party 1, party 0 said only "lost connection"), or a plan for m = 1,
    t = 0 under -M3 (too little noise per party): one shared line at every party, exit 2, nothing released."""
    program = ROOT / "tests" / "programs" / "script_checks.py"
    run = run_command([sys.executable, str(program), "--case", case, "--eps", "1", "-M3", "--no-log"], timeout=180)
    assert run.code == 2, run.stderr
    assert run.stderr.splitlines() == [line]
    assert "ECDF" not in run.stdout


def test_run_secure_ecdf_checks_its_inputs_before_anything_is_shared() -> None:
    from dp.ecdf.secure_release import _check_inputs

    plan = plan_tree_noise(epsilon=1.0, points=8, parties=3, threshold=1)
    assert _check_inputs(np.linspace(0, 1, 5), plan, parties=3, threshold=1) is None
    assert "calibrated for parties=3, threshold=1" in str(_check_inputs(np.zeros(5), plan, parties=3, threshold=0))
    assert "one column" in str(_check_inputs(np.zeros((5, 2)), plan, parties=3, threshold=1))
    for bad in (np.nan, np.inf):
        problem = str(_check_inputs(np.array([0.1, bad, 0.3]), plan, parties=3, threshold=1))
        assert "missing value" in problem and "nan" not in problem.replace("NaN", "") and "1" not in problem
