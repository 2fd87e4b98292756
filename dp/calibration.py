r"""DP calibration of the integer noise drawn by :mod:`secure.noise`, in integer sensitivity units.

All statistics are integers (sums of fixed-point kernel values), so the noise is integer too, and a
``sensitivity`` here is the largest change of that integer when one row is replaced (the kernel's
sensitivity times the fixed-point scale, rounded up).

Coalition calibration
---------------------
``m`` MPyC parties, Shamir threshold ``t < m/2``: up to ``t`` parties may collude (passive, static
adversary).  Each party draws its own noise share locally and secret-shares it; the shares are
summed into the statistic before reveal.  A coalition knows its own shares and can subtract them
(post-processing), so only the ``m - t`` honest parties' shares protect the output.  We therefore
calibrate so that the **honest parties alone** supply the full noise of a single central mechanism:

- *Discrete Laplace* (pure ``epsilon``-DP): each party adds the difference of two
  ``Polya(1/(m - t), alpha)`` variables, ``alpha = exp(-epsilon / sensitivity)``.  The sum of any
  ``m - t`` such differences is exactly ``DLap(alpha)``, ``pmf(z) = (1-alpha)/(1+alpha) alpha^|z|``
  (Balle et al. 2020; Sinh & Ramon, App. B.1), which is ``epsilon``-DP for shifts up to
  ``sensitivity``.  The released total is the sum of all ``m`` differences, with variance
  ``m/(m - t) * 2 alpha / (1 - alpha)^2``: the price of coalition calibration is the factor
  ``m/(m - t)`` (at most ``m/(m - floor((m-1)/2)) < 2 + 2/m``).
- *Binomial* (``(epsilon, delta)``-DP): each party adds ``Binomial(N_p, 1/2) - N_p/2`` with even
  ``N_p`` such that ``(m - t) N_p >= N``, ``N`` the smallest even number of trials for which the
  single mechanism ``value + Binomial(N, 1/2)`` is ``(epsilon, delta)``-DP (computed exactly by
  :func:`binomial_delta`).  The released total is ``Binomial(m N_p, 1/2)`` centred, variance
  ``m N_p / 4``, i.e. again about ``m/(m - t)`` times the single-mechanism variance ``N/4`` (a bit
  more from rounding ``N_p`` up to an even integer).

Why binomial rather than discrete Gaussian for ``(epsilon, delta)``: sums of independent binomials
with the same ``p = 1/2`` are binomial, so the honest parties' shares add up to *exactly* the
mechanism whose ``delta`` was computed, with no approximation.  Sums of discrete Gaussians are not
discrete Gaussian, which would leave only approximate accounting of the distributed noise.

More noise never hurts: a corrupt party's share is independent of the data, so adding it (or
drawing more trials than prescribed) is post-processing of the honest parties' mechanism and keeps
its guarantee; in particular ``delta`` is non-increasing in the number of trials.

Threat model: passive (semi-honest), static adversary corrupting at most ``t < m/2`` parties
(MPyC's Shamir scheme).  Every parameter is validated at entry (:mod:`dp.validation`).
"""
from __future__ import annotations

import math
from decimal import Decimal, localcontext
from numbers import Integral, Real

import numpy as np
import numpy.typing as npt
from scipy import stats

from dp.validation import check_delta, check_epsilon, check_parties, check_positive_int

__all__ = [
    "discrete_laplace_alpha",
    "discrete_laplace_log_alpha",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "party_noise_shape",
    "distributed_laplace_variance",
    "binomial_delta",
    "binomial_trials",
    "party_binomial_trials",
    "distributed_binomial_variance",
    "MAX_TRIALS",
]

#: Largest number of trials :func:`binomial_delta` evaluates: all support points are then exact
#: doubles.  This covers e.g. ``sensitivity = 2**19`` at ``epsilon = 0.1, delta = 1e-9``.
MAX_TRIALS: int = 2**53


# --------------------------------------------------------------------------------------------------
# validation helpers (dp.validation covers epsilon, delta, integers and parties)

def _check_sensitivity(sensitivity: float) -> float:
    if isinstance(sensitivity, bool) or not isinstance(sensitivity, Real):
        raise TypeError(f"sensitivity must be a number, got {sensitivity!r}")
    value = float(sensitivity)
    if not math.isfinite(value):
        raise ValueError(f"sensitivity must be finite, got {sensitivity}")
    if value <= 0:
        raise ValueError(f"sensitivity must be positive, got {sensitivity}")
    return value


def _check_alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, Real):
        raise TypeError(f"alpha must be a number, got {alpha!r}")
    value = float(alpha)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"alpha must lie in [0, 1), got {alpha}")
    return value


def _check_trials(trials: int, name: str = "trials") -> int:
    if isinstance(trials, bool) or not isinstance(trials, Integral):
        raise TypeError(f"{name} must be an integer, got {trials!r}")
    if trials < 0:
        raise ValueError(f"{name} must be non-negative, got {trials}")
    return int(trials)


# --------------------------------------------------------------------------------------------------
# discrete Laplace

def discrete_laplace_alpha(epsilon: float, sensitivity: float) -> float:
    """Return ``alpha = exp(-epsilon / sensitivity)`` of the ``epsilon``-DP discrete Laplace.

    ``DLap(alpha)`` added to an integer statistic of sensitivity ``sensitivity`` is ``epsilon``-DP:
    the privacy loss of a shift ``s`` is ``|s| log(1/alpha) <= epsilon``.  Near ``alpha = 1`` prefer
    :func:`discrete_laplace_log_alpha` with ``secure.noise.polya(..., log_alpha=...)``.

    :param epsilon: privacy-loss parameter, positive.
    :param sensitivity: largest change of the integer statistic, positive.
    :return: ``alpha`` in ``(0, 1)``.
    :raise ValueError: if ``epsilon`` or ``sensitivity`` is not a finite positive number.
    """
    eps = check_epsilon(epsilon)
    sens = _check_sensitivity(sensitivity)
    return math.exp(-eps / sens)


def discrete_laplace_log_alpha(epsilon: float, sensitivity: float) -> float:
    """Return ``log(alpha) = -epsilon / sensitivity`` (no rounding through ``exp``).

    :param epsilon: privacy-loss parameter, positive.
    :param sensitivity: largest change of the integer statistic, positive.
    :return: ``log(alpha) < 0``.
    :raise ValueError: if ``epsilon`` or ``sensitivity`` is not a finite positive number.
    """
    eps = check_epsilon(epsilon)
    sens = _check_sensitivity(sensitivity)
    return -eps / sens


def discrete_laplace_pmf(values: npt.ArrayLike, alpha: float) -> np.ndarray:
    """Return the discrete Laplace pmf ``(1 - alpha)/(1 + alpha) * alpha^|z|`` at integer ``values``.

    :param values: integer point(s) ``z`` (array-like; floats must be integral).
    :param alpha: parameter in ``[0, 1)``; ``alpha = 0`` is the point mass at 0.
    :return: float64 array of the shape of ``values``.
    :raise ValueError: if ``alpha`` is outside ``[0, 1)`` or a value is not an integer.
    """
    a = _check_alpha(alpha)
    z = np.asarray(values)
    if z.dtype == np.bool_ or not (np.issubdtype(z.dtype, np.integer) or np.issubdtype(z.dtype, np.floating)):
        raise TypeError(f"values must be integers, got dtype {z.dtype}")
    if np.issubdtype(z.dtype, np.floating) and not np.all(np.isfinite(z) & (z == np.floor(z))):
        raise ValueError("values must be integers")
    mag = np.abs(z.astype(np.float64))
    return (1.0 - a) / (1.0 + a) * np.power(a, mag)


def discrete_laplace_variance(alpha: float) -> float:
    """Return the variance ``2 alpha / (1 - alpha)^2`` of ``DLap(alpha)``.

    :param alpha: parameter in ``[0, 1)``.
    :raise ValueError: if ``alpha`` is outside ``[0, 1)``.
    """
    a = _check_alpha(alpha)
    return 2.0 * a / (1.0 - a) ** 2


def party_noise_shape(parties: int, threshold: int) -> float:
    """Return the Pólya shape ``1/(m - t)`` each party uses for its noise share.

    With this shape any ``m - t`` parties' differences of Pólya draws sum to ``DLap(alpha)``, so the
    honest parties alone supply the full noise whatever coalition of ``t`` parties is corrupt.

    :param parties: number of parties ``m >= 1``.
    :param threshold: coalition size ``t`` with ``0 <= t`` and ``2 t < m``.
    :return: ``1 / (m - t)``.
    :raise ValueError: if ``(parties, threshold)`` is not an honest-majority setting.
    """
    m, t = check_parties(parties, threshold)
    return 1.0 / (m - t)


def distributed_laplace_variance(alpha: float, parties: int, threshold: int) -> float:
    """Return the variance of the total noise ``m/(m - t) * 2 alpha / (1 - alpha)^2``.

    The sum of ``m`` differences of ``Polya(1/(m - t), alpha)`` variables; ``m/(m - t)`` times the
    variance of the single ``DLap(alpha)`` mechanism (the price of coalition calibration).

    :param alpha: parameter in ``[0, 1)``.
    :param parties: number of parties ``m >= 1``.
    :param threshold: coalition size ``t`` with ``2 t < m``.
    :raise ValueError: on an invalid ``alpha`` or ``(parties, threshold)``.
    """
    a = _check_alpha(alpha)
    m, t = check_parties(parties, threshold)
    return m / (m - t) * 2.0 * a / (1.0 - a) ** 2


# --------------------------------------------------------------------------------------------------
# exact log pmf of Binomial(n, 1/2) for large n (Loader 2000, "Fast and accurate computation of
# binomial probabilities"): log b(k) = stirlerr(n) - stirlerr(k) - stirlerr(n-k) - bd0(k, n/2)
# - bd0(n-k, n/2) - log(2 pi k (n-k) / n) / 2, each piece to relative precision, so the absolute
# error stays ~1e-14 where a difference of lgamma values would lose ~log2(n) bits.

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_S0, _S1, _S2, _S3, _S4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188


def _stirlerr_table() -> np.ndarray:
    """``stirlerr(n) = log(n!) - (n + 1/2) log(n) + n - log(2 pi)/2`` for ``n = 1..15`` (index 0 unused)."""
    pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494459")
    table = [0.0]
    with localcontext() as ctx:
        ctx.prec = 50
        half_log_2pi = (2 * pi).ln() / 2
        for n in range(1, 16):
            dn = Decimal(n)
            value = Decimal(math.factorial(n)).ln() - (dn + Decimal("0.5")) * dn.ln() + dn - half_log_2pi
            table.append(float(value))
    return np.array(table)


_STIRLERR = _stirlerr_table()


def _stirlerr(x: np.ndarray) -> np.ndarray:
    """Stirling-formula error of ``log(x!)`` for integer-valued float ``x >= 1``."""
    out = np.empty_like(x)
    small = x <= 15
    out[small] = _STIRLERR[x[small].astype(np.int64)]
    xb = x[~small]
    nn = xb * xb
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / xb
    return out


def _bd0(x: np.ndarray, mid: float, diff: np.ndarray) -> np.ndarray:
    """``x log(x / mid) + mid - x`` to relative precision; ``diff = x - mid`` given exactly."""
    total = x + mid
    near = np.abs(diff) < 0.1 * total
    out = np.empty_like(x)
    far = ~near
    with np.errstate(divide="ignore", invalid="ignore"):
        out[far] = x[far] * np.log(x[far] / mid) + mid - x[far]
    v = diff[near] / total[near]
    acc = diff[near] * v
    ej = 2.0 * x[near] * v
    v2 = v * v
    for j in range(1, 20):  # |v| < 0.1: 19 terms reach relative 1e-38
        ej = ej * v2
        acc = acc + ej / (2 * j + 1)
    out[near] = acc
    return out


def _log_half_binomial_pmf(k: np.ndarray, n: int) -> np.ndarray:
    """``log P[Binomial(n, 1/2) = k]`` for integer array ``0 <= k <= n <= 2**53``."""
    k = np.asarray(k, dtype=np.int64)
    out = np.full(k.shape, -n * math.log(2.0))  # k == 0 or k == n
    inner = (k > 0) & (k < n)
    if np.any(inner):
        ki = k[inner]
        kf = ki.astype(np.float64)
        jf = (n - ki).astype(np.float64)
        mid = n / 2.0
        # k - n/2 exactly: both are multiples of 1/2 below 2**53
        d = (ki - n // 2).astype(np.float64) - 0.5 * (n % 2)
        nf = float(n)
        out[inner] = (
            _stirlerr(np.array([nf]))[0] - _stirlerr(kf) - _stirlerr(jf)
            - _bd0(kf, mid, d) - _bd0(jf, mid, -d)
            - 0.5 * np.log(2.0 * math.pi * kf * (jf / nf))
        )
    return out


# --------------------------------------------------------------------------------------------------
# binomial mechanism

def _privacy_loss_tail_end(trials: int, sensitivity: int, epsilon: float) -> int:
    """Largest ``k`` in ``[sensitivity - 1, trials]`` with ``b(k) > e^eps b(k - sensitivity)``.

    ``b`` is the ``Binomial(trials, 1/2)`` pmf.  For ``k < sensitivity`` the right-hand side is 0,
    and ``log b(k) - log b(k - sensitivity)`` is decreasing in ``k`` (log-concavity), so the set is
    an initial segment.  Found by a vectorised 64-way search (about ``log_64(trials)`` rounds).
    """
    lo, hi = sensitivity - 1, trials + 1  # predicate true at lo, false at hi (by convention)

    def in_set(points: np.ndarray) -> np.ndarray:
        loss = _log_half_binomial_pmf(points, trials) - _log_half_binomial_pmf(points - sensitivity, trials)
        return loss > epsilon

    while hi - lo > 1:
        count = min(hi - lo - 1, 64)
        points = np.unique(np.rint(np.linspace(lo + 1, hi - 1, count)).astype(np.int64))
        verdict = in_set(points)
        false_at = np.flatnonzero(~verdict)
        if false_at.size == 0:
            lo = int(points[-1])
        else:
            first = int(false_at[0])
            hi = int(points[first])
            if first > 0:
                lo = int(points[first - 1])
    return lo


def binomial_delta(trials: int, sensitivity: int, epsilon: float) -> float:
    r"""Return the exact ``delta`` of ``value + Binomial(trials, 1/2)`` at a given ``epsilon``.

    For neighbouring values differing by the integer ``sensitivity = Δ`` the mechanism's outputs
    have pmfs ``P(k) = b(k)`` and ``Q(k) = b(k - Δ)``, ``b`` the ``Binomial(N, 1/2)`` pmf.  ``delta``
    is the hockey-stick divergence ``sum_k max(0, P(k) - e^eps Q(k))``; the reverse direction gives
    the same value by the symmetry ``b(k) = b(N - k)`` (map ``k -> N + Δ - k``).  The likelihood
    ratio ``b(k)/b(k - Δ)`` is decreasing in ``k`` (log-concavity), so the privacy-loss set is a
    lower tail ``{k <= k*}`` and ``delta = F(k*) - e^eps F(k* - Δ)`` with ``F`` the binomial cdf
    (:data:`scipy.stats.binom`), evaluated as ``F(k*) * (-expm1(eps + log F(k* - Δ) - log F(k*)))``.
    ``k*`` is located with an accurate log pmf (Loader's saddle-point form), valid up to
    :data:`MAX_TRIALS` trials; a misplaced ``k*`` in a near-tie would only change ``delta`` by terms
    ``b(k)(1 - e^{eps - L(k)})`` with ``L(k) ≈ eps``, i.e. at rounding level.

    Shifts ``|s| < Δ`` give no larger ``delta``: the experiments ``{b, b(· - s)}`` have monotone
    likelihood ratio, so threshold tests are optimal, and the same threshold test distinguishes a
    larger shift at least as well; hence the trade-off curve, and with it ``delta``, is monotone in
    ``s``.  ``delta`` is also non-increasing in ``trials`` (adding independent coins is
    post-processing).  If ``trials < sensitivity`` the supports are disjoint and ``delta = 1``.

    :param trials: number of fair coins ``N``, ``0 <= N <= 2**53`` (any parity).
    :param sensitivity: integer sensitivity ``Δ >= 1``.
    :param epsilon: privacy-loss parameter, positive.
    :return: ``delta`` in ``[0, 1]`` (values below ``~1e-300`` underflow to 0).
    :raise ValueError: if a parameter is out of range.
    """
    n = _check_trials(trials)
    if n > MAX_TRIALS:
        raise ValueError(f"trials must be at most 2**53, got {trials}")
    sens = check_positive_int(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    if n < sens:
        return 1.0
    k_star = _privacy_loss_tail_end(n, sens, eps)
    with np.errstate(divide="ignore"):
        log_f1 = float(stats.binom.logcdf(k_star, n, 0.5))
        log_f2 = float(stats.binom.logcdf(k_star - sens, n, 0.5)) if k_star >= sens else -math.inf
    if log_f1 == -math.inf:
        return 0.0
    delta = math.exp(log_f1) * -math.expm1(eps + log_f2 - log_f1)
    return min(1.0, max(0.0, delta))


def _gaussian_trials(epsilon: float, delta: float, sensitivity: int) -> int:
    """Even ``N`` with ``N/4 = 2 ln(1.25/delta) Δ^2 / eps^2`` (classical Gaussian-mechanism variance)."""
    variance = 2.0 * math.log(1.25 / delta) * sensitivity**2 / epsilon**2
    return 2 * max(1, math.ceil(2.0 * variance))


def binomial_trials(epsilon: float, delta: float, sensitivity: int) -> int:
    """Return the smallest even ``N`` with ``binomial_delta(N, sensitivity, epsilon) <= delta``.

    ``binomial_delta`` is non-increasing in ``N`` (post-processing), so a binary search over even
    ``N`` is exact.  It is seeded with the Gaussian approximation ``N/4 ≈ 2 ln(1.25/δ) Δ²/ε²``: the
    bracket is widened by doubling/halving from that seed, then bisected.  Even ``N`` keeps the
    centring ``N/2`` an integer.

    :param epsilon: privacy-loss parameter, positive.
    :param delta: target ``delta`` in ``(0, 1)``.
    :param sensitivity: integer sensitivity ``Δ >= 1``.
    :return: the minimal even number of trials.
    :raise ValueError: if a parameter is out of range, or more than :data:`MAX_TRIALS` trials would
        be needed.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if dlt == 0.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    sens = check_positive_int(sensitivity, "sensitivity")

    def ok(half: int) -> bool:
        return binomial_delta(2 * half, sens, eps) <= dlt

    max_half = MAX_TRIALS // 2
    seed = min(_gaussian_trials(eps, dlt, sens) // 2, max_half)
    hi = seed
    while not ok(hi):
        if hi == max_half:
            raise ValueError(
                f"more than 2**53 trials needed for epsilon={epsilon}, delta={delta}, sensitivity={sensitivity}")
        hi = min(2 * hi, max_half)
    lo = hi // 2  # ok(0) is False: delta(0) = 1
    while lo > 0 and ok(lo):
        hi, lo = lo, lo // 2
    while hi - lo > 1:  # invariant: not ok(lo), ok(hi)
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return 2 * hi


def party_binomial_trials(epsilon: float, delta: float, sensitivity: int, parties: int, threshold: int) -> int:
    """Return the even per-party trials ``N_p``, the least with ``(m - t) N_p >= binomial_trials(...)``.

    The ``m - t`` honest parties' shares alone then form ``Binomial((m - t) N_p, 1/2)``, which is
    ``(epsilon, delta)``-DP because ``delta`` is non-increasing in the number of trials; the
    coalition's own shares are post-processing.

    :param epsilon: privacy-loss parameter, positive.
    :param delta: target ``delta`` in ``(0, 1)``.
    :param sensitivity: integer sensitivity ``Δ >= 1``.
    :param parties: number of parties ``m >= 1``.
    :param threshold: coalition size ``t`` with ``2 t < m``.
    :return: even ``N_p``.
    :raise ValueError: if a parameter is out of range.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if dlt == 0.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    sens = check_positive_int(sensitivity, "sensitivity")
    m, t = check_parties(parties, threshold)
    total = binomial_trials(eps, dlt, sens)
    honest = m - t
    per_party = -(-total // honest)
    return per_party + (per_party % 2)


def distributed_binomial_variance(party_trials: int, parties: int) -> float:
    """Return the variance ``m N_p / 4`` of the total binomial noise ``Binomial(m N_p, 1/2)``.

    :param party_trials: trials per party ``N_p >= 0``.
    :param parties: number of parties ``m >= 1``.
    :raise ValueError: if ``party_trials < 0`` or ``parties < 1``.
    """
    n_p = _check_trials(party_trials, "party_trials")
    m = check_positive_int(parties, "parties")
    return m * n_p / 4.0
