"""GhaziSM: Ghazi et al.'s factorization protocol in the shuffled model (simulated baseline).

Sinh & Ramon §5 and §1.1, Table 1, App. B (Balle et al. 2020 distributed discrete Laplace), App. D.2.
Threat model of the shuffled model: honest-but-curious aggregator and shufflers, all but one may
collude; every party adds its shape ``1/n`` noise share.  **Simulation only.**
Protocol steps and exact mean and variance: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dp.baselines.ghazi import FactorShape, Factorization, factorize
from dp.baselines.ghazi import _l1_sensitivity as l1_sensitivity
from dp.bell.quantize import KernelFunction, Quantizer, kernel_matrix
from dp.validation import check_epsilon, check_int_at_least, check_positive_int
from secure.noise.party import noise_generator, polya_difference

__all__ = ["ShuffledFactorization", "prepare", "noise_log_alphas", "party_vectors", "shuffled_sum", "estimate",
           "expected_estimate", "variance", "run_protocol", "simulate", "DEFAULT_PRECISION", "DEFAULT_SHUFFLERS"]

#: fractional bits of the fixed-point factors (as U-MPC's default precision in the Gini comparison)
DEFAULT_PRECISION = 16
#: shufflers r in :func:`run_protocol` (Balle et al.: O(log n + kappa))
DEFAULT_SHUFFLERS = 3
_MAX_PRECISION = 24
_DIAGONAL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ShuffledFactorization(FactorShape):
    """The public parameters of GhaziSM: the real ``factorization`` (:func:`dp.baselines.ghazi.factorize`), the
    integer factors ``L_q = round(2^p L)``, ``R_q = round(2^p R)`` (int64, ``(d, t)``), ``precision`` ``p`` and the
    constant ``diagonal`` ``c`` of ``A``."""

    factorization: Factorization
    left: np.ndarray
    right: np.ndarray
    precision: int
    diagonal: float

    @property
    def sensitivity_left(self) -> int:
        """``Delta_L = max_{x, x'} ||L_q e_x - L_q e_x'||_1`` (integer, at least 1)."""
        return max(int(l1_sensitivity(self.left.astype(np.int64))), 1)

    @property
    def sensitivity_right(self) -> int:
        """``Delta_R = max_{x, x'} ||R_q e_x - R_q e_x'||_1`` (integer, at least 1)."""
        return max(int(l1_sensitivity(self.right.astype(np.int64))), 1)


def prepare(kernel: KernelFunction, quantizer: Quantizer, *, kind: str = "average", d: int | None = None,
            precision: int = DEFAULT_PRECISION) -> ShuffledFactorization:
    """The public GhaziSM parameters for ``kernel`` on ``quantizer``'s bins (``kind``: :func:`dp.bell.quantize.kernel_matrix`;
    ``d=None``: the rank, exact; ``precision``: ``p`` in ``[0, 24]`` fractional bits of the integer factors).
    :raise ValueError: on invalid parameters or a kernel matrix whose diagonal is not constant."""
    precision = check_int_at_least(precision, "precision", 0)
    if precision > _MAX_PRECISION:
        raise ValueError(f"precision must be at most {_MAX_PRECISION} bits, got {precision}")
    matrix = kernel_matrix(kernel, quantizer, kind=kind)
    diagonal = np.diag(matrix)
    spread = float(diagonal.max() - diagonal.min())
    if spread > _DIAGONAL_TOLERANCE * max(1.0, float(np.abs(matrix).max())):
        raise ValueError("GhaziSM's estimator needs a kernel matrix with a constant diagonal "
                         f"(the aggregator sees only sums), got a spread of {spread:.3g}")
    fact = factorize(matrix, d=d)
    left, right = (np.rint(factor * float(2 ** precision)).astype(np.int64) for factor in (fact.left, fact.right))
    return ShuffledFactorization(factorization=fact, left=left, right=right, precision=precision,
                                 diagonal=float(diagonal.mean()))


def noise_log_alphas(params: ShuffledFactorization, *, epsilon: float) -> tuple[float, float]:
    """``(log alpha_L, log alpha_R) = (-(eps/2)/Delta_L, -(eps/2)/Delta_R)``: ``epsilon/2`` per noisy sum."""
    epsilon = check_epsilon(epsilon)
    return -0.5 * epsilon / params.sensitivity_left, -0.5 * epsilon / params.sensitivity_right


def _check_bins(bins: npt.ArrayLike, t: int) -> np.ndarray:
    b = np.asarray(bins)
    if b.dtype.kind not in "iu" or b.ndim != 1:
        raise ValueError(f"bins must be a 1-D integer array, got dtype {b.dtype} and shape {b.shape}")
    if b.size < 2:
        raise ValueError(f"at least 2 parties are needed, got {b.size}")
    if b.min() < 0 or b.max() >= t:
        raise ValueError(f"bins must lie in [0, {t - 1}], got range [{b.min()}, {b.max()}]")
    return b.astype(np.int64)


def party_vectors(bins: npt.ArrayLike, params: ShuffledFactorization) -> tuple[np.ndarray, np.ndarray]:
    """Every party's integer vectors ``(u_i, v_i)``, each of shape ``(n, d)``."""
    x = _check_bins(bins, params.bins)
    return params.left.T[x], params.right.T[x]


def shuffled_sum(vectors: npt.ArrayLike, *, shufflers: int, modulus: int,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """Balle et al.'s shuffled summation of the parties' integer vectors, shape ``(n, d)`` -> ``(d,)`` (docs/ldp.md;
    ValueError on invalid parameters)."""
    shufflers = check_positive_int(shufflers, "shufflers")
    modulus = check_int_at_least(modulus, "modulus", 2)
    values = np.asarray(vectors, dtype=np.int64)
    if values.ndim != 2:
        raise ValueError(f"vectors must have shape (n, d), got {values.shape}")
    gen = noise_generator(rng)
    n, d = values.shape
    shares = gen.integers(0, modulus, size=(shufflers - 1, n, d), dtype=np.int64)
    last = np.mod(values - shares.sum(axis=0) % modulus, modulus)
    messages = np.concatenate([shares, last[None]], axis=0)          # (r, n, d)
    total = np.zeros(d, dtype=np.int64)
    for server in range(shufflers):
        shuffled = messages[server][gen.permutation(n)]                # the shuffler hides who sent what
        total = (total + shuffled.sum(axis=0) % modulus) % modulus
    return np.where(total > modulus // 2, total - modulus, total)


def estimate(sum_left: npt.ArrayLike, sum_right: npt.ArrayLike, *, n: int, params: ShuffledFactorization) -> float:
    """``U_hat = (<S_L, S_R> - n c 4^p) / (n (n - 1) 4^p)`` from the two noisy integer sums; stacks of sums, shape
    ``(runs, d)``, give one estimate per run (an array)."""
    n = check_int_at_least(n, "n", 2)
    left = np.asarray(sum_left, dtype=np.float64)
    right = np.asarray(sum_right, dtype=np.float64)
    scale2 = 4.0 ** params.precision  # (2^p)^2: both factors carry 2^p
    inner = np.einsum("...d,...d->...", left, right)
    out = (inner - n * params.diagonal * scale2) / (n * (n - 1.0) * scale2)
    return float(out) if np.ndim(out) == 0 else out


def expected_estimate(bins: npt.ArrayLike, params: ShuffledFactorization) -> float:
    """``E[U_hat]`` given the bins (the noise has mean 0 and the two noises are independent)."""
    u, v = party_vectors(bins, params)
    return estimate(u.sum(axis=0), v.sum(axis=0), n=u.shape[0], params=params)


def variance(bins: npt.ArrayLike, params: ShuffledFactorization, *, epsilon: float) -> float:
    """Exact ``Var(U_hat)`` over the noise given the bins (docs/ldp.md)."""
    u, v = party_vectors(bins, params)
    n = u.shape[0]
    # per-coordinate variances of the total noise DLap(alpha), integer units
    s_left, s_right = (2.0 * math.exp(log) / math.expm1(log) ** 2 for log in noise_log_alphas(params, epsilon=epsilon))
    total_u, total_v = u.sum(axis=0).astype(np.float64), v.sum(axis=0).astype(np.float64)
    var_t = s_left * float(total_v @ total_v) + s_right * float(total_u @ total_u) + params.d * s_left * s_right
    return var_t / (n * (n - 1.0) * 4.0 ** params.precision) ** 2  # (2^p)^2, as in estimate()


def run_protocol(bins: npt.ArrayLike, params: ShuffledFactorization, *, epsilon: float,
                 shufflers: int = DEFAULT_SHUFFLERS, rng: np.random.Generator | None = None) -> float:
    """One run with every step explicit: per-party Pólya shares, ``r`` shufflers, aggregation, estimate; ``O(n d r)``
    work, for checks on small ``n`` (:func:`simulate` for Monte Carlo)."""
    u, v = party_vectors(bins, params)
    n = u.shape[0]
    gen = noise_generator(rng)
    noisy = [x + np.asarray(polya_difference(1.0 / n, size=x.size, rng=gen, log_alpha=log)).reshape(x.shape)
             for x, log in zip((u, v), noise_log_alphas(params, epsilon=epsilon))]
    modulus = 1 << max(8, (4 * int(max(np.abs(x).sum(axis=0).max() for x in noisy)) + 1).bit_length())
    sum_left, sum_right = (shuffled_sum(x, shufflers=shufflers, modulus=modulus, rng=gen) for x in noisy)
    return float(estimate(sum_left, sum_right, n=n, params=params))


def simulate(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
             d: int | None = None, runs: int = 1, kind: str = "average", precision: int = DEFAULT_PRECISION,
             rng: np.random.Generator | None = None) -> np.ndarray:
    """GhaziSM end to end, ``runs`` times on fixed values (simple rounding): the total noise of each
    coordinate drawn as ``DLap(alpha)`` (docs/ldp.md, "Simulation shortcut"): float64 array of ``runs`` estimates.
    ValueError on invalid parameters, randomized rounding or a non-constant diagonal."""
    epsilon = check_epsilon(epsilon)
    runs = check_positive_int(runs, "runs")
    if quantizer.is_random:
        raise ValueError("GhaziSM's simulation supports simple rounding only")
    params = prepare(kernel, quantizer, kind=kind, d=d, precision=precision)
    u, v = party_vectors(quantizer.quantize(values), params)
    n = u.shape[0]
    gen = noise_generator(rng)
    z_left, z_right = (np.asarray(polya_difference(1.0, size=runs * params.d, rng=gen, log_alpha=log)).reshape(runs, -1)
                       for log in noise_log_alphas(params, epsilon=epsilon))
    out = estimate(u.sum(axis=0) + z_left, v.sum(axis=0) + z_right, n=n, params=params)
    return np.atleast_1d(np.asarray(out, dtype=np.float64))
