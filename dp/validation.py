"""Parameter checks where parameters enter, with plain messages in the style of OpenDP/diffprivlib.

The generic checks live in :mod:`secure.checks` and are re-exported here (``dp`` imports every check from
this module); each raises :class:`ValueError` (:class:`TypeError` for a wrong type) naming the parameter and
the value, e.g. ``epsilon must be positive, got 0``."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from secure.checks import (check_bool, check_choice, check_finite, check_generator, check_instance, check_int_at_least,
                           check_int_range, check_integer, check_interval, check_nonnegative, check_nonnegative_int,
                           check_number, check_positive, check_positive_int)

__all__ = ["MAX_EPSILON", "check_epsilon", "check_delta", "check_parties", "check_noise_scale", "check_seed", "smallest_noise_epsilon",
           "check_indices", "check_number", "check_finite", "check_positive", "check_nonnegative", "check_interval",
           "check_integer", "check_int_at_least", "check_positive_int", "check_nonnegative_int", "check_int_range",
           "check_choice", "check_bool", "check_instance", "check_generator", "check_values", "check_labels",
           "check_score_label_rows", "check_rows_by_party", "check_integer_vector"]


#: The largest epsilon accepted anywhere (``dp.umpc.Query``, every job's ``--epsilon``; why: docs/noise.md)
MAX_EPSILON = 1e9


def check_epsilon(epsilon: float) -> float:
    """``epsilon`` as a float if it is finite, positive and at most :data:`MAX_EPSILON`, else :class:`ValueError`."""
    value = check_positive(epsilon, "epsilon")
    if value > MAX_EPSILON:
        raise ValueError(f"epsilon must be at most {MAX_EPSILON:g} (beyond it the noise is already 0 with "
                         f"probability 1 - 1e-300 and the exact arithmetic overflows), got {epsilon}")
    return value


def check_delta(delta: float) -> float:
    """``delta`` (of (epsilon, delta)-DP; 0 is pure DP) as a float if ``0 <= delta < 1``, else :class:`ValueError`."""
    return check_interval(delta, "delta", low=0.0, high=1.0)


def check_parties(parties: int, threshold: int) -> tuple[int, int]:
    """``(parties, threshold)`` if ``0 <= threshold`` and ``2 * threshold < parties`` (MPyC's Shamir scheme needs an
    honest majority), else :class:`ValueError`."""
    check_positive_int(parties, "parties")
    check_nonnegative_int(threshold, "threshold")
    if 2 * threshold >= parties:
        raise ValueError(f"threshold must be below half the number of parties ({parties}), got {threshold}")
    return int(parties), int(threshold)


def smallest_noise_epsilon(sensitivity: float) -> float:
    """The smallest epsilon, ``sensitivity * log1p(2**-40)``, whose discrete Laplace noise the exact integer
    samplers can draw at ``sensitivity`` (positive), whatever ``m`` and ``t`` (Mironov 2012; docs/noise.md)."""
    from secure.noise.party import MAX_POLYA_MEAN

    return check_positive(sensitivity, "sensitivity") * math.log1p(1.0 / MAX_POLYA_MEAN)


def check_noise_scale(epsilon: float, sensitivity: float, *, name: str = "epsilon") -> float:
    """``epsilon`` if the discrete Laplace noise of scale ``sensitivity / epsilon`` can be drawn; else ValueError
    naming the budget ``name`` (e.g. ``epsilon per released sum``), the bound :func:`smallest_noise_epsilon` and the
    way out (a larger epsilon, or binomial noise with ``--delta``)."""
    value = check_epsilon(epsilon)
    smallest = smallest_noise_epsilon(sensitivity)
    if value < smallest:
        raise ValueError(f"{name} {epsilon:g} is too small for integer discrete Laplace noise at sensitivity "
                         f"{sensitivity:g} (scale sensitivity/epsilon above 2^40): {name} must be at least "
                         f"{_round_up(smallest)}")
    return value


def check_seed(seed: int, name: str = "seed") -> int:
    """``seed`` if it is an integer in ``[0, 2**63)`` (NumPy's seed sequences take no negatives); TypeError / ValueError."""
    value = check_integer(seed, name)
    if not 0 <= value < 1 << 63:
        raise ValueError(f"{name} must be an integer in [0, 2^63), got {seed}")
    return value


def check_indices(values: npt.ArrayLike, upper: int, name: str) -> np.ndarray:
    """``values`` as a non-empty one-dimensional int64 array of integers in ``[0, upper)`` (integer-valued floats
    such as ``2.0`` accepted; fractions, NaN, infinities not): ValueError, or TypeError if neither ints nor floats."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional array, got shape {array.shape}")
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if array.dtype.kind == "f":
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} must be finite integers, got {array[~np.isfinite(array)][0]}")
        fractional = array != np.floor(array)
        if np.any(fractional):
            raise ValueError(f"{name} must be integers, got {array[fractional][0]}")
    elif array.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    low, high = array.min(), array.max()
    if low < 0 or high >= upper:
        raise ValueError(f"{name} must lie in [0, {upper}), got {low if low < 0 else high}")
    return array.astype(np.int64)


def check_values(values: npt.ArrayLike, name: str, *, low: float = -math.inf, high: float = math.inf) -> np.ndarray:
    """``values`` as a non-empty one-dimensional float64 array of finite numbers in ``[low, high]``.  TypeError: a
    non-numeric (or bool) dtype; ValueError: a wrong shape, no value, NaN, infinity or a value outside
    (``probabilities must lie in [0, 1], got 1.5``)."""
    data = np.asarray(values)
    if data.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {data.shape}")
    if data.shape[0] == 0:
        raise ValueError(f"{name} must contain at least one row, got 0")
    array = data.astype(np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    outside = array[(array < low) | (array > high)]
    if outside.size:
        raise ValueError(f"{name} must lie in [{low:g}, {high:g}], got {outside[0]:g}")
    return array


def check_integer_vector(values: npt.ArrayLike, name: str, length: int | None = None) -> np.ndarray:
    """``values`` as a one-dimensional int64 array (of ``length`` entries if given); TypeError: not an integer dtype
    (bools included); ValueError: a wrong shape or length."""
    array = np.asarray(values)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if length is not None and array.shape[0] != length:
        raise ValueError(f"{name} must have length {length}, got {array.shape[0]}")
    return array.astype(np.int64, copy=False)


def check_labels(labels: npt.ArrayLike, rows: int, name: str = "labels") -> np.ndarray:
    """``labels`` as an int64 array of ``rows`` zeros and ones (bools, integers or integer-valued floats); TypeError:
    a non-numeric dtype; ValueError: a wrong shape or length, a value other than 0 or 1."""
    data = np.asarray(labels)
    if data.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be numeric, got dtype {data.dtype}")
    if data.ndim != 1 or data.shape[0] != rows:
        raise ValueError(f"{name} must be one-dimensional with one entry per row ({rows}), got shape {data.shape}")
    array = data.astype(np.float64)
    bad = array[(array != 0.0) & (array != 1.0)]
    if bad.size:
        raise ValueError(f"{name} must be 0 or 1, got {bad[0]:g}")
    return array.astype(np.int64)


def check_score_label_rows(rows: Any) -> tuple[np.ndarray, np.ndarray]:
    """A party's ``(score, label)`` rows -- an array of shape ``(n, 2)`` or rows read with a missing-value policy
    (:class:`secure.intake.PartyRows`) -- as ``(scores, labels)``: finite scores, int64 labels 0 or 1; ``n = 0``
    is allowed (a party may hold no row).  ValueError: not two columns, a score not finite, a label not 0 or 1."""
    array = np.asarray(getattr(rows, "values", rows), dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != 2:
        raise ValueError(f"rows must have two columns (score, label), got shape {array.shape}")
    if not np.all(np.isfinite(array[:, 0])):
        raise ValueError("scores must be finite")
    return array[:, 0], check_labels(array[:, 1], array.shape[0])


def check_rows_by_party(rows_by_party: Any) -> tuple[np.ndarray, np.ndarray, int]:
    """Every party's ``(score, label)`` rows (:func:`check_score_label_rows`) stacked: ``(scores, labels, m)``;
    ValueError: not a list of at least one party's rows, or a bad row."""
    if isinstance(rows_by_party, np.ndarray) or not rows_by_party:
        raise ValueError("rows_by_party must be a list with one table of rows per party, at least one")
    parts = [check_score_label_rows(rows) for rows in rows_by_party]
    return np.concatenate([p for p, _ in parts]), np.concatenate([y for _, y in parts]), len(parts)


def _round_up(value: float) -> str:
    """``value > 0`` with three significant digits, rounded up (a lower bound that holds as printed)."""
    step = 10.0 ** (math.floor(math.log10(value)) - 2)
    rounded = math.ceil(value / step) * step
    while float(f"{rounded:.3g}") < value:
        rounded += step
    return f"{rounded:.3g}"
