"""The private-ECDF family for scripts and jobs: one query, four verbs (Barczewski, Mawass & Ramon): the tree
mechanism of §3.1 eq. (2) by secure aggregation (§4.1) or from two servers' DCF keys (§4.2), smoothed (eq. 3) and
inverted for quantiles (Algorithm 1).  Threat model of :func:`release`: the protocol's (passive, ``t < m/2``; FSS:
two non-colluding servers).  Details: docs/ecdf.md ("The four verbs")."""
from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

import numpy as np
import numpy.typing as npt

from dp.budget.accountants import Budget, Spend
from dp.ecdf.fss_release import FssEcdfRelease, fss_noise_plan, resolve_queries, run_fss_ecdf
from dp.ecdf.grid import check_column, true_counts
from dp.ecdf.owners import Owners, at_points, owner_cells
from dp.ecdf.secure_release import (EcdfParameters, EcdfRelease, GridKind, NodeNoiseSource, Protocol, Smoothing,
                                    check_bits, run_secure_ecdf)
from dp.ecdf.tree import noisy_counts, plan_tree_noise
from secure.errors import InputError

if TYPE_CHECKING:
    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery
    from dp.ecdf.roc import RocQuery

__all__ = ["EcdfQuery", "FamilyQuery", "release", "simulate", "exact", "Protocol", "GridKind", "Smoothing",
           "ANSWER_NOTE"]

#: why a ``protocol="fss"`` query with ``answer=`` spends nothing (its budget line)
ANSWER_NOTE = ("nothing spent: --answer answers from the stored keys, whose node noise was fixed at the upload "
               "(that run spent its epsilon); answering more queries is post-processing")


@dataclass(frozen=True, kw_only=True)
class EcdfQuery(EcdfParameters):
    """A private ECDF of one column with its verbs (:class:`dp.ecdf.secure_release.EcdfParameters`: the fields)."""

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

        grid, owned, unit = self.grid_points(), None, 1
        if isinstance(rows, Owners):  # the campaign's servers: the counts from the owners' DPF keys
            counts, (cells,) = await owner_cells(rows, [self.column], "ECDF", lambda _: mpc.SecInt())
            unit = rows.plan.rows_per_owner
            owned, rows = (at_points(counts, cells, grid, self.lower, self.upper), rows.rows), []
        plan = plan_tree_noise(epsilon=self.epsilon, points=len(grid), parties=len(mpc.parties),
                               threshold=int(mpc.threshold), unit_rows=unit)
        values = np.clip(np.asarray(rows, dtype=float), self.lower, self.upper)  # at its owner; NaN stays, refused
        result = await run_secure_ecdf(values, grid, plan, subset=self._subset(grid).tolist(), receivers=receivers,
                                       noise_source=noise_source, owned=owned)
        if result is not None:
            result.query = self
        return result

    def _spend(self) -> tuple[Spend, str | None]:
        """``(spend, why none)``: epsilon, pure DP (tree node noise, eq. 2); answers from stored keys spend nothing."""
        if self.answer is not None:
            return Spend(epsilon=0.0, what="ECDF answers from stored keys"), ANSWER_NOTE
        fss = self.protocol == "fss"
        return Spend(epsilon=float(self.epsilon), mechanism="distributed discrete Laplace tree noise"
                     + " (FSS keys)" * fss,
                     what=f"ECDF of {self.column} on {self.points} grid points" + ", keys uploaded" * fss), None

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
        noise = sum((fss.draw.draw_party(noise_rng) for _ in range(parties)), np.zeros(fss.draw.node_count, np.int64))
        counts = noisy_counts(true_counts(values, grid), noise)[chosen]
        public = {"column": self.column, "domain": [self.lower, self.upper], "grid_kind": self.grid,
                  "missing": self.missing.mode, "fill": dict(self.missing.fills)}
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


#: a query of the family (:class:`EcdfQuery`, :class:`dp.ecdf.roc.RocQuery`,
#: :class:`dp.ecdf.hosmer_lemeshow.HosmerLemeshowQuery`): its own spend, release, simulation and reference
FamilyQuery = Union[EcdfQuery, "RocQuery", "HosmerLemeshowQuery"]


async def release(query: FamilyQuery, rows: Any, *, ledger: str | os.PathLike[str] | None = None,
                  budget: Budget | str | None = None, dataset_name: str | None = None, dataset: str | None = None,
                  accountant: str = "basic", data_file: str | None = None, job: tuple[str, Sequence[str]] | None = None,
                  **kw: Any) -> Any:
    """Every party calls this with its own rows (or ``async () -> rows``, or the campaign's :class:`Owners`) on a
    started MPyC runtime, after reserving the query's pure spend as :func:`dp.umpc.release`: the release at the
    receivers, ``None`` elsewhere (keywords and owners: docs/ecdf.md, "The four verbs")."""
    from dp.budget.spending import reserve, spend_request

    if isinstance(rows, Owners):
        if dataset_name not in (None, rows.plan.id) or getattr(query, "protocol", "tree") != "tree":
            raise InputError(f"all servers: owners' uploads feed the tree ECDF, ROC and Hosmer-Lemeshow, spending "
                             f"from the campaign's account {rows.plan.id}, not protocol fss or {dataset_name!r}")
        dataset_name, dataset, data_file = rows.plan.id, None, None
    spend, exempt = query._spend()
    source = data_file if data_file is not None else getattr(rows, "source", None)
    reservation = await reserve(lambda: spend_request(
        spend, release="dp.ecdf.release", exempt=exempt, ledger=ledger, budget=budget, dataset_name=dataset_name,
        dataset=dataset, accountant=accountant, data_file=source, job=job), job=job)
    result = await query._release(await rows() if callable(rows) else rows, **kw)
    if reservation is not None:
        reservation.mark_released()  # revealed: the entry stays counted (pure: nothing to settle)
    return await rows.finish(result) if isinstance(rows, Owners) else result


def simulate(query: FamilyQuery, rows_by_party: Sequence[npt.ArrayLike], *, seed: int, **kw: Any) -> Any:
    """The query in one process on every party's rows: the counts of :func:`release` for the same node draws,
    the same noise law otherwise (``threshold=`` default ``(m - 1) // 2``; ``noise_rng=`` a generator for tests,
    default OS randomness).  ``seed`` is the family's public seed; the ECDF samples nothing, so it draws nothing."""
    return query._simulate(rows_by_party, seed=seed, **kw)


def exact(query: FamilyQuery, rows_by_party: Sequence[npt.ArrayLike]) -> Any:
    """The noiseless reference: for an ECDF ``#{x <= tau_i} / n`` at the released grid points, rows clipped to
    the domain; for ROC the AUC on the grid; for Hosmer-Lemeshow the exact H."""
    return query._exact(rows_by_party)
