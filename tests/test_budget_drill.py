"""The averaging-attack drill (issue 15) in quick mode: noise averages out as 1/sqrt(R) without a ledger,
and the ledger stops the attacker after floor(B / epsilon) real -M3 runs with its one-line refusal."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import run_command, scenario_command

pytestmark = pytest.mark.multiparty


def test_quick_drill_shows_the_attack_and_the_ledger_stopping_it(tmp_path: Path) -> None:
    record = tmp_path / "drill.json"
    run = run_command(scenario_command("drills.budget", "--quick", "--results-dir", str(tmp_path / "results"),
                                       "--json", str(record)), timeout=300, cwd=tmp_path)
    assert run.code == 0, run.stderr
    outcome = json.loads(record.read_text())
    assert outcome["failures"] == []
    assert abs(outcome["slope"] + 0.5) <= outcome["slope_tolerance"]
    expected = math.floor(outcome["budget"] / outcome["epsilon"])
    codes = [entry["code"] for entry in outcome["real_on"]]
    assert codes == [0] * expected + [2]
    assert "its privacy budget for this data does not cover this run (epsilon 1" in outcome["real_on"][-1]["error"]
    assert "spent" not in outcome["real_on"][-1]["error"]  # the figures stay in the refusing party's note
    assert all(entry["code"] == 0 and entry["estimate"] is not None for entry in outcome["real_off"])
    assert "refused (exit 2): error: party 0 (also parties 1, 2): its privacy budget for this data" in run.stdout
    assert (tmp_path / "results" / "budget_drill.png").stat().st_size > 0


def test_drill_usage_errors_are_one_line(tmp_path: Path) -> None:
    run = run_command(scenario_command("drills.budget", "--budget", "0.5", "--epsilon", "1"), cwd=tmp_path)
    assert run.code == 2 and run.stderr.strip() == "error: --budget must be finite and at least --epsilon, got 0.5"
