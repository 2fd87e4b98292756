r"""Audit cases of the private ECDF answered by two servers from DCF keys (:mod:`dp.ecdf.fss_release`).

What
----
Each case drives the shipped FSS release in one process, on worst-case neighbouring datasets, and
returns one scalar per run for :func:`dp.audit.engine.audit`:

1. every owner's rows go to grid indices by :func:`dp.ecdf.fss_release.grid_indices` (clipping as at
   upload) and to one DCF key pair per row by :func:`secure.fss.dcf.gen` (fresh keys at every batch);
2. the calibration is rebuilt at every batch by :func:`dp.ecdf.fss_release.fss_noise_plan` (so a patched
   calibration reaches the audit), each honest owner draws its node noise with the plan's
   :meth:`dp.ecdf.tree.TreeNoisePlan.draw_party` (the auditor's generator instead of OS randomness) and
   splits it with :func:`dp.ecdf.fss_release.split_noise` (OS masks, which cancel);
3. each server's state is a :class:`dp.ecdf.fss_release.ServerState` holding its key batches (serialized
   and read back by :func:`dp.ecdf.fss_release.key_sums`, i.e. ``DcfKeys.from_bytes`` and
   ``full_domain_sum``) and the sum of its noise shares; :func:`dp.ecdf.fss_release.server_shares` gives
   its shares of every count and :func:`dp.ecdf.fss_release.decode` adds the two servers' shares mod
   ``2^64``.  Only the two servers' exchange over the network (``mpc.transfer`` in
   :func:`~dp.ecdf.fss_release.open_counts`) is left out: the reconstruction is exact arithmetic mod
   ``2^64``, the same in one process.  All runs of a batch are evaluated at once: the node shares are
   held as ``(nodes, runs)`` columns and ``server_shares`` is called with ``sums`` of shape ``(N, 1)``, so
   NumPy broadcasting evaluates the shipped expression for every run (:func:`fss_release_mirror`; a
   test holds it equal to per-run calls and to :func:`dp.ecdf.tree.noisy_counts`).

The scalar is the linear statistic ``w . c~`` of :func:`dp.audit.statistics.tree_weights`, as for the
tree release of §4.1 (:mod:`dp.audit.tree_cases`): its noise is a signed sum of whole nodes, so its exact
law is a convolution of the honest node pmf and sample sizes are planned from it.

Worst-case neighbours (derivation)
----------------------------------
Replace one row.  A row with grid index ``k = min{j : tau_j >= x}`` (after clipping to
``[tau_1, tau_N]``) adds 1 to every count ``j >= k``; replacing it by a row of index ``k'`` changes the
counts by ``+-1`` exactly on the interval ``[min(k, k'), max(k, k') - 1]`` (0-based).  A value above
``tau_N`` is clipped to ``tau_N`` and still counts at ``tau_N``, so the last count is always ``n`` and
every changed interval ``[a, b]`` (1-based) has ``b <= N - 1``.  (Moving a row from below ``tau_1`` to
above ``tau_N`` changes the counts on ``[1, N - 1]``.)  The released counts are ``c + A eta`` (eq. 2,
``A = prefix_incidence(N)``) with i.i.d. node noise of rate ``r = epsilon/(L + 1)`` against the
coalition; a pair differing by ``1_[a, b]`` has pure loss ``r`` times the least ``l1`` norm of an
integer ``zeta`` with ``A zeta = 1_[a, b]`` (shift the node noise by ``zeta``), which the LP of
:func:`~dp.audit.statistics.tree_weights` attains.  Over ``b <= N - 1`` on ``N = 8`` the largest value is
3 = L (``[1, 7]``, the row moved from below ``tau_1`` to above ``tau_N``, has value 2: root minus leaf 8);
:func:`dp.audit.neighbours.tree_neighbours` picks ``[2, 5]``, one of the intervals of value 3, which ends
below ``N`` (a test checks the maximum over every feasible interval).  So the worst pair's loss is
``L epsilon/(L + 1) = 1.5`` at ``epsilon = 2``: the release is below its claim by ``(L + 1)/L``, as the
§4.1 tree is, and the last count adds no slack of its own.

Cases: ``ecdf-fss-m3-t1`` (three owners, ``t = 1``: each owner's Polya shape ``1/2``, the adversary a
server, i.e. one owner) and ``ecdf-fss-m2-t0`` (the two-server run ``-M2`` with ``t = 0``, the
documented exception: the calibration still covers ``c = 1``, the server's own draws; the one honest
owner draws shape 1, ``DLap`` per node).  In both the adversary is a server together with ``c - 1``
other owners; it subtracts its ``c`` owners' draws (post-processing), so what is sampled is the counts
plus the ``m - c`` honest owners' node noise (the coalition's draws are zero here).

Threat model
------------
As :mod:`dp.ecdf.fss_release`: passive, non-colluding servers, each with up to ``c - 1`` other owners;
the keys and the masked noise shares reveal nothing to one server beyond the released counts (FSS),
so the audited view is the release.  The audit runs in one process; it can only prove violations,
passing is evidence, not proof.

Reference: Barczewski, Mawass & Ramon §3.1 eq. 2 and Theorem 1 (tree), §4.2 (function secret sharing);
Boyle, Gilboa & Ishai 2015 / Boyle et al. 2021 (DCF).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dp.audit.engine import AuditCase
from dp.audit.neighbours import TREE_EPSILON, TreeNeighbours, tree_neighbours
from dp.ecdf.fss_release import (FssNoisePlan, ServerState, check_bits, decode, fss_noise_plan, grid_indices,
                                 key_sums, server_shares, split_noise)
from dp.ecdf.tree import uniform_grid
from secure.fss import dcf

__all__ = ["FSS_EPSILON", "FSS_POINTS", "FSS_SETTINGS", "FSS_SAMPLES", "FssNeighbours", "fss_neighbours",
           "fss_release_mirror", "fss_case", "fss_cases", "fss_case_names", "fss_case_neighbours", "fss_counts"]

#: claimed epsilon of the whole curve (the tree cases' :data:`dp.audit.neighbours.TREE_EPSILON`)
FSS_EPSILON: float = TREE_EPSILON
#: grid points ``N = 2^L`` (``L = 3``)
FSS_POINTS: int = 8
#: ``(owners m, MPyC threshold t)`` of the cases
FSS_SETTINGS: tuple[tuple[int, int], ...] = ((3, 1), (2, 0))
#: recommended outputs per dataset (runtime only: about 1 s per 100 000 outputs per dataset; more samples
#: only tighten the measured bound)
FSS_SAMPLES: int = 200_000


@dataclass(frozen=True)
class FssNeighbours:
    """The worst-case pair of a case: the tree pair, its FSS counts, the owners and the claimed plan."""

    pair: TreeNeighbours
    owners: int
    threshold: int
    plan: FssNoisePlan
    bits: int
    first_counts: np.ndarray
    second_counts: np.ndarray

    @property
    def honest(self) -> int:
        """Owners whose draws the adversary does not know: ``m - c`` (``c`` of the claimed plan)."""
        return self.owners - self.plan.coalition

    def calibrate(self) -> FssNoisePlan:
        """The calibration the shipped code makes now (patched in mutation tests)."""
        return fss_noise_plan(epsilon=FSS_EPSILON, points=self.pair.grid.size, owners=self.owners,
                              threshold=self.threshold)


def fss_counts(values: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """The exact counts the FSS release reconstructs: ``#{k_i <= j}`` of :func:`grid_indices` (clipped)."""
    indices, _ = grid_indices(values, grid)
    return np.cumsum(np.bincount(indices, minlength=grid.size)[:grid.size]).astype(np.int64)


def fss_neighbours(owners: int, threshold: int, *, epsilon: float = FSS_EPSILON,
                   points: int = FSS_POINTS) -> FssNeighbours:
    """The pair of :func:`dp.audit.neighbours.tree_neighbours` on ``points`` grid points, checked for FSS.

    :raise ValueError: if the pair's interval reaches the last grid point (no FSS neighbour changes it).
    """
    grid = uniform_grid(1.0, float(points), 1.0)
    pair = tree_neighbours(grid)
    if pair.interval[1] >= points:
        raise ValueError(f"the worst interval {pair.interval} reaches the last count, which FSS clipping fixes at n")
    plan = fss_noise_plan(epsilon=epsilon, points=points, owners=owners, threshold=threshold)
    first, second = fss_counts(pair.first_values, grid), fss_counts(pair.second_values, grid)
    return FssNeighbours(pair, owners, threshold, plan, check_bits(points), first, second)


def fss_release_mirror(values: np.ndarray, grid: np.ndarray, owner_draws: list[np.ndarray], *, bits: int,
                       owners: int) -> np.ndarray:
    """The counts the two servers open, for ``runs`` independent node draws: shape ``(runs, N)`` int64.

    :param values: all rows (split over the ``owners`` as in order, each owner keys its own rows).
    :param owner_draws: each contributing owner's ``(runs, nodes)`` int64 node draws (an owner whose
        draws the adversary subtracts contributes nothing).
    """
    taus = np.asarray(grid, dtype=np.float64)
    points = taus.size
    runs, nodes = owner_draws[0].shape
    keys: list[list[bytes]] = [[], []]
    for rows in np.array_split(np.asarray(values, dtype=np.float64), owners):
        indices, _ = grid_indices(rows, taus)
        if indices.size:
            pair = dcf.gen(indices, bits)
            keys[0].append(pair[0].to_bytes())
            keys[1].append(pair[1].to_bytes())
    shares = [np.zeros(runs * nodes, dtype=np.uint64), np.zeros(runs * nodes, dtype=np.uint64)]
    for draws in owner_draws:
        mask, rest = split_noise(np.asarray(draws, dtype=np.int64).reshape(-1))
        shares[0] += mask
        shares[1] += rest
    public = {"points": points, "bits": bits, "n": int(np.asarray(values).size)}
    opened = []
    for server in (0, 1):
        state = ServerState(server=server, public=public, keys=keys[server],
                            node_shares=shares[server].reshape(runs, nodes).T)
        sums = key_sums(state)
        opened.append(server_shares(state, np.arange(points), sums=sums[:, None]))
    return decode(opened[0], opened[1]).T


def _name(owners: int, threshold: int) -> str:
    return f"ecdf-fss-m{owners}-t{threshold}"


def fss_case_names() -> list[str]:
    """The names of :func:`fss_cases`, in order."""
    return [_name(m, t) for m, t in FSS_SETTINGS]


def fss_case_neighbours(name: str) -> FssNeighbours:
    """The pair of case ``name``.

    :raise ValueError: on an unknown name.
    """
    for owners, threshold in FSS_SETTINGS:
        if name == _name(owners, threshold):
            return fss_neighbours(owners, threshold)
    raise ValueError(f"unknown FSS audit case {name!r}")


def _sampler(neighbours: FssNeighbours) -> Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]:
    pair = neighbours.pair
    weights = pair.weights
    honest = neighbours.honest

    def released(values: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        plan = neighbours.calibrate()
        draws = [plan.draw.draw_party(rng, runs=count) for _ in range(honest)]
        counts = fss_release_mirror(values, pair.grid, draws, bits=neighbours.bits, owners=neighbours.owners)
        return counts @ weights

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return released(pair.first_values, count, rng), released(pair.second_values, count, rng)

    return sample


def fss_case(neighbours: FssNeighbours) -> AuditCase:
    """The audit case of one setting (claim: the shipped plan's epsilon, fixed when built)."""
    pair, plan = neighbours.pair, neighbours.plan
    shift = float(pair.weights @ (neighbours.first_counts - neighbours.second_counts))
    rate = -plan.draw.log_alpha
    return AuditCase(
        name=_name(neighbours.owners, neighbours.threshold),
        mechanism=(f"private ECDF by function secret sharing, two servers (Barczewski, Mawass & Ramon §4.2 with the "
                   f"§3.1 eq. 2 tree, Theorem 1), N = {pair.grid.size} points, m = {neighbours.owners} owners, "
                   f"t = {neighbours.threshold}, coalition c = {plan.coalition} (a server's own draws included): "
                   f"DCF keys (secure.fss.dcf.gen), node noise Polya(1/{neighbours.owners - plan.coalition}) "
                   "differences per owner split by dp.ecdf.fss_release.split_noise, counts opened by server_shares "
                   "+ decode (dp.ecdf.fss_release)"),
        epsilon=plan.epsilon, delta=0.0, sample=_sampler(neighbours), samples=FSS_SAMPLES,
        statistic=(f"w . c~ over the {pair.grid.size} opened counts (the coalition's draws subtracted), "
                   f"w = {pair.weights.astype(int).tolist()} (dp.audit.statistics.tree_weights): node coefficients "
                   f"in [-1, 1], shift {shift:g}"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)} (the last "
                    f"count is n in both: clipped values count at tau_N); exact loss {shift:g} nodes x {rate:.4g} = "
                    f"{shift * rate:.4g}"))


def fss_cases() -> list[AuditCase]:
    """The FSS release's audit cases (:data:`FSS_SETTINGS`)."""
    return [fss_case(fss_neighbours(m, t)) for m, t in FSS_SETTINGS]
