"""Error analysis of the subsampled-pairs protocol (Theorem 5) and the all-pairs baseline (§6, Fig. 4).

Bell et al., §5 Theorem 5 and App. C.1; the protocol itself is :mod:`dp.bell.subsampled_pairs`.
Derivations: docs/ldp.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dp.bell.hierarchical import advanced_composition as composition_loss
from dp.bell.subsampled_pairs import SubsampledPairsQuery, check_pair_rows, stack_party_rows
from dp.noise_plans import NoisePlan, plan_party_laplace
from dp.validation import check_delta, check_epsilon, check_parties, check_positive_int
from secure.noise.party import polya_difference

__all__ = ["DEFAULT_BASELINE_DELTA", "KernelMoments", "kernel_zetas", "exact_ustatistic", "subsampling_variance",
           "theorem5_mse", "protocol_mse", "advanced_composition_epsilon", "AllPairsSimulation", "all_pairs_plans",
           "simulate_all_pairs", "all_pairs_mse"]

#: The paper's delta for the all-pairs baseline with advanced composition (§6).
DEFAULT_BASELINE_DELTA = 1e-8


@dataclass(frozen=True)
class KernelMoments:
    """Mean ``E f(X, Y)`` (the U-statistic's target) and Hoeffding variances ``zeta1 = Var_X E_Y f(X, Y)``, ``zeta2 =
    Var f(X, Y)`` of one kernel output (statistic units)."""

    mean: float
    zeta1: float
    zeta2: float


def kernel_zetas(query: SubsampledPairsQuery, values: np.ndarray, *, distinct: bool = True, output: int = 0,
                 block_rows: int = 256) -> KernelMoments:
    """:class:`KernelMoments` of kernel output ``output`` (fixed point, as released) on the rows ``values``, all ``n^2``
    ordered pairs in blocks of ``block_rows`` rows of ``X``.  ``distinct``: estimates from a sample, ``X != Y``
    (docs/ldp.md); else the exact moments of the empirical distribution of ``values`` (``X, Y`` independent)."""
    fixed = stack_party_rows(query, [values])
    n = fixed.shape[0]
    outs = query.outputs
    if not 0 <= output < len(outs):
        raise ValueError(f"output must lie in [0, {len(outs) - 1}], got {output}")
    scale = float(outs[output].scale)
    row_sums = np.zeros(n)
    square_sum = 0.0
    others = np.arange(n)
    for start in range(0, n, block_rows):
        own = np.arange(start, min(n, start + block_rows))
        left = np.repeat(own, n)
        right = np.tile(others, len(own))
        f = query.kernel.plaintext([fixed[left], fixed[right]])[output].astype(float).reshape(len(own), n) / scale
        row_sums[own] = f.sum(axis=1)
        square_sum += float(np.sum(f * f))
    diagonal = query.kernel.plaintext([fixed, fixed])[output].astype(float) / scale
    if distinct:
        conditional = (row_sums - diagonal) / (n - 1)
        second = (square_sum - float(np.sum(diagonal ** 2))) / (n * (n - 1))
    else:
        conditional = row_sums / n
        second = square_sum / n ** 2
    mean = float(conditional.mean())
    zeta1 = float(np.mean((conditional - mean) ** 2))
    return KernelMoments(mean, zeta1, max(0.0, second - mean ** 2))


def exact_ustatistic(query: SubsampledPairsQuery, values: np.ndarray) -> float:
    """The complete U-statistic over all ``C(n, 2)`` pairs (fixed point, no noise); a ratio for AUC."""
    fixed = stack_party_rows(query, [values])
    n = fixed.shape[0]
    return query.kernel.estimate(list(_all_pair_sums(query, fixed)), n * (n - 1) // 2, query.widths)


def _all_pair_sums(query: SubsampledPairsQuery, fixed: np.ndarray) -> np.ndarray:
    """Per kernel output, the exact sum over all ``C(n, 2)`` pairs of the fixed-point rows (Python ints)."""
    n = fixed.shape[0]
    sums = np.zeros(len(query.outputs), dtype=object)
    for start in range(0, n - 1, 256):
        left_rows = np.arange(start, min(n - 1, start + 256))
        left = np.repeat(left_rows, n - 1 - left_rows)
        right = np.concatenate([np.arange(i + 1, n) for i in left_rows])
        outs = query.kernel.plaintext([fixed[left], fixed[right]])
        sums += np.array([int(np.sum(o, dtype=np.int64)) for o in outs], dtype=object)
    return sums


def _check_zetas(zeta1: float, zeta2: float) -> None:
    for name, value in (("zeta1", zeta1), ("zeta2", zeta2)):
        if not (isinstance(value, (int, float, np.floating)) and math.isfinite(float(value)) and value >= 0):
            raise ValueError(f"{name} must be a finite non-negative number, got {value}")


def _check_n(n: int) -> int:
    check_positive_int(n, "n")
    return check_pair_rows(int(n))


def subsampling_variance(zeta1: float, zeta2: float, *, permutations: int, n: int) -> float:
    """Variance of the noiseless incomplete U-statistic on ``P`` permutations (Blom 1976; App. C.1). Details: docs/ldp.md."""
    _check_zetas(zeta1, zeta2)
    p = check_positive_int(permutations, "number of permutations P")
    n = _check_n(n)
    return 2.0 / (p * n) * (2 * (p - 1) * (1 - 1 / (n - 1)) * zeta1 + (1 + (p - 1) / (n - 1)) * zeta2)


def theorem5_mse(zeta1: float, zeta2: float, *, permutations: int, n: int, epsilon: float,
                 sensitivity: float = 1.0, parties: int = 1, threshold: int = 0) -> float:
    """MSE of Theorem 5: :func:`subsampling_variance` plus the Laplace noise term, ``sensitivity`` ``Delta_f`` in
    statistic units (1 for kernels in ``[0, 1]``, 2 for Kendall). Details: docs/ldp.md."""
    check_epsilon(epsilon)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be positive, got {sensitivity}")
    m, t = check_parties(parties, threshold)
    p = check_positive_int(permutations, "number of permutations P")
    return (subsampling_variance(zeta1, zeta2, permutations=p, n=n)
            + m / (m - t) * 4.0 * p * sensitivity ** 2 / (_check_n(n) * epsilon ** 2))


def protocol_mse(query: SubsampledPairsQuery, zeta1: float, zeta2: float, *, n: int, parties: int = 1,
                 threshold: int = 0) -> float:
    """MSE of this protocol's estimate around ``E f``: Theorem 5 with the exact discrete noise (one-output kernels
    only: Theorem 5 covers no ratio). Details: docs/ldp.md."""
    if len(query.outputs) != 1:
        raise ValueError(f"protocol_mse needs a one-output kernel; '{query.kernel.name}' is a ratio of two")
    m, t = check_parties(parties, threshold)
    n = _check_n(n)
    out = query.outputs[0]
    plan = plan_party_laplace(out, max_degree=query.permutations, epsilon=query.epsilon, parties=m, threshold=t)
    pairs = query.permutations * (n // 2)
    return (subsampling_variance(zeta1, zeta2, permutations=query.permutations, n=n)
            + plan.variance / (pairs * out.scale ** 2))


def advanced_composition_epsilon(epsilon: float, delta: float, compositions: int) -> float:
    """Largest per-mechanism ``epsilon_0`` whose ``k``-fold composition is ``(epsilon, delta)``-DP, ``delta`` in
    ``(0, 1)``. Details: docs/ldp.md."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if dlt <= 0.0:
        raise ValueError(f"delta must lie in (0, 1) for advanced composition, got {delta}")
    k = check_positive_int(compositions, "number of compositions")
    low, high = 0.0, eps / math.sqrt(2 * k * math.log(1 / dlt))
    for _ in range(200):
        middle = (low + high) / 2
        if composition_loss(middle, k, dlt) <= eps:
            low = middle
        else:
            high = middle
    return max(low, eps / k)


def all_pairs_plans(query: SubsampledPairsQuery, n: int, *, delta: float = DEFAULT_BASELINE_DELTA, parties: int = 1,
                    threshold: int = 0) -> list[NoisePlan]:
    """Per output, the per-pair plan of the all-pairs baseline: ``DLap(exp(-epsilon_0 / Delta))``.

    ``epsilon_0 = advanced_composition_epsilon(epsilon/outputs, delta/outputs, n - 1)``."""
    n = _check_n(n)
    outputs = query.outputs
    pair_epsilon = advanced_composition_epsilon(query.epsilon / len(outputs), delta / len(outputs), n - 1)
    return [plan_party_laplace(out, max_degree=1, epsilon=pair_epsilon, parties=parties, threshold=threshold)
            for out in outputs]


@dataclass
class AllPairsSimulation:
    """Result of :func:`simulate_all_pairs`: estimates over runs and the exact U-statistic."""

    estimates: np.ndarray
    exact: float
    pairs: int
    pair_epsilon: float
    delta: float
    plans: list[NoisePlan]


def simulate_all_pairs(query: SubsampledPairsQuery, rows_by_party: Sequence[np.ndarray], *, threshold: int,
                       delta: float = DEFAULT_BASELINE_DELTA, runs: int = 1,
                       noise_rng: np.random.Generator | None = None) -> AllPairsSimulation:
    """Simulate the all-pairs baseline: every pair released with noise, the aggregator averages. Details: docs/ldp.md."""
    check_positive_int(runs, "runs")
    parties = len(rows_by_party)
    check_parties(parties, threshold)
    fixed = stack_party_rows(query, rows_by_party)
    n = fixed.shape[0]
    count = n * (n - 1) // 2
    plans = all_pairs_plans(query, n, delta=delta, parties=parties, threshold=threshold)
    sums = _all_pair_sums(query, fixed)
    noise = np.zeros((runs, len(plans)), dtype=np.int64)
    for j, plan in enumerate(plans):
        for _ in range(parties):
            noise[:, j] += np.asarray(polya_difference(plan.shape * count, size=runs, rng=noise_rng,
                                                       log_alpha=-plan.epsilon / plan.sensitivity), dtype=np.int64)
    estimates = np.array([query.kernel.estimate([int(s) + int(e) for s, e in zip(sums, row)], count, query.widths)
                          for row in noise])
    exact = query.kernel.estimate(list(sums), count, query.widths)
    return AllPairsSimulation(estimates, exact, count, plans[0].epsilon, float(delta), plans)


def all_pairs_mse(zeta1: float, zeta2: float, *, n: int, epsilon: float, delta: float = DEFAULT_BASELINE_DELTA,
                  sensitivity: float = 1.0, parties: int = 1, threshold: int = 0) -> float:
    """MSE of the all-pairs baseline around ``E f`` with continuous ``Lap(Delta / epsilon_0)`` per pair.
    Details: docs/ldp.md."""
    _check_zetas(zeta1, zeta2)
    n = _check_n(n)
    m, t = check_parties(parties, threshold)
    if not (math.isfinite(sensitivity) and sensitivity > 0):
        raise ValueError(f"sensitivity must be positive, got {sensitivity}")
    pair_epsilon = advanced_composition_epsilon(epsilon, delta, n - 1)
    count = n * (n - 1) / 2
    return (2.0 / (n * (n - 1)) * (2 * (n - 2) * zeta1 + zeta2)
            + m / (m - t) * 2.0 * (sensitivity / pair_epsilon) ** 2 / count)
