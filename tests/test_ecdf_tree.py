"""Tests for :mod:`dp.ecdf.tree`: the tree mechanism for a private ECDF (Barczewski, Mawass & Ramon).

Statistical tests use fixed seeds and thresholds derived from the noise distribution: confidence
intervals at level 99.9 % from exact cumulants, goodness of fit at ``p > 1e-3``.
"""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dp.calibration import discrete_laplace_pmf, discrete_laplace_variance
from dp.ecdf.grid import (MAX_GRID_POINTS, grid_of_points, node_count,
                          prefix_incidence, prefix_positions, tree_depth, tree_nodes, true_counts, uniform_grid)
from dp.ecdf.analysis import interval_nodes, suffix_nodes, theorem1_squared_error
from dp.ecdf.tree import TreeNoisePlan, continual_gaussian_sigma, noisy_counts, plan_tree_noise, private_ecdf

P_MIN = 1e-3                    # goodness-of-fit tests fail with probability 1e-3 under the null
Z_999 = stats.norm.ppf(0.9995)  # two-sided 99.9 % normal quantile, 3.29


@lru_cache(maxsize=None)
def _incidence(points: int) -> scipy.sparse.csr_matrix:
    return prefix_incidence(points)


def _node_position(j: int, level: int, points: int) -> int:
    """Position of node ``(j, level)`` in :func:`tree_nodes` order: ``sum_{l < level} ceil(N / 2^l) + (j - 1)``."""
    return sum(math.ceil(points / 2**lower) for lower in range(level)) + j - 1


def _combination(nodes: list[tuple[tuple[int, int], int]], points: int) -> np.ndarray:
    chi = np.zeros(node_count(points), dtype=np.int64)
    for (j, level), sign in nodes:
        chi[_node_position(j, level, points)] += sign
    return chi


def _assert_combination(nodes: list[tuple[tuple[int, int], int]], points: int, first: int, last: int,
                        bound: int) -> None:
    """``nodes`` has at most ``bound`` distinct nodes with signs +-1 and produces 1 on first..last."""
    assert len(nodes) <= bound
    assert all(sign in (-1, 1) for _, sign in nodes)
    assert len({node for node, _ in nodes}) == len(nodes)
    indicator = np.zeros(points, dtype=np.int64)
    indicator[first - 1:last] = 1
    np.testing.assert_array_equal(_incidence(points) @ _combination(nodes, points), indicator)


# --------------------------------------------------------------------------------------------------
# Lemma 1 / eq. (9): the fact the privacy proof rests on

@settings(max_examples=400, deadline=None)
@given(st.data())
def test_interval_nodes_property(data: st.DataObject) -> None:
    """Any interval [a, b] of 1..N is a +-1 combination of at most L + 1 tree nodes (App. A.1)."""
    points = data.draw(st.integers(1, 2000), label="N")
    a = data.draw(st.integers(1, points), label="a")
    b = data.draw(st.integers(a, points), label="b")
    _assert_combination(interval_nodes(a, b, points), points, a, b, tree_depth(points) + 1)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_suffix_nodes_property(data: st.DataObject) -> None:
    """A suffix [a, N] needs at most ceil((L + 1)/2) nodes (Lemma 1; Theorem 3)."""
    points = data.draw(st.integers(1, 2000), label="N")
    a = data.draw(st.integers(1, points), label="a")
    _assert_combination(suffix_nodes(a, points), points, a, points, (tree_depth(points) + 2) // 2)


def test_interval_nodes_exhaustive_small() -> None:
    """Every interval of every grid with N <= 40 points, including the non-powers of two.

    The construction even meets ``max(1, 2 ceil(L/2))``, which is ``L`` for even ``L``.
    """
    for points in range(1, 41):
        depth = tree_depth(points)
        bound = max(1, 2 * math.ceil(depth / 2))
        for a in range(1, points + 1):
            for b in range(a, points + 1):
                _assert_combination(interval_nodes(a, b, points), points, a, b, bound)


def test_interval_nodes_bound_is_reached() -> None:
    """For odd L the construction uses L + 1 nodes for some interval, for even L at most L."""
    for points, most_expected in ((32, 6), (128, 8), (256, 8)):  # L = 5, 7, 8
        most = max(len(interval_nodes(a, b, points)) for a in range(1, points + 1) for b in range(a, points + 1))
        assert most == most_expected


def test_interval_nodes_validation() -> None:
    with pytest.raises(ValueError, match="a must lie in"):
        interval_nodes(0, 3, 8)
    with pytest.raises(ValueError, match="b must lie in"):
        interval_nodes(4, 3, 8)
    with pytest.raises(ValueError, match="b must lie in"):
        interval_nodes(1, 9, 8)
    with pytest.raises(TypeError, match="a must be an integer"):
        interval_nodes(1.0, 3, 8)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# tree layout

@pytest.mark.parametrize("points", [1, 2, 3, 5, 8, 100, 1024, 1025])
def test_prefix_incidence_structure(points: int) -> None:
    """Shape, L + 1 ones per row, columns in tree_nodes order, node (j, l) covering exactly the grid indices
    (j - 1) 2^l + 1 .. min(j 2^l, N) (docs/ecdf.md)."""
    depth = tree_depth(points)
    assert depth == math.ceil(math.log2(points))
    nodes = tree_nodes(points)
    assert len(nodes) == node_count(points) == sum(math.ceil(points / 2**level) for level in range(depth + 1))
    matrix = prefix_incidence(points)
    assert matrix.shape == (points, len(nodes))
    assert matrix.dtype == np.int64
    dense = matrix.toarray()
    assert set(np.unique(dense)) <= {0, 1}
    np.testing.assert_array_equal(dense.sum(axis=1), depth + 1)
    for position, (j, level) in enumerate(nodes):
        assert _node_position(j, level, points) == position
        first, last = (j - 1) * 2**level + 1, min(j * 2**level, points)
        column = np.zeros(points, dtype=np.int64)
        column[first - 1:last] = 1
        np.testing.assert_array_equal(dense[:, position], column)
    # eq. (2): row i (tau_{i+1}) holds the nodes (ceil((i+1)/2^l), l)
    for i in range(points):
        expected = sorted(_node_position(math.ceil((i + 1) / 2**level), level, points) for level in range(depth + 1))
        assert list(np.flatnonzero(dense[i])) == expected
    np.testing.assert_array_equal(np.sort(prefix_positions(points), axis=1),
                                  np.array([np.flatnonzero(row) for row in dense]))


def test_tree_order_is_level_major() -> None:
    assert tree_nodes(5) == [(1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (1, 1), (2, 1), (3, 1),
                             (1, 2), (2, 2), (1, 3)]
    assert tree_depth(1) == 0 and tree_nodes(1) == [(1, 0)]


def test_noisy_counts_matches_incidence() -> None:
    rng = np.random.default_rng(3)
    points = 77
    counts = np.sort(rng.integers(0, 50, points))
    noise = rng.integers(-1000, 1000, node_count(points))
    released = noisy_counts(counts, noise)
    assert released.dtype == np.int64
    np.testing.assert_array_equal(released, counts + prefix_incidence(points) @ noise)
    with pytest.raises(ValueError, match="node_noise must have length"):
        noisy_counts(counts, noise[:-1])
    with pytest.raises(TypeError, match="node_noise must be an integer array"):
        noisy_counts(counts, noise.astype(float))


# --------------------------------------------------------------------------------------------------
# release path

def test_private_ecdf_with_fixed_noise_is_eq2() -> None:
    """With given node noise the simulated release is exactly (counts + P eta) / n."""
    rng = np.random.default_rng(11)
    values = rng.normal(size=300)
    grid = uniform_grid(-2.0, 2.0, 0.05)
    plan = plan_tree_noise(epsilon=1.0, points=len(grid))
    noise = plan.draw_total(np.random.default_rng(5))
    released = private_ecdf(values, grid, plan, node_noise=noise)
    counts = np.array([np.sum(values <= tau) for tau in grid])
    np.testing.assert_array_equal(released, (counts + prefix_incidence(len(grid)) @ noise) / len(values))
    # rows outside the grid: below tau_1 counts everywhere, above tau_N nowhere
    np.testing.assert_array_equal(true_counts(np.array([-5.0, 0.0, 5.0]), grid), (grid >= 0).astype(int) + 1)
    # the same seed gives the same draws as draw_total
    again = private_ecdf(values, grid, plan, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(again, released)


def test_private_ecdf_validation() -> None:
    grid = uniform_grid(0.0, 1.0, 0.25)
    plan = plan_tree_noise(epsilon=1.0, points=len(grid))
    with pytest.raises(ValueError, match="at least one row"):
        private_ecdf(np.array([]), grid, plan)
    with pytest.raises(ValueError, match="grid must have plan.points = 5 points, got 4"):
        private_ecdf(np.array([0.5]), grid[:-1], plan)
    with pytest.raises(ValueError, match="strictly increasing"):
        private_ecdf(np.array([0.5]), grid[::-1], plan)
    with pytest.raises(ValueError, match="values must be finite"):
        private_ecdf(np.array([np.nan]), grid, plan)


def _quadratic_form_variance(plan: TreeNoisePlan) -> float:
    """Exact variance of one run's grid-averaged squared count error ``|P eta|^2 / N``.

    That statistic is ``eta' A eta`` with ``A = P'P / N`` and ``eta`` i.i.d., symmetric, with
    variance ``k2`` and fourth cumulant ``k4``, so its variance is
    ``k4 sum_k A_kk^2 + 2 k2^2 tr(A^2)``.  The node noise is a sum of ``2 m`` Polya(r, alpha)
    (with signs), whose cumulants are ``k2 = 2 m r alpha/(1-alpha)^2`` and
    ``k4 = 2 m r alpha (1 + 4 alpha + alpha^2)/(1-alpha)^4``.
    """
    points = plan.points
    gram = (prefix_incidence(points).T @ prefix_incidence(points)).tocsr()
    a = plan.alpha
    k2 = plan.node_variance
    k4 = 2 * plan.parties * plan.shape * a * (1 + 4 * a + a * a) / (1 - a) ** 4
    diagonal = gram.diagonal() / points
    trace_square = gram.multiply(gram).sum() / points**2
    return float(k4 * np.sum(diagonal**2) + 2 * k2**2 * trace_square)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_monte_carlo_error_matches_theorem1(epsilon: float) -> None:
    """Empirical MSE of the released counts equals plan.point_variance, and Theorem 1 within 10 %.

    N = 2^10 grid points (L = 10), 3000 runs of :func:`private_ecdf` on 64 rows.  The statistic
    is the grid-averaged squared error of ``n F^`` per run, whose mean is ``point_variance``.  Its
    run-to-run variance is computed exactly from the noise's second and fourth cumulants (see
    :func:`_quadratic_form_variance`; relative sd ~0.385 per run, the shared top nodes dominate),
    giving a 99.9 % CI ``mean ± 3.29 sd / sqrt(3000)``: half-width ~2.3 %, asserted < 5 % so the
    whole interval is narrower than 10 %.  By the CLT over 3000 i.i.d. runs the normal quantile is
    accurate here.

    Theorem-1 regime: node scale ``s = (L+1)/eps`` is 22, 11 and 5.5, where discrete and continuous
    Laplace agree (``2 alpha/(1-alpha)^2 = 2 s^2 - 1/6 + O(s^-2)``, relative gap ``1/(12 s^2)`` <
    0.3 %), so ``point_variance`` is within 10 % (in fact 0.3 %) of ``2 (L+1)^3 / eps^2``.
    """
    points, runs = 2**10, 3000
    rng = np.random.default_rng(20240 + int(10 * epsilon))
    values = rng.uniform(0.0, 1.0, 64)
    grid = uniform_grid(0.0, 1.0, 1.0 / (points - 1))
    assert len(grid) == points
    plan = plan_tree_noise(epsilon=epsilon, points=points)
    exact = true_counts(values, grid)
    per_run = np.empty(runs)
    for run in range(runs):
        released = private_ecdf(values, grid, plan, rng=rng) * len(values)
        error = np.rint(released).astype(np.int64) - exact
        per_run[run] = np.mean(error.astype(np.float64) ** 2)
    observed = per_run.mean()
    half_width = Z_999 * math.sqrt(_quadratic_form_variance(plan) / runs)
    assert half_width < 0.05 * plan.point_variance
    assert abs(observed - plan.point_variance) <= half_width, (observed, plan.point_variance, half_width)
    theorem1 = theorem1_squared_error(points=points, epsilon=epsilon)
    assert theorem1 == 2 * 11**3 / epsilon**2
    assert abs(plan.point_variance / theorem1 - 1) < 0.1
    assert abs(observed / theorem1 - 1) < 0.1


def test_theorem1_regime_boundary() -> None:
    """Discrete and continuous variances agree within 10 % iff the node scale is about 1 or more."""
    for epsilon in (0.1, 1.0, 5.0, 11.0):     # node scale 110 ... 1 for N = 1024 (L + 1 = 11)
        plan = plan_tree_noise(epsilon=epsilon, points=1024)
        ratio = plan.point_variance / theorem1_squared_error(points=1024, epsilon=epsilon)
        assert 0.9 < ratio <= 1.0
        assert ratio == pytest.approx(1 - 1 / (12 * plan.node_scale**2), abs=1e-2 / plan.node_scale**4)
    small_scale = plan_tree_noise(epsilon=44.0, points=1024)  # node scale 0.25: mostly zero noise
    assert small_scale.point_variance < 0.5 * theorem1_squared_error(points=1024, epsilon=44.0)


# --------------------------------------------------------------------------------------------------
# distributed noise

def _chi_square_dlap(samples: np.ndarray, alpha: float) -> float:
    """p-value of a chi-square goodness of fit to DLap(alpha), tails pooled (expected >= 5)."""
    size = samples.size
    edge = 1
    while size * alpha ** (edge + 1) / (1 + alpha) >= 5:  # P(Z >= k) = alpha^k / (1 + alpha)
        edge += 1
    support = np.arange(-edge + 1, edge)
    expected = size * discrete_laplace_pmf(support, alpha)
    tail = size * alpha**edge / (1 + alpha)
    observed = [np.sum(samples <= -edge)] + [np.sum(samples == z) for z in support] + [np.sum(samples >= edge)]
    expected_all = np.concatenate(([tail], expected, [tail]))
    return float(stats.chisquare(observed, expected_all).pvalue)


def test_single_party_is_discrete_laplace() -> None:
    plan = plan_tree_noise(epsilon=13.0, points=2**12)  # L + 1 = 13: alpha = e^-1
    assert plan.shape == 1.0 and plan.variance_factor == 1.0
    assert plan.alpha == pytest.approx(math.exp(-1.0))
    rng = np.random.default_rng(8)
    samples = np.concatenate([plan.draw_party(rng) for _ in range(6)])
    assert samples.dtype == np.int64 and samples.size == 6 * plan.node_count
    assert _chi_square_dlap(samples, plan.alpha) > P_MIN


def test_three_parties_threshold_one() -> None:
    """m = 3, t = 1: any 2 honest parties' draws are DLap(alpha); total variance x 3/2.

    Variance check: the sample variance of ``n`` i.i.d. totals has sd
    ``sqrt((k4 + 2 k2^2) / n)`` to first order (k2, k4 the cumulants of the total node noise);
    we accept within 3.29 of those sd.
    """
    plan = plan_tree_noise(epsilon=13.0, points=2**12, parties=3, threshold=1)
    assert plan.shape == 0.5
    assert plan.variance_factor == 1.5
    assert plan.node_variance == pytest.approx(1.5 * discrete_laplace_variance(plan.alpha))
    assert plan.point_variance == pytest.approx(13 * plan.node_variance)
    rng = np.random.default_rng(99)
    rounds = [[plan.draw_party(rng) for _ in range(3)] for _ in range(8)]
    draws = [np.concatenate([r[party] for r in rounds]) for party in range(3)]
    for first, second in ((0, 1), (0, 2), (1, 2)):
        assert _chi_square_dlap(draws[first] + draws[second], plan.alpha) > P_MIN
    total = draws[0] + draws[1] + draws[2]
    a = plan.alpha
    k2 = plan.node_variance
    k4 = 2 * 3 * 0.5 * a * (1 + 4 * a + a * a) / (1 - a) ** 4
    sd = math.sqrt((k4 + 2 * k2**2) / total.size)
    assert abs(total.astype(float).var() - k2) < Z_999 * sd
    # draw_total sums the three parties
    np.testing.assert_array_equal(plan.draw_total(np.random.default_rng(4)), _sum_of_parties(plan, 4))


def _sum_of_parties(plan: TreeNoisePlan, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return sum((plan.draw_party(rng) for _ in range(plan.parties)), np.zeros(plan.node_count, dtype=np.int64))


def test_os_randomness_by_default() -> None:
    plan = plan_tree_noise(epsilon=1.0, points=64)
    assert not np.array_equal(plan.draw_party(), plan.draw_party())


# --------------------------------------------------------------------------------------------------
# continual observation (Theorem 3)

@pytest.mark.parametrize("points, levels", [(1, 1), (2, 2), (3, 3), (512, 10), (1024, 11)])
def test_continual_scale(points: int, levels: int) -> None:
    plan = plan_tree_noise(epsilon=2.0, points=points, continual=True)
    assert plan.levels == levels
    assert plan.node_scale == math.ceil(levels / 2) / 2.0
    assert plan.alpha == pytest.approx(math.exp(-1 / plan.node_scale))
    assert plan_tree_noise(epsilon=2.0, points=points).node_scale == levels / 2.0


def test_continual_gaussian_sigma() -> None:
    """sigma^2 = ceil((L+1)/2) z^2 with rho = 1/(2 z^2), i.e. sigma = sqrt(ceil((L+1)/2) / (2 rho))."""
    rho = 0.3
    sigma = continual_gaussian_sigma(rho, 1024)           # L + 1 = 11 -> 6 nodes
    z_squared = sigma**2 / 6
    assert 1 / (2 * z_squared) == pytest.approx(rho)
    assert continual_gaussian_sigma(rho, 1024, replace_one=True) == pytest.approx(math.sqrt(11 / (2 * rho)))
    with pytest.raises(ValueError, match="rho must be positive, got 0"):
        continual_gaussian_sigma(0, 8)


# --------------------------------------------------------------------------------------------------
# grids and validation

def test_uniform_grid() -> None:
    grid = uniform_grid(0.0, 1.0, 0.3)
    np.testing.assert_allclose(grid, [0.0, 0.3, 0.6, 0.9, 1.0])
    assert grid[0] == 0.0 and grid[-1] == 1.0
    exact = uniform_grid(0.0, 0.3, 0.1)                    # 3 * 0.1 rounds above 0.3: no duplicate
    assert len(exact) == 4 and exact[-1] == 0.3
    assert np.all(np.diff(uniform_grid(-3.0, 7.0, 0.013)) > 0)
    assert list(uniform_grid(2.0, 2.0, 1.0)) == [2.0]
    with pytest.raises(ValueError, match="step must be positive, got 0"):
        uniform_grid(0.0, 1.0, 0)
    with pytest.raises(ValueError, match="upper must be at least lower"):
        uniform_grid(1.0, 0.0, 0.1)
    with pytest.raises(ValueError, match="at most 2\\*\\*24"):
        uniform_grid(0.0, 1.0, 1e-9)


@pytest.mark.parametrize("kind", ["uniform", "geometric"])
@pytest.mark.parametrize("points", [2, 3, 64, 100, 1000, 1024, 4097])
@pytest.mark.parametrize("lower, upper", [(80.0, 220.0), (1.0, 1e6), (0.001, 0.002), (100.0, 700.0)])
def test_grid_of_points_has_exactly_n_points_and_even_gaps(kind: str, points: int, lower: float, upper: float) -> None:
    """--points N means N points, whatever the kind; equal gaps (uniform) or ratios (geometric), the first one too."""
    grid = grid_of_points(lower, upper, points, kind=kind)
    assert len(grid) == points and grid[0] == lower and grid[-1] == upper
    assert np.all(np.diff(grid) > 0)
    steps = np.diff(grid) if kind == "uniform" else np.diff(np.log(grid))
    expected = (upper - lower) / (points - 1) if kind == "uniform" else math.log(upper / lower) / (points - 1)
    np.testing.assert_allclose(steps, expected, rtol=1e-6)
    assert tree_depth(len(grid)) == tree_depth(points)


def test_grid_of_points_refusals() -> None:
    with pytest.raises(ValueError, match="lower must be positive for a geometric grid"):
        grid_of_points(0.0, 1.0, 8, kind="geometric")
    with pytest.raises(ValueError, match="points must be at least 2"):
        grid_of_points(0.0, 1.0, 1)
    with pytest.raises(ValueError, match="upper must be above lower"):
        grid_of_points(1.0, 1.0, 8)
    with pytest.raises(ValueError, match="kind must be"):
        grid_of_points(0.0, 1.0, 8, kind="log")
    with pytest.raises(ValueError, match="too narrow"):
        grid_of_points(1.0, 1.0 + 4e-16, 8)


def test_plan_validation_messages() -> None:
    with pytest.raises(ValueError, match="^epsilon must be positive, got 0$"):
        plan_tree_noise(epsilon=0, points=8)
    with pytest.raises(ValueError, match="^epsilon must be finite, got inf$"):
        plan_tree_noise(epsilon=math.inf, points=8)
    with pytest.raises(ValueError, match="^points must be at least 1, got 0$"):
        plan_tree_noise(epsilon=1.0, points=0)
    with pytest.raises(ValueError, match="points must be at most"):
        plan_tree_noise(epsilon=1.0, points=MAX_GRID_POINTS + 1)
    with pytest.raises(ValueError, match="threshold must be below half the number of parties \\(3\\), got 2"):
        plan_tree_noise(epsilon=1.0, points=8, parties=3, threshold=2)
    with pytest.raises(TypeError, match="continual must be a bool"):
        plan_tree_noise(epsilon=1.0, points=8, continual=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        plan_tree_noise(1.0, 8)  # type: ignore[misc]  # keyword-only
    with pytest.raises(ValueError, match="epsilon must be positive"):
        theorem1_squared_error(points=8, epsilon=-1)
    with pytest.raises(ValueError, match="points must be at least 1, got 0"):
        tree_depth(0)
