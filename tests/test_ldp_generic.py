"""Generic LDP protocol for degree-2 U-statistics (Bell et al. §3, Algorithm 1, App. A).

Exact checks: the k-RR channel and its epsilon-LDP ratio, the histogram server against the literal
pairwise average, the variance formulas against full enumeration on tiny inputs, the quantized
matrices.  Statistical checks use fixed seeds and 99.9 % two-sided intervals (z = 3.29) derived from
the sampling distributions; the run counts are chosen so that those intervals are narrow enough for
the claims (never tuned to pass).
"""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import dp.bell
from dp.bell.generic import (conditional_variance, estimate_from_histogram, histogram, lemma1_variance,
                            quantized_ustatistic, randomize, renyi2_entropy_from_histogram, rr_beta,
                            rr_channel, simulate, simulate_histograms, theorem1_variance_bound)
from dp.bell.quantize import (EVALUATION_BUDGET, Interval, Levels, Quantizer, auc_kernel, collision_kernel,
                             comparable_kernel, gini_kernel, kendall_kernel, kernel_matrix)
from tests.statistics_checks import Z999, assert_mean_near



def estimate(reports: np.ndarray | list[int], matrix: np.ndarray, *, epsilon: float) -> float:
    """The server's estimate from raw reports: their histogram, then ``estimate_from_histogram``."""
    bins = np.asarray(matrix).shape[0]
    return float(estimate_from_histogram(histogram(reports, bins=bins), matrix, epsilon=epsilon))


def beta_sample(n: int, seed: int) -> np.ndarray:
    """Skewed data on [0, 1] (Beta(2, 5))."""
    return np.random.default_rng(seed).beta(2.0, 5.0, n)


def correlated_sample(n: int, seed: int, rho: float = 0.6) -> np.ndarray:
    """Points in [0, 1]^2 with Kendall's tau about (2/pi) asin(rho): a Gaussian copula."""
    gen = np.random.default_rng(seed)
    z = gen.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], size=n)
    return stats.norm.cdf(z)


def scored_sample(n: int, seed: int) -> np.ndarray:
    """Points (score in [0, 1], label 0/1) with positives scoring higher on average."""
    gen = np.random.default_rng(seed)
    labels = (gen.random(n) < 0.4).astype(float)
    scores = np.clip(gen.normal(0.4 + 0.2 * labels, 0.15), 0.0, 1.0)
    return np.column_stack([scores, labels])


def variance_within(estimates: np.ndarray, formula: float, tolerance: float = 0.12) -> None:
    """Assert the sample variance matches ``formula`` within its 99.9 % interval and within ``tolerance``.

    The sample variance of ``R`` i.i.d. runs has ``Var(s^2) = sigma^4 (kappa - (R-3)/(R-1)) / R``
    (``kappa`` the kurtosis, estimated from the runs).  The interval must be well inside the
    tolerance (at most 2/3 of it) so that a pass is informative.  The estimator is a quadratic form
    in multinomial counts, heavier-tailed than normal when ``k / epsilon`` is large (kurtosis up to
    about 5 here), so ``R = 12 000`` runs give ``3.29 sqrt(4 / 12000) = 6 %`` at worst, inside the
    8 % that 2/3 of a 12 % tolerance allows.
    """
    runs = estimates.size
    kurtosis = stats.kurtosis(estimates, fisher=False)
    relative_se = math.sqrt((kurtosis - (runs - 3) / (runs - 1)) / runs)
    half_width = Z999 * relative_se
    assert half_width <= 2 * tolerance / 3, f"too few runs ({runs}) for a {tolerance:.0%} check: +-{half_width:.1%}"
    ratio = float(np.var(estimates, ddof=1)) / formula
    assert abs(ratio - 1.0) <= half_width, (ratio, half_width)
    assert abs(ratio - 1.0) <= tolerance


def mean_within(estimates: np.ndarray, target: float) -> None:
    """Assert the mean of the runs lies within its 99.9 % interval around ``target``."""
    assert_mean_near(estimates, target)


# --------------------------------------------------------------------------------------------------
# k-ary randomized response

@pytest.mark.parametrize("bins, epsilon", [(2, 0.5), (6, 1.3), (64, 3.0), (256, 0.1)])
def test_channel_is_the_paper_randomized_response_with_ratio_e_to_the_epsilon(bins: int, epsilon: float) -> None:
    beta = rr_beta(bins=bins, epsilon=epsilon)
    assert beta == pytest.approx(bins / (bins + math.exp(epsilon) - 1), rel=1e-13)
    channel = rr_channel(bins=bins, epsilon=epsilon)
    np.testing.assert_allclose(channel.sum(axis=1), 1.0, rtol=1e-13)
    denominator = bins + math.exp(epsilon) - 1
    np.testing.assert_allclose(np.diag(channel), math.exp(epsilon) / denominator, rtol=1e-12)
    np.testing.assert_allclose(channel[~np.eye(bins, dtype=bool)], 1.0 / denominator, rtol=1e-12)
    # epsilon-LDP: for every output y, max_x Q[x, y] / min_x' Q[x', y] = e^epsilon exactly
    ratios = channel.max(axis=0) / channel.min(axis=0)
    assert ratios.max() == pytest.approx(math.exp(epsilon), rel=1e-12)
    # E[e_R | x] = (1 - beta) e_x + b with b = beta/k
    np.testing.assert_allclose(channel, (1 - beta) * np.eye(bins) + beta / bins, rtol=1e-13)


def test_randomize_output_distribution_matches_channel_chi_square() -> None:
    bins, epsilon, draws = 6, 1.3, 60_000
    channel = rr_channel(bins=bins, epsilon=epsilon)
    gen = np.random.default_rng(11)
    for true_bin in range(bins):
        reports = randomize(np.full(draws, true_bin), bins=bins, epsilon=epsilon, rng=gen)
        observed = np.bincount(reports, minlength=bins)
        _, p_value = stats.chisquare(observed, draws * channel[true_bin])
        assert p_value > 1e-3, (true_bin, observed, p_value)


def test_rounding_then_response_stays_epsilon_ldp() -> None:
    """The composed channel p(x) = (1-beta) P(x) + b, for many inputs x, has ratios at most e^eps."""
    epsilon = 0.9
    quantizer = Quantizer.grid(lower=(0.0, -1.0), upper=(1.0, 1.0), bins=(3, 4), rounding="randomized")
    k = quantizer.bins
    beta = rr_beta(bins=k, epsilon=epsilon)
    points = np.random.default_rng(5).uniform((0.0, -1.0), (1.0, 1.0), size=(300, 2))
    idx, weights = quantizer.support(points)
    rounding = np.zeros((points.shape[0], k))
    np.add.at(rounding, (np.arange(points.shape[0])[:, None], idx), weights)
    composed = (1 - beta) * rounding + beta / k
    np.testing.assert_allclose(composed.sum(axis=1), 1.0, rtol=1e-12)
    assert (composed.max(axis=0) / composed.min(axis=0)).max() <= math.exp(epsilon) * (1 + 1e-12)


# --------------------------------------------------------------------------------------------------
# server: histogram formula == literal pairwise average

def _pairwise_average(reports: np.ndarray, matrix: np.ndarray, epsilon: float) -> float:
    """The literal average of the pair estimator ``(e_r - b)^T A_s (e_r' - b) / (1 - beta)^2`` over all ``C(n, 2)``
    pairs, ``A_s = (A + A^T)/2`` (Bell et al. App. A.1): the ``O(n^2)`` reference of the histogram formula."""
    k = matrix.shape[0]
    beta = rr_beta(bins=k, epsilon=epsilon)
    centred = np.eye(k)[reports] - beta / k  # (n, k): e_r - b
    first, second = np.triu_indices(reports.size, 1)
    total = float(np.einsum("pk,pk->", centred[first] @ (0.5 * (matrix + matrix.T)), centred[second]))
    return total / (first.size * (1.0 - beta) ** 2)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(2, 9), st.lists(st.integers(0, 1000), min_size=2, max_size=40),
       st.floats(0.05, 6.0), st.booleans(), st.integers(0, 2**31))
def test_histogram_server_equals_naive_pairwise_average(bins: int, raw: list[int], epsilon: float,
                                                       symmetric: bool, seed: int) -> None:
    reports = np.array(raw) % bins
    matrix = np.random.default_rng(seed).normal(size=(bins, bins))
    if symmetric:
        matrix = matrix + matrix.T
    fast = estimate(reports, matrix, epsilon=epsilon)
    slow = _pairwise_average(reports, matrix, epsilon)
    # float rounding only: relative to the size of one pair term, max|A| / (1 - beta)^2
    scale = np.abs(matrix).max() / (1 - rr_beta(bins=bins, epsilon=epsilon)) ** 2
    assert abs(fast - slow) <= 1e-11 * scale


def test_histogram_of_many_runs_and_batched_estimates() -> None:
    gen = np.random.default_rng(2)
    reports = gen.integers(0, 5, size=(7, 30))
    counts = histogram(reports, bins=5)
    assert counts.shape == (7, 5) and np.all(counts.sum(axis=1) == 30)
    matrix = gen.random((5, 5))
    batched = estimate_from_histogram(counts, matrix, epsilon=1.0)
    singles = [estimate(row, matrix, epsilon=1.0) for row in reports]
    np.testing.assert_allclose(batched, singles, rtol=1e-13)


def test_exact_means_and_variances_by_enumeration() -> None:
    """On 4 users and 3 bins, enumerate all 81 report vectors: mean = target, variances exact."""
    gen = np.random.default_rng(3)
    epsilon, k, n = 0.8, 3, 4
    beta = rr_beta(bins=k, epsilon=epsilon)
    matrix = gen.random((k, k))
    matrix = matrix + matrix.T
    for rounding in ("simple", "randomized"):
        quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=k, rounding=rounding)
        values = gen.random(n)
        idx, weights = quantizer.support(values)
        law = np.zeros((n, k))
        np.add.at(law, (np.arange(n)[:, None], idx), weights)
        reports_law = (1 - beta) * law + beta / k
        first = second = 0.0
        for combo in itertools.product(range(k), repeat=n):
            probability = float(np.prod(reports_law[np.arange(n), combo]))
            value = estimate(np.array(combo), matrix, epsilon=epsilon)
            first += probability * value
            second += probability * value * value
        assert first == pytest.approx(quantized_ustatistic(values, quantizer, matrix), rel=1e-12)
        assert second - first ** 2 == pytest.approx(conditional_variance(values, quantizer, matrix, epsilon=epsilon),
                                                    rel=1e-10)
    # Lemma 1: bins i.i.d. from D, so reports i.i.d. from (1 - beta) D + b
    distribution = gen.dirichlet(np.ones(k))
    marginal = (1 - beta) * distribution + beta / k
    first = second = 0.0
    for combo in itertools.product(range(k), repeat=n):
        probability = float(np.prod(marginal[list(combo)]))
        value = estimate(np.array(combo), matrix, epsilon=epsilon)
        first += probability * value
        second += probability * value * value
    assert first == pytest.approx(distribution @ matrix @ distribution, rel=1e-12)
    assert second - first ** 2 == pytest.approx(lemma1_variance(distribution, matrix, n=n, epsilon=epsilon), rel=1e-10)


# --------------------------------------------------------------------------------------------------
# unbiasedness around the quantized U-statistic

UNBIASED_CASES = [
    ("gini", "simple", "average"), ("gini", "simple", "midrange"),
    ("gini", "randomized", "average"), ("gini", "randomized", "midrange"),
    ("kendall", "simple", "average"), ("kendall", "simple", "midrange"),
    ("kendall", "randomized", "average"), ("kendall", "randomized", "midrange"),
    ("auc", "simple", "average"),
]


def _case(statistic: str, rounding: str) -> tuple[np.ndarray, Quantizer, object, float]:
    if statistic == "gini":
        return (beta_sample(300, 21), Quantizer.interval(lower=0.0, upper=1.0, bins=12, rounding=rounding),
                gini_kernel, 1.0)
    if statistic == "kendall":
        return (correlated_sample(300, 22),
                Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(4, 4), rounding=rounding), kendall_kernel, 2.0)
    quantizer = Quantizer([Interval(0.0, 1.0, 8), Levels((0.0, 1.0))], rounding=rounding)
    return scored_sample(300, 23), quantizer, auc_kernel, 2.0


@pytest.mark.parametrize("seed, statistic, rounding, kind", [(60 + i, *case) for i, case in enumerate(UNBIASED_CASES)])
def test_estimator_is_unbiased_for_the_quantized_ustatistic(seed: int, statistic: str, rounding: str,
                                                           kind: str) -> None:
    values, quantizer, kernel, epsilon = _case(statistic, rounding)
    matrix = kernel_matrix(kernel, quantizer, kind=kind)  # type: ignore[arg-type]
    target = quantized_ustatistic(values, quantizer, matrix)
    estimates = simulate(values, kernel, quantizer=quantizer,  # type: ignore[arg-type]
                         epsilon=epsilon, kind=kind, runs=3000, rng=np.random.default_rng(seed))
    mean_within(np.asarray(estimates), target)


def test_quantized_targets_are_within_their_deterministic_quantization_error() -> None:
    """The quantized U-statistics differ from the exact sample ones by at most the derived per-pair errors.

    Kendall, simple rounding on a product grid: a pair in different rows *and* columns keeps its
    concordance exactly (A = sign(i1-j1) sign(i2-j2)); any other pair errs by at most 1.  AUC: a
    comparable pair in different score bins is exact, one in the same score bin gets 1/2 and errs by
    at most 1/2.  Gini (both matrices): every pair errs by at most the bin width.
    """
    points = correlated_sample(300, 22)
    tau = stats.kendalltau(points[:, 0], points[:, 1], variant="b").statistic  # no ties: tau-b = tau-a
    grid = Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(16, 16))
    cells = np.column_stack(np.divmod(grid.quantize(points), 16))
    first, second = np.triu_indices(300, 1)
    shared = np.mean((cells[first, 0] == cells[second, 0]) | (cells[first, 1] == cells[second, 1]))
    assert abs(quantized_ustatistic(points, grid, kernel_matrix(kendall_kernel, grid)) - tau) <= shared + 1e-12

    values = beta_sample(300, 21)
    gini = np.abs(values[:, None] - values[None, :]).sum() / (300 * 299)
    line = Quantizer.interval(lower=0.0, upper=1.0, bins=12)
    for kind in ("average", "midrange"):
        assert abs(quantized_ustatistic(values, line, kernel_matrix(gini_kernel, line, kind=kind)) - gini) <= 1 / 12

    scored = scored_sample(300, 23)
    mixed = Quantizer([Interval(0.0, 1.0, 64), Levels((0.0, 1.0))])
    numerator = quantized_ustatistic(scored, mixed, kernel_matrix(auc_kernel, mixed))
    denominator = quantized_ustatistic(scored, mixed, kernel_matrix(comparable_kernel, mixed))
    positives, negatives = scored[scored[:, 1] == 1, 0], scored[scored[:, 1] == 0, 0]
    exact = ((positives[:, None] > negatives[None, :]).mean()
             + 0.5 * (positives[:, None] == negatives[None, :]).mean())
    score_bins = mixed.quantize(scored) // 2
    positive_bins, negative_bins = score_bins[scored[:, 1] == 1], score_bins[scored[:, 1] == 0]
    same_bin = np.mean(positive_bins[:, None] == negative_bins[None, :])
    assert abs(numerator / denominator - exact) <= same_bin / 2 + 1e-12


# --------------------------------------------------------------------------------------------------
# variance: Monte Carlo against the exact formulas

@pytest.mark.parametrize("seed, statistic, rounding, kind, epsilon", [
    (101, "gini", "randomized", "average", 1.0),
    (102, "gini", "simple", "midrange", 2.0),
    (103, "kendall", "simple", "average", 2.0),
    (104, "kendall", "randomized", "average", 3.0),
])
def test_variance_given_the_sample_matches_formula(seed: int, statistic: str, rounding: str, kind: str,
                                                   epsilon: float) -> None:
    values, quantizer, kernel, _ = _case(statistic, rounding)
    matrix = kernel_matrix(kernel, quantizer, kind=kind)  # type: ignore[arg-type]
    counts = simulate_histograms(values, quantizer=quantizer, epsilon=epsilon, runs=12_000,
                                 rng=np.random.default_rng(seed))
    estimates = np.asarray(estimate_from_histogram(counts, matrix, epsilon=epsilon))
    variance_within(estimates, conditional_variance(values, quantizer, matrix, epsilon=epsilon))


def test_lemma1_variance_matches_monte_carlo_with_fresh_samples() -> None:
    """Users draw their bins i.i.d. from D in every run (sampling + randomization, as in Lemma 1)."""
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=10)
    matrix = kernel_matrix(gini_kernel, quantizer, kind="average")
    edges = np.linspace(0.0, 1.0, 11)
    distribution = np.diff(stats.beta.cdf(edges, 2.0, 5.0))
    n, runs, epsilon = 250, 12_000, 1.0
    gen = np.random.default_rng(31)
    bins = gen.choice(quantizer.bins, size=(runs, n), p=distribution)
    reports = randomize(bins, bins=quantizer.bins, epsilon=epsilon, rng=gen)
    estimates = np.asarray(estimate_from_histogram(histogram(reports, bins=quantizer.bins), matrix, epsilon=epsilon))
    formula = lemma1_variance(distribution, matrix, n=n, epsilon=epsilon)
    variance_within(estimates, formula)
    mean_within(estimates, float(distribution @ matrix @ distribution))
    # Theorem 1 bounds the exact Lemma-1 variance (kernel values in [0, 1])
    assert formula <= theorem1_variance_bound(n=n, bins=quantizer.bins, epsilon=epsilon)


@pytest.mark.parametrize("bins, epsilon, n", [(2, 0.1, 2), (8, 1.0, 50), (64, 4.0, 1000), (256, 0.5, 10**6)])
def test_theorem1_bound_dominates_lemma1_for_unit_range_kernels(bins: int, epsilon: float, n: int) -> None:
    gen = np.random.default_rng(bins)
    bound = theorem1_variance_bound(n=n, bins=bins, epsilon=epsilon)
    for _ in range(5):
        matrix = gen.random((bins, bins))
        matrix = (matrix + matrix.T) / 2
        distribution = gen.dirichlet(np.full(bins, 0.3))
        assert lemma1_variance(distribution, matrix, n=n, epsilon=epsilon) <= bound
        assert lemma1_variance(distribution, 3 * matrix - 1, n=n, epsilon=epsilon) <= \
            theorem1_variance_bound(n=n, bins=bins, epsilon=epsilon, kernel_range=3.0)


# --------------------------------------------------------------------------------------------------
# quantization and matrices

@pytest.mark.parametrize("bins", [2, 5, 17])
def test_randomized_rounding_is_unbiased(bins: int) -> None:
    quantizer = Quantizer.interval(lower=-2.0, upper=3.0, bins=bins, rounding="randomized")
    values = np.random.default_rng(bins).uniform(-2.0, 3.0, 400)
    idx, weights = quantizer.support(values)
    np.testing.assert_allclose((quantizer.representatives[idx] * weights).sum(axis=1), values, atol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0)
    # empirically: one value rounded 200 000 times
    value, draws = 0.37, 200_000
    drawn = quantizer.quantize(np.full(draws, value), rng=np.random.default_rng(7))
    mean = float(quantizer.representatives[drawn].mean())
    step = 5.0 / (bins - 1)
    assert abs(mean - value) <= Z999 * step / 2 / math.sqrt(draws) + 1e-9


def test_randomized_rounding_on_a_grid_is_unbiased_per_axis() -> None:
    quantizer = Quantizer.grid(lower=(0.0, 10.0), upper=(1.0, 20.0), bins=(3, 6), rounding="randomized")
    points = np.random.default_rng(9).uniform((0.0, 10.0), (1.0, 20.0), size=(200, 2))
    idx, weights = quantizer.support(points)
    assert idx.shape == (200, 4)
    expected = np.einsum("nr,nrd->nd", weights, quantizer.representatives[idx])
    np.testing.assert_allclose(expected, points, atol=1e-12)
    draws = quantizer.quantize(np.repeat(points[:1], 100_000, axis=0), rng=np.random.default_rng(1))
    mean = quantizer.representatives[draws].mean(axis=0)
    spread = np.array([0.5, 2.0]) / 2
    assert np.all(np.abs(mean - points[0]) <= Z999 * spread / math.sqrt(100_000))


def test_simple_rounding_goes_to_the_nearest_midpoint_and_clips() -> None:
    quantizer = Quantizer.interval(lower=0.0, upper=2.0, bins=8)
    values = np.array([-5.0, 0.0, 0.2, 0.25, 0.26, 1.99, 2.0, 9.0])
    bins = quantizer.quantize(values)
    np.testing.assert_array_equal(bins, [0, 0, 0, 1, 1, 7, 7, 7])
    reps = quantizer.representatives
    inside = np.clip(np.random.default_rng(4).uniform(-1, 3, 500), 0, 2)
    nearest = np.abs(inside[:, None] - reps[None, :]).min(axis=1)
    np.testing.assert_allclose(np.abs(inside - reps[quantizer.quantize(inside)]), nearest, atol=1e-12)


def test_levels_round_to_the_nearest_level() -> None:
    quantizer = Quantizer.levels([3, 1, 2, 10])
    np.testing.assert_array_equal(quantizer.representatives, [1, 2, 3, 10])
    np.testing.assert_array_equal(quantizer.quantize([1, 2, 3, 10, 6.4, 6.6, -4, 99]), [0, 1, 2, 3, 2, 3, 0, 3])


@pytest.mark.parametrize("rounding", ["simple", "randomized"])
def test_midpoint_matrix_is_the_kernel_at_the_representatives(rounding: str) -> None:
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=9, rounding=rounding)
    reps = quantizer.representatives
    np.testing.assert_array_equal(kernel_matrix(gini_kernel, quantizer, kind="midpoint"),
                                  np.abs(reps[:, None] - reps[None, :]))
    grid = Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(3, 4), rounding=rounding)
    points = grid.representatives
    expected = np.sign(points[:, None, 0] - points[None, :, 0]) * np.sign(points[:, None, 1] - points[None, :, 1])
    np.testing.assert_array_equal(kernel_matrix(kendall_kernel, grid, kind="midpoint"), expected)


def test_eq14_midrange_matrix() -> None:
    """A^Mid = (max + min)/2 over the bin pair: f at the midpoints off the Gini diagonal, w/2 on it."""
    bins, m = 10, 32
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=bins)
    midrange = kernel_matrix(gini_kernel, quantizer, kind="midrange", subdivisions=m)
    midpoint = kernel_matrix(gini_kernel, quantizer, kind="midpoint")
    off = ~np.eye(bins, dtype=bool)
    np.testing.assert_allclose(midrange[off], midpoint[off], atol=1e-12)
    width = 1.0 / bins
    np.testing.assert_allclose(np.diag(midrange), (width - width / m) / 2, atol=1e-12)  # -> w/2 as m grows
    # Kendall on a product grid: all three matrices are sign(i1 - j1) sign(i2 - j2), exactly
    grid = Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(4, 3))
    i1, i2 = np.divmod(np.arange(12), 3)
    exact = np.sign(i1[:, None] - i1[None, :]) * np.sign(i2[:, None] - i2[None, :])
    for kind in ("midrange", "average", "midpoint"):
        np.testing.assert_array_equal(kernel_matrix(kendall_kernel, grid, kind=kind), exact)


def test_eq15_average_matrix_for_gini() -> None:
    """Off the diagonal |x - y| is linear on the bin pair (midpoint rule exact); diagonal w(m^2-1)/(3m^2)."""
    bins, m = 8, 16
    quantizer = Quantizer.interval(lower=0.0, upper=2.0, bins=bins)
    average = kernel_matrix(gini_kernel, quantizer, kind="average", subdivisions=m)
    reps = quantizer.representatives
    off = ~np.eye(bins, dtype=bool)
    np.testing.assert_allclose(average[off], np.abs(reps[:, None] - reps[None, :])[off], atol=1e-12)
    width = 2.0 / bins
    np.testing.assert_allclose(np.diag(average), width * (m * m - 1) / (3 * m * m), rtol=1e-12)


@pytest.mark.parametrize("quantizer", [
    Quantizer.interval(lower=0.0, upper=1.0, bins=7),
    Quantizer.interval(lower=-3.0, upper=1.0, bins=7, rounding="randomized"),
    Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 5.0), bins=(3, 5), rounding="randomized"),
    Quantizer([Interval(0.0, 1.0, 4), Levels((0.0, 1.0))]),
    Quantizer.levels([0, 1, 2]),
])
def test_average_and_midrange_of_a_constant_kernel_are_constant(quantizer: Quantizer) -> None:
    for kind in ("average", "midrange", "midpoint"):
        np.testing.assert_allclose(kernel_matrix(lambda x, y: 3.25, quantizer, kind=kind), 3.25, rtol=1e-15)


def test_scalar_kernel_functions_work_unvectorized() -> None:
    quantizer = Quantizer.grid(lower=(0.0, 0.0), upper=(1.0, 1.0), bins=(2, 3))

    def scalar_kendall(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.sign(x[0] - y[0]) * np.sign(x[1] - y[1]))

    for kind in ("average", "midrange", "midpoint"):
        unvectorized = kernel_matrix(scalar_kendall, quantizer, kind=kind,  # type: ignore[arg-type]
                                     subdivisions=3, vectorized=False)
        np.testing.assert_array_equal(unvectorized,
                                      kernel_matrix(kendall_kernel, quantizer, kind=kind, subdivisions=3))


def test_default_subdivisions_respect_the_evaluation_budget() -> None:
    calls: list[int] = []

    def counting(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        calls.append(x.shape[0])
        return np.abs(x - y)

    kernel_matrix(counting, Quantizer.interval(lower=0.0, upper=1.0, bins=256))
    assert 0 < sum(calls) <= EVALUATION_BUDGET


# --------------------------------------------------------------------------------------------------
# Rényi-2 entropy

def test_renyi2_entropy_is_close_to_the_sample_value_with_large_epsilon() -> None:
    gen = np.random.default_rng(41)
    probabilities = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.05, 0.02])
    values = gen.choice(8, size=20_000, p=probabilities)
    counts = np.bincount(values, minlength=8)
    n = values.size
    collision = float((counts * (counts - 1)).sum() / (n * (n - 1)))
    quantizer = Quantizer.levels(range(8))
    epsilon = 8.0
    spread = math.sqrt(conditional_variance(values, quantizer, np.eye(8), epsilon=epsilon))
    query = dp.bell.Query(statistic="renyi2", epsilon=epsilon, levels=tuple(range(8)))
    entropy = dp.bell.simulate(query, values, seed=0, noise_rng=gen).estimate
    # delta method: sd(H2) = sd(collision) / collision
    assert abs(entropy + math.log(collision)) <= Z999 * spread / collision
    assert abs(entropy + math.log(float(probabilities @ probabilities))) < 0.03
    np.testing.assert_array_equal(kernel_matrix(collision_kernel, quantizer), np.eye(8))


def test_renyi2_from_histogram_clips_to_the_valid_range() -> None:
    low_noise = renyi2_entropy_from_histogram(np.array([50, 0, 0, 0]), epsilon=5.0)
    assert 0.0 <= low_noise <= 0.1
    batched = renyi2_entropy_from_histogram(np.array([[1, 1, 1, 1], [4, 0, 0, 0]]), epsilon=0.01)
    assert np.all((batched >= 0) & (batched <= math.log(4) + 1e-12))
    assert estimate_from_histogram(np.array([2, 0, 0]), np.eye(3), epsilon=50.0) == pytest.approx(1.0, abs=1e-9)


# --------------------------------------------------------------------------------------------------
# scale and API

def test_a_million_reports_with_256_bins() -> None:
    """n = 10^6, k = 256 through the histogram server; the estimate lies in its 99.9 % interval."""
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=256)
    matrix = kernel_matrix(gini_kernel, quantizer)
    values = np.random.default_rng(51).beta(2.0, 5.0, 10**6)
    epsilon = 4.0
    reports = randomize(quantizer.quantize(values), bins=256, epsilon=epsilon, rng=np.random.default_rng(52))
    value = estimate(reports, matrix, epsilon=epsilon)
    target = quantized_ustatistic(values, quantizer, matrix)
    spread = math.sqrt(conditional_variance(values, quantizer, matrix, epsilon=epsilon))
    assert abs(value - target) <= Z999 * spread


def test_simulate_returns_one_or_many_and_is_reproducible() -> None:
    values = beta_sample(100, 1)
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=6, rounding="randomized")
    single = simulate(values, gini_kernel, quantizer=quantizer, epsilon=1.0, rng=np.random.default_rng(3))
    assert isinstance(single, float)
    many = simulate(values, gini_kernel, quantizer=quantizer, epsilon=1.0, runs=5, rng=np.random.default_rng(3))
    assert isinstance(many, np.ndarray) and many.shape == (5,)
    again = simulate(values, gini_kernel, quantizer=quantizer, epsilon=1.0, runs=5, rng=np.random.default_rng(3))
    np.testing.assert_array_equal(many, again)
    # default randomness from the OS works without a generator
    assert math.isfinite(simulate(values, gini_kernel, quantizer=quantizer, epsilon=1.0))  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# validation

def test_validation_messages() -> None:
    with pytest.raises(ValueError, match="epsilon must be positive, got 0"):
        rr_beta(bins=4, epsilon=0)
    with pytest.raises(ValueError, match="epsilon must be positive, got -1"):
        randomize([0, 1], bins=4, epsilon=-1)
    with pytest.raises(ValueError, match="epsilon must be finite"):
        rr_channel(bins=4, epsilon=math.inf)
    with pytest.raises(ValueError, match="bins must be at least 2, got 1"):
        rr_beta(bins=1, epsilon=1.0)
    with pytest.raises(ValueError, match="bins must be at least 2, got 1"):
        Quantizer.interval(lower=0.0, upper=1.0, bins=1)
    with pytest.raises(ValueError, match="bins must be at least 2, got 1"):
        Quantizer.levels([5])
    with pytest.raises(ValueError, match="bins must be at least 2 for randomized rounding, got 1"):
        Quantizer([Interval(0.0, 1.0, 1), Interval(0.0, 1.0, 3)], rounding="randomized")
    with pytest.raises(ValueError, match="upper must be greater than lower"):
        Quantizer.interval(lower=1.0, upper=1.0, bins=4)
    with pytest.raises(ValueError, match="lower must be finite"):
        Quantizer.interval(lower=-math.inf, upper=1.0, bins=4)
    with pytest.raises(ValueError, match="rounding must be one of simple, randomized, got 'nearest'"):
        Quantizer.interval(lower=0.0, upper=1.0, bins=4, rounding="nearest")
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=4)
    with pytest.raises(ValueError, match="kind must be one of average, midrange, midpoint, got 'mid'"):
        kernel_matrix(gini_kernel, quantizer, kind="mid")
    with pytest.raises(ValueError, match="values must be finite"):
        quantizer.quantize([0.1, math.nan])
    with pytest.raises(ValueError, match=r"values must have shape \(n, 2\)"):
        Quantizer.grid(lower=(0, 0), upper=(1, 1), bins=(2, 2)).quantize([0.1, 0.2])
    with pytest.raises(ValueError, match="kernel must return one value per pair"):
        kernel_matrix(lambda x, y: np.ones(3), quantizer)
    with pytest.raises(ValueError, match="kernel values must be finite"):
        kernel_matrix(lambda x, y: np.full(x.shape, np.nan), quantizer)
    with pytest.raises(ValueError, match=r"reports must lie in \[0, 3\]"):
        estimate([0, 4], np.eye(4), epsilon=1.0)
    with pytest.raises(ValueError, match="at least 2 reports are needed, got 1"):
        estimate_from_histogram([1, 0, 0, 0], np.eye(4), epsilon=1.0)
    with pytest.raises(ValueError, match="counts must be non-negative"):
        estimate_from_histogram([3, -1, 0, 0], np.eye(4), epsilon=1.0)
    with pytest.raises(ValueError, match=r"counts must have shape \(4,\)"):
        estimate_from_histogram([3, 1, 0], np.eye(4), epsilon=1.0)
    with pytest.raises(ValueError, match="matrix must be square"):
        estimate_from_histogram([3, 1, 0, 0], np.ones((4, 3)), epsilon=1.0)
    with pytest.raises(ValueError, match="matrix must be 4 x 4 for 4 bins"):
        quantized_ustatistic([0.1, 0.2], quantizer, np.eye(3))
    with pytest.raises(ValueError, match="distribution must sum to 1"):
        lemma1_variance([0.5, 0.4, 0.0, 0.0], np.eye(4), n=10, epsilon=1.0)
    with pytest.raises(ValueError, match="n must be at least 2, got 1"):
        theorem1_variance_bound(n=1, bins=4, epsilon=1.0)
    with pytest.raises(ValueError, match="kernel_range must be positive, got 0"):
        theorem1_variance_bound(n=10, bins=4, epsilon=1.0, kernel_range=0)
    with pytest.raises(ValueError, match="runs must be at least 1, got 0"):
        simulate([0.1, 0.2], gini_kernel, quantizer=quantizer, epsilon=1.0, runs=0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        randomize([0, 1], bins=4, epsilon=1.0, rng=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="bins must be an integer"):
        rr_beta(bins=2.5, epsilon=1.0)  # type: ignore[arg-type]
