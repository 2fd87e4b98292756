"""The rank AUC: its query, its calibration from public parameters, :func:`release` on parties, :func:`simulate`
in one process, :func:`exact` in the clear, and the release (:class:`RankAucRelease`).

Threat model of :func:`release`: passive, static, at most ``t < m/2`` parties corrupted; they learn the two noisy
sums and the public row counts (docs/rank_auc.md, also the derivations)."""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

import numpy as np

from dp.budget.accountants import Budget, Spend
from dp.budget.spending import MPC_TRUNCATION_DELTA, reserve, spend_request
from dp.comparison_leakage import ComparisonLeak, comparison_allowance, sort_leak_plan
from dp.noise_defaults import (default_noise, mpc_guarantee, party_guarantee, pure_budget_line,
                               switched_by_pure_budget)
from dp.noise_plans import NoisePlan, plan_noise, samplers
from dp.report_text import phases_text, run_costs, run_rows, text_table
from dp.umpc.complete import complete_bit_length, secure_complete_sums
from dp.umpc.owners import Owners
from dp.umpc.planner import plan_path, pure_account_path, sort_bits
from dp.umpc.protocol import UStatQuery, noise_and_reveal
from dp.umpc.report import local_note
from dp.validation import check_choice, check_epsilon
from secure.errors import InputError
from secure.intake import ColumnSpec, FixedPointRows, MissingPolicy, to_fixed_point
from secure.kernels import KernelOutput, get_kernel
from secure.security_parameter import restores_security_parameter, secure_integers

__all__ = ["Query", "PathChoice", "NoiseSource", "account_query", "plans_for_rows", "sum_ranges",
           "check_bit_length", "auc_query", "release_guarantee", "release", "release_runs", "simulate", "exact",
           "exact_sums", "RankAucRelease", "estimate_auc", "estimate_noise_std"]

PathChoice = Literal["auto", "histogram", "sort"]
NoiseSource = Literal["mpc", "parties"]

TWICE_U = KernelOutput("2U", 2, 0, 2)
POSITIVES = KernelOutput("positives", 1, 0, 1)


@dataclass(frozen=True, kw_only=True)
class Query:
    """The AUC of a secret score for a secret 0/1 label, released as noisy ``2U`` and ``P`` (epsilon/2 each);
    ``unit_rows``: the rows of one unit of privacy, a factor of both sensitivities (the rest: docs/rank_auc.md)."""

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


def check_bit_length(query: Query, bit_length: int) -> None:
    """Refuse an explicit ``-L`` that cannot hold the sort's comparisons, before sharing (the opened sums: checked by
    the plan once n is known); the ValueError names the ``-L`` that is needed (callers make it a one-line error)."""
    needed = query.comparison_bits
    if needed > bit_length:
        raise ValueError(f"the score domain [{query.score.lower:g}, {query.score.upper:g}] at {query.score.precision} "
                         f"fractional bits require {needed}-bit secure integers, got -L {bit_length}; give -L {needed} "
                         "or fewer fractional bits in --domain")


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


def estimate_auc(twice_u: float, positives: float, rows: int) -> float:
    """``(2U/2) / (P (n-P))``; NaN when the noisy class sizes leave no pair."""
    pairs = positives * (rows - positives)
    return float(twice_u / 2 / pairs) if pairs > 0 else float("nan")


def estimate_noise_std(plans: Sequence[NoisePlan], twice_u: float, positives: float, rows: int) -> float:
    """Sd of the estimate due to the noise: the delta method on ``(2U/2) / (P (n - P))`` with the released sums
    plugged in (post-processing); ``nan`` when the noisy class sizes leave no pair."""
    pairs = positives * (rows - positives)
    if pairs <= 0:
        return float("nan")
    d_twice_u = 1.0 / (2.0 * pairs)
    d_positives = -(twice_u / 2.0) * (rows - 2.0 * positives) / pairs ** 2
    return math.sqrt(plans[0].variance * d_twice_u ** 2 + plans[1].variance * d_positives ** 2)


@dataclass
class RankAucRelease:
    """The released noisy ``2U`` and ``P``, the estimate, the costs; a job running several releases on the same rows
    sets ``runs``, ``epsilon_total`` and ``budget`` (the settled ledger keys) after the last one."""

    estimate: float
    twice_u: int
    positives: int
    n: int
    epsilon: float
    parties: int
    threshold: int
    query: Query
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    delta: float = 0.0
    noise_source: str = "parties"
    mechanism: str = "discrete laplace"
    guarantee: str = ""
    noise_std: float = 0.0
    #: the path that computed the sums (``histogram`` or ``sort``) and the planner's line
    path: str = "sort"
    plan: str = ""
    #: the sort's masked openings and their delta (:meth:`dp.comparison_leakage.ComparisonLeak.record`)
    comparison_leak: dict[str, Any] = field(default_factory=dict)
    #: this party's own count of filled missing values (printed locally, never recorded)
    filled: int = 0
    runs: int = 1
    epsilon_total: float | None = None
    budget: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    owners: dict[str, Any] | None = None  # from owners' uploads: :meth:`dp.umpc.owners.Owners.record`

    @property
    def no_estimate(self) -> str | None:
        """Why there is no AUC, or None: the noisy number of pairs ``P (n - P)`` is not positive.  Said in terms of
        the released sums only: the labels are secret, so the true class sizes are never claimed."""
        if self.positives * (self.n - self.positives) > 0:
            return None
        return (f"no AUC at this epsilon: the noisy number of pairs P (n - P) is not positive (noisy P = "
                f"{self.positives} of n = {self.n} rows; post-processing of the released sums)")

    def record(self) -> dict[str, Any]:
        """The JSON record the job writes (``--json``: a list of these, one per run), None for a NaN: no estimate
        (:attr:`no_estimate`), no noise sd; all pairs enter 2U, so the error is the noise's only."""
        missing = self.query.missing
        std = self.noise_std if math.isfinite(self.noise_std) else None
        return {"statistic": "auc", "estimate": None if self.no_estimate is not None else self.estimate,
                "epsilon": self.epsilon, "delta": self.delta, "n": self.n, "parties": self.parties,
                "seconds": self.seconds, "bytes_sent": self.bytes_sent,
                "epsilon_total": self.epsilon if self.epsilon_total is None else self.epsilon_total,
                "delta_total": self.delta * self.runs, "runs": self.runs, **self.budget,
                "threshold": self.threshold, "noise_source": self.noise_source, "mechanism": self.mechanism,
                "guarantee": self.guarantee, "phases": self.phases, "noisy_2u": self.twice_u,
                "noisy_positives": self.positives, "path": self.path, "plan": self.plan, **self.comparison_leak,
                "missing": missing.mode, "fill": dict(missing.fills), "noise_std": std, "sampling_error_bound": 0.0,
                "error_bound": std, "seed": None,
                "uncertainty_covers": "DP noise only (noise_std, delta method with the released sums); all pairs, no "
                                      "sampling error",
                **({"owners": self.owners} if self.owners else {})}

    def table(self) -> str:
        """The text the job prints: notes, the table, the plan, the guarantee, this party's local counts, phases."""
        query = self.query
        rows = [("statistic", f"AUC of {query.score.name} for {query.label} (scores and labels secret)"),
                ("private estimate", f"{self.estimate:.6g}" if self.no_estimate is None else self.no_estimate),
                ("uncertainty", f"noise std {self.noise_std:.2g} (all pairs, no sampling error)"
                 if self.no_estimate is None else "none (no estimate)"),
                ("epsilon", self._spent()), ("n", f"{self.n} rows"), *run_rows(self, query.missing)]
        return "\n".join([*self.notes, text_table(rows, f"Private AUC, scores and labels secret ({self.path} path)"),
                          f"  {self.plan}", f"  noise: {self.guarantee}", local_note(filled=self.filled),
                          phases_text(self.phases)])

    def _spent(self) -> str:
        """The epsilon line: this run's budget and, over several runs on the same rows, the total."""
        runs, delta = self.runs, self.delta
        if runs == 1:
            text = f"{self.epsilon:g} (2U and P, epsilon/2 each)"
        else:
            text = (f"{self.epsilon_total:g} in total: {self.epsilon:.3g} per run x {runs} runs on the same rows "
                    f"(2U and P, half each)")
        if delta:
            text += f"; delta {delta:.2g}" + (f" per run, {delta * runs:.2g} in total" if runs > 1 else "")
        return text


def exact_sums(fixed: np.ndarray) -> tuple[int, int]:
    """``(2U, P)`` in the clear from fixed-point ``(score, label)`` rows."""
    scores, labels = fixed[:, 0], fixed[:, 1].astype(bool)
    negatives = np.sort(scores[~labels])
    below = np.searchsorted(negatives, scores[labels], side="left")
    below_or_tied = np.searchsorted(negatives, scores[labels], side="right")
    return int(below.sum() + below_or_tied.sum()), int(labels.sum())


def _plan(query: Query, n: int, parties: int, threshold: int, given: int | None,
          owners: Owners | None = None) -> tuple[list[NoisePlan], Any, int]:
    """``(noise plans, the planner's path plan, the secure integers' bit length)`` for ``n`` rows (public), also from
    ``owners``' uploads; ValueError: the path or the noise cannot run, or an explicit ``-L`` (``given``) too short."""
    auc = auc_query(query)
    plans = plans_for_rows(query, n, parties, threshold)
    plan = plan_path(auc.kernel, auc.specs, rows=n, parties=parties, choice=query.path,  # type: ignore[arg-type]
                     unavailable={"tuples": "the rank AUC is over all pairs", **(owners.unavailable(
                         [spec.name for spec in auc.specs], "auc") if owners else {})}, epsilon=query.epsilon,
                     rtt=query.rtt / 1000, noise=query.noise, histogram_seconds=owners.dpf_seconds() if owners else 0.0)
    sums = max(bounds.bits_needed for bounds in sum_ranges(n, plans))  # their range plus the noise bound
    needed = max(query.comparison_bits, sums, max(p.digits for p in plans) + 2,
                 complete_bit_length(auc, n, plan.path, plans))
    if given is not None and given < needed:
        raise ValueError(f"the noisy sums of {n} rows on the {plan.path} path require {needed}-bit secure "
                         f"integers, got -L {given}; give -L {needed} or leave -L out")
    return plans, plan, needed


async def release(query: Query, rows: Any, **options: Any) -> RankAucRelease | None:
    """Every party calls this with its own ``(score, label)`` rows on a started MPyC runtime; the release at
    ``receivers``, ``None`` elsewhere (steps, ``options`` and errors: docs/rank_auc.md)."""
    return (await release_runs(query, [rows], **options))[0]


async def release_runs(query: Query, runs: Sequence[Any], *, receivers: Sequence[int] | None = None,
                       noise_source: Callable[[NoisePlan, int], int] | None = None,
                       ledger: str | os.PathLike[str] | None = None, budget: Budget | str | None = None,
                       dataset_name: str | None = None, dataset: str | None = None, accountant: str = "basic",
                       data_file: str | None = None,
                       job: tuple[str, Sequence[str]] | None = None) -> list[RankAucRelease | None]:
    """:func:`release` on each of ``runs`` (rows or readers), ``query.epsilon`` split evenly over them; one spend from
    the account the ledger keywords name (as :func:`dp.umpc.release`), settled to the deltas' sum."""
    if isinstance(runs[0], Owners):  # the campaign's servers: its account, one owner the unit of privacy
        if dataset_name not in (None, runs[0].plan.id) or len(runs) > 1:
            raise InputError(f"all servers: owners' uploads are released once, from the campaign's account "
                             f"{runs[0].plan.id}, not {dataset_name!r} or {len(runs)} runs")
        dataset_name, dataset, data_file = runs[0].plan.id, None, None
        query = replace(query, unit_rows=runs[0].plan.rows_per_owner)
    each = query if len(runs) == 1 else replace(query, epsilon=query.epsilon / len(runs))
    source = data_file if data_file is not None else getattr(runs[0], "source", None)
    spend = _spend(each, query.epsilon, len(runs))
    reservation = await reserve(lambda: spend_request(
        spend, release="dp.rank_auc.release", ledger=ledger, budget=budget, dataset_name=dataset_name,
        dataset=dataset, accountant=accountant, data_file=source, job=job), job=job)
    released = [await _release(each, rows, receivers=receivers, noise_source=noise_source) for rows in runs]
    if isinstance(runs[0], Owners):  # the intake's phases too
        released = [(await runs[0].finish(released[0][0]), released[0][1])]
    total = math.fsum(delta for _, delta in released)  # basic composition over the runs; the record's delta_total
    settled = {"delta_total": total, **(reservation.settle(total).record() if reservation else {})}  # reserved -> total
    for result, _ in released:
        if result is not None:
            result.runs, result.epsilon_total, result.budget = len(runs), query.epsilon, settled
    return [result for result, _ in released]


def _spend(query: Query, epsilon: float, runs: int) -> Spend:
    """``runs`` releases of ``query``, ``epsilon`` in total; per run ``2^-40`` per sum sampled in MPC and for the
    sort's comparisons (:func:`dp.comparison_leakage.comparison_allowance`): an upper bound, settled after."""
    mpc = query.noise == "mpc"
    delta = (2 * runs * MPC_TRUNCATION_DELTA if mpc else 0.0) + runs * comparison_allowance(query.path)
    return Spend(epsilon=float(epsilon), delta=delta,
                 mechanism="discrete Laplace sampled in MPC" if mpc else "distributed discrete Laplace",
                 what=f"AUC of {query.score.name},{query.label} by rank, {runs} run(s), 2 noisy sums each")


@restores_security_parameter
async def _release(query: Query, rows: Any, *, receivers: Sequence[int] | None = None,
                   noise_source: Callable[[NoisePlan, int], int] | None = None) -> tuple[RankAucRelease | None, float]:
    """One run of :func:`release`, spent by the caller: the release (or ``None``) and its delta (at every party)."""
    from mpyc.runtime import mpc

    from secure.meter import CostMeter
    from secure.session import agree_verdict, run_settings

    if query.noise == "mpc" and noise_source is not None:
        raise ValueError("noise sampled inside MPC has no party draws: noise_source applies to party noise only")
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    given = run_settings().bit_length
    try:
        if given is not None:
            check_bit_length(query, given)  # before any row is read or shared
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    error, detail, fixed, filled = None, None, None, 0
    owners = rows if isinstance(rows, Owners) else None
    try:
        read = rows() if callable(rows) else np.empty((0, 2)) if owners else rows
        fixed, filled = query.encode(read), int(getattr(read, "filled", 0))
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    intake = owners or FixedPointRows(integers=np.asarray(fixed, dtype=np.int64))  # every verdict agreed above
    if owners:  # its phase "close" (Owners.finish)
        await owners.open(query.specs)
    meter = CostMeter()
    with meter.phase("intake"):
        counts = await intake.counts()
        n = sum(counts)
        if n < 2:
            raise InputError(f"all parties: need at least 2 rows over all parties for an AUC, got {n}")
        try:  # n is public; the plans depend on it (2U has sensitivity 2(n - 1)): refused before sharing
            plans, plan, needed = _plan(query, n, parties, threshold, given, owners)
        except ValueError as exc:
            raise InputError(f"all parties: {exc}") from None
        auc = auc_query(query)
        leak = sort_leak_plan(auc, n, plan.path, bits=sort_bits(auc.kernel, auc.specs),
                              type_bits=given if given is not None else needed)  # -K raised before the type is made
        sectype = owners.secure_type(given or needed, f"the AUC of n = {n} rows on the sort path") \
            if owners and plan.path == "sort" else secure_integers(given if given is not None else needed)
    (twice_u, _), positives = await secure_complete_sums(auc, intake, plan.path, sectype, counts, meter)
    if owners and owners.rows != n:  # owners rejected by the checks: fewer rows (public), the noise for them
        if owners.rows < 2:
            raise InputError(f"all servers: {owners.rows} rows accepted, an AUC needs at least 2")
        n, plans = owners.rows, plans_for_rows(query, owners.rows, parties, threshold)
    opened, phases = await noise_and_reveal(meter, [twice_u, positives], plans, sum_ranges(n, plans), noise_source,
                                            receivers)
    delta, guarantee = release_guarantee(plans, query.epsilon, parties, threshold, leak)
    if not opened:
        return None, delta
    return _released(query, plans, plan, opened, n, parties, threshold, delta=delta, guarantee=guarantee,
                     comparison_leak=leak.record(), filled=filled, **run_costs(phases)), delta


def _released(query: Query, plans: Sequence[NoisePlan], plan: Any, sums: Sequence[int], n: int, parties: int,
              threshold: int, **measured: Any) -> RankAucRelease:
    """The release of the noisy ``sums`` (2U, P): the estimate, its noise sd, the path."""
    return RankAucRelease(estimate=estimate_auc(sums[0], sums[1], n), twice_u=sums[0], positives=sums[1], n=n,
                          epsilon=query.epsilon, parties=parties, threshold=threshold, query=query,
                          noise_source=query.noise, mechanism=plans[0].mechanism, path=plan.path, plan=plan.describe(),
                          noise_std=estimate_noise_std(plans, sums[0], sums[1], n), **measured)


def simulate(query: Query, rows_by_party: Sequence[Any], *, seed: int, threshold: int | None = None,
             noise: np.ndarray | None = None, noise_rng: np.random.Generator | None = None) -> RankAucRelease:
    """The release in one process: the exact sums of every party's rows plus noise of the same law (no comparison
    made, none said; ``seed`` unused: nothing sampled); ``noise``: fixed draws, shape ``(2, m)`` (2U first) or
    ``(2, 1)`` for noise sampled in MPC, else drawn from ``noise_rng`` (tests; default OS randomness)."""
    parties = len(rows_by_party)
    threshold = (parties - 1) // 2 if threshold is None else threshold
    fixed = np.vstack([query.encode(rows) for rows in rows_by_party])
    n = len(fixed)
    plans, plan, _ = _plan(query, n, parties, threshold, None)
    if noise is None:  # one joint value per sum for noise sampled in MPC (plan.drawers == 1)
        noise = np.array([[p.draw(noise_rng) for _ in range(p.drawers)] for p in plans], dtype=np.int64)
    sums = [value + int(np.sum(draws)) for value, draws in zip(exact_sums(fixed), noise)]
    delta, guarantee = release_guarantee(plans, query.epsilon, parties, threshold)
    return _released(query, plans, plan, sums, n, parties, threshold, delta=delta, guarantee=guarantee)


def exact(query: Query, rows_by_party: Sequence[Any]) -> float:
    """The non-private AUC of the parties' rows on the same fixed point (``roc_auc_score`` of the encoded rows)."""
    fixed = np.vstack([query.encode(rows) for rows in rows_by_party])
    twice_u, positives = exact_sums(fixed)
    return estimate_auc(twice_u, positives, len(fixed))
