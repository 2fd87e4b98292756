"""The scenarios run end to end in their quick modes (numbers printed, not asserted: no timings here)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_command, scenario_command
from scenarios.ustat import main


@pytest.mark.multiparty
def test_benchmark_quick_mode_runs_with_three_parties(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    run = run_command(scenario_command("bench_kendall", "-M3", "--no-log", "--rows", "90", "--json", str(out)))
    assert run.code == 0, run.stderr
    record = json.loads(out.read_text())
    assert record["pairs"] == 2 * record["n"] == 180 and record["parties"] == 3
    assert record["protocol_bytes"] > record["bare_bytes"] > 0
    assert set(record["phases"]) == {"intake", "seed", "kernel", "noise", "reveal"}
    assert "ratio" in run.stdout


@pytest.mark.parametrize("stat", ["kendall", "gini", "auc", "duplicate", "rand", "vus"])
def test_main_job_runs_on_embedded_data_with_no_flags(stat: str, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["--stat", stat, "--pairs", "300", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    for key in ("statistic", "estimate", "epsilon", "delta", "n", "pairs", "parties", "seconds", "bytes_sent"):
        assert key in record
    assert record["statistic"] == stat and record["pairs"] == 300


def test_auc_on_embedded_data_excludes_the_held_out_rows(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert main(["--stat", "auc", "--pairs", "2n", "--seed", "1", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    complete = 4238 - 582  # rows with every feature; 30 % of them train the model
    assert record["n"] == complete - round(0.3 * complete)
    assert record["pairs"] == 2 * record["n"]
