"""Independent references for the kernels' exact U-statistics (scipy, scikit-learn, brute force)."""
from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.metrics import rand_score, roc_auc_score


def kendall_tau_a(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-a from scipy's tau-b: tau_a = tau_b sqrt((n0 - n1)(n0 - n2)) / n0."""
    n = len(x)
    n0 = n * (n - 1) / 2
    tied_x = sum(c * (c - 1) / 2 for c in np.unique(x, return_counts=True)[1])
    tied_y = sum(c * (c - 1) / 2 for c in np.unique(y, return_counts=True)[1])
    tau_b = stats.kendalltau(x, y, variant="b").statistic
    return float(tau_b * np.sqrt((n0 - tied_x) * (n0 - tied_y)) / n0)


def gini_mean_difference(x: np.ndarray) -> float:
    """Mean |x_i - x_j| over pairs, by the sorted-order formula 2 sum (2i - n - 1) x_(i) / (n (n - 1))."""
    ordered = np.sort(np.asarray(x, dtype=float))
    n = len(ordered)
    weights = 2 * np.arange(1, n + 1) - n - 1
    return float(2 * np.sum(weights * ordered) / (n * (n - 1)))


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """scikit-learn's ROC AUC (ties count 1/2)."""
    return float(roc_auc_score(labels.astype(int), scores))


def duplicate_ratio(x: np.ndarray) -> float:
    """Fraction of pairs with equal values, from value counts."""
    counts = np.unique(x, return_counts=True)[1]
    n = len(x)
    return float(np.sum(counts * (counts - 1) / 2) / (n * (n - 1) / 2))


def rand_index(a: np.ndarray, b: np.ndarray) -> float:
    """scikit-learn's Rand index."""
    return float(rand_score(a.astype(int), b.astype(int)))


def volume_under_surface(scores: np.ndarray, classes: np.ndarray) -> float:
    """VUS by brute force over one score per class, ties weighted 1/2 and 1/6."""
    s0, s1, s2 = (scores[classes == c] for c in range(3))
    a = s0[:, None, None]
    b = s1[None, :, None]
    c = s2[None, None, :]
    weight = ((a < b) & (b < c)) * 1.0 + (((a == b) & (b < c)) | ((a < b) & (b == c))) * 0.5 \
        + ((a == b) & (b == c)) * (1 / 6)
    return float(weight.mean())
