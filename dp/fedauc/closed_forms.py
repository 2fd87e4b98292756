"""FedAUC closed forms: the paper's variances (eq. 7-9) and our first-order ones (Sun et al.).

Formulas only: no noise is drawn.  Derivations: docs/fedauc.md."""
from __future__ import annotations

import math
from numbers import Real

import numpy as np
import numpy.typing as npt

from dp.fedauc.mechanisms import _check_epsilon_or_inf, flip_probability
from dp.fedauc.ranks import _check_labels, _check_ranks, _twice_rank_auc
from dp.validation import check_positive_int
from secure.noise.party import discrete_gaussian_variance

__all__ = ["rr_variance", "rr_debiased_variance", "rr_debiased_bias", "global_laplace_variance",
           "local_laplace_variance", "delta_method_variance"]

def _check_counts(positives: int, negatives: int) -> tuple[int, int]:
    return check_positive_int(positives, "positives"), check_positive_int(negatives, "negatives")


def rr_variance(ranks: npt.ArrayLike, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (7): ``rho (1 - rho) sum_i r_i^2 / (P^2 N^2)``, ``rho = 1/(1 + e^epsilon)``, from the 0-based ranks of all
    ``M`` samples, ``P, N >= 1`` and ``epsilon`` (or ``math.inf``: 0).  Details: docs/fedauc.md.
    :raise ValueError: on invalid parameters."""
    values, _ = _check_ranks(ranks)
    p, n = _check_counts(positives, negatives)
    rho = flip_probability(epsilon)
    return rho * (1.0 - rho) * float(np.dot(values, values)) / float(p * n) ** 2


def _count_weight(positives: int, negatives: int, auc: float) -> float:
    """``c = P - 1/2 + AUC (N - P)``: minus ``P N`` times the derivative of eq. (1) in ``Pbar``."""
    return positives - 0.5 + auc * (negatives - positives)


def _rr_inputs(ranks: npt.ArrayLike, labels: npt.ArrayLike,
               epsilon: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, int, int]:
    """``(ranks, twice_ranks, labels, rho, P, N)``, checked."""
    values, twice = _check_ranks(ranks)
    y = _check_labels(labels, values.size)
    p = int(y.sum())
    return values, twice, y, flip_probability(epsilon), p, values.size - p


def rr_debiased_variance(ranks: npt.ArrayLike, labels: npt.ArrayLike, epsilon: float) -> float:
    """First-order (delta-method) variance of the deployed FedAUC_RR estimate (ours, not the paper's), from the
    0-based ranks, the true 0/1 labels and ``epsilon`` (or ``math.inf``: 0).  Details: docs/fedauc.md.
    :raise ValueError: on invalid parameters."""
    values, twice, y, rho, p, n = _rr_inputs(ranks, labels, epsilon)
    centred = values - _count_weight(p, n, _twice_rank_auc(twice, y))
    return rho * (1.0 - rho) * float(np.dot(centred, centred)) / ((1.0 - 2.0 * rho) * p * n) ** 2


def rr_debiased_bias(ranks: npt.ArrayLike, labels: npt.ArrayLike, epsilon: float) -> float:
    """Second-order bias ``E[estimate] - AUC`` of the deployed FedAUC_RR estimate (ours): a ratio, so not exactly
    unbiased; arguments as :func:`rr_debiased_variance`.  Details: docs/fedauc.md.
    :raise ValueError: on invalid parameters."""
    values, twice, y, rho, p, n = _rr_inputs(ranks, labels, epsilon)
    m = values.size
    variance = rho * (1.0 - rho)
    slope = 1.0 / (1.0 - 2.0 * rho)  # dP'/dPbar
    numerator = (1.0 - 2.0 * rho) * (int(twice[y == 1].sum()) - p * (p - 1)) / 2.0  # (1 - 2 rho) U
    denominator = (1.0 - 2.0 * rho) * p * n
    numerator_1, numerator_2 = -(p - 0.5), -1.0 - 2.0 * rho * slope  # d/dPbar, d2/dPbar2 of Num
    denominator_1, denominator_2 = float(n - p), -2.0 * slope          # of Den = (1 - 2 rho) P' N'
    cross = -denominator_1 / denominator**2
    second = ((numerator_2 * denominator - numerator * denominator_2) / denominator**2
              - 2.0 * denominator_1 * (numerator_1 * denominator - numerator * denominator_1) / denominator**3)
    return cross * variance * float(values.sum()) + 0.5 * second * variance * m


def _rr_noisy_moments(ranks: np.ndarray, y: np.ndarray, rho: float) -> tuple[float, float]:
    """Mean and first-order variance of the noisy AUC (not debiased) from flipped labels."""
    m = ranks.size
    p = float(y.sum())
    pbar = p * (1.0 - rho) + (m - p) * rho
    nbar = m - pbar
    expected_sum = (1.0 - 2.0 * rho) * float(np.dot(ranks, y)) + rho * float(ranks.sum())
    mean = (expected_sum - pbar * (pbar - 1.0) / 2.0) / (pbar * nbar)
    centred = ranks - (pbar - 0.5 + mean * (nbar - pbar))
    return mean, rho * (1.0 - rho) * float(np.dot(centred, centred)) / (pbar * nbar) ** 2


def global_laplace_variance(clients: int, samples: int, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (8): ``2 K (M - 1)^2 / (P^2 N^2 epsilon^2)`` (GlobalLaplace, accurate ``P`` and ``N``), ``K >= 1``,
    ``M >= 2``, ``epsilon`` on ``localSum`` (or ``math.inf``: 0).  Details: docs/fedauc.md.
    :raise ValueError: on invalid parameters."""
    k = check_positive_int(clients, "clients")
    m = check_positive_int(samples, "samples")
    p, n = _check_counts(positives, negatives)
    eps = _check_epsilon_or_inf(epsilon)
    return 2.0 * k * (m - 1) ** 2 / (float(p * n) ** 2 * eps**2)


def local_laplace_variance(max_ranks: npt.ArrayLike, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (9), generalised: ``sum_k 2 Δ_k^2 / (P^2 N^2 epsilon^2)``, ``Δ_k`` client k's largest rank (``max_ranks``,
    non-negative), ``epsilon`` on ``localSum`` (or ``math.inf``: 0).  Details: docs/fedauc.md.
    :raise ValueError: on invalid parameters."""
    deltas = np.asarray(max_ranks, dtype=np.float64)
    if deltas.ndim != 1 or deltas.size == 0 or not np.all(np.isfinite(deltas)) or np.any(deltas < 0):
        raise ValueError("max_ranks must be a non-empty one-dimensional array of non-negative numbers")
    p, n = _check_counts(positives, negatives)
    eps = _check_epsilon_or_inf(epsilon)
    return 2.0 * float(np.dot(deltas, deltas)) / (float(p * n) ** 2 * eps**2)


def delta_method_variance(sum_noise_variance: float, count_noise_variance: float, positives: int, negatives: int,
                          auc: float, covariance: float = 0.0) -> float:
    """First-order variance of eq. (1) when ``globalSum`` and ``Pbar`` carry additive noise (ours): total noise
    variances ``Var e`` (rank units) and ``Var d``, their ``covariance`` (the adaptive release shares noise), the true
    ``P, N >= 1`` and AUC.  Details: docs/fedauc.md.
    :raise ValueError: on negative variances, bad counts or an AUC outside ``[0, 1]``."""
    for name, value in (("sum_noise_variance", sum_noise_variance), ("count_noise_variance", count_noise_variance)):
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    if isinstance(auc, bool) or not isinstance(auc, Real) or not (0.0 <= float(auc) <= 1.0):
        raise ValueError(f"auc must lie in [0, 1], got {auc!r}")
    if isinstance(covariance, bool) or not isinstance(covariance, Real) or not math.isfinite(covariance):
        raise ValueError(f"covariance must be a finite number, got {covariance!r}")
    p, n = _check_counts(positives, negatives)
    c = _count_weight(p, n, float(auc))
    return (float(sum_noise_variance) - 2.0 * c * float(covariance) + c * c * float(count_noise_variance)) \
        / float(p * n) ** 2


def _noise_variances(parameter: np.ndarray, gaussian: bool) -> np.ndarray:
    """Per entry: the discrete Gaussian's variance of ``sigma^2 = parameter`` (grouped by value), or the discrete
    Laplace's ``2 alpha/(1 - alpha)^2`` of ``log alpha = parameter``, stable near ``alpha = 1`` (0 at ``-inf``)."""
    if not gaussian:
        return 2.0 * np.exp(parameter) / np.expm1(parameter) ** 2
    values, inverse = np.unique(parameter, return_inverse=True)
    return np.array([discrete_gaussian_variance(float(v)) for v in values])[inverse]
