r"""The private Hosmer-Lemeshow statistic across parties (secure path of Algorithm 2; Barczewski, Mawass &
Ramon, §5.2 with §4.1).  Threat model: passive, static, at most ``t < m/2`` parties; ``epsilon``-DP against
them.  Steps and checks: docs/hosmer_lemeshow.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dp.calibration import party_noise_shape
from dp.ecdf.hosmer_lemeshow_release import (HosmerLemeshowParameters, HosmerLemeshowRelease, release_boundaries,
                                             released_statistic)
from dp.ecdf.hosmer_lemeshow_statistic import group_statistics
from dp.ecdf.owners import at_points, by_label, owner_cells
from dp.ecdf.tree import TreeNoisePlan
from dp.noise_plans import polya_tail_bound
from secure.noise.party import polya_difference

__all__ = ["StatisticNoiseSource", "party_group_noise", "run_secure_hosmer_lemeshow"]

#: ``(query, parties, threshold) -> this party's (expected, observed) draws``, each of shape ``(2, Q)``
StatisticNoiseSource = Callable[[HosmerLemeshowParameters, int, int], tuple[np.ndarray, np.ndarray]]
NodeNoiseSource = Callable[[TreeNoisePlan], np.ndarray]

#: failure probability of a range check is below ``2^-(bits - 1)`` per statistic (as :func:`count_slack`)
_TAIL_BITS = 41


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

    from dp.ecdf.secure_release import run_secure_ecdf
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
