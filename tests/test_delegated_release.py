"""The main job with noise drawn by a delegated subgroup Z (threat model M_HF)."""
from __future__ import annotations

from pathlib import Path

import pytest

import references
from conftest import read_record, run_command, scenario_command, small_table

ARGS = ["--stat", "gini", "--columns", "totChol", "--domain", "totChol=100:700:0", "--pairs", "all", "--path", "tuples",
        "--seed", "5"]  # delegation is a property of the tuples path's party noise: compare like with like


@pytest.mark.multiparty
def test_delegated_noise_release_is_exact_without_noise_and_sends_less(small_csv: Path, tmp_path: Path) -> None:
    header, values = small_table()
    exact = references.gini_mean_difference(values[:, header.index("totChol")])
    noise_bytes = {}
    for label, extra in (("all", []), ("delegated", ["--delegate-noise", "0.1:0.7"])):
        out = tmp_path / f"{label}.json"
        run = run_command(scenario_command("ustat", "-M5", "--no-log", "--data", str(small_csv), *ARGS,
                                           "--epsilon", "1e9", "--json", str(out), *extra))
        assert run.code == 0, run.stderr
        record = read_record(out)
        assert record["estimate"] == pytest.approx(exact, abs=1e-12)
        noise_bytes[label] = record["phases"]["noise"]["bytes_sent"]
    # |Z| = ceil(log 0.1 / log 0.3) = 2 of 5 parties share a noise value: 2/5 of the messages
    assert noise_bytes["delegated"] * 5 == noise_bytes["all"] * 2


def test_bad_delegation_option_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.ustat import main

    assert main(["--delegate-noise", "2:0.5"]) == 2
    assert "--delegate-noise expects EPS_FAIL:HONEST_FRACTION" in capsys.readouterr().err
