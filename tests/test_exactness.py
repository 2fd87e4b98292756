"""Done-when: with epsilon = 1e9 and --pairs all, every kernel's release equals the exact U-statistic.

Checked against scipy/scikit-learn/brute-force references, with ties, in one process (no flags),
with ``-M1`` (MPyC's asynchronous path) and with three real parties (``-M3``).
"""
from __future__ import annotations

import re

from pathlib import Path

import pytest

import references
from conftest import read_record, run_command, scenario_command, small_table
from scenarios.ustat import main

ARGS = {
    "kendall": ["--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8,diaBP=40:160:8"],
    "gini": ["--columns", "totChol", "--domain", "totChol=100:700:0"],
    "auc": ["--columns", "score,TenYearCHD", "--domain", "score=0:1:8"],
    "duplicate": ["--columns", "age", "--domain", "age=20:90:0"],
    "rand": ["--columns", "clusterA,clusterB", "--domain", "clusterA=0:2:0,clusterB=0:2:0"],
    "vus": ["--columns", "score,grade", "--domain", "score=0:1:8"],
}
REFERENCE = {
    "kendall": lambda t: references.kendall_tau_a(t["sysBP"], t["diaBP"]),
    "gini": lambda t: references.gini_mean_difference(t["totChol"]),
    "auc": lambda t: references.auc(t["score"], t["TenYearCHD"]),
    "duplicate": lambda t: references.duplicate_ratio(t["age"]),
    "rand": lambda t: references.rand_index(t["clusterA"], t["clusterB"]),
    "vus": lambda t: references.volume_under_surface(t["score"], t["grade"]),
}


def _exact(stat: str) -> float:
    header, values = small_table()
    return REFERENCE[stat]({name: values[:, j] for j, name in enumerate(header)})


def _argv(stat: str, csv: Path, out: Path) -> list[str]:
    return ["--stat", stat, "--data", str(csv), *ARGS[stat], "--epsilon", "1e9", "--pairs", "all",
            "--seed", "11", "--json", str(out)]


@pytest.mark.parametrize("stat", sorted(ARGS))
def test_no_flags_release_equals_exact_statistic(stat: str, small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    assert main(_argv(stat, small_csv, out)) == 0
    record = read_record(out)
    assert record["n"] == 40 and record["pairs"] == (780 if stat != "vus" else 9880)
    assert record["estimate"] == pytest.approx(_exact(stat), abs=1e-12)


@pytest.mark.parametrize("stat", sorted(ARGS))
def test_async_single_party_release_equals_exact_statistic(stat: str, small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = run_command(scenario_command("ustat", "-M1", "--no-log", *_argv(stat, small_csv, out)))
    assert run.code == 0, run.stderr
    assert read_record(out)["estimate"] == pytest.approx(_exact(stat), abs=1e-12)


@pytest.mark.multiparty
@pytest.mark.parametrize("stat", sorted(ARGS))
def test_three_party_release_equals_exact_statistic(stat: str, small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = run_command(scenario_command("ustat", "-M3", "--no-log", *_argv(stat, small_csv, out)))
    assert run.code == 0, run.stderr
    record = read_record(out)
    assert record["parties"] == 3 and record["n"] == 40
    assert record["estimate"] == pytest.approx(_exact(stat), abs=1e-12)
    assert "Private U-statistic" in run.stdout


@pytest.mark.parametrize("stat, flags", [
    ("gini", ["--columns", "totChol", "--domain", "totChol=150:260:0"]),
    ("auc", ["--columns", "score,TenYearCHD", "--domain", "score=0.25:0.75:8"]),
])
def test_secure_clipping_gives_the_same_release_as_local_clipping(stat: str, flags: list[str], small_csv: Path,
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Narrow domains force clipping; inside MPC it must give exactly what each party's clipping gives."""
    estimates = {}
    for mode in ("local", "secure"):
        out = tmp_path / f"{mode}.json"
        argv = ["--stat", stat, "--data", str(small_csv), *flags, "--epsilon", "1e9", "--pairs", "all",
                "--seed", "2", "--clip", mode, "--json", str(out)]
        assert main(argv) == 0
        record = read_record(out)
        estimates[mode] = record["estimate"]
        assert "clipped" not in record and record["clipping"] == mode  # the count stays at the party
        clipped = re.search(r"at this party, not shared: .*?(\d+) value\(s\) clipped", capsys.readouterr().out)
        assert clipped is not None and int(clipped.group(1)) > 0
    assert estimates["secure"] == estimates["local"]
