"""Discrete Laplace noise sampled inside MPC: public digit thresholds, error accounting, plaintext mirror.

Chooses the public thresholds ``T_j``, digits ``J`` and bit width of :mod:`secure.noise.mpc`'s
``G1 - G2`` and bounds its truncation: ``(epsilon, delta_s)``-DP with ``delta_s = (1 + e^epsilon) tau``
(Champion, shelat & Ullman 2019).  Threat model: passive, static coalition of ``t < m/2`` parties (MPyC's Shamir scheme).  No party draws any part of the noise.
Derivation: docs/noise.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, getcontext, localcontext
from fractions import Fraction
from numbers import Integral
from typing import Any

import numpy as np

from dp.validation import check_epsilon, check_instance, check_int_range, check_interval, check_positive_int

__all__ = ["DEFAULT_SAMPLER_DELTA", "DEFAULT_BITS", "MAX_BITS", "MAX_DIGITS", "SecretLaplacePlan", "digit_thresholds",
           "truncation_tv", "sampler_delta", "secret_laplace_plan", "plan_secret_laplace", "largest_sampler_epsilon",
           "geometric_pmf", "construction_pmf", "simulate_secret_laplace", "secret_laplace_noise"]

#: Default budget for ``delta_s`` when the query is pure DP.
DEFAULT_SAMPLER_DELTA: float = 2.0**-40
#: Bit width of the uniform integers unless ``e^epsilon`` forces more.
DEFAULT_BITS: int = 64
#: Widths tried above :data:`DEFAULT_BITS` grow in steps of this many bits.
BITS_STEP: int = 8
#: Largest width :func:`plan_secret_laplace` tries (``epsilon`` up to about 150 per released sum).
MAX_BITS: int = 256
#: Most digits per geometric: the noise stays below ``2^48`` in magnitude.
MAX_DIGITS: int = 48
#: :func:`construction_pmf` refuses more digits than this (``2^(J+1)`` support points).
MAX_PMF_DIGITS: int = 22

_EXPONENT_RANGE = 10**12  # decimal exponents: e^epsilon and alpha^(2^J) never overflow


def _context(bits: int) -> Any:
    """A decimal context for ``b``-bit thresholds: ``ceil(b log10 2) + 40`` digits, wide exponents."""
    context = getcontext().copy()
    context.prec = math.ceil(bits * math.log10(2)) + 40
    context.Emax = _EXPONENT_RANGE
    context.Emin = -_EXPONENT_RANGE
    return localcontext(context)


def _round_up(value: Decimal) -> float:
    """The smallest double at least ``value`` (so a bound stays a bound), capped at 1 for a delta."""
    result = float(value)
    if Decimal(result) < value:
        result = math.nextafter(result, math.inf)
    return result


def _checked(epsilon: float, sensitivity: int, digits: int, bits: int) -> tuple[float, int, int, int]:
    """The sampler's parameters validated, in this order (ValueError naming the first bad one)."""
    return (check_epsilon(epsilon), check_positive_int(sensitivity, "sensitivity"),
            check_int_range(digits, "digits", low=1, high=MAX_DIGITS), check_int_range(bits, "bits", low=2, high=MAX_BITS))


def digit_thresholds(*, epsilon: float, sensitivity: int, digits: int, bits: int) -> tuple[int, ...]:
    """The ``J = digits`` public thresholds ``T_j = round(q_j 2^b)`` in ``[0, 2^(b-1)]``, ``q_j = alpha^(2^j)/(1 +
    alpha^(2^j))``, ``alpha = exp(-epsilon/s)``, ``b = bits`` (ValueError on a bad parameter). Details: docs/noise.md."""
    eps, s, count, width = _checked(epsilon, sensitivity, digits, bits)
    scale = Decimal(1 << width)
    out = []
    with _context(width):
        rate = Decimal(eps) / Decimal(s)  # Decimal(float) is exact; the division rounds at the context precision
        for j in range(count):
            power = (-(rate * (1 << j))).exp()
            q = power / (1 + power)
            out.append(int((q * scale).to_integral_value(rounding=ROUND_HALF_EVEN)))
    return tuple(out)


def _tv_decimal(epsilon: float, sensitivity: int, digits: int, bits: int) -> Decimal:
    with _context(bits):
        tail = (-(Decimal(epsilon) / Decimal(sensitivity) * (1 << digits))).exp()
        return 2 * (tail + Decimal(digits) / Decimal(1 << bits))


def _delta_decimal(epsilon: float, sensitivity: int, digits: int, bits: int) -> Decimal:
    with _context(bits):
        return (1 + Decimal(epsilon).exp()) * _tv_decimal(epsilon, sensitivity, digits, bits)


def truncation_tv(*, epsilon: float, sensitivity: int, digits: int, bits: int) -> float:
    """``tau = 2 (alpha^(2^J) + J 2^-b)``, rounded up: total-variation distance of the sampled noise from DLap
    (docs/noise.md)."""
    return _round_up(_tv_decimal(*_checked(epsilon, sensitivity, digits, bits)))


def sampler_delta(*, epsilon: float, sensitivity: int, digits: int, bits: int) -> float:
    """``delta_s = (1 + e^epsilon) tau``, the delta the sampler's error costs, rounded up and capped at 1
    (docs/noise.md)."""
    return min(_round_up(_delta_decimal(*_checked(epsilon, sensitivity, digits, bits))), 1.0)


@dataclass(frozen=True)
class SecretLaplacePlan:
    """Public parameters of discrete Laplace noise sampled inside MPC for one released sum (``J`` digits, ``b``-bit
    uniforms): :func:`digit_thresholds` (checked), ``delta`` (:func:`sampler_delta`), ``tv`` (:func:`truncation_tv`)."""

    epsilon: float
    sensitivity: int
    digits: int
    bits: int
    thresholds: tuple[int, ...]
    delta: float
    tv: float

    def __post_init__(self) -> None:
        expected = digit_thresholds(epsilon=self.epsilon, sensitivity=self.sensitivity, digits=self.digits,
                                    bits=self.bits)
        if tuple(self.thresholds) != expected:
            raise ValueError("thresholds must be digit_thresholds(epsilon, sensitivity, digits, bits)")

    @property
    def alpha(self) -> float:
        """``exp(-epsilon / s)``."""
        return math.exp(-self.epsilon / self.sensitivity)

    @property
    def slack(self) -> int:
        """``2^J - 1``: the noise never exceeds this in magnitude (a hard bound)."""
        return (1 << self.digits) - 1

    @property
    def digit_probabilities(self) -> tuple[Fraction, ...]:
        """Exact ``P(B_j = 1) = T_j / 2^b``."""
        return tuple(Fraction(t, 1 << self.bits) for t in self.thresholds)

    @property
    def variance(self) -> float:
        """Exact variance of the sampled noise, ``2 sum_j 4^j p_j (1 - p_j)``."""
        total = sum((Fraction(4) ** j) * p * (1 - p) for j, p in enumerate(self.digit_probabilities))
        return float(2 * total)

    def thresholds_at(self, bits: int) -> tuple[int, ...]:
        """The same digit probabilities on ``bits >= b`` bits: ``T_j 2^(bits - b)`` (exact)."""
        if isinstance(bits, bool) or not isinstance(bits, Integral) or bits < self.bits:
            raise ValueError(f"bits must be an integer of at least {self.bits}, got {bits!r}")
        return tuple(t << (int(bits) - self.bits) for t in self.thresholds)


def secret_laplace_plan(*, epsilon: float, sensitivity: int, digits: int, bits: int) -> SecretLaplacePlan:
    """The plan with given ``J`` and ``b`` (no budget check; tests and explicit choices)."""
    thresholds = digit_thresholds(epsilon=epsilon, sensitivity=sensitivity, digits=digits, bits=bits)
    return SecretLaplacePlan(float(epsilon), int(sensitivity), int(digits), int(bits), thresholds,
                             sampler_delta(epsilon=epsilon, sensitivity=sensitivity, digits=digits, bits=bits),
                             truncation_tv(epsilon=epsilon, sensitivity=sensitivity, digits=digits, bits=bits))


def plan_secret_laplace(*, epsilon: float, sensitivity: int, delta_budget: float = DEFAULT_SAMPLER_DELTA,
                        bits: int | None = None) -> SecretLaplacePlan:
    """Choose ``b`` (or take ``bits``) and the fewest digits ``J`` with ``delta_s <= delta_budget``; ValueError
    (with the reason) if no ``J <= MAX_DIGITS``, ``b <= MAX_BITS`` do. Details: docs/noise.md."""
    eps = check_epsilon(epsilon)
    s = check_positive_int(sensitivity, "sensitivity")
    budget = check_interval(delta_budget, "delta_budget", low=0.0, high=1.0, closed_low=False)
    widths = ([check_int_range(bits, "bits", low=2, high=MAX_BITS)] if bits is not None
              else list(range(DEFAULT_BITS, MAX_BITS + 1, BITS_STEP)))
    plan = _search_plan(eps, s, budget, widths)
    if plan is not None:
        return plan
    if (MAX_DIGITS + 1) * eps / s < 1:
        reason = (f"epsilon / sensitivity = {eps / s:.3g} needs more than {MAX_DIGITS} binary digits "
                  "(give a larger epsilon or --delta)")
    else:
        largest = largest_sampler_epsilon(budget, sensitivity=s, bits=max(widths))
        if largest > 0:
            reason = (f"epsilon = {eps:g} per released sum is too large for {max(widths)}-bit uniform integers "
                      f"(at sensitivity {s} it must be at most {math.floor(largest * 100) / 100:g})")
        else:
            reason = (f"{max(widths)}-bit uniform integers cannot reach so small a delta at any epsilon "
                      f"(delta_s >= J (1 + e^epsilon) 2^-{max(widths) - 1} with J >= 1 digits)")
    raise ValueError(f"the in-MPC discrete Laplace sampler cannot reach delta <= {budget:.3g}: {reason}")


def _search_plan(eps: float, s: int, budget: float, widths: Sequence[int]) -> SecretLaplacePlan | None:
    """The first width and fewest digits meeting the budget (see :func:`plan_secret_laplace`), or ``None``."""
    limit = Decimal(budget)
    for width in widths:
        with _context(width):
            floor_term = 2 * (1 + Decimal(eps).exp()) / Decimal(1 << width)  # delta_s >= J * this
        if floor_term > limit:
            continue
        for digits in range(1, MAX_DIGITS + 1):
            if digits * floor_term > limit:
                break
            if _delta_decimal(eps, s, digits, width) <= limit:
                return secret_laplace_plan(epsilon=eps, sensitivity=s, digits=digits, bits=width)
    return None


def largest_sampler_epsilon(delta_budget: float = DEFAULT_SAMPLER_DELTA, *, sensitivity: int | None = None,
                            bits: int = MAX_BITS) -> float:
    """The largest epsilon per released sum that :func:`plan_secret_laplace` can serve (to ~1e-6) at sensitivity
    ``s`` (``None``: at every ``s``) and up to ``bits`` wide uniforms; ``-inf`` if none. Details: docs/noise.md."""
    budget = check_interval(delta_budget, "delta_budget", low=0.0, high=1.0, closed_low=False)
    width = check_int_range(bits, "bits", low=2, high=MAX_BITS)
    room = budget * 2.0 ** (width - 1) - 1.0
    bound = math.log(room) if room > 1.0 else -math.inf
    if sensitivity is None or not bound > 0:
        return bound

    sens = check_positive_int(sensitivity, "sensitivity")
    widths = list(range(DEFAULT_BITS, MAX_BITS + 1, BITS_STEP)) if width == MAX_BITS else [width]

    def feasible(epsilon: float) -> bool:
        return epsilon > 0 and _search_plan(epsilon, sens, budget, widths) is not None

    low, high = 0.0, bound
    if feasible(high):
        return high
    while high - low > 1e-6 * max(1.0, high):
        middle = (low + high) / 2
        if feasible(middle):
            low = middle
        else:
            high = middle
    return low


def geometric_pmf(plan: SecretLaplacePlan) -> np.ndarray:
    """Exact pmf of one sampled geometric ``G' = sum_j 2^j B_j`` on ``0 .. 2^J - 1`` (float64; ValueError if
    ``J > MAX_PMF_DIGITS``). Details: docs/noise.md."""
    check_instance(plan, SecretLaplacePlan, "plan")
    if plan.digits > MAX_PMF_DIGITS:
        raise ValueError(f"the pmf has 2**{plan.digits} points; at most {MAX_PMF_DIGITS} digits are supported")
    pmf = np.ones(1)
    for p in plan.digit_probabilities:
        one = float(p)
        pmf = np.concatenate([pmf * (1.0 - one), pmf * one])
    return pmf


def construction_pmf(plan: SecretLaplacePlan) -> tuple[np.ndarray, int]:
    """Exact pmf of the sampled noise ``G1' - G2'``: ``(pmf, offset)``, ``pmf[offset + z] = P(noise = z)``,
    ``offset = 2^J - 1`` (ValueError if ``J > MAX_PMF_DIGITS``)."""
    one = geometric_pmf(plan)
    if one.size <= 1 << 13:
        pmf = np.correlate(one, one, mode="full")
    else:
        from scipy import signal

        pmf = np.maximum(signal.fftconvolve(one, one[::-1]), 0.0)
    return pmf, one.size - 1

_CHUNK = 1 << 16


def _uniform_below_thresholds(count: int, plan: SecretLaplacePlan, threshold: int,
                              rng: np.random.Generator) -> np.ndarray:
    """``count`` draws of ``[U < T]`` with ``U`` uniform on ``b`` bits, in 64-bit words (exact)."""
    words = -(-plan.bits // 64)
    top = plan.bits - 64 * (words - 1)
    less = np.zeros(count, dtype=bool)
    equal = np.ones(count, dtype=bool)
    for index in range(words):
        width = top if index == 0 else 64
        shift = 64 * (words - 1 - index)
        part = np.uint64((threshold >> shift) & ((1 << width) - 1))
        u = rng.integers(0, 1 << width, size=count, dtype=np.uint64)
        less |= equal & (u < part)
        equal &= u == part
    return less


def simulate_secret_laplace(plan: SecretLaplacePlan, size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Plaintext mirror of the in-MPC sampler: ``size`` int64 draws of ``G1' - G2'``; ``rng=None`` draws from the OS
    (:func:`secure.noise.party.os_generator`), tests pass a seeded one. Details: docs/noise.md."""
    from secure.noise.party import noise_generator

    check_instance(plan, SecretLaplacePlan, "plan")
    count = check_positive_int(size, "size")
    gen = noise_generator(rng)
    out = np.empty(count, dtype=np.int64)
    for start in range(0, count, _CHUNK):
        chunk = min(_CHUNK, count - start)
        total = np.zeros(chunk, dtype=np.int64)
        for sign in (1, -1):
            for j, threshold in enumerate(plan.thresholds):
                if threshold:
                    total += sign * (_uniform_below_thresholds(chunk, plan, threshold, gen).astype(np.int64) << j)
        out[start:start + chunk] = total
    return out


def secret_laplace_noise(sectype: Any, plans: Sequence[SecretLaplacePlan]) -> list[Any]:
    """One secret noise value of type ``sectype`` per plan (at least one), sampled inside MPC in one batch.
    Details: docs/noise.md."""
    from mpyc.runtime import mpc

    from secure.noise.mpc import secret_discrete_laplace

    if not plans:
        raise ValueError("plans must not be empty")
    for plan in plans:
        check_instance(plan, SecretLaplacePlan, "plan")
    width = max(plan.bits for plan in plans)
    noise = secret_discrete_laplace(sectype, [plan.thresholds_at(width) for plan in plans], width)
    return list(mpc.np_tolist(noise))
