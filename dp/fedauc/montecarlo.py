"""FedAUC Monte Carlo: one setting's experiment setup, the closed forms -- the paper's variances (eq. 7-9) and our
first-order ones, no noise drawn -- and the simulation (Sun et al. §6).

Threat model: label DP (Sun et al. §3, Definition 2.1); scores, ranks and client layout are public.
``counts="exact"`` is the paper's analysis setting and **not** label-DP.  Noise from ``noise_rng`` (the OS when
``None``).  Details and derivations: docs/fedauc.md."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from numbers import Real
from typing import Final

import numpy as np
import numpy.typing as npt

from dp.fedauc.mechanisms import (_GRID_BITS, ClientRelease, _check_epsilon_or_inf, _flip_threshold, _flips,
                                  aggregate_reports, client_releases, flip_probability, noise_parameter,
                                  noisy_client_reports, rr_server_auc, zcdp_budget)
from dp.fedauc.ranks import (LocalStatistics, _check_assignment, _check_generator, _check_labels, _check_ranks,
                             _check_scores, _twice_rank_auc, _twice_ranks, client_layout, local_statistics)
from dp.validation import check_choice, check_delta, check_interval, check_positive_int
from secure.noise.party import discrete_gaussian_variance

__all__ = ["METHODS", "COUNTS", "FedAucPrediction", "FedAucSimulation", "predict_fedauc", "simulate_fedauc",
           "check_parameters", "rr_variance", "rr_debiased_variance", "rr_debiased_bias", "global_laplace_variance",
           "local_laplace_variance", "delta_method_variance"]

#: The estimators :func:`simulate_fedauc` runs.  ``rr``: FedAUC_RR debiased (eq. 3-4); ``rr_noisy``: not debiased
#: (Table 3); ``global_*``, ``local_*``: FedAUC_Lap with GlobalLaplace / LocalLaplace sensitivity; ``adaptive_*``:
#: §5.3; ``orthogonal_*``: §5.3's split with one shared ``beta = 1 - sum_fraction`` (the "Orthogonal" of Fig. 1c).
METHODS: Final[tuple[str, ...]] = ("rr", "rr_noisy", "global_laplace", "local_laplace", "adaptive_laplace",
                                   "global_gaussian", "local_gaussian", "adaptive_gaussian",
                                   "orthogonal_laplace", "orthogonal_gaussian")
#: ``noisy``: the deployment (P and N from noisy reports); ``exact``: accurate P and N (analysis only).
COUNTS: Final[tuple[str, ...]] = ("noisy", "exact")

_CHUNK_ELEMENTS: Final[int] = 1 << 21  # largest (runs x samples) or (runs x clients) block drawn at once


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


@dataclass(frozen=True)
class FedAucPrediction:
    """The closed forms of one FedAUC setting (no noise drawn): the setting, the exact AUC, our predicted standard
    deviation and mean, the paper's standard deviation (eq. 7, 8 or 9; None where none); fields: docs/fedauc.md."""

    method: str
    layout: str
    counts: str
    epsilon: float
    clients: int
    samples: int
    exact_auc: float
    predicted_std: float
    predicted_mean: float
    paper_std: float | None


@dataclass(frozen=True)
class FedAucSimulation(FedAucPrediction):
    """Monte Carlo runs of one FedAUC setting, with its closed forms."""

    #: the AUC estimate of every run (NaN where ``Pbar <= 0`` or ``Nbar <= 0``).
    estimates: np.ndarray = field(kw_only=True)

    @property
    def runs(self) -> int:
        return int(self.estimates.size)

    @property
    def undefined_runs(self) -> int:
        """Runs whose noisy counts left no positive or no negative (estimate NaN)."""
        return int(np.count_nonzero(np.isnan(self.estimates)))

    @property
    def mean(self) -> float:
        """Mean of the defined estimates (exactly their common value when all are equal: no ulp of rounding)."""
        defined = self.estimates[~np.isnan(self.estimates)]
        same = defined.size and np.all(defined == defined[0])
        return float(defined[0]) if same else float(np.nanmean(self.estimates))

    @property
    def std(self) -> float:
        """Sample standard deviation (``ddof = 1``) of the defined estimates (0 for a single run, and exactly 0
        when every run returned the same value, e.g. epsilon = inf, instead of a rounding residue ~1e-16)."""
        defined = self.estimates[~np.isnan(self.estimates)]
        return 0.0 if defined.size <= 1 or np.all(defined == defined[0]) else float(np.std(defined, ddof=1))


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


def check_parameters(method: str, epsilon: float, sum_fraction: float, delta: float,
                     counts: str) -> tuple[float, float, float]:
    """``(epsilon, sum_fraction, delta)`` of a setting, checked (the one checker of :func:`simulate_fedauc`,
    :func:`predict_fedauc` and :class:`dp.fedauc.Query`).
    :raise ValueError: naming the parameter (``method must be one of rr, ...``); :raise TypeError: a wrong type."""
    check_choice(method, METHODS, "method")
    eps = _check_epsilon_or_inf(epsilon)
    fraction = check_interval(sum_fraction, "sum_fraction", low=0.0, high=1.0, closed_low=False)
    check_choice(counts, COUNTS, "counts")
    gaussian = method.endswith("_gaussian")
    dlt = check_delta(delta)
    if gaussian and dlt == 0.0 and eps != math.inf:
        raise ValueError(f"delta must lie in (0, 1) for {method}, got {delta}")
    if not gaussian and dlt != 0.0:
        raise ValueError(f"delta must be 0 for {method} (pure epsilon-DP), got {delta}")
    if method.startswith(("adaptive", "orthogonal")) and counts == "exact":
        raise ValueError(f"counts must be 'noisy' for {method}: the orthogonal split releases localP")
    return eps, fraction, dlt


def _setting(scores: npt.ArrayLike, labels: npt.ArrayLike, method: str, epsilon: float, clients: int | None,
             layout: str | npt.ArrayLike, rng: np.random.Generator, sum_fraction: float, delta: float,
             counts: str) -> _Setting:
    values = _check_scores(scores)
    y = _check_labels(labels, values.size)
    eps, fraction, dlt = check_parameters(method, epsilon, sum_fraction, delta, counts)
    public = _check_generator(rng, "rng", allow_none=False)
    twice = _twice_ranks(values)
    p, auc = int(y.sum()), _twice_rank_auc(twice, y)
    if method in ("rr", "rr_noisy"):
        return _Setting(method, counts, eps, dlt, fraction, twice, y, p, auc)
    if isinstance(layout, str):
        client_of = client_layout(values, clients=clients, layout=layout, rng=public)
        name = layout
    else:
        client_of, _ = _check_assignment(layout, values.size)
        name = "custom"
    stats = local_statistics(twice / 2.0, y, client_of)
    return _Setting(method, counts, eps, dlt, fraction, twice, y, p, auc, name, stats)


def _noise_plan(setting: _Setting) -> tuple[LocalStatistics, dict[str, ClientRelease], bool, float]:
    """The clients' statistics and releases, whether their noise is Gaussian, and its budget: epsilon (Laplace) or
    the zCDP budget (Gaussian); inf without noise."""
    stats = setting.stats
    assert stats is not None
    gaussian = setting.method.endswith("_gaussian")
    no_noise = setting.epsilon == math.inf
    budget = zcdp_budget(setting.epsilon, setting.delta) if gaussian and not no_noise else setting.epsilon
    return stats, client_releases(stats, method=setting.method, samples=setting.samples,
                                  sum_fraction=setting.sum_fraction, counts=setting.counts), gaussian, budget


def _predict(setting: _Setting) -> FedAucPrediction:
    m, p, n, auc = setting.samples, setting.positives, setting.negatives, setting.auc
    ranks = setting.twice / 2.0
    if setting.method in ("rr", "rr_noisy"):
        rho = flip_probability(setting.epsilon)
        eq7 = rr_variance(ranks, p, n, setting.epsilon)
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
    stats, parts, gaussian, budget = _noise_plan(setting)
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
            out.append(rr_server_auc(rank_sum, pbar, m, rho, debias=setting.method == "rr"))
        elif setting.method == "rr_noisy":  # App. I: accurate P and N, no debiasing
            out.append((rank_sum - p * (p - 1) / 2.0) / (p * n))
        else:  # eq. (3)-(4) with the accurate base rate and expected noisy counts: exactly unbiased
            total = m * (m - 1) / 2.0
            out.append((rank_sum - rho * total - (1.0 - 2.0 * rho) * p * (p - 1) / 2.0) / ((1.0 - 2.0 * rho) * p * n))
    return np.concatenate(out)


def _simulate_clients(setting: _Setting, runs: int, gen: np.random.Generator) -> np.ndarray:
    stats, parts, gaussian, budget = _noise_plan(setting)
    twice_total = np.rint(2.0 * stats.rank_total)
    out = []
    for size in _chunks(runs, stats.clients):
        released = noisy_client_reports(parts, budget=budget, gaussian=gaussian, runs=size, rng=gen)
        out.append(aggregate_reports(released, samples=setting.samples, sizes=stats.sizes, twice_total=twice_total,
                                     positives=setting.positives))
    return np.concatenate(out)


def predict_fedauc(scores: npt.ArrayLike, labels: npt.ArrayLike, *, method: str, epsilon: float,
                   clients: int | None = None, layout: str | npt.ArrayLike = "iid", rng: np.random.Generator,
                   sum_fraction: float = 0.5, delta: float = 0.0, counts: str = "noisy") -> FedAucPrediction:
    """The closed-form standard deviations of one setting, without drawing noise (the layout drawn from ``rng`` is the
    one :func:`simulate_fedauc` uses for the same generator state).  ``scores`` and 0/1 ``labels`` (both classes
    present); the other parameters as :func:`simulate_fedauc`'s.  :raise ValueError, TypeError: a bad parameter."""
    return _predict(_setting(scores, labels, method, epsilon, clients, layout, rng, sum_fraction, delta, counts))


def simulate_fedauc(scores: npt.ArrayLike, labels: npt.ArrayLike, *, method: str, epsilon: float,
                    clients: int | None = None, layout: str | npt.ArrayLike = "iid", runs: int = 100,
                    rng: np.random.Generator, sum_fraction: float = 0.5, delta: float = 0.0,
                    counts: str = "noisy", noise_rng: np.random.Generator | None = None) -> FedAucSimulation:
    """Run one FedAUC setting ``runs`` times (fresh noise, one fixed client layout), vectorised: the estimates and
    the closed forms of :func:`predict_fedauc`.  Parameters: docs/fedauc.md.  :raise ValueError, TypeError: named."""
    setting = _setting(scores, labels, method, epsilon, clients, layout, rng, sum_fraction, delta, counts)
    r = check_positive_int(runs, "runs")
    noise = _check_generator(noise_rng, "noise_rng", allow_none=True)
    prediction = _predict(setting)
    estimates = _simulate_rr(setting, r, noise) if setting.stats is None else _simulate_clients(setting, r, noise)
    return FedAucSimulation(**{f: getattr(prediction, f) for f in FedAucPrediction.__dataclass_fields__},
                            estimates=estimates)
