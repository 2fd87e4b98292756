"""The ``--secure`` checks of the ECDF experiments (issue 16 item 6; Barczewski, Mawass & Ramon, Secs. 5-6).

Each experiment scenario runs one repetition of its protocol on the MPyC path with three real parties
(``-M3``, our launcher picks free ports) and the same fixed per-party noise draws on its simulated path;
the ``<name>_secure.csv`` must say that every check agrees (relation ``equal``), with the released counts
compared point by point.  Scenarios: ``ecdf_smoothing`` (Figs. 2/3, dp.ecdf.secure_release.run_secure_ecdf),
``ecdf_inverse`` (Fig. 4, the same release), ``roc_curve`` (Fig. 5, dp.ecdf.roc.run_secure_roc) and
``hosmer_lemeshow`` (Fig. 6, dp.ecdf.hosmer_lemeshow.run_secure_hosmer_lemeshow).
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from conftest import run_command, scenario_command

#: (module, name of the CSV, extra options, checks per setting, settings in --quick)
CASES = [
    ("papers.ecdf_smoothing", "ecdf_smoothing_epsilon", (), 6, 3),
    ("papers.ecdf_inverse", "ecdf_inverse", (), 5, 3),
    ("papers.roc_curve", "roc_curve", (), 8, 3),
    ("papers.hosmer_lemeshow", "hosmer_lemeshow", ("--runs", "2"), 6, 4),
]


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.multiparty
@pytest.mark.parametrize("module,name,extra,per_setting,settings", CASES, ids=[case[1] for case in CASES])
def test_secure_check_agrees_with_three_parties(tmp_path: Path, module: str, name: str, extra: tuple[str, ...],
                                                per_setting: int, settings: int) -> None:
    run = run_command(scenario_command(module, "-M3", "--no-log", "--quick", "--secure", "--seed", "7",
                                       "--results-dir", str(tmp_path), *extra), timeout=100)
    assert run.code == 0, run.stderr
    assert "--secure: the protocol on the MPyC path beside the simulated path" in run.stdout
    rows = _read(tmp_path / f"{name}_secure.csv")
    assert len(rows) == per_setting * settings
    assert all(row["ok"] == "True" and row["relation"] == "equal" and float(row["tolerance"]) == 0.0 for row in rows)
    assert all(float(row["secure"]) == float(row["simulated"]) for row in rows)
    assert all("(m=3 t=1)" in row["setting"] for row in rows)  # the MPyC path ran on three parties
    differing = [row for row in rows if "differing" in row["setting"]]
    assert differing and all(float(row["secure"]) == 0.0 for row in differing)


@pytest.mark.parametrize("module", [case[0] for case in CASES])
def test_secure_flag_is_documented(module: str) -> None:
    run = run_command(scenario_command(module, "-h"))
    assert run.code == 0, run.stderr
    assert "--secure" in run.stdout


def test_a_disagreement_stops_with_one_line(tmp_path: Path) -> None:
    from scenarios.kit.experiments import SecureCheck, finish_secure_checks
    from secure.errors import ProtocolFailure

    checks = [SecureCheck("a", 1.0, 1.0), SecureCheck("b", 2.0, 3.0)]
    with pytest.raises(ProtocolFailure, match="disagrees with the simulated path"):
        finish_secure_checks("probe", checks, str(tmp_path))
    rows = _read(tmp_path / "probe_secure.csv")
    assert [row["ok"] for row in rows] == ["True", "False"]
    finish_secure_checks("probe", checks[:1], str(tmp_path))  # all agree: no exception
