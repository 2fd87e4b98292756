"""DP calibration of the integer noise drawn by :mod:`secure.noise.party`, in integer sensitivity units.

Coalition calibration: the ``m - t`` honest parties alone supply the full discrete Laplace (Pólya shares,
Balle et al. 2020; Sinh & Ramon App. B.1) or binomial noise.  Threat model: passive, static coalition of ``t < m/2`` parties (MPyC's Shamir scheme).
Derivation and why binomial rather than discrete Gaussian: docs/noise.md."""
from __future__ import annotations

import math
from decimal import Decimal, localcontext

import numpy as np
import numpy.typing as npt

from dp.validation import (check_epsilon, check_interval, check_nonnegative_int, check_parties, check_positive,
                           check_positive_int)

__all__ = ["discrete_laplace_alpha", "discrete_laplace_log_alpha", "discrete_laplace_pmf", "discrete_laplace_variance",
           "party_noise_shape", "distributed_laplace_variance", "binomial_delta", "binomial_trials",
           "party_binomial_trials", "distributed_binomial_variance", "MAX_TRIALS"]

#: Most trials :func:`binomial_delta` evaluates (support points exact doubles; e.g. ``sensitivity = 2**19`` at
#: ``epsilon = 0.1, delta = 1e-9``).
MAX_TRIALS: int = 2**53

def discrete_laplace_log_alpha(epsilon: float, sensitivity: float) -> float:
    """``log(alpha) = -epsilon / sensitivity`` of the ``epsilon``-DP discrete Laplace, no rounding through ``exp``
    (ValueError unless both are finite and positive). Details: docs/noise.md."""
    return -check_epsilon(epsilon) / check_positive(sensitivity, "sensitivity")


def discrete_laplace_alpha(epsilon: float, sensitivity: float) -> float:
    """``alpha = exp(-epsilon / sensitivity)`` (errors as :func:`discrete_laplace_log_alpha`)."""
    return math.exp(discrete_laplace_log_alpha(epsilon, sensitivity))


def discrete_laplace_pmf(values: npt.ArrayLike, alpha: float) -> np.ndarray:
    """The discrete Laplace pmf ``(1 - alpha)/(1 + alpha) * alpha^|z|`` at integer ``values`` (floats must be
    integral), ``alpha`` in ``[0, 1)``."""
    a = check_interval(alpha, "alpha", low=0.0, high=1.0)
    z = np.asarray(values)
    if z.dtype == np.bool_ or not (np.issubdtype(z.dtype, np.integer) or np.issubdtype(z.dtype, np.floating)):
        raise TypeError(f"values must be integers, got dtype {z.dtype}")
    if np.issubdtype(z.dtype, np.floating) and not np.all(np.isfinite(z) & (z == np.floor(z))):
        raise ValueError("values must be integers")
    mag = np.abs(z.astype(np.float64))
    return (1.0 - a) / (1.0 + a) * np.power(a, mag)


def discrete_laplace_variance(alpha: float) -> float:
    """The variance ``2 alpha / (1 - alpha)^2`` of ``DLap(alpha)``, ``alpha`` in ``[0, 1)``."""
    a = check_interval(alpha, "alpha", low=0.0, high=1.0)
    return 2.0 * a / (1.0 - a) ** 2


def party_noise_shape(parties: int, threshold: int) -> float:
    """The Pólya shape ``1/(m - t)`` of each party's noise share (ValueError unless ``2 t < m``). Details: docs/noise.md."""
    m, t = check_parties(parties, threshold)
    return 1.0 / (m - t)


def distributed_laplace_variance(alpha: float, parties: int, threshold: int) -> float:
    """The variance of the total noise ``m/(m - t) * 2 alpha / (1 - alpha)^2``. Details: docs/noise.md."""
    a = check_interval(alpha, "alpha", low=0.0, high=1.0)
    m, t = check_parties(parties, threshold)
    return m / (m - t) * 2.0 * a / (1.0 - a) ** 2


# Binomial(n, 1/2) pmf in log space for n up to 2**53 (Loader 2000), at offsets d = x - n/2: docs/noise.md.

_LOG2 = math.log(2.0)
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
    """Stirling-series error of ``log Gamma(x + 1)``; ``x >= 1``, integral where ``x <= 15``."""
    out = np.empty_like(x)
    small = x <= 15
    out[small] = _STIRLERR[np.rint(x[small]).astype(np.int64)]
    xb = x[~small]
    nn = xb * xb
    out[~small] = (_S0 - (_S1 - (_S2 - (_S3 - _S4 / nn) / nn) / nn) / nn) / xb
    return out


def _bd0(x: np.ndarray, mid: float, diff: np.ndarray) -> np.ndarray:
    """``x log(x / mid) + mid - x`` to relative precision; ``diff = x - mid`` given accurately."""
    total = x + mid
    near = np.abs(diff) < 0.1 * total
    out = np.empty_like(x)
    far = ~near
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


def _log_b(offset: npt.ArrayLike, n: int) -> np.ndarray:
    """``log P[Binomial(n, 1/2) = x]`` at ``x = n/2 + offset`` (``-inf`` outside ``[0, n]``), ``x`` and ``n - x``
    integers or reals above 15."""
    d = np.asarray(offset, dtype=np.float64)
    mid = n / 2.0
    x = mid + d
    y = mid - d
    out = np.full(d.shape, -math.inf)
    out[(x == 0) | (y == 0)] = -n * _LOG2
    inner = (x > 0) & (y > 0)
    if np.any(inner):
        xi, yi, di = x[inner], y[inner], d[inner]
        nf = float(n)
        out[inner] = (
            _stirlerr(np.array([nf]))[0] - _stirlerr(xi) - _stirlerr(yi)
            - _bd0(xi, mid, di) - _bd0(yi, mid, -di)
            - 0.5 * np.log(2.0 * math.pi * xi * (yi / nf))
        )
    return out


def _log_half_binomial_pmf(k: npt.ArrayLike, n: int) -> np.ndarray:
    """``log P[Binomial(n, 1/2) = k]`` for integers ``k`` (``-inf`` outside ``[0, n]``)."""
    ks = np.asarray(k, dtype=np.int64)
    return _log_b((ks - n // 2).astype(np.float64) - 0.5 * (n % 2), n)


# lower-tail sums  sum_{k <= K} h(k)  for h = b (the cdf) or h = g = b (1 - e^{eps - L}) (the delta)

_DIRECT_TERMS = 2**16   # sum term by term when the significant window is at most this long
_WINDOW_EXPONENT = 130.0  # window ends where b has dropped by e^-130 (below 4/n * 1e-40 of b(K))
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(20)


def _window(n: int, top: int) -> int:
    """Number of terms below ``top`` after which ``b(top - j) <= b(top) e^-130``. Details: docs/noise.md."""
    if top <= 0:
        return 0
    r = math.log((n - top + 1) / top)
    a = 2.0 / (n + 1)
    b = r - a
    c = _WINDOW_EXPONENT
    disc = math.sqrt(b * b + 4.0 * a * c)
    root = 2.0 * c / (b + disc) if b > 0 else (disc - b) / (2.0 * a)
    return min(top, math.ceil(root) + 1)


def _terms(offsets: np.ndarray, n: int, shift: int, epsilon: float, log_ref: float) -> np.ndarray:
    """``h(x) e^{-log_ref}`` at ``x = n/2 + offsets``: ``b`` if ``shift == 0``, else
    ``b(x) (1 - e^{eps - L(x)})`` with ``L(x) = log b(x) - log b(x - shift)`` (not clipped at 0)."""
    lb = _log_b(offsets, n)
    scaled = np.exp(lb - log_ref)
    if shift == 0:
        return scaled
    loss = lb - _log_b(offsets - shift, n)
    with np.errstate(invalid="ignore"):
        factor = -np.expm1(epsilon - loss)
    factor[np.isposinf(loss)] = 1.0
    return scaled * factor


def _log_lower_sum(n: int, top: int, shift: int = 0, epsilon: float = 0.0) -> float:
    """``log sum_{k=0}^{top} h(k)``, ``h`` of :func:`_terms` (``-inf`` if ``top < 0``), ``top <= n/2``. Details: docs/noise.md."""
    if top < 0:
        return -math.inf
    top = min(top, n)
    d_top = float(top - n // 2) - 0.5 * (n % 2)  # top - n/2 exactly (multiples of 1/2 below 2**53)
    # scale by the largest pmf value in range (at the mode n//2 if top lies above it)
    log_ref = float(_log_half_binomial_pmf(np.array([min(top, n // 2)]), n)[0])
    width = _window(n, top)
    if width <= _DIRECT_TERMS:
        offsets = d_top - np.arange(width + 1, dtype=np.float64)
        total = float(np.sum(_terms(offsets, n, shift, epsilon, log_ref)))
    else:
        rate = abs(math.log((n - top + 1) / top))
        span = float(min(width, top - 16))
        panel = min(1.0 / rate if rate > 0 else math.inf, math.sqrt(n) / 4.0)
        count = max(1, math.ceil(span / panel))
        edges = np.linspace(0.0, span, count + 1)
        half = 0.5 * np.diff(edges)
        centre = 0.5 * (edges[1:] + edges[:-1])
        u = (centre[:, None] + half[:, None] * _GL_NODES[None, :]).ravel()
        weights = (half[:, None] * _GL_WEIGHTS[None, :]).ravel()
        integral = float(np.dot(weights, _terms(d_top - u, n, shift, epsilon, log_ref)))
        h = _terms(d_top + np.arange(-2.0, 3.0), n, shift, epsilon, log_ref)
        first = (h[0] - 8.0 * h[1] + 8.0 * h[3] - h[4]) / 12.0
        third = (-h[0] + 2.0 * h[1] - 2.0 * h[3] + h[4]) / 2.0
        total = integral + 0.5 * h[2] + first / 12.0 - third / 720.0
    if total <= 0.0:
        return -math.inf
    return log_ref + math.log(total)


def _binomial_log_cdf(k: int, n: int) -> float:
    """``log P[Binomial(n, 1/2) <= k]`` to ~1e-13 relative for ``n <= 2**53``. Details: docs/noise.md."""
    if k < 0:
        return -math.inf
    if k >= n:
        return 0.0
    if k > n // 2:
        return math.log1p(-math.exp(_log_lower_sum(n, n - k - 1)))
    return _log_lower_sum(n, k)


def _loss(points: np.ndarray, trials: int, sensitivity: int) -> np.ndarray:
    """Privacy loss ``L(k) = log b(k) - log b(k - sensitivity)`` at integer points ``k``."""
    return _log_half_binomial_pmf(points, trials) - _log_half_binomial_pmf(points - sensitivity, trials)


def _privacy_loss_tail_end(trials: int, sensitivity: int, epsilon: float) -> int:
    """Largest ``k`` in ``[sensitivity - 1, trials]`` with ``b(k) > e^eps b(k - sensitivity)``. Details: docs/noise.md."""
    lo, hi = sensitivity - 1, trials + 1  # predicate true at lo, false at hi (by convention)
    while hi - lo > 1:
        count = min(hi - lo - 1, 64)
        points = np.unique(np.rint(np.linspace(lo + 1, hi - 1, count)).astype(np.int64))
        verdict = _loss(points, trials, sensitivity) > epsilon
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
    r"""The exact ``delta`` in ``[0, 1]`` of ``value + Binomial(trials, 1/2)`` at ``epsilon`` (``0 <= trials <= 2**53``,
    any parity; below ~1e-300 it underflows to 0). Details: docs/noise.md."""
    n = check_nonnegative_int(trials, "trials")
    if n > MAX_TRIALS:
        raise ValueError(f"trials must be at most 2**53, got {trials}")
    sens = check_positive_int(sensitivity, "sensitivity")
    eps = check_epsilon(epsilon)
    if n < sens:
        return 1.0
    k_star = _privacy_loss_tail_end(n, sens, eps)
    if k_star < 0:
        return 0.0
    smooth_terms = True
    if k_star > n // 2:
        smooth_terms = False  # b increases below k*: use the two tails (F(k*) >= 1/2, mild cancellation)
    elif _window(n, k_star) > _DIRECT_TERMS:
        rate = math.log((n - k_star + 1) / k_star)
        step = float(_loss(np.array([k_star]), n, sens)[0] - _loss(np.array([k_star + 1]), n, sens)[0])
        smooth_terms = step < rate
    if smooth_terms:
        delta = math.exp(_log_lower_sum(n, k_star, sens, eps))
    else:
        # 1 - e^{eps - L} varies faster than b: subtract the tails, cancellation below 1 + rate/step
        log_f1 = _binomial_log_cdf(k_star, n)
        log_f2 = _binomial_log_cdf(k_star - sens, n)
        delta = math.exp(log_f1) * -math.expm1(eps + log_f2 - log_f1)
    return min(1.0, max(0.0, delta))


def _gaussian_trials(epsilon: float, delta: float, sensitivity: int) -> int:
    """Even ``N`` with ``N/4 = 2 ln(1.25/delta) Δ^2 / eps^2`` (classical Gaussian-mechanism variance)."""
    ratio = sensitivity / epsilon if epsilon > 0 else math.inf
    variance = 2.0 * math.log(1.25 / delta) * ratio * ratio  # inf (never OverflowError) for a tiny epsilon
    if not variance < MAX_TRIALS:  # a tiny epsilon: the seed is only a starting point, cap it (no overflow)
        return MAX_TRIALS
    return 2 * max(1, math.ceil(2.0 * variance))


def binomial_trials(epsilon: float, delta: float, sensitivity: int) -> int:
    """The smallest even ``N`` with ``binomial_delta(N, sensitivity, epsilon) <= delta``; ValueError past
    :data:`MAX_TRIALS`. Details: docs/noise.md."""
    eps = check_epsilon(epsilon)
    dlt = check_interval(delta, "delta", low=0.0, high=1.0, closed_low=False)
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
    """The least even per-party trials ``N_p`` with ``(m - t) N_p >= binomial_trials(...)``. Details: docs/noise.md."""
    eps = check_epsilon(epsilon)
    dlt = check_interval(delta, "delta", low=0.0, high=1.0, closed_low=False)
    sens = check_positive_int(sensitivity, "sensitivity")
    m, t = check_parties(parties, threshold)
    total = binomial_trials(eps, dlt, sens)
    honest = m - t
    per_party = -(-total // honest)
    return per_party + (per_party % 2)


def distributed_binomial_variance(party_trials: int, parties: int) -> float:
    """The variance ``m N_p / 4`` of the total binomial noise ``Binomial(m N_p, 1/2)``."""
    n_p = check_nonnegative_int(party_trials, "party_trials")
    m = check_positive_int(parties, "parties")
    return m * n_p / 4.0
