"""MPyC's comparison leakage in the DP guarantee: ``K`` raised so that it stays below 2^-40.

A view within statistical distance ``s`` of a simulation adds ``(1 + e^epsilon) s`` to delta.
Threat model: passive, static coalition of ``t < m/2`` parties.  Proof and what the run records: docs/comparison_leakage.md.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence
from typing import Any

from dp.validation import check_interval
from secure.columns import ColumnSpec
from secure.kernels import Kernel
from secure.leakage import MaskedOpenings, clip_openings, sort_openings, statistical_distance, tuple_openings

__all__ = ["LEAK_TARGET", "MAX_SECURITY_PARAMETER", "ComparisonLeak", "leak_delta", "plan_leak", "no_leak",
           "tuples_path_openings", "sort_path_openings", "raise_security_parameter", "leak_of_run", "tuples_leak_plan",
           "sort_leak_plan", "comparison_allowance"]

#: the most that the comparisons of one release may add to its delta
LEAK_TARGET = 2.0 ** -40
#: the largest ``K`` we raise to (the field grows by one bit per unit of ``K``)
MAX_SECURITY_PARAMETER = 256


def leak_delta(epsilon: float, distance: float) -> float:
    """``(1 + e^epsilon) s``: what statistical distance ``s`` adds to delta (docs/comparison_leakage.md); ``inf`` if it
    overflows."""
    if distance == 0:
        return 0.0
    log_value = math.log(distance) + epsilon + math.log1p(math.exp(-epsilon))
    return math.exp(log_value) if log_value < 700 else math.inf


@dataclass(frozen=True)
class ComparisonLeak:
    """The masked openings of one release by kind, the ``K`` they ran at (raised or the ``launched`` one), and what
    they add to delta, ``(1 + e^epsilon) s(K)`` with ``s`` the distance bound of the openings."""

    openings: MaskedOpenings
    security_parameter: int
    launched: int
    delta: float

    def describe(self) -> str:
        """One line: ``N``, ``K`` (raised or not) and the delta it adds."""
        if self.openings.total == 0:
            return f"comparisons: none opened (N = 0), -K {self.launched} as launched, nothing added to delta"
        kinds = ", ".join(f"{count} {name.replace('_', ' ')}" for name, count in self.openings.as_dict().items() if count)
        how = (f"-K raised {self.launched} -> {self.security_parameter}" if self.security_parameter > self.launched
               else f"-K {self.security_parameter} as launched")
        bound = f"(1 + e^eps) N-bound = {self.delta:.2g}"
        fits = (f"{how}: at this epsilon {bound} cannot stay below 2^-40" if self.delta > LEAK_TARGET
                else f"{how} so that {bound} <= 2^-40")
        return f"comparisons: N = {self.openings.total} masked openings ({kinds}); {fits}, included in delta"

    def record(self) -> dict[str, Any]:
        """The record's keys: ``comparisons`` (N), ``comparison_openings`` (by kind), ``comparison_leak_delta``,
        ``security_parameter`` (``K`` of the run) and ``launched_security_parameter``."""
        return {"comparisons": self.openings.total, "comparison_openings": self.openings.as_dict(),
                "comparison_leak_delta": self.delta, "security_parameter": self.security_parameter,
                "launched_security_parameter": self.launched}


def no_leak(launched: int) -> ComparisonLeak:
    """A release that opened nothing data-dependent."""
    return ComparisonLeak(MaskedOpenings(), launched, launched, 0.0)


def plan_leak(openings: MaskedOpenings, *, epsilon: float, parties: int, threshold: int, launched: int,
              prss: bool = True, target: float = LEAK_TARGET) -> ComparisonLeak:
    """The smallest ``K >= launched`` (the parties' ``-K``, never lowered) with ``(1 + e^epsilon) s(K) <= target`` for
    these openings, ``prss`` as ``not mpc.options.no_prss``. Details: docs/comparison_leakage.md."""
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    check_interval(target, "target", low=0.0, high=1.0, closed_low=False)
    if openings.total == 0:
        return no_leak(launched)
    fallback = None  # if no K meets the delta target: the least K whose distance does
    for sec_param in range(max(1, launched), MAX_SECURITY_PARAMETER + 1):
        distance = statistical_distance(openings, sec_param=sec_param, parties=parties, threshold=threshold,
                                        prss=prss)
        delta = leak_delta(epsilon, distance)
        if delta <= target:
            return ComparisonLeak(openings, sec_param, launched, delta)
        if fallback is None and distance <= target:
            fallback = ComparisonLeak(openings, sec_param, launched, min(1.0, delta))
    if fallback is not None:
        return fallback
    raise ValueError(f"no security parameter up to {MAX_SECURITY_PARAMETER} keeps the statistical distance of "
                     f"{openings.total} comparisons below {target:.2g}")


def _secure_clip_openings(kernel: Kernel, specs: Sequence[ColumnSpec], rows: int, clipping: str) -> MaskedOpenings:
    """With ``clipping == "secure"`` (:func:`secure.clipping.clip_secure`): two less-than tests per value of every
    kernel column but labels and categorical columns (their codes are validated at the party, never clipped)."""
    columns = sum(1 for position, spec in enumerate(specs)
                  if position not in kernel.categories and not spec.is_categorical)
    return clip_openings(rows * columns if clipping == "secure" else 0)


def tuples_path_openings(kernel: Kernel, specs: Sequence[ColumnSpec], *, tuples: int, rows: int,
                         clipping: str) -> MaskedOpenings:
    """The tuples path (:func:`dp.umpc.protocol.run_secure`): the kernel on ``tuples`` tuples, and with
    ``clipping == "secure"`` two less-than tests per clipped value of the ``rows`` rows."""
    return tuple_openings(kernel.name, tuples) + _secure_clip_openings(kernel, specs, rows, clipping)


def sort_path_openings(kernel: Kernel, specs: Sequence[ColumnSpec], *, rows: int, bits: int, type_bits: int,
                       clipping: str) -> MaskedOpenings:
    """The sort path (:func:`dp.umpc.complete.secure_complete_sums`, hence also :mod:`dp.rank_auc`): one sort of
    ``rows`` rows comparing at ``bits`` bits on ``type_bits``-bit secure integers, plus secure clipping."""
    return (sort_openings(kernel.name, rows, bits=bits, type_bits=type_bits)
            + _secure_clip_openings(kernel, specs, rows, clipping))


def _runtime() -> tuple[int, int, int, bool]:
    """``(m, t, K, prss)`` of the running MPyC runtime."""
    from mpyc.runtime import mpc

    return len(mpc.parties), int(mpc.threshold), int(mpc.options.sec_param), not bool(mpc.options.no_prss)


def raise_security_parameter(openings: MaskedOpenings, *, epsilon: float) -> ComparisonLeak:
    """Every party, before the run's secure types and its first comparison: raise MPyC's ``K`` to :func:`plan_leak`'s
    value for ``openings`` (an upper bound from agreed public parameters: the same ``K`` at every party)."""
    from secure.security_parameter import set_security_parameter

    parties, threshold, launched, prss = _runtime()
    planned = plan_leak(openings, epsilon=epsilon, parties=parties, threshold=threshold, launched=launched, prss=prss)
    set_security_parameter(planned.security_parameter)
    return planned


def leak_of_run(planned: ComparisonLeak, openings: MaskedOpenings, *, epsilon: float) -> ComparisonLeak:
    """The leak of what the run opened (at most ``planned``'s openings), at the ``K`` it ran at."""
    parties, threshold, _, prss = _runtime()
    distance = statistical_distance(openings, sec_param=planned.security_parameter, parties=parties,
                                    threshold=threshold, prss=prss)
    delta = min(1.0, leak_delta(epsilon, distance)) if openings.total else 0.0
    return ComparisonLeak(openings, planned.security_parameter, planned.launched, delta)


def tuples_leak_plan(query: Any, rows: int) -> ComparisonLeak:
    """:func:`raise_security_parameter` for the tuples path of ``query`` on ``rows`` rows, before the tuples are
    drawn: planned for the most tuples its sampling can give (every ``C(n, k)`` for ``all`` and Bernoulli)."""
    from dp.sampling import tuple_count

    complete = tuple_count(rows, query.kernel.degree)
    most = complete if query.tuples is None or query.sampling == "bernoulli" else min(query.tuples, complete)
    return raise_security_parameter(tuples_path_openings(query.kernel, query.specs, tuples=most, rows=rows,
                                                         clipping=query.clipping), epsilon=query.epsilon)


def sort_leak_plan(query: Any, rows: int, path: str, *, bits: int, type_bits: int) -> ComparisonLeak:
    """:func:`raise_security_parameter` for a complete statistic of ``query`` on ``path``: the sort path's exact
    openings (:func:`sort_path_openings`); the histogram path opens nothing data-dependent, keeping the launch ``K``."""
    if path != "sort":
        return no_leak(_runtime()[2])
    return raise_security_parameter(sort_path_openings(query.kernel, query.specs, rows=rows, bits=bits,
                                                       type_bits=type_bits, clipping=query.clipping),
                                    epsilon=query.epsilon)


def comparison_allowance(path: str) -> float:
    """What the ledger reserves before the run (``N`` unknown yet) for the comparisons of one release on ``path``:
    :data:`LEAK_TARGET`, but nothing on the histogram path (no comparison). Details: docs/comparison_leakage.md."""
    return 0.0 if path == "histogram" else LEAK_TARGET
