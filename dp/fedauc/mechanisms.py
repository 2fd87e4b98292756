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
  estimated from the noisy counts as in App. P (eq. 10-12).  :func:`dp.fedauc.closed_forms.rr_variance` is eq. (7).
- FedAUC_Lap (§5, Algorithm 4): each client adds noise to ``localSum_k`` and ``localP_k`` and derives
  ``localN'_k = |Y_k| - localP'_k``.  The budget is split ``epsilon_localSum = alpha epsilon``,
  ``epsilon_localP = (1 - alpha) epsilon`` (``sum_fraction`` here, the paper's alpha).
  *LocalLaplace*: the sensitivity of ``localSum_k`` is the client's largest rank (§5.2);
  *GlobalLaplace*: ``M - 1`` for every client (App. N).
  :func:`dp.fedauc.closed_forms.global_laplace_variance` is eq. (8),
  :func:`dp.fedauc.closed_forms.local_laplace_variance` is eq. (9) (generalised to any layout).
  *Adaptive* (§5.3): the client's rank vector is split orthogonally, ``r = rbar u + v'`` with
  ``u = (1, ..., 1)`` (:func:`orthogonal_decomposition`), so that
  ``localSum_k = rbar localP_k + <v', y>``; the client releases ``localP'_k`` with ``beta epsilon``
  and ``<v', y>`` with ``(1 - beta) epsilon`` (sensitivity ``||v'||_inf``) and reports
  ``localSum'_k = rbar localP'_k + <v', y>'``; its ``beta`` minimises the variance of
  ``localSum'_k`` (:func:`adaptive_count_fraction`).  ``beta`` depends only on the ranks, which the
  client knows anyway, never on the labels, so the choice itself leaks nothing.
  The *Gaussian* form replaces both noises by discrete Gaussians: ``(epsilon, delta)`` becomes a
  zero-concentrated budget ``rho_z`` (:func:`zcdp_budget`), split by ``sum_fraction`` (or ``beta``).

Noise (docs/design.md: integer noise on integer statistics)
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
  ``None``; client layouts come from a public generator (:func:`dp.fedauc.ranks.client_layout`).

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
- the ``counts="exact"`` setting of :func:`dp.fedauc.montecarlo.simulate_fedauc` (App. I, N, O and Table 2
  assume accurate ``P`` and ``N``) releases ``localP`` in the clear and is **not** label-DP; it exists only
  to reproduce the paper's closed forms.
- a client that does not add its noise (clients are trusted with their own labels' privacy).

This module runs in plain NumPy, in one process: there is no MPyC here, so docs/design.md's secure-layer
threat model (``t < m/2`` passive parties, coalition-calibrated noise) does not apply.  The MPC
deployment of FedAUC, where the scores are hidden too, is a separate module.

Where the rest lives
--------------------
:mod:`dp.fedauc.ranks` (ranks, eq. 1, client layouts, local statistics), :mod:`dp.fedauc.closed_forms`
(the paper's eq. 7-9 and our first-order variances), :mod:`dp.fedauc.montecarlo` (one setting's
experiment: :func:`dp.fedauc.montecarlo.simulate_fedauc`, :func:`dp.fedauc.montecarlo.predict_fedauc`).

References: J. Sun, X. Yang, Y. Yao, J. Xie, D. Wu, C. Wang, *Differentially Private AUC Computation
in Vertical Federated Learning* (§4, §5, §6, App. D-I, N-P); C. Canonne, G. Kamath, T. Steinke,
*The Discrete Gaussian for Differential Privacy* (NeurIPS 2020, Algorithms 1-3); A. Menon et al.,
ICML 2015 (eq. 3-4).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Final

import numpy as np
import numpy.typing as npt

from dp.fedauc.ranks import LocalStatistics, _check_generator
from dp.validation import check_delta, check_epsilon, check_positive_int
from secure.noise.party import discrete_gaussian_variance, polya_difference, sample_discrete_gaussian

__all__ = [
    "ClientRelease",
    "client_releases",
    "noisy_client_reports",
    "noise_parameter",
    "flip_probability",
    "randomized_response",
    "estimate_base_rate",
    "debias_auc",
    "orthogonal_decomposition",
    "adaptive_count_fraction",
    "discrete_laplace_noise",
    "zcdp_budget",
    "sample_discrete_gaussian",
    "discrete_gaussian_variance",
]

_GRID_BITS: Final[int] = 53            # randomized response: flip probability on the 2^-53 grid


# --------------------------------------------------------------------------------------------------
# validation

def _check_epsilon_or_inf(epsilon: float) -> float:
    """``epsilon`` as a float: positive and finite, or ``math.inf`` (no privacy, no noise)."""
    if isinstance(epsilon, Real) and not isinstance(epsilon, bool) and float(epsilon) == math.inf:
        return math.inf
    return check_epsilon(epsilon)


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


# --------------------------------------------------------------------------------------------------
# the clients' integer releases (Algorithm 4, §5.3)

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
    :func:`dp.fedauc.montecarlo.simulate_fedauc` and by the auditor (:mod:`dp.audit.fedauc_cases`), so both run
    this calibration.

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
    ``max_i |n_k 2 r_i - T_k|`` and share ``1 - beta_k``, ``beta_k`` from :func:`adaptive_count_fraction`.
    Orthogonal (§6.2.2, Fig. 1c and 6, the paper's "Orthogonal" baseline): the same two releases with one
    ``beta = 1 - sum_fraction`` shared by every client (tuned, not adaptive).

    :param stats: :func:`dp.fedauc.ranks.local_statistics` of the ranks, labels and clients.
    :param method: a FedAUC Laplace or Gaussian method (``global_laplace``, ``adaptive_gaussian``,
        ``orthogonal_laplace``, ...).
    :param samples: ``M``, the number of samples over all clients.
    :param sum_fraction: the paper's alpha (global / local); ``1 - beta`` for ``orthogonal_*``.
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
    if family == "orthogonal":  # the "Orthogonal" baseline: one tuned beta for every client
        beta = np.full(k, 1.0 - sum_fraction)
    else:
        beta = adaptive_count_fraction(stats.mean_rank, stats.spread, mechanism=method.split("_")[1])
    return {"count": ClientRelease(stats.local_positives, ones, beta),
            "orthogonal": ClientRelease(sizes * twice_sum - twice_total * stats.local_positives,
                                        np.maximum(sizes * twice_max - twice_total, twice_total - sizes * twice_min),
                                        1.0 - beta)}


