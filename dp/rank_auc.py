"""Private AUC with scores *and* labels kept secret: secure sorting plus distributed noise.

Beyond Sun et al. (who let the server see the scores and only protect labels): the parties keep
their ``(score, label)`` rows secret, the rank sum ``2U`` and the number of positives ``P`` are computed
under MPC by the complete AUC of :mod:`dp.umpc.complete` -- the one implementation of the secure AUC
sums -- on the path the planner chooses (:mod:`dp.umpc.planner`, ``path``): the histogram path (each
party counts its rows on the score grid, secure sums and products, no comparison: 1.1 s for the 2559
Framingham evaluation rows at 16 bits, ``-M3``) or one secure sort (:mod:`secure.ranking`: 17 s for the
same rows, 1.09 times MPyC's bare ``np_sort`` of the keys); two integers are released with the noise of
the core (:mod:`dp.umpc.protocol`): ``2U`` (pairs positive-above-negative count 2, ties 1) and ``P``,
each with half of the budget.  The estimate is

    AUC = (2U / 2) / (P (n - P)),

which with no noise is exactly ``sklearn.metrics.roc_auc_score`` (average ranks for ties; Sun et al.
eq. 1).  Sensitivity under replace-one: a row takes part in ``n - 1`` pairs, each contributing 0..2
to ``2U``, so ``Delta(2U) = 2 (n - 1)``; ``Delta(P) = 1``.  This is the U-MPC AUC kernel over all
pairs (``delta_max = n - 1``), computed with ``O(n log^2 n)`` comparisons instead of ``n(n-1)/2``.

Noise (:mod:`dp.noise_defaults`).  ``noise="mpc"`` (the scenario's default): each of the two sums
gets one discrete Laplace sampled inside MPC (:mod:`dp.secret_noise`), known to no party, calibrated
to the same sensitivity and epsilon/2; each is ``(epsilon/2, delta_s)``-DP with ``delta_s <= 2^-40``
from the sampler's truncation, so the release is ``(epsilon, delta_s(2U) + delta_s(P))``-DP (basic
composition), and the sampler costs about 0.6 s per release.  ``noise="parties"``:
every party adds its own coalition-calibrated Polya shares (shape ``1/(m-t)``, ``m/(m-t)`` times the
variance), epsilon-DP.

Fixed-point width.  The sort compares keys ``2 score + label`` below ``2^(w+1)`` for a score width
``w`` (domain times ``2^precision``), and the opened sums reach ``2 floor(n/2) ceil(n/2)`` plus the
noise bound; the secure integers' length follows from these public parameters
(:func:`required_bit_length`, :func:`dp.umpc.complete.complete_bit_length`), and an explicit ``-L`` that
cannot hold them is refused before any row is shared (:func:`check_bit_length`).

Comparisons (:mod:`dp.comparison_leakage`).  The sort path opens every compare-exchange, equality test
and type conversion under a mask only ``K`` bits longer (MPyC's ``-K``): for 2559 rows ``N = 89,069``
masked openings, a statistical distance up to 3.3e-4 at ``-K 30``.  Before the sort every party raises ``K``
to the same value (61 there at epsilon 1) so that ``(1 + e^epsilon) s <= 2^-40``, and that is added to
delta; the record says ``comparisons``, ``comparison_leak_delta`` and ``security_parameter``.  The histogram
path opens nothing data-dependent (``N = 0``).

Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; it learns only the
two noisy integers (DP against it: noise sampled in MPC is unknown to every party; party noise is
calibrated so the honest parties' draws alone suffice, shape ``1/(m-t)``) and the public row counts.
Unlike the paper's deployment, scores stay secret too.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dp.comparison_leakage import ComparisonLeak, sort_leak_plan
from dp.noise_defaults import NOISE_CHOICES, mpc_guarantee, party_guarantee
from dp.noise_plans import MpcLaplacePlan, NoisePlan, PartyNoisePlan, PlannedNoise, plan_noise
from dp.validation import check_epsilon
from secure.intake import ColumnSpec, to_fixed_point
from secure.kernels import KernelOutput
from secure.security_parameter import restores_security_parameter

__all__ = ["RankAucQuery", "RankAucRelease", "plans_for_rows", "estimate_auc", "exact_sums", "simulate_rank_auc",
           "run_secure_rank_auc", "check_bit_length", "required_bit_length", "auc_query", "sum_ranges", "release_guarantee", "estimate_noise_std"]

TWICE_U = KernelOutput("2U", 2, 0, 2)
POSITIVES = KernelOutput("positives", 1, 0, 1)


@dataclass(frozen=True)
class RankAucQuery:
    """The agreed query: score domain/precision, the budget (split evenly over 2U and P), the noise.

    :param noise: ``parties`` (coalition-calibrated party shares) or ``mpc`` (sampled inside MPC).
    :param path: how the sums are computed (:mod:`dp.umpc.planner`): ``auto`` (the cost model chooses),
        ``histogram`` (counts on the score grid, no comparison) or ``sort`` (one secure sort).
    :param rtt: the network's declared round-trip time in seconds, for the planner's latency term.
    """

    score: ColumnSpec
    epsilon: float
    noise: str = "parties"
    path: str = "auto"
    rtt: float = 0.0

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        if self.path not in ("auto", "histogram", "sort"):
            raise ValueError(f"unknown path '{self.path}'; choose one of: auto, histogram, sort")
        if self.noise not in NOISE_CHOICES:
            raise ValueError(f"unknown noise '{self.noise}'; choose one of: {', '.join(NOISE_CHOICES)}")

    @property
    def comparison_bits(self) -> int:
        """Signed bit length of the sort's comparisons: keys ``2 score + label`` up to ``2 w + 1``."""
        return (2 * self.score.width + 1).bit_length() + 1

    @property
    def specs(self) -> list[ColumnSpec]:
        """Specs of the two shared columns (score, 0/1 label)."""
        return [self.score, ColumnSpec("label", 0, 1, 0, (0, 1))]

    def encode(self, rows: np.ndarray) -> np.ndarray:
        """A party's ``(score, label)`` rows as fixed-point integers (scores clipped to the domain)."""
        return to_fixed_point(rows, self.specs).integers


@dataclass
class RankAucRelease:
    """The released noisy ``2U`` and ``P``, the estimate, and the costs."""

    estimate: float
    twice_u: int
    positives: int
    n: int
    epsilon: float
    parties: int
    threshold: int
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
    #: the sort's masked openings and their delta (:meth:`dp.comparison_leakage.ComparisonLeak.record`; the
    #: histogram path opens none)
    comparison_leak: dict[str, Any] = field(default_factory=dict)

    #: all ``n (n - 1) / 2`` pairs enter 2U: the rank AUC has no sampling error
    sampling_error_bound: float = 0.0
    #: nothing is sampled, so no public seed exists
    seed: None = None
    uncertainty_covers: str = "DP noise only (noise_std, delta method with the released sums); all pairs, no sampling error"

    @property
    def error_bound(self) -> float:
        """One sd of the estimate's error: the noise's only (no sampling error)."""
        return math.hypot(self.noise_std, self.sampling_error_bound)

    @property
    def noisy_pairs(self) -> int:
        """``P (n - P)`` with the noisy ``P``: the denominator of the estimate (post-processing)."""
        return self.positives * (self.n - self.positives)

    @property
    def no_estimate(self) -> str | None:
        """Why there is no AUC, or None: the noisy number of pairs ``P (n - P)`` is not positive (the noisy
        number of positives is not inside ``(0, n)``).  Said in terms of the released sums only: the labels are
        secret, so the true class sizes (an empty class, say) are not known to anyone and are never claimed."""
        if self.noisy_pairs > 0:
            return None
        return (f"no AUC at this epsilon: the noisy number of pairs P (n - P) is not positive (noisy P = "
                f"{self.positives} of n = {self.n} rows; post-processing of the released sums)")

    @property
    def released_estimate(self) -> float | None:
        """The estimate, or None when there is none (:attr:`no_estimate`): never NaN in a record."""
        return None if self.no_estimate is not None else self.estimate

    def honest_keys(self) -> dict[str, Any]:
        """The record's uncertainty keys (as :meth:`dp.umpc.protocol.UStatRelease.record`); None, never NaN, where
        there is no estimate."""
        def finite(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {"noise_std": finite(self.noise_std), "sampling_error_bound": self.sampling_error_bound,
                "error_bound": finite(self.error_bound), "seed": self.seed,
                "uncertainty_covers": self.uncertainty_covers}


def estimate_noise_std(plans: Sequence[NoisePlan], twice_u: float, positives: float, rows: int) -> float:
    """Sd of the AUC estimate due to the noise: delta method on ``(2U/2) / (P (n - P))``, released sums plugged in.

    Post-processing of the release; ``nan`` when the noisy class sizes leave no pair.
    """
    pairs = positives * (rows - positives)
    if pairs <= 0:
        return float("nan")
    d_twice_u = 1.0 / (2.0 * pairs)
    d_positives = -(twice_u / 2.0) * (rows - 2.0 * positives) / pairs ** 2
    return math.sqrt(plans[0].variance * d_twice_u ** 2 + plans[1].variance * d_positives ** 2)


def plans_for_rows(query: RankAucQuery, rows: int, parties: int, threshold: int) -> list[PlannedNoise]:
    """Noise plans of ``2U`` (sensitivity ``2(n-1)``) and ``P`` (sensitivity 1), epsilon/2 each.

    With ``query.noise == "mpc"`` each plan carries the in-MPC sampler (``delta_s <= 2^-40``).
    """
    half = query.epsilon / 2
    return [plan_noise(TWICE_U, max_degree=rows - 1, epsilon=half, delta=0.0, parties=parties, threshold=threshold,
                       source=query.noise),
            plan_noise(POSITIVES, max_degree=1, epsilon=half, delta=0.0, parties=parties, threshold=threshold,
                       source=query.noise)]


def sum_ranges(rows: int, plans: Sequence[NoisePlan]) -> list[Any]:
    """Where the opened ``2U`` and ``P`` may lie: ``[0, 2 floor(n/2) ceil(n/2)]`` and ``[0, n]``, plus noise.

    :return: two :class:`secure.aggregation.SumRange`.
    """
    from secure.aggregation import SumRange

    pairs_max = (rows // 2) * (rows - rows // 2)
    return [SumRange(0, 2 * pairs_max, plans[0].slack), SumRange(0, rows, plans[1].slack)]


def required_bit_length(query: RankAucQuery, rows: int | None = None, plans: Sequence[NoisePlan] = ()) -> int:
    """Signed bit length of the sort's comparisons and, given ``rows`` and their ``plans``, of the opened sums
    (their range plus the noise bound; the in-MPC sampler's digits)."""
    needed = query.comparison_bits
    if rows is not None and plans:
        sums = max(bounds.bits_needed for bounds in sum_ranges(rows, plans))
        digits = max((plan.sampler.digits + 2 for plan in plans if isinstance(plan, MpcLaplacePlan)), default=0)
        needed = max(needed, sums, digits)
    return needed


def check_bit_length(query: RankAucQuery, bit_length: int, rows: int | None = None,
                     plans: Sequence[NoisePlan] = ()) -> None:
    """Refuse an ``-L`` that cannot hold the sort's comparisons or the opened sums (before sharing).

    Without ``-L`` the length follows from the public parameters (:func:`required_bit_length`, and the
    complete path's own needs, :func:`dp.umpc.complete.complete_bit_length`); an explicit ``-L`` is
    checked here.

    :param bit_length: ``-L`` of the secure integers.
    :param rows: ``n`` (public), or ``None`` to check the score's comparisons only.
    :param plans: the noise plans of ``n`` rows (their noise bound widens the sums' range).
    :raise ValueError: naming the ``-L`` that is needed (callers turn it into a one-line usage error).
    """
    needed = required_bit_length(query, rows, plans)
    what = f"the score domain [{query.score.lower:g}, {query.score.upper:g}] at {query.score.precision} fractional bits"
    if needed > query.comparison_bits:
        what = f"the noisy sums of {rows} rows"
    if needed > bit_length:
        raise ValueError(f"{what} require {needed}-bit secure integers, got -L {bit_length}; give -L {needed}"
                         f"{' or fewer fractional bits in --domain' if rows is None else ''}")


def auc_query(query: RankAucQuery) -> Any:
    """The complete AUC of :mod:`dp.umpc.complete` on the same columns: its histogram and sort paths
    compute ``2U`` and ``P`` here (one implementation of the secure AUC sums)."""
    from dp.umpc.protocol import UStatQuery
    from secure.kernels import get_kernel

    return UStatQuery(kernel=get_kernel("auc"), specs=tuple(query.specs), epsilon=query.epsilon,
                      noise="parties" if query.noise == "parties" else "mpc", path=query.path)


def release_guarantee(plans: Sequence[NoisePlan], epsilon: float, parties: int, threshold: int,
                      leak: ComparisonLeak | None = None) -> tuple[float, str]:
    """``(delta, one-line guarantee)`` of a release with these two plans (basic composition), plus the sort's
    comparison leakage ``leak`` (:mod:`dp.comparison_leakage`: its delta is added, its line appended)."""
    samplers = [plan.sampler for plan in plans if isinstance(plan, MpcLaplacePlan)]
    leaked = 0.0 if leak is None else leak.delta
    suffix = "" if leak is None else "; " + leak.describe()
    if samplers:
        sampler_delta = sum(sampler.delta for sampler in samplers)
        delta = sampler_delta + leaked
        return delta, mpc_guarantee(epsilon, delta, sampler_delta) + suffix
    return leaked, party_guarantee(epsilon, leaked, parties, threshold, plans[0].mechanism) + suffix


def _party_drawn(plans: Sequence[PlannedNoise]) -> list[PartyNoisePlan]:
    """The plans of party noise (both, unless the noise is sampled inside MPC: then none)."""
    return [plan for plan in plans if not isinstance(plan, MpcLaplacePlan)]


def _own_draw(plan: PartyNoisePlan, index: int) -> int:
    """This party's OS-random draw for released sum ``index`` (the default noise source)."""
    return plan.draw()


def estimate_auc(twice_u: float, positives: float, rows: int) -> float:
    """``(2U/2) / (P (n-P))``; NaN when the noisy class sizes leave no pair."""
    pairs = positives * (rows - positives)
    return float(twice_u / 2 / pairs) if pairs > 0 else float("nan")


def exact_sums(fixed: np.ndarray) -> tuple[int, int]:
    """``(2U, P)`` in the clear from fixed-point ``(score, label)`` rows (the simulated path)."""
    scores, labels = fixed[:, 0], fixed[:, 1].astype(bool)
    negatives = np.sort(scores[~labels])
    below = np.searchsorted(negatives, scores[labels], side="left")
    below_or_tied = np.searchsorted(negatives, scores[labels], side="right")
    return int(below.sum() + below_or_tied.sum()), int(labels.sum())


def simulate_rank_auc(query: RankAucQuery, rows_by_party: Sequence[np.ndarray], *, threshold: int,
                      noise: np.ndarray | None = None, rng: np.random.Generator | None = None) -> tuple[float, list[int]]:
    """The same release in one process: returns ``(estimate, [noisy 2U, noisy P])``.

    :param noise: optional fixed per-party draws, shape ``(2, parties)`` (2U first); for noise sampled
        in MPC, shape ``(2, 1)`` (one joint value per sum).
    :param rng: generator of the draws (tests; default OS randomness).  Noise sampled in MPC is drawn
        with its plaintext mirror (:func:`dp.secret_noise.simulate_secret_laplace`).
    """
    from dp.secret_noise import simulate_secret_laplace

    parties = len(rows_by_party)
    fixed = np.vstack([query.encode(np.asarray(rows, dtype=float).reshape(-1, 2)) for rows in rows_by_party])
    plans = plans_for_rows(query, len(fixed), parties, threshold)
    if noise is None and query.noise == "mpc":
        noise = np.array([simulate_secret_laplace(plan.sampler, 1, rng) for plan in plans
                          if isinstance(plan, MpcLaplacePlan)])
    elif noise is None:
        noise = np.array([[plan.draw(rng) for _ in range(parties)] for plan in _party_drawn(plans)], dtype=np.int64)
    sums = [value + int(np.sum(draws)) for value, draws in zip(exact_sums(fixed), noise)]
    return estimate_auc(sums[0], sums[1], len(fixed)), sums


@restores_security_parameter
async def run_secure_rank_auc(query: RankAucQuery, fixed: np.ndarray, *,
                              noise_source: Callable[[PartyNoisePlan, int], int] | None = None,
                              receivers: Sequence[int] | None = None,
                              deltas: list[float] | None = None) -> RankAucRelease | None:
    """Every party calls this with its own ``(score, label)`` rows on a started runtime.

    Phases (metered): ``intake`` (public row counts; ``-L`` checked against the score's comparisons
    and the sums' range before any row is shared; rows shared), ``sort``, ``noise`` (party shares, or
    the in-MPC sampler), ``reveal`` (range-checked).

    :param fixed: this party's rows from :meth:`RankAucQuery.encode` (run before, verdict shared).
    :param noise_source: ``(plan, index) -> draw`` (tests); default OS randomness.  Party noise only.
    :param deltas: if given, the release's delta is appended to it at every party, receiver or not (public:
        from ``n`` and the plans), so that every party's ledger entry is settled to it
        (:meth:`dp.budget.agreement.Reservation.settle`).
    :return: the release at receivers, ``None`` elsewhere.
    :raise secure.session.InputError: fewer than 2 rows, or ``-L`` too short (same at every party).
    :raise ValueError: ``noise_source`` with noise sampled inside MPC.
    """
    from mpyc.runtime import mpc

    from dp.umpc.complete import complete_bit_length, secure_complete_sums
    from dp.umpc.planner import plan_path, sort_bits
    from secure.aggregation import add_party_noise, guarded_reveal
    from secure.intake import FixedPointRows, exchange_counts
    from secure.meter import CostMeter
    from secure.security_parameter import secure_integers
    from secure.session import InputError, run_settings

    if query.noise == "mpc" and noise_source is not None:
        raise ValueError("noise sampled inside MPC has no party draws: noise_source applies to party noise only")
    meter = CostMeter()
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    given = run_settings().bit_length
    try:
        if given is not None:
            check_bit_length(query, given)
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    with meter.phase("intake"):
        counts = await exchange_counts(len(fixed))
        n = sum(counts)
        if n < 2:
            raise InputError(f"all parties: need at least 2 rows over all parties for an AUC, got {n}")
        auc = auc_query(query)
        try:  # n is public; the plans depend on it (2U has sensitivity 2(n - 1)): refused before sharing
            plans = plans_for_rows(query, n, parties, threshold)
            plan = plan_path(auc.kernel, auc.specs, rows=n, parties=parties, choice=query.path,  # type: ignore[arg-type]
                             unavailable={"tuples": "the rank AUC is over all pairs"}, epsilon=query.epsilon,
                             rtt=query.rtt, noise=query.noise)
            needed = max(required_bit_length(query, n, plans), complete_bit_length(auc, n, plan.path, plans))
            if given is not None and given < needed:
                raise ValueError(f"the noisy sums of {n} rows on the {plan.path} path require {needed}-bit secure "
                                 f"integers, got -L {given}; give -L {needed} or leave -L out")
        except ValueError as exc:
            raise InputError(f"all parties: {exc}") from None
        leak = sort_leak_plan(auc, n, plan.path, bits=sort_bits(auc.kernel, auc.specs),
                              type_bits=given if given is not None else needed)  # -K raised before the type is made
        sectype = secure_integers(given if given is not None else needed)
    totals = await secure_complete_sums(auc, FixedPointRows(integers=np.asarray(fixed, dtype=np.int64)), plan.path,
                                        sectype, counts, meter)
    twice_u, positives = totals.sums[0], totals.positives
    with meter.phase("noise"):
        if query.noise == "mpc":
            from dp.secret_noise import secret_laplace_noise

            secret = secret_laplace_noise(type(twice_u), [plan.sampler for plan in plans if isinstance(plan, MpcLaplacePlan)])
            noisy = [value + eta for value, eta in zip((twice_u, positives), secret)]
        else:
            draw = noise_source or _own_draw
            noisy = [add_party_noise(value, draw(plan, index))
                     for index, (value, plan) in enumerate(zip((twice_u, positives), _party_drawn(plans)))]
        await meter.settle(*noisy)
    with meter.phase("reveal"):
        opened = await guarded_reveal(noisy, sum_ranges(n, plans), receivers)
    phases = await meter.totals_over_parties()
    delta, guarantee = release_guarantee(plans, query.epsilon, parties, threshold, leak)
    if deltas is not None:
        deltas.append(delta)
    if not opened:
        return None
    return RankAucRelease(estimate=estimate_auc(opened[0], opened[1], n), twice_u=opened[0], positives=opened[1], n=n,
                          epsilon=query.epsilon, parties=parties, threshold=threshold, delta=delta,
                          noise_source=query.noise, mechanism=plans[0].mechanism, guarantee=guarantee,
                          noise_std=estimate_noise_std(plans, opened[0], opened[1], n), path=plan.path,
                          plan=plan.describe(), comparison_leak=leak.record(),
                          seconds=sum(c.seconds for c in phases.values()),
                          bytes_sent=sum(c.bytes_sent for c in phases.values()),
                          phases={k: {"seconds": c.seconds, "bytes_sent": c.bytes_sent} for k, c in phases.items()})
