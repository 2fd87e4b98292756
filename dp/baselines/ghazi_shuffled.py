"""GhaziSM: Ghazi et al.'s factorization protocol in the shuffled model (simulated baseline).

Sinh & Ramon (federated U-statistics with MPC), §5 ("GhaziSM: the non-interactive protocol from
(Ghazi et al., 2024) in the shuffled model, with r servers to shuffle/anonymize messages, following
the implementation of (Balle et al., 2020, Sect. 5)"), §1.1 (MSE ``O(rho^2 log t / (eps^2 n^2))``),
Table 1 (MSE ``1/t^2 + t^2 log t / (eps^2 n^2)``), App. B (Balle et al.'s distributed discrete
Laplace noise: Pólya differences), App. D.2 (costs; modelled in :mod:`dp.umpc.costs`).

Protocol (as simulated here)
----------------------------
1. Quantize and factorize exactly as :mod:`dp.baselines.ghazi` (``t`` bins, kernel matrix ``A``,
   balanced truncated SVD ``A ~ L^T R`` with ``L, R`` of shape ``d x t``; exact when ``d = rank(A)``).
2. Fixed point: the public factors are rounded to integers ``L_q = round(2^p L)``,
   ``R_q = round(2^p R)`` (``p = precision`` fractional bits); party ``i`` with bin ``x_i`` holds the
   integer vectors ``u_i = L_q e_{x_i}`` and ``v_i = R_q e_{x_i}``.
3. Noise (Balle et al. 2020; Sinh & Ramon App. B): each party adds to every coordinate its own share
   ``Polya(1/n, alpha) - Polya(1/n, alpha)``; the ``n`` shares sum to ``DLap(alpha)`` exactly.  The
   sum ``sum_i u_i`` has replace-one l1-sensitivity ``Delta_L = max_{x, x'} ||L_q e_x - L_q e_x'||_1``,
   so ``alpha_L = exp(-(epsilon/2) / Delta_L)`` makes the noisy sum ``epsilon/2``-DP; likewise for
   ``R`` -- ``epsilon``-DP for the pair of sums (basic composition, pure DP as U-MPC and Ghazi here).
4. Shuffled summation: each party splits each noisy coordinate into ``r`` additive shares modulo
   ``q`` and sends one to each of the ``r`` shufflers, which forward the shares of all parties in a
   random order; the aggregator adds everything modulo ``q`` and obtains only the noisy sums
   ``S_L = sum_i u_i + Z_L`` and ``S_R = sum_i v_i + Z_R`` (:func:`shuffled_sum`).
5. Estimate: ``U_hat = (<S_L, S_R> - n c) / (n (n - 1) 4^p)`` where ``c`` is the (constant) diagonal
   of ``A``: ``<S_L, S_R>`` without noise is ``sum_{i, j} <u_i, v_j>``, whose ``n`` terms ``i = j`` are
   ``A[x_i, x_i] 4^p`` (up to the rounding of step 2).  The aggregator no longer sees individual
   reports, so the diagonal correction of :func:`dp.baselines.ghazi.estimate` is not available; a
   kernel whose matrix has a constant diagonal (Gini ``|x - y|``: ``w/3`` on equal bins with
   ``A^Avg``, 0 with the midpoint matrix; Kendall; duplicate pairs) needs none.  Other kernels are
   refused (the paper's plain ``<o_bar^L, o_bar^R>`` would be biased by ``O(1/n)``).

Exact mean and variance
-----------------------
With ``U = sum_i u_i``, ``V = sum_i v_i`` (integers) and ``s_L^2 = 2 alpha_L / (1 - alpha_L)^2``
(the variance of ``DLap(alpha_L)``), ``T = <U + Z_L, V + Z_R>`` has mean ``<U, V>`` and variance

    Var(T) = s_L^2 ||V||^2 + s_R^2 ||U||^2 + d s_L^2 s_R^2,

so ``E[U_hat] = (<U, V> - n c 4^p) / (n (n - 1) 4^p)`` and
``Var(U_hat) = Var(T) / (n (n - 1) 4^p)^2`` (:func:`expected_estimate`, :func:`variance`).  The leading
term is ``O(gamma_2^2 / (eps^2 n^2))``: ``n`` times below Ghazi's local noise, the shape of Table 1.

Simulation shortcut.  The ``n`` per-party shares of a coordinate sum to ``DLap(alpha)`` exactly
(an identity of distributions), and the shuffled summation returns that sum exactly; so
:func:`simulate` draws the total noise as ``DLap(alpha)`` (one Pólya difference of shape 1), and
:func:`run_protocol` runs every step with per-party shares and ``r`` shufflers for small ``n`` (the
tests hold the two equal in distribution and the summation exact).

Threat model (of the shuffled model, not of this suite): the aggregator and up to all but one
shuffler are honest-but-curious and do not collude with the remaining shuffler; every party adds its
noise share honestly (shape ``1/n``: a coalition of parties that omits its shares lowers the noise;
calibrating to ``n - t`` honest parties would use shape ``1/(n - t)``).  Balle et al. show that
``r = O(log n + kappa)`` messages per party suffice for the sum to reveal nothing more (statistical
security ``kappa``).  **Simulation only**: the noise comes from a :class:`numpy.random.Generator`
argument (OS randomness by default); nothing here is a release of this suite.

Deviations from the paper: the SVD factorization of :mod:`dp.baselines.ghazi` replaces the JL
projection (so ``d <= rank(A)`` instead of ``d = eps^2 n log t``); Laplace-type (l1) noise instead
of Blasiok et al.'s randomizer, as in :mod:`dp.baselines.ghazi`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dp.baselines.ghazi import Factorization, factorize
from dp.bell.quantize import KernelFunction, Quantizer, kernel_matrix
from dp.validation import check_epsilon, check_int_at_least, check_positive_int
from secure.noise.party import noise_generator, polya_difference

__all__ = ["ShuffledFactorization", "prepare", "noise_log_alphas", "noise_variances", "party_vectors",
           "shuffled_sum", "estimate", "expected_estimate", "variance", "run_protocol", "simulate",
           "DEFAULT_PRECISION", "DEFAULT_SHUFFLERS"]

#: fractional bits of the fixed-point factors (as U-MPC's default precision in the Gini comparison)
DEFAULT_PRECISION = 16
#: shufflers r in :func:`run_protocol` (Balle et al.: O(log n + kappa))
DEFAULT_SHUFFLERS = 3
_MAX_PRECISION = 24
_DIAGONAL_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ShuffledFactorization:
    """The public parameters of GhaziSM: integer factors, their sensitivities, the diagonal constant.

    :ivar factorization: the real factorization ``A ~ L^T R`` (:func:`dp.baselines.ghazi.factorize`).
    :ivar left: ``L_q = round(2^p L)``, int64, shape ``(d, t)``.
    :ivar right: ``R_q = round(2^p R)``, int64, shape ``(d, t)``.
    :ivar precision: ``p``.
    :ivar diagonal: ``c``, the constant diagonal of ``A``.
    """

    factorization: Factorization
    left: np.ndarray
    right: np.ndarray
    precision: int
    diagonal: float

    @property
    def d(self) -> int:
        """Dimension of each vector."""
        return int(self.left.shape[0])

    @property
    def bins(self) -> int:
        """Number of bins ``t``."""
        return int(self.left.shape[1])

    @property
    def scale(self) -> float:
        """``2^p``."""
        return float(2 ** self.precision)

    @property
    def sensitivity_left(self) -> int:
        """``Delta_L = max_{x, x'} ||L_q e_x - L_q e_x'||_1`` (integer)."""
        return _l1_sensitivity(self.left)

    @property
    def sensitivity_right(self) -> int:
        """``Delta_R = max_{x, x'} ||R_q e_x - R_q e_x'||_1`` (integer)."""
        return _l1_sensitivity(self.right)


def _l1_sensitivity(matrix: np.ndarray) -> int:
    columns = matrix.T.astype(np.int64)
    best = 0
    for start in range(0, columns.shape[0], 64):
        block = np.abs(columns[start:start + 64, None, :] - columns[None, :, :]).sum(axis=-1)
        best = max(best, int(block.max()))
    return max(best, 1)


def prepare(kernel: KernelFunction, quantizer: Quantizer, *, kind: str = "average", d: int | None = None,
            precision: int = DEFAULT_PRECISION) -> ShuffledFactorization:
    """The public GhaziSM parameters for ``kernel`` on ``quantizer``'s bins.

    :param kind: kernel matrix kind (:func:`dp.bell.quantize.kernel_matrix`).
    :param d: rows of the factorization (``None``: the rank, exact).
    :param precision: fractional bits ``p`` of the integer factors, in ``[0, 24]``.
    :raise ValueError: on invalid parameters or a kernel matrix whose diagonal is not constant.
    """
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
    scale = float(2 ** precision)
    left = np.rint(fact.left * scale).astype(np.int64)
    right = np.rint(fact.right * scale).astype(np.int64)
    return ShuffledFactorization(factorization=fact, left=left, right=right, precision=precision,
                                 diagonal=float(diagonal.mean()))


def noise_log_alphas(params: ShuffledFactorization, *, epsilon: float) -> tuple[float, float]:
    """``(log alpha_L, log alpha_R) = (-(eps/2)/Delta_L, -(eps/2)/Delta_R)``: ``epsilon/2`` per noisy sum."""
    epsilon = check_epsilon(epsilon)
    return -0.5 * epsilon / params.sensitivity_left, -0.5 * epsilon / params.sensitivity_right


def _dlap_variance(log_alpha: float) -> float:
    alpha = math.exp(log_alpha)
    return 2.0 * alpha / math.expm1(log_alpha) ** 2


def noise_variances(params: ShuffledFactorization, *, epsilon: float) -> tuple[float, float]:
    """Per-coordinate variances ``(s_L^2, s_R^2)`` of the total noise ``DLap(alpha)`` (integer units)."""
    left, right = noise_log_alphas(params, epsilon=epsilon)
    return _dlap_variance(left), _dlap_variance(right)


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
    """Balle et al.'s shuffled summation of the parties' integer vectors, shape ``(n, d)`` -> ``(d,)``.

    Each party splits each coordinate into ``shufflers`` additive shares modulo ``modulus`` (all but
    one uniform), each shuffler permutes the messages it receives, and the aggregator adds all
    messages modulo ``modulus`` and maps the result to ``(-modulus/2, modulus/2]``.  Exact whenever
    every coordinate sum lies in that range.

    :raise ValueError: on invalid parameters.
    """
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
    """``U_hat = (<S_L, S_R> - n c 4^p) / (n (n - 1) 4^p)`` from the two noisy integer sums.

    Also accepts stacks of sums, shape ``(runs, d)``: then one estimate per run (an array).
    """
    n = check_int_at_least(n, "n", 2)
    left = np.asarray(sum_left, dtype=np.float64)
    right = np.asarray(sum_right, dtype=np.float64)
    scale2 = params.scale ** 2
    inner = np.einsum("...d,...d->...", left, right)
    out = (inner - n * params.diagonal * scale2) / (n * (n - 1.0) * scale2)
    return float(out) if np.ndim(out) == 0 else out


def expected_estimate(bins: npt.ArrayLike, params: ShuffledFactorization) -> float:
    """``E[U_hat]`` given the bins (the noise has mean 0 and the two noises are independent)."""
    u, v = party_vectors(bins, params)
    total_u, total_v = u.sum(axis=0), v.sum(axis=0)
    return estimate(total_u, total_v, n=u.shape[0], params=params)


def variance(bins: npt.ArrayLike, params: ShuffledFactorization, *, epsilon: float) -> float:
    """Exact ``Var(U_hat)`` over the noise given the bins (module docstring)."""
    u, v = party_vectors(bins, params)
    n = u.shape[0]
    s_left, s_right = noise_variances(params, epsilon=epsilon)
    total_u = u.sum(axis=0).astype(np.float64)
    total_v = v.sum(axis=0).astype(np.float64)
    var_t = s_left * float(total_v @ total_v) + s_right * float(total_u @ total_u) + params.d * s_left * s_right
    return var_t / (n * (n - 1.0) * params.scale ** 2) ** 2


def run_protocol(bins: npt.ArrayLike, params: ShuffledFactorization, *, epsilon: float,
                 shufflers: int = DEFAULT_SHUFFLERS, rng: np.random.Generator | None = None) -> float:
    """One run with every step explicit: per-party Pólya shares, ``r`` shufflers, aggregation, estimate.

    ``O(n d r)`` work; for checks on small ``n`` (:func:`simulate` for Monte Carlo).
    """
    u, v = party_vectors(bins, params)
    n = u.shape[0]
    gen = noise_generator(rng)
    log_left, log_right = noise_log_alphas(params, epsilon=epsilon)
    noisy_u = u + np.asarray(polya_difference(1.0 / n, size=u.size, rng=gen, log_alpha=log_left)).reshape(u.shape)
    noisy_v = v + np.asarray(polya_difference(1.0 / n, size=v.size, rng=gen, log_alpha=log_right)).reshape(v.shape)
    bound = int(max(np.abs(noisy_u).sum(axis=0).max(), np.abs(noisy_v).sum(axis=0).max()))
    modulus = 1 << max(8, (4 * bound + 1).bit_length())
    sum_left = shuffled_sum(noisy_u, shufflers=shufflers, modulus=modulus, rng=gen)
    sum_right = shuffled_sum(noisy_v, shufflers=shufflers, modulus=modulus, rng=gen)
    return float(estimate(sum_left, sum_right, n=n, params=params))


def simulate(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
             d: int | None = None, runs: int = 1, kind: str = "average", precision: int = DEFAULT_PRECISION,
             rng: np.random.Generator | None = None) -> np.ndarray:
    """GhaziSM end to end, ``runs`` times on fixed values (simple rounding): the total noise of each
    coordinate drawn as ``DLap(alpha)`` (module docstring, "Simulation shortcut").

    :return: float64 array of ``runs`` estimates.
    :raise ValueError: on invalid parameters, randomized rounding or a non-constant diagonal.
    """
    epsilon = check_epsilon(epsilon)
    runs = check_positive_int(runs, "runs")
    if quantizer.is_random:
        raise ValueError("GhaziSM's simulation supports simple rounding only")
    params = prepare(kernel, quantizer, kind=kind, d=d, precision=precision)
    u, v = party_vectors(quantizer.quantize(values), params)
    n = u.shape[0]
    gen = noise_generator(rng)
    log_left, log_right = noise_log_alphas(params, epsilon=epsilon)
    size = runs * params.d
    z_left = np.asarray(polya_difference(1.0, size=size, rng=gen, log_alpha=log_left)).reshape(runs, params.d)
    z_right = np.asarray(polya_difference(1.0, size=size, rng=gen, log_alpha=log_right)).reshape(runs, params.d)
    out = estimate(u.sum(axis=0) + z_left, v.sum(axis=0) + z_right, n=n, params=params)
    return np.atleast_1d(np.asarray(out, dtype=np.float64))
