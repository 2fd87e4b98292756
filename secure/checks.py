"""Generic parameter checks, plain messages in the style of OpenDP/diffprivlib (re-exported by :mod:`dp.validation`):
each returns the value in its canonical type or raises ``TypeError``/``ValueError`` naming it (``shape must be positive,
got -1``).  Threat model: none of its own (entry checks of public functions).  Details: docs/secure_layer.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, TypeVar

import numpy as np

__all__ = ["check_number", "check_finite", "check_positive", "check_nonnegative", "check_interval",
           "check_integer", "check_int_at_least", "check_positive_int", "check_nonnegative_int", "check_int_range",
           "check_choice", "check_bool", "check_instance", "check_generator"]

T = TypeVar("T")


def check_number(value: float, name: str) -> float:
    """``value`` as a float if it is a real number (NaN and infinities included), else :class:`TypeError` (a bool too)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_finite(value: float, name: str) -> float:
    """``value`` as a float if it is a finite real number; :class:`TypeError` if not a number, :class:`ValueError` if not finite."""
    result = check_number(value, name)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {value}")
    return result


def check_positive(value: float, name: str) -> float:
    """``value`` as a float if it is finite and positive, else :class:`ValueError`."""
    result = check_finite(value, name)
    if result <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return result


def check_nonnegative(value: float, name: str) -> float:
    """``value`` as a float if it is finite and at least 0, else :class:`ValueError`."""
    result = check_finite(value, name)
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return result


def check_interval(value: float, name: str, *, low: float, high: float, closed_low: bool = True,
                   closed_high: bool = False) -> float:
    """``value`` as a float if it lies in ``[low, high)`` (brackets by ``closed_low``/``closed_high``, as the message
    writes them: ``alpha must lie in [0, 1), got 1.5``; NaN lies in no interval); :class:`TypeError` if not a
    number, :class:`ValueError` if outside."""
    result = check_number(value, name)
    above = result >= low if closed_low else result > low
    below = result <= high if closed_high else result < high
    if not (above and below):
        interval = f"{'[' if closed_low else '('}{low:g}, {high:g}{']' if closed_high else ')'}"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return result


def check_integer(value: int, name: str) -> int:
    """``value`` as an int if it is an integer (not a bool), else :class:`TypeError`."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_int_at_least(value: int, name: str, minimum: int) -> int:
    """``value`` as an int if it is an integer of at least ``minimum``; :class:`TypeError` / :class:`ValueError`."""
    result = check_integer(value, name)
    if result < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return result


def check_positive_int(value: int, name: str) -> int:
    """``value`` if it is an integer of at least 1, else :class:`ValueError` (:class:`TypeError` if not an integer)."""
    return check_int_at_least(value, name, 1)


def check_nonnegative_int(value: int, name: str) -> int:
    """``value`` as an int if it is an integer of at least 0; :class:`TypeError` / :class:`ValueError`."""
    result = check_integer(value, name)
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return result


def check_int_range(value: int, name: str, *, low: int, high: int) -> int:
    """``value`` as an int if it is an integer in ``[low, high]``; :class:`TypeError` / :class:`ValueError`."""
    result = check_integer(value, name)
    if not low <= result <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return result


def check_choice(value: str, choices: Sequence[str], name: str) -> str:
    """``value`` if it is one of ``choices``, else :class:`ValueError` listing them (``rounding must be one of simple,
    randomized, got 'nearest'``)."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_bool(value: bool, name: str) -> bool:
    """``value`` if it is a bool (not merely truthy), else :class:`TypeError`."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


def check_instance(value: Any, kind: type[T], name: str) -> T:
    """``value`` if it is an instance of ``kind``, else :class:`TypeError` (``plan must be a SecretLaplacePlan, got dict``)."""
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def check_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """``rng`` if it is a :class:`numpy.random.Generator`, else :class:`TypeError` (``None`` too: callers that allow it
    decide before)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
