"""A private ECDF across parties: per-party counts, secure sums, distributed tree noise, one reveal.

Barczewski, Mawass & Ramon §4.1 with the tree mechanism of §3.1, eq. (2) (:mod:`dp.ecdf.tree`); the same
counts as :func:`dp.ecdf.tree.private_ecdf` for the same node draws.
Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; it learns the released noisy
counts (epsilon-DP against it) and the public row counts; a party sharing more or fewer rows than it
declared is named and nothing is released.  Details: docs/ecdf.md ("The secure release")."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dp.ecdf.grid import prefix_positions, true_counts
from dp.ecdf.query import EcdfParameters
from dp.ecdf.tree import TreeNoisePlan
from dp.ecdf.analysis import SmoothedCurve, smooth_release
from dp.report_text import run_costs, run_rows, text_table
from dp.umpc.protocol import polya_tail_bound


__all__ = ["EcdfRelease", "run_secure_ecdf", "count_slack", "own_histogram"]

NodeNoiseSource = Callable[[TreeNoisePlan], np.ndarray]


def own_histogram(values: np.ndarray | Sequence[float], grid: np.ndarray, public_rows: int) -> np.ndarray:
    """This party's rows as a histogram of ``len(grid) + 2`` cells summing to ``public_rows`` (grid cells, above the
    grid, public rows outside ``values``; docs/ecdf.md)."""
    cumulative = np.asarray(true_counts(np.asarray(values, dtype=float), grid), dtype=np.int64)
    size = len(values)
    return np.concatenate([np.diff(cumulative, prepend=0), [size - (int(cumulative[-1]) if cumulative.size else 0),
                                                            int(public_rows) - size]]).astype(np.int64)


@dataclass
class EcdfRelease:
    """Released noisy counts on the grid points of ``subset`` and what is needed to read them."""

    grid: np.ndarray
    subset: np.ndarray
    counts: np.ndarray
    n: int
    epsilon: float
    parties: int
    threshold: int
    levels: int
    point_std: float
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    query: EcdfParameters | None = None  # the face's query (:mod:`dp.ecdf.face`): what .table() and .record() say
    owners: dict[str, Any] | None = None  # from owners' uploads: :meth:`dp.umpc.owners.Owners.record`

    noise_source: ClassVar[str] = "parties"  # the tree noise is drawn by the parties (:mod:`dp.noise_defaults`)
    COVERS: ClassVar[str] = "DP noise only (noise_std per released point); exact counts, no sampling error"
    TITLE = "Private ECDF (tree mechanism, Barczewski, Mawass & Ramon)"

    @property
    def asked(self) -> EcdfParameters:
        """The query this release answers (set by :func:`dp.ecdf.face.release`)."""
        if self.query is None:
            raise ValueError("this release has no query: run it through dp.ecdf.release or simulate")
        return self.query

    def domain(self) -> tuple[float, float]:
        """The declared domain ``[lower, upper]``: the grid's ends."""
        return float(self.grid[0]), float(self.grid[-1])

    @cached_property
    def curve(self) -> SmoothedCurve:
        """The post-processing (smoothing eq. 3, quantiles Alg. 1 with intervals), computed on first use: in a job
        after the orderly shutdown, so that it keeps no party waiting."""
        from dp.ecdf.grid import prefix_incidence

        lower, upper = self.domain()
        return smooth_release(self, prefix_incidence(len(self.grid)), smooth=self.asked.smooth,
                              quantiles=list(self.asked.quantiles), lower=lower, upper=upper)

    def _rows(self) -> list[tuple[str, str]]:
        query, (lower, upper) = self.asked, self.domain()
        return [("column", f"{query.column}, grid of {len(self.grid)} points on [{lower:g}, {upper:g}] ({query.grid}), "
                           f"{len(self.subset)} released"),
                ("epsilon", f"{self.epsilon:g} (tree of {self.levels} levels, noise std {self.point_std:.3g} per point; "
                            "exact counts, no sampling error)"),
                ("n", f"{self.n} rows"), *run_rows(self, query.missing), self._smoothing_row()]

    def _smoothing_row(self) -> tuple[str, str]:
        return "smoothing", "none" if self.curve.smoothed is None else f"p = {self.asked.smooth} ({self.curve.solver})"

    def table(self) -> str:
        """The text the job prints: the table, the noise line, the quantile lines."""
        return "\n".join([text_table(self._rows(), self.TITLE), f"  noise: {self.guarantee}", *self.curve.lines()])

    def record(self) -> dict[str, Any]:
        """The JSON record the job writes (``--json``); its uncertainty keys as
        :meth:`dp.umpc.protocol.UStatRelease.record`: the tree noise's sd per released value, no sampling error."""
        query = self.asked
        return {"statistic": "ecdf", "column": query.column, "epsilon": self.epsilon, "delta": 0.0, "n": self.n,
                "points": len(self.grid), "released": len(self.subset), "missing": query.missing.mode,
                "fill": dict(query.missing.fills), "parties": self.parties, "threshold": self.threshold,
                "seconds": self.seconds, "bytes_sent": self.bytes_sent, "phases": self.phases,
                "noise_source": self.noise_source, "guarantee": self.guarantee, **self.curve.record(),
                "counts": self.counts.tolist(), "point_std": self.point_std, "noise_std": self.point_std,
                "sampling_error_bound": 0.0, "error_bound": self.point_std, "seed": None,
                "uncertainty_covers": self.COVERS, **({"owners": self.owners} if self.owners else {})}

    @property
    def guarantee(self) -> str:
        """Which noise ran and what it guarantees, in one line."""
        from dp.noise_defaults import party_guarantee

        return (party_guarantee(self.epsilon, 0.0, self.parties, self.threshold, "discrete laplace")
                + f" (one DLap per tree node, {self.levels} nodes per count)")

    @property
    def values(self) -> np.ndarray:
        """``F^(tau_i)`` for ``i`` in ``subset``: noisy count / n (not monotone)."""
        return self.counts / self.n


def count_slack(plan: TreeNoisePlan | Any, points: int) -> int:
    """Bound on the noise of any of ``points`` released counts of ``plan`` (each a difference of Pólya sums of total
    shape ``levels * variance_factor`` at ratio ``alpha``), failing with probability < 2**-40 (docs/ecdf.md)."""
    bits = 41 + max(0, math.ceil(math.log2(max(points, 1))))
    return polya_tail_bound(plan.alpha, plan.levels * plan.variance_factor, bits)


def _check_inputs(values: np.ndarray, plan: TreeNoisePlan, *, parties: int, threshold: int) -> str | None:
    """This party's verdict before anything is shared: ``None``, or a one-line problem (no count, no value):
    a plan for another ``m`` or ``t``, values not one finite column (docs/ecdf.md)."""
    if plan.parties != parties or plan.threshold != threshold:
        return (f"the tree noise plan is calibrated for parties={plan.parties}, threshold={plan.threshold}, but this "
                f"run has m = {parties} parties and threshold t = {threshold}: plan it with "
                f"plan_tree_noise(..., parties={parties}, threshold={threshold})")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return "the ECDF values must be numbers (one column)"
    if array.ndim != 1:
        return f"the ECDF values must be one column (a 1-D array), got a {array.ndim}-D array"
    if not np.all(np.isfinite(array)):
        return ("the ECDF values hold a missing value (NaN or infinite): refuse it or fill it with a declared value "
                "(secure.intake.MissingPolicy) before the release")
    return None


async def run_secure_ecdf(values: np.ndarray, grid: np.ndarray, plan: TreeNoisePlan, *,
                          subset: Sequence[int] | None = None, noise_source: NodeNoiseSource | None = None,
                          receivers: Sequence[int] | None = None, public_rows: int | None = None,
                          owned: tuple[Any, int] | None = None) -> EcdfRelease | None:
    """Every party calls this with its own values (one finite column) on a started MPyC runtime (parameters agreed):
    the noisy counts at the grid positions ``subset`` (default all) to ``receivers`` (default all), ``None``
    elsewhere.  Parameters, test hook and errors (InputError, ProtocolFailure): docs/ecdf.md."""
    from mpyc.runtime import mpc

    from secure.aggregation import SumRange, guarded_reveal_array, sum_counted_vectors, sum_party_vectors
    from secure.intake import exchange_counts
    from secure.meter import CostMeter
    from secure.session import InputError, agree_verdict

    problem = _check_inputs(values, plan, parties=len(mpc.parties), threshold=int(mpc.threshold))
    await agree_verdict(problem)  # one line at every party: a plan for another run, a missing value anywhere
    chosen = np.arange(plan.points) if subset is None else np.unique(np.asarray(subset, dtype=np.int64))
    meter = CostMeter()
    sectype = mpc.SecInt() if owned is None else owned[0].sectype
    with meter.phase("intake"):
        own = len(values) if public_rows is None else int(public_rows)
        if own < len(values):
            raise ValueError(f"public_rows must be at least the number of values, got {own}")
        party_rows = [] if owned else [int(r) for r in await exchange_counts(own)]
        rows = owned[1] if owned else sum(party_rows)
        if rows == 0:  # n is public: refuse before anything is shared (F = count / n needs n >= 1)
            raise InputError("all parties: need at least 1 row over all parties for an ECDF, got 0")
        # each party shares its histogram of own rows (grid cells, above the grid, not in this subset), which
        # must sum to its public rows (one secure zero test per party); the counts <= tau are prefix sums (local)
        counts = (owned[0] if owned else mpc.np_cumsum((await sum_counted_vectors(
            sectype, own_histogram(values, grid, own), party_rows))[:len(grid)]))[chosen]
        await meter.settle(counts)
    with meter.phase("noise"):
        draws = noise_source(plan) if noise_source is not None else plan.draw_party()
        node_noise = sum_party_vectors(sectype, draws)
        positions = prefix_positions(plan.points)[chosen]
        noisy = counts
        for level in range(positions.shape[1]):
            noisy = noisy + node_noise[positions[:, level]]
        await meter.settle(noisy)
    with meter.phase("reveal"):
        opened = await guarded_reveal_array(noisy, SumRange(0, rows, count_slack(plan, len(chosen))), receivers)
    phases = await meter.totals_over_parties()
    if opened is None:
        return None
    return EcdfRelease(grid=np.asarray(grid, dtype=float), subset=chosen, counts=opened, n=rows,
                       epsilon=plan.epsilon, parties=plan.parties, threshold=plan.threshold, levels=plan.levels,
                       point_std=math.sqrt(plan.point_variance) / rows, **run_costs(phases))
