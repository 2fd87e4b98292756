"""Exactness of the party-noise samplers (:mod:`secure.noise.exact`, issue 21 item 3).

Goodness of fit: Pearson's chi-square against the *exact* pmf (computed here in rational/float
arithmetic independent of the sampler), with unit bins and both tails pooled so that every expected
count is at least 5; the test rejects at significance 1e-3, i.e. when the statistic exceeds the
0.999 quantile of chi-square with ``bins - 1`` degrees of freedom.  The random bits come from a
seeded PCG64 bit generator read as raw 64-bit integers (:class:`GeneratorBits`), the same stream on
every platform; production reads :mod:`secrets`.

No float: the sampler module's source has no float literal, no float conversion, no floating-point
math call, and no local variable of any of its frames ever holds a float or a float array while it
runs (a trace hook inspects every line); its 64-bit decision tables agree with a pure-rational
reference on a fixed bit stream.
"""
from __future__ import annotations

import ast
import inspect
import math
import sys
from fractions import Fraction
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import pytest
from scipy import stats

from secure.noise import exact
from secure.noise.exact import GeneratorBits, binomial_half, exp_neg_bounds, negative_binomial
from secure.noise.party import centered_binomial, exact_rate, exact_shape, polya_difference

SIGNIFICANCE = 1e-3


def _bits(seed: int) -> GeneratorBits:
    return GeneratorBits(np.random.Generator(np.random.PCG64(seed)))


def nb_pmf(shape: float, alpha: float, k: np.ndarray) -> np.ndarray:
    """``C(k + r - 1, k) (1 - alpha)^r alpha^k`` (scipy's nbinom counts failures with success prob 1 - alpha)."""
    return np.asarray(stats.nbinom.pmf(k, shape, 1 - alpha))


def dlap_pmf(alpha: float, z: np.ndarray) -> np.ndarray:
    return (1 - alpha) / (1 + alpha) * alpha ** np.abs(z).astype(float)


def chi_square(samples: np.ndarray, pmf: Any, low: int, high: int) -> tuple[float, int, float]:
    """Pearson statistic over the unit bins ``low..high`` that keep expected >= 5, tails pooled; (stat, dof, p)."""
    n = samples.size
    values = np.arange(low, high + 1)
    probs = pmf(values)
    keep = values[n * probs >= 5]
    lo, hi = int(keep.min()), int(keep.max())
    values = np.arange(lo, hi + 1)
    probs = pmf(values)
    expected = list(n * probs)
    observed = [int(np.count_nonzero(samples == v)) for v in values]
    below = n * float(pmf(np.arange(low, lo)).sum()) if lo > low else 0.0
    above = n * (1.0 - float(probs.sum())) - below
    if below >= 5:
        expected.insert(0, below)
        observed.insert(0, int(np.count_nonzero(samples < lo)))
    else:  # merge into the first bin
        expected[0] += below
        observed[0] += int(np.count_nonzero(samples < lo))
    if above >= 5:
        expected.append(above)
        observed.append(int(np.count_nonzero(samples > hi)))
    else:
        expected[-1] += above
        observed[-1] += int(np.count_nonzero(samples > hi))
    exp_arr = np.array(expected)
    exp_arr *= n / exp_arr.sum()
    obs = np.array(observed)
    statistic = float(((obs - exp_arr) ** 2 / exp_arr).sum())
    dof = obs.size - 1
    return statistic, dof, float(stats.chi2.sf(statistic, dof))


def _threshold(dof: int) -> float:
    return float(stats.chi2.ppf(1 - SIGNIFICANCE, dof))


# ------------------------------------------------------------------------------------ goodness of fit

POLYA_CASES = [  # (shape, rate): small and larger means, the share shapes 1/2 and 1/3 and a delegate's 1
    (Fraction(1, 2), Fraction(1, 5)),
    (Fraction(1, 3), Fraction(1, 10)),
    (Fraction(1, 3), Fraction(1, 60)),
    (Fraction(1), Fraction(3, 2)),
]


@pytest.mark.parametrize(("shape", "rate"), POLYA_CASES)
def test_polya_share_fits_exact_pmf(shape: Fraction, rate: Fraction) -> None:
    samples = negative_binomial(shape, rate, 200_000, _bits(11))
    alpha = math.exp(-float(rate))
    statistic, dof, pvalue = chi_square(samples, lambda k: nb_pmf(float(shape), alpha, k), 0, 20_000)
    assert statistic <= _threshold(dof), (statistic, dof, pvalue)


LARGE_SHAPE_CASES = [  # (shape, rate): integer part by geometric digits, fractional part by thinning
    (Fraction(15, 2), Fraction(1, 20)),   # 7 + 1/2: both paths, B = 5 binary levels
    (Fraction(390), Fraction(1, 10)),     # the all-pairs baseline's summed shape (m/(m-t) * 780 / 3), B = 4
    (Fraction(3), Fraction(3, 2)),        # B = 0: the Binomial(N_t, e^{-rate}) chain alone
]


@pytest.mark.parametrize(("shape", "rate"), LARGE_SHAPE_CASES)
def test_large_shape_fits_exact_pmf(shape: Fraction, rate: Fraction) -> None:
    """Shapes above 1 (the digit decomposition of :func:`exact._negative_binomial_whole`) against scipy's nbinom pmf.

    Same Pearson test as above: unit bins with expected count >= 5, tails pooled, rejected above the
    0.999 quantile of chi-square with ``bins - 1`` degrees of freedom.
    """
    samples = negative_binomial(shape, rate, 200_000, _bits(19))
    alpha = math.exp(-float(rate))
    statistic, dof, pvalue = chi_square(samples, lambda k: nb_pmf(float(shape), alpha, k), 0, 20_000)
    assert statistic <= _threshold(dof), (statistic, dof, pvalue)


def test_chi_square_detects_a_wrong_digit_probability(monkeypatch: pytest.MonkeyPatch) -> None:
    """The large-shape test can fail: binary level ``i`` one with probability ``alpha^{2^i}`` instead of
    ``alpha^{2^i}/(1 + alpha^{2^i})`` (the digits of a geometric variable) is rejected."""
    shape, rate = LARGE_SHAPE_CASES[1]
    monkeypatch.setattr(exact, "_geometric_digit_bounds", exact._exp_bounds_fn)
    exact._level_table.cache_clear()
    try:
        samples = negative_binomial(shape, rate, 200_000, _bits(19))
    finally:
        exact._level_table.cache_clear()
    alpha = math.exp(-float(rate))
    statistic, dof, _ = chi_square(samples, lambda k: nb_pmf(float(shape), alpha, k), 0, 20_000)
    assert statistic > _threshold(dof)


def test_geometric_digits_equal_the_rational_reference() -> None:
    """Digits of ``q = e^{-x}/(1 + e^{-x})`` and of ``e^{-x}`` far beyond the first 64-bit bounds
    (the extension a tied count needs after ~60 digits) equal those of pure-rational bounds."""
    x, bits = Fraction(7, 3), 400
    lo_e, hi_e = _exp_neg_reference(x, bits)
    scale = 1 << bits
    references = [((lo_e * scale) // (scale + lo_e), -((-hi_e * scale) // (scale + hi_e))), (lo_e, hi_e)]
    for make, (lo, hi) in zip((exact._geometric_digit_bounds, exact._exp_bounds_fn), references):
        known = bits - (lo ^ hi).bit_length()
        assert known >= 300
        digits = exact._Digits(make(x))
        digits.extend(299)
        assert digits.digits[:300] == [(lo >> (bits - 1 - j)) & 1 for j in range(300)]


@pytest.mark.parametrize(("honest", "rate"), [(3, Fraction(1, 5)), (2, Fraction(1, 20)), (5, Fraction(1, 3))])
def test_sum_of_honest_shares_is_discrete_laplace(honest: int, rate: Fraction) -> None:
    """``h`` differences of ``NB(1/h)`` shares add up to ``DLap(e^{-rate})`` exactly (shape 1/h kept exact)."""
    rng = np.random.Generator(np.random.PCG64(12))
    total = np.zeros(100_000, dtype=np.int64)
    for _ in range(honest):
        total += np.asarray(polya_difference(1 / honest, size=total.size, rng=rng, rate=rate), dtype=np.int64)
    alpha = math.exp(-float(rate))
    statistic, dof, pvalue = chi_square(total, lambda z: dlap_pmf(alpha, z), -20_000, 20_000)
    assert statistic <= _threshold(dof), (statistic, dof, pvalue)


@pytest.mark.parametrize("trials", [40, 6_000])  # popcount path and rejection path (> POPCOUNT_TRIALS)
def test_centred_binomial_fits_exact_pmf(trials: int) -> None:
    assert (trials > exact.POPCOUNT_TRIALS) == (trials == 6_000)
    samples = np.asarray(centered_binomial(trials, size=20_000, rng=np.random.Generator(np.random.PCG64(13))))
    half = trials // 2
    statistic, dof, pvalue = chi_square(samples, lambda z: stats.binom.pmf(z + half, trials, 0.5), -half, half)
    assert statistic <= _threshold(dof), (statistic, dof, pvalue)


@pytest.mark.parametrize(("shape", "rate", "mutated_shape", "mutated_rate"), [
    (Fraction(1, 3), Fraction(1, 10), Fraction(1, 4), Fraction(1, 10)),     # r = 1/(m-t) -> 1/(m-t+1)
    (Fraction(1, 3), Fraction(1, 10), Fraction(1, 3), Fraction(11, 100)),    # p = e^-gamma, gamma 10% larger
])
def test_chi_square_detects_a_mutated_shape_or_rate(shape: Fraction, rate: Fraction, mutated_shape: Fraction,
                                                    mutated_rate: Fraction) -> None:
    """The goodness-of-fit test above can fail: draws with a mutated ``r`` or ``p`` are rejected."""
    samples = negative_binomial(mutated_shape, mutated_rate, 200_000, _bits(14))
    alpha = math.exp(-float(rate))
    statistic, dof, _ = chi_square(samples, lambda k: nb_pmf(float(shape), alpha, k), 0, 20_000)
    assert statistic > _threshold(dof)


def test_exact_shape_and_rate() -> None:
    assert exact_shape(1 / 3) == Fraction(1, 3) and exact_shape(Fraction(2, 7)) == Fraction(2, 7)
    assert exact_shape(0.1 + 0.2) == Fraction(0.1 + 0.2)  # no simple rational has that double
    assert exact_rate(rate=Fraction(1, 7)) == Fraction(1, 7)
    epsilon, sensitivity = 0.7, 3
    gamma = exact_rate(log_alpha=-epsilon / sensitivity)
    assert gamma is not None and sensitivity * gamma <= Fraction(epsilon)  # never less noise than asked
    assert Fraction(epsilon) - sensitivity * gamma < Fraction(epsilon) * 2**-50
    alpha = math.exp(-epsilon / sensitivity)
    gamma = exact_rate(alpha=alpha)
    assert gamma is not None and sensitivity * gamma <= Fraction(epsilon)
    assert exact_rate(alpha=0.0) is None


# ---------------------------------------------------------------------------------------------- no float


def _module_source() -> str:
    return Path(inspect.getfile(exact)).read_text()


def test_sampler_source_has_no_float() -> None:
    tree = ast.parse(_module_source())
    floats = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, float)]
    assert floats == []
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attrs = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert "float" not in names and "math" not in names
    assert not ({"float64", "float32", "float16", "floating", "true_divide", "log1p", "expm1", "sqrt"} & attrs)
    called = {node.func.attr for node in ast.walk(tree) if isinstance(node, ast.Call)
              and isinstance(node.func, ast.Attribute)}
    # no floating-point sampler of NumPy: only raw 64-bit outputs are read
    assert not ({"random", "exponential", "binomial", "negative_binomial", "poisson", "uniform", "standard_normal",
                 "integers", "log", "gamma"} & called)
    # Decimal contexts only: every .exp/.ln call is on a decimal.Context
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in {"exp", "ln"}:
            assert isinstance(node.func.value, ast.Name) and node.func.value.id == "ctx"


def _float_free_trace(found: list[str]) -> Any:
    module_file = inspect.getfile(exact)

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_filename != module_file:
            return None
        for name, value in frame.f_locals.items():
            if isinstance(value, float) or (isinstance(value, np.ndarray) and value.dtype.kind == "f") \
                    or isinstance(value, np.floating):
                found.append(f"{frame.f_code.co_name}:{name}")
        return tracer

    return tracer


def test_no_float_while_sampling() -> None:
    found: list[str] = []
    sys.settrace(_float_free_trace(found))
    try:
        negative_binomial(Fraction(1, 3), Fraction(1, 40), 2_000, _bits(15))
        negative_binomial(Fraction(15, 2), Fraction(1, 40), 500, _bits(15))  # digits, chain and thinning
        exact._Digits(exact._geometric_digit_bounds(Fraction(1, 3))).extend(200)  # digits past 64-bit bounds
        binomial_half(6_000, 30, _bits(16))
        # the exact fallbacks, forced: a comparison on a prefix that straddles a bound
        lo, hi = exp_neg_bounds(Fraction(1, 3), 64)
        exact.uniform_prefix_less(lo, 64, lambda b: exp_neg_bounds(Fraction(1, 3), b), _bits(17))
    finally:
        sys.settrace(None)
    assert found == []


def _exp_neg_reference(x: Fraction, bits: int) -> tuple[int, int]:
    """Pure-rational bounds of ``2^bits e^{-x}``: ``e^x`` by its Taylor series with the remainder bounded."""
    terms, term, k = Fraction(0), Fraction(1), 0
    while True:
        terms += term
        k += 1
        term = term * x / k
        if term < Fraction(1, 1 << (bits + 20)) and x / (k + 1) < Fraction(1, 2):
            break
    upper_ex = terms + 2 * term  # remainder at most term / (1 - x/(k+1)) <= 2 term
    lower_ex = terms
    scale = 1 << bits
    lo = (scale * upper_ex.denominator) // upper_ex.numerator
    hi = -((-scale * lower_ex.denominator) // lower_ex.numerator)
    return lo, hi


@pytest.mark.parametrize("x", [Fraction(1, 5), Fraction(1, 16946), Fraction(7, 3), Fraction(2**20, 16946), Fraction(0)])
def test_exp_bounds_contain_the_rational_reference(x: Fraction) -> None:
    for bits in (64, 128, 256):
        lo, hi = exp_neg_bounds(x, bits)
        ref_lo, ref_hi = _exp_neg_reference(x, bits)
        assert lo <= ref_hi and ref_lo <= hi  # both contain 2^bits e^{-x}
        assert hi - lo <= 4 and ref_hi - ref_lo <= 4


def test_poisson_table_decisions_equal_the_rational_reference() -> None:
    """On a fixed stream of words, the vectorized Poisson(r) counts equal a pure-rational inverse transform."""
    mean = Fraction(1, 3)
    words = _bits(18).words(20_000)
    rng_words = iter(words.tolist())

    class Replay:
        def words(self, count: int) -> np.ndarray:
            return np.array([next(rng_words) for _ in range(count)], dtype=np.uint64)

        def bits(self, count: int) -> int:
            raise AssertionError("no straddle expected on this stream")

    counts = exact._poisson(mean, words.size, Replay())
    # reference: smallest n with U < F(n), decided with rational bounds of e^{-mean}
    reference = []
    for word in words.tolist():
        n, partial, term = 0, Fraction(1), Fraction(1)
        while True:
            lo_e, hi_e = _exp_neg_reference(mean, 64)
            if Fraction(word + 1) <= lo_e * partial:
                break
            assert Fraction(word) >= hi_e * partial  # decided on 64 bits
            n += 1
            term = term * mean / n
            partial += term
        reference.append(n)
    assert counts.tolist() == reference


def test_binomial_acceptance_bounds_contain_the_exact_ratio() -> None:
    """Stirling bounds of ``ln(C(2m, m+d)/C(2m, m))`` contain the logarithm of the exact integer ratio.

    Reference: correctly rounded :mod:`decimal` logarithms of the two exact binomial coefficients.
    """
    import decimal

    ctx = decimal.Context(prec=80)
    half = 2_000
    for d in (0, 1, 37, 400, 1999, 2000):
        lo, hi = exact.binomial_log_ratio_bounds(half, d, 30)
        ref = ctx.subtract(ctx.ln(decimal.Decimal(math.comb(2 * half, half + d))),
                           ctx.ln(decimal.Decimal(math.comb(2 * half, half))))
        margin = Fraction(1, 10**60)
        assert lo - margin <= Fraction(ref) <= hi + margin
        assert hi - lo < Fraction(1, 10**25)
