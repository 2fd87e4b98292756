"""Quantization for the generic local-DP protocol: bins, rounding, quantized kernel matrices.

Bell et al., Algorithm 1 step 1 and App. A.2 (``A^Mid`` eq. 14, ``A^Avg`` eq. 15; Lemmas 2 and 3).
No threat model of its own: runs on the user's device before the randomized response.
Bins, representatives and the sub-grid exactness: docs/ldp.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np
import numpy.typing as npt

from dp.validation import check_choice, check_finite, check_instance, check_int_at_least, check_positive_int
from secure.noise.party import noise_generator

__all__ = ["KernelFunction", "Interval", "Levels", "Axis", "Quantizer", "ROUNDING_MODES", "MATRIX_KINDS",
           "EVALUATION_BUDGET", "kernel_matrix", "gini_kernel", "kendall_kernel", "collision_kernel", "auc_kernel",
           "comparable_kernel"]


#: A kernel ``f(x, y)``: for one-dimensional domains two arrays of shape ``(N,)``, otherwise two
#: arrays of shape ``(N, d)``; returns ``N`` finite values (or a scalar, broadcast).
KernelFunction = Callable[[np.ndarray, np.ndarray], npt.ArrayLike]

ROUNDING_MODES: tuple[str, ...] = ("simple", "randomized")
MATRIX_KINDS: tuple[str, ...] = ("average", "midrange", "midpoint")

#: Default cap on kernel evaluations ``k^2 M^2`` when building ``A^Avg`` / ``A^Mid`` on a sub-grid.
EVALUATION_BUDGET: int = 1 << 24

_MAX_SUBDIVISIONS = 64
_CHUNK_ELEMENTS = 1 << 22  # elements per block of vectorized work (bounds memory)


def gini_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Gini mean difference ``|x - y|`` on a one-dimensional domain (§2.1.2, eq. (4))."""
    return np.abs(x - y)


def kendall_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-a ``sign(x_1 - y_1) sign(x_2 - y_2)`` on two-dimensional points (eq. (6))."""
    return np.sign(x[:, 0] - y[:, 0]) * np.sign(x[:, 1] - y[:, 1])


def collision_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Collision indicator ``I[x = y]`` (Rényi-2 entropy, eq. (5)); on any dimension."""
    equal = x == y
    if equal.ndim > 1:
        equal = equal.all(axis=-1)
    return equal.astype(np.float64)


def auc_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """AUC numerator on points ``(score, label)``: the positive one scores higher, ties 1/2 (eq. (7); docs/ldp.md)."""
    differ = x[:, 1] != y[:, 1]
    positive_first = x[:, 1] > y[:, 1]
    s_pos = np.where(positive_first, x[:, 0], y[:, 0])
    s_neg = np.where(positive_first, y[:, 0], x[:, 0])
    return np.where(differ, (1.0 + np.sign(s_pos - s_neg)) / 2.0, 0.0)


def comparable_kernel(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``I[label_x != label_y]`` on points ``(score, label)``: the AUC normaliser."""
    return (x[:, 1] != y[:, 1]).astype(np.float64)


def _check_bins(bins: int, name: str = "bins") -> int:
    return check_int_at_least(bins, name, 2)


@dataclass(frozen=True)
class Interval:
    """A continuous axis ``[lower, upper]`` (finite, non-empty) with ``bins >= 1`` bins (2 for randomized rounding);
    layouts: docs/ldp.md."""

    lower: float
    upper: float
    bins: int

    def __post_init__(self) -> None:
        lower = check_finite(self.lower, "lower")
        upper = check_finite(self.upper, "upper")
        if not lower < upper:
            raise ValueError(f"upper must be greater than lower, got lower={lower}, upper={upper}")
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "bins", check_positive_int(self.bins, "bins"))


@dataclass(frozen=True)
class Levels:
    """A discrete axis: a finite set of distinct values (categories, labels); a value rounds to the nearest."""

    values: tuple[float, ...]

    def __post_init__(self) -> None:
        raw = tuple(check_finite(v, "level") for v in self.values)
        if not raw:
            raise ValueError("levels must not be empty")
        ordered = tuple(sorted(raw))
        if any(a == b for a, b in zip(ordered, ordered[1:])):
            raise ValueError("levels must be distinct")
        object.__setattr__(self, "values", ordered)

    @property
    def bins(self) -> int:
        return len(self.values)


Axis = Union[Interval, Levels]


class Quantizer:
    """The local quantization ``pi`` of Algorithm 1: values in a declared domain -> ``k`` bins, one :class:`Interval`
    or :class:`Levels` per coordinate (product grid, row-major); ``rounding`` ``simple`` (nearest representative) or
    ``randomized`` (unbiased between the two neighbouring representatives on every interval axis)."""

    def __init__(self, axes: Sequence[Axis], *, rounding: str = "simple") -> None:
        self.rounding = check_choice(rounding, ROUNDING_MODES, "rounding")
        self.axes: tuple[Axis, ...] = tuple(axes)
        if not self.axes:
            raise ValueError("a quantizer needs at least one axis")
        for axis in self.axes:
            if not isinstance(axis, (Interval, Levels)):
                raise TypeError(f"axes must be Interval or Levels, got {type(axis).__name__}")
            if isinstance(axis, Interval) and rounding == "randomized" and axis.bins < 2:
                raise ValueError(f"bins must be at least 2 for randomized rounding, got {axis.bins}")
        self.shape: tuple[int, ...] = tuple(axis.bins for axis in self.axes)
        self.bins: int = _check_bins(int(np.prod(self.shape)))
        self.dimension: int = len(self.axes)
        self._strides = np.array([int(np.prod(self.shape[a + 1:])) for a in range(self.dimension)], dtype=np.int64)
        self._axis_reps = [self._axis_representatives(axis) for axis in self.axes]

    @classmethod
    def interval(cls, *, lower: float, upper: float, bins: int, rounding: str = "simple") -> Quantizer:
        """Quantizer of one interval ``[lower, upper]`` into ``bins >= 2`` bins."""
        _check_bins(bins)
        return cls([Interval(lower, upper, bins)], rounding=rounding)

    @classmethod
    def grid(cls, *, lower: Sequence[float], upper: Sequence[float], bins: Sequence[int],
             rounding: str = "simple") -> Quantizer:
        """Quantizer of a box ``prod_a [lower_a, upper_a]`` into ``prod_a bins_a`` bins (e.g. Kendall)."""
        if not (len(lower) == len(upper) == len(bins)):
            raise ValueError(f"lower, upper and bins must have the same length, got {len(lower)}, {len(upper)}, "
                             f"{len(bins)}")
        return cls([Interval(lo, hi, b) for lo, hi, b in zip(lower, upper, bins)], rounding=rounding)

    @classmethod
    def levels(cls, values: Sequence[float]) -> Quantizer:
        """Quantizer of a discrete domain of at least 2 levels, one bin each (Rényi-2 entropy on categories)."""
        return cls([Levels(tuple(values))])

    def _axis_representatives(self, axis: Axis) -> np.ndarray:
        if isinstance(axis, Levels):
            return np.array(axis.values)
        if self.rounding == "simple":
            width = (axis.upper - axis.lower) / axis.bins
            return axis.lower + (np.arange(axis.bins) + 0.5) * width
        return np.linspace(axis.lower, axis.upper, axis.bins)

    def _axis_cells(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper ends of the bins of interval axis ``index`` (Voronoi cells if randomized)."""
        axis = self.axes[index]
        assert isinstance(axis, Interval)
        if self.rounding == "simple":
            edges = np.linspace(axis.lower, axis.upper, axis.bins + 1)
            return edges[:-1], edges[1:]
        reps = self._axis_reps[index]
        half = 0.5 * (axis.upper - axis.lower) / (axis.bins - 1)
        return np.maximum(reps - half, axis.lower), np.minimum(reps + half, axis.upper)

    @property
    def representatives(self) -> np.ndarray:
        """Representative value of every bin: shape ``(k,)`` in one dimension, else ``(k, d)``."""
        grids = np.meshgrid(*self._axis_reps, indexing="ij")
        points = np.stack([g.ravel() for g in grids], axis=-1)
        return points[:, 0] if self.dimension == 1 else points

    def subgrid(self, subdivisions: int) -> np.ndarray:
        """Sub-cell centres of every bin, shape ``(k, M, d)``: ``subdivisions >= 1`` per bin and interval axis (levels
        contribute 1), ``M = subdivisions ** #interval axes``."""
        m = check_positive_int(subdivisions, "subdivisions")
        along = []  # per axis, (bins, sub-cells) centres
        for index, axis in enumerate(self.axes):
            if isinstance(axis, Levels):
                along.append(self._axis_reps[index][:, None])
            else:
                low, high = self._axis_cells(index)
                along.append(low[:, None] + (np.arange(m)[None, :] + 0.5) / m * (high - low)[:, None])
        bins = np.indices(self.shape).reshape(self.dimension, -1)  # row-major, as the bin index
        cells = np.indices([a.shape[1] for a in along]).reshape(self.dimension, -1)
        return np.stack([a[b[:, None], c[None, :]] for a, b, c in zip(along, bins, cells)], axis=-1)

    def prepare(self, values: npt.ArrayLike) -> np.ndarray:
        """Validate finite values, ``(n,)`` for a one-dimensional domain, ``(n, d)`` otherwise, and clip them to the
        declared domain: shape ``(n, d)``."""
        x = np.asarray(values, dtype=np.float64)
        if self.dimension == 1 and x.ndim == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != self.dimension:
            expected = "(n,)" if self.dimension == 1 else f"(n, {self.dimension})"
            raise ValueError(f"values must have shape {expected}, got {np.shape(values)}")
        if not np.all(np.isfinite(x)):
            raise ValueError("values must be finite")
        x = x.copy()
        for index, axis in enumerate(self.axes):
            if isinstance(axis, Interval):
                np.clip(x[:, index], axis.lower, axis.upper, out=x[:, index])
        return x

    def _axis_support(self, index: int, column: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bins ``(n, r)`` and probabilities ``(n, r)`` of the rounding of one axis (``r`` = 1 or 2)."""
        axis = self.axes[index]
        reps = self._axis_reps[index]
        if isinstance(axis, Levels):
            position = np.clip(np.searchsorted(reps, column), 1, max(reps.size - 1, 1))
            if reps.size == 1:
                return np.zeros((column.size, 1), dtype=np.int64), np.ones((column.size, 1))
            below = reps[position - 1]
            nearest = np.where(column - below <= reps[position] - column, position - 1, position)
            return nearest.astype(np.int64)[:, None], np.ones((column.size, 1))
        if self.rounding == "simple":
            width = (axis.upper - axis.lower) / axis.bins
            bin_index = np.clip(np.floor((column - axis.lower) / width), 0, axis.bins - 1).astype(np.int64)
            return bin_index[:, None], np.ones((column.size, 1))
        step = (axis.upper - axis.lower) / (axis.bins - 1)
        grid_position = (column - axis.lower) / step
        low = np.clip(np.floor(grid_position), 0, axis.bins - 2).astype(np.int64)
        up = np.clip(grid_position - low, 0.0, 1.0)
        return np.stack([low, low + 1], axis=1), np.stack([1.0 - up, up], axis=1)

    def support(self, values: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """The rounding distribution ``P_i`` of every value (clipped to the domain), in sparse form: ``(bins, weights)``
        of shape ``(n, r)``, ``r = 2^(#interval axes)`` under randomized rounding, else 1; ``P(bin = bins[i, t]) =
        weights[i, t]``."""
        x = self.prepare(values)
        n = x.shape[0]
        flat = np.zeros((n, 1), dtype=np.int64)
        weight = np.ones((n, 1))
        for index in range(self.dimension):
            axis_bins, axis_weights = self._axis_support(index, x[:, index])
            flat = (flat[:, :, None] + axis_bins[:, None, :] * self._strides[index]).reshape(n, -1)
            weight = (weight[:, :, None] * axis_weights[:, None, :]).reshape(n, -1)
        return flat, weight

    def _sample(self, x: np.ndarray, runs: int, gen: np.random.Generator | None) -> np.ndarray:
        """Bins of prepared values ``x`` (n, d), ``runs`` independent roundings: shape ``(runs, n)``."""
        n = x.shape[0]
        flat = np.zeros((runs, n), dtype=np.int64)
        for index in range(self.dimension):
            axis_bins, axis_weights = self._axis_support(index, x[:, index])
            if axis_bins.shape[1] == 1:
                chosen = np.broadcast_to(axis_bins[:, 0], (runs, n))
            else:
                assert gen is not None
                chosen = axis_bins[:, 0] + (gen.random((runs, n)) < axis_weights[:, 1])
            flat += chosen * self._strides[index]
        return flat

    @property
    def is_random(self) -> bool:
        return self.rounding == "randomized" and any(isinstance(a, Interval) for a in self.axes)

    def quantize(self, values: npt.ArrayLike, *, rng: np.random.Generator | None = None) -> np.ndarray:
        """Bin index in ``[0, k)`` of every value, shape ``(n,)`` or ``(n, d)``, clipped to the domain (the user-side step 2
        of Algorithm 1); ``rng`` (``None``: the OS) only for randomized rounding."""
        x = self.prepare(values)
        gen = noise_generator(rng) if self.is_random else None
        return self._sample(x, 1, gen)[0]

    def __repr__(self) -> str:
        return f"Quantizer({list(self.axes)!r}, rounding={self.rounding!r})"


def _evaluate(kernel: KernelFunction, x: np.ndarray, y: np.ndarray, vectorized: bool) -> np.ndarray:
    """``f`` on pairs of points given as ``(N, d)`` arrays; one-dimensional points passed as ``(N,)``."""
    if x.shape[1] == 1:
        x, y = x[:, 0], y[:, 0]
    size = x.shape[0]
    if vectorized:
        out = np.asarray(kernel(x, y), dtype=np.float64)
        if out.ndim == 0:
            out = np.full(size, float(out))
    else:
        out = np.array([float(kernel(a, b)) for a, b in zip(x, y)], dtype=np.float64)  # type: ignore[arg-type]
    if out.shape != (size,):
        raise ValueError(f"kernel must return one value per pair, shape ({size},), got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError("kernel values must be finite")
    return out


def _default_subdivisions(quantizer: Quantizer) -> int:
    intervals = sum(isinstance(axis, Interval) for axis in quantizer.axes)
    if intervals == 0:
        return 1
    per_bin = math.sqrt(EVALUATION_BUDGET) / quantizer.bins
    m = int(math.floor(max(per_bin, 1.0) ** (1.0 / intervals) + 1e-9))
    return min(max(m, 2), _MAX_SUBDIVISIONS)


def kernel_matrix(kernel: KernelFunction, quantizer: Quantizer, *, kind: str = "average",
                  subdivisions: int | None = None, vectorized: bool = True) -> np.ndarray:
    """The quantized kernel matrix ``A`` (``k x k``, float64) of a plain kernel on the quantizer's bins, ``kind``
    ``average``, ``midrange`` or ``midpoint``.  Parameters: docs/ldp.md."""
    check_choice(kind, MATRIX_KINDS, "kind")
    if not callable(kernel):
        raise TypeError(f"kernel must be callable, got {type(kernel).__name__}")
    check_instance(quantizer, Quantizer, "quantizer")
    k, d = quantizer.bins, quantizer.dimension
    if kind == "midpoint":
        reps = quantizer.representatives.reshape(k, d)
        x = np.broadcast_to(reps[:, None, :], (k, k, d)).reshape(-1, d)
        y = np.broadcast_to(reps[None, :, :], (k, k, d)).reshape(-1, d)
        return _evaluate(kernel, x, y, vectorized).reshape(k, k)
    m = _default_subdivisions(quantizer) if subdivisions is None else check_positive_int(subdivisions, "subdivisions")
    points = quantizer.subgrid(m)
    sub = points.shape[1]
    out = np.empty((k, k))
    rows = max(1, _CHUNK_ELEMENTS // (k * sub * sub))
    for start in range(0, k, rows):
        block = points[start:start + rows]
        r = block.shape[0]
        x = np.broadcast_to(block[:, None, :, None, :], (r, k, sub, sub, d)).reshape(-1, d)
        y = np.broadcast_to(points[None, :, None, :, :], (r, k, sub, sub, d)).reshape(-1, d)
        values = _evaluate(kernel, x, y, vectorized).reshape(r, k, sub * sub)
        if kind == "average":
            out[start:start + r] = values.mean(axis=-1)
        else:
            out[start:start + r] = 0.5 * (values.max(axis=-1) + values.min(axis=-1))
    return out
