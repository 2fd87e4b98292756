"""Issue 11 (items 5, 10): every release states its guarantee, nothing spends more than it prints, and
the default noise of each protocol is the one decided from measured cost (:mod:`dp.noise_defaults`)."""
from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from conftest import read_record, run_command, scenario_command, small_table
from dp.rank_auc import Query, check_bit_length, exact_sums, plans_for_rows, release_guarantee, simulate
from dp.noise_defaults import DEFAULT_NOISE, default_noise
from dp.rank_auc.face import _plan
from secure.intake import ColumnSpec


def _fedauc(argv: list[str]) -> int:
    from scenarios.rank_auc import main

    return main(argv)


def _ustat(argv: list[str]) -> int:
    from scenarios.ustat import main

    return main(argv)


# ------------------------------------------------------------------------------------ the decision


def test_defaults_are_in_mpc_where_it_is_cheap_and_party_noise_elsewhere() -> None:
    assert DEFAULT_NOISE == {"ustat": "mpc", "rank_auc": "mpc", "ecdf": "parties", "subsampled_pairs": "parties"}
    assert default_noise("ustat", 1.0) == "mpc" and default_noise("rank_auc", 0.25) == "mpc"
    assert default_noise("ecdf", 1.0) == "parties" and default_noise("subsampled_pairs", 1.0) == "parties"
    # where the in-MPC sampler cannot reach its delta (huge epsilon), the default is party noise
    assert default_noise("ustat", 1e9) == "parties"


def test_measured_costs_back_the_decision() -> None:
    """The decision rule: in-MPC noise by default exactly where its measured cost is below 20 % of the run."""
    from dp.noise_defaults import MEASURED

    for protocol, cost in MEASURED.items():
        cheap = cost["mpc_noise_seconds"] < 0.2 * cost["protocol_seconds"]
        assert (DEFAULT_NOISE[protocol] == "mpc") == cheap, protocol


# ---------------------------------------------------------------------------------- rank_auc


def test_score_bits_beyond_bit_length_are_refused_naming_the_needed_length() -> None:
    wide = Query(score=ColumnSpec("score", 0, 1, 32), epsilon=1.0)
    assert wide.comparison_bits == 35  # keys 2 * 2^32 + 1 need 34 bits, plus the sign
    with pytest.raises(ValueError, match="give -L 35"):
        check_bit_length(wide, 32)
    narrow = Query(score=ColumnSpec("score", 0, 1, 16), epsilon=1.0, noise="mpc")
    check_bit_length(narrow, 32)
    rows = 200_000  # 2U reaches 2 * 10^10: 35 bits
    with pytest.raises(ValueError, match="noisy sums of 200000 rows on the sort path"):
        _plan(replace(narrow, path="sort"), rows, 3, 1, 32)


def test_domain_of_32_bits_stops_with_exit_2_and_one_line_under_an_explicit_L_32(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without -L the bit length follows from the domain (35 bits for the keys); -L 32 given is too short."""
    assert _fedauc(["--domain", "0:1:32", "-L", "32"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "-L 35" in err[0]


def test_in_mpc_noise_plans_carry_the_sampler_and_its_delta() -> None:
    query = Query(score=ColumnSpec("score", 0, 1, 8), epsilon=1.0, noise="mpc")
    plans = plans_for_rows(query, 40, 3, 1)
    assert [plan.sensitivity for plan in plans] == [2 * 39, 1] and [plan.epsilon for plan in plans] == [0.5, 0.5]
    samplers = [plan.sampler for plan in plans]
    assert all(s is not None and s.delta <= 2.0 ** -40 for s in samplers)
    delta, guarantee = release_guarantee(plans, 1.0, 3, 1)
    assert delta == sum(s.delta for s in samplers if s is not None) > 0
    assert "inside MPC" in guarantee and "(1, " in guarantee
    parties_delta, parties_text = release_guarantee(plans_for_rows(Query(score=query.score, epsilon=1.0), 40, 3, 1), 1.0, 3, 1)
    assert parties_delta == 0.0 and "coalition-calibrated for t = 1" in parties_text


def test_simulated_in_mpc_noise_is_added_once_per_sum() -> None:
    header, values = small_table()
    rows = values[:, [header.index("score"), header.index("TenYearCHD")]]
    query = Query(score=ColumnSpec("score", 0, 1, 8), epsilon=1.0, noise="mpc")
    parts = [rows[i::3] for i in range(3)]
    fixed = simulate(query, parts, seed=0, threshold=1, noise=np.array([[5], [-2]]))
    sums = [fixed.twice_u, fixed.positives]
    exact = exact_sums(np.vstack([query.encode(p) for p in parts]))
    assert sums == [exact[0] + 5, exact[1] - 2]
    simulated = simulate(query, parts, seed=0, threshold=1, noise_rng=np.random.default_rng(3))
    drawn = [simulated.twice_u, simulated.positives]
    slack = [plan.slack for plan in plans_for_rows(query, 40, 3, 1)]
    assert all(abs(d - e) <= s for d, e, s in zip(drawn, exact, slack))


def test_rows_split_the_total_epsilon_over_the_runs(small_csv: Path, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "runs.json"
    argv = ["--data", str(small_csv), "--columns", "score,TenYearCHD", "--domain", "0:1:8", "--rows", "12,12,12",
            "--json", str(out)]
    assert _fedauc(argv) == 0
    records = json.loads(out.read_text())
    assert len(records) == 3 and all(r["n"] == 12 for r in records)
    assert sum(r["epsilon"] for r in records) == pytest.approx(1.0, abs=1e-12)
    assert all(r["epsilon_total"] == 1.0 and r["runs"] == 3 for r in records)
    assert all(r["noise_source"] == "mpc" and "inside MPC" in r["guarantee"] for r in records)
    assert all(r["delta_total"] == pytest.approx(3 * r["delta"]) and 0 < r["delta"] <= 2 * 2.0 ** -40
               for r in records)
    assert re.search(r"epsilon +1 in total: 0\.333 per run x 3 runs on the same rows", capsys.readouterr().out)


def test_rows_with_one_file_per_party_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert _fedauc(["--data", "site{pid}.csv", "--rows", "10,20"]) == 2
    assert "--rows" in capsys.readouterr().err


def test_party_noise_still_runs(small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "parties.json"
    assert _fedauc(["--data", str(small_csv), "--domain", "0:1:8", "--columns", "score,TenYearCHD",
                    "--noise", "parties", "--json", str(out)]) == 0
    (record,) = json.loads(out.read_text())
    assert record["noise_source"] == "parties" and record["delta"] == 0.0 and record["epsilon"] == 1.0
    assert "party-drawn Polya" in record["guarantee"]


@pytest.mark.multiparty
def test_three_parties_default_to_noise_sampled_in_mpc(small_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "m3.json"
    run = run_command(scenario_command("rank_auc", "-M3", "--no-log", "--data", str(small_csv),
                                       "--columns", "score,TenYearCHD", "--domain", "0:1:8", "--rows", "20,40",
                                       "--json", str(out)))
    assert run.code == 0, run.stderr
    records = json.loads(out.read_text())
    assert [r["n"] for r in records] == [20, 40] and [r["epsilon"] for r in records] == [0.5, 0.5]
    assert all(r["noise_source"] == "mpc" and r["parties"] == 3 and r["phases"]["noise"]["bytes_sent"] > 0
               for r in records)
    assert "noise: discrete Laplace sampled inside MPC" in run.stdout


# ------------------------------------------------------------------------------------------ ustat


def test_ustat_defaults_to_noise_sampled_in_mpc_and_names_it(tmp_path: Path) -> None:
    out = tmp_path / "u.json"
    assert _ustat(["--pairs", "200", "--seed", "1", "--json", str(out)]) == 0
    record = read_record(out)
    # the tuples path compares: its comparison leakage (MPyC's masks, at the raised -K) is part of delta
    assert record["noise_source"] == "mpc" and record["sampler_delta"] > 0 and record["comparison_leak_delta"] > 0
    assert record["delta"] == pytest.approx(record["sampler_delta"] + record["comparison_leak_delta"], rel=1e-12)
    assert "inside MPC" in record["guarantee"]


@pytest.mark.parametrize("flags", [["--noise", "parties"], ["--noise", "mpc"], ["--mpc-noise"]])
def test_ustat_noise_option_and_its_alias(flags: list[str], tmp_path: Path) -> None:
    out = tmp_path / "u.json"
    assert _ustat([*flags, "--pairs", "200", "--seed", "1", "--json", str(out)]) == 0
    record = read_record(out)
    expected = "parties" if "parties" in flags else "mpc"
    assert record["noise_source"] == expected
    assert ("party-drawn" in record["guarantee"]) == (expected == "parties")


def test_delegated_noise_records_its_failure_probability_as_delta(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    assert _ustat(["--delegate-noise", "1e-6:0.5", "--pairs", "200", "--seed", "1", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["delegation_failure"] == 1e-6
    assert record["delta"] == pytest.approx(1e-6 + record["comparison_leak_delta"], rel=1e-12)
    assert record["noise_source"] == "parties" and "(1, 1e-06)-DP" in record["guarantee"]


def test_delegated_noise_adds_its_failure_to_the_mechanism_delta(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    assert _ustat(["--delegate-noise", "1e-6:0.5", "--delta", "1e-8", "--pairs", "200", "--seed", "1",
                   "--json", str(out)]) == 0
    record = read_record(out)
    assert record["mechanism"] == "binomial" and record["delta"] == pytest.approx(1e-6 + 1e-8, rel=1e-12)


@pytest.mark.parametrize("argv, names", [
    (["--noise", "mpc", "--delegate-noise", "1e-6:0.5"], "--delegate-noise"),
    (["--mpc-noise", "--noise", "parties"], "--noise parties"),
    (["--noise", "mpc", "--epsilon", "1e9"], "in-MPC"),
])
def test_contradictory_or_impossible_noise_is_a_usage_error(argv: list[str], names: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert _ustat([*argv, "--pairs", "100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and names in err[0]


def test_huge_epsilon_defaults_to_party_noise_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "u.json"
    assert _ustat(["--epsilon", "1e9", "--pairs", "200", "--seed", "1", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["noise_source"] == "parties" and "party-drawn" in record["guarantee"]


# ------------------------------------------------------------------------------------------- ecdf


def test_ecdf_record_names_its_party_noise(tmp_path: Path) -> None:
    from scenarios.ecdf import main

    out = tmp_path / "e.json"
    assert main(["--points", "64", "--smooth", "none", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["noise_source"] == "parties" and "party-drawn Polya" in record["guarantee"]
