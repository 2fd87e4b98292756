"""Step ECDFs on a grid and their inverse by binary search (Barczewski, Mawass & Ramon, Alg. 1).

Details: docs/smoothing.md."""
from __future__ import annotations

import math
from typing import Callable, Union

import numpy as np

__all__ = ["Curve", "evaluate_step", "inverse_ecdf", "quantiles"]

#: A curve to invert: a function of one float, or ``(grid, values)`` of a step function.
Curve = Union[Callable[[float], float], tuple[np.ndarray, np.ndarray]]


def evaluate_step(grid: np.ndarray, values: np.ndarray, points: np.ndarray | float) -> np.ndarray | float:
    """The step function of ``values`` on a strictly increasing ``grid`` at ``points`` (a scalar gives a float).
    Details: docs/smoothing.md."""
    knots, heights = _check_curve(grid, values)
    return _evaluate(knots, heights, points)


def inverse_ecdf(curve: Curve, probability: float, *, lower: float | None = None, upper: float | None = None,
                 precision: float | None = None, snap: bool = True) -> float:
    """``inf{x : F(x) >= p}`` by binary search (paper Algorithm 1 on ``[lower, upper]``, default the grid's ends or
    ``[0, 1]`` for a callable ``F``) to ``b - a <= precision`` (the paper's ``psi``); ``snap`` moves a grid curve's
    answer to the grid point found in the final interval (defaults and details: docs/smoothing.md)."""
    level = _check_probability(probability)
    function: Callable[[float], float]
    knots: np.ndarray | None = None
    if callable(curve):
        function, ends = curve, (0.0, 1.0)
    elif isinstance(curve, tuple) and len(curve) == 2:
        grid_points, heights = _check_curve(*curve)
        knots, ends = grid_points, (float(grid_points[0]), float(grid_points[-1]))

        def function(x: float) -> float:
            return float(_evaluate(grid_points, heights, x))
    else:
        raise TypeError(f"curve must be callable or a (grid, values) pair, got {type(curve).__name__}")
    start = ends[0] if lower is None else float(lower)
    stop = ends[1] if upper is None else float(upper)
    if not (math.isfinite(start) and math.isfinite(stop)):
        raise ValueError(f"lower and upper must be finite, got {start} and {stop}")
    if start > stop:
        raise ValueError(f"lower must not exceed upper, got {start} > {stop}")
    if precision is not None:
        step = float(precision)
        if not (math.isfinite(step) and step > 0):
            raise ValueError(f"precision must be positive, got {precision}")
    elif knots is not None and knots.size > 1:
        step = float(np.min(np.diff(knots)))
    else:  # a callable or a one-point grid; an empty domain has nothing to bisect
        step = (stop - start) * 2.0 ** -40 if stop > start else 1.0

    # Algorithm 1, on [lower, upper] instead of [0, 1]
    a, b = start, stop
    a_moved = False
    while b - a > step:
        middle = (a + b) / 2
        if middle <= a or middle >= b:  # the interval no longer splits in floating point
            break
        if function(middle) < level:
            a, a_moved = middle, True
        else:
            b = middle
    if knots is None or not snap:
        return (a + b) / 2
    return _snap(knots, heights, level, a, b, a_moved, start, stop)


def quantiles(grid: np.ndarray, values: np.ndarray, probabilities: np.ndarray, precision: float | None = None, *,
              lower: float | None = None, upper: float | None = None, snap: bool = True) -> np.ndarray:
    """Inverse ECDF of a grid curve at every level of ``probabilities`` (shape kept), one :func:`inverse_ecdf` each."""
    knots, heights = _check_curve(grid, values)
    levels = np.asarray(probabilities, dtype=float)
    answers = [inverse_ecdf((knots, heights), float(level), lower=lower, upper=upper,
                            precision=precision, snap=snap) for level in levels.ravel()]
    return np.asarray(answers, dtype=float).reshape(levels.shape)


def _snap(knots: np.ndarray, heights: np.ndarray, level: float, a: float, b: float, a_moved: bool,
          start: float, stop: float) -> float:
    """First grid point in the final bisection interval whose value reaches ``level``. Details: docs/smoothing.md."""
    if not a_moved:
        if float(_evaluate(knots, heights, start)) >= level:
            return start
    first = int(np.searchsorted(knots, a, side="right"))
    last = int(np.searchsorted(knots, min(b, stop), side="right"))
    reached = np.flatnonzero(heights[first:last] >= level)
    if reached.size:
        return float(knots[first + reached[0]])
    return stop


def _evaluate(knots: np.ndarray, heights: np.ndarray, points: np.ndarray | float) -> np.ndarray | float:
    where = np.asarray(points, dtype=float)
    index = np.searchsorted(knots, where, side="right") - 1
    result = np.where(index >= 0, heights[np.maximum(index, 0)], 0.0)
    if where.ndim == 0:
        return float(result)
    return result


def _check_probability(probability: float) -> float:
    if isinstance(probability, bool):
        raise TypeError(f"probability must be a number, got {probability!r}")
    level = float(probability)
    if not (0.0 <= level <= 1.0):
        raise ValueError(f"probability must lie in [0, 1], got {probability}")
    return level


def _check_curve(grid: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    knots = np.asarray(grid, dtype=float)
    if knots.ndim != 1 or knots.size == 0:
        raise ValueError(f"grid must be a non-empty 1-dimensional array, got shape {knots.shape}")
    if not np.all(np.isfinite(knots)):
        raise ValueError("grid must contain only finite values")
    if knots.size > 1 and not np.all(np.diff(knots) > 0):
        raise ValueError("grid must be strictly increasing")
    heights = np.asarray(values, dtype=float)
    if heights.shape != knots.shape:
        raise ValueError(f"values must have the grid's shape {knots.shape}, got {heights.shape}")
    if not np.all(np.isfinite(heights)):
        raise ValueError("values must contain only finite values")
    return knots, heights
