"""A private ECDF across parties: the query's public parameters, per-party counts, secure sums, distributed tree
noise, one reveal (Barczewski, Mawass & Ramon §4.1 with the tree mechanism of §3.1, eq. 2).

Threat model: passive, static adversary corrupting at most ``t < m/2`` parties; it learns the released noisy
counts (epsilon-DP against it) and the public row counts.  Details: docs/ecdf.md ("The secure release")."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np

from dp.ecdf.analysis import SmoothedCurve, smooth_release
from dp.ecdf.grid import grid_of_points, prefix_positions, tree_depth, true_counts
from dp.ecdf.tree import TreeNoisePlan, plan_tree_noise
from dp.report_text import run_costs, run_rows, text_table
from dp.umpc.protocol import polya_tail_bound
from dp.validation import check_choice, check_epsilon, check_integer, check_nonnegative_int
from secure.fss.dcf import MAX_FULL_DOMAIN_BITS
from secure.intake import MissingPolicy

__all__ = ["EcdfParameters", "Protocol", "GridKind", "Smoothing", "MAX_DCF_BITS", "check_bits", "EcdfRelease",
           "run_secure_ecdf", "count_slack", "own_histogram"]

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
    budget ``epsilon``; ``protocol`` ``tree`` (§4.1) or ``fss`` (§4.2) (parameters: docs/ecdf.md)."""

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
