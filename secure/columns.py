"""Column declarations by role, with checks on entry: numeric, label, classes, categorical.
Declarations are public parameters agreed before any data is shared (docs/design.md, "Who holds what");
nothing here touches data.  Details: docs/secure_layer.md."""
from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import numpy as np

from secure.checks import check_finite, check_int_at_least, check_int_range
from secure.errors import InputError

__all__ = ["ColumnSpec", "Category", "MAX_CATEGORIES", "MISSING_TOKENS", "numeric", "label", "classes", "categorical",
           "MAX_BITS"]

MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})

#: a declared category: a string (matched exactly) or a number (matched by value)
Category = Union[str, int, float]

#: most codes a category list may declare (a list of integer codes from a domain lo..hi included)
MAX_CATEGORIES = 1 << 20


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _plain(value: Any) -> Category:
    return value.item() if isinstance(value, (np.integer, np.floating)) else value


def _check_category(name: str, value: object, what: str) -> None:
    if isinstance(value, str):
        if not value or value != value.strip():
            raise ValueError(f"{what} of column '{name}' must be a non-empty string without surrounding "
                             f"spaces, got {value!r}")
    elif not _is_number(value) or not math.isfinite(float(value)):  # type: ignore[arg-type]
        raise ValueError(f"{what} of column '{name}' must be a string or a finite number, got {value!r}")


@dataclass(frozen=True)
class ColumnSpec:
    """A column's declared public domain ``[lower, upper]`` and fixed-point ``precision`` (fractional bits), or its
    declared category list with an optional ``other`` bucket (code ``k``; ``None``: such a value is refused).  A
    numeric column's ``step`` is its declared recording resolution (grid ``lower + i * step``; ``None``: the
    fixed-point grid).  ValueError, one line, on a bad declaration.  Details: docs/secure_layer.md."""

    name: str
    lower: float
    upper: float
    precision: int = 0
    categories: tuple[Category, ...] | None = None
    other: Category | None = None
    step: float | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise ValueError(f"domain of column '{self.name}' must be finite, got [{self.lower}, {self.upper}]")
        if self.upper <= self.lower:
            raise ValueError(f"domain of column '{self.name}' must have lower < upper, "
                             f"got [{self.lower}, {self.upper}]")
        if not (0 <= self.precision <= 52):
            raise ValueError(f"precision must lie in [0, 52] bits, got {self.precision}")
        if self.categories is None:
            steps = (self.upper - self.lower) * 2.0 ** self.precision
            if not steps < 2.0 ** MAX_WIDTH_BITS:  # inf too (1e308 wide with 16 bits)
                raise ValueError(f"domain of column '{self.name}' is too wide for its fixed-point encoding: "
                                 f"(upper - lower) * 2^{self.precision} = {steps:.3g} steps, at most "
                                 f"2^{MAX_WIDTH_BITS}; declare a narrower domain or fewer fractional bits")
            if self.other is not None:
                raise ValueError(f"column '{self.name}' declares an 'other' category but no category list")
            if self.step is not None:
                self._check_step()
            return
        if self.step is not None:
            raise ValueError(f"categorical column '{self.name}' takes no step: its grid is its category list")
        categories = tuple(_plain(c) for c in self.categories)
        object.__setattr__(self, "categories", categories)
        if self.other is not None:
            object.__setattr__(self, "other", _plain(self.other))
        if self.precision != 0:
            raise ValueError(f"categorical column '{self.name}' must have precision 0, got {self.precision}")
        for value in categories:
            _check_category(self.name, value, "a category")
        if len({isinstance(value, str) for value in categories}) > 1:
            raise ValueError(f"categories of column '{self.name}' must be all strings or all numbers")
        if len(set(categories)) != len(categories):
            raise ValueError(f"categories of column '{self.name}' must be distinct")
        if self.other is not None:
            _check_category(self.name, self.other, "the 'other' category")
            if self.other in categories:
                raise ValueError(f"the 'other' category {self.other!r} of column '{self.name}' is also in its list")
        if self.codes < 2:
            raise ValueError(f"column '{self.name}' needs at least two categories (or one and an 'other'), "
                             f"got {self.codes}")
        if self.codes > MAX_CATEGORIES:
            raise ValueError(f"column '{self.name}' declares {self.codes} categories; at most {MAX_CATEGORIES}")

    def _check_step(self) -> None:
        step = self.step
        if isinstance(step, bool) or not isinstance(step, (int, float)) or not math.isfinite(step) or step <= 0:
            raise ValueError(f"step of column '{self.name}' must be a positive finite number, got {step!r}")
        points = (self.upper - self.lower) / step
        if abs(points - round(points)) > 1e-9 * max(1.0, points):
            raise ValueError(f"step {step:g} of column '{self.name}' must divide its domain [{self.lower:g}, "
                             f"{self.upper:g}] into whole steps")
        if step * 2 ** self.precision < 1 - 1e-12:
            raise ValueError(f"step {step:g} of column '{self.name}' is finer than its {self.precision} fractional "
                             f"bits (2^-{self.precision} = {2.0 ** -self.precision:g}): declare more bits or a "
                             "coarser step")
        object.__setattr__(self, "step", float(step))

    @classmethod
    def categorical(cls, name: str, categories: Sequence[Category], *, other: Category | None = None) -> ColumnSpec:
        """A categorical column: ``categories`` (strings or numbers, in code order) and an optional ``other`` bucket;
        ``lower``/``upper`` by the convention of docs/secure_layer.md."""
        listed = tuple(_plain(c) for c in categories)
        codes = len(listed) + (other is not None)
        lower, upper = 0.0, float(max(codes - 1, 1))
        if listed and all(_is_number(c) for c in listed) and all(math.isfinite(float(c)) for c in listed):
            low, high = float(min(listed)), float(max(listed))  # type: ignore[type-var]
            if low < high:
                lower, upper = low, high
        return cls(name, lower, upper, 0, listed, other)

    @property
    def is_categorical(self) -> bool:
        """Whether the column has a declared category list (shared as codes, never clipped)."""
        return self.categories is not None

    @property
    def labels(self) -> tuple[Category, ...]:
        """Every category by code: the list, then ``other`` if declared."""
        if self.categories is None:
            return ()
        return self.categories + (() if self.other is None else (self.other,))

    @property
    def codes(self) -> int:
        """Number of codes of a categorical column (``k``, or ``k + 1`` with ``other``); 0 if numeric."""
        return len(self.labels)

    @property
    def textual(self) -> bool:
        """Whether the categories are strings (the reader then turns cells into codes)."""
        return bool(self.categories) and isinstance(self.categories[0], str)  # type: ignore[index]

    @property
    def width(self) -> int:
        """Largest fixed-point integer of the domain (the smallest is 0); ``codes - 1`` if categorical."""
        if self.categories is not None:
            return self.codes - 1
        return int(round((self.upper - self.lower) * 2 ** self.precision))

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Fixed-point integers ``round((x - lower) * 2**precision)`` (no clipping; numeric columns).
        Details: docs/secure_layer.md."""
        shifted = np.asarray(values, dtype=float) - self.lower
        if self.step is not None:
            return np.rint(np.rint(shifted / self.step) * (self.step * 2 ** self.precision)).astype(np.int64)
        return np.rint(shifted * 2 ** self.precision).astype(np.int64)

    @property
    def grid_size(self) -> int:
        """Number of points of the column's declared grid: codes, or ``(upper - lower) / step + 1``."""
        if self.categories is not None:
            return self.codes
        if self.step is None:
            return self.width + 1
        return int(round((self.upper - self.lower) / self.step)) + 1

    def grid_values(self) -> np.ndarray:
        """The fixed-point integer of every grid point, increasing (codes ``0 .. k-1`` if categorical)."""
        if self.categories is not None or self.step is None:
            return np.arange(self.grid_size, dtype=np.int64)
        return np.rint(np.arange(self.grid_size) * (self.step * 2 ** self.precision)).astype(np.int64)

    def grid_index(self, integers: np.ndarray) -> np.ndarray:
        """The grid index of encoded (and clipped) values, as :meth:`encode` produces them; ValueError off the grid (a
        local programming error, never data-dependent output)."""
        integers = np.asarray(integers, dtype=np.int64)
        grid = self.grid_values()
        index = np.clip(np.searchsorted(grid, integers), 0, len(grid) - 1)
        if integers.size and not np.array_equal(grid[index], integers):
            raise ValueError(f"column '{self.name}' holds values off its declared grid (clip them first)")
        return index.astype(np.int64)

    def decode(self, integers: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`encode` up to rounding: ``lower + k * 2**-precision``."""
        return self.lower + np.asarray(integers, dtype=float) * 2.0 ** -self.precision

    def describe_categories(self, most: int = 8) -> str:
        """The declared list for messages, ``a/b/c`` (long lists shortened; ``*other`` last)."""
        listed = [f"{c:g}" if _is_number(c) else str(c) for c in (self.categories or ())]
        if len(listed) > most:
            listed = listed[:3] + ["..."] + listed[-2:]
        if self.other is not None:
            listed.append(f"*{self.other}")
        return "/".join(listed)

    @functools.cached_property
    def _lookup(self) -> dict[Category, int]:
        return {value: code for code, value in enumerate(self.categories or ())}

    def category_code(self, value: Category) -> int | None:
        """The code of ``value`` if it is one of the declared categories (not ``other``), else ``None``.
        Details: docs/secure_layer.md."""
        if self.categories is None:
            return None
        if isinstance(value, str):
            if self.textual:
                return self._lookup.get(value.strip())
            try:
                return self._lookup.get(float(value))
            except ValueError:
                return None
        return self._lookup.get(f"{value:g}") if self.textual else self._lookup.get(value)

    def cell_code(self, cell: str) -> float | None:
        """A cell of a string-category column as its code: exact match first, then a missing token
        (``nan``), then ``other``; ``None`` if the cell is outside the list and there is no ``other``."""
        text = cell.strip()
        code = self._lookup.get(text)
        if code is not None:
            return float(code)
        if text.lower() in MISSING_TOKENS:
            return math.nan
        return float(len(self.categories or ())) if self.other is not None else None

    def value_codes(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Codes of a party's column (vectorized), and the mask of values outside the list. Details: docs/secure_layer.md."""
        column = np.asarray(values, dtype=float)
        if self.textual:
            valid = np.isfinite(column) & (column == np.rint(column)) & (column >= 0) & (column < self.codes)
            return np.where(valid, column, 0).astype(np.int64), ~valid
        listed = np.array(self.categories, dtype=float)
        order = np.argsort(listed, kind="stable")
        ranked = listed[order]
        position = np.clip(np.searchsorted(ranked, column), 0, len(ranked) - 1)
        found = ranked[position] == column
        codes = np.where(found, order[position], len(ranked)).astype(np.int64)
        outside = ~found if self.other is None else np.zeros(column.shape, dtype=bool)
        return codes, outside

    def outside_message(self) -> str:
        """The shared line for a value outside the list (names the column, never a value or a count); a list of the
        labels ``0, 1, ..., k-1`` with no ``other`` (codes equal values) is named as such."""
        if self.other is None and self.categories is not None \
                and all(_is_number(c) and c == code for code, c in enumerate(self.categories)):
            return f"column '{self.name}' must hold labels {self.describe_categories()}, found another value"
        return f"column '{self.name}' has a value outside its declared categories"


#: largest number of fractional bits (a float's mantissa)
MAX_BITS = 52
#: a numeric domain spans fewer than ``2**MAX_WIDTH_BITS`` fixed-point steps (its encoding is an int64)
MAX_WIDTH_BITS = 62


def _check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TypeError(f"a column name must be a non-empty string, got {name!r}")
    return name.strip()


def numeric(name: str, *, lower: float, upper: float, bits: int = 0, step: float | None = None) -> ColumnSpec:
    """A numeric column with the declared public domain ``[lower, upper]`` and ``bits`` fractional bits.
    Details: docs/secure_layer.md."""
    name = _check_name(name)
    low = check_finite(lower, "lower")
    high = check_finite(upper, "upper")
    if not high > low:
        raise ValueError(f"upper must be greater than lower, got lower={lower}, upper={upper} (column '{name}')")
    precision = check_int_range(bits, "bits", low=0, high=MAX_BITS)
    if step is not None:
        step = check_finite(step, "step")
    return ColumnSpec(name, low, high, precision, step=step)


def label(name: str) -> ColumnSpec:
    """A 0/1 label column (the label of an AUC); any other value is refused at its party."""
    return ColumnSpec(_check_name(name), 0.0, 1.0, 0, (0, 1))


def classes(name: str, k: int) -> ColumnSpec:
    """A column of ``k >= 2`` ordered classes ``0, 1, ..., k-1`` (VUS takes ``k = 3``)."""
    count = check_int_at_least(k, "k (the number of classes)", 2)
    return ColumnSpec(_check_name(name), 0.0, float(count - 1), 0, tuple(range(count)))


def categorical(name: str, *, categories: Sequence[Any], other: Any = None) -> ColumnSpec:
    """A categorical column with a declared public list of at least two distinct categories, all integers or all
    strings (a lone string is refused). Details: docs/secure_layer.md."""
    name = _check_name(name)
    if isinstance(categories, (str, bytes)) or not isinstance(categories, Sequence):
        raise TypeError(f"categories must be a list, got {categories!r} (column '{name}')")
    values = tuple(categories)
    if len(values) < 2:
        raise ValueError(f"categories must hold at least two values, got {len(values)} (column '{name}')")
    if len(set(values)) != len(values):
        twice = next(value for value in values if values.count(value) > 1)
        raise ValueError(f"category {twice!r} is given twice (column '{name}')")
    integers = all(isinstance(value, numbers.Integral) and not isinstance(value, bool) for value in values)
    if not integers and not all(isinstance(value, str) for value in values):
        raise TypeError(f"categories must be all integers or all strings, got {list(values)!r} (column '{name}')")
    listed = tuple(int(value) for value in values) if integers else values
    return ColumnSpec.categorical(name, listed, other=other)
