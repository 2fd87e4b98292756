"""Tests of :mod:`dp.calibration`: discrete Laplace and binomial calibration, coalition variants.

``binomial_delta`` is checked against three independent references: exact rational hockey-stick
sums over the full support (both directions, 80-digit decimals) for small ``N``; the maximum over
``k`` of ``F(k) - e^eps F(k - Δ)`` with scipy's binomial cdf for moderate ``N``; and, for large
``N``, a direct sum of the positive terms with the log pmf anchored every 4096 points by MPFR's
correctly rounded ``lgamma`` (gmpy2) and propagated by exact step ratios in between.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dp import calibration
from dp.calibration import (
    binomial_delta,
    binomial_trials,
    discrete_laplace_alpha,
    discrete_laplace_log_alpha,
    discrete_laplace_pmf,
    discrete_laplace_variance,
    distributed_binomial_variance,
    distributed_laplace_variance,
    party_binomial_trials,
    party_noise_shape,
)

# --------------------------------------------------------------------------------------------------
# references for binomial_delta


def exact_hockey_stick(trials: int, shift: int, epsilon: float) -> tuple[Decimal, Decimal]:
    """Both directions of sum_k max(0, P(k) - e^eps Q(k)), P = Bin(N, 1/2), Q = P shifted by ``shift``."""
    with localcontext() as ctx:
        ctx.prec = 80
        e = Decimal(epsilon).exp()
        total = Decimal(2) ** trials
        coef = [math.comb(trials, k) for k in range(trials + 1)]

        def b(k: int) -> Decimal:
            return Decimal(coef[k]) / total if 0 <= k <= trials else Decimal(0)

        forward = sum((max(Decimal(0), b(k) - e * b(k - shift)) for k in range(trials + shift + 1)), Decimal(0))
        backward = sum((max(Decimal(0), b(k - shift) - e * b(k)) for k in range(trials + shift + 1)), Decimal(0))
        return forward, backward


def scipy_delta(trials: int, shift: int, epsilon: float) -> float:
    """max_k F(k) - e^eps F(k - shift): increments b(k) - e^eps b(k - shift) change sign once."""
    k = np.arange(0, trials + 1)
    values = stats.binom.cdf(k, trials, 0.5) - math.exp(epsilon) * stats.binom.cdf(k - shift, trials, 0.5)
    return float(values.max())


def anchored_log_pmf(lo: int, hi: int, n: int) -> np.ndarray:
    """log b(k) for k in [lo, hi] (-inf below 0), MPFR lgamma anchors every 4096 points."""
    gmpy2 = pytest.importorskip("gmpy2")
    ctx = gmpy2.get_context()
    ctx.precision = 160
    log_total = gmpy2.lgamma(gmpy2.mpfr(n + 1))[0] - n * gmpy2.log(gmpy2.mpfr(2))

    def anchor(k: int) -> float:
        return float(log_total - gmpy2.lgamma(gmpy2.mpfr(k + 1))[0] - gmpy2.lgamma(gmpy2.mpfr(n - k + 1))[0])

    out = np.full(hi - lo + 1, -np.inf)
    for start in range(max(lo, 0), hi + 1, 4096):
        stop = min(hi, start + 4095)
        ks = np.arange(start, stop, dtype=np.float64)
        steps = np.log1p((n - 2 * ks - 1) / (ks + 1))  # log b(k+1)/b(k), exact ratio
        out[start - lo] = anchor(start)
        out[start - lo + 1: stop - lo + 1] = out[start - lo] + np.cumsum(steps)
    return out


def anchored_delta(n: int, shift: int, epsilon: float) -> float:
    """Direct sum of max(0, b(k) - e^eps b(k - shift)) over every k where it can matter."""
    hi = min(n, n // 2 + shift // 2 + 2)  # b(k) <= b(k - shift) beyond the midpoint n/2 + shift/2
    lo = max(0, n // 2 - 40 * math.isqrt(n) - 64)  # 80 standard deviations below the mean
    log_p = anchored_log_pmf(lo, hi, n)
    log_q = anchored_log_pmf(lo - shift, hi - shift, n)
    terms = np.exp(log_p) * -np.expm1(np.minimum(epsilon - (log_p - log_q), 0.0))
    return math.fsum(terms[np.isfinite(terms)])


# --------------------------------------------------------------------------------------------------
# binomial_delta


@pytest.mark.parametrize("trials", [10, 50, 200])
@pytest.mark.parametrize("shift", [1, 3])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_binomial_delta_matches_exact_sum(trials: int, shift: int, epsilon: float) -> None:
    forward, backward = exact_hockey_stick(trials, shift, epsilon)
    assert abs(forward - backward) <= Decimal("1e-60") * forward  # symmetric, as claimed
    got = binomial_delta(trials, shift, epsilon)
    assert got == pytest.approx(float(forward), rel=1e-12, abs=0.0)


@pytest.mark.parametrize(("trials", "shift", "epsilon"),
                         [(1, 1, 0.5), (3, 2, 0.1), (7, 7, 1.0), (20, 19, 3.0), (64, 10, 0.05),
                          (200, 40, 1.0), (501, 2, 1.0), (1000, 3, 0.5)])
def test_binomial_delta_more_exact_cases(trials: int, shift: int, epsilon: float) -> None:
    forward, _ = exact_hockey_stick(trials, shift, epsilon)
    assert binomial_delta(trials, shift, epsilon) == pytest.approx(float(forward), rel=1e-12, abs=0.0)


@settings(max_examples=60, deadline=None, database=None)
@given(trials=st.integers(0, 80), shift=st.integers(1, 12), epsilon=st.floats(0.02, 6.0))
def test_binomial_delta_property_exact(trials: int, shift: int, epsilon: float) -> None:
    forward, backward = exact_hockey_stick(trials, shift, epsilon)
    reference = float(max(forward, backward))
    assert binomial_delta(trials, shift, epsilon) == pytest.approx(reference, rel=1e-11, abs=1e-300)


def test_binomial_delta_disjoint_supports() -> None:
    assert binomial_delta(0, 1, 1.0) == 1.0
    assert binomial_delta(4, 5, 0.1) == 1.0
    assert binomial_delta(5, 5, 1.0) == pytest.approx(1 - 2.0**-5, rel=1e-15)  # overlap only at k = 5


@pytest.mark.parametrize(("trials", "shift", "epsilon"), [(1000, 1, 0.3), (10_000, 2, 0.2), (100_000, 7, 0.1)])
def test_binomial_delta_matches_scipy_tails(trials: int, shift: int, epsilon: float) -> None:
    # scipy's cdf is accurate to ~1e-13 here; the difference amplifies it by ~z^2/eps
    assert binomial_delta(trials, shift, epsilon) == pytest.approx(scipy_delta(trials, shift, epsilon), rel=1e-9)


@pytest.mark.parametrize(
    ("trials", "shift", "epsilon"),
    [
        (51_341, 3, 0.1),                                    # short window: term-by-term sum
        (117_800_000, 1024, 1.0),                            # short window at large N
        (11_780_000_000, 8192, 1.0),                         # long window: Euler-Maclaurin on the terms
        (1_656_501_912, 8763, 0.13492593246770238),          # long window, large shift: two tails
        (15_407, 47, 0.2217),                                # k* above the mean
        (40_000_000_000, 300_000, 2.0),                      # k* above the mean, large N
    ],
)
def test_binomial_delta_large_trials_against_anchored_sum(trials: int, shift: int, epsilon: float) -> None:
    reference = anchored_delta(trials, shift, epsilon)
    assert 1e-15 < reference < 1
    assert binomial_delta(trials, shift, epsilon) == pytest.approx(reference, rel=1e-10)


def test_binomial_delta_smaller_shifts_are_no_worse() -> None:
    for trials in (10, 51, 200):
        for epsilon in (0.3, 1.0, 2.0):
            deltas = [float(exact_hockey_stick(trials, s, epsilon)[0]) for s in range(1, 13)]
            assert all(a <= b * (1 + 1e-12) for a, b in zip(deltas, deltas[1:]))


def test_binomial_delta_non_increasing_in_trials() -> None:
    for shift, epsilon in ((1, 1.0), (5, 0.5), (64, 0.2)):
        values = [binomial_delta(n, shift, epsilon) for n in range(0, 400)]
        assert all(b <= a * (1 + 1e-12) for a, b in zip(values, values[1:]))
    big = [binomial_delta(n, 2**10, 1.0) for n in range(10**8, 10**8 + 10**7, 10**6)]
    assert all(b < a for a, b in zip(big, big[1:]))


# --------------------------------------------------------------------------------------------------
# binomial_trials and the coalition version

TRIALS_SETTINGS = [
    (1.0, 1e-6, 1),
    (0.5, 1e-9, 3),
    (2.0, 1e-8, 2**10),
    (1.0, 1e-6, 2**17),
    (0.1, 1e-9, 2**17),
    (1.0, 1e-9, 2**17),
    (0.5, 1e-7, 2**19),
]


@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), TRIALS_SETTINGS)
def test_binomial_trials_is_minimal_even(epsilon: float, delta: float, sensitivity: int) -> None:
    trials = binomial_trials(epsilon, delta, sensitivity)
    assert trials % 2 == 0
    assert binomial_delta(trials, sensitivity, epsilon) <= delta
    assert binomial_delta(trials - 2, sensitivity, epsilon) > delta
    gaussian = 8 * math.log(1.25 / delta) * sensitivity**2 / epsilon**2  # N/4 = classical Gaussian variance
    assert 0.3 < trials / gaussian < 1.5


def test_binomial_trials_too_many() -> None:
    with pytest.raises(ValueError, match=r"more than 2\*\*53 trials needed"):
        binomial_trials(0.01, 1e-12, 2**24)


@pytest.mark.parametrize(("parties", "threshold"), [(1, 0), (3, 1), (5, 2), (10, 4), (4, 1)])
@pytest.mark.parametrize(("epsilon", "delta", "sensitivity"), [(1.0, 1e-6, 1), (0.5, 1e-8, 2**12)])
def test_party_binomial_trials(parties: int, threshold: int, epsilon: float, delta: float, sensitivity: int) -> None:
    total = binomial_trials(epsilon, delta, sensitivity)
    per_party = party_binomial_trials(epsilon, delta, sensitivity, parties, threshold)
    honest = parties - threshold
    assert per_party % 2 == 0
    assert honest * per_party >= total > honest * (per_party - 2)
    assert binomial_delta(honest * per_party, sensitivity, epsilon) <= delta
    if honest == 1:
        assert per_party == total
    variance = distributed_binomial_variance(per_party, parties)
    assert variance == parties * per_party / 4
    single = total / 4
    ratio = parties / honest
    assert ratio <= variance / single <= ratio * (1 + 2 * honest / total)


# --------------------------------------------------------------------------------------------------
# discrete Laplace


@pytest.mark.parametrize("alpha", [0.0, 0.1, 0.5, 0.9, math.exp(-1e-3)])
def test_discrete_laplace_pmf_sums_to_one_and_variance(alpha: float) -> None:
    reach = 50 if alpha == 0 else int(60 / -math.log(alpha)) + 1
    z = np.arange(-reach, reach + 1)
    pmf = discrete_laplace_pmf(z, alpha)
    tail = 2 * alpha ** (reach + 1) / (1 + alpha)  # P[|Z| > reach]
    assert math.fsum(pmf) + tail == pytest.approx(1.0, abs=1e-12)
    assert np.allclose(pmf, pmf[::-1], rtol=0, atol=0)
    numeric_variance = math.fsum(z.astype(float) ** 2 * pmf)
    assert numeric_variance == pytest.approx(discrete_laplace_variance(alpha), rel=1e-10, abs=1e-300)


def test_discrete_laplace_pmf_values() -> None:
    assert discrete_laplace_pmf([0, 1, -2], 0.5) == pytest.approx([1 / 3, 1 / 6, 1 / 12], rel=1e-15)
    assert discrete_laplace_pmf([0, 3], 0.0).tolist() == [1.0, 0.0]
    assert discrete_laplace_pmf(np.array([[1.0, -1.0]]), 0.25).shape == (1, 2)


@pytest.mark.parametrize(("epsilon", "sensitivity"), [(1.0, 1), (0.5, 7), (0.1, 2**17)])
def test_discrete_laplace_alpha_gives_epsilon(epsilon: float, sensitivity: int) -> None:
    alpha = discrete_laplace_alpha(epsilon, sensitivity)
    assert alpha == pytest.approx(math.exp(-epsilon / sensitivity), rel=1e-15)
    assert discrete_laplace_log_alpha(epsilon, sensitivity) == -epsilon / sensitivity
    z = np.arange(-3 * sensitivity, 3 * sensitivity + 1)
    log_ratio = np.log(discrete_laplace_pmf(z, alpha)) - np.log(discrete_laplace_pmf(z - sensitivity, alpha))
    assert np.max(np.abs(log_ratio)) == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize(("parties", "threshold"), [(1, 0), (3, 1), (5, 2), (7, 3), (4, 0)])
def test_party_shape_and_distributed_variance(parties: int, threshold: int) -> None:
    shape = party_noise_shape(parties, threshold)
    assert shape == 1 / (parties - threshold)
    alpha = 0.8
    single = discrete_laplace_variance(alpha)
    assert single == pytest.approx(2 * 0.8 / 0.2**2, rel=1e-14)
    # m shares, each a difference of two Polya(shape, alpha) of variance shape alpha / (1 - alpha)^2
    share_sum = parties * 2 * shape * alpha / (1 - alpha) ** 2
    assert distributed_laplace_variance(alpha, parties, threshold) == pytest.approx(share_sum, rel=1e-14)
    assert distributed_laplace_variance(alpha, parties, threshold) == pytest.approx(
        parties / (parties - threshold) * single, rel=1e-14)


# --------------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: discrete_laplace_alpha(0, 1), ValueError, "epsilon must be positive, got 0"),
        (lambda: discrete_laplace_alpha(-1, 1), ValueError, "epsilon must be positive, got -1"),
        (lambda: discrete_laplace_alpha(math.inf, 1), ValueError, "epsilon must be finite, got inf"),
        (lambda: discrete_laplace_alpha(1, 0), ValueError, "sensitivity must be positive, got 0"),
        (lambda: discrete_laplace_alpha(1, "2"), TypeError, "sensitivity must be a number"),
        (lambda: discrete_laplace_log_alpha(1, -3), ValueError, "sensitivity must be positive, got -3"),
        (lambda: discrete_laplace_pmf([0], 1.0), ValueError, r"alpha must lie in \[0, 1\), got 1.0"),
        (lambda: discrete_laplace_pmf([0.5], 0.5), ValueError, "values must be integers"),
        (lambda: discrete_laplace_pmf(["a"], 0.5), TypeError, "values must be integers"),
        (lambda: discrete_laplace_variance(-0.5), ValueError, r"alpha must lie in \[0, 1\), got -0.5"),
        (lambda: party_noise_shape(3, 2), ValueError, r"threshold must be below half the number of parties \(3\), got 2"),
        (lambda: party_noise_shape(0, 0), ValueError, "parties must be at least 1, got 0"),
        (lambda: party_noise_shape(3, -1), ValueError, "threshold must be non-negative, got -1"),
        (lambda: distributed_laplace_variance(0.5, 2, 1), ValueError, "threshold must be below half"),
        (lambda: binomial_delta(-1, 1, 1.0), ValueError, "trials must be non-negative, got -1"),
        (lambda: binomial_delta(10, 0, 1.0), ValueError, "sensitivity must be at least 1, got 0"),
        (lambda: binomial_delta(10, 1, 0), ValueError, "epsilon must be positive, got 0"),
        (lambda: binomial_delta(10.0, 1, 1.0), TypeError, "trials must be an integer"),
        (lambda: binomial_delta(2**53 + 2, 1, 1.0), ValueError, r"trials must be at most 2\*\*53"),
        (lambda: binomial_trials(1.0, 0, 1), ValueError, r"delta must lie in \(0, 1\), got 0"),
        (lambda: binomial_trials(1.0, 1.0, 1), ValueError, r"delta must lie in \(0, 1\), got 1.0"),
        (lambda: binomial_trials(0, 1e-6, 1), ValueError, "epsilon must be positive, got 0"),
        (lambda: binomial_trials(1.0, 1e-6, 2.5), TypeError, "sensitivity must be an integer"),
        (lambda: party_binomial_trials(1.0, 1e-6, 1, 2, 1), ValueError, "threshold must be below half"),
        (lambda: party_binomial_trials(1.0, -1e-6, 1, 3, 1), ValueError, r"delta must lie in \(0, 1\)"),
        (lambda: distributed_binomial_variance(-2, 3), ValueError, "party_trials must be non-negative, got -2"),
        (lambda: distributed_binomial_variance(4, 0), ValueError, "parties must be at least 1, got 0"),
    ],
)
def test_validation(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_module_exports() -> None:
    for name in calibration.__all__:
        assert hasattr(calibration, name)


@pytest.mark.parametrize(("trials", "epsilon", "tolerance"), [(10**10, 1e-4, 1e-9), (10**8, 1e-3, 1e-10)])
def test_binomial_delta_small_epsilon_unit_shift(trials: int, epsilon: float, tolerance: float) -> None:
    """Shift 1: L(k) = log((n - k + 1)/k) exactly, so the reference has no cancellation in L.

    Small eps is the hardest regime (relative error ~1e-14 z^2/eps, see the docstring).
    """
    lo, hi = trials // 2 - 40 * math.isqrt(trials), trials // 2  # +-80 sd; L(k) <= 0 above n/2
    log_p = anchored_log_pmf(lo, hi, trials)
    k = np.arange(lo, hi + 1, dtype=np.float64)
    loss = np.log1p((trials + 1 - 2 * k) / k)
    keep = loss > epsilon
    reference = math.fsum(np.exp(log_p[keep]) * -np.expm1(epsilon - loss[keep]))
    assert binomial_delta(trials, 1, epsilon) == pytest.approx(reference, rel=tolerance)
