"""``--secure`` of the U-MPC experiment scenarios (Sinh & Ramon, Pi_U-MPC): one repetition on real parties.

Each test runs a scenario with ``--quick --secure -M3`` (three real MPyC parties on free ports, our launcher)
and reads ``<name>_secure.csv``: for every checked setting, :func:`dp.umpc.protocol.run_secure` with fixed
per-party draws (its ``noise_source`` hook) and :func:`dp.umpc.protocol.simulate` with the same rows, tuples
and draws must release the same estimate and the same opened noisy sums (relation ``equal``).
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import run_command, scenario_command


def _secure_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _run_secure(module: str, tmp_path: Path, *extra: str) -> str:
    run = run_command(scenario_command(f"papers.{module}", "-M3", "--quick", "--secure", "--seed", "11",
                                       "--results-dir", str(tmp_path), *extra), timeout=150.0)
    assert run.code == 0, run.stderr[-2000:]
    assert "--secure: the protocol on the MPyC path beside the simulated path" in run.stdout
    return run.stdout


def _check_all_equal(rows: list[dict[str, str]], settings: list[str], outputs: int = 1) -> None:
    """Every setting has its estimate and ``outputs`` noisy sums, all ``equal`` and agreeing, at m=3, t=1."""
    assert len(rows) == len(settings) * (1 + outputs)
    for setting in settings:
        mine = [row for row in rows if row["setting"].startswith(f"U-MPC {setting}")]
        assert len(mine) == 1 + outputs, setting
        for row in mine:
            assert "m=3, t=1" in row["setting"]
            assert row["relation"] == "equal" and float(row["tolerance"]) == 0.0
            assert row["ok"] == "True", row
            assert float(row["secure"]) == float(row["simulated"])


def test_samplers_secure_check_agrees(tmp_path: Path) -> None:
    _run_secure("umpc_samplers", tmp_path, "--runs", "5", "--inc-samples", "2")
    rows = _secure_rows(tmp_path / "umpc_samplers_secure.csv")
    _check_all_equal(rows, [f"duplicate ratio, {sampler}, eps=1" for sampler in ("balanced", "uniform", "bernoulli")])
    sizes = {row["setting"].split("|E|=")[1].split(",")[0] for row in rows}
    assert "1600" in sizes  # 2 n with n = 800 quick rows (balanced, uniform); Bernoulli's |E| is random


def test_vs_baselines_secure_check_agrees(tmp_path: Path) -> None:
    out = _run_secure("umpc_vs_baselines", tmp_path, "--runs", "5")
    _check_all_equal(_secure_rows(tmp_path / "umpc_vs_baselines_secure.csv"),
                     ["Gini, n=200, eps=1, |E|=400", "Gini, n=400, eps=1, |E|=800"])
    assert "--secure checks the U-MPC rows only" in out


@pytest.mark.parametrize("figure, settings", [
    ("bins", ["kendall sysBP,diaBP, eps=0.1,", "kendall sysBP,diaBP, eps=1,"]),
    ("uci", ["kendall trestbps,chol, n=100,", "kendall trestbps,chol, n=200,", "duplicate num, n=100,",
             "duplicate num, n=200,"]),
])
def test_bins_and_uci_secure_check_agrees(tmp_path: Path, figure: str, settings: list[str]) -> None:
    out = _run_secure("umpc_bins_and_uci", tmp_path, "--figure", figure, "--runs", "3")
    _check_all_equal(_secure_rows(tmp_path / f"umpc_{figure}_secure.csv"), settings)
    assert "--secure checks the U-MPC rows only" in out


def test_a_disagreement_is_reported_and_stops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.kit.experiments import SecureCheck, finish_secure_checks
    from secure.session import ProtocolFailure

    checks = [SecureCheck("U-MPC a: estimate", 0.25, 0.25), SecureCheck("U-MPC b: noisy sum 0", 101.0, 100.0)]
    with pytest.raises(ProtocolFailure, match="disagrees"):
        finish_secure_checks("demo", checks, str(tmp_path), note="baselines not checked")
    rows = _secure_rows(tmp_path / "demo_secure.csv")
    assert [row["ok"] for row in rows] == ["True", "False"]
    out = capsys.readouterr().out
    assert "DISAGREES" in out and "baselines not checked" in out
