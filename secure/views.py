"""A party's own view of secret-shared values: its Shamir shares as integers, and Lagrange recombination, for the
coalition drills (``python -m scenarios.drills.coalition -M3``).  Threat model: passive, static, ``t < m/2``;
these helpers only *read* this party's own shares.  MPyC's Shamir scheme: docs/secure_layer.md."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["local_share_integers", "field_modulus", "share_point", "recombine"]


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


def recombine(points: Sequence[int], shares: Sequence[Sequence[int]], modulus: int) -> list[int]:
    """Interpolate at 0 (MPyC's ``thresha.recombine``), coordinate by coordinate, the share vectors at ``points``
    modulo the prime ``modulus``: the secrets if ``len(points) > t`` (docs/secure_layer.md).
    :raise ValueError: if the numbers of points and share vectors differ, their lengths differ, or the points are
        none or not distinct modulo ``p``."""
    from mpyc import finfields, thresha

    if len(points) != len(shares):
        raise ValueError(f"got {len(points)} points but {len(shares)} share vectors")
    lengths = {len(vector) for vector in shares}
    if len(lengths) > 1:
        raise ValueError(f"share vectors must have equal lengths, got {sorted(lengths)}")
    if not points:
        raise ValueError("need at least one point to interpolate")
    if len({int(x) % modulus for x in points}) != len(points):
        raise ValueError(f"interpolation points must be distinct modulo p, got {list(points)}")
    pooled = [(int(x), [int(share) for share in vector]) for x, vector in zip(points, shares)]
    return [int(value) % modulus for value in thresha.recombine(finfields.GF(modulus), pooled)]
