"""Private AUC with scores *and* labels kept secret: secure sorting plus distributed noise.

Beyond Sun et al. (who let the server see the scores and only protect labels): the parties
secret-share their ``(score, label)`` rows, the rank sum is computed under MPC by secure sorting
(:mod:`secure.ranking`), and two integers are released with the distributed discrete Laplace noise
of the core (:mod:`dp.ustat`): ``2U`` (pairs positive-above-negative count 2, ties 1) and the number
of positives ``P``, each with half of the budget.  The estimate is

    AUC = (2U / 2) / (P (n - P)),

which with no noise is exactly ``sklearn.metrics.roc_auc_score`` (average ranks for ties; Sun et al.
eq. 1).  Sensitivity under replace-one: a row takes part in ``n - 1`` pairs, each contributing 0..2
to ``2U``, so ``Delta(2U) = 2 (n - 1)``; ``Delta(P) = 1``.  This is the U-MPC AUC kernel over all
pairs (``delta_max = n - 1``), computed with ``O(n log^2 n)`` comparisons instead of ``n(n-1)/2``.

Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; it learns only the
two noisy integers (epsilon-DP against it: the honest parties' noise alone is calibrated, shape
``1/(m-t)``) and the public row counts.  Unlike the paper's deployment, scores stay secret too.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
import numpy as np

from dp.ustat import NoisePlan, plan_noise
from dp.validation import check_epsilon
from secure.intake import ColumnSpec, to_fixed_point
from secure.kernels import KernelOutput

__all__ = ["RankAucQuery", "RankAucRelease", "plans_for_rows", "estimate_auc", "exact_sums", "simulate_rank_auc",
           "run_secure_rank_auc"]

TWICE_U = KernelOutput("2U", 2, 0, 2)
POSITIVES = KernelOutput("positives", 1, 0, 1)


@dataclass(frozen=True)
class RankAucQuery:
    """The agreed query: score domain/precision and the budget (split evenly over 2U and P)."""

    score: ColumnSpec
    epsilon: float

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)

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


def plans_for_rows(query: RankAucQuery, rows: int, parties: int, threshold: int) -> list[NoisePlan]:
    """Noise plans of ``2U`` (sensitivity ``2(n-1)``) and ``P`` (sensitivity 1), epsilon/2 each."""
    half = query.epsilon / 2
    return [plan_noise(TWICE_U, max_degree=rows - 1, epsilon=half, delta=0.0, parties=parties, threshold=threshold),
            plan_noise(POSITIVES, max_degree=1, epsilon=half, delta=0.0, parties=parties, threshold=threshold)]


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

    :param noise: optional fixed per-party draws, shape ``(2, parties)`` (2U first).
    """
    parties = len(rows_by_party)
    fixed = np.vstack([query.encode(np.asarray(rows, dtype=float).reshape(-1, 2)) for rows in rows_by_party])
    plans = plans_for_rows(query, len(fixed), parties, threshold)
    if noise is None:
        noise = np.array([[plan.draw(rng) for _ in range(parties)] for plan in plans], dtype=np.int64)
    sums = [value + int(np.sum(draws)) for value, draws in zip(exact_sums(fixed), noise)]
    return estimate_auc(sums[0], sums[1], len(fixed)), sums


async def run_secure_rank_auc(query: RankAucQuery, fixed: np.ndarray, *,
                              noise_source: Callable[[NoisePlan, int], int] | None = None,
                              receivers: Sequence[int] | None = None) -> RankAucRelease | None:
    """Every party calls this with its own ``(score, label)`` rows on a started runtime.

    :param fixed: this party's rows from :meth:`RankAucQuery.encode` (run before, verdict shared).
    :param noise_source: ``(plan, index) -> draw`` (tests); default OS randomness.
    :return: the release at receivers, ``None`` elsewhere.
    """
    from mpyc.runtime import mpc

    from secure.aggregation import SumRange, add_party_noise, guarded_reveal
    from secure.intake import exchange_counts, share_rows
    from secure.meter import CostMeter
    from secure.ranking import twice_mann_whitney
    from secure.runtime import InputError

    meter = CostMeter()
    sectype = mpc.SecInt()
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    with meter.phase("intake"):
        counts = await exchange_counts(len(fixed))
        n = sum(counts)
        if n < 2:
            raise InputError(f"all parties: need at least 2 rows over all parties for an AUC, got {n}")
        shared = share_rows(sectype, fixed, counts)
        await meter.settle(shared)
    plans = plans_for_rows(query, n, parties, threshold)
    with meter.phase("sort"):
        twice_u, positives = twice_mann_whitney(shared[:, 0], shared[:, 1])
        await meter.settle(twice_u, positives)
    with meter.phase("noise"):
        draw = noise_source or (lambda plan, index: plan.draw())
        noisy = [add_party_noise(value, draw(plan, index))
                 for index, (value, plan) in enumerate(zip((twice_u, positives), plans))]
        await meter.settle(*noisy)
    with meter.phase("reveal"):
        pairs_max = (n // 2) * (n - n // 2)
        ranges = [SumRange(0, 2 * pairs_max, plans[0].slack), SumRange(0, n, plans[1].slack)]
        opened = await guarded_reveal(noisy, ranges, receivers)
    phases = await meter.totals_over_parties()
    if not opened:
        return None
    return RankAucRelease(estimate=estimate_auc(opened[0], opened[1], n), twice_u=opened[0], positives=opened[1], n=n,
                          epsilon=query.epsilon, parties=parties, threshold=threshold,
                          seconds=sum(c.seconds for c in phases.values()),
                          bytes_sent=sum(c.bytes_sent for c in phases.values()),
                          phases={k: {"seconds": c.seconds, "bytes_sent": c.bytes_sent} for k, c in phases.items()})
