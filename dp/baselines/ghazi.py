"""Ghazi et al.'s non-interactive local-DP protocol for degree-2 U-statistics (simulated baseline).

Ghazi, Kamath, Kumar, Manurangsi & Sealfon (NeurIPS 2023/2024) as described by Sinh & Ramon: §1.1,
App. D.1.3 (MSE), App. D.2 (costs), Table 1.  **Simulation only**: continuous Laplace noise, never a release of
this suite.  The deviations from the paper (SVD factors, Laplace reports), estimator, variance, MSE: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dp.bell.generic import check_kernel_matrix, quantized_ustatistic
from dp.bell.quantize import KernelFunction, Quantizer, kernel_matrix
from dp.validation import check_epsilon, check_instance, check_positive_int
from secure.noise.party import noise_generator

__all__ = ["FactorShape", "Factorization", "factorize", "laplace_scales", "randomize", "estimate", "variance",
           "sample_ustatistic", "mse", "simulate"]

_CHUNK_ELEMENTS = 1 << 22  # noise draws per block of vectorized simulation (bounds memory)


def _check_bins(bins: npt.ArrayLike, t: int) -> np.ndarray:
    b = np.asarray(bins)
    if b.dtype.kind not in "iu":
        raise TypeError(f"bins must be integer bin indices, got dtype {b.dtype}")
    if b.ndim < 1 or b.shape[-1] < 2:
        raise ValueError(f"at least 2 parties are needed, got shape {b.shape}")
    if b.min() < 0 or b.max() >= t:
        raise ValueError(f"bins must lie in [0, {t - 1}], got range [{b.min()}, {b.max()}]")
    return b.astype(np.int64)


class FactorShape:
    """``d`` and ``t`` of a pair of factors ``L``, ``R`` of shape ``(d, t)`` (real or fixed point)."""

    left: np.ndarray

    @property
    def d(self) -> int:  # rows of L and R: the dimension of each report
        return int(self.left.shape[0])

    @property
    def bins(self) -> int:  # t
        return int(self.left.shape[1])


@dataclass(frozen=True)
class Factorization(FactorShape):
    """A balanced rank-``d`` factorization ``A ~ L^T R`` (docs/ldp.md): ``left`` ``L`` and ``right`` ``R`` of shape
    ``(d, t)``, all ``singular_values`` of ``A`` (decreasing) and its numerical ``rank``."""

    left: np.ndarray
    right: np.ndarray
    singular_values: np.ndarray
    rank: int

    @property
    def matrix(self) -> np.ndarray:
        """The approximation ``L^T R`` (``t x t``); equal to ``A`` up to rounding when ``d = rank``."""
        return self.left.T @ self.right

    @property
    def sensitivity_left(self) -> float:  # Delta_L = max_{x, x'} ||L e_x - L e_x'||_1, of the left report
        return _l1_sensitivity(self.left)

    @property
    def sensitivity_right(self) -> float:  # Delta_R, likewise of the right report
        return _l1_sensitivity(self.right)


def _l1_sensitivity(m: np.ndarray) -> float:
    cols = m.T  # (t, d)
    t, d = cols.shape
    best = 0.0
    rows = max(1, _CHUNK_ELEMENTS // max(t * d, 1))
    for start in range(0, t, rows):
        diff = np.abs(cols[start:start + rows, None, :] - cols[None, :, :]).sum(axis=-1)
        best = max(best, float(diff.max()))
    return best


def factorize(matrix: npt.ArrayLike, *, d: int | None = None) -> Factorization:
    """Balanced truncated-SVD factorization ``A ~ L^T R`` of the finite ``t x t`` kernel ``matrix``, ``L, R`` of shape
    ``(d, t)``; ``d=None`` means the numerical rank of ``A`` (exact), values above the rank are reduced to it.
    ValueError on a non-square or non-finite matrix, ``d < 1`` or a zero matrix."""
    a = check_kernel_matrix(matrix)
    if d is not None:
        d = check_positive_int(d, "d")
    u, s, vt = np.linalg.svd(a)
    tol = s[0] * max(a.shape) * np.finfo(np.float64).eps  # A has at least 2 bins (check_kernel_matrix)
    rank = int(np.sum(s > tol))
    if rank == 0:
        raise ValueError("matrix must not be zero")
    rows = rank if d is None else min(d, rank)
    root = np.sqrt(s[:rows])
    left = root[:, None] * u[:, :rows].T
    right = root[:, None] * vt[:rows]
    norm_left = np.linalg.norm(left, axis=0).max()
    norm_right = np.linalg.norm(right, axis=0).max()
    c = math.sqrt(norm_right / norm_left)
    return Factorization(left=left * c, right=right / c, singular_values=s, rank=rank)


def laplace_scales(factorization: Factorization, *, epsilon: float) -> tuple[float, float]:
    """Laplace scales ``(b_L, b_R) = (2 Delta_L / eps, 2 Delta_R / eps)``: epsilon/2 per report (ValueError: bad
    epsilon)."""
    epsilon = check_epsilon(epsilon)
    check_instance(factorization, Factorization, "factorization")
    return 2.0 * factorization.sensitivity_left / epsilon, 2.0 * factorization.sensitivity_right / epsilon


def randomize(bins: npt.ArrayLike, factorization: Factorization, *, epsilon: float,
              rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The reports ``o^L = L e_x + z^L`` and ``o^R = R e_x + z^R`` of parties holding integer ``bins`` (shape ``(n,)``
    or ``(runs, n)``): each epsilon/2-LDP by the Laplace mechanism, the pair epsilon-LDP per party; ``rng=None`` draws
    from the OS.  Each report has shape ``bins.shape + (d,)``.  :raise ValueError: on invalid parameters."""
    b_left, b_right = laplace_scales(factorization, epsilon=epsilon)
    x = _check_bins(bins, factorization.bins)
    gen = noise_generator(rng)
    o_left, o_right = (factor.T[x] + gen.laplace(0.0, scale, size=x.shape + (factorization.d,))
                       for factor, scale in ((factorization.left, b_left), (factorization.right, b_right)))
    return o_left, o_right


def estimate(reports_left: npt.ArrayLike, reports_right: npt.ArrayLike) -> float | np.ndarray:
    """Unbiased estimate ``(n^2 <o_bar^L, o_bar^R> - sum_i <o^L_i, o^R_i>) / (n (n - 1))`` from reports of shape
    ``(n, d)`` (a float) or ``(runs, n, d)`` (one per run).
    :raise ValueError: on mismatched shapes, ``n < 2`` or non-finite reports."""
    left = np.asarray(reports_left, dtype=np.float64)
    right = np.asarray(reports_right, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"reports must have equal shapes, got {left.shape} and {right.shape}")
    if left.ndim < 2 or left.shape[-2] < 2:
        raise ValueError(f"reports must have shape (n, d) or (runs, n, d) with n >= 2, got {left.shape}")
    if not (np.all(np.isfinite(left)) and np.all(np.isfinite(right))):
        raise ValueError("reports must be finite")
    n = left.shape[-2]
    cross = np.einsum("...d,...d->...", left.sum(axis=-2), right.sum(axis=-2))
    diagonal = np.einsum("...nd,...nd->...", left, right)
    out = (cross - diagonal) / (n * (n - 1.0))
    return float(out) if out.ndim == 0 else out


def variance(bins: npt.ArrayLike, factorization: Factorization, *, epsilon: float) -> float:
    """Exact variance of :func:`estimate` over the Laplace noise, given the parties' integer ``bins`` (``(n,)``, ``n >=
    2``); ValueError on invalid parameters."""
    b_left, b_right = laplace_scales(factorization, epsilon=epsilon)
    x = _check_bins(bins, factorization.bins)
    if x.ndim != 1:
        raise ValueError(f"bins must have shape (n,), got {x.shape}")
    n = x.size
    s_left, s_right = 2.0 * b_left ** 2, 2.0 * b_right ** 2
    u, v = factorization.left.T[x], factorization.right.T[x]
    linear_left = s_left * np.sum((v.sum(axis=0) - v) ** 2)
    linear_right = s_right * np.sum((u.sum(axis=0) - u) ** 2)
    bilinear = n * (n - 1.0) * factorization.d * s_left * s_right
    return float((linear_left + linear_right + bilinear) / (n * (n - 1.0)) ** 2)


def sample_ustatistic(values: npt.ArrayLike, kernel: KernelFunction, quantizer: Quantizer) -> float:
    """The raw sample U-statistic ``(1/(n(n-1))) sum_{i != j} f(x_i, x_j)`` (values clipped to the domain), ``O(n^2)``
    kernel evaluations.  :raise ValueError: on fewer than 2 values or invalid values."""
    x = check_instance(quantizer, Quantizer, "quantizer").prepare(values)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    total = 0.0
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n, rows):
        block = x[start:start + rows]
        r = block.shape[0]
        xs = np.repeat(block, n, axis=0)
        ys = np.tile(x, (r, 1))
        if quantizer.dimension == 1:
            xs, ys = xs[:, 0], ys[:, 0]
        vals = np.broadcast_to(np.asarray(kernel(xs, ys), dtype=np.float64), (r * n,)).reshape(r, n)
        idx = np.arange(r)
        total += float(vals.sum() - vals[idx, start + idx].sum())
    return total / (n * (n - 1.0))


def mse(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
        d: int | None = None, kind: str = "midpoint") -> dict[str, float]:
    """Exact MSE of :func:`simulate` against the raw sample U-statistic (simple rounding only, else ValueError):
    ``{"discretization": (U_f - U_A)^2, "factorization": (U_A - U_{A_d})^2, "noise": Var(U_hat), "total": sum}``."""
    check_instance(quantizer, Quantizer, "quantizer")
    epsilon = check_epsilon(epsilon)
    if quantizer.is_random:
        raise ValueError("mse supports simple rounding only")
    a = kernel_matrix(kernel, quantizer, kind=kind)
    fact = factorize(a, d=d)
    bins = quantizer.quantize(values)
    u_f = sample_ustatistic(values, kernel, quantizer)
    u_a = quantized_ustatistic(values, quantizer, a)
    u_d = quantized_ustatistic(values, quantizer, fact.matrix)
    parts = {"discretization": (u_f - u_a) ** 2, "factorization": (u_a - u_d) ** 2,
             "noise": variance(bins, fact, epsilon=epsilon)}
    parts["total"] = sum(parts.values())
    return parts


def simulate(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
             d: int | None = None, runs: int = 1, kind: str = "midpoint",
             rng: np.random.Generator | None = None) -> np.ndarray:
    """The protocol end to end, ``runs`` times on fixed values: quantize, factorize, randomize, estimate; a float64
    array of ``runs`` estimates (parameters: docs/ldp.md).  :raise ValueError: on invalid parameters."""
    check_instance(quantizer, Quantizer, "quantizer")
    epsilon = check_epsilon(epsilon)
    runs = check_positive_int(runs, "runs")
    gen = noise_generator(rng)
    fact = factorize(kernel_matrix(kernel, quantizer, kind=kind), d=d)
    n = quantizer.prepare(values).shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    fixed = None if quantizer.is_random else quantizer.quantize(values)
    out = np.empty(runs)
    block = max(1, _CHUNK_ELEMENTS // (n * fact.d))
    for start in range(0, runs, block):
        count = min(block, runs - start)
        if fixed is None:
            bins = np.stack([quantizer.quantize(values, rng=gen) for _ in range(count)])
        else:
            bins = np.broadcast_to(fixed, (count, n))
        o_left, o_right = randomize(bins, fact, epsilon=epsilon, rng=gen)
        out[start:start + count] = estimate(o_left, o_right)
    return out
