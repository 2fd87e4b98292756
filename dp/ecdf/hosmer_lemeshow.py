r"""The private Hosmer-Lemeshow (HL) calibration statistic: the query, the simulated path, the family face.

Barczewski, Mawass & Ramon, §5.2 (eq. 5, Algorithm 2, Theorem 2), App. A.2, §6.6: ``epsilon``-DP under
replace-one rows against a passive coalition of ``t < m/2`` parties.  Algorithm, proof and threat model:
docs/hosmer_lemeshow.md."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dp.budget.accountants import Spend
from dp.ecdf.grid import true_counts
from dp.ecdf.owners import Owners
from dp.ecdf.hosmer_lemeshow_release import (ACCOUNTING_MODES, JOINT_SENSITIVITY, HosmerLemeshowParameters,
                                             HosmerLemeshowRelease, party_statistic_draws, release_boundaries,
                                             released_statistic)
from dp.ecdf.hosmer_lemeshow_secure import run_secure_hosmer_lemeshow
from dp.ecdf.hosmer_lemeshow_statistic import (HosmerLemeshowResult, exact_hosmer_lemeshow, group_statistics,
                                               relative_squared_error)
from dp.ecdf.tree import noisy_counts
from dp.validation import (check_labels, check_parties, check_rows_by_party, check_score_label_rows, check_seed,
                           check_values)
from secure.intake import ColumnSpec

__all__ = ["HosmerLemeshowQuery", "private_hosmer_lemeshow",
           # re-exported from the modules of the statistic and the release
           "ACCOUNTING_MODES", "JOINT_SENSITIVITY", "HosmerLemeshowRelease", "HosmerLemeshowResult",
           "party_statistic_draws", "exact_hosmer_lemeshow", "group_statistics", "relative_squared_error"]

@dataclass(frozen=True, kw_only=True)
class HosmerLemeshowQuery(HosmerLemeshowParameters):
    """The query of the ``dp.ecdf`` face: what is released (:class:`HosmerLemeshowParameters`, validated once) and
    the three verbs.  E.g. ``HosmerLemeshowQuery(epsilon=5, groups=10, grid_points=1024)``.  ``domain``: the scores'
    declared domain, predicted probabilities, so only ``(0, 1)`` (ValueError otherwise)."""

    domain: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self) -> None:
        super().__post_init__()
        if tuple(self.domain) != (0.0, 1.0):
            raise ValueError(f"domain {self.columns[0]}: the scores are predicted probabilities, on 0:1 (the ECDF grid "
                             f"is i/N of [0, 1]), got {self.domain[0]:g}:{self.domain[1]:g}")

    def specs(self) -> list[ColumnSpec]:
        """The declared columns: the score on [0, 1] with ``precision`` bits, the label as categories 0/1."""
        return [ColumnSpec(self.columns[0], 0.0, 1.0, self.precision), ColumnSpec.categorical(self.columns[1], (0, 1))]

    def public(self) -> dict[str, Any]:
        """The parameters every party must share (checked before any data)."""
        return {"columns": list(self.columns), "epsilon": self.epsilon, "groups": self.groups,
                "grid_points": self.grid_points, "precision": self.precision, "smoothed": self.smoothed,
                "accounting": self.accounting, "missing": self.missing.mode,
                "fill": [list(item) for item in self.missing.fills]}

    def _spend(self) -> tuple[Spend, str | None]:
        """``dp.ecdf.release``'s spend: epsilon, pure DP (Theorem 2's split)."""
        return Spend(epsilon=float(self.epsilon),
                     mechanism="distributed discrete Laplace (ECDF tree nodes and group statistics)",
                     what=f"Hosmer-Lemeshow of {self.columns[0]} by {self.columns[1]}, Q = {self.groups}"), None

    async def _release(self, rows: Any, *, receivers: Sequence[int] = (0,),
                       seed: int | None = None) -> HosmerLemeshowRelease | None:
        """``dp.ecdf.release``: every party, its own ``(probability, label)`` rows, on a started MPyC runtime
        (:func:`dp.ecdf.hosmer_lemeshow_secure.run_secure_hosmer_lemeshow`); the release at ``receivers``
        (party 0 among them), ``None`` elsewhere.  ``seed``: the public seed the rows came from, recorded."""
        owners = rows if isinstance(rows, Owners) else None  # the campaign's servers (dp.ecdf.owners)
        probabilities, labels = check_score_label_rows(np.empty((0, 2)) if owners else rows)
        query = self if owners is None else replace(self, unit_rows=owners.plan.rows_per_owner)
        return await run_secure_hosmer_lemeshow(probabilities, labels, query, receivers=receivers, seed=seed,
                                                owners=owners)

    def _simulate(self, rows_by_party: Sequence[Any], *, seed: int, threshold: int | None = None,
                  noise_rng: np.random.Generator | None = None) -> HosmerLemeshowRelease:
        """``dp.ecdf.simulate``: Algorithm 2 in one process on the union of the parties' rows, every party's draws
        (:func:`private_hosmer_lemeshow`; OS randomness unless ``noise_rng``).  Every row is counted: the public
        ``seed`` picks nothing here (recorded as the rows' seed)."""
        probabilities, labels, parties = check_rows_by_party(rows_by_party)
        return private_hosmer_lemeshow(probabilities, labels, self, parties=parties, rng=noise_rng,
                                       threshold=(parties - 1) // 2 if threshold is None else threshold,
                                       seed=check_seed(seed))

    def _exact(self, rows_by_party: Sequence[Any]) -> HosmerLemeshowResult:
        """``dp.ecdf.exact``: the non-private HL statistic, groups at the exact quantiles."""
        probabilities, labels, _ = check_rows_by_party(rows_by_party)
        return exact_hosmer_lemeshow(probabilities, labels, self.groups)


def _check_noise(noise: npt.ArrayLike | None, name: str, groups: int) -> np.ndarray | None:
    if noise is None:
        return None
    array = np.asarray(noise)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != (2, groups):
        raise ValueError(f"{name} must have shape (2, {groups}), got {array.shape}")
    return array.astype(np.int64)


def private_hosmer_lemeshow(probabilities: npt.ArrayLike, labels: npt.ArrayLike, query: HosmerLemeshowQuery, *,
                            parties: int = 1, threshold: int = 0, rng: np.random.Generator | None = None,
                            node_noise: npt.ArrayLike | None = None, expected_noise: npt.ArrayLike | None = None,
                            observed_noise: npt.ArrayLike | None = None, seed: int | None = None) -> HosmerLemeshowRelease:
    """Algorithm 2 (HL-STAT-DP) simulated in one process with the protocol's integer noise: the secure path's release
    when ``node_noise``, ``expected_noise`` and ``observed_noise`` are all given, else each of ``parties`` draws
    (``rng=None``: OS).  Parameters and errors (ValueError, TypeError, SmoothingError): docs/hosmer_lemeshow.md."""
    if not isinstance(query, HosmerLemeshowQuery):
        raise TypeError(f"query must be a HosmerLemeshowQuery, got {type(query).__name__}")
    m, t = check_parties(parties, threshold)
    p = check_values(probabilities, "probabilities", low=0.0, high=1.0)
    y = check_labels(labels, p.shape[0])
    q_count, scale, n = query.groups, query.scale, p.shape[0]
    given_expected = _check_noise(expected_noise, "expected_noise", q_count)
    given_observed = _check_noise(observed_noise, "observed_noise", q_count)
    fixed = query.spec.encode(p)                 # k_i = round(p_i 2^b) in [0, 2^b]
    # line 5: the ECDF of predicted probabilities, released once at (L + 1) eps'
    plan = query.tree_plan(parties=m, threshold=t)
    noise = plan.draw_total(rng) if node_noise is None else node_noise
    ecdf = noisy_counts(true_counts(query.spec.decode(fixed), query.grid), noise) / n
    boundaries, bounds, smoothed = release_boundaries(ecdf, query)
    # lines 8-9: the 4Q group statistics with distributed discrete Laplace noise
    true_expected, true_observed = group_statistics(fixed, y, bounds, scale=scale)
    if given_expected is None:
        given_expected = party_statistic_draws(query.expected_log_alpha, 2 * q_count, m, t, rng).sum(axis=0)
    if given_observed is None:
        given_observed = party_statistic_draws(query.observed_log_alpha, 2 * q_count, m, t, rng).sum(axis=0)
    return released_statistic(query, true_expected + given_expected.reshape(2, q_count),
                              true_observed + given_observed.reshape(2, q_count), bounds, boundaries=boundaries,
                              ecdf=ecdf, smoothed_ecdf=smoothed, n=n, parties=m, threshold=t, seed=seed)
