"""Tests of :mod:`secure.noise.party`: distributions of the local noise draws.

Statistical checks use fixed seeds and acceptance regions derived from the distributions: a
two-sided 99.9% normal (CLT) interval for means and variances, with the variance of the sample
variance computed from the exact fourth central moment, and chi-square goodness of fit with
``p > 1e-3`` after pooling tails so that every expected count is at least 5.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from secure.noise.party import (
    centered_binomial,
    os_generator,
    polya,
    polya_difference,
)
from tests.statistics_checks import Z999

N_SAMPLES = 200_000


# --------------------------------------------------------------------------------------------------
# helpers: exact moments and acceptance regions

def polya_cumulants(shape: float, alpha: float) -> tuple[float, float, float]:
    """Mean, second and fourth cumulants of Polya(shape, alpha) (negative binomial)."""
    q = 1.0 - alpha
    mean = shape * alpha / q
    k2 = shape * alpha / q**2
    k4 = shape * alpha * (1 + 4 * alpha + alpha**2) / q**4
    return mean, k2, k4


def assert_mean_in_ci(samples: np.ndarray, mean: float, variance: float) -> None:
    n = samples.size
    half_width = Z999 * math.sqrt(variance / n)
    observed = float(np.mean(samples, dtype=np.float64))
    assert abs(observed - mean) <= half_width, (observed, mean, half_width)


def assert_variance_in_ci(samples: np.ndarray, variance: float, mu4: float) -> None:
    """Sample variance within the 99.9% CLT interval: Var(s^2) = (mu4 - var^2 (n-3)/(n-1)) / n."""
    n = samples.size
    x = samples.astype(np.float64)
    observed = float(np.var(x, ddof=1))
    se = math.sqrt((mu4 - variance**2 * (n - 3) / (n - 1)) / n)
    assert abs(observed - variance) <= Z999 * se, (observed, variance, Z999 * se)


def chisquare_pvalue(samples: np.ndarray, pmf: Callable[[np.ndarray], np.ndarray],
                     lower_tail: Callable[[int], float], upper_tail: Callable[[int], float],
                     centre: int, lo_bound: int | None = None) -> float:
    """Chi-square p-value with unit bins around ``centre`` and pooled tails (expected >= 5 each).

    ``lower_tail(k) = P[X <= k]``, ``upper_tail(k) = P[X >= k]``; ``lo_bound`` is the support's
    minimum if bounded (no lower tail bin is then needed below it).
    """
    n = samples.size
    lo = hi = centre
    # widen the central range while the new bin and the remaining tail both keep expected >= 5
    while True:
        grown = False
        if (lo_bound is None or lo - 1 >= lo_bound) and n * pmf(np.array([lo - 1]))[0] >= 5 and (
                (lo_bound is not None and lo - 1 == lo_bound) or n * lower_tail(lo - 2) >= 5):
            lo -= 1
            grown = True
        if n * pmf(np.array([hi + 1]))[0] >= 5 and n * upper_tail(hi + 2) >= 5:
            hi += 1
            grown = True
        if not grown:
            break
    values = np.arange(lo, hi + 1)
    expected = [n * p for p in pmf(values)]
    observed = [int(np.count_nonzero(samples == v)) for v in values]
    if lo_bound is None or lo > lo_bound:
        expected.insert(0, n * lower_tail(lo - 1))
        observed.insert(0, int(np.count_nonzero(samples < lo)))
    expected.append(n * upper_tail(hi + 1))
    observed.append(int(np.count_nonzero(samples > hi)))
    assert min(expected) >= 5
    exp_arr = np.array(expected)
    exp_arr *= n / exp_arr.sum()  # remove rounding drift of the analytic probabilities
    return float(stats.chisquare(np.array(observed), exp_arr).pvalue)


def dlap_pmf(alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda z: (1 - alpha) / (1 + alpha) * alpha ** np.abs(z).astype(float)


def dlap_upper_tail(alpha: float) -> Callable[[int], float]:
    """P[Z >= k] for DLap(alpha): alpha^k / (1 + alpha) for k >= 1."""
    def tail(k: int) -> float:
        if k >= 1:
            return alpha**k / (1 + alpha)
        return 1.0 - alpha ** (1 - k) / (1 + alpha)
    return tail


# --------------------------------------------------------------------------------------------------
# Polya

@pytest.mark.parametrize(
    ("shape", "alpha", "seed"),
    [(0.5, 0.3, 1), (1 / 3, 0.9, 2), (2.5, 0.6, 3), (1.0, math.exp(-1 / 50), 4)],
)
def test_polya_mean_and_variance(shape: float, alpha: float, seed: int) -> None:
    draws = polya(shape, alpha, size=N_SAMPLES, rng=np.random.default_rng(seed))
    mean, k2, k4 = polya_cumulants(shape, alpha)
    assert draws.dtype == np.int64 and draws.shape == (N_SAMPLES,)
    assert draws.min() >= 0
    assert_mean_in_ci(draws, mean, k2)
    assert_variance_in_ci(draws, k2, k4 + 3 * k2**2)


def test_polya_log_alpha_parameterisation() -> None:
    log_alpha = -1e-3  # alpha within 1e-3 of 1: mean r/(e^{1e-3} - 1) ~ 500 r
    shape = 0.25
    alpha = math.exp(log_alpha)
    draws = polya(shape, size=N_SAMPLES, rng=np.random.default_rng(5), log_alpha=log_alpha)
    mean = shape / math.expm1(-log_alpha)
    _, k2, k4 = polya_cumulants(shape, alpha)
    assert_mean_in_ci(draws, mean, k2)
    assert_variance_in_ci(draws, k2, k4 + 3 * k2**2)


@pytest.mark.parametrize(("shape", "alpha", "seed"), [(0.5, 0.7, 6), (1 / 3, 0.85, 7)])
def test_polya_goodness_of_fit(shape: float, alpha: float, seed: int) -> None:
    draws = polya(shape, alpha, size=N_SAMPLES, rng=np.random.default_rng(seed))
    dist = stats.nbinom(shape, 1 - alpha)  # scipy: failures before `shape` successes of prob 1-alpha
    pvalue = chisquare_pvalue(draws, dist.pmf, lambda k: float(dist.cdf(k)), lambda k: float(dist.sf(k - 1)),
                              centre=0, lo_bound=0)
    assert pvalue > 1e-3


def test_polya_alpha_zero_and_scalar_type() -> None:
    rng = np.random.default_rng(8)
    assert polya(0.5, 0.0, rng=rng) == 0
    assert np.array_equal(polya(0.5, 0.0, size=5, rng=rng), np.zeros(5, dtype=np.int64))
    assert polya(0.5, size=3, rng=rng, log_alpha=-math.inf).tolist() == [0, 0, 0]
    single = polya(0.5, 0.5, rng=rng)
    assert type(single) is int
    assert type(polya_difference(0.5, 0.5, rng=rng)) is int
    assert polya(0.5, 0.5, size=0, rng=rng).shape == (0,)


# --------------------------------------------------------------------------------------------------
# distributed discrete Laplace: sums of Polya differences

@pytest.mark.parametrize(
    ("parties", "threshold", "alpha", "seed"),
    [(1, 0, 0.8, 10), (3, 1, 0.8, 11), (5, 2, 0.8, 12), (5, 2, math.exp(-0.1), 13), (3, 1, 0.3, 14)],
)
def test_honest_parties_sum_is_discrete_laplace(parties: int, threshold: int, alpha: float, seed: int) -> None:
    """The m - t honest shares with shape 1/(m - t) add up to exactly DLap(alpha)."""
    rng = np.random.default_rng(seed)
    honest = parties - threshold
    total = np.zeros(N_SAMPLES, dtype=np.int64)
    for _ in range(honest):
        total += polya_difference(1 / honest, alpha, size=N_SAMPLES, rng=rng)
    tail = dlap_upper_tail(alpha)
    pvalue = chisquare_pvalue(total, dlap_pmf(alpha), lambda k: tail(-k), tail, centre=0)
    assert pvalue > 1e-3


@pytest.mark.parametrize(("parties", "threshold", "alpha", "seed"), [(3, 1, 0.8, 20), (5, 2, 0.9, 21), (7, 3, 0.5, 22)])
def test_all_parties_total_variance(parties: int, threshold: int, alpha: float, seed: int) -> None:
    """All m shares with shape 1/(m - t): variance m/(m - t) * 2 alpha / (1 - alpha)^2."""
    rng = np.random.default_rng(seed)
    shape = 1 / (parties - threshold)
    total = np.zeros(N_SAMPLES, dtype=np.int64)
    for _ in range(parties):
        total += polya_difference(shape, alpha, size=N_SAMPLES, rng=rng)
    _, k2, k4 = polya_cumulants(shape, alpha)
    # a difference doubles even cumulants; m independent shares multiply all cumulants by m
    var = parties * 2 * k2
    mu4 = parties * 2 * k4 + 3 * var**2
    assert var == pytest.approx(parties / (parties - threshold) * 2 * alpha / (1 - alpha) ** 2, rel=1e-12)
    assert_mean_in_ci(total, 0.0, var)
    assert_variance_in_ci(total, var, mu4)


# --------------------------------------------------------------------------------------------------
# centred binomial

@pytest.mark.parametrize(("trials", "size", "seed"),
                         [(2, N_SAMPLES, 30), (1000, N_SAMPLES, 31), (10**12, 20_000, 32),
                          (2**62, 20_000, 33)])
def test_centered_binomial_mean_and_variance(trials: int, size: int, seed: int) -> None:
    draws = centered_binomial(trials, size=size, rng=np.random.default_rng(seed))
    assert draws.dtype == np.int64 and draws.shape == (size,)
    assert np.all(np.abs(draws) <= trials // 2)
    var = trials / 4
    mu4 = 3 * trials**2 / 16 - trials / 8  # kappa4 = -N/8 for p = 1/2
    assert_mean_in_ci(draws, 0.0, var)
    assert_variance_in_ci(draws, var, mu4)


def test_centered_binomial_goodness_of_fit() -> None:
    trials = 40
    draws = centered_binomial(trials, size=N_SAMPLES, rng=np.random.default_rng(34))
    dist = stats.binom(trials, 0.5)
    half = trials // 2
    pvalue = chisquare_pvalue(draws, lambda z: dist.pmf(z + half), lambda k: float(dist.cdf(k + half)),
                              lambda k: float(dist.sf(k + half - 1)), centre=0)
    assert pvalue > 1e-3


def test_centered_binomial_small_cases() -> None:
    rng = np.random.default_rng(35)
    assert centered_binomial(0, rng=rng) == 0
    assert type(centered_binomial(10, rng=rng)) is int
    assert np.array_equal(centered_binomial(0, size=4, rng=rng), np.zeros(4, dtype=np.int64))
    assert set(centered_binomial(2, size=1000, rng=rng).tolist()) == {-1, 0, 1}


# --------------------------------------------------------------------------------------------------
# OS randomness

def test_os_generator_is_fresh() -> None:
    first, second = os_generator(), os_generator()
    assert isinstance(first, np.random.Generator)
    assert first.integers(0, 2**63, size=4).tolist() != second.integers(0, 2**63, size=4).tolist()


def test_default_noise_ignores_global_seed() -> None:
    np.random.seed(0)
    a = polya_difference(1.0, 0.99, size=16)
    np.random.seed(0)
    b = polya_difference(1.0, 0.99, size=16)
    assert a.tolist() != b.tolist()
    assert centered_binomial(10**6, size=16).tolist() != centered_binomial(10**6, size=16).tolist()
    assert isinstance(polya(0.5, 0.5), int)


# --------------------------------------------------------------------------------------------------
# validation

@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: polya(0, 0.5), ValueError, "shape must be positive, got 0"),
        (lambda: polya(-1.5, 0.5), ValueError, "shape must be positive, got -1.5"),
        (lambda: polya(math.inf, 0.5), ValueError, "shape must be finite, got inf"),
        (lambda: polya(True, 0.5), TypeError, "shape must be a number"),
        (lambda: polya(1, 1.0), ValueError, r"alpha must lie in \[0, 1\), got 1.0"),
        (lambda: polya(1, -0.1), ValueError, r"alpha must lie in \[0, 1\), got -0.1"),
        (lambda: polya(1, math.nan), ValueError, r"alpha must lie in \[0, 1\), got nan"),
        (lambda: polya(1, log_alpha=0.0), ValueError, "log_alpha must be negative"),
        (lambda: polya(1), TypeError, "exactly one of alpha and log_alpha"),
        (lambda: polya(1, 0.5, log_alpha=-1.0), TypeError, "exactly one of alpha and log_alpha"),
        (lambda: polya(1, 0.5, size=-1), ValueError, "size must be non-negative, got -1"),
        (lambda: polya(1, 0.5, size=2.0), TypeError, "size must be an integer or None"),
        (lambda: polya(1, 0.5, rng=np.random.RandomState(0)), TypeError, "rng must be a numpy.random.Generator"),
        (lambda: polya(1, 1 - 1e-15), ValueError, r"must be at most 2\*\*40"),
        (lambda: polya_difference(0, 0.5), ValueError, "shape must be positive, got 0"),
        (lambda: polya_difference(1, 1), ValueError, r"alpha must lie in \[0, 1\), got 1"),
        (lambda: centered_binomial(3), ValueError, "trials must be even, got 3"),
        (lambda: centered_binomial(-2), ValueError, "trials must be non-negative, got -2"),
        (lambda: centered_binomial(2.0), TypeError, "trials must be an integer"),
        (lambda: centered_binomial(2**62 + 2), ValueError, r"trials must be at most 2\*\*62"),
        (lambda: centered_binomial(2, size=-3), ValueError, "size must be non-negative, got -3"),
    ],
)
def test_validation(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()
