"""The private ECDF across parties: the secure path equals the simulated one for the same noise."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, free_base_port, read_record, run_command, scenario_command, small_table
from dp.ecdf.tree import noisy_counts, plan_tree_noise, private_ecdf, true_counts, uniform_grid
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
    assert "private quantiles" in run.stdout


@pytest.mark.parametrize("flags, message", [
    (["--epsilon", "0"], "epsilon must be positive"),
    (["--columns", "weight"], "no declared domain for column 'weight'"),
    (["--release", "1"], "--release must lie in"),
    (["--quantiles", "0.5,1.5"], "--quantiles must lie strictly between 0 and 1"),
])
def test_ecdf_scenario_rejects_bad_options(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(flags) == 2
    assert message in capsys.readouterr().err
