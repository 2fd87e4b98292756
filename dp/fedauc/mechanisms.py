"""FedAUC: label-DP AUC in vertical federated learning, the paper's own deployment (Sun et al., §4-§6).

Randomized response, Laplace / Gaussian (global, local, adaptive sensitivity), integer noise on integer
statistics.  Threat model: label DP (Sun et al. §3, Definition 2.1); scores, ranks and client layout are public.
Each client perturbs its own reports; plain NumPy, no MPyC.  What is and is not protected: docs/fedauc.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Final

import numpy as np
import numpy.typing as npt

from dp.fedauc.ranks import LocalStatistics, _check_generator, server_auc
from dp.validation import check_delta, check_epsilon, check_number, check_positive_int
from secure.noise.party import discrete_gaussian_variance, polya_difference, sample_discrete_gaussian

__all__ = ["ClientRelease", "client_releases", "noisy_client_reports", "noise_parameter", "flip_probability",
           "randomized_response", "debias_auc", "rr_server_auc", "aggregate_reports",
           "adaptive_count_fraction", "discrete_laplace_noise", "zcdp_budget", "sample_discrete_gaussian",
           "discrete_gaussian_variance"]

_GRID_BITS: Final[int] = 53            # randomized response: flip probability on the 2^-53 grid


def _check_epsilon_or_inf(epsilon: float) -> float:
    """``epsilon`` as a float: positive and finite, or ``math.inf`` (no privacy, no noise)."""
    if isinstance(epsilon, Real) and not isinstance(epsilon, bool) and float(epsilon) == math.inf:
        return math.inf
    return check_epsilon(epsilon)


def _flip_threshold(epsilon: float) -> int:
    """``T`` with ``T / 2^53 >= 1/(1 + e^eps)``: flip when a uniform 53-bit integer is below ``T``."""
    if epsilon == math.inf:
        return 0
    rho = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    return min(math.ceil(math.ldexp(rho, _GRID_BITS)) + 1, 1 << (_GRID_BITS - 1))


def flip_probability(epsilon: float) -> float:
    """The label-flip probability ``rho_hat`` in ``[0, 1/2]`` that :func:`randomized_response` realises for
    ``epsilon`` (positive, or ``math.inf``).  Details: docs/fedauc.md.  :raise ValueError: epsilon not positive."""
    eps = _check_epsilon_or_inf(epsilon)
    return math.ldexp(_flip_threshold(eps), -_GRID_BITS)


def _flips(threshold: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    if threshold == 0:
        return np.zeros(shape, dtype=bool)
    return rng.integers(0, 1 << _GRID_BITS, size=shape, dtype=np.int64) < threshold


def randomized_response(labels: npt.ArrayLike, epsilon: float, *,
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """Algorithm 1: flip every 0/1 label independently with probability :func:`flip_probability` (``epsilon`` or
    ``math.inf``: no flips; ``rng`` ``None``: the OS).  Details: docs/fedauc.md.
    :raise ValueError: if labels are not 0/1 or epsilon is not positive."""
    eps = _check_epsilon_or_inf(epsilon)
    y = np.asarray(labels)
    if y.ndim != 1 or not np.all((y == 0) | (y == 1)):
        raise ValueError("labels must be a one-dimensional array of 0 and 1")
    gen = _check_generator(rng, "rng", allow_none=True)
    return np.bitwise_xor(y.astype(np.int64), _flips(_flip_threshold(eps), y.shape, gen).astype(np.int64))


def _check_flip(rho: float, name: str) -> float:
    value = check_number(rho, name)
    if not (0.0 <= value < 0.5):
        raise ValueError(f"{name} must lie in [0, 1/2), got {rho}")
    return value


def debias_auc(noisy_auc: npt.ArrayLike, noisy_positives: npt.ArrayLike, noisy_negatives: npt.ArrayLike,
               flip_plus: float, flip_minus: float | None = None) -> np.ndarray:
    """Algorithm 3: the clean AUC from the noisy one, eq. (3)-(4) with the clean base rate ``pi'`` from App. P,
    eq. (11)-(12): from ``Pbar`` and ``Nbar``, the counts of flipped labels, and the flip probabilities ``rho+`` and
    ``rho-`` (default ``rho+``) in ``[0, 1/2)``; NaN where undefined.  Details: docs/fedauc.md.
    :raise ValueError: if a flip probability is outside ``[0, 1/2)``."""
    rho_plus = _check_flip(flip_plus, "flip_plus")
    rho_minus = rho_plus if flip_minus is None else _check_flip(flip_minus, "flip_minus")
    noisy = np.asarray(noisy_auc, dtype=np.float64)
    pbar = np.asarray(noisy_positives, dtype=np.float64)
    nbar = np.asarray(noisy_negatives, dtype=np.float64)
    clean_positives = (pbar * (1.0 - rho_minus) - nbar * rho_minus) / (1.0 - rho_plus - rho_minus)
    with np.errstate(divide="ignore", invalid="ignore"):
        base = clean_positives / (pbar + nbar)
        a = (1.0 - base) * rho_minus / (base * (1.0 - rho_plus) + (1.0 - base) * rho_minus)
        b = base * rho_plus / (base * rho_plus + (1.0 - base) * (1.0 - rho_minus))
        return (noisy - (a + b) / 2.0) / (1.0 - a - b)


def rr_server_auc(rank_sum: np.ndarray, pbar: np.ndarray, samples: int, rho: float, *, debias: bool) -> np.ndarray:
    """The server's side of Algorithm 2 (and Algorithm 3 if ``debias``): eq. (1) on the noisy ``globalSum`` and
    ``Pbar`` of ``M`` ``samples``, debiased with the flip probability ``rho``; NaN where undefined."""
    noisy = server_auc(rank_sum, pbar, samples)
    return debias_auc(noisy, pbar, samples - pbar, rho) if debias else noisy


def aggregate_reports(released: dict[str, np.ndarray], *, samples: int, sizes: np.ndarray, twice_total: np.ndarray,
                      positives: float = math.nan) -> np.ndarray:
    """The server's side of Algorithm 4 (lines 36-39) and §5.3: eq. (1) per run from the clients' released reports
    (:func:`noisy_client_reports`, ``(runs, K)`` each), the public client ``sizes`` and twice their rank totals;
    ``positives`` (the accurate ``P``) where no count is released.  NaN where undefined."""
    if "orthogonal" in released:  # localSum'_k = rbar_k localP'_k + <v', y>' = (T_k localP'_k + D'_k) / (2 n_k)
        local_p = released["count"]
        local_sum = (twice_total[None, :] * local_p + released["orthogonal"]) / (2.0 * sizes[None, :])
        return server_auc(local_sum.sum(axis=1), local_p.sum(axis=1), samples)
    sums = released["sum"].sum(axis=1) / 2.0
    pbar = released["count"].sum(axis=1) if "count" in released else np.full(sums.size, float(positives))
    return server_auc(sums, pbar, samples)


def adaptive_count_fraction(mean_rank: npt.ArrayLike, spread: npt.ArrayLike, *,
                            mechanism: str = "laplace") -> np.ndarray:
    """§5.3: each client's ``beta`` in ``(0, 1]``, the share of its budget spent on ``localP'`` (the rest on
    ``<v', y>``), from ``rbar`` and ``||v'||_inf`` per client and the ``laplace`` or ``gaussian`` mechanism.
    Details: docs/fedauc.md.
    :raise ValueError: on negative inputs or an unknown mechanism."""
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


def discrete_laplace_noise(log_alpha: npt.ArrayLike, runs: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """``(runs, K)`` discrete Laplace draws, ``pmf ∝ alpha_k^|z|``, ``log_alpha`` ``= -epsilon_k / sensitivity_k < 0``
    per client (``rng`` ``None``: the OS).  Details: docs/fedauc.md.
    :raise ValueError: if a ``log_alpha`` is not negative or ``runs < 1``."""
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
    """The zCDP budget ``rho_z > 0`` whose conversion is exactly ``(epsilon, delta)``-DP. Details: docs/fedauc.md.
    :raise ValueError: if epsilon is not positive or delta not in ``(0, 1)``."""
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



def noisy_client_reports(parts: dict[str, ClientRelease], *, budget: float, gaussian: bool, runs: int,
                         rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every client's released integer reports (:func:`client_releases`), ``runs`` times: value plus discrete
    Laplace (``budget`` epsilon) or discrete Gaussian (``budget`` the zCDP ``rho``) noise from ``rng``; ``{report name:
    int64 array (runs, K)}``.  Details: docs/fedauc.md."""
    parameters = {name: noise_parameter(c, budget, gaussian) for name, c in parts.items()}
    draw = _gaussian_noise if gaussian else discrete_laplace_noise
    return {name: c.value[None, :] + draw(parameters[name], runs, rng) for name, c in parts.items()}


def client_releases(stats: LocalStatistics, *, method: str, samples: int, sum_fraction: float = 0.5,
                    counts: str = "noisy") -> dict[str, ClientRelease]:
    """The integer releases of every client (Sun et al. Algorithm 4, App. N, §5.3) from
    :func:`dp.fedauc.ranks.local_statistics`, for a Laplace or Gaussian ``method`` over ``M`` ``samples``
    (``sum_fraction``: as :class:`dp.fedauc.Query`).  Details: docs/fedauc.md."""
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


