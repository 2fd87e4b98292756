"""The rank AUC's query and its public calibration: noise plans of 2U and P, ranges, bit lengths, the guarantee.

Everything here follows from public parameters (the query, n, m, t).  Derivations: docs/rank_auc.md."""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np

from dp.comparison_leakage import ComparisonLeak
from dp.noise_defaults import (default_noise, mpc_guarantee, party_guarantee, pure_budget_line,
                               switched_by_pure_budget)
from dp.noise_plans import NoisePlan, plan_noise, samplers
from dp.umpc.planner import pure_account_path
from dp.umpc.protocol import UStatQuery
from dp.validation import check_choice, check_epsilon
from secure.intake import ColumnSpec, MissingPolicy, to_fixed_point
from secure.kernels import KernelOutput, get_kernel

__all__ = ["Query", "PathChoice", "NoiseSource", "account_query", "plans_for_rows", "sum_ranges", "required_bit_length",
           "check_bit_length", "auc_query", "release_guarantee"]

PathChoice = Literal["auto", "histogram", "sort"]
NoiseSource = Literal["mpc", "parties"]

TWICE_U = KernelOutput("2U", 2, 0, 2)
POSITIVES = KernelOutput("positives", 1, 0, 1)


@dataclass(frozen=True, kw_only=True)
class Query:
    """The AUC of a secret score for a secret 0/1 label, released as noisy ``2U`` and ``P`` (epsilon/2 each;
    parameters: docs/rank_auc.md).  ValueError: a bad parameter (``epsilon must be positive, got -1``); TypeError:
    a wrong type; ``unit_rows``: the rows of one unit of privacy, an owner's, a factor of both sensitivities."""

    score: ColumnSpec
    epsilon: float
    label: str = "label"
    noise: NoiseSource = "parties"
    path: PathChoice = "auto"
    rtt: float = 0.0
    missing: MissingPolicy = field(default_factory=MissingPolicy)
    unit_rows: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.score, ColumnSpec) or self.score.categories is not None:
            raise TypeError(f"score must be a numeric column declaration, got {self.score!r}")
        check_epsilon(self.epsilon)
        check_choice(self.path, ("auto", "histogram", "sort"), "path")
        check_choice(self.noise, ("mpc", "parties"), "noise")
        if not (isinstance(self.rtt, numbers.Real) and 0 <= self.rtt <= 60000):
            raise ValueError(f"rtt must be a round-trip time in milliseconds in [0, 60000], got {self.rtt!r}")

    @property
    def comparison_bits(self) -> int:
        """Signed bit length of the sort's comparisons: keys ``2 score + label`` up to ``2 w + 1``."""
        return (2 * self.score.width + 1).bit_length() + 1

    @property
    def specs(self) -> list[ColumnSpec]:
        """Specs of the two shared columns (score, 0/1 label)."""
        return [self.score, ColumnSpec(self.label, 0, 1, 0, (0, 1))]

    def encode(self, rows: Any) -> np.ndarray:
        """A party's ``(score, label)`` rows as fixed-point integers (scores clipped to the domain)."""
        return to_fixed_point(np.asarray(getattr(rows, "values", rows), dtype=float).reshape(-1, 2),
                              self.specs).integers


def account_query(query: Query, *, noise: NoiseSource | None, pure: bool, budget_given: bool, parties: int,
                  threshold: int) -> tuple[Query, str | None]:
    """``(query, note)``: ``query`` with ``noise``, or the default at epsilon/2 per sum, that its account can pay: a
    pure one (``pure``, delta 0) takes party noise and the histogram path, ``note`` saying so (docs/rank_auc.md).
    :raise ValueError: no path a pure account can pay (:func:`dp.umpc.planner.pure_account_path`)."""
    per_sum = query.epsilon / 2
    path = pure_account_path(get_kernel("auc"), query.specs, parties=parties, choice=query.path) if pure else query.path
    assert path != "tuples"  # not a choice of the rank AUC: pure_account_path returns the histogram path or refuses
    switched = noise is None and switched_by_pure_budget("rank_auc", per_sum, pure_budget=pure)
    chosen = cast(NoiseSource, noise or default_noise("rank_auc", per_sum, pure_budget=pure))
    note = pure_budget_line(source="budget" if budget_given else "account", parties=parties, threshold=threshold)
    return replace(query, noise=chosen, path=path), note if switched else None


def plans_for_rows(query: Query, rows: int, parties: int, threshold: int) -> list[NoisePlan]:
    """Noise plans of ``2U`` (sensitivity ``2(n-1)``) and ``P`` (sensitivity 1), times ``unit_rows``, epsilon/2
    each; with ``query.noise == "mpc"`` each carries the in-MPC sampler (``delta_s <= 2^-40``)."""
    half = query.epsilon / 2
    return [plan_noise(output, max_degree=degree, epsilon=half, delta=0.0, parties=parties, threshold=threshold,
                       source=query.noise) for output, degree in ((TWICE_U, query.unit_rows * (rows - 1)),
                                                                  (POSITIVES, query.unit_rows))]


def sum_ranges(rows: int, plans: Sequence[NoisePlan]) -> list[Any]:
    """Where the opened ``2U`` and ``P`` may lie (:class:`secure.aggregation.SumRange`):
    ``[0, 2 floor(n/2) ceil(n/2)]`` and ``[0, n]``, plus the noise bound."""
    from secure.aggregation import SumRange

    pairs_max = (rows // 2) * (rows - rows // 2)
    return [SumRange(0, 2 * pairs_max, plans[0].slack), SumRange(0, rows, plans[1].slack)]


def required_bit_length(query: Query, rows: int | None = None, plans: Sequence[NoisePlan] = ()) -> int:
    """Signed bit length of the sort's comparisons and, given ``rows`` and their ``plans``, of the opened sums
    (their range plus the noise bound; the in-MPC sampler's digits)."""
    needed = query.comparison_bits
    if rows is not None and plans:
        sums = max(bounds.bits_needed for bounds in sum_ranges(rows, plans))
        needed = max(needed, sums, max(plan.digits for plan in plans) + 2)
    return needed


def check_bit_length(query: Query, bit_length: int, rows: int | None = None, plans: Sequence[NoisePlan] = ()) -> None:
    """Refuse an explicit ``-L`` that cannot hold the sort's comparisons or, given ``rows`` (public) and their
    ``plans``, the opened sums (before sharing; without ``-L`` the length follows from public parameters); the
    ValueError names the ``-L`` that is needed (callers turn it into a one-line usage error)."""
    needed = required_bit_length(query, rows, plans)
    what = f"the score domain [{query.score.lower:g}, {query.score.upper:g}] at {query.score.precision} fractional bits"
    if needed > query.comparison_bits:
        what = f"the noisy sums of {rows} rows"
    if needed > bit_length:
        raise ValueError(f"{what} require {needed}-bit secure integers, got -L {bit_length}; give -L {needed}"
                         f"{' or fewer fractional bits in --domain' if rows is None else ''}")


def auc_query(query: Query) -> Any:
    """The complete AUC of :mod:`dp.umpc.complete` on the same columns: its histogram and sort paths
    compute ``2U`` and ``P`` here (one implementation of the secure AUC sums)."""
    return UStatQuery(kernel=get_kernel("auc"), specs=tuple(query.specs), epsilon=query.epsilon, noise=query.noise,
                      path=query.path)


def release_guarantee(plans: Sequence[NoisePlan], epsilon: float, parties: int, threshold: int,
                      leak: ComparisonLeak | None = None) -> tuple[float, str]:
    """``(delta, one-line guarantee)`` of a release with these two plans (basic composition), plus the sort's
    comparison leakage ``leak`` (:mod:`dp.comparison_leakage`: its delta is added, its line appended)."""
    used = samplers(plans)
    leaked = 0.0 if leak is None else leak.delta
    suffix = "" if leak is None else "; " + leak.describe()
    if used:
        sampler_delta = sum(sampler.delta for sampler in used)
        return sampler_delta + leaked, mpc_guarantee(epsilon, sampler_delta + leaked, sampler_delta) + suffix
    return leaked, party_guarantee(epsilon, leaked, parties, threshold, plans[0].mechanism) + suffix
