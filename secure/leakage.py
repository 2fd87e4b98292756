"""What MPyC's secure comparisons open, how many of them a run makes, and how much that can leak.

MPyC's comparisons are statistically, not perfectly, hiding.  ``mpc.np_sgn(a, l=l)`` -- a sign, a
less-than test (``LT=True``) or an equality test (``EQ=True``), and so every sort compare-exchange and
every secure clip -- opens ``c = a + 2^l + r`` with ``r = r_0 + 2^l r_1``: ``r_0`` from ``l`` secret
random bits, ``r_1`` a pseudorandom secret integer below ``2^K`` (``K`` = ``mpc.options.sec_param``,
``-K``, default 30).  This is the comparison of Toft ("Primitives and applications for multi-party
computation", PhD thesis, Aarhus 2007; Damgård, Fitzi, Kiltz, Nielsen & Toft, TCC 2006) with the
masked opening of Catrina & de Hoogh (SCN 2010, §3): for ``|a - a'| < 2^l`` the opened values of
``a`` and of ``a'`` are within statistical distance ``|a - a'| / (2^l B) < 1 / B`` when the part of the
mask a coalition does not know is uniform on ``[0, 2^l B)``.  The rest of the comparison (Toft's
``[c < r]`` with a random sign, ``mpc.np_is_zero_public`` of a product with a random factor) opens
values whose distribution does not depend on ``a``.  A type conversion ``mpc.convert`` (the sort
path's change to a shorter secure type, :mod:`secure.ranking`) opens ``x + 2^(l-1) + r`` the same
way, ``r`` below about ``2^(K + l)``.

How large ``B`` is (MPyC 0.11, ``runtime._np_randoms`` and ``runtime._convert``).  With pseudorandom
secret sharing (PRSS, the default) the random integer is a sum of ``d = C(m, t)`` PRF values, one per
set of ``m - t`` parties, each below ``2^(bitlen(2^K // d) - 1)`` (``d = t + 1`` values from ``t + 1``
senders with ``--no-prss``); a coalition of ``t`` parties misses at least one of them.  So

- a comparison or equality test is within ``2^-k`` of a simulation, ``k = bitlen(2^K // d) - 1``
  (``k = K - 2`` at ``m = 3, t = 1``: ``d = 3``) -- :func:`opening_distance`;
- a conversion of ``l``-bit values is within ``(2^l - 1) / (floor(2^(K+l) / d) + 1) < d 2^-K``.

Over a run the distances add (a hybrid argument over the openings): a run with ``N`` masked openings
is within ``sum`` of them (:func:`statistical_distance`) of a simulated view that depends on the
released values only.  :mod:`dp.comparison_leakage` turns that into ``delta`` and chooses ``K``.

What opens nothing data-dependent (checked in the code; none of them calls ``mpc.np_sgn``,
``mpc.sgn``, ``mpc.convert``, ``mpc.trunc`` or a secure ``<``/``==``): the histogram path
(:mod:`secure.histograms`: inputs, sums, products), the ECDF and Hosmer-Lemeshow jobs
(``sum_party_vectors`` and the reveal), the FSS ECDF (2-party DCF keys, no MPyC opening), party noise
(``mpc.input``) and the in-MPC sampler (:mod:`secure.noise.mpc`: ``mpc.np_random_bits`` opens the
square of a random field element, independent of the bit, then products only).  Their count here is 0.

Counts per release path (:func:`tuple_openings`, :func:`sort_openings`, :func:`clip_openings`), from
public parameters only; a test counts the calls of ``mpc.np_sgn`` and ``mpc.convert`` of a real run and
holds them equal.  :mod:`secure.security_parameter` raises ``K`` and makes secure integers whose prime
field is large enough for it.

Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; PRSS keys are PRF keys
(the hiding is computational with PRSS, statistical with ``--no-prss``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["MaskedOpenings", "TUPLE_OPENINGS", "tuple_openings", "clip_openings", "sort_openings", "mask_divisor",
           "effective_mask_bits", "opening_distance", "statistical_distance"]


@dataclass(frozen=True)
class MaskedOpenings:
    """Masked openings of one run, by kind.

    :param comparisons: signs and less-than tests (``mpc.np_sgn``, ``LT`` or not).
    :param equality_tests: equality tests (``mpc.np_sgn(..., EQ=True)``).
    :param conversions: entries converted between secure integer types (``mpc.convert``).
    """

    comparisons: int = 0
    equality_tests: int = 0
    conversions: int = 0

    @property
    def total(self) -> int:
        """``N``: all masked openings of the run."""
        return self.comparisons + self.equality_tests + self.conversions

    def __add__(self, other: MaskedOpenings) -> MaskedOpenings:
        return MaskedOpenings(self.comparisons + other.comparisons, self.equality_tests + other.equality_tests,
                              self.conversions + other.conversions)

    def as_dict(self) -> dict[str, int]:
        """``{comparisons, equality_tests, conversions}``."""
        return {"comparisons": self.comparisons, "equality_tests": self.equality_tests,
                "conversions": self.conversions}


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

    :raise ValueError: a kernel without a count here, or a negative number of tuples.
    """
    if kernel not in TUPLE_OPENINGS:
        raise ValueError(f"no count of comparisons for kernel '{kernel}'; known: {', '.join(TUPLE_OPENINGS)}")
    per = TUPLE_OPENINGS[kernel]
    tuples = _count(tuples, "tuples")
    return MaskedOpenings(per.comparisons * tuples, per.equality_tests * tuples, per.conversions * tuples)


def clip_openings(values: int) -> MaskedOpenings:
    """``--clip secure`` (:func:`secure.clipping.clip_secure`): two less-than tests per clipped value."""
    return MaskedOpenings(comparisons=2 * _count(values, "clipped values"))


def sort_openings(statistic: str, n: int, *, bits: int, type_bits: int) -> MaskedOpenings:
    """The openings of :func:`secure.ranking.sorted_auc_sums` (``auc``) or :func:`secure.ranking.sorted_gini_sum`
    (``gini``) on ``n`` rows: the network's compare-exchanges, AUC's ``n - 1`` equality tests of adjacent
    scores, and the conversions into and out of the sort's shorter type when the caller's ``type_bits``
    is longer (AUC ``3n``: keys and labels in, rank terms out; Gini ``2n``).

    :raise ValueError: as :func:`secure.ranking.sort_costs`.
    """
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


def opening_distance(sec_param: int, parties: int, threshold: int, *, prss: bool = True) -> tuple[float, float]:
    """``(per comparison or equality test, per conversion)`` statistical distance bounds:
    ``2^-k`` (:func:`effective_mask_bits`) and ``d 2^-K``."""
    return (2.0 ** -effective_mask_bits(sec_param, parties, threshold, prss=prss),
            mask_divisor(parties, threshold, prss=prss) * 2.0 ** -sec_param)


def statistical_distance(openings: MaskedOpenings, *, sec_param: int, parties: int, threshold: int,
                         prss: bool = True) -> float:
    """A bound on the statistical distance between a coalition's view of the run and a simulation from the
    released values: the sum over the openings (module docstring)."""
    comparison, conversion = opening_distance(sec_param, parties, threshold, prss=prss)
    return (openings.comparisons + openings.equality_tests) * comparison + openings.conversions * conversion
