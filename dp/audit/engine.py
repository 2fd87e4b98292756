"""Empirical DP auditing: a lower bound on a mechanism's privacy loss, with confidence.

Clopper-Pearson hockey-stick test (Ding et al. 2018; Kong et al. 2024) on a worst-case pair of
neighbouring datasets; the exact epsilon of honest noise.  The mechanism is a black box run in one process
(the simulated path, equal to the secure path for the same noise draws).  Derivation: docs/audit.md."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import signal, stats

from dp.validation import check_delta, check_epsilon, check_parties, check_positive_int

__all__ = ["AuditCase", "AuditResult", "paired", "honest_sum", "evaluation_trials", "audit", "clopper_pearson_lower", "clopper_pearson_upper",
           "loss_lower_bounds", "honest_noise_pmf", "exact_epsilon", "coalition_epsilon"]

#: Sampler of a case: ``sample(count, rng) -> (outputs on D, outputs on D')`` (docs/audit.md, ``AuditCase``).
Sampler = Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]


def paired(released: Callable[[Any, int, np.random.Generator], np.ndarray], first: Any, second: Any) -> Sampler:
    """The sampler of ``released(dataset, count, rng)`` on ``first`` (``D``), then on ``second`` (``D'``)."""
    return lambda count, rng: (released(first, count, rng), released(second, count, rng))


def honest_sum(draw: Callable[[], npt.ArrayLike], honest: int) -> np.ndarray:
    """The sum (int64) of ``honest >= 1`` calls of ``draw``: the noise shares a coalition cannot subtract."""
    return np.asarray(np.sum([np.asarray(draw(), dtype=np.int64) for _ in range(honest)], axis=0, dtype=np.int64))


#: Quantile levels of the pooled first half used as thresholds when choosing the event.
_THRESHOLD_LEVELS = 400
#: Singleton events are tried when the outputs take at most this many distinct values.
_SINGLETON_LIMIT = 400
#: Confidence of the bounds that *rank* the candidate events on the first half (why stricter: docs/audit.md).
_SELECTION_LEVEL = 0.9999


@dataclass(frozen=True)
class AuditCase:
    """One audit: a ``mechanism`` claiming ``(epsilon, delta)`` on a worst-case pair of neighbouring datasets,
    sampled by ``sample(count, rng) -> (outputs on D, outputs on D')`` (the fields: docs/audit.md)."""

    name: str
    mechanism: str
    epsilon: float
    delta: float
    sample: Sampler
    statistic: str = "the released value"
    neighbours: str = ""
    control: bool = False
    samples: int = 200_000


@dataclass(frozen=True)
class AuditResult:
    """The outcome of :func:`audit`: the lower bound ``epsilon_lower`` (0 if no event beats ``delta``), the ``event``
    chosen and its Clopper-Pearson bounds (the fields: docs/audit.md)."""

    case: AuditCase
    epsilon_lower: float
    event: str
    p_lower: float
    q_upper: float
    samples: int
    confidence: float

    @property
    def violation(self) -> bool:
        """Whether the audit proves that the claimed ``epsilon`` is violated."""
        return self.epsilon_lower > self.case.epsilon

    @property
    def verdict(self) -> str:
        """``pass`` (no violation found) or ``FAIL`` (violation proven at the confidence level)."""
        return "FAIL" if self.violation else "pass"


def clopper_pearson_lower(successes: npt.ArrayLike, trials: int, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound(s) at confidence ``level`` (0 when ``successes == 0``)."""
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(1.0 - level, k, trials - k + 1)
    return np.where(k <= 0, 0.0, bound)


def clopper_pearson_upper(successes: npt.ArrayLike, trials: int, level: float) -> np.ndarray:
    """One-sided Clopper-Pearson upper bound(s) at confidence ``level`` (1 when ``successes == trials``)."""
    k = np.asarray(successes, dtype=float)
    with np.errstate(invalid="ignore"):
        bound = stats.beta.ppf(level, k + 1, trials - k)
    return np.where(k >= trials, 1.0, bound)


def _check_outputs(outputs: tuple[np.ndarray, np.ndarray], count: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(outputs, tuple) or len(outputs) != 2:
        raise TypeError(f"case {name}: sample must return a pair of arrays")
    first, second = (np.asarray(o, dtype=float).ravel() for o in outputs)
    if first.size != count or second.size != count:
        raise ValueError(f"case {name}: sample returned {first.size} and {second.size} outputs, expected {count}")
    if not (np.all(np.isfinite(first)) and np.all(np.isfinite(second))):
        raise ValueError(f"case {name}: outputs must be finite")
    return first, second


@dataclass(frozen=True)
class _Event:
    kind: str  # ">=", "<=", "=="
    value: float
    forward: bool  # True: first dataset on top (P[M(D) in S] vs P[M(D') in S])

    def count(self, sorted_values: np.ndarray) -> int:
        below = int(np.searchsorted(sorted_values, self.value, side="left"))
        up_to = int(np.searchsorted(sorted_values, self.value, side="right"))
        return {">=": sorted_values.size - below, "<=": up_to, "==": up_to - below}[self.kind]

    def describe(self) -> str:
        top, bottom = ("D", "D'") if self.forward else ("D'", "D")
        return f"output {self.kind} {self.value:g}, M({top}) against M({bottom})"


def loss_lower_bounds(counts_top: npt.ArrayLike, counts_bottom: npt.ArrayLike, trials: int, level: float,
                      delta: float) -> np.ndarray:
    """``log((p_low - delta) / q_high)`` of each event (0 where ``p_low <= delta``) from its counts of ``trials``: the
    Clopper-Pearson bounds at ``level``, ``p_low`` of the dataset on top, ``q_high`` of the other (docs/audit.md)."""
    p_low = clopper_pearson_lower(counts_top, trials, level)
    q_high = clopper_pearson_upper(counts_bottom, trials, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.log(np.maximum(p_low - delta, 0.0) / q_high)
    return np.where(p_low > delta, loss, 0.0)


def _choose_event(first: np.ndarray, second: np.ndarray, level: float, delta: float) -> _Event:
    """The event with the largest lower bound on the first half (ties: the first found)."""
    sorted_first, sorted_second = np.sort(first), np.sort(second)
    pooled = np.concatenate([first, second])
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, _THRESHOLD_LEVELS + 1)[1:-1], method="nearest"))
    distinct = np.unique(pooled)
    singletons = distinct if distinct.size <= _SINGLETON_LIMIT else np.empty(0)
    events = [_Event(kind, float(v), forward) for kind, values in ((">=", thresholds), ("<=", thresholds),
                                                                      ("==", singletons))
              for v in values for forward in (True, False)]
    counts_first = np.array([e.count(sorted_first) for e in events])
    counts_second = np.array([e.count(sorted_second) for e in events])
    forward = np.array([e.forward for e in events])
    top = np.where(forward, counts_first, counts_second)
    bottom = np.where(forward, counts_second, counts_first)
    scores = loss_lower_bounds(top, bottom, first.size, level, delta)
    return events[int(np.argmax(scores))]


def evaluation_trials(samples: int) -> int:
    """Samples per dataset in the audit's second (evaluation) half: ``samples - samples // 2``.
    :raise ValueError: if ``samples < 2``."""
    count = check_positive_int(samples, "samples")
    if count < 2:
        raise ValueError(f"samples must be at least 2, got {samples}")
    return count - count // 2


def audit(case: AuditCase, *, samples: int, rng: np.random.Generator, confidence: float = 0.95) -> AuditResult:
    """Audit ``case`` with ``samples >= 2`` outputs per dataset (``rng``: the sampler's generator, a fixed seed in
    tests; ``confidence`` ``1 - beta`` in ``(0, 1)``); return the privacy-loss lower bound (docs/audit.md).
    :raise ValueError: on a bad ``samples`` or ``confidence``, or a sampler returning bad outputs."""
    evaluation_trials(samples)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    check_epsilon(case.epsilon)
    check_delta(case.delta)
    first, second = _check_outputs(case.sample(samples, rng), samples, case.name)
    half = samples // 2
    level = 1.0 - (1.0 - confidence) / 2.0
    event = _choose_event(first[:half], second[:half], max(level, _SELECTION_LEVEL), case.delta)
    evaluation_first, evaluation_second = np.sort(first[half:]), np.sort(second[half:])
    trials = evaluation_first.size
    top, bottom = ((evaluation_first, evaluation_second) if event.forward
                   else (evaluation_second, evaluation_first))
    hits_top, hits_bottom = event.count(top), event.count(bottom)
    p_low = float(clopper_pearson_lower(hits_top, trials, level))
    q_high = float(clopper_pearson_upper(hits_bottom, trials, level))
    lower = float(loss_lower_bounds(np.array([hits_top]), np.array([hits_bottom]), trials, level, case.delta)[0])
    return AuditResult(case, max(lower, 0.0), event.describe(), p_low, q_high, samples, confidence)


def honest_noise_pmf(honest_parties: int, shape: float, alpha: float, *,
                     tail: float = 1e-15) -> tuple[np.ndarray, int]:
    """``(pmf, W)`` of the sum of ``honest_parties`` independent ``Polya(shape, alpha)`` differences: ``pmf[W + z]``
    is ``P(A - B = z)`` (docs/audit.md); ValueError on a non-positive count or shape, or ``alpha`` outside ``(0, 1)``."""
    check_positive_int(honest_parties, "honest_parties")
    if not (isinstance(shape, (int, float)) and math.isfinite(shape) and shape > 0):
        raise ValueError(f"shape must be positive, got {shape}")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    total_shape = honest_parties * shape
    width = int(stats.nbinom.isf(tail, total_shape, 1.0 - alpha)) + 1
    one_side = stats.nbinom.pmf(np.arange(width + 1), total_shape, 1.0 - alpha)
    if width <= 20000:
        pmf = np.correlate(one_side, one_side, mode="full")
    else:
        pmf = np.maximum(signal.fftconvolve(one_side, one_side[::-1]), 0.0)
    return pmf / pmf.sum(), width


def exact_epsilon(pmf: npt.ArrayLike, shift: int, *, floor: float = 1e-12) -> float:
    """``max_z |log p(z) - log p(z + s)|`` over ``|s| <= shift``: the exact ``epsilon`` of additive noise whose ``pmf``
    is on consecutive integers, ``shift`` the sensitivity (a positive integer below the support); docs/audit.md."""
    p = np.asarray(pmf, dtype=float)
    check_positive_int(shift, "shift")
    if shift >= p.size:
        raise ValueError(f"shift {shift} does not fit in a support of {p.size} points")
    worst = 0.0
    for s in range(1, shift + 1):
        left, right = p[:-s], p[s:]
        keep = (left > floor) & (right > floor)
        if np.any(keep):
            worst = max(worst, float(np.max(np.abs(np.log(left[keep]) - np.log(right[keep])))))
    return worst


def coalition_epsilon(*, epsilon: float, sensitivity: int, parties: int, threshold: int,
                      calibration_parties: int) -> float:
    """The exact ``epsilon`` left against a coalition of ``threshold`` parties (docs/audit.md; ValueError on invalid
    parameters)."""
    check_epsilon(epsilon)
    check_positive_int(sensitivity, "sensitivity")
    m, t = check_parties(parties, threshold)
    check_positive_int(calibration_parties, "calibration_parties")
    alpha = math.exp(-epsilon / sensitivity)
    pmf, _ = honest_noise_pmf(m - t, 1.0 / calibration_parties, alpha)
    return exact_epsilon(pmf, sensitivity)
