"""U-MPC experiments (Sinh & Ramon Table 2, Fig. 1): quick runs in process, CSV, PNG, one numeric check each."""
from __future__ import annotations

import csv
import math
from pathlib import Path

from statistics import NormalDist

import numpy as np
import pytest

from dp.umpc.sampler_variance import duplicate_moments
from scenarios.papers import umpc_samplers, umpc_vs_baselines


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _is_png(path: Path) -> bool:
    return path.stat().st_size > 0 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def samplers_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("umpc_samplers")
    assert umpc_samplers.main(["--quick", "--seed", "5", "--results-dir", str(directory)]) == 0
    return directory


@pytest.fixture(scope="module")
def baselines_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("umpc_vs_baselines")
    assert umpc_vs_baselines.main(["--quick", "--seed", "5", "--results-dir", str(directory)]) == 0
    return directory


def test_samplers_quick_writes_csv_and_png(samplers_run: Path) -> None:
    header, rows = _read(samplers_run / "umpc_samplers.csv")
    assert tuple(header) == umpc_samplers.CSV_COLUMNS
    assert [row["sampler"] for row in rows] == [*umpc_samplers.SAMPLERS, umpc_samplers.HT_ROW]
    for row in rows:
        assert int(row["runs"]) == 40 and int(row["n"]) == 800 and int(row["edges"]) == 1600
        assert math.isfinite(float(row["mse_mean"])) and float(row["mse_se"]) > 0
    assert _is_png(samplers_run / "umpc_samplers.png")


def test_balanced_below_lemma_d3_bound(samplers_run: Path) -> None:
    """BalancedSamp's MSE stays below Lemma D.3's bound (DP term x m/(m-t)) + 3 s.e."""
    _, rows = _read(samplers_run / "umpc_samplers.csv")
    balanced = next(row for row in rows if row["sampler"] == "balanced")
    assert float(balanced["mse_mean"]) < float(balanced["lemma_d3_bound_coalition"]) + 3 * float(balanced["mse_se"])
    # BalancedSamp's largest degree is certain: ceil(2|E|/n) = 4
    assert float(balanced["mean_max_degree"]) == 4.0


def test_baselines_quick_writes_csv_and_png(baselines_run: Path) -> None:
    header, rows = _read(baselines_run / "umpc_vs_baselines.csv")
    assert tuple(header) == umpc_vs_baselines.CSV_COLUMNS
    assert len(rows) == 2 * len(umpc_vs_baselines.METHODS)
    assert {int(row["n"]) for row in rows} == {200, 400}
    for row in rows:
        assert int(row["runs"]) == 30 and math.isfinite(float(row["mse_mean"])) and float(row["mse_se"]) > 0
        assert all(float(row[c]) > 0 for c in ("comm_bits", "party_ops", "server_ops", "total_ops"))
    assert _is_png(baselines_run / "umpc_vs_baselines.png")


def test_baselines_cost_columns_are_table1_models(baselines_run: Path) -> None:
    """Fig. 1 left / Fig. 2 columns equal dp.umpc.costs.protocol_costs (Gini, paper counts, |E| = 2n, quick t = 64)."""
    from dp.umpc.costs import protocol_costs

    _, rows = _read(baselines_run / "umpc_vs_baselines.csv")
    for row in rows:
        n = int(row["n"])
        table = protocol_costs(n, 2 * n, epsilon=1.0, t=64, bits=40, kernel="gini", counts="paper")
        cost = table[umpc_vs_baselines.COST_PROTOCOL[row["method"]]]
        assert float(row["comm_bits"]) == pytest.approx(cost.comm_bits)
        assert float(row["party_ops"]) == pytest.approx(cost.party_ops)
        assert float(row["server_ops"]) == pytest.approx(cost.server_ops)
        if row["method"] == "U-MPC":
            assert float(row["comm_bits_dis"]) == pytest.approx(table["U-MPC (M_Dis)"].comm_bits)
        else:
            assert math.isnan(float(row["comm_bits_dis"]))


def test_umpc_beats_bell_and_meets_bound(baselines_run: Path) -> None:
    """U-MPC's MSE is below Bell's by more than 3 s.e., and below Lemma D.3 (x m/(m-t)) + 3 s.e."""
    _, rows = _read(baselines_run / "umpc_vs_baselines.csv")
    for n in (200, 400):
        at = {row["method"]: row for row in rows if int(row["n"]) == n}
        umpc, bell = at["U-MPC"], at["Bell LDP"]
        gap = float(bell["mse_mean"]) - float(umpc["mse_mean"])
        assert gap > 3 * math.hypot(float(bell["mse_se"]), float(umpc["mse_se"]))
        assert float(umpc["mse_mean"]) < float(umpc["lemma_d3_bound_coalition"]) + 3 * float(umpc["mse_se"])


def test_exact_statistics() -> None:
    values = np.array([0.1, 0.5, 0.2, 0.9])
    brute = np.mean([abs(a - b) for i, a in enumerate(values) for b in values[i + 1:]])
    assert umpc_vs_baselines.exact_gini(values) == pytest.approx(brute)
    cats = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    assert duplicate_moments(cats).mean == pytest.approx(3 / 10)


def test_lemma_d3_bound_formula() -> None:
    n, edges = 100, 200
    pairs = n * (n - 1) / 2
    expected = (pairs - edges) / (4 * edges * (pairs - 1)) + 8 / n ** 2
    assert umpc_samplers.lemma_d3_bound(n=n, edges=edges, epsilon=1.0) == pytest.approx(expected)


def test_bad_options_rejected() -> None:
    from scenarios.kit.cli import UsageError

    with pytest.raises(UsageError):
        umpc_samplers.parse_options(["--parties", "3", "--coalition", "2"])
    with pytest.raises(UsageError):
        umpc_vs_baselines.parse_options(["--ldp-bins", "1"])
    with pytest.raises(UsageError, match="not both"):
        umpc_samplers.parse_options(["--edges-per-row", "2", "--edges-fraction", "0.5"])
    with pytest.raises(UsageError, match="--data"):
        umpc_samplers.parse_options(["--data", "bank"])
    with pytest.raises(UsageError, match="--kernel-counts"):
        umpc_vs_baselines.parse_options(["--kernel-counts", "both"])


# --- Table 2: the exact decomposition E_inc + E_DP of dp.umpc.sampler_variance --------------------------------------

#: the two-sided normal quantile of a 99.9 % family-wise interval over the 4 rows of the samplers table
#: (Bonferroni): each row's paired mean difference is within this many standard errors of 0
Z_FAMILY = NormalDist().inv_cdf(1 - 0.001 / (2 * 4))


@pytest.fixture(scope="module")
def bank_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("umpc_samplers_bank")
    argv = ["--quick", "--data", "bank-job", "--runs", "300", "--seed", "7",
            "--results-dir", str(directory)]
    assert umpc_samplers.main(argv) == 0
    return directory


def test_measured_mse_matches_exact_decomposition(bank_run: Path) -> None:
    """Every sampler's measured MSE agrees with E_inc + E_DP(E): per run err^2 - E_inc - E_DP(E) has mean 0, so its
    mean lies within the family-wise normal interval (paired s.e. over runs, plus the Monte Carlo s.e. of
    BalancedSamp's E_inc)."""
    _, rows = _read(bank_run / "umpc_samplers.csv")
    assert [row["sampler"] for row in rows] == [*umpc_samplers.SAMPLERS, "bernoulli-ht"]
    for row in rows:
        assert int(row["n"]) == 800 and int(row["edges"]) == 1600 and int(row["runs"]) == 300
        assert abs(float(row["z"])) < Z_FAMILY, (row["sampler"], row["z"])
        assert float(row["theory"]) == pytest.approx(float(row["inc_theory"]) + float(row["dp_theory"]))


def test_sampler_theory_columns(bank_run: Path) -> None:
    """Exact E_inc columns follow dp.umpc.sampler_variance on the stand-in's first 800 rows; degrees as expected."""
    from dp.umpc import sampler_variance as sv

    _, rows = _read(bank_run / "umpc_samplers.csv")
    by = {row["sampler"]: row for row in rows}
    moments = sv.duplicate_moments(umpc_samplers.bank_job_standin(800))
    assert float(by["uniform"]["inc_theory"]) == pytest.approx(sv.uniform_inc(moments, 1600))
    assert float(by["bernoulli"]["inc_theory"]) == pytest.approx(sv.bernoulli_inc(moments, 1600))
    assert float(by["bernoulli-ht"]["inc_theory"]) == pytest.approx(sv.bernoulli_inc(moments, 1600, estimator="ht"))
    assert float(by["balanced"]["mean_max_degree"]) == 4.0 and int(by["balanced"]["degree_bound"]) == 4
    # E_DP at BalancedSamp's certain degree 4, m/(m-t) = 3/2
    assert float(by["balanced"]["dp_theory"]) == pytest.approx(sv.dp_variance(4, 1600, 1.0, parties=3, threshold=1))
    assert float(by["bernoulli-ht"]["mean_edges"]) == float(by["bernoulli"]["mean_edges"])


def test_bank_job_standin_counts() -> None:
    values = umpc_samplers.bank_job_standin()
    _, counts = np.unique(values, return_counts=True)
    assert values.shape == (4521,) and list(counts) == list(umpc_samplers.BANK_JOB_COUNTS.values())
    assert duplicate_moments(values).mean == pytest.approx(0.14551532, rel=1e-6)


_SMALL = np.array([0, 0, 1, 1, 1, 2, 0, 2])  # n = 8, N = 28 pairs


def _pair_values(values: np.ndarray) -> np.ndarray:
    first, second = np.triu_indices(values.size, 1)
    return (values[first] == values[second]).astype(float)


def test_uniform_inc_is_claim_d1_by_enumeration() -> None:
    """Claim D.1, exactly: the mean of (U_E - U)^2 over all C(28, 4) subsets of 4 pairs."""
    from itertools import combinations

    from dp.umpc import sampler_variance as sv

    f = _pair_values(_SMALL)
    moments = sv.duplicate_moments(_SMALL)
    subsets = np.array(list(combinations(range(f.size), 4)))
    squares = (f[subsets].mean(axis=1) - f.mean()) ** 2
    assert sv.uniform_inc(moments, 4) == pytest.approx(float(np.mean(squares)), rel=1e-12)
    assert moments.variance == pytest.approx(float(f.var()), rel=1e-12)


def test_bernoulli_inc_by_enumeration() -> None:
    """Bernoulli(q) over all 2^N subsets of N = 15 pairs (n = 6): the ratio estimator conditioned on a non-empty
    set, and Horvitz-Thompson (unconditioned), against the closed forms."""
    from dp.umpc import sampler_variance as sv

    values = _SMALL[:6]
    f = _pair_values(values)
    pairs, m = f.size, 4
    q = m / pairs
    masks = ((np.arange(1 << pairs)[:, None] >> np.arange(pairs)) & 1).astype(bool)
    sizes = masks.sum(axis=1)
    weights = q ** sizes * (1 - q) ** (pairs - sizes)
    sums = masks.astype(float) @ f
    moments = sv.duplicate_moments(values)
    nonempty = sizes > 0
    ratio = np.sum(weights[nonempty] * (sums[nonempty] / sizes[nonempty] - f.mean()) ** 2) / weights[nonempty].sum()
    assert sv.bernoulli_inc(moments, m) == pytest.approx(ratio, rel=1e-10)
    ht = np.sum(weights * (sums / (q * pairs) - f.mean()) ** 2)
    assert sv.bernoulli_inc(moments, m, estimator="ht") == pytest.approx(ht, rel=1e-10)


def test_pair_moments_generic_matches_counts() -> None:
    from dp.umpc import sampler_variance as sv

    generic = sv.pair_moments(_SMALL, lambda a, b: (a == b).astype(float))
    counted = sv.duplicate_moments(_SMALL)
    for name in ("mean", "mean_square", "projection_variance"):
        assert getattr(generic, name) == pytest.approx(getattr(counted, name), rel=1e-12)


def test_balanced_removes_the_projection_exactly_for_an_additive_kernel() -> None:
    """f(x, y) = (x + y)/2 is additive (no residual beyond the projection): with equal degrees d (n divides 2m)
    sum_E f = d/2 sum_i x_i, so BalancedSamp gives U_E = U on every draw, while uniform sampling does not."""
    from dp.umpc import sampler_variance as sv
    from dp.sampling import balanced_tuples, uniform_tuples

    x = np.random.default_rng(3).uniform(size=40)
    exact = float(x.mean())  # the U-statistic of (x + y)/2

    def statistic(tuples: np.ndarray) -> float:
        return float(np.mean((x[tuples[:, 0]] + x[tuples[:, 1]]) / 2))

    balanced, _ = sv.monte_carlo_inc(statistic, lambda r: balanced_tuples(40, 60, 2, r), exact,
                                     np.random.default_rng(4), 20)
    uniform, _ = sv.monte_carlo_inc(statistic, lambda r: uniform_tuples(40, 60, 2, r), exact,
                                    np.random.default_rng(4), 20)
    assert balanced < 1e-28 < uniform


def test_dp_variance_and_degree_bound() -> None:
    from scipy import stats

    from dp.umpc import sampler_variance as sv

    alpha = math.exp(-1 / 4)
    assert sv.dp_variance(4, 100, 1.0, parties=3, threshold=1) == pytest.approx(
        1.5 * 2 * alpha / (1 - alpha) ** 2 / 100 ** 2, rel=1e-12)
    # continuous Laplace limit 2 (d / eps)^2 / |E|^2 (Claim D.2), discrete correction -1/6 on 2 d^2
    assert sv.dp_variance(100, 1000, 1.0) == pytest.approx(2 * 100 ** 2 / 1000 ** 2, rel=1e-4)
    n, m, failure = 1000, 2000, 1e-9
    bound = sv.degree_bound(n, m, failure=failure)
    q = m / (n * (n - 1) / 2)
    assert n * stats.binom.sf(bound, n - 1, q) <= failure < n * stats.binom.sf(bound - 1, n - 1, q)
