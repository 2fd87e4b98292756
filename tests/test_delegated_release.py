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


@pytest.mark.multiparty
def test_more_delegates_than_parties_is_refused_with_one_line() -> None:
    """G3: ``-M5 -T2 --delegate-noise 0.01:0.5`` needs 7 delegates and has 5 parties: one line at every party,
    exit 2, before any data is shared (before: all 5 drew a full noise and delta 0.01 was charged)."""
    run = run_command(scenario_command("ustat", "-M5", "-T2", "--delegate-noise", "0.01:0.5", "--pairs", "100",
                                       "--ledger", "off", "--no-log"), timeout=120)
    assert run.code == 2, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: party 0 (also parties 1, 2, 3, 4): --delegate-noise 0.01:0.5")
    assert "needs |Z| = ceil(log 0.01 / log 0.5) = 7 noise delegates, but there are 5 parties" in lines[0]
    assert "private estimate" not in run.stdout


def test_the_plan_line_says_delegation_chose_the_tuples_path() -> None:
    """G3: the user forced nothing: the plan says why the tuples path ran (before: ``path tuples (forced)``)."""
    from dp.umpc.complete import plan_for
    from dp.umpc.protocol import UStatQuery
    from secure.intake import ColumnSpec
    from secure.kernels import get_kernel

    query = UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("a", 0, 10, 0, step=1.0),
                                                            ColumnSpec("b", 0, 10, 0, step=1.0)), epsilon=1.0, tuples=80)
    plan = plan_for(query, rows=40, parties=5, pairs="auto", delegated=True)
    assert plan.path == "tuples" and plan.describe().startswith(
        "path tuples (--delegate-noise runs on sampled tuples only);")
    forced = plan_for(UStatQuery(kernel=query.kernel, specs=query.specs, epsilon=1.0, tuples=80, path="tuples"),
                      rows=40, parties=5, pairs="count", delegated=True)
    assert forced.describe().startswith("path tuples (forced);")
