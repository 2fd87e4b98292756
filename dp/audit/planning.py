"""Sample-size planning of the local audit cases: the power argument behind their recommended sizes.

Computes with public probabilities only (Clopper & Pearson 1934; Jagielski, Ullman & Oprea 2020).
Derivation: docs/audit.md."""
from __future__ import annotations

import bisect
import math

from dp.audit.engine import clopper_pearson_lower, clopper_pearson_upper, evaluation_trials
from dp.validation import check_finite, check_nonnegative, check_positive_int

__all__ = ["SAMPLE_STEP", "CONTROL_MARGIN", "MECHANISM_RESOLUTION", "planned_lower_bound",
           "lower_bound_spread", "resolving_samples"]

#: Multiple to which recommended sample sizes are rounded up (also the smallest size).
SAMPLE_STEP = 10_000
#: Standard deviations of the realised bound a control's planned bound must clear its claim by.
CONTROL_MARGIN = 4.0
#: A mechanism's recommended size resolves its loss to this fraction (planned > (1 - r) eps_true).
MECHANISM_RESOLUTION = 0.1

_MAX_SAMPLES = 1 << 34


def _check_probability_pair(p: float, q: float) -> tuple[float, float]:
    p_value, q_value = check_finite(p, "p"), check_finite(q, "q")
    if not 0.0 < p_value <= 1.0:
        raise ValueError(f"p must lie in (0, 1], got {p}")
    if not 0.0 < q_value < 1.0:
        raise ValueError(f"q must lie in (0, 1), got {q}")
    return p_value, q_value


def planned_lower_bound(p: float, q: float, *, samples: int, confidence: float = 0.95) -> float:
    """The audit's lower bound for an event of probabilities ``p`` on ``D`` and ``q`` on ``D'`` with ``samples`` per
    dataset (both halves; the ranges: docs/audit.md).  :raise ValueError: on a parameter out of range."""
    p_value, q_value = _check_probability_pair(p, q)
    if not 0.0 < check_finite(confidence, "confidence") < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    level = 1.0 - (1.0 - confidence) / 2.0
    trials = evaluation_trials(samples)
    low = float(clopper_pearson_lower(p_value * trials, trials, level))
    high = float(clopper_pearson_upper(q_value * trials, trials, level))
    return math.log(low / high) if low > 0.0 else 0.0


def lower_bound_spread(p: float, q: float, *, samples: int) -> float:
    """Delta-method standard deviation of the realised bound: ``sqrt((1-p)/(h p) + (1-q)/(h q))`` (docs/audit.md);
    ValueError on a parameter out of range."""
    p_value, q_value = _check_probability_pair(p, q)
    trials = evaluation_trials(samples)
    return math.sqrt((1.0 - p_value) / (trials * p_value) + (1.0 - q_value) / (trials * q_value))


def resolving_samples(p: float, q: float, *, target: float, margin: float = 0.0, confidence: float = 0.95,
                      step: int = SAMPLE_STEP) -> int:
    """The smallest multiple of ``step`` with ``planned_lower_bound - margin * spread > target`` for an event of
    probabilities ``p`` on ``D`` and ``q < p`` on ``D'`` (the parameters: docs/audit.md).
    :raise ValueError: if ``ln(p/q) <= target`` (no sample size resolves it) or the size would exceed ``2^34``."""
    p_value, q_value = _check_probability_pair(p, q)
    goal = check_nonnegative(target, "target")
    sigmas = check_nonnegative(margin, "margin")
    unit = check_positive_int(step, "step")
    if unit < 2:
        raise ValueError(f"step must be at least 2, got {step}")
    if math.log(p_value / q_value) <= goal:
        raise ValueError(f"an event with log-ratio {math.log(p_value / q_value):.4g} cannot resolve {goal:.4g}")

    def clears(multiple: int) -> bool:
        size = multiple * unit
        return (planned_lower_bound(p_value, q_value, samples=size, confidence=confidence)
                - sigmas * lower_bound_spread(p_value, q_value, samples=size)) > goal

    high = 1
    while not clears(high):
        high *= 2
        if high * unit > _MAX_SAMPLES:
            raise ValueError(f"resolving {goal:.4g} needs more than {_MAX_SAMPLES} samples")
    candidates = range(high // 2 + 1, high + 1)  # clears(high // 2) is false (or high // 2 == 0)
    return candidates[bisect.bisect_left(candidates, True, key=clears)] * unit
