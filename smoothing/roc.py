"""ROC curve and its area from two ECDFs on a common threshold grid (Barczewski et al., Sec. 5.1).

Details: docs/smoothing.md."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["RocCurve", "roc_from_ecdfs", "trapezoid_auc", "batch_auc"]


@dataclass(frozen=True)
class RocCurve:
    """A ROC polyline (sorted, from ``(0, 0)`` to ``(1, 1)`` for valid ECDFs) and its trapezoid area; each point's
    threshold, the corners the infinite one that produces them, ``nan`` when no thresholds were given."""

    false_positive_rate: np.ndarray
    true_positive_rate: np.ndarray
    thresholds: np.ndarray
    auc: float


def roc_from_ecdfs(ecdf_positive: np.ndarray, ecdf_negative: np.ndarray, *, thresholds: np.ndarray | None = None,
                   positive_below: bool = False) -> RocCurve:
    """ROC curve (``(0, 0)`` and ``(1, 1)`` added) and AUC from the ECDFs of positive and negative scores on one grid
    (``thresholds``, only carried along); ``positive_below`` is the paper's convention (low score = positive)."""
    positive = _check_values(ecdf_positive, "ecdf_positive")
    negative = _check_values(ecdf_negative, "ecdf_negative")
    if positive.shape != negative.shape:
        raise ValueError(f"ecdf_positive and ecdf_negative must have the same shape, got "
                         f"{positive.shape} and {negative.shape}")
    if thresholds is None:
        grid = np.full(positive.shape, np.nan)
    else:
        grid = np.asarray(thresholds, dtype=float)
        if grid.shape != positive.shape:
            raise ValueError(f"thresholds must have the ECDFs' shape {positive.shape}, got {grid.shape}")
        if not np.all(np.isfinite(grid)) or (grid.size > 1 and not np.all(np.diff(grid) > 0)):
            raise ValueError("thresholds must be finite and strictly increasing")
    fpr, tpr = (negative, positive) if positive_below else (1.0 - negative, 1.0 - positive)
    corner = -np.inf if positive_below else np.inf  # the threshold of (0, 0); its negative gives (1, 1)
    fpr = np.concatenate([[0.0], fpr, [1.0]])
    tpr = np.concatenate([[0.0], tpr, [1.0]])
    grid = np.concatenate([[corner], grid, [-corner]])
    # threshold as the last key: among equal points keep the order in which the threshold sweeps
    sweep = grid if positive_below else -grid
    order = np.lexsort((np.nan_to_num(sweep, nan=0.0), tpr, fpr))
    fpr, tpr, grid = fpr[order], tpr[order], grid[order]
    return RocCurve(false_positive_rate=fpr, true_positive_rate=tpr, thresholds=grid,
                    auc=trapezoid_auc(fpr, tpr))


def trapezoid_auc(false_positive_rate: np.ndarray, true_positive_rate: np.ndarray) -> float:
    """Area ``sum_k (x_{k+1} - x_k) (y_k + y_{k+1}) / 2`` under a polyline given by its points in order."""
    x = _check_values(false_positive_rate, "false_positive_rate")
    y = _check_values(true_positive_rate, "true_positive_rate")
    if x.shape != y.shape:
        raise ValueError(f"coordinates must have the same shape, got {x.shape} and {y.shape}")
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


def _check_values(values: np.ndarray, name: str) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-dimensional array, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite values")
    return array


def batch_auc(ecdf_positive: np.ndarray, ecdf_negative: np.ndarray, *, positive_below: bool = False) -> np.ndarray:
    """The AUC of :func:`roc_from_ecdfs` for ``R`` curve pairs at once (``(R, N)`` rows), vectorised.
    Details: docs/smoothing.md."""
    positive = np.asarray(ecdf_positive, dtype=float)
    negative = np.asarray(ecdf_negative, dtype=float)
    if positive.ndim != 2 or positive.shape != negative.shape or positive.shape[1] == 0:
        raise ValueError(f"the ECDFs must be non-empty 2-dimensional arrays of one shape, got {positive.shape} and "
                         f"{negative.shape}")
    if not (np.all(np.isfinite(positive)) and np.all(np.isfinite(negative))):
        raise ValueError("the ECDFs must contain only finite values")
    fpr, tpr = (negative, positive) if positive_below else (1.0 - negative, 1.0 - positive)
    rows = positive.shape[0]
    low, high = np.zeros((rows, 1)), np.ones((rows, 1))
    fpr = np.concatenate([low, fpr, high], axis=1)
    tpr = np.concatenate([low, tpr, high], axis=1)
    order = np.lexsort((tpr, fpr), axis=-1)
    x = np.take_along_axis(fpr, order, axis=-1)
    y = np.take_along_axis(tpr, order, axis=-1)
    return np.asarray(np.sum(np.diff(x, axis=-1) * (y[:, 1:] + y[:, :-1]) / 2.0, axis=-1), dtype=float)
