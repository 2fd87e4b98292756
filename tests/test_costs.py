"""Cost formulas of dp.costs (hand-computed cases) and the umpc_costs scenario in --quick mode."""
from __future__ import annotations

import csv
import math

import pytest

from dp import costs


def test_lemma_c3_small_case() -> None:
    # n=4, |E|=8, k=2, l=40: sharing 8*2*1*40 = 640, aggregation 4*40 = 160
    plain = costs.umpc_online_bits(4, 8, 2, 40, kernel_bits=0, noise_bits=0)
    assert (plain.sharing, plain.kernel, plain.noise, plain.aggregation) == (640, 0, 0, 160)
    assert plain.total == 800
    # Kendall C_f^C = 2*128*40 + 4*40 = 10400 per tuple
    assert costs.kernel_cost_bits("kendall", 40) == 10400
    dis = costs.umpc_dis_bits(4, 8, 2, 40)
    assert dis.kernel == 8 * 10400
    assert dis.noise == 4 * 4 * 40
    assert dis.total == 640 + 83200 + 640 + 160
    assert dis.rounds == 4  # max(2, 1) + 2
    # M_HF with f_H = 1/2, eps_fail = 1/4: |Z| = 2
    hf = costs.umpc_hf_bits(4, 8, 2, 40, epsilon_fail=0.25, honest_fraction=0.5)
    assert hf.noise == 2 * 4 * 40


def test_baselines_small_case() -> None:
    assert costs.bell_bits(10, 40, 16) == 6400
    assert costs.ghazi_bits(10, 1.0, 40, 16) == pytest.approx(100 * 4 * 40)
    assert costs.ghazi_sm_bits(16, 1.0, 40, 16) == pytest.approx(4 * 256 * 4 * 40)
    assert costs.bell_party_ops(16) == 16
    assert costs.bell_server_ops(4, 2) == 6 * 4
    assert costs.umpc_party_ops(10, 20, 2, kernel_ops=3.0) == 4 * 3 + 10
    assert costs.umpc_server_ops(10) == 10
    assert costs.ghazi_sm_party_ops(16, 1.0, 16) == pytest.approx(16 * 16 * 4 + 16 * 4)


@pytest.mark.parametrize("formula", [
    lambda n: costs.umpc_dis_bits(n, 2 * n).total,
    lambda n: costs.umpc_hf_bits(n, 2 * n).total,
    lambda n: costs.bell_bits(n),
    lambda n: costs.ghazi_bits(n, 1.0),
    lambda n: costs.ghazi_sm_bits(n, 1.0),
    lambda n: costs.umpc_party_ops(n, 2 * n * int(math.log2(n))),
    lambda n: costs.mpyc_shamir_bytes_model(n, 2 * n).total,
])
def test_monotone_in_n(formula) -> None:
    values = [formula(n) for n in (8, 64, 512, 4096)]
    assert values == sorted(values) and values[0] < values[-1]


def test_hf_cheaper_than_dis_for_large_n() -> None:
    for n in (1000, 4238, 100_000):
        assert costs.umpc_hf_bits(n, 2 * n).total < costs.umpc_dis_bits(n, 2 * n).total
    # for tiny n every party is a delegate: the same noise cost order
    assert costs.umpc_hf_bits(4, 8).noise <= costs.umpc_dis_bits(4, 8).noise


def test_mpyc_model_structure() -> None:
    three = costs.mpyc_shamir_bytes_model(100, 200, parties=3)
    five = costs.mpyc_shamir_bytes_model(100, 200, parties=5)
    assert five.kernel == pytest.approx(three.kernel * 20 / 6)  # m(m-1) pairs
    assert five.intake == pytest.approx(three.intake * 4 / 2)  # m-1 receivers
    wide = costs.mpyc_shamir_bytes_model(100, 200, parties=3, field_bits=128)
    assert wide.total == pytest.approx(2 * three.total)


@pytest.mark.parametrize("call, message", [
    (lambda: costs.umpc_online_bits(0, 8), "n must be at least 1"),
    (lambda: costs.umpc_online_bits(2, 8, k=3), "k must not exceed n"),
    (lambda: costs.kernel_cost_bits("vus"), "no default cost for kernel 'vus'"),
    (lambda: costs.ghazi_bits(10, 0.0), "epsilon must be positive"),
    (lambda: costs.umpc_hf_bits(10, 20, honest_fraction=0.0), "honest_fraction"),
])
def test_validation_messages(call, message) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_scenario_quick(tmp_path) -> None:
    from scenarios.umpc_costs import CSV_NAME, main

    assert main(["--quick", "--results-dir", str(tmp_path)]) == 0
    with open(tmp_path / CSV_NAME, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["phase"] for row in rows} >= {"intake", "kernel", "noise", "reveal", "total"}
    assert all(int(row["paper_dis_bits"]) >= int(row["paper_hf_bits"]) for row in rows)
