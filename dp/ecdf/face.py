"""The private-ECDF family for scripts and jobs: one query, four verbs (Barczewski, Mawass & Ramon).

:class:`EcdfQuery` (keyword-only, validated once): the tree mechanism of §3.1 eq. (2) across parties by
secure aggregation (§4.1, ``protocol="tree"``) or from two servers' DCF keys (§4.2, ``protocol="fss"``),
smoothed (eq. 3) and inverted for quantiles (Algorithm 1); :func:`release` (every party), :func:`simulate`
(one process, same counts and noise law), :func:`exact` (the noiseless reference).  Threat model of
:func:`release`: the protocol's (passive, ``t < m/2``; FSS: two non-colluding servers).  Details: docs/ecdf.md.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dp.ecdf.fss_release import FssEcdfRelease, check_bits, fss_noise_plan, resolve_queries, run_fss_ecdf
from dp.ecdf.grid import check_column, grid_of_points, true_counts
from dp.ecdf.secure_release import EcdfRelease, NodeNoiseSource, run_secure_ecdf
from dp.ecdf.tree import TreeNoisePlan, noisy_counts, plan_tree_noise
from dp.validation import check_choice, check_epsilon, check_nonnegative_int
from secure.intake import MissingPolicy

__all__ = ["EcdfQuery", "release", "simulate", "exact", "Protocol", "GridKind", "Smoothing"]

Protocol = Literal["tree", "fss"]
GridKind = Literal["uniform", "geometric"]
#: the norm ``p`` of the smoothing (eq. 3); ``None`` releases the raw curve
Smoothing = Literal[1, 2]


@dataclass(frozen=True, kw_only=True)
class EcdfQuery:
    """A private ECDF of one column on ``points`` grid points of ``[lower, upper]`` at budget ``epsilon``.

    :param protocol: ``tree`` (secure aggregation, §4.1) or ``fss`` (two servers, §4.2).
    :param grid: ``uniform`` (equal gaps) or ``geometric`` (equal ratios, ``lower > 0``).
    :param release: ``tree`` only: release ``K`` evenly spaced grid points (the subset ``B``); default all.
    :param queries: ``fss`` only: the 0-based grid indices answered; default all.
    :param at: ``fss`` only: values answered at the largest grid point below each.
    :param bits: ``fss`` only: the DCF bit width (default ``ceil(log2 N)``).
    :param store: ``fss`` only: the servers keep their keys in ``store/server{b}``.
    :param answer: ``fss`` only: answer from the keys stored there (the two servers alone; no bounds, no new noise).
    :param smooth: the norm of eq. (3), or ``None``.
    :param quantiles: levels of the private quantiles (inverse ECDF, Algorithm 1), each in ``(0, 1)``.
    :param column: the column's name (said in the table and the record).
    :param missing: the declared missing-value policy the rows were read with (said in the table and the record).
    :raise ValueError: on a bad parameter (``epsilon must be positive, got -1``); :raise TypeError: a wrong type.
    """

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

    def _subset(self, grid: np.ndarray) -> np.ndarray:
        if self.protocol == "fss":
            return resolve_queries(self, grid)
        if self.release is None:
            return np.arange(len(grid), dtype=np.int64)
        return np.unique(np.linspace(0, len(grid) - 1, self.release).round().astype(np.int64))

    async def _release(self, rows: npt.ArrayLike, *, receivers: Sequence[int] | None = None,
                       noise_source: NodeNoiseSource | None = None) -> EcdfRelease | None:
        if self.protocol == "fss":
            return await run_fss_ecdf(self, rows, receivers=receivers, noise_source=noise_source)
        from mpyc.runtime import mpc

        grid = self.grid_points()
        plan = plan_tree_noise(epsilon=self.epsilon, points=len(grid), parties=len(mpc.parties),
                               threshold=int(mpc.threshold))
        values = np.clip(np.asarray(rows, dtype=float), self.lower, self.upper)  # at its owner; NaN stays, refused
        result = await run_secure_ecdf(values, grid, plan, subset=self._subset(grid).tolist(), receivers=receivers,
                                       noise_source=noise_source)
        if result is not None:
            result.query = self
        return result

    def _parts(self, rows_by_party: Sequence[npt.ArrayLike]) -> tuple[np.ndarray, np.ndarray, int]:
        """``(grid, all rows clipped to the domain, m)``."""
        if self.answer is not None:
            raise ValueError("simulate and exact need the rows: a query with answer= reads stored keys")
        parts = [check_column(rows, f"party {i}'s rows") for i, rows in enumerate(rows_by_party)]
        if not parts or sum(len(p) for p in parts) == 0:
            raise ValueError("need at least 1 row over all parties for an ECDF, got 0")
        return self.grid_points(), np.clip(np.concatenate(parts), self.lower, self.upper), len(parts)

    def _simulate(self, rows_by_party: Sequence[npt.ArrayLike], *, seed: int, threshold: int | None = None,
                  noise_rng: np.random.Generator | None = None) -> EcdfRelease:
        grid, values, parties = self._parts(rows_by_party)
        t = (parties - 1) // 2 if threshold is None else threshold
        chosen, n = self._subset(grid), len(values)
        common: dict[str, Any] = {"grid": grid, "subset": chosen, "n": n, "epsilon": self.epsilon,
                                  "parties": parties, "query": self}
        if self.protocol == "tree":
            plan = plan_tree_noise(epsilon=self.epsilon, points=len(grid), parties=parties, threshold=t)
            counts = noisy_counts(true_counts(values, grid), plan.draw_total(noise_rng))[chosen]
            return EcdfRelease(counts=counts, threshold=t, levels=plan.levels,
                               point_std=math.sqrt(plan.point_variance) / n, **common)
        fss = fss_noise_plan(epsilon=self.epsilon, points=len(grid), owners=parties, threshold=t)
        draw: TreeNoisePlan = fss.draw
        noise = sum((draw.draw_party(noise_rng) for _ in range(parties)), np.zeros(draw.node_count, np.int64))
        counts = noisy_counts(true_counts(values, grid), noise)[chosen]
        missing = self.missing
        public = {"column": self.column, "domain": [self.lower, self.upper], "grid_kind": self.grid,
                  "missing": missing.mode, "fill": dict(missing.fills)}
        return FssEcdfRelease(counts=counts, threshold=t, levels=fss.levels,
                              point_std=math.sqrt(fss.point_variance) / n, coalition=fss.coalition,
                              run_id="simulated", bits=check_bits(len(grid), self.bits), public=public, **common)

    def _exact(self, rows_by_party: Sequence[npt.ArrayLike]) -> np.ndarray:
        grid, values, _ = self._parts(rows_by_party)
        return true_counts(values, grid)[self._subset(grid)] / len(values)

    def public(self) -> dict[str, Any]:
        """The parameters every party must share (checked before any data)."""
        return {name: (getattr(self, name) if name != "missing" else [self.missing.mode, list(self.missing.fills)])
                for name in self.__dataclass_fields__}


async def release(query: EcdfQuery, rows: npt.ArrayLike, **kw: Any) -> EcdfRelease | None:
    """Every party calls this with its own rows (one column) on a started MPyC runtime; the release at the
    receivers (``receivers=``, default all; for ``fss`` the two servers), ``None`` elsewhere.  ``noise_source=``
    is the node-noise test hook of the protocols."""
    return await query._release(rows, **kw)


def simulate(query: EcdfQuery, rows_by_party: Sequence[npt.ArrayLike], *, seed: int, **kw: Any) -> EcdfRelease:
    """The query in one process on every party's rows: the counts of :func:`release` for the same node draws,
    the same noise law otherwise (``threshold=`` default ``(m - 1) // 2``; ``noise_rng=`` a generator for tests,
    default OS randomness).  ``seed`` is the family's public seed; the ECDF samples nothing, so it draws nothing."""
    return query._simulate(rows_by_party, seed=seed, **kw)


def exact(query: EcdfQuery, rows_by_party: Sequence[npt.ArrayLike]) -> np.ndarray:
    """The noiseless ECDF ``#{x <= tau_i} / n`` at the released grid points, rows clipped to the domain."""
    return query._exact(rows_by_party)
