"""Smoothing package: monotone smoothing (eq. 3), inverse ECDF (Alg. 1), ROC from two ECDFs (Sec. 5.1).

The tree incidence matrix is built here, independently of ``dp/`` (the package takes it as input).
Statistical assertions use fixed seeds and one-sided confidence bounds, never hand-tuned thresholds.
"""
from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score, roc_curve

from smoothing import (
    SmoothingError,
    default_solvers,
    evaluate_step,
    inverse_ecdf,
    quantiles,
    roc_from_ecdfs,
    smooth_ecdf,
    smooth_many,
    trapezoid_auc,
)

# ---------------------------------------------------------------------------------------------
# helpers: the tree of the mechanism (paper eq. 2) and a noisy ECDF in the paper's X_pois setting


def ecdf_on_grid(samples: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The exact (noiseless) ECDF ``|{x : x <= t}| / n`` of ``samples`` on ``grid``."""
    return np.searchsorted(np.sort(samples), grid, side="right") / len(samples)


def tree_incidence(size: int) -> sp.csr_array:
    """Rows i = 1..N; nodes (j, l) for l = 0..L, j = 1..ceil(N / 2^l); a 1 at (ceil(i / 2^l), l)."""
    depth = math.ceil(math.log2(size)) if size > 1 else 0
    rows, columns = [], []
    offset = 0
    for level in range(depth + 1):
        width = 2 ** level
        for i in range(1, size + 1):
            rows.append(i - 1)
            columns.append(offset + (i + width - 1) // width - 1)
        offset += (size + width - 1) // width
    return sp.csr_array((np.ones(len(rows)), (rows, columns)), shape=(size, offset))


def tree_depth(size: int) -> int:
    return math.ceil(math.log2(size)) if size > 1 else 0


def poisson_ecdf(size: int, rate: float, generator: np.random.Generator) -> tuple[np.ndarray, int]:
    """True ECDF on the grid 1..N of X_pois(rate) (Sec. 6.2): Pois(rate) instances at each grid value."""
    counts = generator.poisson(rate, size)
    total = int(counts.sum())
    return np.cumsum(counts) / total, total


def tree_noise(incidence: sp.csr_array, epsilon: float, rows: int,
               generator: np.random.Generator) -> np.ndarray:
    """Eq. (2): per node Laplace((L + 1) / epsilon), divided by n, summed along each point's path."""
    depth = tree_depth(incidence.shape[0])
    nodes = generator.laplace(0.0, (depth + 1) / epsilon, incidence.shape[1])
    return incidence @ nodes / rows


def is_monotone_in_unit(values: np.ndarray) -> bool:
    return bool(np.all(np.diff(values) >= 0) and values[0] >= 0 and values[-1] <= 1)


# ---------------------------------------------------------------------------------------------
# the helper itself


@pytest.mark.parametrize("size", [1, 2, 5, 8, 13, 64])
def test_tree_incidence_has_one_node_per_level(size: int) -> None:
    incidence = tree_incidence(size)
    depth = tree_depth(size)
    assert np.all(incidence.sum(axis=1) == depth + 1)
    assert incidence.shape[1] == sum(-(-size // 2 ** level) for level in range(depth + 1))
    # the root (last column) is shared by every point
    assert np.all(incidence.toarray()[:, -1] == 1)


# ---------------------------------------------------------------------------------------------
# monotone smoothing


Problem = tuple[np.ndarray, "np.ndarray | None", int]


@st.composite
def noisy_problems(draw: st.DrawFn) -> Problem:
    size = draw(st.integers(min_value=1, max_value=40))
    noisy = np.array(draw(st.lists(st.floats(min_value=-1.0, max_value=2.0, allow_nan=False),
                                   min_size=size, max_size=size)))
    norm = draw(st.sampled_from([1, 2]))
    if draw(st.booleans()):
        subset = None
    else:
        chosen = draw(st.lists(st.integers(min_value=0, max_value=size - 1), min_size=1, max_size=size))
        subset = np.array(chosen)
    return noisy, subset, norm


@settings(max_examples=60, deadline=None, derandomize=True)
@given(noisy_problems())
def test_smoothed_output_is_monotone_and_in_unit_interval(problem: Problem) -> None:
    noisy, subset, norm = problem
    incidence = tree_incidence(noisy.size)
    result = smooth_ecdf(noisy, incidence, subset=subset, norm=norm)
    expected_subset = np.arange(noisy.size) if subset is None else np.unique(subset)
    np.testing.assert_array_equal(result.subset, expected_subset)
    assert result.values.shape == expected_subset.shape
    assert is_monotone_in_unit(result.values)
    assert result.status in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE)
    assert result.corrections.shape == (incidence.shape[1],)
    # the values are F-hat + incidence @ nu on B, up to the reported repair (<= tolerance)
    corrected = noisy[expected_subset] + incidence[expected_subset] @ result.corrections
    np.testing.assert_allclose(result.values, corrected, rtol=0, atol=result.repair + 1e-12)
    assert result.repair <= 1e-6
    # nodes no point of B touches are left alone
    untouched = np.asarray(incidence[expected_subset].sum(axis=0)).ravel() == 0
    assert np.all(result.corrections[untouched] == 0)
    # giving only the values on B is the same problem
    alone = smooth_ecdf(noisy[expected_subset], incidence, subset=expected_subset, norm=norm)
    np.testing.assert_allclose(alone.values, result.values, atol=1e-6)


@pytest.mark.parametrize("norm", [1, 2])
def test_feasible_input_is_left_unchanged(norm: int) -> None:
    values = np.linspace(0.05, 0.95, 16)
    result = smooth_ecdf(values, tree_incidence(16), norm=norm)
    assert result.objective == pytest.approx(0.0, abs=1e-10)
    np.testing.assert_allclose(result.values, values, atol=1e-7)


def _reference_solution(noisy: np.ndarray, incidence: sp.csr_array, norm: int) -> float:
    """Optimal value of eq. (3) with B = all, by scipy alone (SLSQP for p = 2, linprog for p = 1)."""
    matrix = incidence.toarray()
    size, nodes = matrix.shape
    difference = np.diff(np.eye(size), axis=0)
    # constraints G @ nu >= h
    g = np.vstack([difference @ matrix, matrix[:1], -matrix[-1:]])
    h = np.concatenate([-(difference @ noisy), -noisy[:1], noisy[-1:] - 1.0])
    if norm == 1:
        # nu = plus - minus, minimise sum(plus + minus)
        answer = scipy.optimize.linprog(np.ones(2 * nodes), A_ub=-np.hstack([g, -g]), b_ub=-h,
                                        bounds=(0, None), method="highs")
        assert answer.status == 0
        return float(answer.fun)
    answer = scipy.optimize.minimize(lambda nu: nu @ nu, np.zeros(nodes), jac=lambda nu: 2 * nu,
                                     constraints=[{"type": "ineq", "fun": lambda nu: g @ nu - h,
                                                   "jac": lambda nu: g}],
                                     method="SLSQP", options={"ftol": 1e-14, "maxiter": 1000})
    assert answer.success
    return float(answer.fun)


@pytest.mark.parametrize("norm", [1, 2])
def test_optimum_matches_independent_scipy_solution(norm: int) -> None:
    generator = np.random.default_rng(11)
    size = 12
    truth, rows = poisson_ecdf(size, 3.0, generator)
    incidence = tree_incidence(size)
    noisy = truth + tree_noise(incidence, 0.5, rows, generator)
    result = smooth_ecdf(noisy, incidence, norm=norm)
    assert result.objective == pytest.approx(_reference_solution(noisy, incidence, norm), rel=1e-5, abs=1e-9)


def test_quadratic_solution_is_the_same_with_every_solver() -> None:
    generator = np.random.default_rng(5)
    size = 256
    truth, rows = poisson_ecdf(size, 3.0, generator)
    incidence = tree_incidence(size)
    noisy = truth + tree_noise(incidence, 1.0, rows, generator)
    results = [smooth_ecdf(noisy, incidence, norm=2, solvers=[name]) for name in default_solvers(2)]
    assert [r.solver for r in results] == default_solvers(2)
    # the p = 2 optimum is unique; solvers stop at their own tolerances (objective gap ~1e-10,
    # which by strong convexity allows ||nu - nu*|| ~ 1e-5), so compare at that scale
    for other in results[1:]:
        assert other.objective == pytest.approx(results[0].objective, rel=1e-6)
        np.testing.assert_allclose(other.values, results[0].values, atol=1e-4)


def test_quadratic_smoothing_lowers_l2_error_on_average() -> None:
    """Paper Sec. 6.3 / Fig. 3 regime (X_pois, epsilon = 1): paired runs, one-sided 99% t bound."""
    generator = np.random.default_rng(20240611)
    size, rate, epsilon, runs = 2 ** 10, 10.0, 1.0, 30   # n is about 10^4
    incidence = tree_incidence(size)
    gains = []
    for _ in range(runs):
        truth, rows = poisson_ecdf(size, rate, generator)
        noisy = truth + tree_noise(incidence, epsilon, rows, generator)
        smoothed = smooth_ecdf(noisy, incidence, norm=2).values
        gains.append(np.sum((noisy - truth) ** 2) - np.sum((smoothed - truth) ** 2))
    gains_array = np.array(gains)
    half_width = scipy.stats.t.ppf(0.99, runs - 1) * gains_array.std(ddof=1) / np.sqrt(runs)
    assert gains_array.mean() - half_width > 0      # one-sided 99% lower bound on the mean gain


def test_bogus_first_solver_falls_back_to_the_next() -> None:
    incidence = tree_incidence(8)
    noisy = np.array([0.2, 0.1, 0.4, 0.3, 0.6, 0.5, 0.9, 1.1])
    result = smooth_ecdf(noisy, incidence, norm=2, solvers=["NO_SUCH_SOLVER", "OSQP"])
    assert result.solver == "OSQP"
    assert result.attempts[0][0] == "NO_SUCH_SOLVER" and "not installed" in result.attempts[0][1]
    # an installed solver that cannot take the problem (SCIPY has no QP) also falls through
    result = smooth_ecdf(noisy, incidence, norm=2, solvers=["SCIPY", "CLARABEL"])
    assert result.solver == "CLARABEL"
    assert result.attempts[0][0] == "SCIPY" and result.attempts[0][1] != cp.OPTIMAL
    assert is_monotone_in_unit(result.values)


def test_all_solvers_failing_raises_smoothing_error_naming_them() -> None:
    incidence = tree_incidence(4)
    with pytest.raises(SmoothingError) as caught:
        smooth_ecdf(np.array([0.3, 0.2, 0.5, 0.4]), incidence, solvers=["BOGUS_ONE", "BOGUS_TWO"])
    assert "BOGUS_ONE" in str(caught.value) and "BOGUS_TWO" in str(caught.value)
    assert [name for name, _ in caught.value.failures] == ["BOGUS_ONE", "BOGUS_TWO"]


def test_parameters_are_validated() -> None:
    incidence = tree_incidence(4)
    noisy = np.array([0.3, 0.2, 0.5, 0.4])
    with pytest.raises(ValueError, match="norm must be 1 or 2, got 3"):
        smooth_ecdf(noisy, incidence, norm=3)
    with pytest.raises(ValueError, match="noisy must have length"):
        smooth_ecdf(noisy[:3], incidence)
    with pytest.raises(ValueError, match="subset positions"):
        smooth_ecdf(noisy, incidence, subset=np.array([0, 4]))
    with pytest.raises(ValueError, match="at least one"):
        smooth_ecdf(noisy, incidence, subset=np.array([], dtype=int))
    with pytest.raises(TypeError, match="sparse"):
        smooth_ecdf(noisy, incidence.toarray())
    with pytest.raises(TypeError, match="sequence of solver names"):
        smooth_ecdf(noisy, incidence, solvers="CLARABEL")
    with pytest.raises(ValueError, match="finite"):
        smooth_ecdf(np.array([0.3, np.nan, 0.5, 0.4]), incidence)
    with pytest.raises(ValueError, match="touch no tree node"):
        smooth_ecdf(noisy, sp.csr_array((4, 3)))


# ---------------------------------------------------------------------------------------------
# step ECDF and inverse ECDF (Algorithm 1)


def test_evaluate_step_reads_the_largest_grid_point_below() -> None:
    grid = np.array([1.0, 2.0, 4.0])
    values = np.array([0.2, 0.1, 0.9])   # not monotone on purpose
    assert evaluate_step(grid, values, 0.5) == 0.0
    assert evaluate_step(grid, values, 1.0) == 0.2
    assert evaluate_step(grid, values, 3.99) == 0.1
    np.testing.assert_array_equal(evaluate_step(grid, values, np.array([2.0, 4.0, 10.0])), [0.1, 0.9, 0.9])


def _inverse_by_definition(data: np.ndarray, level: float) -> float:
    """inf{x : F(x) >= p} over the data values, with F the exact ECDF."""
    points = np.unique(data)
    cdf = np.array([np.count_nonzero(data <= x) for x in points]) / data.size
    return float(points[np.argmax(cdf >= level)])


def test_inverse_ecdf_is_exact_on_noiseless_data() -> None:
    generator = np.random.default_rng(3)
    data = generator.poisson(20.0, 500).astype(float)          # many ties
    grid = np.unique(data)
    values = ecdf_on_grid(data, grid)
    levels = np.concatenate([generator.random(200), np.arange(501) / 500])
    found = quantiles(grid, values, levels)
    expected = np.array([_inverse_by_definition(data, level) for level in levels])
    np.testing.assert_array_equal(found, expected)
    random_levels = levels[:200]
    np.testing.assert_array_equal(found[:200], np.quantile(data, random_levels, method="inverted_cdf"))
    # a coarse precision does not matter once snapped to the grid
    np.testing.assert_array_equal(quantiles(grid, values, random_levels, precision=5.0), found[:200])


def test_inverse_ecdf_on_a_finer_grid_and_literal_algorithm_precision() -> None:
    generator = np.random.default_rng(4)
    data = np.round(generator.normal(0.0, 1.0, 300), 2)
    grid = np.round(np.arange(-4.0, 4.0001, 0.01), 2)          # contains every value of the data
    values = ecdf_on_grid(data, grid)
    levels = generator.random(100)
    expected = np.quantile(data, levels, method="inverted_cdf")
    np.testing.assert_allclose(quantiles(grid, values, levels), expected, atol=1e-9)
    # without snapping, Algorithm 1 is within precision / 2 of the answer
    precision = 1e-4
    plain = quantiles(grid, values, levels, precision, snap=False)
    assert np.all(np.abs(plain - expected) <= precision / 2 + 1e-12)


def test_inverse_ecdf_of_a_callable() -> None:
    # the paper's domain [0, 1]
    assert inverse_ecdf(lambda x: x * x, 0.25, precision=1e-10) == pytest.approx(0.5, abs=1e-10)
    # a generalised domain
    for level in (0.01, 0.3, 0.5, 0.975):
        found = inverse_ecdf(scipy.stats.norm.cdf, level, lower=-8.0, upper=8.0, precision=1e-9)
        assert found == pytest.approx(scipy.stats.norm.ppf(level), abs=1e-9)


def test_inverse_ecdf_of_raw_and_smoothed_private_curves() -> None:
    generator = np.random.default_rng(8)
    size = 128
    truth, rows = poisson_ecdf(size, 3.0, generator)
    incidence = tree_incidence(size)
    noisy = truth + tree_noise(incidence, 1.0, rows, generator)
    grid = np.arange(1.0, size + 1.0)
    assert np.any(np.diff(noisy) < 0)
    levels = np.linspace(0.05, 0.95, 19)
    for level in levels:
        found = inverse_ecdf((grid, noisy), float(level))
        position = int(found) - 1
        # a crossing of the level: reached at the answer, not reached just before it
        if found > grid[0]:
            assert noisy[position] >= level > noisy[position - 1]
    smoothed = smooth_ecdf(noisy, incidence).values
    found = quantiles(grid, smoothed, levels)
    expected = np.array([grid[np.argmax(smoothed >= level)] for level in levels])
    np.testing.assert_array_equal(found, expected)


def test_inverse_ecdf_edges_and_validation() -> None:
    grid = np.array([1.0, 2.0, 3.0])
    values = np.array([0.2, 0.5, 0.8])                         # never reaches 1
    assert inverse_ecdf((grid, values), 0.0) == 1.0
    assert inverse_ecdf((grid, values), 0.1) == 1.0
    assert inverse_ecdf((grid, values), 0.9) == 3.0            # nothing reaches p: upper
    assert inverse_ecdf((grid, values), 0.5, lower=0.0, upper=5.0) == 2.0
    with pytest.raises(ValueError, match="probability must lie in"):
        inverse_ecdf((grid, values), 1.5)
    with pytest.raises(ValueError, match="precision must be positive"):
        inverse_ecdf((grid, values), 0.5, precision=0.0)
    with pytest.raises(ValueError, match="strictly increasing"):
        quantiles(np.array([1.0, 1.0, 2.0]), values, [0.5])
    with pytest.raises(TypeError, match="callable"):
        inverse_ecdf([1.0, 2.0], 0.5)                          # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# ROC from two ECDFs


def _scored_data_with_ties(seed: int, rows: int) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(seed)
    labels = (generator.random(rows) < 0.3).astype(int)
    labels[:2] = [0, 1]
    scores = np.round(np.clip(0.4 + 0.25 * labels + generator.normal(0, 0.2, rows), 0, 1), 1)
    return scores, labels


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_roc_auc_matches_sklearn_with_ties(seed: int) -> None:
    scores, labels = _scored_data_with_ties(seed, 400)
    assert np.unique(scores).size < 20                         # heavy ties
    grid = np.unique(scores)
    positive = ecdf_on_grid(scores[labels == 1], grid)
    negative = ecdf_on_grid(scores[labels == 0], grid)
    curve = roc_from_ecdfs(positive, negative, thresholds=grid)
    assert curve.auc == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert (curve.false_positive_rate[0], curve.true_positive_rate[0]) == (0.0, 0.0)
    assert (curve.false_positive_rate[-1], curve.true_positive_rate[-1]) == (1.0, 1.0)
    # same points as sklearn's full curve
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    ours = {(round(x, 12), round(y, 12)) for x, y in zip(curve.false_positive_rate, curve.true_positive_rate)}
    theirs = {(round(x, 12), round(y, 12)) for x, y in zip(fpr, tpr)}
    assert ours == theirs
    # the paper's convention (low score = positive) is the AUC of the negated scores
    below = roc_from_ecdfs(positive, negative, positive_below=True)
    assert below.auc == pytest.approx(roc_auc_score(labels, -scores), abs=1e-12)
    # extra thresholds between the scores change nothing
    fine = np.round(np.arange(0.0, 1.0001, 0.05), 2)
    finer = roc_from_ecdfs(ecdf_on_grid(scores[labels == 1], fine), ecdf_on_grid(scores[labels == 0], fine))
    assert finer.auc == pytest.approx(curve.auc, abs=1e-12)


def test_roc_of_smoothed_private_ecdfs_is_a_proper_curve() -> None:
    generator = np.random.default_rng(9)
    scores, labels = _scored_data_with_ties(9, 2000)
    grid = np.round(np.arange(0.0, 1.0001, 0.1), 1)
    incidence = tree_incidence(grid.size)
    smoothed = []
    for label in (1, 0):
        group = scores[labels == label]
        noisy = ecdf_on_grid(group, grid) + tree_noise(incidence, 1.0, group.size, generator)
        smoothed.append(smooth_ecdf(noisy, incidence).values)
    curve = roc_from_ecdfs(smoothed[0], smoothed[1], thresholds=grid)
    assert np.all(np.diff(curve.false_positive_rate) >= 0)
    assert np.all(np.diff(curve.true_positive_rate) >= 0)
    assert 0.0 <= curve.auc <= 1.0


def test_trapezoid_auc() -> None:
    assert trapezoid_auc(np.array([0.0, 1.0]), np.array([0.0, 1.0])) == 0.5
    assert trapezoid_auc(np.array([0.0, 0.0, 1.0]), np.array([0.0, 1.0, 1.0])) == 1.0
    with pytest.raises(ValueError, match="same shape"):
        trapezoid_auc(np.array([0.0, 1.0]), np.array([0.0]))


@pytest.mark.parametrize("norm", [1, 2])
def test_smooth_many_smooths_each_row_as_smooth_ecdf_does(norm: int) -> None:
    """The batched smoother (one compiled problem, the curve its parameter) gives each row's own smoothing."""
    generator = np.random.default_rng(5)
    incidence = tree_incidence(32)
    truth, rows = poisson_ecdf(32, 20.0, generator)
    curves = np.stack([truth + tree_noise(incidence, 0.5, rows, generator) for _ in range(4)])
    batched = smooth_many(curves, incidence, norm=norm)
    one_by_one = np.stack([smooth_ecdf(curve, incidence, norm=norm).values for curve in curves])
    np.testing.assert_allclose(batched, one_by_one, atol=1e-5)  # two solves of one convex problem, to solver tolerance
    assert all(is_monotone_in_unit(row) for row in batched)
