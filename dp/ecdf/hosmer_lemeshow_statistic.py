r"""The exact Hosmer-Lemeshow statistic (eq. 5) and its pieces, shared by the exact, simulated and secure paths, and
the Fig. 6 error metric (Barczewski, Mawass & Ramon §5.2, lines 8-11 of Algorithm 2, and §6.6).

No privacy here: a party's own group sums, or post-processing of released counts.  Groups are half-open,
``t_{q-1} < p <= t_q``; why, and the sensitivity of the sums: ``docs/hosmer_lemeshow.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy import stats

from dp.validation import (check_finite, check_integer_vector, check_labels, check_number, check_positive,
                           check_positive_int, check_values)

__all__ = ["HosmerLemeshowResult", "group_statistics", "HosmerLemeshowTerms", "hosmer_lemeshow_terms", "empty_groups",
           "HosmerLemeshowTest", "hosmer_lemeshow_test", "exact_hosmer_lemeshow", "relative_squared_error"]


@dataclass(frozen=True)
class HosmerLemeshowResult:
    """An exact (non-private) HL statistic with its groups (``expected``/``observed`` of shape ``(2, Q)``, row
    0 negatives; ``empty``: groups empty by construction; fields: docs/hosmer_lemeshow.md)."""

    statistic: float
    p_value: float
    boundaries: np.ndarray
    expected: np.ndarray
    observed: np.ndarray
    degrees_of_freedom: int
    empty: np.ndarray


def group_statistics(fixed_point: npt.ArrayLike, labels: npt.ArrayLike, bounds: npt.ArrayLike, *,
                     scale: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact integer statistics of lines 8-9: ``E`` in fixed point and ``O`` counts per group
    ``bounds[q-1] < k_i <= bounds[q]``, int64 ``(2, Q)`` (sensitivity and errors: docs/hosmer_lemeshow.md)."""
    unit = check_positive_int(scale, "scale")
    values = check_integer_vector(fixed_point, "fixed_point")
    if values.size and (values.min() < 0 or values.max() > unit):
        raise ValueError(f"fixed_point must lie in [0, {unit}]")
    ys = check_labels(labels, values.shape[0])
    edges = check_integer_vector(bounds, "bounds")
    if np.any(np.diff(edges) < 0):
        raise ValueError("bounds must be non-decreasing")
    return _group_sums(np.searchsorted(edges.astype(np.int64), values, side="left"), edges.shape[0] + 1, values,
                       unit, ys)


def _group_sums(group: np.ndarray, groups: int, scores: np.ndarray, unit: float,
                labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per group, ``E`` (row 0 ``unit - score``, row 1 ``score``, the scores' dtype) and ``O`` (the labels 0 and 1)."""
    expected = np.zeros((2, groups), dtype=scores.dtype)
    observed = np.zeros((2, groups), dtype=np.int64)
    for row, (weights, marks) in enumerate(((unit - scores, 1 - labels), (scores, labels))):
        np.add.at(expected[row], group, weights)
        np.add.at(observed[row], group, marks)
    return expected, observed


@dataclass(frozen=True)
class HosmerLemeshowTerms:
    """The cells ``(O_{s,q} - E_{s,q})^2 / E_{s,q}`` of eq. (5), shape ``(2, Q)`` (row 0 negatives), from the counts
    as used, and which ``E`` (to the floor) and ``O`` (to 0) cells were raised first (docs/hosmer_lemeshow.md)."""

    cells: np.ndarray
    expected_raised: np.ndarray
    observed_raised: np.ndarray

    @property
    def per_group(self) -> np.ndarray:
        """Each group's contribution to ``H``: ``cells[0, q] + cells[1, q]``, shape ``(Q,)``."""
        return np.asarray(self.cells[0] + self.cells[1], dtype=np.float64)

    @property
    def statistic(self) -> float:
        """``H``: the sum of all cells."""
        return float(np.sum(self.cells))


def hosmer_lemeshow_terms(expected: npt.ArrayLike, observed: npt.ArrayLike, *,
                          floor: float | None = None, empty: npt.ArrayLike | None = None) -> HosmerLemeshowTerms:
    """The cells of eq. (5) and the masks of raised counts, ``H`` their sum: exact with ``floor=None``, else ``O``
    raised to 0 and ``E`` to ``floor``; ``empty`` groups add 0 (ValueError on bad input: docs/hosmer_lemeshow.md)."""
    e = np.asarray(expected, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] != 2 or e.shape != o.shape:
        raise ValueError(f"expected and observed must both have shape (2, Q), got {e.shape} and {o.shape}")
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(o))):
        raise ValueError("expected and observed must be finite")
    none = np.zeros(e.shape, dtype=bool)
    left_out = none.copy()
    if empty is not None:
        mask = np.asarray(empty, dtype=bool)
        if mask.shape != (e.shape[1],):
            raise ValueError(f"empty must have shape ({e.shape[1]},), got {mask.shape}")
        left_out[:, mask] = True
    if floor is None:
        if np.any(e < 0) or np.any(o < 0):
            raise ValueError("exact expected and observed counts must be non-negative")
        empty = e == 0
        safe = np.where(empty, 1.0, e)
        cells = np.where(empty, np.where(o > 0, math.inf, 0.0), (o - e) ** 2 / safe)
        return HosmerLemeshowTerms(np.where(left_out, 0.0, cells), none, none.copy())
    bottom = check_positive(floor, "floor")
    e_used = np.maximum(e, bottom)
    o_used = np.maximum(o, 0.0)
    return HosmerLemeshowTerms(np.where(left_out, 0.0, (o_used - e_used) ** 2 / e_used), (e < bottom) & ~left_out,
                               (o < 0) & ~left_out)


def empty_groups(bounds: npt.ArrayLike, *, top: float) -> np.ndarray:
    """The groups no row can fall in, bool ``(Q,)``, from the ``Q - 1 >= 2`` interior boundaries alone (public);
    ``top``: the largest possible value (``2^b`` in fixed point, 1.0 for probabilities; docs/hosmer_lemeshow.md)."""
    edges = np.asarray(bounds)
    empty = np.zeros(edges.shape[0] + 1, dtype=bool)
    empty[1:-1] = edges[:-1] == edges[1:]
    empty[-1] = bool(edges[-1] >= top)
    return empty


@dataclass(frozen=True)
class HosmerLemeshowTest:
    """``H`` over the groups left, ``p_value`` (nan if ``Q' < 3``), ``Q' - 2`` degrees of freedom, the floored
    counts and the groups left out (bool ``(Q,)``), from the (noisy) counts and the public boundaries."""

    statistic: float
    p_value: float
    degrees_of_freedom: int
    floored: int
    empty: np.ndarray


def hosmer_lemeshow_test(expected: npt.ArrayLike, observed: npt.ArrayLike, empty: np.ndarray, *,
                         floor: float | None = None) -> HosmerLemeshowTest:
    """Line 11 of Algorithm 2 (post-processing), every path: ``H`` (eq. 5) of ``E``, ``O`` (shape ``(2, Q)``) over the
    groups not ``empty`` (bool ``(Q,)``), ``Q' - 2`` degrees of freedom; ``floor``: the smallest denominator in
    private mode, ``None`` for exact mode (docs/hosmer_lemeshow.md)."""
    terms = hosmer_lemeshow_terms(expected, observed, floor=floor, empty=empty)
    degrees = int(empty.shape[0] - np.count_nonzero(empty)) - 2
    p_value = float(stats.chi2.sf(terms.statistic, degrees)) if degrees >= 1 else math.nan
    return HosmerLemeshowTest(terms.statistic, p_value, degrees, int(np.count_nonzero(terms.expected_raised)), empty)


def exact_hosmer_lemeshow(probabilities: npt.ArrayLike, labels: npt.ArrayLike, groups: int = 10) -> HosmerLemeshowResult:
    """The exact (non-private) HL statistic, groups at the exact quantiles of the probabilities (the private path's
    rule with the noiseless ECDF; groups without rows left out; docs/hosmer_lemeshow.md)."""
    q_count = check_positive_int(groups, "groups")
    if q_count < 3:
        raise ValueError(f"groups must be at least 3, got {groups}")
    p = check_values(probabilities, "probabilities", low=0.0, high=1.0)
    y = check_labels(labels, p.shape[0])
    n = p.shape[0]
    ordered = np.sort(p)
    ranks = np.array([-(-q * n // q_count) for q in range(1, q_count)], dtype=np.int64)  # ceil(q n / Q)
    interior = ordered[ranks - 1]
    expected, observed = _group_sums(np.searchsorted(interior, p, side="left"), q_count, p, 1.0, y)
    test = hosmer_lemeshow_test(expected, observed, empty_groups(interior, top=1.0) | (observed.sum(axis=0) == 0))
    boundaries = np.concatenate(([0.0], interior, [1.0]))
    return HosmerLemeshowResult(test.statistic, test.p_value, boundaries, expected, observed, test.degrees_of_freedom,
                                test.empty)


def relative_squared_error(private: float, exact: float) -> float:
    """``(H_private - H_exact)^2 / H_exact^2``, the quantity averaged in Fig. 6 (``private`` may be ``inf``, giving
    ``inf``); ValueError if ``exact`` is zero or not finite or ``private`` NaN, TypeError if one is not a number."""
    check_number(private, "private")
    reference = check_finite(exact, "exact")
    if reference == 0:
        raise ValueError("exact must be non-zero, got 0")
    value = float(private)
    if math.isnan(value):
        raise ValueError("private must not be NaN")
    return (value - reference) ** 2 / reference**2
