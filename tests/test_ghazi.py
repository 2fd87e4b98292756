"""Ghazi et al.'s LDP baseline (dp.baselines.ghazi): factorization, randomizer, estimator, variance, costs.

Statistical checks use fixed seeds and 99.9 % two-sided intervals (z = 3.29) derived from the run
count; the run counts are chosen so those intervals are narrow enough for the claims.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dp.baselines import ghazi
from dp.bell.generic import quantized_ustatistic
from dp.bell.quantize import Quantizer, gini_kernel, kernel_matrix
from tests.statistics_checks import Z999, assert_mean_near



def beta_sample(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).beta(2.0, 5.0, n)


@pytest.fixture(scope="module")
def gini_setup() -> tuple[np.ndarray, Quantizer, np.ndarray]:
    q = Quantizer.interval(lower=0.0, upper=1.0, bins=8)
    x = beta_sample(300, 11)
    return x, q, kernel_matrix(gini_kernel, q, kind="midpoint")


# -- factorization -------------------------------------------------------------------------------

def test_full_rank_factorization_is_exact_and_balanced(gini_setup) -> None:
    _, _, a = gini_setup
    f = ghazi.factorize(a)
    assert f.rank == 8 and f.d == 8 and f.bins == 8
    np.testing.assert_allclose(f.matrix, a, atol=1e-12)
    col_l = np.linalg.norm(f.left, axis=0).max()
    col_r = np.linalg.norm(f.right, axis=0).max()
    assert col_l == pytest.approx(col_r, rel=1e-12)


def test_low_rank_matrix_gets_its_rank() -> None:
    q = Quantizer.interval(lower=0.0, upper=1.0, bins=16)
    a = kernel_matrix(lambda x, y: 1.0 + x * y, q, kind="midpoint")  # rank 2
    f = ghazi.factorize(a)
    assert f.rank == np.linalg.matrix_rank(a) == 2
    np.testing.assert_allclose(f.matrix, a, atol=1e-12)
    assert ghazi.factorize(a, d=100).d == f.rank  # capped at the rank


def test_factorization_error_decreases_with_d(gini_setup) -> None:
    _, _, a = gini_setup
    errors = []
    for d in range(1, 9):
        f = ghazi.factorize(a, d=d)
        measured = np.linalg.norm(a - f.matrix)
        assert measured == pytest.approx(np.sqrt(np.sum(f.singular_values[d:] ** 2)), abs=1e-12)  # Eckart-Young
        errors.append(measured)
    assert all(e1 > e2 for e1, e2 in zip(errors, errors[1:]))
    assert errors[-1] < 1e-12


# -- randomizer and estimator --------------------------------------------------------------------

def test_laplace_scale_gives_epsilon_half_per_report(gini_setup) -> None:
    _, _, a = gini_setup
    f = ghazi.factorize(a)
    b_l, b_r = ghazi.laplace_scales(f, epsilon=1.0)
    # worst-case log density ratio of one report: ||L(e_x - e_x')||_1 / b_L, over all bin pairs
    cols = f.left.T
    worst = max(np.abs(cols[i] - cols[j]).sum() for i in range(8) for j in range(8))
    assert worst / b_l == pytest.approx(0.5)
    assert f.sensitivity_right / b_r == pytest.approx(0.5)
    assert worst <= 2 * np.abs(cols).sum(axis=1).max() + 1e-12


def test_estimator_is_the_distinct_pair_average() -> None:
    gen = np.random.default_rng(3)
    left, right = gen.normal(size=(7, 3)), gen.normal(size=(7, 3))
    literal = np.mean([left[i] @ right[j] for i in range(7) for j in range(7) if i != j])
    assert ghazi.estimate(left, right) == pytest.approx(literal, rel=1e-12)
    stacked = ghazi.estimate(np.stack([left, left]), np.stack([right, right]))
    np.testing.assert_allclose(stacked, literal, rtol=1e-12)


def test_noiseless_reports_give_the_quantized_ustatistic(gini_setup) -> None:
    x, q, a = gini_setup
    f = ghazi.factorize(a)
    bins = q.quantize(x)
    value = ghazi.estimate(f.left.T[bins], f.right.T[bins])
    assert value == pytest.approx(quantized_ustatistic(x, q, a), rel=1e-12)


# -- Monte-Carlo: unbiasedness and variance ------------------------------------------------------

RUNS = 6000


@pytest.fixture(scope="module")
def mc_runs(gini_setup) -> np.ndarray:
    x, q, _ = gini_setup
    return ghazi.simulate(x, gini_kernel, quantizer=q, epsilon=2.0, runs=RUNS, rng=np.random.default_rng(5))


def test_unbiased_around_quantized_ustatistic(gini_setup, mc_runs) -> None:
    x, q, a = gini_setup
    target = quantized_ustatistic(x, q, a)
    assert_mean_near(mc_runs, target)


def test_mc_variance_matches_formula(gini_setup, mc_runs) -> None:
    x, q, a = gini_setup
    predicted = ghazi.variance(q.quantize(x), ghazi.factorize(a), epsilon=2.0)
    sample_var = mc_runs.var(ddof=1)
    # relative standard error of a sample variance: sqrt((kurtosis - 1) / runs)
    centred = mc_runs - mc_runs.mean()
    kurtosis = np.mean(centred ** 4) / np.mean(centred ** 2) ** 2
    rel_ci = Z999 * math.sqrt((kurtosis - 1.0) / RUNS)
    assert rel_ci < 0.12  # the run count makes the check meaningful at the 10-15 % level
    assert abs(sample_var / predicted - 1.0) < rel_ci


def test_truncated_mse_matches_monte_carlo(gini_setup) -> None:
    x, q, _ = gini_setup
    runs = 3000
    parts = ghazi.mse(x, gini_kernel, quantizer=q, epsilon=4.0, d=2)
    assert parts["factorization"] > 0 and parts["discretization"] > 0
    assert parts["total"] == pytest.approx(parts["discretization"] + parts["factorization"] + parts["noise"])
    est = ghazi.simulate(x, gini_kernel, quantizer=q, epsilon=4.0, d=2, runs=runs, rng=np.random.default_rng(8))
    squared = (est - ghazi.sample_ustatistic(x, gini_kernel, q)) ** 2
    assert abs(squared.mean() - parts["total"]) < Z999 * squared.std(ddof=1) / math.sqrt(runs)


def test_randomized_rounding_is_unbiased_for_its_target() -> None:
    q = Quantizer.interval(lower=0.0, upper=1.0, bins=6, rounding="randomized")
    x = beta_sample(200, 4)
    a = kernel_matrix(gini_kernel, q, kind="midpoint")
    runs = 3000
    est = ghazi.simulate(x, gini_kernel, quantizer=q, epsilon=3.0, runs=runs, rng=np.random.default_rng(9))
    target = quantized_ustatistic(x, q, a)
    assert_mean_near(est, target)


def test_sample_ustatistic_literal() -> None:
    q = Quantizer.interval(lower=0.0, upper=1.0, bins=4)
    x = beta_sample(9, 2)
    literal = np.mean([abs(x[i] - x[j]) for i in range(9) for j in range(9) if i != j])
    assert ghazi.sample_ustatistic(x, gini_kernel, q) == pytest.approx(literal, rel=1e-12)


# -- validation ----------------------------------------------------------------------------------

def test_validation_messages(gini_setup) -> None:
    x, q, a = gini_setup
    f = ghazi.factorize(a)
    with pytest.raises(ValueError, match="epsilon must be positive, got 0"):
        ghazi.laplace_scales(f, epsilon=0)
    with pytest.raises(ValueError, match="d must be at least 1, got 0"):
        ghazi.factorize(a, d=0)
    with pytest.raises(ValueError, match="matrix must be square"):
        ghazi.factorize(np.ones((2, 3)))
    with pytest.raises(ValueError, match="matrix must not be zero"):
        ghazi.factorize(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="matrix entries must be finite"):
        ghazi.factorize(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"bins must lie in \[0, 7\]"):
        ghazi.randomize(np.array([0, 8]), f, epsilon=1.0)
    with pytest.raises(TypeError, match="bins must be integer"):
        ghazi.randomize(np.array([0.5, 1.0]), f, epsilon=1.0)
    with pytest.raises(ValueError, match="runs must be at least 1, got 0"):
        ghazi.simulate(x, gini_kernel, quantizer=q, epsilon=1.0, runs=0)
    with pytest.raises(ValueError, match="reports must have equal shapes"):
        ghazi.estimate(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="n >= 2"):
        ghazi.estimate(np.zeros((1, 2)), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="mse supports simple rounding only"):
        ghazi.mse(x, gini_kernel, quantizer=Quantizer.interval(lower=0, upper=1, bins=4, rounding="randomized"),
                  epsilon=1.0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        ghazi.randomize(np.array([0, 1]), f, epsilon=1.0, rng=1)  # type: ignore[arg-type]
