"""The private-ECDF query's public parameters, validated once (Barczewski, Mawass & Ramon, §3-4).

:class:`EcdfParameters` holds what every party agrees on before a release: the declared domain, the grid,
the budget, the protocol (§4.1 tree or §4.2 FSS) and its options; :class:`dp.ecdf.face.EcdfQuery` adds the
verbs.  The release modules read these fields, never the face.  Details: docs/ecdf.md."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from dp.ecdf.grid import grid_of_points, tree_depth
from dp.ecdf.tree import plan_tree_noise
from dp.validation import check_choice, check_epsilon, check_integer, check_nonnegative_int
from secure.fss.dcf import MAX_FULL_DOMAIN_BITS
from secure.intake import MissingPolicy

__all__ = ["EcdfParameters", "Protocol", "GridKind", "Smoothing", "MAX_DCF_BITS", "check_bits"]

#: the widest DCF this protocol asks for: every server expands its keys over ``2^bits`` points (the full-domain
#: limit of :mod:`secure.fss.dcf`, ``MAX_FULL_DOMAIN_BITS``, checked on use)
MAX_DCF_BITS = 22

Protocol = Literal["tree", "fss"]
GridKind = Literal["uniform", "geometric"]
#: the norm ``p`` of the smoothing (eq. 3); ``None`` releases the raw curve
Smoothing = Literal[1, 2]


def check_bits(points: int, bits: int | None = None) -> int:
    """The DCF bit width for ``points = N >= 1`` grid points: ``bits`` if it fits, ``None``: the smallest,
    ``max(1, ceil(log2 N))``; ValueError if the grid does not fit ``2^bits`` indices or ``bits`` is out of range."""
    smallest = max(1, tree_depth(points))
    if bits is None:
        return smallest
    check_integer(bits, "bits")
    limit = min(MAX_DCF_BITS, MAX_FULL_DOMAIN_BITS)
    if not 1 <= bits <= limit:
        raise ValueError(f"the DCF bit width must lie in [1, {limit}] (full-domain evaluation), got {bits}")
    if points > 1 << int(bits):
        raise ValueError(f"a grid of {points} points does not fit the DCF's bit width {bits} "
                         f"(2^{bits} = {1 << int(bits)} indices); use at least {smallest} bits")
    return int(bits)


@dataclass(frozen=True, kw_only=True)
class EcdfParameters:
    """The public parameters of a private ECDF of one column on ``points`` grid points of ``[lower, upper]`` at
    budget ``epsilon``; ``protocol`` ``tree`` (§4.1) or ``fss`` (§4.2) (parameters: docs/ecdf.md).
    :raise ValueError: on a bad parameter (``epsilon must be positive, got -1``); :raise TypeError: a wrong type."""

    lower: float | None = None
    upper: float | None = None
    epsilon: float = 1.0
    points: int = 1024
    grid: GridKind = "uniform"
    protocol: Protocol = "tree"
    release: int | None = None
    queries: tuple[int, ...] | None = None
    at: tuple[float, ...] = ()
    bits: int | None = None
    store: str | None = None
    answer: str | None = None
    smooth: Smoothing | None = 2
    quantiles: tuple[float, ...] = (0.1, 0.25, 0.5, 0.75, 0.9)
    column: str = "value"
    missing: MissingPolicy = field(default_factory=MissingPolicy)

    def __post_init__(self) -> None:
        check_choice(self.protocol, ("tree", "fss"), "protocol")
        check_choice(self.grid, ("uniform", "geometric"), "grid")
        if self.smooth not in (None, 1, 2):
            raise ValueError(f"smooth must be 1, 2 or None, got {self.smooth!r}")
        if any(not 0 < q < 1 for q in self.quantiles):
            raise ValueError(f"quantiles must lie strictly between 0 and 1, got {list(self.quantiles)}")
        fss_only = {"queries": self.queries is not None, "at": bool(self.at), "bits": self.bits is not None,
                    "store": self.store is not None, "answer": self.answer is not None}
        if self.protocol == "tree" and any(fss_only.values()):
            raise ValueError(f"{next(k for k, v in fss_only.items() if v)} is an option of protocol='fss'")
        if self.protocol == "fss" and self.release is not None:
            raise ValueError("release is an option of protocol='tree' (fss: queries or at)")
        if self.queries is not None and self.at:
            raise ValueError("give queries (grid indices) or at (values), not both")
        for index in self.queries or ():
            check_nonnegative_int(index, "a query index")
        if self.answer is not None:
            if self.store is not None:
                raise ValueError("answer reads stored keys: it takes no store")
            return
        if self.lower is None or self.upper is None:
            raise ValueError("lower and upper (the declared domain) are required")
        check_epsilon(self.epsilon)
        self.grid_points()
        plan_tree_noise(epsilon=self.epsilon, points=self.points)  # the node noise must be drawable
        if self.release is not None and not 2 <= self.release <= self.points:
            raise ValueError(f"release must lie in [2, points = {self.points}], got {self.release}")
        if self.protocol == "fss":
            check_bits(self.points, self.bits)

    def grid_points(self) -> np.ndarray:
        """The public grid ``tau_1 = lower < ... < tau_N = upper`` (:func:`dp.ecdf.grid.grid_of_points`)."""
        assert self.lower is not None and self.upper is not None
        return grid_of_points(self.lower, self.upper, self.points, kind=self.grid)
