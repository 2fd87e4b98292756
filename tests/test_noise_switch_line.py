"""A pure budget that switches the default noise from the in-MPC sampler to party shares says so in one line
above the table (issue 22, item 5)."""
from __future__ import annotations

from pathlib import Path

from conftest import run_command, scenario_command

from dp.noise_defaults import pure_budget_line, switched_by_pure_budget

ARGS = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300,diaBP=40:160", "--precision", "1",
        "--pairs", "all"]
LINE = "noise: party-drawn shares, not the in-MPC sampler, because the budget is pure"


def test_only_a_pure_budget_that_changes_the_default_is_a_switch() -> None:
    assert switched_by_pure_budget("ustat", 1.0, 0.0, pure_budget=True)
    assert not switched_by_pure_budget("ustat", 1.0, 0.0, pure_budget=False)
    assert not switched_by_pure_budget("ecdf", 1.0, 0.0, pure_budget=True)  # party noise by default anyway
    assert not switched_by_pure_budget("ustat", 1e9, 0.0, pure_budget=True)  # the sampler cannot run there anyway
    # m/(m-t): Polya shares calibrated for any t of m (Sinh & Ramon, Protocol 3.1): 3/2 at m = 3, t = 1
    assert "variance x1.5 (m = 3, t = 1)" in pure_budget_line(source="budget", parties=3, threshold=1)
    assert "give --budget EPS:DELTA" in pure_budget_line(source="budget", parties=3, threshold=1)
    assert "scenarios.budget raise" in pure_budget_line(source="account", parties=3, threshold=1)


def test_the_jobs_say_the_switch_above_the_table(small_csv: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    base = ["--data", str(small_csv), *ARGS, "--ledger", str(ledger), "--no-log"]
    pure = run_command(scenario_command("ustat", *base, "--budget", "5"))
    assert pure.code == 0, pure.stderr
    first = pure.stdout.splitlines()[0]
    assert first.startswith(LINE + " (--budget has no delta)") and "variance x1 (m = 1, t = 0)" in first
    again = run_command(scenario_command("ustat", *base))  # the account exists, pure: the same switch
    assert again.code == 0, again.stderr
    assert again.stdout.splitlines()[0].startswith(LINE + " (this dataset's account has delta 0)")
    approximate = run_command(scenario_command("ustat", "--data", str(small_csv), *ARGS, "--ledger",
                                               str(tmp_path / "other"), "--budget", "5:1e-6", "--no-log"))
    assert approximate.code == 0, approximate.stderr
    assert LINE not in approximate.stdout and "sampled inside MPC" in approximate.stdout
    forced = run_command(scenario_command("ustat", *base, "--noise", "parties"))  # asked for: not a switch
    assert forced.code == 0, forced.stderr
    assert LINE not in forced.stdout
