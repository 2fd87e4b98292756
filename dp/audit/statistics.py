"""The statistics the audit cases compute on a release, and the planning of audit sizes.

Each reduces a release to one scalar by post-processing.  Threat model: passive, static coalition of ``t < m/2``
parties; these functions draw no noise.  Derivations: docs/audit.md."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog

from dp.audit.engine import evaluation_trials, loss_lower_bounds
from dp.ecdf.grid import prefix_incidence
from dp.ecdf.analysis import interval_nodes
from dp.validation import check_delta, check_positive, check_positive_int

__all__ = ["privacy_loss_statistic", "laplace_weights", "tree_weights", "tree_log_likelihood",
           "tree_privacy_loss_statistic", "event_probabilities", "planned_lower_bound"]


def privacy_loss_statistic(released: np.ndarray, first: npt.ArrayLike, second: npt.ArrayLike,
                           log_alpha: npt.ArrayLike) -> np.ndarray:
    """The claimed privacy-loss statistic of independent discrete Laplace coordinates ``released`` ``(runs, k)``
    with noiseless values ``first`` on ``D`` and ``second`` on ``D'``: ``(runs,)`` float64 (docs/audit.md)."""
    x = np.asarray(released, dtype=np.float64)
    rates = -np.asarray(log_alpha, dtype=np.float64)
    c, c_prime = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return np.round((np.abs(x - c_prime) - np.abs(x - c)) @ rates, 9)


def laplace_weights(log_alpha: npt.ArrayLike, shift: npt.ArrayLike) -> np.ndarray:
    """Weights ``-log(alpha_j) sign(d_j)`` of the linear statistic of a discrete Laplace vector, 0 where ``d_j = 0``
    (``shift``: the change ``d_j`` of coordinate ``j`` from the first to the second dataset; docs/audit.md)."""
    return -np.asarray(log_alpha, dtype=np.float64) * np.sign(np.asarray(shift, dtype=np.float64))


def tree_weights(points: int, first: int, last: int) -> tuple[np.ndarray, float]:
    """The most sensitive linear statistic of the tree's ``N = points`` released counts for the 1-based interval
    ``[first, last]``: ``(w, value)``, ``w`` rounded to integers when the optimum is integral (docs/audit.md).
    :raise ValueError: on an invalid interval or if a programme fails."""
    interval_nodes(first, last, points)  # validates the interval
    transposed = prefix_incidence(points).toarray().astype(np.float64).T
    nodes = transposed.shape[0]
    indicator = np.zeros(points)
    indicator[first - 1:last] = 1.0
    best = linprog(-indicator, A_ub=np.vstack([transposed, -transposed]), b_ub=np.ones(2 * nodes),
                   bounds=[(None, None)] * points, method="highs")
    if not best.success:
        raise ValueError(f"the weight programme failed for [{first}, {last}] on {points} points: {best.message}")
    value = -float(best.fun)
    # variables (w, s): minimise sum s subject to -s <= A^T w <= s, s <= 1, shift >= value
    identity = np.eye(nodes)
    sparse = linprog(np.concatenate([np.zeros(points), np.ones(nodes)]),
                     A_ub=np.vstack([np.hstack([transposed, -identity]), np.hstack([-transposed, -identity]),
                                     np.concatenate([-indicator, np.zeros(nodes)])[None, :]]),
                     b_ub=np.concatenate([np.zeros(2 * nodes), [-value + 1e-9]]),
                     bounds=[(None, None)] * points + [(0.0, 1.0)] * nodes, method="highs")
    weights = np.asarray(sparse.x[:points] if sparse.success else best.x, dtype=np.float64)
    rounded = np.rint(weights)
    if np.allclose(weights, rounded, atol=1e-7):
        weights = rounded
    return weights, float(indicator @ weights)


def tree_log_likelihood(noise: npt.ArrayLike, log_alpha: float, *, window: int) -> np.ndarray:
    """``log sum_{eta : A eta = z} prod_v alpha^|eta_v|``: the claimed ``(runs,)`` log-likelihoods of ``(runs, N)``
    integer count noise ``z`` (docs/audit.md).  :raise ValueError: a window below 1."""
    z = np.asarray(noise, dtype=np.float64)
    width = check_positive_int(window, "window")
    rate = -float(log_alpha)
    if z.shape[1] == 1:  # L = 0: the count is the single node
        return -rate * np.abs(z[:, 0])
    sums = np.arange(-width, width + 1, dtype=np.float64)
    kernel = np.exp(-rate * np.abs(sums[:, None] - sums[None, :]))  # alpha^|e|, e = s' - s
    # (log scale per run, message normalised to a maximum of 1), one per node of the current level
    messages: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(z.shape[1]):
        log_message = -rate * np.abs(z[:, i:i + 1] - sums[None, :])
        top = log_message.max(axis=1, keepdims=True)
        messages.append((top[:, 0], np.exp(log_message - top)))
    while True:
        parents: list[tuple[np.ndarray, np.ndarray]] = []
        for j in range(0, len(messages), 2):  # children (2j-1, l-1), (2j, l-1) of node (j, l)
            scale = messages[j][0].copy()
            product = messages[j][1].copy()
            for extra_scale, extra in messages[j + 1:j + 2]:
                scale += extra_scale
                product *= extra
            if len(messages) <= 2:  # the root: its ancestors' sum is 0
                return scale + np.log(product @ kernel[:, width])
            summed = product @ kernel
            top = summed.max(axis=1)
            parents.append((scale + np.log(top), summed / top[:, None]))
        messages = parents


def tree_privacy_loss_statistic(released: npt.ArrayLike, first_counts: npt.ArrayLike, second_counts: npt.ArrayLike,
                                log_alpha: float, *, window: int) -> np.ndarray:
    """The claimed log-likelihood ratio of ``D`` against ``D'`` of the whole ``(runs, N)`` released count vector
    (``c(D)``, ``c(D')``: the counts); ``(runs,)`` float64, rounded to 9 decimals (docs/audit.md)."""
    counts = np.asarray(released, dtype=np.float64)
    return np.round(tree_log_likelihood(counts - np.asarray(first_counts, dtype=np.float64), log_alpha,
                                        window=window)
                    - tree_log_likelihood(counts - np.asarray(second_counts, dtype=np.float64), log_alpha,
                                          window=window), 9)


def event_probabilities(first_pmf: npt.ArrayLike, second_pmf: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(top, bottom)``: each candidate event's probability under the dataset on top (bounded from below) and under
    the other, from the pmfs on ``D`` and ``D'`` on the same integer support (docs/audit.md).
    :raise ValueError: if the pmfs differ in length or are not one-dimensional."""
    p = np.asarray(first_pmf, dtype=np.float64)
    q = np.asarray(second_pmf, dtype=np.float64)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"the pmfs must be one-dimensional of equal length, got {p.shape} and {q.shape}")
    events_p = np.concatenate([np.cumsum(p[::-1])[::-1], np.cumsum(p), p])
    events_q = np.concatenate([np.cumsum(q[::-1])[::-1], np.cumsum(q), q])
    return np.concatenate([events_p, events_q]), np.concatenate([events_q, events_p])


def planned_lower_bound(top: npt.ArrayLike, bottom: npt.ArrayLike, *, samples: int, delta: float = 0.0,
                        confidence: float = 0.95, pessimism: float = 2.0) -> float:
    """The lower bound (0 if no event beats the claimed ``delta``) an audit of ``samples`` outputs per dataset
    reaches on the best of the events of probabilities ``top``, ``bottom`` (docs/audit.md).
    :raise ValueError: on invalid parameters."""
    trials = evaluation_trials(samples)
    check_delta(delta)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if pessimism != 0.0:
        check_positive(pessimism, "pessimism")
    p = np.clip(np.asarray(top, dtype=np.float64), 0.0, 1.0)
    q = np.clip(np.asarray(bottom, dtype=np.float64), 0.0, 1.0)
    level = 1.0 - (1.0 - confidence) / 2.0
    hits_top = np.floor(np.maximum(p * trials - pessimism * np.sqrt(p * (1 - p) * trials), 0.0))
    hits_bottom = np.ceil(np.minimum(q * trials + pessimism * np.sqrt(q * (1 - q) * trials), trials))
    loss = loss_lower_bounds(hits_top, hits_bottom, trials, level, delta)  # negative losses count as 0
    return float(max(np.max(loss, initial=0.0), 0.0))
