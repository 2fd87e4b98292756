"""``--secure`` checks of the Bell et al. and FedAUC experiment scenarios (issue 16, item 6).

Each scenario runs with ``-M3 --quick --secure`` (three real parties, our launcher picks free ports) and
must write ``<name>_secure.csv`` in which every check agrees with relation ``equal``:

- ``bell_kendall``: the 2PC subsampled-pairs protocol on MPyC (``run_secure_subsampled``) with fixed per-party
  draws, beside ``simulate_subsampled`` fed the same draws (the released tau and every opened per-pair value);
- ``bell_auc_domain`` / ``bell_auc_synthetic``: the local-DP protocols as deployed (users at the parties
  randomise, reports sent to party 0 with ``mpc.transfer``), beside ``ldp_auc`` / the generic simulation with
  the same users' randomness;
- ``fedauc_tables`` / ``fedauc_figures``: Sun et al.'s deployment (clients at the parties perturb their reports,
  the server at party 0 aggregates), beside ``simulate_fedauc`` with the same layout and draws.

Reference: Bell, Bellet, Gascón & Kulkarni (2019), §4-§6; Sun et al., *Differentially Private AUC Computation
in Vertical Federated Learning*, §3-§5.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import run_command, scenario_command

#: scenario module, number of checks its quick run makes (derived from its quick settings)
SCENARIOS = [
    # P in {1, 10} (smallest and largest of 1,2,5,10): tau and per-pair values each
    ("papers.bell_kendall", "bell_kendall", 4),
    # one split (users) x alphas 4, 9, 14
    ("papers.bell_auc_domain", "bell_auc_domain", 3),
    # 2 data sets x alphas 2, 5, 8 x (AUC-specific, generic: all alphas <= 10)
    ("papers.bell_auc_synthetic", "bell_auc_synthetic", 12),
    # rr, rr_noisy, global, local non-IID, adaptive, local one row per client
    ("papers.fedauc_tables", "fedauc_tables", 6),
    # local, orthogonal, adaptive, rr (rr_sizes), three Gaussian methods (gaussian)
    ("papers.fedauc_figures", "fedauc_figures", 7),
]


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("module,name,expected", SCENARIOS, ids=[s[1] for s in SCENARIOS])
def test_secure_check_agrees_on_three_parties(tmp_path: Path, module: str, name: str, expected: int) -> None:
    run = run_command(scenario_command(module, "-M3", "--quick", "--secure", "--seed", "11",
                                       "--results-dir", str(tmp_path), "--no-log"), timeout=120.0)
    assert run.code == 0, run.stderr
    rows = _read(tmp_path / f"{name}_secure.csv")
    assert len(rows) == expected
    for row in rows:
        assert row["relation"] == "equal"
        assert float(row["tolerance"]) == 0.0
        assert row["ok"] == "True", row
        assert float(row["secure"]) == float(row["simulated"]), row
        assert "m=3" in row["setting"]
    assert "DISAGREES" not in run.stdout


def test_a_disagreement_stops_with_one_line(tmp_path: Path) -> None:
    """The reporting step of every scenario here raises the one-line protocol failure (exit 1)."""
    from scenarios.kit.experiments import SecureCheck, finish_secure_checks
    from secure.session import ProtocolFailure

    checks = [SecureCheck("a", 0.5, 0.5), SecureCheck("b", 0.5, 0.5 + 2**-40)]
    with pytest.raises(ProtocolFailure, match="disagrees"):
        finish_secure_checks("x", checks, str(tmp_path))
    rows = _read(tmp_path / "x_secure.csv")
    assert [row["ok"] for row in rows] == ["True", "False"]


def test_secure_flag_is_offered_by_these_scenarios() -> None:
    run = run_command(scenario_command("papers.bell_auc_synthetic", "-h"), timeout=60.0)
    assert run.code == 0 and "--secure" in run.stdout
    run = run_command(scenario_command("papers.fedauc_tables", "-h"), timeout=60.0)
    assert run.code == 0 and "--secure" in run.stdout
