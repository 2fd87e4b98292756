"""Parameter checks where parameters enter, with plain messages in the style of OpenDP/diffprivlib.

Every check raises :class:`ValueError` (or :class:`TypeError` for a wrong type) whose message names
the parameter and the offending value, e.g. ``epsilon must be positive, got 0``.
"""
from __future__ import annotations

import math
from numbers import Integral, Real


def check_epsilon(epsilon: float) -> float:
    """Return ``epsilon`` as a float if it is a finite positive number.

    :param epsilon: privacy-loss parameter.
    :raise ValueError: if epsilon is not finite or not positive.
    """
    if isinstance(epsilon, bool) or not isinstance(epsilon, Real):
        raise TypeError(f"epsilon must be a number, got {epsilon!r}")
    value = float(epsilon)
    if not math.isfinite(value):
        raise ValueError(f"epsilon must be finite, got {epsilon}")
    if value <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    return value


def check_delta(delta: float) -> float:
    """Return ``delta`` as a float if ``0 <= delta < 1``.

    :param delta: failure probability of (epsilon, delta)-DP; 0 means pure DP.
    :raise ValueError: if delta lies outside [0, 1).
    """
    if isinstance(delta, bool) or not isinstance(delta, Real):
        raise TypeError(f"delta must be a number, got {delta!r}")
    value = float(delta)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    return value


def check_positive_int(value: int, name: str) -> int:
    """Return ``value`` if it is an integer of at least 1.

    :raise ValueError: if value < 1.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}")
    return int(value)


def check_parties(parties: int, threshold: int) -> tuple[int, int]:
    """Return ``(parties, threshold)`` if ``0 <= threshold`` and ``2 * threshold < parties``.

    MPyC's Shamir scheme needs an honest majority, so the coalition size ``threshold`` (MPyC's
    ``-T``) must stay below half the number of parties.

    :raise ValueError: if the pair is not a valid honest-majority setting.
    """
    check_positive_int(parties, "parties")
    if isinstance(threshold, bool) or not isinstance(threshold, Integral):
        raise TypeError(f"threshold must be an integer, got {threshold!r}")
    if threshold < 0:
        raise ValueError(f"threshold must be non-negative, got {threshold}")
    if 2 * threshold >= parties:
        raise ValueError(f"threshold must be below half the number of parties ({parties}), got {threshold}")
    return int(parties), int(threshold)


def check_finite(value: float, name: str) -> float:
    """Return ``value`` as a float if it is a finite real number.

    :raise TypeError: if it is not a number; :raise ValueError: if it is NaN or infinite.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {value}")
    return result


def check_positive(value: float, name: str) -> float:
    """Return ``value`` as a float if it is finite and positive.

    :raise ValueError: if it is not positive.
    """
    result = check_finite(value, name)
    if result <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return result


def check_integer(value: int, name: str) -> int:
    """Return ``value`` as an int if it is an integer (not a bool).

    :raise TypeError: otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


def smallest_noise_epsilon(sensitivity: float) -> float:
    """The smallest epsilon whose discrete Laplace noise the integer samplers can draw at ``sensitivity``.

    A party's share of the discrete Laplace ``DLap(alpha)``, ``alpha = exp(-epsilon / sensitivity)``,
    is a difference of Pólya draws of mean ``shape * alpha / (1 - alpha) <= 1 / expm1(epsilon /
    sensitivity)`` (``shape = 1/(m - t) <= 1``), and :func:`secure.noise.party.polya` accepts means up to
    :data:`secure.noise.party.MAX_POLYA_MEAN` (``2**40``, where its double-precision Poisson stage is still
    exact on integers).  So ``epsilon >= sensitivity * log1p(2**-40)`` (about ``9.1e-13 *
    sensitivity``), whatever ``m`` and ``t``; below it ``alpha`` also rounds towards 1 in doubles.
    (Mironov 2012: floating-point noise must not be released; this keeps the integer noise exact.)

    :param sensitivity: the sensitivity of the released integer sum, positive.
    """
    from secure.noise.party import MAX_POLYA_MEAN

    return check_positive(sensitivity, "sensitivity") * math.log1p(1.0 / MAX_POLYA_MEAN)


def check_noise_scale(epsilon: float, sensitivity: float, *, name: str = "epsilon") -> float:
    """Return ``epsilon`` if the discrete Laplace noise of scale ``sensitivity / epsilon`` can be drawn.

    :param epsilon: budget of one released integer sum, positive and finite.
    :param sensitivity: its sensitivity, positive.
    :param name: how the message names the budget (e.g. ``epsilon per released sum``).
    :raise ValueError: if epsilon is below :func:`smallest_noise_epsilon` (the message gives the
        bound and the way out: a larger epsilon, or binomial noise with ``--delta``).
    """
    value = check_epsilon(epsilon)
    smallest = smallest_noise_epsilon(sensitivity)
    if value < smallest:
        raise ValueError(f"{name} {epsilon:g} is too small for integer discrete Laplace noise at sensitivity "
                         f"{sensitivity:g} (scale sensitivity/epsilon above 2^40): {name} must be at least "
                         f"{_round_up(smallest)}")
    return value


def check_seed(seed: int, name: str = "seed") -> int:
    """Return ``seed`` if it is an integer in ``[0, 2**63)`` (NumPy's seed sequences take no negatives).

    :raise TypeError: if it is not an integer; :raise ValueError: if it is out of range.
    """
    value = check_integer(seed, name)
    if not 0 <= value < 1 << 63:
        raise ValueError(f"{name} must be an integer in [0, 2^63), got {seed}")
    return value


def _round_up(value: float) -> str:
    """``value > 0`` with three significant digits, rounded up (a lower bound that holds as printed)."""
    step = 10.0 ** (math.floor(math.log10(value)) - 2)
    rounded = math.ceil(value / step) * step
    while float(f"{rounded:.3g}") < value:
        rounded += step
    return f"{rounded:.3g}"
