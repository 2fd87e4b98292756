"""Generic local-DP protocol for degree-2 U-statistics: quantize, k-ary randomized response, debias.

Bell, Bellet, Gascón & Kulkarni, §3 and Algorithm 1; App. A.1 (estimator, Lemma 1, Theorem 1), App. A.2.
Threat model: local DP; each user's report is epsilon-LDP against an untrusted server and colluding users;
randomness from the OS by default (:func:`secure.noise.party.os_generator`).
Estimator, variances (Lemma 1, Theorem 1, given the sample), Rényi-2 entropy and the bias-variance
trade-off in ``k``: docs/ldp.md."""
from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from dp.bell.quantize import _CHUNK_ELEMENTS, MATRIX_KINDS, KernelFunction, Quantizer, _check_bins, kernel_matrix
from dp.validation import check_choice, check_epsilon, check_instance, check_positive, check_positive_int
from secure.noise.party import noise_generator

__all__ = ["check_kernel_matrix", "rr_beta", "rr_channel", "randomize", "histogram", "estimate_from_histogram",
           "quantized_ustatistic", "lemma1_variance", "theorem1_variance_bound",
           "conditional_variance", "simulate_histograms", "simulate", "renyi2_entropy_from_histogram"]


def check_kernel_matrix(matrix: npt.ArrayLike, bins: int | None = None) -> np.ndarray:
    """A finite square kernel matrix with at least 2 bins (``bins`` x ``bins`` if given), as float64."""
    a = np.asarray(matrix, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise ValueError(f"matrix must be square, got shape {a.shape}")
    if a.shape[0] < 2:
        raise ValueError(f"matrix must have at least 2 bins, got {a.shape[0]}")
    if bins is not None and a.shape[0] != bins:
        raise ValueError(f"matrix must be {bins} x {bins} for {bins} bins, got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("matrix entries must be finite")
    return a


def _check_counts(counts: npt.ArrayLike, bins: int) -> np.ndarray:
    raw = np.asarray(counts)
    if raw.ndim not in (1, 2) or raw.shape[-1] != bins:
        raise ValueError(f"counts must have shape ({bins},) or (runs, {bins}), got {raw.shape}")
    if raw.dtype.kind not in "iu":
        if raw.dtype.kind != "f" or not np.all(np.isfinite(raw)) or not np.all(raw == np.round(raw)):
            raise ValueError("counts must be integers")
    c = raw.astype(np.int64)
    if np.any(c < 0):
        raise ValueError(f"counts must be non-negative, got minimum {int(c.min())}")
    totals = c.sum(axis=-1)
    if np.any(totals < 2):
        raise ValueError(f"at least 2 reports are needed, got {int(np.min(totals))}")
    return c


def _check_reports(reports: npt.ArrayLike, bins: int) -> np.ndarray:
    r = np.asarray(reports)
    if r.dtype.kind not in "iu":
        raise TypeError(f"reports must be integer bin indices, got dtype {r.dtype}")
    r = r.astype(np.int64)
    if r.size and (r.min() < 0 or r.max() >= bins):
        raise ValueError(f"reports must lie in [0, {bins - 1}], got range [{r.min()}, {r.max()}]")
    return r


def _symmetric(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + a.T)


def rr_beta(*, bins: int, epsilon: float) -> float:
    """``beta = k / (k + e^epsilon - 1)``, the probability of answering uniformly (App. A.1), computed as
    ``k e^-eps / (k e^-eps + 1 - e^-eps)`` so that a large epsilon does not overflow."""
    k = _check_bins(bins)
    eps = check_epsilon(epsilon)
    shrink = math.exp(-eps)
    return k * shrink / (k * shrink - math.expm1(-eps))


def rr_channel(*, bins: int, epsilon: float) -> np.ndarray:
    """Exact channel ``Q[x, y] = P(report y | bin x) = beta/k + (1 - beta) [x = y]``."""
    beta = rr_beta(bins=bins, epsilon=epsilon)
    return np.full((bins, bins), beta / bins) + (1.0 - beta) * np.eye(bins)


def randomize(quantized: npt.ArrayLike, *, bins: int, epsilon: float,
              rng: np.random.Generator | None = None) -> np.ndarray:
    """k-ary randomized response on bin indices in ``[0, bins)`` (any shape), independently per entry: the true bin
    with probability ``1 - beta``, else a uniform one of the ``k >= 2`` bins; epsilon-LDP per report; ``rng`` ``None``:
    the OS (:func:`secure.noise.party.os_generator`); int64 reports of the same shape."""
    k = _check_bins(bins)
    beta = rr_beta(bins=k, epsilon=epsilon)
    x = _check_reports(quantized, k)
    gen = noise_generator(rng)
    uniform = gen.random(x.shape) < beta
    return np.where(uniform, gen.integers(0, k, size=x.shape), x)


def histogram(reports: npt.ArrayLike, *, bins: int) -> np.ndarray:
    """Counts of the reports per bin: shape ``(bins,)``, or ``(runs, bins)`` for ``(runs, n)`` reports."""
    k = _check_bins(bins)
    r = _check_reports(reports, k)
    if r.ndim == 1:
        return np.bincount(r, minlength=k)
    if r.ndim != 2:
        raise ValueError(f"reports must have shape (n,) or (runs, n), got {r.shape}")
    offsets = (np.arange(r.shape[0], dtype=np.int64) * k)[:, None]
    return np.bincount((r + offsets).ravel(), minlength=r.shape[0] * k).reshape(r.shape[0], k)


def estimate_from_histogram(counts: npt.ArrayLike, matrix: npt.ArrayLike, *,
                            epsilon: float) -> float | np.ndarray:
    """The unbiased estimate ``U_hat`` in ``O(k^2)`` from report counts of shape ``(k,)`` or ``(runs, k)`` (one
    estimate per row), the quantized kernel matrix ``A`` and the reports' epsilon.  Details: docs/ldp.md."""
    a = check_kernel_matrix(matrix)
    k = a.shape[0]
    c = _check_counts(counts, k)
    beta = rr_beta(bins=k, epsilon=epsilon)
    b = np.full(k, beta / k)
    ab, atb = a @ b, a.T @ b
    diagonal = np.diag(a) - ab - atb + b @ ab
    cf = c.astype(np.float64)
    n = cf.sum(axis=-1)
    s = cf - n[..., None] * b
    quadratic = np.einsum("...i,...i->...", s @ a.T, s)  # s^T A s
    result = (quadratic - cf @ diagonal) / (n * (n - 1.0) * (1.0 - beta) ** 2)
    return float(result) if result.ndim == 0 else result


def quantized_ustatistic(values: npt.ArrayLike, quantizer: Quantizer, matrix: npt.ArrayLike) -> float:
    """The value the protocol estimates without bias: the U-statistic of ``A`` on the quantized sample.
    Details: docs/ldp.md."""
    a = check_kernel_matrix(matrix, quantizer.bins)
    idx, w = quantizer.support(values)
    n = idx.shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    totals = np.bincount(idx.ravel(), weights=w.ravel(), minlength=quantizer.bins)
    self_terms = np.einsum("nr,nrs,ns->", w, a[idx[:, :, None], idx[:, None, :]], w)
    return float((totals @ a @ totals - self_terms) / (n * (n - 1.0)))


def _check_distribution(distribution: npt.ArrayLike, bins: int) -> np.ndarray:
    dist = np.asarray(distribution, dtype=np.float64)
    if dist.shape != (bins,):
        raise ValueError(f"distribution must have shape ({bins},), got {dist.shape}")
    if not np.all(np.isfinite(dist)) or np.any(dist < 0):
        raise ValueError("distribution must be non-negative and finite")
    total = float(dist.sum())
    if abs(total - 1.0) > 1e-9:
        raise ValueError(f"distribution must sum to 1, got {total}")
    return dist / total


def lemma1_variance(distribution: npt.ArrayLike, matrix: npt.ArrayLike, *, n: int, epsilon: float) -> float:
    """Exact variance of ``U_hat`` when the ``n >= 2`` bins are i.i.d. from ``distribution`` (length ``k``, sums to
    1), ``A`` symmetrized (Lemma 1, App. A.1).  Details: docs/ldp.md."""
    a = _symmetric(check_kernel_matrix(matrix))
    k = a.shape[0]
    dist = _check_distribution(distribution, k)
    users = check_positive_int(n, "n")
    if users < 2:
        raise ValueError(f"n must be at least 2, got {users}")
    beta = rr_beta(bins=k, epsilon=epsilon)
    keep = 1.0 - beta
    b = np.full(k, beta / k)
    q = keep * dist + b
    ad = a @ dist
    zeta1 = (q @ ad ** 2 - (q @ ad) ** 2) / keep ** 2
    rows = a - (a @ b)[None, :]  # row u: A (e_u - b)
    conditional = rows ** 2 @ q - (rows @ q) ** 2
    excess = float(q @ conditional) / keep ** 4
    pairs = users * (users - 1) / 2.0
    return float(((2 * users - 3) * zeta1 + excess) / pairs)


def theorem1_variance_bound(*, n: int, bins: int, epsilon: float, kernel_range: float = 1.0) -> float:
    """Theorem 1 (= Corollary 2, App. A.1): ``Var(U_hat) <= R^2 [1/(n(1-b)^2) + (1+b)^2/(2n(n-1)(1-b)^4)]``.
    Details: docs/ldp.md."""
    users = check_positive_int(n, "n")
    if users < 2:
        raise ValueError(f"n must be at least 2, got {users}")
    spread = check_positive(kernel_range, "kernel_range")
    beta = rr_beta(bins=bins, epsilon=epsilon)
    keep = 1.0 - beta
    return spread ** 2 * (1.0 / (users * keep ** 2) + (1.0 + beta) ** 2 / (2.0 * users * (users - 1) * keep ** 4))


def conditional_variance(values: npt.ArrayLike, quantizer: Quantizer, matrix: npt.ArrayLike, *,
                         epsilon: float) -> float:
    """Exact variance of ``U_hat`` given the sample (over rounding and response only). Details: docs/ldp.md."""
    a = _symmetric(check_kernel_matrix(matrix, quantizer.bins))
    k = a.shape[0]
    beta = rr_beta(bins=k, epsilon=epsilon)
    keep = 1.0 - beta
    idx, w = quantizer.support(values)
    n = idx.shape[0]
    if n < 2:
        raise ValueError(f"at least 2 values are needed, got {n}")
    keys = np.concatenate([idx.astype(np.float64), w], axis=1)
    unique, multiplicity = np.unique(keys, axis=0, return_counts=True)
    r = idx.shape[1]
    u_idx, u_w = unique[:, :r].astype(np.int64), unique[:, r:]
    mult = multiplicity.astype(np.float64)
    totals = np.bincount(idx.ravel(), weights=w.ravel(), minlength=k)  # S = sum_i P_i
    g_total = a @ totals
    a_squared = a * a
    linear = 0.0
    self_trace = 0.0
    report_mass = np.zeros(k)  # sum_i p_i
    outer = np.zeros((k, k))   # sum_i p_i p_i^T
    step = max(1, _CHUNK_ELEMENTS // k)
    for start in range(0, u_idx.shape[0], step):
        rows_idx, rows_w, rows_m = u_idx[start:start + step], u_w[start:start + step], mult[start:start + step]
        dense = np.zeros((rows_idx.shape[0], k))
        np.add.at(dense, (np.arange(rows_idx.shape[0])[:, None], rows_idx), rows_w)  # P_i
        p = keep * dense + beta / k
        g = g_total[None, :] - dense @ a
        linear += float(rows_m @ ((p * g * g).sum(axis=1) - (p * g).sum(axis=1) ** 2))
        ap = p @ a
        trace = (p @ a_squared * p).sum(axis=1) - 2.0 * (p * ap * ap).sum(axis=1) + (ap * p).sum(axis=1) ** 2
        self_trace += float(rows_m @ trace)
        report_mass += rows_m @ p
        outer += (p * rows_m[:, None]).T @ p
    sigma_total = np.diag(report_mass) - outer  # (1-beta)^2 * sum_i Sigma_i
    product = a @ sigma_total
    all_trace = float(np.sum(product * product.T))
    quadratic = 2.0 * (all_trace - self_trace) / keep ** 4
    return float((4.0 * linear / keep ** 2 + quadratic) / (n * (n - 1.0)) ** 2)


def simulate_histograms(values: npt.ArrayLike, *, quantizer: Quantizer, epsilon: float, runs: int = 1,
                        rng: np.random.Generator | None = None) -> np.ndarray:
    """Int64 histograms ``(runs, k)`` of the reports of ``runs`` independent executions of the user side on fixed
    values (one per user, clipped to the domain): every run redraws the randomized rounding (if any) and every user's
    randomized response (``rng`` ``None``: the OS)."""
    check_instance(quantizer, Quantizer, "quantizer")
    check_epsilon(epsilon)
    total_runs = check_positive_int(runs, "runs")
    x = quantizer.prepare(values)
    gen = noise_generator(rng)
    k, n = quantizer.bins, x.shape[0]
    out = np.empty((total_runs, k), dtype=np.int64)
    block = max(1, _CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, total_runs, block):
        count = min(block, total_runs - start)
        bins_drawn = quantizer._sample(x, count, gen)
        reports = randomize(bins_drawn, bins=k, epsilon=epsilon, rng=gen)
        out[start:start + count] = histogram(reports, bins=k)
    return out


def simulate(values: npt.ArrayLike, kernel: KernelFunction, *, quantizer: Quantizer, epsilon: float,
             kind: str = "average", runs: int | None = None, subdivisions: int | None = None,
             rng: np.random.Generator | None = None) -> float | np.ndarray:
    """Algorithm 1 end to end: quantize, randomize, histogram, estimate ``U_hat`` (one, a float, with ``runs=None``;
    else an array of ``runs``); parameters: docs/ldp.md."""
    check_epsilon(epsilon)
    check_choice(kind, MATRIX_KINDS, "kind")
    count = None if runs is None else check_positive_int(runs, "runs")
    if np.shape(values)[0] < 2:
        raise ValueError(f"at least 2 values are needed, got {np.shape(values)[0]}")
    a = kernel_matrix(kernel, quantizer, kind=kind, subdivisions=subdivisions)
    counts = simulate_histograms(values, quantizer=quantizer, epsilon=epsilon, runs=count or 1, rng=rng)
    estimates = np.asarray(estimate_from_histogram(counts, a, epsilon=epsilon))
    return float(estimates[0]) if count is None else estimates


def renyi2_entropy_from_histogram(counts: npt.ArrayLike, *, epsilon: float) -> float | np.ndarray:
    """``H_2 = -log`` of the unbiased estimate of ``sum_j p_j^2`` (the collision U-statistic, ``A = I``) from the
    reports' counts, clipped to ``[1/k, 1]`` first (eq. (5)). Details: docs/ldp.md."""
    c = np.asarray(counts)
    if c.ndim not in (1, 2):
        raise ValueError(f"counts must have shape (k,) or (runs, k), got {c.shape}")
    k = c.shape[-1]
    collision = np.asarray(estimate_from_histogram(c, np.eye(k), epsilon=epsilon))
    entropy = -np.log(np.clip(collision, 1.0 / k, 1.0))
    return float(entropy) if entropy.ndim == 0 else entropy
