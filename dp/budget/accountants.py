"""Privacy accountants: how the spends recorded in a ledger add up, and whether one more still fits.
Basic composition (Dwork & Roth 2014, Thm 3.16) or zCDP (Bun & Steinke 2016, Prop. 1.3, 1.4, Lemma 1.7).
Arithmetic over public numbers only; reads no data.  Details: docs/budget.md."""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal, cast

from dp.validation import check_choice

__all__ = ["Accountant", "ACCOUNTANTS", "Spend", "Budget", "parse_budget", "check_accountant", "zcdp_to_epsilon",
           "spend_rho", "would_exceed_totals", "Totals", "RELATIVE_TOLERANCE"]

Accountant = Literal["basic", "zcdp"]
ACCOUNTANTS: tuple[Accountant, ...] = ("basic", "zcdp")

#: Sums of floating-point spends may land a rounding error above the budget (0.1 + 0.2 > 0.3); a total
#: within this relative tolerance of the budget still fits.  It is far below any meaningful epsilon.
RELATIVE_TOLERANCE = 1e-9


def _as_float(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}")
    return float(value)


def _finite(value: object, name: str, *, positive: bool = False) -> float:
    number = _as_float(value, name)
    if not (math.isfinite(number) and (number > 0 if positive else number >= 0)):
        raise ValueError(f"{name} must be {'positive' if positive else 'non-negative'} and finite, got {number:g}")
    return number


def _delta(value: object, name: str) -> float:
    number = _as_float(value, name)
    if not 0.0 <= number < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {number:g}")
    return number


def check_accountant(accountant: object) -> Accountant:
    """Return ``accountant`` if it is one of :data:`ACCOUNTANTS`.
    :raise ValueError: ``accountant must be one of basic, zcdp, got 'rdp'``."""
    return cast(Accountant, check_choice(cast(str, accountant), ACCOUNTANTS, "accountant"))


@dataclass(frozen=True)
class Spend:
    """The privacy cost of one release (the fields: docs/budget.md).
    :raise ValueError: a negative or non-finite epsilon, a delta outside ``[0, 1)``, a negative or non-finite rho."""

    epsilon: float
    delta: float = 0.0
    rho: float | None = None
    mechanism: str = ""
    what: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _finite(self.epsilon, "spend epsilon"))
        object.__setattr__(self, "delta", _delta(self.delta, "spend delta"))
        if self.rho is not None:
            object.__setattr__(self, "rho", _finite(self.rho, "spend rho"))
        for name in ("mechanism", "what"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"spend {name} must be text, got {getattr(self, name)!r}")


@dataclass(frozen=True)
class Budget:
    """The total privacy budget a data holder grants on one dataset: ``epsilon`` positive and finite, ``delta`` in
    ``[0, 1)`` (0 allows pure-DP releases only).
    :raise ValueError: ``budget epsilon must be positive and finite, got -1``, or likewise for delta."""

    epsilon: float
    delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", _finite(self.epsilon, "budget epsilon", positive=True))
        object.__setattr__(self, "delta", _delta(self.delta, "budget delta"))

    def __str__(self) -> str:
        return f"epsilon {self.epsilon:g}, delta {self.delta:g}"


def parse_budget(text: str) -> Budget:
    """``"EPS[:DELTA]"`` (``"2.5"``, ``"2.5:1e-6"``) -> :class:`Budget`.
    :raise ValueError: a plain one-line message (``budget must be EPS or EPS:DELTA ..., got 'x'``, or :class:`Budget`'s)."""
    if not isinstance(text, str):
        raise ValueError(f"budget must be text EPS or EPS:DELTA, got {text!r}")
    parts = text.strip().split(":")
    if len(parts) > 2 or not all(part.strip() for part in parts):
        raise ValueError(f"budget must be EPS or EPS:DELTA (e.g. 2.5 or 2.5:1e-6), got '{text}'")
    try:
        numbers = [float(part) for part in parts]
    except ValueError:
        raise ValueError(f"budget must be EPS or EPS:DELTA with numbers (e.g. 2.5 or 2.5:1e-6), got '{text}'") from None
    return Budget(*numbers)


def zcdp_to_epsilon(rho: float, delta: float) -> float:
    """The epsilon of ``rho``-zCDP at ``delta``: ``rho + 2 sqrt(rho ln(1/delta))`` (Bun & Steinke 2016,
    Prop. 1.3); ``0`` for ``rho = 0``; ``inf`` for ``rho > 0`` and ``delta <= 0`` (no conversion)."""
    if rho <= 0:
        return 0.0
    if delta <= 0:
        return math.inf
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def spend_rho(spend: Spend) -> float | None:
    """The zCDP cost of ``spend``, or ``None`` if it has none (approximate DP that is not Gaussian-type).
    Details: docs/budget.md."""
    pure = spend.epsilon ** 2 / 2.0 if spend.delta == 0 else None
    if spend.rho is None:
        return pure
    return spend.rho if pure is None else min(spend.rho, pure)


@dataclass(frozen=True)
class Totals:
    """The running sums a ledger keeps of its counted spends, exact (rationals), so that one more spend is checked
    in constant time, whatever the number of spends before it (docs/budget.md)."""

    count: int = 0
    epsilon: Fraction = Fraction(0)
    delta: Fraction = Fraction(0)
    rho: Fraction = Fraction(0)
    other_epsilon: Fraction = Fraction(0)
    other_delta: Fraction = Fraction(0)

    @classmethod
    def of(cls, spends: Sequence[Spend]) -> Totals:
        return functools.reduce(Totals.plus, spends, cls())

    def plus(self, spend: Spend, sign: int = 1) -> Totals:
        """These totals with ``spend`` added (``sign=-1``: taken away, for a cancelled spend)."""
        rho = spend_rho(spend)
        epsilon, delta = Fraction(spend.epsilon) * sign, Fraction(spend.delta) * sign
        if rho is None:
            return Totals(self.count + sign, self.epsilon + epsilon, self.delta + delta, self.rho,
                          self.other_epsilon + epsilon, self.other_delta + delta)
        return Totals(self.count + sign, self.epsilon + epsilon, self.delta + delta, self.rho + Fraction(rho) * sign,
                      self.other_epsilon, self.other_delta)

    def composed(self, accountant: Accountant, delta_target: float) -> tuple[float, float]:
        """The composed ``(epsilon, delta)`` under ``accountant``, the zCDP part stated at ``delta_target`` (the
        budget's delta).  Details: docs/budget.md."""
        check_accountant(accountant)
        if accountant == "basic":
            return float(self.epsilon), float(self.delta)
        rho_total = float(self.rho)
        other_epsilon, other_delta = float(self.other_epsilon), float(self.other_delta)
        if rho_total <= 0:
            return other_epsilon, other_delta
        delta_prime = delta_target - other_delta
        if delta_prime <= 0:
            return math.inf, max(delta_target, other_delta)
        return zcdp_to_epsilon(rho_total, delta_prime) + other_epsilon, delta_prime + other_delta

    def to_text(self) -> str:
        """A canonical text form (exact), for storing beside the spends."""
        return ";".join([str(self.count)] + [f"{value.numerator}/{value.denominator}" for value in
                                             (self.epsilon, self.delta, self.rho, self.other_epsilon,
                                              self.other_delta)])

    @classmethod
    def from_text(cls, text: str) -> Totals:
        """The inverse of :meth:`to_text`; :raise ValueError: a text that is not one."""
        parts = str(text).split(";")
        if len(parts) != 6:
            raise ValueError("totals")
        return cls(int(parts[0]), *(Fraction(part) for part in parts[1:]))


#: how :func:`would_exceed_totals` starts the reason of a delta asked from a budget of delta 0
PURE_ONLY = "delta budget of 0 allows pure DP only"


def _over(total: float, limit: float) -> bool:
    return total > limit * (1.0 + RELATIVE_TOLERANCE) + 1e-300


def would_exceed_totals(accountant: Accountant, budget: Budget, totals: Totals, new: Spend) -> str | None:
    """``None`` if the spends of ``totals`` (what a ledger keeps: constant time) plus ``new`` fit ``budget`` under
    ``accountant``, else the one-line reason.  Details: docs/budget.md."""
    before_epsilon, before_delta = totals.composed(accountant, budget.delta)
    after_epsilon, after_delta = totals.plus(new).composed(accountant, budget.delta)
    terms = "" if accountant == "basic" else f" (zcdp accountant: epsilon at delta {budget.delta:g})"
    if math.isinf(after_epsilon):
        return (f"the zcdp accountant cannot state these spends at the budget's delta {budget.delta:g}: the "
                f"spends without a zCDP cost would use delta {after_delta:g} of it (Bun & Steinke Prop. 1.3 "
                f"needs delta' > 0)")
    if _over(after_epsilon, budget.epsilon):
        return (f"budget of {budget.epsilon:g} spent: {before_epsilon:g} spent, this run needs "
                f"{after_epsilon - before_epsilon:g}{terms}")
    if _over(after_delta, budget.delta):
        if budget.delta == 0:
            return f"{PURE_ONLY}: this run needs delta {new.delta:g}"
        return (f"delta budget of {budget.delta:g} spent: {before_delta:g} spent, this run needs "
                f"{after_delta - before_delta:g}{terms}")
    return None
