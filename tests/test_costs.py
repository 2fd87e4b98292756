"""Cost formulas of dp.umpc.costs (hand-computed cases) and the umpc_costs scenario in --quick mode."""
from __future__ import annotations

import csv
import math

import pytest

from dp.umpc import costs


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
    assert costs.umpc_party_ops(10, 20, 2, kernel_ops=3.0) == 4 * 3 + 10
    small = costs.protocol_costs(4, 8, epsilon=1.0, t=2)
    assert (small["Bell"].party_ops, small["Bell"].server_ops, small["U-MPC (M_HF)"].server_ops) == (2, 6 * 4, 4)
    assert costs.protocol_costs(16, 32, epsilon=1.0, t=16)["GhaziSM"].party_ops == pytest.approx(16 * 16 * 4 + 16 * 4)


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
    from scenarios.papers.umpc_costs import CSV_NAME, main

    assert main(["--quick", "--results-dir", str(tmp_path)]) == 0
    with open(tmp_path / CSV_NAME, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["phase"] for row in rows} >= {"intake", "kernel", "noise", "reveal", "total"}
    assert all(int(row["paper_dis_bits"]) >= int(row["paper_hf_bits"]) for row in rows)


# --- Sinh & Ramon Table 1 / App. A.5, D.2: operation counts, computation, the protocol table ------------------

def test_paper_and_implementation_kernel_counts() -> None:
    """App. A.5.2 costs Gini with two FSS comparisons and one Beaver product; we evaluate one comparison."""
    assert costs.kernel_cost_bits("gini", 40, counts="paper") == 2 * 128 * 40 + 4 * 40 == 10400
    assert costs.kernel_cost_bits("gini", 40) == 128 * 40 + 4 * 40 == 5280
    assert costs.kernel_cost_bits("kendall", 40, counts="paper") == costs.kernel_cost_bits("kendall", 40)
    assert costs.kernel_cost_bits("auc", 40, counts="paper") == 4 * 128 * 40 + 2 * 4 * 40
    assert costs.umpc_hf_bits(10, 20, kernel="gini", counts="paper").kernel == 20 * 10400
    with pytest.raises(ValueError, match="unknown operation counts 'both'"):
        costs.kernel_cost_bits("gini", counts="both")


def test_kernel_party_ops_is_order_l() -> None:
    """C_f^T = comparisons * l + products (§6.2.2: O(l) operations per evaluation)."""
    assert costs.kernel_party_ops("kendall", 40) == 81
    assert costs.kernel_party_ops("gini", 40) == 41
    assert costs.kernel_party_ops("gini", 40, counts="paper") == 81
    assert costs.kernel_party_ops("duplicate", 40) == 40
    # the default C_f^T of umpc_party_ops is the kernel's, not 1 operation
    assert costs.umpc_party_ops(1000, 2000) == 4 * 81 + 1000
    assert costs.umpc_party_ops(1000, 2000, kernel="duplicate", bits=16) == 4 * 16 + 1000


def test_protocol_costs_hand_computed() -> None:
    """Gini, n = 1000, |E| = 2n, eps = 1, t = 256, l = 40, paper counts (Fig. 1-2 setting)."""
    table = costs.protocol_costs(1000, 2000, epsilon=1.0, t=256, bits=40, kernel="gini", counts="paper")
    assert tuple(table) == costs.PROTOCOLS
    sharing, kernel, aggregation = 2000 * 2 * 40, 2000 * 10400, 1000 * 40
    assert table["U-MPC (M_HF)"].comm_bits == sharing + kernel + 40 * 1000 * 40 + aggregation == 22_600_000
    assert table["U-MPC (M_Dis)"].comm_bits == sharing + kernel + 1000 ** 2 * 40 + aggregation == 61_000_000
    assert table["U-MPC (M_HF)"].party_ops == 4 * 81 + 1000
    assert table["U-MPC (M_HF)"].server_ops == 1000
    assert table["U-MPC (M_HF)"].total_ops == 1000 + 1000 * (4 * 81 + 1000)
    assert table["Bell"].comm_bits == 1000 * 40 * 256
    assert (table["Bell"].party_ops, table["Bell"].server_ops) == (256, 1000 * 999 // 2 * 256 ** 2)
    assert table["Ghazi"].comm_bits == pytest.approx(1000 ** 2 * 8 * 40)
    assert table["Ghazi"].party_ops == pytest.approx(1000 * 256 * 8)
    assert table["Ghazi"].server_ops == pytest.approx(1000 ** 2 * 8)
    log_n = math.log2(1000)
    assert table["GhaziSM"].comm_bits == pytest.approx(log_n * 1000 ** 2 * 8 * 40)
    assert table["GhaziSM"].party_ops == pytest.approx(1000 * 256 * 8 + 256 * log_n)
    assert table["GhaziSM"].server_ops == pytest.approx(log_n * 1000 ** 2 * 8)


def _slope(metric: str, protocol: str, n: int) -> float:
    """log2 growth of a cost from n to 2n (|E| = 2n, eps = 1, t = 256)."""
    low = getattr(costs.protocol_costs(n, 2 * n, epsilon=1.0, t=256, kernel="gini")[protocol], metric)
    high = getattr(costs.protocol_costs(2 * n, 4 * n, epsilon=1.0, t=256, kernel="gini")[protocol], metric)
    return math.log2(high / low)


@pytest.mark.parametrize("metric, protocol, exponent", [
    ("comm_bits", "U-MPC (M_HF)", 1), ("comm_bits", "U-MPC (M_Dis)", 2), ("comm_bits", "Bell", 1),
    ("comm_bits", "Ghazi", 2), ("party_ops", "U-MPC (M_HF)", 1), ("party_ops", "Bell", 0),
    ("party_ops", "Ghazi", 1), ("party_ops", "GhaziSM", 1), ("server_ops", "U-MPC (M_HF)", 1),
    ("server_ops", "Bell", 2), ("server_ops", "Ghazi", 2),
])
def test_table1_growth_in_n(metric: str, protocol: str, exponent: int) -> None:
    """Table 1's powers of n, read off as log2(cost(2n)/cost(n)) at n = 2^20 (lower-order terms < 1%)."""
    assert _slope(metric, protocol, 1 << 20) == pytest.approx(exponent, abs=0.01)


def test_table1_ghazi_sm_log_factor() -> None:
    """GhaziSM = log2(n) x Ghazi for communication and server work: slope 2 + log2(log2(2n) / log2(n))."""
    n = 1 << 20
    extra = math.log2(math.log2(2 * n) / math.log2(n))
    assert _slope("comm_bits", "GhaziSM", n) == pytest.approx(2 + extra, rel=1e-12)
    assert _slope("server_ops", "GhaziSM", n) == pytest.approx(2 + extra, rel=1e-12)


def test_paper_qualitative_cost_claims() -> None:
    """§6.2.1 (Fig. 1-2, Gini, t = 256): Bell sends least and computes least per party, U-MPC's server does least,
    U-MPC (M_HF) sends less than Ghazi; §6.2.2 (Fig. 3, Kendall, n = 4521): Ghazi sends more than U-MPC at eps = 1,
    less at eps = 0.1 (for t <= 64), and U-MPC's total computation is the lowest at t = 64."""
    for n in (500, 1000, 2000, 4000, 8000):
        table = costs.protocol_costs(n, 2 * n, epsilon=1.0, t=256, kernel="gini", counts="paper")
        assert min(table.values(), key=lambda c: c.comm_bits).protocol == "Bell"
        assert min(table.values(), key=lambda c: c.party_ops).protocol == "Bell"
        assert min(table.values(), key=lambda c: c.server_ops).protocol.startswith("U-MPC")
        assert table["U-MPC (M_HF)"].comm_bits < table["Ghazi"].comm_bits < table["GhaziSM"].comm_bits
    umpc = costs.umpc_hf_bits(4521, 9042, kernel="kendall").total
    for t in (4, 8, 16, 32, 64):
        assert costs.ghazi_bits(4521, 1.0, 40, t) > umpc > costs.ghazi_bits(4521, 0.1, 40, t)
    # Fig. 3 right: U-MPC has "the lowest overall computational cost ... when exceeding a certain t" (t = 64 here)
    for epsilon in (0.1, 1.0):
        table = costs.protocol_costs(4521, 9042, epsilon=epsilon, t=64, kernel="kendall")
        assert min(table.values(), key=lambda c: c.total_ops).protocol.startswith("U-MPC")
