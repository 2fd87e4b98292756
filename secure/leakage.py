"""What MPyC's secure comparisons open, how many of them a run makes, and how much that can leak.
Toft's comparison with Catrina & de Hoogh's masked opening (SCN 2010, §3): statistically hiding, mask
``K`` bits longer.  Threat model: passive, static coalition of ``t < m/2`` parties.  PRSS keys are PRF keys.  Derivation: docs/comparison_leakage.md.
"""
from __future__ import annotations

import math
from dataclasses import asdict, astuple, dataclass

__all__ = ["MaskedOpenings", "TUPLE_OPENINGS", "tuple_openings", "clip_openings", "sort_openings", "mask_divisor",
           "effective_mask_bits", "statistical_distance"]


@dataclass(frozen=True)
class MaskedOpenings:
    """Masked openings of one run, by kind: ``comparisons`` (``mpc.np_sgn``, ``LT`` or not), ``equality_tests``
    (``mpc.np_sgn(..., EQ=True)``), ``conversions`` (entries converted by ``mpc.convert``)."""

    comparisons: int = 0
    equality_tests: int = 0
    conversions: int = 0

    @property
    def total(self) -> int:
        """``N``: all masked openings of the run."""
        return self.comparisons + self.equality_tests + self.conversions

    def __add__(self, other: MaskedOpenings) -> MaskedOpenings:
        return MaskedOpenings(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other))))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


#: per evaluated tuple, the ``mpc.np_sgn`` entries of each kernel's ``secure`` (:mod:`secure.kernels`):
#: Kendall two signs, Gini one less-than, AUC one sign, duplicate one and Rand two equality tests, VUS two signs
TUPLE_OPENINGS: dict[str, MaskedOpenings] = {
    "kendall": MaskedOpenings(comparisons=2), "gini": MaskedOpenings(comparisons=1),
    "auc": MaskedOpenings(comparisons=1), "duplicate": MaskedOpenings(equality_tests=1),
    "rand": MaskedOpenings(equality_tests=2), "vus": MaskedOpenings(comparisons=2),
}


def _count(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return value


def tuple_openings(kernel: str, tuples: int) -> MaskedOpenings:
    """The openings of evaluating kernel ``kernel`` on ``tuples`` tuples (the tuples path).
    :raise ValueError: a kernel without a count here, or a negative number of tuples."""
    if kernel not in TUPLE_OPENINGS:
        raise ValueError(f"no count of comparisons for kernel '{kernel}'; known: {', '.join(TUPLE_OPENINGS)}")
    tuples = _count(tuples, "tuples")
    return MaskedOpenings(*(count * tuples for count in astuple(TUPLE_OPENINGS[kernel])))


def clip_openings(values: int) -> MaskedOpenings:
    """``--clip secure`` (:func:`secure.clipping.clip_secure`): two less-than tests per clipped value."""
    return MaskedOpenings(comparisons=2 * _count(values, "clipped values"))


def sort_openings(statistic: str, n: int, *, bits: int, type_bits: int) -> MaskedOpenings:
    """The openings of :func:`secure.ranking.sorted_auc_sums` (``auc``) or :func:`secure.ranking.sorted_gini_sum`
    (``gini``) on ``n`` rows: compare-exchanges, equality tests, conversions (docs/comparison_leakage.md).
    :raise ValueError: as :func:`secure.ranking.sort_costs`."""
    from secure.ranking import compact_bit_length, sort_costs

    cost = sort_costs(n, bits, statistic=statistic)
    converted = compact_bit_length(statistic, n, bits) < type_bits
    return MaskedOpenings(comparisons=cost.comparisons, equality_tests=cost.equality_tests,
                          conversions=cost.conversions if converted else 0)


def mask_divisor(parties: int, threshold: int, *, prss: bool = True) -> int:
    """``d``: how many random values MPyC adds up for one bounded random mask (``C(m, t)`` PRSS keys, or
    ``t + 1`` senders with ``--no-prss``); each is drawn below ``bound // d``."""
    return math.comb(parties, threshold) if prss else threshold + 1


def effective_mask_bits(sec_param: int, parties: int, threshold: int, *, prss: bool = True) -> int:
    """``k = bitlen(2^K // d) - 1``: the bits of a comparison's mask ``r_1`` that a coalition does not know
    (MPyC rounds each of the ``d`` parts down to a power of two)."""
    if sec_param < 1:
        raise ValueError(f"the security parameter must be positive, got {sec_param}")
    return max(0, ((1 << sec_param) // mask_divisor(parties, threshold, prss=prss)).bit_length() - 1)


def statistical_distance(openings: MaskedOpenings, *, sec_param: int, parties: int, threshold: int,
                         prss: bool = True) -> float:
    """A bound on the statistical distance between a coalition's view of the run and a simulation from the
    released values: the sum over the openings, ``2^-k`` (:func:`effective_mask_bits`) per comparison or equality
    test and ``d 2^-K`` per conversion (docs/comparison_leakage.md)."""
    comparison = 2.0 ** -effective_mask_bits(sec_param, parties, threshold, prss=prss)
    conversion = mask_divisor(parties, threshold, prss=prss) * 2.0 ** -sec_param
    return (openings.comparisons + openings.equality_tests) * comparison + openings.conversions * conversion
