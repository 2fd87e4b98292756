"""Tests for :mod:`dp.ecdf.hosmer_lemeshow` (Algorithm 2, Theorem 2) and :mod:`scenarios.papers.hosmer_lemeshow` (Fig. 6).

Statistical assertions use fixed seeds and thresholds derived from the noise distribution:
Chebyshev bounds (``P(|X - EX| >= k sd) <= 1/k^2``) and a 99.9 % normal interval for a sample
variance with the exact kurtosis of the noise; no number is tuned to the seed.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from conftest import run_command, scenario_command
from dp.calibration import discrete_laplace_variance
from dp.ecdf.grid import node_count
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, private_hosmer_lemeshow
from dp.ecdf.hosmer_lemeshow_release import HosmerLemeshowBudget
from dp.ecdf.hosmer_lemeshow_statistic import (empty_groups, exact_hosmer_lemeshow, group_statistics,
                                               hosmer_lemeshow_terms, hosmer_lemeshow_test, relative_squared_error)

Z_999 = stats.norm.ppf(0.9995)  # two-sided 99.9 % normal quantile
CHEBYSHEV_K = 10.0              # P(|linear error| >= 10 sd) <= 1 %


def _lattice_data(rows: int, denominator: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities on the lattice ``k / denominator`` in ``[4/64, 60/64]`` and slightly miscalibrated labels."""
    generator = np.random.default_rng(seed)
    low, high = denominator // 16, denominator - denominator // 16
    probabilities = generator.integers(low, high + 1, size=rows) / denominator
    labels = (generator.random(rows) < np.clip(1.1 * probabilities - 0.02, 0, 1)).astype(np.int64)
    return probabilities, labels


def _direct_hl(probabilities: np.ndarray, labels: np.ndarray, groups: int) -> float:
    """Textbook HL with scalar loops: sort, cut into ``groups`` consecutive blocks of equal size."""
    order = np.argsort(probabilities, kind="stable")
    size = len(order) // groups
    total = 0.0
    for g in range(groups):
        block = order[g * size:(g + 1) * size]
        expected_pos = sum(probabilities[i] for i in block)
        expected_neg = sum(1.0 - probabilities[i] for i in block)
        observed_pos = sum(int(labels[i]) for i in block)
        observed_neg = len(block) - observed_pos
        total += (observed_pos - expected_pos) ** 2 / expected_pos
        total += (observed_neg - expected_neg) ** 2 / expected_neg
    return total


# --------------------------------------------------------------------------------------------------
# the exact statistic

def test_exact_statistic_on_a_hand_made_example() -> None:
    probabilities = np.array([0.8, 0.1, 0.4, 0.2, 0.6, 0.3])
    labels = np.array([1, 0, 0, 1, 1, 0])
    result = exact_hosmer_lemeshow(probabilities, labels, groups=3)
    # groups {0.1, 0.2}, {0.3, 0.4}, {0.6, 0.8}: E1 = 0.3, 0.7, 1.4; O1 = 1, 0, 2; E0 = 1.7, 1.3, 0.6; O0 = 1, 2, 0
    by_hand = (0.49 / 0.3 + 0.49 / 1.7) + (0.49 / 0.7 + 0.49 / 1.3) + (0.36 / 1.4 + 0.36 / 0.6)
    assert result.statistic == pytest.approx(by_hand, rel=1e-12)
    assert result.degrees_of_freedom == 1
    assert result.p_value == pytest.approx(stats.chi2.sf(by_hand, 1), rel=1e-12)
    np.testing.assert_allclose(result.boundaries, [0.0, 0.2, 0.4, 1.0])
    np.testing.assert_array_equal(result.observed, [[1, 2, 0], [1, 0, 2]])
    np.testing.assert_allclose(result.expected, [[1.7, 1.3, 0.6], [0.3, 0.7, 1.4]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_statistic_equals_a_direct_implementation(seed: int) -> None:
    generator = np.random.default_rng(seed)
    probabilities = generator.permutation(np.linspace(0.02, 0.9, 500))  # distinct: quantile groups = blocks
    labels = (generator.random(500) < probabilities).astype(int)
    result = exact_hosmer_lemeshow(probabilities, labels, groups=10)
    assert result.statistic == pytest.approx(_direct_hl(probabilities, labels, 10), rel=1e-12)
    assert result.observed.sum() == 500 and np.all(result.observed.sum(axis=0) == 50)


def test_exact_statistic_with_ties_leaves_groups_empty() -> None:
    probabilities = np.full(40, 0.25)
    labels = np.array([1] * 12 + [0] * 28)
    result = exact_hosmer_lemeshow(probabilities, labels, groups=4)
    # every boundary is 0.25, so all rows fall in the first group and the others are empty (add 0)
    assert result.observed[:, 1:].sum() == 0
    assert result.statistic == pytest.approx((12 - 10) ** 2 / 10 + (28 - 30) ** 2 / 30, rel=1e-12)


def test_statistic_exact_and_floored_modes() -> None:
    expected = np.array([[0.0, 2.0], [0.0, 4.0]])
    observed = np.array([[0, 3], [0, 4]])
    no_empty = np.zeros(2, dtype=bool)
    exact = hosmer_lemeshow_test(expected, observed, no_empty)
    assert (exact.statistic, exact.floored) == (pytest.approx(0.5), 0)
    assert hosmer_lemeshow_test(expected, np.array([[1, 3], [0, 4]]), no_empty).statistic == math.inf
    # private mode: E below the floor is raised to it, negative O to 0
    private = hosmer_lemeshow_test(np.array([[-3.0, 2.0], [0.5, 4.0]]), np.array([[-2, 3], [1, 4]]), no_empty, floor=1.0)
    assert private.floored == 2
    assert private.statistic == pytest.approx((0 - 1) ** 2 / 1 + (3 - 2) ** 2 / 2 + (1 - 1) ** 2 / 1 + 0.0)


# --------------------------------------------------------------------------------------------------
# budget (Theorem 2) and sensitivity

@pytest.mark.parametrize("epsilon, points", [(1.0, 1024), (0.3, 64), (7.0, 4), (2.5, 65536)])
def test_budget_parts_add_up_to_epsilon(epsilon: float, points: int) -> None:
    query = HosmerLemeshowQuery(epsilon=epsilon, grid_points=points, groups=min(10, points))
    depth = int(math.log2(points))
    budget = query.budget
    assert query.depth == depth
    assert budget.epsilon_prime == pytest.approx(epsilon / (depth + 9), rel=1e-15)
    assert budget.ecdf_epsilon == pytest.approx((depth + 1) * epsilon / (depth + 9), rel=1e-15)
    assert budget.statistics_epsilon == pytest.approx(8 * epsilon / (depth + 9), rel=1e-15)
    assert budget.ecdf_epsilon + budget.statistics_epsilon == pytest.approx(epsilon, rel=1e-12)
    # ECDF: (L + 1) eps' over L + 1 nodes per change, i.e. node scale 1/eps'
    plan = query.tree_plan()
    assert plan.epsilon == pytest.approx(budget.ecdf_epsilon, rel=1e-15)
    assert plan.node_scale == pytest.approx(1 / budget.epsilon_prime, rel=1e-12)
    # paper accounting: each statistic eps'-DP for its own sensitivity (2^b for E, 1 for O)
    assert query.observed_log_alpha == pytest.approx(-budget.epsilon_prime, rel=1e-15)
    assert query.expected_log_alpha == pytest.approx(-budget.epsilon_prime / 2**16, rel=1e-15)
    assert query.statistics_loss_bound == pytest.approx(4 * budget.epsilon_prime)
    assert query.statistics_loss_bound <= budget.statistics_epsilon
    # joint accounting: the same 8 eps' on the joint sensitivity 4
    joint = HosmerLemeshowQuery(epsilon=epsilon, grid_points=points, groups=min(10, points), accounting="joint")
    assert joint.budget == budget
    assert joint.observed_log_alpha == pytest.approx(-2 * budget.epsilon_prime, rel=1e-15)
    assert joint.statistics_loss_bound == pytest.approx(budget.statistics_epsilon, rel=1e-15)


def test_one_replaced_row_moves_the_statistics_within_the_stated_sensitivity() -> None:
    """At most 8 of the 4Q statistics change, each by its own sensitivity; weighted L1 <= 4 (= 4 across groups)."""
    generator = np.random.default_rng(11)
    scale, rows, groups = 2**6, 30, 5
    across = 0
    for _ in range(2000):
        bounds = np.sort(generator.integers(0, scale + 1, size=groups - 1))
        fixed = generator.choice(np.concatenate([bounds, generator.integers(0, scale + 1, size=8)]), size=rows)
        labels = generator.integers(0, 2, size=rows)
        e1, o1 = group_statistics(fixed, labels, bounds, scale=scale)
        row = int(generator.integers(rows))
        fixed2, labels2 = fixed.copy(), labels.copy()
        fixed2[row] = generator.choice([int(generator.integers(0, scale + 1)), int(bounds[generator.integers(groups - 1)])])
        labels2[row] = generator.integers(0, 2)
        e2, o2 = group_statistics(fixed2, labels2, bounds, scale=scale)
        d_e, d_o = e2 - e1, o2 - o1
        assert np.count_nonzero(d_e) + np.count_nonzero(d_o) <= 8
        assert np.abs(d_e).max() <= scale and np.abs(d_o).max() <= 1
        weighted = np.abs(d_e).sum() / scale + np.abs(d_o).sum()
        assert weighted <= 4 + 1e-12
        first = np.searchsorted(bounds, fixed[row], side="left")
        second = np.searchsorted(bounds, fixed2[row], side="left")
        if first != second:
            across += 1
            assert weighted == pytest.approx(4.0)
    assert across > 100


# --------------------------------------------------------------------------------------------------
# the private statistic

def test_with_zero_noise_the_private_statistic_is_the_exact_one() -> None:
    probabilities, labels = _lattice_data(1500, 64, seed=3)
    query = HosmerLemeshowQuery(epsilon=1.0, grid_points=64)
    zeros = np.zeros((2, 10), dtype=np.int64)
    release = private_hosmer_lemeshow(probabilities, labels, query, node_noise=np.zeros(node_count(64), dtype=np.int64),
                                      expected_noise=zeros, observed_noise=zeros)
    exact = exact_hosmer_lemeshow(probabilities, labels)
    np.testing.assert_array_equal(release.boundaries, exact.boundaries)
    np.testing.assert_array_equal(release.observed, exact.observed)
    np.testing.assert_allclose(release.expected, exact.expected, rtol=1e-13)
    assert release.statistic == pytest.approx(exact.statistic, rel=1e-12)
    assert release.p_value == pytest.approx(exact.p_value, rel=1e-9)
    assert release.floored == 0


@pytest.mark.parametrize("epsilon, parties, threshold", [(1e3, 1, 0), (1e4, 1, 0), (3e3, 3, 1)])
def test_with_huge_epsilon_the_private_statistic_converges(epsilon: float, parties: int, threshold: int) -> None:
    """Same groups as the exact statistic, and ``|H_priv - H| <= k sd_lin + Taylor remainder``.

    The ECDF and count noise are exactly 0 except with probability below ``count * 2 m alpha``
    (checked to be negligible).  The expected counts carry noise ``z`` of known variance ``v``;
    ``H`` moves by ``sum g_c z_c`` to first order with ``g_c = 1 - O_c^2 / E_c^2`` (so sd
    ``sqrt(v sum g_c^2)``; Chebyshev with ``k = 10``), plus a remainder at most
    ``sum O_c^2 z_c^2 / min(E_c, E_c + z_c)^3`` (mean-value form of ``d^2/dE^2 (O-E)^2/E = 2 O^2/E^3``).
    """
    probabilities, labels = _lattice_data(2000, 64, seed=5)
    query = HosmerLemeshowQuery(epsilon=epsilon, grid_points=64)
    nodes = node_count(64)
    zero_probability = (nodes + 40) * 2 * parties * math.exp(query.observed_log_alpha)
    assert zero_probability < 1e-20
    release = private_hosmer_lemeshow(probabilities, labels, query, parties=parties, threshold=threshold,
                                      rng=np.random.default_rng(17))
    exact = exact_hosmer_lemeshow(probabilities, labels)
    np.testing.assert_array_equal(release.boundaries, exact.boundaries)
    np.testing.assert_array_equal(release.observed, exact.observed)
    expected, observed = exact.expected, exact.observed.astype(float)
    assert expected.min() > query.expected_floor  # no flooring at the truth
    variance = query.expected_noise_variance(parties=parties, threshold=threshold)
    assert release.expected_noise_variance == variance
    gradient = 1.0 - observed**2 / expected**2
    linear_sd = math.sqrt(variance * float(np.sum(gradient**2)))
    noise = release.expected - expected
    remainder = float(np.sum(observed**2 * noise**2 / np.minimum(expected, release.expected) ** 3))
    error = abs(release.statistic - exact.statistic)
    assert error <= CHEBYSHEV_K * linear_sd + remainder
    assert abs(float(np.sum(gradient * noise))) <= CHEBYSHEV_K * linear_sd
    assert relative_squared_error(release.statistic, exact.statistic) <= (
        (CHEBYSHEV_K * linear_sd + remainder) / exact.statistic) ** 2


def test_group_statistic_noise_has_the_calibrated_variance_for_three_parties() -> None:
    """Released minus true statistics: sample variances within 99.9 % intervals of ``m/(m-t)`` x DLap."""
    probabilities, labels = _lattice_data(800, 64, seed=8)
    parties, threshold, runs = 3, 1, 150
    query = HosmerLemeshowQuery(epsilon=5.0, grid_points=64)
    generator = np.random.default_rng(23)
    expected_noise, observed_noise = [], []
    for _ in range(runs):
        release = private_hosmer_lemeshow(probabilities, labels, query, parties=parties, threshold=threshold,
                                          rng=generator)
        bounds = np.rint(release.boundaries[1:-1] * query.scale).astype(np.int64)
        true_e, true_o = group_statistics(query.spec.encode(probabilities), labels, bounds, scale=query.scale)
        expected_noise.append(np.rint(release.expected * query.scale).astype(np.int64) - true_e)
        observed_noise.append(release.observed - true_o)
    total_shape = parties / (parties - threshold)
    for samples, log_alpha, variance in [
        (np.concatenate(expected_noise).ravel(), query.expected_log_alpha,
         query.expected_noise_variance(parties=parties, threshold=threshold) * query.scale**2),
        (np.concatenate(observed_noise).ravel(), query.observed_log_alpha,
         query.observed_noise_variance(parties=parties, threshold=threshold)),
    ]:
        alpha = math.exp(log_alpha)
        assert variance == pytest.approx(total_shape * discrete_laplace_variance(alpha), rel=1e-9)
        # total noise = NB(R, alpha) - NB(R, alpha), R = m/(m-t): kurtosis 3 + (6/R + (1-alpha)^2/(R alpha)) / 2
        kurtosis = 3.0 + (6.0 / total_shape + (1 - alpha) ** 2 / (total_shape * alpha)) / 2.0
        spread = Z_999 * math.sqrt((kurtosis - 1.0) / samples.size)
        ratio = float(np.mean(samples.astype(float) ** 2)) / variance
        assert abs(ratio - 1.0) <= spread


def test_smoothed_boundaries_and_release_contents() -> None:
    probabilities, labels = _lattice_data(1200, 64, seed=4)
    raw = private_hosmer_lemeshow(probabilities, labels, HosmerLemeshowQuery(epsilon=2.0, grid_points=64),
                                  rng=np.random.default_rng(1))
    smooth = private_hosmer_lemeshow(probabilities, labels, HosmerLemeshowQuery(epsilon=2.0, grid_points=64, smoothed=True),
                                     rng=np.random.default_rng(1))
    assert raw.smoothed_ecdf is None and smooth.smoothed_ecdf is not None
    np.testing.assert_array_equal(raw.ecdf, smooth.ecdf)  # same seed: same released ECDF
    assert np.all(np.diff(smooth.smoothed_ecdf) >= -1e-12)
    for release in (raw, smooth):
        assert release.boundaries[0] == 0.0 and release.boundaries[-1] == 1.0
        assert np.all(np.diff(release.boundaries) >= 0)
        assert np.all(np.isin(release.boundaries[1:-1], release.grid))
        assert release.expected.shape == release.observed.shape == (2, 10)
        assert release.degrees_of_freedom == 8 and release.n == 1200 and release.epsilon == 2.0
        assert math.isfinite(release.statistic) and 0.0 <= release.p_value <= 1.0


# --------------------------------------------------------------------------------------------------
# validation

@pytest.mark.parametrize("arguments, message", [
    ({"epsilon": 0}, "epsilon must be positive, got 0"),
    ({"epsilon": -1.5}, "epsilon must be positive, got -1.5"),
    ({"epsilon": 1.0, "groups": 2}, "groups must be at least 3, got 2"),
    ({"epsilon": 1.0, "grid_points": 1000}, "grid_points must be a power of two, got 1000"),
    ({"epsilon": 1.0, "grid_points": 1}, "grid_points must be at least 2, got 1"),
    ({"epsilon": 1.0, "grid_points": 2**17}, "grid_points must be at most 2**precision = 65536, got 131072"),
    ({"epsilon": 1.0, "precision": 30}, "precision must lie in [1, 24], got 30"),
    ({"epsilon": 1.0, "norm": 3}, "norm must be 1 or 2, got 3"),
    ({"epsilon": 1.0, "accounting": "tight"}, "accounting must be one of paper, joint, got 'tight'"),
    ({"epsilon": 1.0, "expected_floor": 0}, "expected_floor must be positive, got 0"),
])
def test_query_validation_messages(arguments: dict, message: str) -> None:
    epsilon = arguments.pop("epsilon")
    with pytest.raises(ValueError) as caught:
        HosmerLemeshowQuery(epsilon=epsilon, **arguments)
    assert str(caught.value) == message


@pytest.mark.parametrize("probabilities, labels, keywords, message", [
    ([0.2, 1.5], [0, 1], {}, "probabilities must lie in [0, 1], got 1.5"),
    ([0.2, float("nan")], [0, 1], {}, "probabilities must be finite"),
    ([], [], {}, "probabilities must contain at least one row, got 0"),
    ([0.2, 0.4], [0, 2], {}, "labels must be 0 or 1, got 2"),
    ([0.2, 0.4], [0, 1, 1], {}, "labels must be one-dimensional with one entry per row (2), got shape (3,)"),
    ([0.2, 0.4], [0, 1], {"parties": 3, "threshold": 2},
     "threshold must be below half the number of parties (3), got 2"),
    ([0.2, 0.4], [0, 1], {"parties": 0}, "parties must be at least 1, got 0"),
])
def test_private_validation_messages(probabilities: list, labels: list, keywords: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        private_hosmer_lemeshow(np.array(probabilities, dtype=float), np.array(labels), HosmerLemeshowQuery(epsilon=1.0),
                                **keywords)
    assert str(caught.value) == message


def test_other_validation_messages() -> None:
    with pytest.raises(ValueError, match=r"^groups must be at least 3, got 2$"):
        exact_hosmer_lemeshow([0.1, 0.2, 0.3], [0, 1, 0], groups=2)
    with pytest.raises(ValueError, match=r"^exact must be non-zero, got 0$"):
        relative_squared_error(1.0, 0.0)
    with pytest.raises(ValueError, match=r"^epsilon must be positive, got 0$"):
        HosmerLemeshowBudget(0, 4)
    with pytest.raises(ValueError, match=r"^expected_noise must have shape \(2, 10\), got \(2, 3\)$"):
        private_hosmer_lemeshow([0.1, 0.2], [0, 1], HosmerLemeshowQuery(epsilon=1.0),
                                expected_noise=np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(TypeError, match=r"^query must be a HosmerLemeshowQuery, got dict$"):
        private_hosmer_lemeshow([0.1, 0.2], [0, 1], {})  # type: ignore[arg-type]
    assert relative_squared_error(12.0, 10.0) == pytest.approx(0.04)


# --------------------------------------------------------------------------------------------------
# the scenario (Fig. 6)

def _read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_scenario_quick_mode_writes_csv_and_png(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.papers.hosmer_lemeshow import CSV_NAME, PNG_NAME, QUICK_EPSILONS, QUICK_RUNS, main

    assert main(["--quick", "--results-dir", str(tmp_path)]) == 0
    rows = _read_rows(tmp_path / CSV_NAME)
    assert len(rows) == 2 * len(QUICK_EPSILONS)
    assert {row["accounting"] for row in rows} == {"paper", "joint"}
    assert sorted({float(row["epsilon"]) for row in rows}) == sorted(QUICK_EPSILONS)
    for row in rows:
        assert int(row["runs"]) == QUICK_RUNS and float(row["relative_mse"]) >= 0
        assert float(row["ecdf_epsilon"]) + float(row["statistics_epsilon"]) == pytest.approx(float(row["epsilon"]))
    assert (tmp_path / PNG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "stand-in for the paper's Bank" in out and "exact HL" in out and "p-value" in out


def test_scenario_bad_usage_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.papers.hosmer_lemeshow import main

    assert main(["--quick", "--runs", "0", "--results-dir", str(tmp_path)]) == 2
    assert "--runs must be at least 1, got 0" in capsys.readouterr().err
    assert main(["--quick", "--points", "1000", "--results-dir", str(tmp_path)]) == 2
    assert "grid_points must be a power of two, got 1000" in capsys.readouterr().err


@pytest.mark.multiparty
def test_scenario_quick_mode_with_three_parties(tmp_path: Path) -> None:
    from scenarios.papers.hosmer_lemeshow import CSV_NAME

    run = run_command(scenario_command("papers.hosmer_lemeshow", "-M3", "--no-log", "--quick", "--runs", "2",
                                       "--results-dir", str(tmp_path)))
    assert run.code == 0, run.stderr
    rows = _read_rows(tmp_path / CSV_NAME)
    assert {(int(row["parties"]), int(row["threshold"])) for row in rows} == {(3, 1)}
    assert "relative MSE vs epsilon" in run.stdout


# --------------------------------------------------------------------------------------------------
# groups empty by construction (equal boundaries)

def test_more_groups_than_grid_points_is_refused() -> None:
    with pytest.raises(ValueError, match=r"groups must be at most grid_points = 16 .* got 20"):
        HosmerLemeshowQuery(epsilon=1.0, groups=20, grid_points=16)
    HosmerLemeshowQuery(epsilon=1.0, groups=16, grid_points=16)  # the largest allowed


def test_empty_groups_are_read_from_the_boundaries_alone() -> None:
    # Q = 6: groups (<= 2], (2, 2], (2, 5], (5, 5], (5, 8], (> 8) with top 8
    assert empty_groups(np.array([2, 2, 5, 5, 8]), top=8).tolist() == [False, True, False, True, False, True]
    assert empty_groups(np.array([0, 1, 2]), top=8).tolist() == [False, False, False, False]  # (<= 0] may hold 0


def test_empty_groups_are_left_out_of_h_and_of_the_degrees_of_freedom() -> None:
    """The reviewer's case: Q = N = 16 at epsilon = 1e9 puts several released boundaries on the same grid point.
    Their groups hold no row; they are left out, so H is the exact eq. (5) over the other groups at the released
    boundaries, with Q' - 2 degrees of freedom -- not inflated by about 2 per empty group (each empty group's two
    noisy E raised to the floor of 1 against O = 0)."""
    probabilities, labels = _lattice_data(3000, 64, seed=21)
    probabilities = np.minimum(probabilities, 0.6)  # a point mass: many quantiles fall on 0.6
    query = HosmerLemeshowQuery(epsilon=1e9, groups=16, grid_points=16, precision=6)
    release = private_hosmer_lemeshow(probabilities, labels, query, rng=np.random.default_rng(3))
    bounds = np.rint(release.boundaries[1:-1] * query.scale).astype(np.int64)
    empty = empty_groups(bounds, top=query.scale)
    assert empty.sum() >= 3 and release.empty.tolist() == empty.tolist()
    assert release.degrees_of_freedom == 16 - int(empty.sum()) - 2
    fixed_e, fixed_o = group_statistics(query.spec.encode(probabilities), labels, bounds, scale=query.scale)
    assert np.all(fixed_o[:, empty] == 0) and np.all(fixed_e[:, empty] == 0)  # empty whatever the rows
    kept = ~empty
    e, o = np.maximum(fixed_e[:, kept] / query.scale, query.expected_floor), fixed_o[:, kept]  # eq. 5, floored
    by_hand = float(np.sum((o - e) ** 2 / e))
    assert release.statistic == pytest.approx(by_hand, rel=1e-6)
    assert release.p_value == pytest.approx(stats.chi2.sf(by_hand, int(kept.sum()) - 2), rel=1e-6)
    everything = hosmer_lemeshow_terms(release.expected, release.observed, floor=query.expected_floor).statistic
    assert everything - release.statistic > 1.9 * empty.sum()  # what the empty groups used to add


def test_exact_statistic_merges_tied_quantiles() -> None:
    """Ties in the data: four distinct probabilities and Q = 10 give equal exact quantiles; the empty groups are
    left out, df = Q' - 2 for the Q' groups formed."""
    generator = np.random.default_rng(5)
    probabilities = generator.choice([0.1, 0.3, 0.5, 0.7], size=400)
    labels = (generator.random(400) < probabilities).astype(np.int64)
    result = exact_hosmer_lemeshow(probabilities, labels, 10)
    kept = ~result.empty
    assert kept.sum() == 4 and result.degrees_of_freedom == 2  # one group per distinct probability
    # by hand: group the rows by the distinct interior quantiles
    e, o = result.expected[:, kept], result.observed[:, kept]
    assert result.statistic == pytest.approx(float(np.sum((o - e) ** 2 / e)), rel=1e-12)
    assert result.p_value == pytest.approx(stats.chi2.sf(result.statistic, result.degrees_of_freedom), rel=1e-12)
    assert int(result.observed.sum()) == 400
