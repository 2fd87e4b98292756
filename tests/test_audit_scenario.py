"""``python -m scenarios.drills.audit``: the table, the JSON record, the exit codes (0 as expected, 2 usage)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_command, scenario_command


def test_audit_of_a_mechanism_and_a_control_prints_both_verdicts(tmp_path: Path) -> None:
    record = tmp_path / "audit.json"
    run = run_command(scenario_command("drills.audit", "--quick", "--seed", "11", "--no-log", "--json", str(record),
                                       "--case", "umpc-kendall-dlap-m3-t1,control-polya-naive-m3-t1,label-rr",
                                       "--results-dir", str(tmp_path)))
    assert run.code == 0, run.stderr
    results = {r["case"]: r for r in json.loads(record.read_text())["results"]}
    assert results["umpc-kendall-dlap-m3-t1"]["verdict"] == "pass"
    assert results["label-rr"]["verdict"] == "pass"
    assert results["control-polya-naive-m3-t1"]["verdict"] == "FAIL"
    assert all(r["as_expected"] for r in results.values())
    assert "all 2 mechanisms pass at their claimed epsilon; all 1 controls are caught" in run.stdout
    assert (tmp_path / "audit.csv").exists()


def test_audit_list_names_every_case() -> None:
    from scenarios.drills.audit import all_cases

    run = run_command(scenario_command("drills.audit", "--list", "--no-log"))
    assert run.code == 0, run.stderr
    for case in all_cases():
        assert case.name in run.stdout


@pytest.mark.parametrize("flags, fragment", [
    (["--case", "no-such-case"], "unknown case 'no-such-case'"),
    (["--samples", "1"], "--samples must be at least 2"),
    (["--confidence", "1.5"], "--confidence must be in (0, 1)"),
])
def test_audit_usage_errors_exit_2_with_one_line(flags: list[str], fragment: str) -> None:
    run = run_command(scenario_command("drills.audit", *flags, "--no-log"))
    assert run.code == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], run.stderr
