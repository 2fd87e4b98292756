r"""FedAUC closed forms: the paper's variances (eq. 7-9) and our first-order ones (Sun et al.).

What
----
Eq. (7)-(9) assume accurate ``P`` and ``N``.  Eq. (7) as printed is the variance of the rank sum of
the flipped labels divided by ``P N``, i.e. of the noisy AUC with accurate counts before debiasing
(:func:`rr_variance`); it is not the variance of the debiased estimator, which we give to first order
(:func:`rr_debiased_variance`, delta method, ours): linearising eq. (3)-(4) and App. P around the
expected counts gives ``Var = rho(1-rho) sum_i (r_i - c)^2 / ((1 - 2 rho) P N)^2`` with
``c = P - 1/2 + AUC (N - P)``; :func:`rr_debiased_bias` is its second-order bias.  Eq. (8) and (9) are
:func:`global_laplace_variance` and :func:`local_laplace_variance` (the latter generalised to any
layout).  With noisy counts the Laplace and Gaussian estimators likewise have
``Var ≈ (Var S' - 2 c Cov(S', P') + c^2 Var P') / (P N)^2`` (:func:`delta_method_variance`, ours).
The exact variances of the integer noises of :mod:`dp.fedauc.mechanisms` (discrete Laplace
``2 a/(1 - a)^2``, discrete Gaussian by its series) feed these formulas in
:func:`dp.fedauc.montecarlo.predict_fedauc`.

Threat model
------------
Formulas only: no noise is drawn and nothing is released.  They describe the mechanisms of
:mod:`dp.fedauc.mechanisms` (label DP against the server and any coalition of other clients,
Sun et al. §3); ``counts="exact"`` (accurate ``P`` and ``N``) is the paper's analysis setting, not
a label-DP deployment.

References: J. Sun, X. Yang, Y. Yao, J. Xie, D. Wu, C. Wang, *Differentially Private AUC Computation
in Vertical Federated Learning* (eq. 7-9, App. I, N, O, P); A. Menon et al., ICML 2015 (eq. 3-4);
C. Canonne, G. Kamath, T. Steinke, *The Discrete Gaussian for Differential Privacy* (NeurIPS 2020).
"""
from __future__ import annotations

import math
from numbers import Real

import numpy as np
import numpy.typing as npt

from dp.fedauc.mechanisms import _check_epsilon_or_inf, flip_probability
from dp.fedauc.ranks import _check_labels, _check_ranks
from dp.validation import check_positive_int
from secure.noise.party import discrete_gaussian_variance

__all__ = [
    "rr_variance",
    "rr_debiased_variance",
    "rr_debiased_bias",
    "global_laplace_variance",
    "local_laplace_variance",
    "delta_method_variance",
]

def _check_counts(positives: int, negatives: int) -> tuple[int, int]:
    return check_positive_int(positives, "positives"), check_positive_int(negatives, "negatives")


# --------------------------------------------------------------------------------------------------
# randomized response (§4, eq. 7, App. I, P)

def rr_variance(ranks: npt.ArrayLike, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (7): ``rho (1 - rho) sum_i r_i^2 / (P^2 N^2)``, ``rho = 1/(1 + e^epsilon)``.

    Without ties ``sum_i r_i^2 = M (M-1)(2M-1)/6``, the paper's form.  As derived in App. I (accurate
    ``P`` and ``N``, ``Var(sum_i r_i y'_i)/(P N)^2``) this is the variance of the flipped-label rank sum
    divided by ``P N``, i.e. of :func:`dp.fedauc.montecarlo.simulate_fedauc` ``method="rr_noisy", counts="exact"``; the
    debiased estimator with accurate counts has ``rr_variance / (1 - 2 rho)^2``, and the deployed
    one (noisy counts) :func:`rr_debiased_variance`.

    :param ranks: the 0-based ranks of all ``M`` samples.
    :param positives: ``P >= 1``.
    :param negatives: ``N >= 1``.
    :param epsilon: privacy-loss parameter, positive, or ``math.inf`` (variance 0).
    :return: the variance.
    :raise ValueError: on invalid parameters.
    """
    values, _ = _check_ranks(ranks)
    p, n = _check_counts(positives, negatives)
    rho = flip_probability(epsilon)
    return rho * (1.0 - rho) * float(np.dot(values, values)) / float(p * n) ** 2


def _count_weight(positives: int, negatives: int, auc: float) -> float:
    """``c = P - 1/2 + AUC (N - P)``: minus ``P N`` times the derivative of eq. (1) in ``Pbar``."""
    return positives - 0.5 + auc * (negatives - positives)


def rr_debiased_variance(ranks: npt.ArrayLike, labels: npt.ArrayLike, epsilon: float) -> float:
    """First-order (delta-method) variance of the deployed FedAUC_RR estimate (ours, not the paper's).

    The estimate, eq. (3)-(4) with ``pi'`` of App. P, simplifies to
    ``(W - Pbar(Pbar-1)/2 - rho (N' Nbar + P' Pbar)/2) / ((1 - 2 rho) P' N')`` with
    ``W = sum_i r_i y'_i``.  At the expected counts it equals the true AUC exactly, and its gradient
    gives ``Var ≈ rho (1 - rho) sum_i (r_i - c)^2 / ((1 - 2 rho) P N)^2``,
    ``c = P - 1/2 + AUC (N - P)``.  Compared with eq. (7) the factor ``1/(1-2 rho)^2`` comes from the
    debiasing and the centring ``c`` from the noisy ``Pbar`` in eq. (1).

    :param ranks: the 0-based ranks of all ``M`` samples.
    :param labels: the true 0/1 labels.
    :param epsilon: privacy-loss parameter, positive, or ``math.inf`` (variance 0).
    :return: the approximate variance.
    :raise ValueError: on invalid parameters.
    """
    values, twice = _check_ranks(ranks)
    y = _check_labels(labels, values.size)
    rho = flip_probability(epsilon)
    p = int(y.sum())
    n = values.size - p
    auc = (int(twice[y == 1].sum()) - p * (p - 1)) / (2 * p * n)
    centred = values - _count_weight(p, n, auc)
    return rho * (1.0 - rho) * float(np.dot(centred, centred)) / ((1.0 - 2.0 * rho) * p * n) ** 2


def rr_debiased_bias(ranks: npt.ArrayLike, labels: npt.ArrayLike, epsilon: float) -> float:
    """Second-order bias of the deployed FedAUC_RR estimate (ours): it is a ratio, so not exactly unbiased.

    Writing the estimate as ``f(W, Pbar) = Num/Den`` (see :func:`rr_debiased_variance`),
    ``E f ≈ AUC + H_WP Cov(W, Pbar) + H_PP Var(Pbar)/2`` with ``Cov(W, Pbar) = v sum_i r_i``,
    ``Var(Pbar) = v M``, ``v = rho(1 - rho)``, and the second derivatives at the expected counts
    (``f`` is linear in ``W``).  It is ``O(1/M)`` against a standard deviation ``O(1/sqrt(M))``:
    on 2,000 samples with 15 % positives about 6 % of the standard deviation at epsilon = 1 and
    0.6 % at epsilon = 4 (Monte Carlo agrees).

    :param ranks: the 0-based ranks of all ``M`` samples.
    :param labels: the true 0/1 labels.
    :param epsilon: privacy-loss parameter, positive, or ``math.inf`` (bias 0).
    :return: the approximate bias ``E[estimate] - AUC``.
    :raise ValueError: on invalid parameters.
    """
    values, twice = _check_ranks(ranks)
    y = _check_labels(labels, values.size)
    rho = flip_probability(epsilon)
    m = values.size
    p = int(y.sum())
    n = m - p
    variance = rho * (1.0 - rho)
    slope = 1.0 / (1.0 - 2.0 * rho)  # dP'/dPbar
    clean_u = (int(twice[y == 1].sum()) - p * (p - 1)) / 2.0
    numerator = (1.0 - 2.0 * rho) * clean_u
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


# --------------------------------------------------------------------------------------------------
# FedAUC_Lap closed forms (App. N, O) and our delta method

def global_laplace_variance(clients: int, samples: int, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (8): ``2 K (M - 1)^2 / (P^2 N^2 epsilon^2)`` (GlobalLaplace, accurate ``P`` and ``N``).

    Every client adds ``Lap((M - 1)/epsilon)`` to ``localSum``; ``epsilon`` is the budget spent on
    ``localSum`` (all of it when the counts are accurate).  The discrete Laplace we draw has a
    variance at most this and within ``K/6 / (P N)^2`` of it.

    :param clients: ``K >= 1``.
    :param samples: ``M >= 2``.
    :param positives: ``P >= 1``.
    :param negatives: ``N >= 1``.
    :param epsilon: privacy-loss parameter on ``localSum``, positive, or ``math.inf`` (0).
    :return: the variance of the AUC estimate.
    :raise ValueError: on invalid parameters.
    """
    k = check_positive_int(clients, "clients")
    m = check_positive_int(samples, "samples")
    p, n = _check_counts(positives, negatives)
    eps = _check_epsilon_or_inf(epsilon)
    return 2.0 * k * (m - 1) ** 2 / (float(p * n) ** 2 * eps**2)


def local_laplace_variance(max_ranks: npt.ArrayLike, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (9), generalised: ``sum_k 2 Δ_k^2 / (P^2 N^2 epsilon^2)``, ``Δ_k`` client k's largest rank.

    With one sample per client and no ties the ``Δ_k`` are ``0, ..., K-1`` and this is the paper's
    ``K (K-1)(2K-1) / (3 P^2 N^2 epsilon^2)``.  Accurate ``P`` and ``N``, ``Lap(Δ_k/epsilon)`` on
    ``localSum_k``.

    :param max_ranks: ``Δ_k`` for every client (non-negative).
    :param positives: ``P >= 1``.
    :param negatives: ``N >= 1``.
    :param epsilon: privacy-loss parameter on ``localSum``, positive, or ``math.inf`` (0).
    :return: the variance of the AUC estimate.
    :raise ValueError: on invalid parameters.
    """
    deltas = np.asarray(max_ranks, dtype=np.float64)
    if deltas.ndim != 1 or deltas.size == 0 or not np.all(np.isfinite(deltas)) or np.any(deltas < 0):
        raise ValueError("max_ranks must be a non-empty one-dimensional array of non-negative numbers")
    p, n = _check_counts(positives, negatives)
    eps = _check_epsilon_or_inf(epsilon)
    return 2.0 * float(np.dot(deltas, deltas)) / (float(p * n) ** 2 * eps**2)


def delta_method_variance(sum_noise_variance: float, count_noise_variance: float, positives: int, negatives: int,
                          auc: float, covariance: float = 0.0) -> float:
    """First-order variance of eq. (1) when ``globalSum`` and ``Pbar`` carry additive noise (ours).

    ``AUC(S + e, P + d) ≈ AUC + (e - c d)/(P N)``, ``c = P - 1/2 + AUC (N - P)``, so
    ``Var ≈ (Var e - 2 c Cov(e, d) + c^2 Var d) / (P N)^2``.  The count noise weighs like a rank
    sum noise of sensitivity ``c`` (about ``M/2``), which is why noisy counts cost so much when
    clients hold few samples.

    :param sum_noise_variance: ``Var e``, total noise variance of ``globalSum`` (rank units).
    :param count_noise_variance: ``Var d``, total noise variance of ``Pbar``.
    :param positives: true ``P >= 1``.
    :param negatives: true ``N >= 1``.
    :param auc: true AUC in ``[0, 1]``.
    :param covariance: ``Cov(e, d)`` (the adaptive release shares noise between the two).
    :return: the approximate variance.
    :raise ValueError: on negative variances, bad counts or an AUC outside ``[0, 1]``.
    """
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


# --------------------------------------------------------------------------------------------------
# variances of the integer noises

def _laplace_variance(log_alpha: np.ndarray) -> np.ndarray:
    """``2 alpha/(1 - alpha)^2`` per entry, stable near ``alpha = 1`` (0 for ``log_alpha = -inf``)."""
    alpha = np.exp(log_alpha)
    return 2.0 * alpha / np.expm1(log_alpha) ** 2


def _gaussian_variances(sigma2: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(sigma2, return_inverse=True)
    return np.array([discrete_gaussian_variance(float(v)) for v in values])[inverse]


def _noise_variances(parameter: np.ndarray, gaussian: bool) -> np.ndarray:
    return _gaussian_variances(parameter) if gaussian else _laplace_variance(parameter)
