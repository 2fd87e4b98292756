r"""The private Hosmer-Lemeshow (HL) calibration statistic: the query, the simulated path, the secure path, the face.

Barczewski, Mawass & Ramon, §5.2 (eq. 5, Algorithm 2, Theorem 2), App. A.2, §6.6, the secure path with §4.1:
``epsilon``-DP under replace-one rows against a passive coalition of ``t < m/2`` parties.  Algorithm, proof,
steps, checks and threat model: docs/hosmer_lemeshow.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from dp.budget.accountants import Spend
from dp.calibration import party_noise_shape
from dp.ecdf.grid import true_counts
from dp.ecdf.owners import Owners, at_points, by_label, owner_cells
from dp.ecdf.hosmer_lemeshow_release import (ACCOUNTING_MODES, JOINT_SENSITIVITY, HosmerLemeshowParameters,
                                             HosmerLemeshowRelease, party_statistic_draws, release_boundaries,
                                             released_statistic)
from dp.ecdf.hosmer_lemeshow_statistic import (HosmerLemeshowResult, exact_hosmer_lemeshow, group_statistics,
                                               relative_squared_error)
from dp.ecdf.secure_release import NodeNoiseSource, run_secure_ecdf
from dp.ecdf.tree import noisy_counts
from dp.noise_plans import polya_tail_bound
from dp.validation import (check_labels, check_parties, check_rows_by_party, check_score_label_rows, check_seed,
                           check_values)
from secure.intake import ColumnSpec
from secure.noise.party import polya_difference

__all__ = ["HosmerLemeshowQuery", "private_hosmer_lemeshow", "StatisticNoiseSource", "party_group_noise",
           "run_secure_hosmer_lemeshow",
           # re-exported from the modules of the statistic and the release
           "ACCOUNTING_MODES", "JOINT_SENSITIVITY", "HosmerLemeshowRelease", "HosmerLemeshowResult",
           "party_statistic_draws", "exact_hosmer_lemeshow", "group_statistics", "relative_squared_error"]


#: ``(query, parties, threshold) -> this party's (expected, observed) draws``, each of shape ``(2, Q)``
StatisticNoiseSource = Callable[[HosmerLemeshowParameters, int, int], tuple[np.ndarray, np.ndarray]]

#: failure probability of a range check is below ``2^-(bits - 1)`` per statistic (as :func:`count_slack`)
_TAIL_BITS = 41


@dataclass(frozen=True, kw_only=True)
class HosmerLemeshowQuery(HosmerLemeshowParameters):
    """The query of the ``dp.ecdf`` face: what is released (:class:`HosmerLemeshowParameters`, validated once) and
    the three verbs; ``domain``: the scores' declared domain, predicted probabilities, so only ``(0, 1)``."""

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
        """``dp.ecdf.release``: every party, its own ``(probability, label)`` rows (:func:`run_secure_hosmer_lemeshow`);
        the release at ``receivers`` (party 0 among them), ``None`` elsewhere; ``seed``: the rows' public seed."""
        owners = rows if isinstance(rows, Owners) else None  # the campaign's servers (dp.ecdf.owners)
        probabilities, labels = check_score_label_rows(np.empty((0, 2)) if owners else rows)
        query = self if owners is None else replace(self, unit_rows=owners.plan.rows_per_owner)
        return await run_secure_hosmer_lemeshow(probabilities, labels, query, receivers=receivers, seed=seed,
                                                owners=owners)

    def _simulate(self, rows_by_party: Sequence[Any], *, seed: int, threshold: int | None = None,
                  noise_rng: np.random.Generator | None = None) -> HosmerLemeshowRelease:
        """``dp.ecdf.simulate``: Algorithm 2 in one process on all the parties' rows and draws
        (:func:`private_hosmer_lemeshow`); the public ``seed`` picks nothing here (recorded as the rows' seed)."""
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


def party_group_noise(query: HosmerLemeshowParameters, parties: int, threshold: int,
                      rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """This party's draws on the ``4 Q`` statistics, ``(expected, observed)`` int64 ``(2, Q)``: one row of
    :func:`dp.ecdf.hosmer_lemeshow_release.party_statistic_draws` (``rng=None``: OS randomness)."""
    shape = party_noise_shape(parties, threshold)
    expected, observed = (np.asarray(polya_difference(shape, size=2 * query.groups, rng=rng, log_alpha=log_alpha),
                                     dtype=np.int64).reshape(2, query.groups)
                          for log_alpha in (query.expected_log_alpha, query.observed_log_alpha))
    return expected, observed


def _ranges(query: HosmerLemeshowParameters, rows: int, parties: int, threshold: int) -> tuple[Any, Any, Any]:
    """``(expected range, observed range, secure type)`` of the opened sums for ``rows`` rows: room for both, each
    range's slack a bound on the total noise exceeded with probability below ``2^-40`` over its ``2 Q`` sums."""
    from mpyc.runtime import mpc

    from secure.aggregation import SumRange

    tail, factor = _TAIL_BITS + math.ceil(math.log2(2 * query.groups)), parties / (parties - threshold)
    expected_range = SumRange(0, rows * query.scale, polya_tail_bound(math.exp(query.expected_log_alpha), factor, tail))
    observed_range = SumRange(0, rows, polya_tail_bound(math.exp(query.observed_log_alpha), factor, tail))
    bits = max(expected_range.bits_needed, observed_range.bits_needed) + 2
    return expected_range, observed_range, mpc.SecInt(max(bits, int(mpc.options.bit_length)))


async def _checked_statistics(sectype: Any, own: np.ndarray, groups: int, scale: int, own_rows: int) -> Any:
    """Every party's ``4 Q`` exact group sums, secret-shared, summed, after a check per party that its ``O`` sum to
    its public row count and its ``E`` match its ``O`` in every group (docs/hosmer_lemeshow.md).
    :raise secure.errors.InputError: at every party, naming the first deviating party."""
    from mpyc.runtime import mpc

    from secure.aggregation import DEVIATING_COUNT, refuse_deviating_parties
    from secure.intake import exchange_counts

    totals = [int(r) for r in await exchange_counts(own_rows)]
    vectors = mpc.input(sectype.array(np.asarray(own, dtype=np.int64)))
    stacked = mpc.np_stack(vectors)  # (m, 4Q): E1, E0, O1, O0
    expected, observed = stacked[:, :2 * groups], stacked[:, 2 * groups:]
    row_check = mpc.np_sum(observed, axis=1) - np.asarray(totals, dtype=np.int64)
    group_check = (expected[:, :groups] + expected[:, groups:]) - scale * (observed[:, :groups] + observed[:, groups:])
    differences = mpc.np_concatenate([row_check.reshape(len(vectors), 1), group_check], axis=1)
    await refuse_deviating_parties(differences, [DEVIATING_COUNT.format(what="group counts")] + [
        "its expected values of a group do not match its counts of that group (deviating party); "
        "nothing is released"] * groups)
    return mpc.np_sum(stacked, axis=0)


async def run_secure_hosmer_lemeshow(probabilities: np.ndarray, labels: np.ndarray, query: HosmerLemeshowParameters, *,
                                     node_noise_source: NodeNoiseSource | None = None,
                                     statistic_noise_source: StatisticNoiseSource | None = None,
                                     receivers: Sequence[int] = (0,), seed: int | None = None,
                                     owners: Any = None) -> HosmerLemeshowRelease | None:
    """Every party calls this with its own rows (probabilities clipped to ``[0, 1]`` here; 0/1 labels checked by the
    caller) on a started MPyC runtime, parameters agreed: the release at the ``receivers`` (party 0 among them),
    ``None`` elsewhere.  Parameters, test hooks and errors (InputError, ProtocolFailure): docs/hosmer_lemeshow.md."""
    from mpyc.runtime import mpc

    from secure.aggregation import guarded_reveal_array, sum_party_vectors
    from secure.errors import ProtocolFailure
    from secure.meter import CostMeter
    from secure.session import mark_stopping
    from smoothing import SmoothingError

    chosen = sorted(set(int(r) for r in receivers))
    if 0 not in chosen:
        raise ValueError(f"receivers must include party 0 (it inverts the released ECDF), got {list(receivers)}")
    parties, threshold = len(mpc.parties), int(mpc.threshold)
    spec, scale, q_count = query.spec, query.scale, query.groups
    fixed = np.clip(spec.encode(np.clip(np.asarray(probabilities, dtype=float), 0.0, 1.0)), 0, scale)
    ys = np.asarray(labels, dtype=np.int64)
    decoded, owned = spec.decode(fixed), None
    if owners is not None:  # per (score cell, label) from the owners' DPF keys; a cell's score encoded as a row's
        what = "Hosmer-Lemeshow test"
        counts, (cells, marks) = await owner_cells(owners, query.columns, what,
                                                   lambda rows: _ranges(query, rows, parties, threshold)[2])
        classes, fixed = by_label(counts, marks, what), np.clip(spec.encode(np.clip(cells, 0.0, 1.0)), 0, scale)
        owned = (at_points(classes[0] + classes[1], spec.decode(fixed), query.grid, 0.0, 1.0), owners.rows)

    # line 5: the ECDF of predicted probabilities at (L + 1) eps', opened to party 0
    plan = query.tree_plan(parties=parties, threshold=threshold)
    ecdf_release = await run_secure_ecdf(decoded, query.grid, plan, noise_source=node_noise_source, receivers=[0],
                                         owned=owned)

    meter = CostMeter()
    with meter.phase("boundaries"):  # line 6 at party 0 (post-processing), sent with the public n
        message: tuple[int, list[int]] | str | None = None
        boundaries: np.ndarray | None = None
        smoothed: np.ndarray | None = None
        ecdf: np.ndarray | None = None
        if ecdf_release is not None:
            ecdf = ecdf_release.counts / ecdf_release.n
            try:
                boundaries, bounds, smoothed = release_boundaries(ecdf, query)
                message = (int(ecdf_release.n), [int(b) for b in bounds])
            except SmoothingError as exc:  # said to every party; nothing more is released
                message = f"party 0 could not find the group boundaries from the released ECDF: {exc}"
        received = await mpc.transfer(message, senders=0)
    if isinstance(received, str):
        mark_stopping()
        raise ProtocolFailure(received)
    rows, bound_list = received
    bounds = np.asarray(bound_list, dtype=np.int64)

    # lines 8-9: per-party group sums and noise, secret-shared, summed, opened
    expected_range, observed_range, sectype = _ranges(query, rows, parties, threshold)
    sectype = sectype if owned is None else owned[0].sectype
    with meter.phase("statistics"):
        # own sums (zeros at a party without rows) and own draws, each secret-shared; the sums checked before
        # anything is opened
        own = (np.concatenate([sums.ravel() for sums in group_statistics(fixed, ys, bounds, scale=scale)])
               if len(ys) else np.zeros(4 * q_count, dtype=np.int64))
        draws = (statistic_noise_source(query, parties, threshold) if statistic_noise_source is not None
                 else party_group_noise(query, parties, threshold))
        if owned is None:
            statistics = await _checked_statistics(sectype, own, q_count, scale, len(ys))
        else:  # E0, E1, O0, O1 per group: public group maps of the cells (groups drawn as group_statistics does)
            group = (np.searchsorted(bounds, fixed, side="left") == np.arange(q_count)[:, None]).astype(np.int64)
            total = classes[0] + classes[1]
            statistics = mpc.np_concatenate([(group * (scale - fixed)) @ total, (group * fixed) @ total,
                                             group @ classes[1], group @ classes[0]])
        noise = sum_party_vectors(sectype, np.concatenate([np.asarray(draw, dtype=np.int64).reshape(2 * q_count)
                                                           for draw in draws[:2]]))
        noisy = statistics + noise
        await meter.settle(noisy)
    with meter.phase("reveal"):
        opened_expected = await guarded_reveal_array(noisy[:2 * q_count], expected_range, chosen)
        opened_observed = await guarded_reveal_array(noisy[2 * q_count:], observed_range, chosen)
    phases = await meter.totals_over_parties()
    if opened_expected is None or opened_observed is None:
        return None
    costs = {f"ecdf {name}": values for name, values in (ecdf_release.phases if ecdf_release is not None else {}).items()}
    costs.update({name: {"seconds": cost.seconds, "bytes_sent": cost.bytes_sent} for name, cost in phases.items()})
    seconds = sum(float(c["seconds"]) for c in costs.values())
    sent = int(sum(int(c["bytes_sent"]) for c in costs.values()))
    if ecdf is None or boundaries is None:  # a receiver other than party 0: it knows the boundaries only
        boundaries = np.concatenate(([0.0], bounds / float(scale), [1.0]))
        ecdf = np.full(query.grid_points, np.nan)

    return released_statistic(query, opened_expected, opened_observed, bounds, boundaries=boundaries, ecdf=ecdf,
                              smoothed_ecdf=smoothed, n=int(rows), parties=parties, threshold=threshold,
                              seconds=seconds, bytes_sent=sent, phases=costs, seed=seed)
