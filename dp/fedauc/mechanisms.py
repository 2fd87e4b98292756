r"""FedAUC: label-DP AUC in vertical federated learning, the paper's own deployment (Sun et al.).

What
----
A server holds the model's early layers and sees every prediction score; ``K`` clients hold the
labels of their own samples.  The AUC over the union is a rank sum (eq. 1, App. H.2)::

    AUC = (sum_i r_i y_i - P (P - 1) / 2) / (P N),     r_i in [0, M - 1] the 0-based rank of score i

with ties given their average rank, so that the value equals ``sklearn.metrics.roc_auc_score``
(ties count 1/2).  The server ranks the scores and sends every client the ranks of its own samples;
each client returns ``localSum_k = sum_i r_i y_i``, ``localP_k``, ``localN_k``, perturbed so that
its labels get epsilon-label-DP, and the server applies eq. (1) to the sums.  Two mechanisms:

- FedAUC_RR (§4, Algorithms 1-3): each client flips each label with probability
  ``rho = 1/(1 + e^epsilon)`` (eq. 2, ``rho+ = rho- = rho``); the server computes the *noisy* AUC
  from the flipped labels and debiases it with eq. (3)-(4) (Menon et al.), the base rate ``pi'``
  estimated from the noisy counts as in App. P (eq. 10-12).  :func:`rr_variance` is eq. (7).
- FedAUC_Lap (§5, Algorithm 4): each client adds noise to ``localSum_k`` and ``localP_k`` and derives
  ``localN'_k = |Y_k| - localP'_k``.  The budget is split ``epsilon_localSum = alpha epsilon``,
  ``epsilon_localP = (1 - alpha) epsilon`` (``sum_fraction`` here, the paper's alpha).
  *LocalLaplace*: the sensitivity of ``localSum_k`` is the client's largest rank (§5.2);
  *GlobalLaplace*: ``M - 1`` for every client (App. N).  :func:`global_laplace_variance` is eq. (8),
  :func:`local_laplace_variance` is eq. (9) (generalised to any layout).
  *Adaptive* (§5.3): the client's rank vector is split orthogonally, ``r = rbar u + v'`` with
  ``u = (1, ..., 1)`` (:func:`orthogonal_decomposition`), so that
  ``localSum_k = rbar localP_k + <v', y>``; the client releases ``localP'_k`` with ``beta epsilon``
  and ``<v', y>`` with ``(1 - beta) epsilon`` (sensitivity ``||v'||_inf``) and reports
  ``localSum'_k = rbar localP'_k + <v', y>'``; its ``beta`` minimises the variance of
  ``localSum'_k`` (:func:`adaptive_count_fraction`).  ``beta`` depends only on the ranks, which the
  client knows anyway, never on the labels, so the choice itself leaks nothing.
  The *Gaussian* form replaces both noises by discrete Gaussians: ``(epsilon, delta)`` becomes a
  zero-concentrated budget ``rho_z`` (:func:`zcdp_budget`), split by ``sum_fraction`` (or ``beta``).

Noise (DESIGN: integer noise on integer statistics)
---------------------------------------------------
Rank sums with average ranks are half-integers, so every client perturbs the *integer*
``2 localSum_k`` (sensitivity twice its largest rank), and ``localP_k`` (sensitivity 1).

- Laplace form: discrete Laplace ``DLap(exp(-epsilon_part / sensitivity))``, the difference of two
  geometric (Pólya shape 1) variables -- :func:`secure.noise.party.polya_difference` with ``shape=1`` when
  all clients share one ``alpha``, otherwise the same construction vectorised over per-client
  ``alpha`` (:func:`discrete_laplace_noise`).  Its variance ``2 a/(1 - a)^2`` is at most the
  continuous ``2 (Δ/ε)^2`` of eq. (8)-(9) and within ``1/6`` of it.
- Gaussian form: the discrete Gaussian ``N_Z(0, sigma^2)``, drawn *exactly* by our implementation of
  the Canonne-Kamath-Steinke (2020) rejection sampler, integer arithmetic only, from a NumPy
  generator (:func:`sample_discrete_gaussian`); ``sigma^2`` is rounded *up* to a multiple of 1/1024.
  ``N_Z(0, sigma^2)`` with sensitivity ``Δ`` is ``Δ^2/(2 sigma^2)``-zCDP, as the continuous one (CKS,
  §2, "the discrete Gaussian satisfies concentrated DP"), which is
  ``(rho_z + 2 sqrt(rho_z log(1/delta)), delta)``-DP (Bun & Steinke 2016, Prop. 1.3); zCDP budgets
  add up, so a client's two releases share one ``rho_z``.  This sampler is a Python loop over draws
  (one or two per client and run), so the Gaussian form is much slower than the Laplace form.
- Randomized response flips with probability ``ceil(rho 2^53 + 1) / 2^53`` (uniform 53-bit integers),
  i.e. ``rho`` rounded *up* to the 2^-53 grid, so the realised privacy loss
  ``log((1 - rho_hat)/rho_hat)`` never exceeds epsilon; :func:`flip_probability` returns ``rho_hat``
  and the debiasing uses it.
- Noise randomness comes from the OS (:func:`secure.noise.party.os_generator`) when ``noise_rng`` is
  ``None``; client layouts come from a public generator (:func:`client_layout`).

Threat model of this deployment (the paper's §3 and App. R)
-----------------------------------------------------------
Label DP (Definition 2.1, Ghazi et al.): neighbouring datasets differ in the label of one sample;
scores, ranks, client membership and client sizes are public.  Each client perturbs its own report,
as in local DP, so every label gets epsilon-label-DP (``(epsilon, delta)`` for the Gaussian form)
against an honest-but-curious server, and against any coalition of the server and other clients:
no party but the label holder ever sees a clean label-dependent value.  What is **not** protected:

- the **scores**.  The server sees every prediction score, and which client sent it (Algorithm 2,
  step 1; the shuffle only hides the order within a client).  Scores correlate with labels (App. R,
  Table 8: the top-100 Criteo scores are 79 % positive), so the score vector alone says a lot about
  the labels; the DP guarantee is about what the AUC protocol adds *on top of* the scores.
- the ``counts="exact"`` setting of :func:`simulate_fedauc` (App. I, N, O and Table 2 assume
  accurate ``P`` and ``N``) releases ``localP`` in the clear and is **not** label-DP; it exists only
  to reproduce the paper's closed forms.
- a client that does not add its noise (clients are trusted with their own labels' privacy).

This module runs in plain NumPy, in one process: there is no MPyC here, so DESIGN's secure-layer
threat model (``t < m/2`` passive parties, coalition-calibrated noise) does not apply.  The MPC
deployment of FedAUC, where the scores are hidden too, is a separate module.

Closed forms
------------
Eq. (7)-(9) assume accurate ``P`` and ``N``.  Eq. (7) as printed is the variance of the rank sum of
the flipped labels divided by ``P N``, i.e. of the noisy AUC with accurate counts before debiasing;
it is not the variance of the debiased estimator, which we give to first order
(:func:`rr_debiased_variance`, delta method, ours): linearising eq. (3)-(4) and App. P around the
expected counts gives ``Var = rho(1-rho) sum_i (r_i - c)^2 / ((1 - 2 rho) P N)^2`` with
``c = P - 1/2 + AUC (N - P)``.  With noisy counts the Laplace and Gaussian estimators likewise have
``Var ≈ (Var S' - 2 c Cov(S', P') + c^2 Var P') / (P N)^2`` (:func:`delta_method_variance`, ours).

References: J. Sun, X. Yang, Y. Yao, J. Xie, D. Wu, C. Wang, *Differentially Private AUC Computation
in Vertical Federated Learning* (§4, §5, §6, App. D-I, N-P); C. Canonne, G. Kamath, T. Steinke,
*The Discrete Gaussian for Differential Privacy* (NeurIPS 2020, Algorithms 1-3); A. Menon et al.,
ICML 2015 (eq. 3-4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Final

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

from dp.validation import check_delta, check_epsilon, check_positive_int
from secure.noise.party import discrete_gaussian_variance, os_generator, polya_difference, sample_discrete_gaussian

__all__ = [
    "METHODS",
    "ClientRelease",
    "client_releases",
    "noisy_client_reports",
    "noise_parameter",
    "LAYOUTS",
    "COUNTS",
    "average_ranks",
    "auc_from_ranks",
    "server_auc",
    "flip_probability",
    "randomized_response",
    "estimate_base_rate",
    "debias_auc",
    "rr_variance",
    "rr_debiased_variance",
    "global_laplace_variance",
    "local_laplace_variance",
    "delta_method_variance",
    "orthogonal_decomposition",
    "adaptive_count_fraction",
    "client_layout",
    "LocalStatistics",
    "local_statistics",
    "discrete_laplace_noise",
    "zcdp_budget",
    "sample_discrete_gaussian",
    "discrete_gaussian_variance",
    "rr_debiased_bias",
    "FedAucPrediction",
    "FedAucSimulation",
    "predict_fedauc",
    "simulate_fedauc",
]

#: The estimators :func:`simulate_fedauc` runs.  ``rr``: FedAUC_RR debiased (eq. 3-4);
#: ``rr_noisy``: the noisy AUC from flipped labels, not debiased (Table 3); ``global_*``,
#: ``local_*``: FedAUC_Lap with GlobalLaplace / LocalLaplace sensitivity; ``adaptive_*``: §5.3.
METHODS: Final[tuple[str, ...]] = ("rr", "rr_noisy", "global_laplace", "local_laplace", "adaptive_laplace",
                                   "global_gaussian", "local_gaussian", "adaptive_gaussian")
#: Client layouts (§6.2.2): uniform random, contiguous blocks of sorted scores, one sample each.
LAYOUTS: Final[tuple[str, ...]] = ("iid", "non_iid", "one_per_client")
#: ``noisy``: the deployment (P and N from noisy reports); ``exact``: accurate P and N (analysis only).
COUNTS: Final[tuple[str, ...]] = ("noisy", "exact")

_GRID_BITS: Final[int] = 53            # randomized response: flip probability on the 2^-53 grid
_CHUNK_ELEMENTS: Final[int] = 1 << 21  # largest (runs x samples) or (runs x clients) block drawn at once


# --------------------------------------------------------------------------------------------------
# validation

def _check_epsilon_or_inf(epsilon: float) -> float:
    """``epsilon`` as a float: positive and finite, or ``math.inf`` (no privacy, no noise)."""
    if isinstance(epsilon, Real) and not isinstance(epsilon, bool) and float(epsilon) == math.inf:
        return math.inf
    return check_epsilon(epsilon)


def _check_scores(scores: npt.ArrayLike) -> np.ndarray:
    values = np.asarray(scores)
    if values.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {values.shape}")
    if values.dtype == np.bool_ or not (np.issubdtype(values.dtype, np.integer)
                                        or np.issubdtype(values.dtype, np.floating)):
        raise TypeError(f"scores must be numbers, got dtype {values.dtype}")
    values = values.astype(np.float64)
    if values.size < 2:
        raise ValueError(f"scores must hold at least 2 samples, got {values.size}")
    if values.size >= 1 << 25:
        raise ValueError(f"scores must hold fewer than 2**25 samples (exact rank sums), got {values.size}")
    if not np.all(np.isfinite(values)):
        raise ValueError("scores must be finite")
    return values


def _check_labels(labels: npt.ArrayLike, samples: int) -> np.ndarray:
    values = np.asarray(labels)
    if values.ndim != 1 or values.size != samples:
        raise ValueError(f"labels must be one-dimensional of length {samples}, got shape {values.shape}")
    if not (values.dtype == np.bool_ or np.issubdtype(values.dtype, np.integer)
            or np.issubdtype(values.dtype, np.floating)):
        raise TypeError(f"labels must be 0/1, got dtype {values.dtype}")
    if not np.all((values == 0) | (values == 1)):
        raise ValueError("labels must be 0 or 1")
    out = values.astype(np.int64)
    positives = int(out.sum())
    if positives == 0 or positives == samples:
        raise ValueError(f"labels must contain both classes, got {positives} positives of {samples}")
    return out


def _check_fraction(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    out = float(value)
    if not (0.0 < out < 1.0):
        raise ValueError(f"{name} must lie in (0, 1), got {value}")
    return out


def _check_counts(positives: int, negatives: int) -> tuple[int, int]:
    return check_positive_int(positives, "positives"), check_positive_int(negatives, "negatives")


def _check_generator(rng: np.random.Generator | None, name: str, allow_none: bool) -> np.random.Generator:
    if rng is None:
        if allow_none:
            return os_generator()
        raise TypeError(f"{name} must be a numpy.random.Generator, got None")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


# --------------------------------------------------------------------------------------------------
# ranks and eq. (1)

def _twice_ranks(scores: np.ndarray) -> np.ndarray:
    """Twice the 0-based average ranks: integers in ``[0, 2 (M - 1)]``."""
    return np.rint(2.0 * (rankdata(scores, method="average") - 1.0)).astype(np.int64)


def average_ranks(scores: npt.ArrayLike) -> np.ndarray:
    """Return the 0-based ranks of §4.2 step 2, ties given their average rank.

    The lowest score gets 0 and the highest ``M - 1``; a group of tied scores shares the mean of the
    ranks it spans (a half-integer when the group has even size), which makes eq. (1) count a tied
    positive-negative pair as 1/2, as ``roc_auc_score`` does.  Uses :func:`scipy.stats.rankdata`.

    :param scores: the ``M`` prediction scores (finite numbers).
    :return: float64 array of ranks (multiples of 1/2).
    :raise ValueError: if scores are not a finite one-dimensional array of at least 2 values.
    """
    return _twice_ranks(_check_scores(scores)) / 2.0


def _check_ranks(ranks: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(ranks, twice_ranks)`` after checking that ranks are multiples of 1/2 in ``[0, M - 1]``."""
    values = np.asarray(ranks, dtype=np.float64)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"ranks must be one-dimensional with at least 2 values, got shape {values.shape}")
    twice = 2.0 * values
    if not np.all(np.isfinite(values)) or not np.all(twice == np.rint(twice)):
        raise ValueError("ranks must be multiples of 1/2")
    if values.min() < 0 or values.max() > values.size - 1:
        raise ValueError(f"ranks must lie in [0, {values.size - 1}]")
    return values, np.rint(twice).astype(np.int64)


def auc_from_ranks(ranks: npt.ArrayLike, labels: npt.ArrayLike) -> float:
    """Return eq. (1): ``(sum_i r_i y_i - P (P - 1)/2) / (P N)``, correctly rounded.

    Computed in exact integer arithmetic (twice the ranks are integers) with one final rounding, so
    it is the correctly rounded Mann-Whitney AUC.  ``roc_auc_score`` integrates the ROC curve by the
    trapezoid rule in floating point and may differ from it in the last few units in the last place.

    :param ranks: 0-based average ranks (:func:`average_ranks`).
    :param labels: 0/1 labels, both classes present.
    :return: the AUC in ``[0, 1]``.
    :raise ValueError: on ranks that are not multiples of 1/2 in ``[0, M-1]`` or bad labels.
    """
    _, twice = _check_ranks(ranks)
    y = _check_labels(labels, twice.size)
    positives = int(y.sum())
    negatives = twice.size - positives
    twice_sum = int(twice[y == 1].sum())
    return (twice_sum - positives * (positives - 1)) / (2 * positives * negatives)


def server_auc(rank_sum: npt.ArrayLike, positives: npt.ArrayLike, samples: int) -> np.ndarray:
    """Apply eq. (1) to aggregated, possibly noisy, reports (Algorithm 2 line 35, Algorithm 4 line 39).

    ``AUC = (globalSum - Pbar (Pbar - 1)/2) / (Pbar Nbar)`` with ``Nbar = samples - Pbar`` (the sum of
    the ``localN_k``).  Where ``Pbar <= 0`` or ``Nbar <= 0`` the AUC is undefined and NaN is returned.
    With exact half-integer sums below ``2**51`` the result is correctly rounded.

    :param rank_sum: ``globalSum`` (array-like).
    :param positives: ``Pbar`` (array-like, broadcastable with ``rank_sum``).
    :param samples: ``M``, the public number of samples.
    :return: float64 array of AUC values (NaN where undefined).
    :raise ValueError: if ``samples < 2``.
    """
    m = check_positive_int(samples, "samples")
    if m < 2:
        raise ValueError(f"samples must be at least 2, got {samples}")
    total = np.asarray(rank_sum, dtype=np.float64)
    pbar = np.asarray(positives, dtype=np.float64)
    nbar = m - pbar
    denominator = pbar * nbar
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (total - pbar * (pbar - 1.0) / 2.0) / denominator
    return np.where((pbar > 0) & (nbar > 0), out, np.nan)


# --------------------------------------------------------------------------------------------------
# randomized response (§4)

def _flip_threshold(epsilon: float) -> int:
    """``T`` with ``T / 2^53 >= 1/(1 + e^eps)``: flip when a uniform 53-bit integer is below ``T``."""
    if epsilon == math.inf:
        return 0
    rho = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return min(math.ceil(math.ldexp(rho, _GRID_BITS)) + 1, 1 << (_GRID_BITS - 1))


def flip_probability(epsilon: float) -> float:
    """Return the label-flip probability ``rho_hat`` that :func:`randomized_response` realises.

    The paper's ``rho = 1/(1 + e^epsilon)`` (eq. 2, Algorithm 3 line 3) rounded *up* to the 2^-53
    grid (at most ``2^-52`` above ``rho``, at most 1/2), so the privacy loss
    ``log((1 - rho_hat)/rho_hat)`` is at most epsilon.  ``epsilon = inf`` gives 0 (no flips).

    :param epsilon: privacy-loss parameter, positive, or ``math.inf``.
    :return: ``rho_hat`` in ``[0, 1/2]``.
    :raise ValueError: if epsilon is not positive.
    """
    eps = _check_epsilon_or_inf(epsilon)
    return math.ldexp(_flip_threshold(eps), -_GRID_BITS)


def _flips(threshold: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if threshold == 0:
        return np.zeros(shape, dtype=bool)
    return rng.integers(0, 1 << _GRID_BITS, size=shape, dtype=np.int64) < threshold


def randomized_response(labels: npt.ArrayLike, epsilon: float, *,
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """Algorithm 1: flip every label independently with probability :func:`flip_probability`.

    epsilon-label-DP for each label (eq. 2).  The flipped labels can be reused for any number of
    evaluations (post-processing).

    :param labels: 0/1 labels (any length >= 1; both classes need not be present).
    :param epsilon: privacy-loss parameter, positive, or ``math.inf`` for no flips.
    :param rng: noise generator; ``None`` draws from the OS (:func:`secure.noise.party.os_generator`).
    :return: int64 array of flipped labels.
    :raise ValueError: if labels are not 0/1 or epsilon is not positive.
    """
    eps = _check_epsilon_or_inf(epsilon)
    y = np.asarray(labels)
    if y.ndim != 1 or not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be a one-dimensional array of 0 and 1")
    gen = _check_generator(rng, "rng", allow_none=True)
    return np.bitwise_xor(y.astype(np.int64), _flips(_flip_threshold(eps), y.shape, gen).astype(np.int64))


def _check_flip(rho: float, name: str) -> float:
    if isinstance(rho, bool) or not isinstance(rho, Real):
        raise TypeError(f"{name} must be a number, got {rho!r}")
    value = float(rho)
    if not (0.0 <= value < 0.5):
        raise ValueError(f"{name} must lie in [0, 1/2), got {rho}")
    return value


def estimate_base_rate(noisy_positives: npt.ArrayLike, noisy_negatives: npt.ArrayLike,
                       flip_plus: float, flip_minus: float | None = None) -> np.ndarray:
    """App. P, eq. (11)-(12): the clean base rate ``pi'`` from the counts of flipped labels.

    ``P' = (Pbar (1 - rho-) - Nbar rho-)/(1 - rho+ - rho-)``, ``N' = Pbar + Nbar - P'``,
    ``pi' = P'/(P' + N')``.  Unbiased for ``pi``; it may leave ``[0, 1]`` on small data.

    :param noisy_positives: ``Pbar``, the number of positive flipped labels (array-like).
    :param noisy_negatives: ``Nbar`` (array-like).
    :param flip_plus: ``rho+``, flip probability of a positive label, in ``[0, 1/2)``.
    :param flip_minus: ``rho-`` (default: equal to ``rho+``).
    :return: float64 array of ``pi'``.
    :raise ValueError: if a flip probability is outside ``[0, 1/2)``.
    """
    rho_plus = _check_flip(flip_plus, "flip_plus")
    rho_minus = rho_plus if flip_minus is None else _check_flip(flip_minus, "flip_minus")
    pbar = np.asarray(noisy_positives, dtype=np.float64)
    nbar = np.asarray(noisy_negatives, dtype=np.float64)
    clean_positives = (pbar * (1.0 - rho_minus) - nbar * rho_minus) / (1.0 - rho_plus - rho_minus)
    with np.errstate(divide="ignore", invalid="ignore"):
        return clean_positives / (pbar + nbar)


def debias_auc(noisy_auc: npt.ArrayLike, noisy_positives: npt.ArrayLike, noisy_negatives: npt.ArrayLike,
               flip_plus: float, flip_minus: float | None = None) -> np.ndarray:
    """Algorithm 3: the clean AUC from the noisy one, eq. (3)-(4) with ``pi'`` from App. P.

    ``a = (1 - pi') rho- / (pi' (1 - rho+) + (1 - pi') rho-)``,
    ``b = pi' rho+ / (pi' rho+ + (1 - pi')(1 - rho-))`` (the paper's alpha and beta; Algorithm 3
    line 7 prints ``pi`` where ``pi'`` is meant), ``AUC = (AUC_noisy - (a + b)/2) / (1 - a - b)``.
    With ``rho = 0`` it returns ``noisy_auc`` unchanged (bit for bit).

    :param noisy_auc: the noisy AUC from flipped labels (array-like).
    :param noisy_positives: ``Pbar`` (array-like).
    :param noisy_negatives: ``Nbar`` (array-like).
    :param flip_plus: ``rho+`` in ``[0, 1/2)``.
    :param flip_minus: ``rho-`` (default: equal to ``rho+``).
    :return: float64 array of debiased AUC estimates (NaN where undefined).
    :raise ValueError: if a flip probability is outside ``[0, 1/2)``.
    """
    rho_plus = _check_flip(flip_plus, "flip_plus")
    rho_minus = rho_plus if flip_minus is None else _check_flip(flip_minus, "flip_minus")
    noisy = np.asarray(noisy_auc, dtype=np.float64)
    base = estimate_base_rate(noisy_positives, noisy_negatives, rho_plus, rho_minus)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (1.0 - base) * rho_minus / (base * (1.0 - rho_plus) + (1.0 - base) * rho_minus)
        b = base * rho_plus / (base * rho_plus + (1.0 - base) * (1.0 - rho_minus))
        return (noisy - (a + b) / 2.0) / (1.0 - a - b)


def rr_variance(ranks: npt.ArrayLike, positives: int, negatives: int, epsilon: float) -> float:
    """Eq. (7): ``rho (1 - rho) sum_i r_i^2 / (P^2 N^2)``, ``rho = 1/(1 + e^epsilon)``.

    Without ties ``sum_i r_i^2 = M (M-1)(2M-1)/6``, the paper's form.  As derived in App. I (accurate
    ``P`` and ``N``, ``Var(sum_i r_i y'_i)/(P N)^2``) this is the variance of the flipped-label rank sum
    divided by ``P N``, i.e. of :func:`simulate_fedauc` ``method="rr_noisy", counts="exact"``; the
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
# §5.3: orthogonal decomposition and adaptive allocation

def orthogonal_decomposition(ranks: npt.ArrayLike) -> tuple[float, np.ndarray]:
    """§5.3: ``r = u' + v'`` with ``u' = rbar u`` parallel to ``u = (1, ..., 1)`` and ``v' ⟂ u``.

    ``localSum = <r, y> = rbar <u, y> + <v', y> = rbar localP + <v', y>``; changing one label moves
    ``<v', y>`` by at most ``||v'||_inf = max_i |r_i - rbar|``.

    :param ranks: one client's ranks (non-empty).
    :return: ``(rbar, v')``: the mean rank and the residual vector.
    :raise ValueError: if ranks is empty or not finite.
    """
    values = np.asarray(ranks, dtype=np.float64)
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError("ranks must be a non-empty one-dimensional array of finite numbers")
    mean = float(values.mean())
    return mean, values - mean


def adaptive_count_fraction(mean_rank: npt.ArrayLike, spread: npt.ArrayLike, *,
                            mechanism: str = "laplace") -> np.ndarray:
    """§5.3: each client's ``beta``, the share of its budget spent on ``localP'`` (the rest on ``<v', y>``).

    The paper's heuristic: minimise the variance of ``localSum'_k``'s noise ``||u'|| s1 + ||v'|| s2``.
    Laplace: ``2 a^2/(beta eps)^2 + 2 b^2/((1 - beta) eps)^2`` with ``a = |rbar|``, ``b = ||v'||_inf``
    is least at ``beta = a^(2/3) / (a^(2/3) + b^(2/3))`` (value ``2 (a^(2/3) + b^(2/3))^3 / eps^2``).
    Gaussian (zCDP budget ``rho_z``): ``a^2/(2 beta rho_z) + b^2/(2 (1-beta) rho_z)`` is least at
    ``beta = a / (a + b)``.  ``b = 0`` (parallel ``r`` and ``u``, e.g. one sample) gives ``beta = 1``:
    everything on ``localP'`` and ``localSum' = rbar localP'``.

    :param mean_rank: ``rbar`` per client (non-negative, array-like).
    :param spread: ``||v'||_inf`` per client (non-negative, array-like).
    :param mechanism: ``"laplace"`` or ``"gaussian"``.
    :return: float64 array of ``beta`` in ``(0, 1]``.
    :raise ValueError: on negative inputs or an unknown mechanism.
    """
    if mechanism not in ("laplace", "gaussian"):
        raise ValueError(f"mechanism must be 'laplace' or 'gaussian', got {mechanism!r}")
    a = np.abs(np.asarray(mean_rank, dtype=np.float64))
    b = np.asarray(spread, dtype=np.float64)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))) or np.any(b < 0):
        raise ValueError("mean_rank and spread must be finite and spread non-negative")
    power = 2.0 / 3.0 if mechanism == "laplace" else 1.0
    a_p, b_p = a**power, b**power
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b_p > 0, a_p / (a_p + b_p), 1.0)


# --------------------------------------------------------------------------------------------------
# client layouts and local statistics

def _near_equal_blocks(samples: int, clients: int) -> np.ndarray:
    """Client index of positions ``0..M-1`` cut into ``K`` contiguous blocks of sizes differing by <= 1."""
    return (np.arange(samples, dtype=np.int64) * clients) // samples


def client_layout(scores: npt.ArrayLike, *, clients: int | None, layout: str,
                  rng: np.random.Generator) -> np.ndarray:
    """Assign the ``M`` samples to clients (§6.2.2) from public randomness.

    - ``iid``: a uniformly random permutation cut into ``K`` blocks of ``floor(M/K)`` or
      ``ceil(M/K)`` samples (a uniformly random balanced assignment; no client is empty);
    - ``non_iid``: samples sorted by score (ties in random order) and cut into ``K`` contiguous
      blocks of near-equal size, so similar scores share a client;
    - ``one_per_client``: ``K = M``, client ``i`` holds sample ``i``.

    :param scores: the ``M`` scores.
    :param clients: ``K`` with ``1 <= K <= M`` (for ``one_per_client``: ``None`` or ``M``).
    :param layout: one of :data:`LAYOUTS`.
    :param rng: a public generator (e.g. :func:`secure.public_randomness.public_generator`).
    :return: int64 array, the client index in ``[0, K)`` of every sample.
    :raise ValueError: on an unknown layout or an invalid number of clients.
    """
    values = _check_scores(scores)
    m = values.size
    gen = _check_generator(rng, "rng", allow_none=False)
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
    if layout == "one_per_client":
        if clients is not None and check_positive_int(clients, "clients") != m:
            raise ValueError(f"clients must equal the number of samples ({m}) for one_per_client, got {clients}")
        return np.arange(m, dtype=np.int64)
    if clients is None:
        raise ValueError(f"clients must be given for layout {layout!r}")
    k = check_positive_int(clients, "clients")
    if k > m:
        raise ValueError(f"clients must be at most the number of samples ({m}), got {clients}")
    out = np.empty(m, dtype=np.int64)
    if layout == "iid":
        out[gen.permutation(m)] = _near_equal_blocks(m, k)
    else:
        order = np.lexsort((gen.permutation(m), values))
        out[order] = _near_equal_blocks(m, k)
    return out


def _check_assignment(client_of: npt.ArrayLike, samples: int) -> tuple[np.ndarray, int]:
    values = np.asarray(client_of)
    if values.ndim != 1 or values.size != samples or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"client_of must be a one-dimensional integer array of length {samples}")
    if values.min() < 0:
        raise ValueError("client_of must be non-negative")
    clients = int(values.max()) + 1
    if np.unique(values).size != clients:
        raise ValueError("client_of must use every client index 0..K-1 (no empty client)")
    return values.astype(np.int64), clients


@dataclass(frozen=True)
class LocalStatistics:
    """Step 3 of Algorithm 4 at every client, before noise, with the public facts about its ranks.

    ``local_sum`` and ``local_positives`` are the clients' private values; sizes and rank facts are
    public (ranks come from the server).  All arrays have one entry per client.
    """

    #: ``|Y_k|``, samples per client.
    sizes: np.ndarray
    #: ``localSum_k = sum_i r_i y_i`` (multiples of 1/2).
    local_sum: np.ndarray
    #: ``localP_k = sum_i y_i``.
    local_positives: np.ndarray
    #: ``sum_i r_i`` over the client's samples (multiples of 1/2).
    rank_total: np.ndarray
    #: the client's largest rank ``Δ_k`` (LocalLaplace sensitivity).
    max_rank: np.ndarray
    #: the client's smallest rank.
    min_rank: np.ndarray

    @property
    def clients(self) -> int:
        """``K``."""
        return int(self.sizes.size)

    @property
    def local_negatives(self) -> np.ndarray:
        """``localN_k = |Y_k| - localP_k``."""
        return self.sizes - self.local_positives

    @property
    def mean_rank(self) -> np.ndarray:
        """``rbar_k`` (``u' = rbar_k u``)."""
        return self.rank_total / self.sizes

    @property
    def spread(self) -> np.ndarray:
        """``||v'||_inf = max_i |r_i - rbar_k|``."""
        mean = self.mean_rank
        return np.maximum(self.max_rank - mean, mean - self.min_rank)


def local_statistics(ranks: npt.ArrayLike, labels: npt.ArrayLike, client_of: npt.ArrayLike) -> LocalStatistics:
    """Compute every client's ``localSum``, ``localP`` and rank facts (vectorised, no Python loop).

    :param ranks: 0-based ranks of all samples (:func:`average_ranks`).
    :param labels: 0/1 labels (both classes present).
    :param client_of: client index of every sample (:func:`client_layout`), every index used.
    :return: the :class:`LocalStatistics`.
    :raise ValueError: on inconsistent inputs.
    """
    _, twice = _check_ranks(ranks)
    y = _check_labels(labels, twice.size)
    owner, k = _check_assignment(client_of, twice.size)
    sizes = np.bincount(owner, minlength=k).astype(np.int64)
    twice_sum = np.bincount(owner, weights=(twice * y).astype(np.float64), minlength=k)
    positives = np.bincount(owner, weights=y.astype(np.float64), minlength=k)
    twice_total = np.bincount(owner, weights=twice.astype(np.float64), minlength=k)
    order = np.argsort(owner, kind="stable")
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    sorted_twice = twice[order]
    twice_max = np.maximum.reduceat(sorted_twice, starts)
    twice_min = np.minimum.reduceat(sorted_twice, starts)
    return LocalStatistics(sizes=sizes, local_sum=np.rint(twice_sum) / 2.0,
                           local_positives=np.rint(positives).astype(np.int64),
                           rank_total=np.rint(twice_total) / 2.0, max_rank=twice_max / 2.0,
                           min_rank=twice_min / 2.0)


# --------------------------------------------------------------------------------------------------
# integer noise

def discrete_laplace_noise(log_alpha: npt.ArrayLike, runs: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Draw ``runs`` rows of discrete Laplace noise, one column per client, ``pmf ∝ alpha_k^|z|``.

    Each draw is the difference of two independent geometric (Pólya shape 1) variables with ratio
    ``alpha_k`` -- :func:`secure.noise.party.polya_difference` with ``shape = 1``, which this calls when all
    clients share one ``alpha``; with per-client ``alpha`` the same construction runs vectorised
    (:meth:`numpy.random.Generator.negative_binomial` with ``n = 1``, ``p = 1 - alpha_k``).
    ``log_alpha = -inf`` (zero sensitivity) gives 0.

    :param log_alpha: ``log(alpha_k) = -epsilon_k / sensitivity_k < 0`` per client (array-like).
    :param runs: number of independent rows, at least 1.
    :param rng: noise generator; ``None`` draws from the OS.
    :return: int64 array of shape ``(runs, K)``.
    :raise ValueError: if a ``log_alpha`` is not negative or ``runs < 1``.
    """
    logs = np.atleast_1d(np.asarray(log_alpha, dtype=np.float64))
    if logs.ndim != 1 or np.any(np.isnan(logs)) or np.any(logs >= 0):
        raise ValueError("log_alpha must be a one-dimensional array of negative numbers")
    r = check_positive_int(runs, "runs")
    gen = _check_generator(rng, "rng", allow_none=True)
    k = logs.size
    if np.all(logs == logs[0]):
        flat = polya_difference(1.0, size=r * k, rng=gen, log_alpha=float(logs[0]))
        return np.asarray(flat, dtype=np.int64).reshape(r, k)
    success = np.broadcast_to(-np.expm1(logs), (r, k))
    return (gen.negative_binomial(1, success) - gen.negative_binomial(1, success)).astype(np.int64)


def _laplace_variance(log_alpha: np.ndarray) -> np.ndarray:
    """``2 alpha/(1 - alpha)^2`` per entry, stable near ``alpha = 1`` (0 for ``log_alpha = -inf``)."""
    alpha = np.exp(log_alpha)
    return 2.0 * alpha / np.expm1(log_alpha) ** 2


def zcdp_budget(epsilon: float, delta: float) -> float:
    """The zCDP budget ``rho_z`` whose conversion is exactly ``(epsilon, delta)``-DP.

    ``rho_z``-zCDP implies ``(rho_z + 2 sqrt(rho_z log(1/delta)), delta)``-DP (Bun & Steinke 2016,
    Prop. 1.3); solving for ``rho_z``: ``sqrt(rho_z) = sqrt(log(1/delta) + epsilon) - sqrt(log(1/delta))``.

    :param epsilon: privacy-loss parameter, positive.
    :param delta: in ``(0, 1)``.
    :return: ``rho_z > 0``.
    :raise ValueError: if epsilon is not positive or delta not in ``(0, 1)``.
    """
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    if dlt == 0.0:
        raise ValueError(f"delta must lie in (0, 1), got {delta}")
    log_term = math.log(1.0 / dlt)
    root = eps / (math.sqrt(log_term + eps) + math.sqrt(log_term))
    return root * root


def _gaussian_noise(sigma2: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
    """``(runs, K)`` discrete Gaussian draws with per-client ``sigma2`` (grouped by value)."""
    out = np.zeros((runs, sigma2.size), dtype=np.int64)
    values, inverse = np.unique(sigma2, return_inverse=True)
    for group, value in enumerate(values):
        if value == 0.0:
            continue
        columns = np.flatnonzero(inverse == group)
        draws = sample_discrete_gaussian(float(value), runs * columns.size, rng)
        out[:, columns] = draws.reshape(runs, columns.size)
    return out


def _gaussian_variances(sigma2: np.ndarray) -> np.ndarray:
    values, inverse = np.unique(sigma2, return_inverse=True)
    return np.array([discrete_gaussian_variance(float(v)) for v in values])[inverse]


# --------------------------------------------------------------------------------------------------
# one setting: validation, closed forms, simulation

@dataclass(frozen=True)
class FedAucPrediction:
    """The closed forms of one FedAUC setting (no noise drawn)."""

    #: one of :data:`METHODS`.
    method: str
    #: ``iid``, ``non_iid``, ``one_per_client``, ``custom`` (given assignment) or ``none`` (RR).
    layout: str
    #: ``noisy`` or ``exact`` (:data:`COUNTS`).
    counts: str
    epsilon: float
    #: ``K`` (0 for RR, which does not depend on the clients).
    clients: int
    #: ``M``.
    samples: int
    #: the non-private AUC (eq. 1; ``roc_auc_score`` up to its floating-point rounding).
    exact_auc: float
    #: our standard deviation of the estimator: exact when it is linear in the noise (accurate
    #: counts), first order (delta method) otherwise.
    predicted_std: float
    #: its expected value: the true AUC (first order), plus :func:`rr_debiased_bias` for ``rr`` with
    #: noisy counts; the expected noisy AUC for ``rr_noisy``.
    predicted_mean: float
    #: the paper's closed form for this setting (eq. 7, 8 or 9); ``None`` where it gives none.
    paper_std: float | None


@dataclass(frozen=True)
class FedAucSimulation(FedAucPrediction):
    """Monte Carlo runs of one FedAUC setting, with its closed forms."""

    #: the AUC estimate of every run (NaN where ``Pbar <= 0`` or ``Nbar <= 0``).
    estimates: np.ndarray = field(kw_only=True)

    @property
    def runs(self) -> int:
        """Number of runs."""
        return int(self.estimates.size)

    @property
    def undefined_runs(self) -> int:
        """Runs whose noisy counts left no positive or no negative (estimate NaN)."""
        return int(np.count_nonzero(np.isnan(self.estimates)))

    @property
    def mean(self) -> float:
        """Mean of the defined estimates."""
        return float(np.nanmean(self.estimates))

    @property
    def std(self) -> float:
        """Sample standard deviation (``ddof = 1``) of the defined estimates (0 for a single run)."""
        defined = self.estimates[~np.isnan(self.estimates)]
        return float(np.std(defined, ddof=1)) if defined.size > 1 else 0.0


@dataclass(frozen=True)
class _Setting:
    """A validated setting: data, method and (for the Laplace/Gaussian family) the clients' noise plan."""

    method: str
    counts: str
    epsilon: float
    delta: float
    sum_fraction: float
    twice: np.ndarray            # twice the ranks (int64)
    labels: np.ndarray           # int64 0/1
    positives: int
    auc: float
    layout: str = "none"
    stats: LocalStatistics | None = None

    @property
    def samples(self) -> int:
        return int(self.twice.size)

    @property
    def negatives(self) -> int:
        return self.samples - self.positives

    @property
    def gaussian(self) -> bool:
        return self.method.endswith("_gaussian")

    @property
    def budget(self) -> float:
        """epsilon (Laplace) or the zCDP budget (Gaussian); inf without noise."""
        if self.epsilon == math.inf:
            return math.inf
        return zcdp_budget(self.epsilon, self.delta) if self.gaussian else self.epsilon


def _setting(scores: npt.ArrayLike, labels: npt.ArrayLike, method: str, epsilon: float, clients: int | None,
             layout: str | npt.ArrayLike, rng: np.random.Generator, sum_fraction: float, delta: float,
             counts: str) -> _Setting:
    values = _check_scores(scores)
    y = _check_labels(labels, values.size)
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    eps = _check_epsilon_or_inf(epsilon)
    public = _check_generator(rng, "rng", allow_none=False)
    fraction = _check_fraction(sum_fraction, "sum_fraction")
    if not isinstance(counts, str) or counts not in COUNTS:
        raise ValueError(f"counts must be one of {', '.join(COUNTS)}, got {counts!r}")
    gaussian = method.endswith("_gaussian")
    dlt = check_delta(delta)
    if gaussian and dlt == 0.0 and eps != math.inf:
        raise ValueError(f"delta must lie in (0, 1) for {method}, got {delta}")
    if not gaussian and dlt != 0.0:
        raise ValueError(f"delta must be 0 for {method} (pure epsilon-DP), got {delta}")
    if method.startswith("adaptive") and counts == "exact":
        raise ValueError(f"counts must be 'noisy' for {method}: the adaptive split releases localP")
    twice = _twice_ranks(values)
    p = int(y.sum())
    auc = (int(twice[y == 1].sum()) - p * (p - 1)) / (2 * p * (values.size - p))
    base = _Setting(method, counts, eps, dlt, fraction, twice, y, p, auc)
    if method in ("rr", "rr_noisy"):
        return base
    if isinstance(layout, str):
        client_of = client_layout(values, clients=clients, layout=layout, rng=public)
        name = layout
    else:
        client_of, _ = _check_assignment(layout, values.size)
        name = "custom"
    stats = local_statistics(twice / 2.0, y, client_of)
    return _Setting(method, counts, eps, dlt, fraction, twice, y, p, auc, name, stats)


@dataclass(frozen=True)
class ClientRelease:
    """One integer release per client: its value, sensitivity (integer units) and budget share."""

    value: np.ndarray
    sensitivity: np.ndarray
    share: np.ndarray


def noise_parameter(release: ClientRelease, budget: float, gaussian: bool) -> np.ndarray:
    """Per client: ``log(alpha) = -share budget / Delta`` (discrete Laplace) or
    ``sigma^2 = Delta^2 / (2 share budget)`` (discrete Gaussian, ``budget`` a zCDP ``rho``);
    ``-inf`` / 0 (no noise) where the sensitivity is 0."""
    sens = release.sensitivity.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        part = release.share * budget  # 0 * inf = nan only where the sensitivity is 0 (no noise)
        if gaussian:
            return np.where(sens > 0, sens**2 / (2.0 * part), 0.0)
        return np.where(sens > 0, -part / sens, -np.inf)


def _noise_variances(parameter: np.ndarray, gaussian: bool) -> np.ndarray:
    return _gaussian_variances(parameter) if gaussian else _laplace_variance(parameter)


def _noise_draws(parameter: np.ndarray, gaussian: bool, rows: int, rng: np.random.Generator) -> np.ndarray:
    if gaussian:
        return _gaussian_noise(parameter, rows, rng)
    return discrete_laplace_noise(parameter, rows, rng)


def noisy_client_reports(parts: dict[str, ClientRelease], *, budget: float, gaussian: bool, runs: int,
                         rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every client's released integer reports, ``runs`` times: value plus calibrated noise.

    The clients' side of Algorithm 4 (and §5.3): each report gets discrete Laplace of
    ``log alpha = -share budget / Delta`` or discrete Gaussian of ``sigma^2 = Delta^2 / (2 share budget)``
    (:func:`noise_parameter`), drawn report by report in the order of ``parts``.  Used by
    :func:`simulate_fedauc` and by the auditor (:mod:`dp.audit.central_cases`), so both run this calibration.

    Threat model: label DP against the server and any set of other clients (Sun et al. §5); the noise
    is the client's own, from ``rng``.

    :param parts: :func:`client_releases` of the clients.
    :param budget: epsilon (Laplace) or the zCDP ``rho`` (Gaussian, :func:`zcdp_budget`).
    :param gaussian: discrete Gaussian instead of discrete Laplace.
    :param runs: number of independent releases; ``rng``: the noise generator.
    :return: ``{report name: int64 array (runs, K)}``.
    """
    parameters = {name: noise_parameter(c, budget, gaussian) for name, c in parts.items()}
    return {name: c.value[None, :] + _noise_draws(parameters[name], gaussian, runs, rng) for name, c in parts.items()}


def client_releases(stats: LocalStatistics, *, method: str, samples: int, sum_fraction: float = 0.5,
                    counts: str = "noisy") -> dict[str, ClientRelease]:
    """The integer releases of every client (Sun et al. Algorithm 4, App. N, §5.3).

    Global / local: ``sum`` = ``2 localSum_k`` with sensitivity ``2 (M - 1)`` (global) or twice the
    client's largest rank (local) and budget share ``sum_fraction``, and ``count`` = ``localP_k``
    (sensitivity 1, share ``1 - sum_fraction``; left out with ``counts="exact"``).  Adaptive (§5.3):
    ``count`` with share ``beta_k`` and ``orthogonal`` = ``D_k = n_k <2 v', y>`` with sensitivity
    ``max_i |n_k 2 r_i - T_k|`` and share ``1 - beta_k``.

    :param stats: :func:`local_statistics` of the ranks, labels and clients.
    :param method: a FedAUC Laplace or Gaussian method (``global_laplace``, ``adaptive_gaussian``, ...).
    :param samples: ``M``, the number of samples over all clients.
    """
    k = stats.clients
    twice_sum = np.rint(2.0 * stats.local_sum).astype(np.int64)
    twice_max = np.rint(2.0 * stats.max_rank).astype(np.int64)
    ones = np.ones(k, dtype=np.int64)
    family = method.split("_")[0]
    if family in ("global", "local"):
        sens = np.full(k, 2 * (samples - 1), dtype=np.int64) if family == "global" else twice_max
        if counts == "exact":
            return {"sum": ClientRelease(twice_sum, sens, np.ones(k))}
        return {"sum": ClientRelease(twice_sum, sens, np.full(k, sum_fraction)),
                "count": ClientRelease(stats.local_positives, ones, np.full(k, 1.0 - sum_fraction))}
    # adaptive (§5.3) in integers: localP' and D = n <2 v', y> = n Q - T localP, sensitivity max_i |n 2 r_i - T|
    sizes = stats.sizes
    twice_total = np.rint(2.0 * stats.rank_total).astype(np.int64)
    twice_min = np.rint(2.0 * stats.min_rank).astype(np.int64)
    beta = adaptive_count_fraction(stats.mean_rank, stats.spread, mechanism=method.split("_")[1])
    return {"count": ClientRelease(stats.local_positives, ones, beta),
            "orthogonal": ClientRelease(sizes * twice_sum - twice_total * stats.local_positives,
                                        np.maximum(sizes * twice_max - twice_total, twice_total - sizes * twice_min),
                                        1.0 - beta)}


def _components(setting: _Setting) -> dict[str, ClientRelease]:
    """The releases of every client in a simulation setting."""
    assert setting.stats is not None
    return client_releases(setting.stats, method=setting.method, samples=setting.samples,
                           sum_fraction=setting.sum_fraction, counts=setting.counts)


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


def _predict(setting: _Setting) -> FedAucPrediction:
    m, p, n, auc = setting.samples, setting.positives, setting.negatives, setting.auc
    ranks = setting.twice / 2.0
    if setting.method in ("rr", "rr_noisy"):
        rho = flip_probability(setting.epsilon)
        eq7 = rho * (1.0 - rho) * float(np.dot(ranks, ranks)) / float(p * n) ** 2
        paper: float | None = math.sqrt(eq7)
        mean = auc
        if setting.method == "rr_noisy" and setting.counts == "exact":
            variance = eq7
            mean = ((1.0 - 2.0 * rho) * float(np.dot(ranks, setting.labels)) + rho * m * (m - 1) / 2.0
                    - p * (p - 1) / 2.0) / (p * n)
        elif setting.method == "rr_noisy":
            mean, variance = _rr_noisy_moments(ranks, setting.labels, rho)
            paper = None
        elif setting.counts == "exact":
            variance = eq7 / (1.0 - 2.0 * rho) ** 2
        else:
            variance = rr_debiased_variance(ranks, setting.labels, setting.epsilon)
            mean = auc + rr_debiased_bias(ranks, setting.labels, setting.epsilon)
        return FedAucPrediction(setting.method, "none", setting.counts, setting.epsilon, 0, m, auc,
                                math.sqrt(variance), mean, paper)
    stats = setting.stats
    assert stats is not None
    gaussian, budget = setting.gaussian, setting.budget
    parts = _components(setting)
    var = {name: _noise_variances(noise_parameter(c, budget, gaussian), gaussian) for name, c in parts.items()}
    if "orthogonal" in parts:  # localSum'_k noise = rbar_k e1_k + e2_k / (2 n_k), localP'_k noise = e1_k
        mean_rank = stats.mean_rank
        orthogonal = var["orthogonal"] / (2.0 * stats.sizes) ** 2
        variance = delta_method_variance(float(np.sum(mean_rank**2 * var["count"] + orthogonal)),
                                         float(var["count"].sum()), p, n, auc,
                                         covariance=float(np.sum(mean_rank * var["count"])))
    else:
        variance = delta_method_variance(float(var["sum"].sum()) / 4.0, float(var.get("count", np.zeros(1)).sum()),
                                         p, n, auc)
    paper = None
    if setting.counts == "exact" and setting.method == "global_laplace":
        paper = math.sqrt(global_laplace_variance(stats.clients, m, p, n, setting.epsilon))
    elif setting.counts == "exact" and setting.method == "local_laplace":
        paper = math.sqrt(local_laplace_variance(stats.max_rank, p, n, setting.epsilon))
    return FedAucPrediction(setting.method, setting.layout, setting.counts, setting.epsilon, stats.clients, m, auc,
                            math.sqrt(max(variance, 0.0)), auc, paper)


def _chunks(runs: int, width: int) -> list[int]:
    step = max(1, _CHUNK_ELEMENTS // max(width, 1))
    return [min(step, runs - start) for start in range(0, runs, step)]


def _simulate_rr(setting: _Setting, runs: int, gen: np.random.Generator) -> np.ndarray:
    m, p, n = setting.samples, setting.positives, setting.negatives
    threshold = _flip_threshold(setting.epsilon)
    rho = math.ldexp(threshold, -_GRID_BITS)
    twice_float = setting.twice.astype(np.float64)
    clean = setting.labels.astype(bool)
    out = []
    for size in _chunks(runs, m):
        noisy = np.logical_xor(clean[None, :], _flips(threshold, (size, m), gen))   # Algorithm 1
        rank_sum = (noisy.astype(np.float64) @ twice_float) / 2.0  # exact: integer sums below 2**53
        pbar = noisy.sum(axis=1).astype(np.float64)
        if setting.counts == "noisy":  # Algorithm 2, then Algorithm 3
            noisy_auc = server_auc(rank_sum, pbar, m)
            out.append(noisy_auc if setting.method == "rr_noisy" else debias_auc(noisy_auc, pbar, m - pbar, rho))
        elif setting.method == "rr_noisy":  # App. I: accurate P and N, no debiasing
            out.append((rank_sum - p * (p - 1) / 2.0) / (p * n))
        else:  # eq. (3)-(4) with the accurate base rate and expected noisy counts: exactly unbiased
            total = m * (m - 1) / 2.0
            out.append((rank_sum - rho * total - (1.0 - 2.0 * rho) * p * (p - 1) / 2.0) / ((1.0 - 2.0 * rho) * p * n))
    return np.concatenate(out)


def _simulate_clients(setting: _Setting, runs: int, gen: np.random.Generator) -> np.ndarray:
    stats = setting.stats
    assert stats is not None
    gaussian, budget = setting.gaussian, setting.budget
    parts = _components(setting)
    m, k = setting.samples, stats.clients
    out = []
    for size in _chunks(runs, k):
        released = noisy_client_reports(parts, budget=budget, gaussian=gaussian, runs=size, rng=gen)
        if "orthogonal" in released:
            local_p = released["count"]
            twice_total = np.rint(2.0 * stats.rank_total)
            # localSum'_k = rbar_k localP'_k + <v', y>' = (T_k localP'_k + D'_k) / (2 n_k)   (§5.3)
            local_sum = (twice_total[None, :] * local_p + released["orthogonal"]) / (2.0 * stats.sizes[None, :])
            out.append(server_auc(local_sum.sum(axis=1), local_p.sum(axis=1), m))
            continue
        sums = released["sum"].sum(axis=1) / 2.0   # Algorithm 4, lines 36-39
        pbar = released["count"].sum(axis=1) if "count" in released else np.full(size, float(setting.positives))
        out.append(server_auc(sums, pbar, m))
    return np.concatenate(out)


def predict_fedauc(scores: npt.ArrayLike, labels: npt.ArrayLike, *, method: str, epsilon: float,
                   clients: int | None = None, layout: str | npt.ArrayLike = "iid", rng: np.random.Generator,
                   sum_fraction: float = 0.5, delta: float = 0.0, counts: str = "noisy") -> FedAucPrediction:
    """The closed-form standard deviations of one setting, without drawing noise.

    The layout drawn from ``rng`` is the one :func:`simulate_fedauc` uses for the same generator state.

    :param scores: the ``M`` prediction scores.
    :param labels: the ``M`` true 0/1 labels (both classes present).
    :param method: one of :data:`METHODS`.
    :param epsilon: privacy budget per label, positive, or ``math.inf`` (no noise).
    :param clients: ``K`` (for ``iid``/``non_iid``; ``None`` or ``M`` for ``one_per_client``).
    :param layout: one of :data:`LAYOUTS`, or an integer array giving every sample's client.
    :param rng: public generator for the layout.
    :param sum_fraction: the paper's alpha (share of the budget on ``localSum``), in ``(0, 1)``.
    :param delta: ``(epsilon, delta)`` of the Gaussian methods, in ``(0, 1)``; must be 0 otherwise.
    :param counts: ``"noisy"`` or ``"exact"`` (:data:`COUNTS`); ``adaptive_*`` needs ``"noisy"``.
    :return: the :class:`FedAucPrediction`.
    :raise ValueError: on an invalid parameter, with a message naming it.
    :raise TypeError: on a parameter of the wrong type.
    """
    return _predict(_setting(scores, labels, method, epsilon, clients, layout, rng, sum_fraction, delta, counts))


def simulate_fedauc(scores: npt.ArrayLike, labels: npt.ArrayLike, *, method: str, epsilon: float,
                    clients: int | None = None, layout: str | npt.ArrayLike = "iid", runs: int = 100,
                    rng: np.random.Generator, sum_fraction: float = 0.5, delta: float = 0.0,
                    counts: str = "noisy", noise_rng: np.random.Generator | None = None) -> FedAucSimulation:
    """Run one FedAUC setting ``runs`` times (fresh noise, one fixed client layout), vectorised.

    The server ranks ``scores`` (average ranks on ties), the clients of ``layout`` compute their
    local statistics and perturb them with ``method``, the server applies eq. (1) (and eq. 3-4 for
    ``rr``).  The layout is drawn once from the public ``rng``; every run redraws the noise from
    ``noise_rng``.  Randomized response does not depend on the clients (``clients``/``layout``
    ignored).  With ``epsilon = math.inf`` every method returns the exact AUC in every run.

    ``counts="noisy"`` is the deployment: ``localP`` is perturbed with ``(1 - sum_fraction)`` of the
    budget (Table 1/7).  ``counts="exact"`` is the paper's analysis setting (App. I, N, O, Table 2):
    accurate ``P`` and ``N``, the whole budget on ``localSum`` -- not label-DP (counts in the clear).

    :param scores: the ``M`` prediction scores.
    :param labels: the ``M`` true 0/1 labels (both classes present).
    :param method: one of :data:`METHODS`.
    :param epsilon: privacy budget per label, positive, or ``math.inf`` (no noise).
    :param clients: ``K`` (for ``iid``/``non_iid``; ``None`` or ``M`` for ``one_per_client``).
    :param layout: one of :data:`LAYOUTS`, or an integer array giving every sample's client.
    :param runs: number of runs, at least 1.
    :param rng: public generator for the layout.
    :param sum_fraction: the paper's alpha: share of epsilon (of ``rho_z`` for Gaussian) on
        ``localSum``, in ``(0, 1)``; ignored by ``rr*`` and ``adaptive_*``.
    :param delta: ``(epsilon, delta)`` of the Gaussian methods, in ``(0, 1)``; must be 0 otherwise.
    :param counts: ``"noisy"`` or ``"exact"`` (:data:`COUNTS`); ``adaptive_*`` needs ``"noisy"``.
    :param noise_rng: noise generator; ``None`` draws from the OS (production).
    :return: the :class:`FedAucSimulation` (estimates and the closed forms of :func:`predict_fedauc`).
    :raise ValueError: on an invalid parameter, with a message naming it.
    :raise TypeError: on a parameter of the wrong type.
    """
    setting = _setting(scores, labels, method, epsilon, clients, layout, rng, sum_fraction, delta, counts)
    r = check_positive_int(runs, "runs")
    noise = _check_generator(noise_rng, "noise_rng", allow_none=True)
    prediction = _predict(setting)
    if setting.stats is None:
        estimates = _simulate_rr(setting, r, noise)
    else:
        estimates = _simulate_clients(setting, r, noise)
    return FedAucSimulation(**{f: getattr(prediction, f) for f in FedAucPrediction.__dataclass_fields__},
                            estimates=estimates)
