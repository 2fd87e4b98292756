"""Local integer noise draws from OS randomness: Pólya (negative binomial), its differences, centred binomials.
Each party draws its own share outside MPC and secret-shares it (:mod:`secure.aggregation`); the
calibration is :mod:`dp.calibration`.  Threat model: passive, static coalition of ``t < m/2`` parties (MPyC's Shamir scheme).  A party knows its own share.
Distributions, randomness and exactness: docs/noise.md."""
from __future__ import annotations

import decimal
import math
import secrets
from collections.abc import Callable
from fractions import Fraction
from numbers import Integral, Rational, Real

import numpy as np

from secure.checks import check_interval, check_nonnegative_int, check_number, check_positive
from secure.noise.exact import BitSource, GeneratorBits, OSBits, binomial_half, negative_binomial

__all__ = ["os_generator", "polya", "polya_difference", "centered_binomial", "exact_rate", "exact_shape"]

#: Largest mean ``shape * alpha / (1 - alpha)`` of a Pólya draw: statistic plus noise stay far inside int64.
MAX_POLYA_MEAN: float = float(2**40)
#: Most trials of :func:`centered_binomial` (the sum must fit in int64).
MAX_BINOMIAL_TRIALS: int = 2**62


def os_generator() -> np.random.Generator:
    """A fresh NumPy generator seeded with unpredictable entropy from the operating system. Details: docs/noise.md."""
    return np.random.default_rng(np.random.SeedSequence(secrets.randbits(128)))


def _check_size(size: int | None) -> int | None:
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, Integral):
        raise TypeError(f"size must be an integer or None, got {size!r}")
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    return int(size)


def noise_generator(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself (tests), or a fresh OS-seeded generator when it is ``None`` (production); TypeError otherwise."""
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
    return os_generator() if rng is None else rng


def _drawn(size: int | None, rng: np.random.Generator | None,
           draw: Callable[[int, BitSource], np.ndarray]) -> int | np.ndarray:
    """``draw(count, bits)`` of ``size`` values (``None``: one, as a Python int; else an int64 array); the bits of the
    OS CSPRNG for ``rng=None`` (production), else ``rng``'s raw outputs."""
    n = _check_size(size)
    values = draw(1 if n is None else n, OSBits() if rng is None else GeneratorBits(noise_generator(rng)))
    return int(values[0]) if n is None else np.asarray(values, dtype=np.int64)


def exact_shape(shape: float | Fraction) -> Fraction:
    """The rational Pólya shape a float stands for: ``1/3`` for ``1/3.`` (ValueError unless positive and finite).
    Details: docs/noise.md."""
    value = check_positive(float(shape) if isinstance(shape, Fraction) else shape, "shape")
    if isinstance(shape, Rational) and not isinstance(shape, bool):
        return Fraction(shape)
    exact = Fraction(value)
    simple = exact.limit_denominator(1 << 20)
    return simple if float(simple) == value else exact


_LN_CONTEXT = decimal.Context(prec=40, rounding=decimal.ROUND_HALF_EVEN)
_UP_CONTEXT = decimal.Context(prec=60, rounding=decimal.ROUND_CEILING)


def exact_rate(alpha: float | None = None, log_alpha: float | None = None,
               rate: Fraction | None = None) -> Fraction | None:
    """The rational ``gamma`` with which a draw runs ``alpha = e^{-gamma}`` (``None``: ``alpha = 0``), from exactly one
    of the three (TypeError otherwise). Details: docs/noise.md."""
    if sum(value is not None for value in (alpha, log_alpha, rate)) != 1:
        raise TypeError("give exactly one of alpha and log_alpha")
    if rate is not None:
        if isinstance(rate, bool) or not isinstance(rate, (Rational, float)):
            raise TypeError(f"rate must be a rational number, got {rate!r}")
        exact = Fraction(rate)
        if exact <= 0:
            raise ValueError(f"rate must be positive, got {rate}")
        return exact
    if log_alpha is not None:
        lval = check_number(log_alpha, "log_alpha")
        if math.isnan(lval) or lval >= 0:
            raise ValueError(f"log_alpha must be negative (alpha < 1), got {log_alpha}")
        if lval == -math.inf:
            return None
        return -Fraction(lval) * (1 - Fraction(1, 1 << 52))
    assert alpha is not None
    aval = check_interval(alpha, "alpha", low=0.0, high=1.0)
    if aval == 0.0:
        return None
    padded = Fraction(aval) * (1 + Fraction(1, 1 << 51))
    lower = Fraction(0)
    if padded < 1:
        padded_up = _UP_CONTEXT.divide(decimal.Decimal(padded.numerator), decimal.Decimal(padded.denominator))
        log = _LN_CONTEXT.ln(padded_up)
        # padded_up >= padded and ln is correctly rounded: -log - 2 ulps is below -ln(padded)
        lower = -Fraction(log) - 2 * Fraction(10) ** (log.adjusted() - 39)
    if lower <= 0:
        raise ValueError(f"shape * alpha / (1 - alpha) must be at most 2**40, got alpha = {alpha!r}")
    return lower


def _draw_polya(shape: Fraction, gamma: Fraction | None, count: int, source: BitSource) -> np.ndarray:
    """``count`` draws; means ``r/(e^gamma - 1)`` above :data:`MAX_POLYA_MEAN` refused (as ``r/gamma <= 2^40 (1 +
    2^-30)``; docs/noise.md)."""
    if gamma is None:
        return np.zeros(count, dtype=np.int64)
    if shape > gamma * (1 << 40) * (1 + Fraction(1, 1 << 30)):
        raise ValueError(f"shape * alpha / (1 - alpha) must be at most 2**40, got {float(shape / gamma):.6g}")
    return negative_binomial(shape, gamma, count, source)


def polya(shape: float | Fraction, alpha: float | None = None, size: int | None = None,
          rng: np.random.Generator | None = None, *, log_alpha: float | None = None,
          rate: Fraction | None = None) -> int | np.ndarray:
    """Draw exactly from the Pólya (negative binomial) ``NB(r = shape, alpha)`` (a party's share: ``r = 1/(m - t)``),
    ``alpha`` given as itself, ``log_alpha`` or the rational ``rate = -ln(alpha)`` (:func:`exact_rate`); ``rng=None``
    is the OS CSPRNG (production); a Python int for ``size=None``, else an int64 array. Details: docs/noise.md."""
    r, gamma = exact_shape(shape), exact_rate(alpha, log_alpha, rate)
    return _drawn(size, rng, lambda count, bits: _draw_polya(r, gamma, count, bits))


def polya_difference(shape: float | Fraction, alpha: float | None = None, size: int | None = None,
                     rng: np.random.Generator | None = None, *,
                     log_alpha: float | None = None, rate: Fraction | None = None) -> int | np.ndarray:
    """Draw ``X - Y`` with ``X, Y`` independent ``Polya(shape, alpha)``, exactly (arguments as :func:`polya`).
    Details: docs/noise.md."""
    r, gamma = exact_shape(shape), exact_rate(alpha, log_alpha, rate)

    def difference(count: int, bits: BitSource) -> np.ndarray:
        both = _draw_polya(r, gamma, 2 * count, bits)
        return both[:count] - both[count:]

    return _drawn(size, rng, difference)


def centered_binomial(trials: int, size: int | None = None,
                      rng: np.random.Generator | None = None) -> int | np.ndarray:
    """Draw ``Binomial(trials, 1/2) - trials/2`` exactly (mean 0, variance ``trials/4``; ``trials`` even, at most
    ``2**62``; ``size`` and ``rng`` as :func:`polya`). Details: docs/noise.md."""
    check_nonnegative_int(trials, "trials")
    if trials % 2:
        raise ValueError(f"trials must be even, got {trials}")
    if trials > MAX_BINOMIAL_TRIALS:
        raise ValueError(f"trials must be at most 2**62, got {trials}")
    half = int(trials) // 2
    return _drawn(size, rng, lambda count, bits: binomial_half(2 * half, count, bits) - half if half
                  else np.zeros(count, dtype=np.int64))


_SIGMA2_GRID = 1024  # sigma^2 is rounded up to a multiple of 1/1024 (more noise never hurts)


def _uniform_below(bound: int, rng: np.random.Generator) -> int:
    """A uniform integer in ``[0, bound)`` (exact, any size: 62-bit chunks and rejection)."""
    if bound <= 1 << 62:
        return int(rng.integers(0, bound))
    bits = bound.bit_length()
    while True:
        value, remaining = 0, bits
        while remaining > 0:
            take = min(62, remaining)
            value = (value << take) | int(rng.integers(0, 1 << take))
            remaining -= take
        if value < bound:
            return value


def _bernoulli_exp_unit(numerator: int, denominator: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-gamma))`` for ``gamma = numerator/denominator`` in ``[0, 1]`` (Canonne, Kamath & Steinke
    2020, "CKS", Algorithm 1)."""
    k = 1
    while _uniform_below(denominator * k, rng) < numerator:  # Bernoulli(gamma / k)
        k += 1
    return k % 2 == 1


def _bernoulli_exp(numerator: int, denominator: int, rng: np.random.Generator) -> bool:
    """``Bernoulli(exp(-gamma))`` for any rational ``gamma >= 0`` (CKS Algorithm 1, ``gamma > 1`` part)."""
    while numerator > denominator:
        if not _bernoulli_exp_unit(1, 1, rng):
            return False
        numerator -= denominator
    return _bernoulli_exp_unit(numerator, denominator, rng)


def _discrete_laplace_scale(scale: int, rng: np.random.Generator) -> int:
    """``pmf ∝ exp(-|x|/scale)`` for a positive integer scale (CKS Algorithm 2 with ``s = 1``)."""
    while True:
        u = _uniform_below(scale, rng)
        if not _bernoulli_exp(u, scale, rng):
            continue
        v = 0
        while _bernoulli_exp(1, 1, rng):
            v += 1
        x = u + scale * v
        negative = bool(rng.integers(0, 2))
        if negative and x == 0:
            continue
        return -x if negative else x


def _sigma2_fraction(sigma2: float | Fraction) -> Fraction:
    if isinstance(sigma2, bool) or not isinstance(sigma2, (Real, Fraction)):
        raise TypeError(f"sigma2 must be a number, got {sigma2!r}")
    if not (isinstance(sigma2, Fraction) or math.isfinite(float(sigma2))) or sigma2 < 0:
        raise ValueError(f"sigma2 must be a finite non-negative number, got {sigma2}")
    exact = Fraction(sigma2)
    return Fraction(math.ceil(exact * _SIGMA2_GRID), _SIGMA2_GRID)


def sample_discrete_gaussian(sigma2: float | Fraction, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Draw ``size >= 1`` values from the discrete Gaussian ``N_Z(0, sigma^2)``, exactly (``sigma2 = 0``: zeros;
    ``rng=None``: the OS). Details: docs/noise.md."""
    variance = _sigma2_fraction(sigma2)
    if isinstance(size, bool) or not isinstance(size, Integral) or size < 1:
        raise ValueError(f"size must be an integer of at least 1, got {size!r}")
    count = int(size)
    gen = noise_generator(rng)
    out = np.zeros(count, dtype=np.int64)
    if variance == 0:
        return out
    num, den = variance.numerator, variance.denominator
    scale = math.isqrt(num // den) + 1  # floor(sigma) + 1
    accept_den = 2 * num * den * scale * scale
    for index in range(count):
        while True:
            y = _discrete_laplace_scale(scale, gen)
            gap = abs(y) * den * scale - num  # (|y| - sigma^2/t) * den * t
            if _bernoulli_exp(gap * gap, accept_den, gen):
                out[index] = y
                break
    return out


def discrete_gaussian_variance(sigma2: float | Fraction) -> float:
    """Variance (at most ``sigma^2``) of ``N_Z(0, sigma^2)`` after the rounding of :func:`sample_discrete_gaussian`.
    Details: docs/noise.md."""
    s2 = float(_sigma2_fraction(sigma2))
    if s2 == 0.0:
        return 0.0
    if s2 >= 16.0:
        return s2
    z = np.arange(-int(40 * math.sqrt(s2)) - 2, int(40 * math.sqrt(s2)) + 3, dtype=np.float64)
    weights = np.exp(-z * z / (2.0 * s2))
    return float(np.dot(z * z, weights) / weights.sum())
