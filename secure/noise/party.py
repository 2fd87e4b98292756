"""Local integer noise draws from OS randomness: Pólya (negative binomial), its differences, and
centred binomial noise.

Each MPyC party draws its *own* noise share with these functions, outside MPC, and secret-shares it
(:mod:`secure.aggregation`); the sum of all shares is added to an integer statistic (a sum of
fixed-point kernel values) before the guarded reveal.  This module only samples distributions; the
DP calibration of their parameters (``alpha``, ``shape``, ``trials``) lives in
:mod:`dp.calibration`.

Distributions
-------------
- :func:`polya`: ``Polya(r, alpha)``, the negative binomial with real shape ``r > 0``,
  ``pmf(k) = C(k + r - 1, k) (1 - alpha)^r alpha^k`` for ``k >= 0``; mean ``r alpha / (1 - alpha)``,
  variance ``r alpha / (1 - alpha)^2``.  It is infinitely divisible: the sum of ``n`` independent
  ``Polya(r / n, alpha)`` is ``Polya(r, alpha)``.
- :func:`polya_difference`: ``Polya(r, alpha) - Polya(r, alpha)`` (independent).  The sum of ``n``
  independent such differences with ``r = 1/n`` is exactly the discrete Laplace distribution
  ``DLap(alpha)``, ``pmf(z) ∝ alpha^|z|`` (Balle et al. 2020, as used in Sinh & Ramon, App. B.1,
  Protocol Π_DLap).  With threshold ``t`` the parties use ``r = 1/(m - t)`` so that the ``m - t``
  honest parties alone produce ``DLap(alpha)``.
- :func:`centered_binomial`: ``Binomial(N, 1/2) - N/2`` for even ``N``.  Sums of independent
  binomials with ``p = 1/2`` are binomial, so per-party shares add up to exactly the calibrated
  binomial mechanism.
- :func:`sample_discrete_gaussian`: the discrete Gaussian ``N_Z(0, sigma^2)`` by the exact
  integer-arithmetic sampler of Canonne, Kamath & Steinke (2020), for zCDP releases by one curator
  (sums of discrete Gaussians are not discrete Gaussian, so distributed use needs its own accounting).

Randomness
----------
Noise randomness never comes from a user seed (``--seed`` is for public randomness only).  With
``rng=None`` (what production code passes) every call draws from a *fresh* generator returned by
:func:`os_generator`, seeded with 128 bits of operating-system entropy.  Tests may pass a seeded
:class:`numpy.random.Generator` to get reproducible draws.

Threat model: passive (semi-honest), static adversary corrupting at most ``t < m/2`` of the ``m``
MPyC parties.  A party's own noise share is known to that party (and to a coalition containing it);
calibration for the coalition is done in :mod:`dp.calibration`, not here.

Numerical caveat: the draws use NumPy's floating-point samplers (Gamma–Poisson mixture for the
negative binomial, BTPE for the binomial).  They are accurate samplers of the stated distributions
but not bit-exact ones in the sense of Canonne et al. (2020); the parameter ranges below keep every
intermediate value far below ``2**53``, where doubles still represent all integers.
"""
from __future__ import annotations

import math
import secrets
from fractions import Fraction
from numbers import Integral, Real

import numpy as np

from secure.checks import check_interval, check_number, check_positive

__all__ = ["os_generator", "polya", "polya_difference", "centered_binomial"]

#: Largest allowed mean ``shape * alpha / (1 - alpha)`` of a Pólya draw.  NumPy's Poisson sampler
#: works in doubles; far below ``2**53`` its integer outputs are not quantised.
MAX_POLYA_MEAN: float = float(2**40)

#: Binomial draws with more trials are split into independent chunks of at most this many trials
#: (``Bin(a, 1/2) + Bin(b, 1/2) = Bin(a + b, 1/2)`` exactly).  NumPy's BTPE sampler computes in
#: doubles; above ``2**53`` trials its outputs are quantised to multiples of a power of two, which
#: would leak the low bits of the statistic.  ``2**44`` keeps a wide margin.
BINOMIAL_CHUNK: int = 2**44

#: Largest number of trials accepted by :func:`centered_binomial` (the sum must fit in int64).
MAX_BINOMIAL_TRIALS: int = 2**62


def os_generator() -> np.random.Generator:
    """Return a fresh NumPy generator seeded with unpredictable entropy from the operating system.

    The seed is 128 bits from :func:`secrets.randbits` (the OS CSPRNG, ``os.urandom``), expanded by
    :class:`numpy.random.SeedSequence` into the state of a PCG64 generator.  This is exactly what
    ``np.random.default_rng()`` does when called without a seed (``SeedSequence()`` pulls its entropy
    from the OS through :mod:`secrets`); it is spelled out here so that the source of noise
    randomness is visible.  Every call returns an independent generator; no user seed is involved.

    PCG64 is not a cryptographically secure generator: its outputs are unpredictable only to those
    who do not know the 128-bit seed, which never leaves this process.  Noise draws are only ever
    revealed summed with other parties' shares and the statistic.

    :return: a new :class:`numpy.random.Generator`.
    """
    return np.random.default_rng(np.random.SeedSequence(secrets.randbits(128)))


# --------------------------------------------------------------------------------------------------
# parameter checks (secure/ sits below dp/, so it does not import dp.validation; same message style)

def _check_size(size: int | None) -> int | None:
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, Integral):
        raise TypeError(f"size must be an integer or None, got {size!r}")
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    return int(size)


def noise_generator(rng: np.random.Generator | None) -> np.random.Generator:
    """``rng`` itself (tests), or a fresh OS-seeded generator when it is ``None`` (production).

    :raise TypeError: if ``rng`` is neither ``None`` nor a :class:`numpy.random.Generator`.
    """
    if rng is None:
        return os_generator()
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator or None, got {type(rng).__name__}")
    return rng


def _success_probability(alpha: float | None, log_alpha: float | None) -> tuple[float, float]:
    """Return ``(alpha, 1 - alpha)`` from exactly one of ``alpha`` and ``log_alpha``.

    From a float ``alpha >= 1/2`` the difference ``1 - alpha`` is exact (Sterbenz), so the only
    error is the rounding of ``alpha`` itself (relative ``2**-53``); from ``log_alpha`` the
    complement is computed as ``-expm1(log_alpha)`` to full relative precision even when ``alpha``
    is within ``1e-16`` of 1.
    """
    if (alpha is None) == (log_alpha is None):
        raise TypeError("give exactly one of alpha and log_alpha")
    if log_alpha is not None:
        lval = check_number(log_alpha, "log_alpha")
        if math.isnan(lval) or lval >= 0:
            raise ValueError(f"log_alpha must be negative (alpha < 1), got {log_alpha}")
        if lval == -math.inf:
            return 0.0, 1.0
        return math.exp(lval), -math.expm1(lval)
    assert alpha is not None
    aval = check_interval(alpha, "alpha", low=0.0, high=1.0)
    return aval, 1.0 - aval


def _check_trials(trials: int) -> int:
    if isinstance(trials, bool) or not isinstance(trials, Integral):
        raise TypeError(f"trials must be an integer, got {trials!r}")
    if trials < 0:
        raise ValueError(f"trials must be non-negative, got {trials}")
    if trials % 2:
        raise ValueError(f"trials must be even, got {trials}")
    if trials > MAX_BINOMIAL_TRIALS:
        raise ValueError(f"trials must be at most 2**62, got {trials}")
    return int(trials)


def _as_output(values: np.ndarray | int, size: int | None) -> int | np.ndarray:
    if size is None:
        return int(values)
    return np.asarray(values, dtype=np.int64)


# --------------------------------------------------------------------------------------------------
# samplers

def _draw_polya(shape: float, alpha: float, p: float, size: int | None,
                gen: np.random.Generator) -> np.ndarray | int:
    if alpha == 0.0:
        return 0 if size is None else np.zeros(size, dtype=np.int64)
    mean = shape * alpha / p
    if mean > MAX_POLYA_MEAN:
        raise ValueError(f"shape * alpha / (1 - alpha) must be at most 2**40, got {mean:.6g}")
    # NumPy counts failures before `n` successes of probability `p`:
    # pmf(k) = Gamma(k + n) / (k! Gamma(n)) p^n (1 - p)^k; with n = shape, p = 1 - alpha this is
    # C(k + r - 1, k) (1 - alpha)^r alpha^k.  (Sampled as Poisson(Gamma(n, (1 - p) / p)).)
    return gen.negative_binomial(shape, p, size)


def polya(shape: float, alpha: float | None = None, size: int | None = None,
          rng: np.random.Generator | None = None, *, log_alpha: float | None = None) -> int | np.ndarray:
    """Draw from the Pólya (negative binomial) distribution with real shape ``r = shape``.

    ``pmf(k) = C(k + r - 1, k) (1 - alpha)^r alpha^k`` for ``k = 0, 1, 2, ...``; mean
    ``r alpha / (1 - alpha)``, variance ``r alpha / (1 - alpha)^2``.  Sampled with
    :meth:`numpy.random.Generator.negative_binomial` with ``n = r`` and success probability
    ``p = 1 - alpha`` (NumPy counts failures before the ``n``-th success).  ``alpha == 0`` gives 0.

    Precision near ``alpha = 1``: give either ``alpha`` or, keyword-only, ``log_alpha = log(alpha)``
    (for the discrete Laplace, ``-epsilon / sensitivity``).  From a float ``alpha`` the complement
    ``1 - alpha`` is computed exactly, so the distribution drawn is the one for the float ``alpha``:
    its ``log(alpha)`` is within ``2**-53`` of the intended value, i.e. an ``epsilon`` calibrated as
    ``-sensitivity * log(alpha)`` is off by at most ``sensitivity * 1.2e-16``.  From ``log_alpha``
    the complement is ``-expm1(log_alpha)``, accurate to full relative precision.

    :param shape: shape ``r > 0`` (real; a party's share uses ``1 / (m - t)``).
    :param alpha: ratio parameter in ``[0, 1)``; give this or ``log_alpha``.
    :param size: number of draws, or ``None`` for a single draw.
    :param rng: a :class:`numpy.random.Generator` (tests), or ``None`` for a fresh
        :func:`os_generator` (production).
    :param log_alpha: keyword-only alternative to ``alpha``: ``log(alpha) < 0`` (``-inf`` for 0).
    :return: a Python ``int`` if ``size`` is ``None``, else an int64 array of length ``size``.
    :raise ValueError: if ``shape <= 0``, ``alpha`` is outside ``[0, 1)``, ``log_alpha >= 0``,
        ``size < 0``, or the mean exceeds :data:`MAX_POLYA_MEAN`.
    :raise TypeError: if a parameter has the wrong type, or both or neither of ``alpha`` and
        ``log_alpha`` are given.
    """
    r = check_positive(shape, "shape")
    a, p = _success_probability(alpha, log_alpha)
    n = _check_size(size)
    gen = noise_generator(rng)
    return _as_output(_draw_polya(r, a, p, n, gen), n)


def polya_difference(shape: float, alpha: float | None = None, size: int | None = None,
                     rng: np.random.Generator | None = None, *,
                     log_alpha: float | None = None) -> int | np.ndarray:
    """Draw ``X - Y`` with ``X, Y`` independent ``Polya(shape, alpha)``.

    A party's share of distributed discrete Laplace noise: the sum of ``n`` independent
    differences with ``shape = 1/n`` is exactly ``DLap(alpha)`` with ``pmf(z) ∝ alpha^|z|``
    (Balle et al. 2020; Sinh & Ramon, App. B.1).  Symmetric, mean 0, variance
    ``2 shape alpha / (1 - alpha)^2``.  With ``rng=None`` both draws come from one fresh
    :func:`os_generator`.

    :param shape: shape ``r > 0`` of each Pólya variable.
    :param alpha: ratio parameter in ``[0, 1)``; give this or ``log_alpha``.
    :param size: number of draws, or ``None`` for a single draw.
    :param rng: a :class:`numpy.random.Generator`, or ``None`` for fresh OS randomness.
    :param log_alpha: keyword-only alternative to ``alpha`` (see :func:`polya` on precision).
    :return: a Python ``int`` if ``size`` is ``None``, else an int64 array of length ``size``.
    :raise ValueError: as :func:`polya`.
    :raise TypeError: as :func:`polya`.
    """
    r = check_positive(shape, "shape")
    a, p = _success_probability(alpha, log_alpha)
    n = _check_size(size)
    gen = noise_generator(rng)
    x = _draw_polya(r, a, p, n, gen)
    y = _draw_polya(r, a, p, n, gen)
    return _as_output(np.subtract(x, y, dtype=np.int64), n)


def centered_binomial(trials: int, size: int | None = None,
                      rng: np.random.Generator | None = None) -> int | np.ndarray:
    """Draw ``Binomial(trials, 1/2) - trials/2`` (symmetric, mean 0, variance ``trials/4``).

    A party's share of distributed binomial noise: the sum over parties of shares with ``N_p``
    trials each is exactly ``Binomial(m N_p, 1/2) - m N_p / 2``.  More than
    :data:`BINOMIAL_CHUNK` trials are drawn as a sum of independent chunks (exact, since binomials
    with ``p = 1/2`` add up) so that NumPy's floating-point sampler never sees more than ``2**44``
    trials.  ``trials == 0`` gives 0.

    :param trials: number of fair coin flips, even, ``0 <= trials <= 2**62``.
    :param size: number of draws, or ``None`` for a single draw.
    :param rng: a :class:`numpy.random.Generator`, or ``None`` for fresh OS randomness.
    :return: a Python ``int`` if ``size`` is ``None``, else an int64 array of length ``size``.
    :raise ValueError: if ``trials`` is negative, odd or above ``2**62``, or ``size < 0``.
    :raise TypeError: if a parameter has the wrong type.
    """
    n_trials = _check_trials(trials)
    n = _check_size(size)
    gen = noise_generator(rng)
    total: np.ndarray = np.zeros(() if n is None else n, dtype=np.int64)
    remaining = n_trials
    while remaining > 0:
        chunk = min(remaining, BINOMIAL_CHUNK)
        total += gen.binomial(chunk, 0.5, n)
        remaining -= chunk
    total -= n_trials // 2
    return _as_output(total, n)


# ------------------------------------------------------------------------------------------------
# discrete Gaussian (Canonne, Kamath & Steinke 2020), exact, integer arithmetic

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
    """``Bernoulli(exp(-gamma))`` for ``gamma = numerator/denominator`` in ``[0, 1]`` (CKS Algorithm 1)."""
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
    if not isinstance(sigma2, Fraction) and not math.isfinite(float(sigma2)):
        raise ValueError(f"sigma2 must be a finite non-negative number, got {sigma2}")
    exact = Fraction(sigma2)
    if exact < 0:
        raise ValueError(f"sigma2 must be a finite non-negative number, got {sigma2}")
    return Fraction(math.ceil(exact * _SIGMA2_GRID), _SIGMA2_GRID)


def sample_discrete_gaussian(sigma2: float | Fraction, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Draw ``size`` values from the discrete Gaussian ``N_Z(0, sigma^2)``, exactly.

    Canonne, Kamath & Steinke (2020), Algorithm 3: propose from the discrete Laplace of integer scale
    ``t = floor(sigma) + 1`` (their Algorithm 2) and accept with probability
    ``exp(-(|y| - sigma^2/t)^2 / (2 sigma^2))`` (their Algorithm 1, Bernoulli of ``exp(-gamma)`` for
    rational ``gamma``).  Integer arithmetic only, uniform integers from ``rng``.  ``sigma^2`` is
    first rounded up to a multiple of 1/1024 (more noise never hurts the guarantee).  A Python
    loop over draws: tens of microseconds per draw.

    :param sigma2: ``sigma^2 >= 0`` (``0`` gives zeros).
    :param size: number of draws, at least 1.
    :param rng: noise generator; ``None`` draws from the OS.
    :return: int64 array of length ``size``.
    :raise ValueError: if ``sigma2`` is negative or not finite, or ``size < 1``.
    """
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
    """Variance of ``N_Z(0, sigma^2)`` after the same rounding as :func:`sample_discrete_gaussian`.

    Below ``sigma = 4`` the truncated sums ``sum z^2 e^{-z^2/2s^2} / sum e^{-z^2/2s^2}``; above, the
    difference to ``sigma^2`` is of order ``exp(-2 pi^2 sigma^2) < 1e-130`` and ``sigma^2`` is returned.

    :param sigma2: ``sigma^2 >= 0``.
    :return: the variance (at most ``sigma^2``).
    :raise ValueError: if ``sigma2`` is negative or not finite.
    """
    s2 = float(_sigma2_fraction(sigma2))
    if s2 == 0.0:
        return 0.0
    if s2 >= 16.0:
        return s2
    z = np.arange(-int(40 * math.sqrt(s2)) - 2, int(40 * math.sqrt(s2)) + 3, dtype=np.float64)
    weights = np.exp(-z * z / (2.0 * s2))
    return float(np.dot(z * z, weights) / weights.sum())
