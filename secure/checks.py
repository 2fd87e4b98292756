"""Generic parameter checks, with plain messages in the style of OpenDP/diffprivlib.

The lowest home of the suite's argument checks: :mod:`secure` uses them directly and
:mod:`dp.validation` re-exports them next to the DP-specific checks (epsilon, delta, noise scale),
so ``dp`` code imports every check from one place.  Nothing here knows about privacy.

Every check returns the value in its canonical type (``float`` or ``int``) and raises
:class:`TypeError` for a wrong type or :class:`ValueError` for a value out of range; the message
names the parameter and the offending value, e.g. ``shape must be positive, got -1``.  Booleans are
never numbers here (``True`` is not a count of 1).

Threat model: none of its own; these are the entry checks of the callers' public functions, so a
misuse raises a clear exception at the call rather than a wrong release later.
"""
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
    """Return ``value`` as a float if it is a real number (NaN and infinities included).

    :raise TypeError: if it is not a real number (or is a bool).
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    return float(value)


def check_finite(value: float, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number.

    :raise TypeError: if it is not a number; :raise ValueError: if it is NaN or infinite.
    """
    result = check_number(value, name)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {value}")
    return result


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and positive.

    :raise ValueError: if it is not finite or not positive.
    """
    result = check_finite(value, name)
    if result <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return result


def check_nonnegative(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and at least 0.

    :raise ValueError: if it is not finite or negative.
    """
    result = check_finite(value, name)
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return result


def check_interval(value: float, name: str, *, low: float, high: float, closed_low: bool = True,
                   closed_high: bool = False) -> float:
    """Return ``value`` as a float if it lies in the interval from ``low`` to ``high``.

    The message writes the interval as ``[low, high)`` (brackets by ``closed_low``/``closed_high``),
    e.g. ``alpha must lie in [0, 1), got 1.5``; NaN lies in no interval.

    :raise TypeError: if it is not a number; :raise ValueError: if it lies outside.
    """
    result = check_number(value, name)
    above = result >= low if closed_low else result > low
    below = result <= high if closed_high else result < high
    if not (above and below):
        interval = f"{'[' if closed_low else '('}{low:g}, {high:g}{']' if closed_high else ')'}"
        raise ValueError(f"{name} must lie in {interval}, got {value}")
    return result


def check_integer(value: int, name: str) -> int:
    """Return ``value`` as an int if it is an integer (not a bool).

    :raise TypeError: otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def check_int_at_least(value: int, name: str, minimum: int) -> int:
    """Return ``value`` as an int if it is an integer of at least ``minimum``.

    :raise TypeError: if it is not an integer; :raise ValueError: if it is below ``minimum``.
    """
    result = check_integer(value, name)
    if result < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return result


def check_positive_int(value: int, name: str) -> int:
    """Return ``value`` if it is an integer of at least 1.

    :raise ValueError: if value < 1.
    """
    return check_int_at_least(value, name, 1)


def check_nonnegative_int(value: int, name: str) -> int:
    """Return ``value`` as an int if it is an integer of at least 0.

    :raise TypeError: if it is not an integer; :raise ValueError: if it is negative.
    """
    result = check_integer(value, name)
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return result


def check_int_range(value: int, name: str, *, low: int, high: int) -> int:
    """Return ``value`` as an int if it is an integer in ``[low, high]``.

    :raise TypeError: if it is not an integer; :raise ValueError: if it lies outside.
    """
    result = check_integer(value, name)
    if not low <= result <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value}")
    return result


def check_choice(value: str, choices: Sequence[str], name: str) -> str:
    """Return ``value`` if it is one of ``choices``.

    :raise ValueError: otherwise, listing the choices (``rounding must be one of simple, randomized,
        got 'nearest'``).
    """
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def check_bool(value: bool, name: str) -> bool:
    """Return ``value`` if it is a bool (not merely truthy).

    :raise TypeError: otherwise.
    """
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {value!r}")
    return value


def check_instance(value: Any, kind: type[T], name: str) -> T:
    """Return ``value`` if it is an instance of ``kind``.

    :raise TypeError: otherwise (``plan must be a SecretLaplacePlan, got dict``).
    """
    if not isinstance(value, kind):
        raise TypeError(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def check_generator(rng: Any, name: str = "rng") -> np.random.Generator:
    """Return ``rng`` if it is a :class:`numpy.random.Generator`.

    :raise TypeError: otherwise (``None`` included: callers that allow it decide before).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng
