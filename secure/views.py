"""A party's own view of secret-shared values: its Shamir shares as integers, and Lagrange recombination, for the
coalition drills (``python -m scenarios.drills.coalition -M3``).  Threat model: passive, static, ``t < m/2``;
these helpers only *read* this party's own shares.  MPyC's Shamir scheme: docs/secure_layer.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["local_share_integers", "field_modulus", "share_point", "lagrange_coefficients", "recombine"]


async def local_share_integers(values: Any) -> list[int]:
    """This party's own Shamir shares of a secure array (or secure number), as field integers.
    Nothing is sent: the shares are the ones this party already holds (``mpc.gather`` of a secure
    object waits for its share and returns it, it does not open it); in ``[0, p)``, flattened row-major."""
    from mpyc.runtime import mpc

    share = await mpc.gather(values)
    return [int(v) for v in np.ravel(share.value)]


def field_modulus(values: Any) -> int:
    """The prime ``p`` of the field in which a secure array or secure number is shared."""
    sectype = getattr(type(values), "sectype", type(values))
    return int(sectype.field.modulus)


def share_point(party: int) -> int:
    """The evaluation point of party ``party``'s Shamir share (MPyC: ``party + 1``)."""
    if party < 0:
        raise ValueError(f"party index must be non-negative, got {party}")
    return party + 1


def lagrange_coefficients(points: Sequence[int], modulus: int, at: int = 0) -> list[int]:
    """Lagrange coefficients ``l_i`` with ``f(at) = sum_i l_i f(x_i)`` for every ``f`` of degree < ``len(points)``.
    ``points``: distinct ``x_i`` (non-zero mod the prime ``modulus`` when ``at = 0``, the secret).
    :raise ValueError: on no points, or points that are not distinct modulo ``p``."""
    if not points:
        raise ValueError("need at least one point to interpolate")
    reduced = [int(x) % modulus for x in points]
    if len(set(reduced)) != len(reduced):
        raise ValueError(f"interpolation points must be distinct modulo p, got {list(points)}")
    coefficients = []
    for i, x_i in enumerate(reduced):
        others = reduced[:i] + reduced[i + 1:]
        numerator = math.prod(at - x_j for x_j in others)
        denominator = math.prod(x_i - x_j for x_j in others) % modulus
        coefficients.append(numerator * pow(denominator, -1, modulus) % modulus)
    return coefficients


def recombine(points: Sequence[int], shares: Sequence[Sequence[int]], modulus: int) -> list[int]:
    """Interpolate at 0, coordinate by coordinate, the share vectors at ``points`` modulo ``modulus``: the secrets if
    ``len(points) > t``, else a value uniform on ``GF(p)`` (docs/secure_layer.md).
    :raise ValueError: if the numbers of points and share vectors differ, or their lengths differ."""
    if len(points) != len(shares):
        raise ValueError(f"got {len(points)} points but {len(shares)} share vectors")
    lengths = {len(vector) for vector in shares}
    if len(lengths) > 1:
        raise ValueError(f"share vectors must have equal lengths, got {sorted(lengths)}")
    coefficients = lagrange_coefficients(points, modulus)
    total = np.zeros(lengths.pop() if lengths else 0, dtype=object)
    for coefficient, vector in zip(coefficients, shares):
        total = (total + coefficient * np.asarray(vector, dtype=object)) % modulus
    return [int(v) for v in total]
