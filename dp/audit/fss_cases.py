"""Audit cases of the private ECDF answered by two servers from DCF keys (:mod:`dp.ecdf.fss_release`).

Barczewski, Mawass & Ramon §3.1 eq. 2, Theorem 1, §4.2.  Threat model as :mod:`dp.ecdf.fss_release`
(passive, non-colluding servers); the audited view is the release.  Worst-case neighbours: docs/audit.md."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dp.audit.engine import AuditCase, paired
from dp.audit.neighbours import TREE_EPSILON, TreeNeighbours, tree_neighbours
from dp.ecdf.fss_release import (FssNoisePlan, ServerState, check_bits, decode, fss_noise_plan, grid_indices,
                                 key_sums, server_shares, split_noise)
from dp.ecdf.grid import uniform_grid
from secure.fss import dcf

__all__ = ["FSS_EPSILON", "FSS_POINTS", "FSS_SETTINGS", "FSS_SAMPLES", "FssNeighbours", "fss_neighbours",
           "fss_release_mirror", "fss_case", "fss_cases", "fss_case_names", "fss_counts"]

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
    """The pair of :func:`dp.audit.neighbours.tree_neighbours` on ``points`` grid points, checked for FSS (ValueError
    if the pair's interval reaches the last grid point: no FSS neighbour changes it)."""
    grid = uniform_grid(1.0, float(points), 1.0)
    pair = tree_neighbours(grid)
    if pair.interval[1] >= points:
        raise ValueError(f"the worst interval {pair.interval} reaches the last count, which FSS clipping fixes at n")
    plan = fss_noise_plan(epsilon=epsilon, points=points, owners=owners, threshold=threshold)
    first, second = fss_counts(pair.first_values, grid), fss_counts(pair.second_values, grid)
    return FssNeighbours(pair, owners, threshold, plan, check_bits(points), first, second)


def fss_release_mirror(values: np.ndarray, grid: np.ndarray, owner_draws: list[np.ndarray], *, bits: int,
                       owners: int) -> np.ndarray:
    """The counts the two servers open, for ``runs`` independent node draws: ``(runs, N)`` int64 (the parameters:
    docs/audit.md)."""
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
        opened.append(server_shares(state, np.arange(points), sums=key_sums(state)[:, None]))
    return decode(opened[0], opened[1]).T


def _name(owners: int, threshold: int) -> str:
    return f"ecdf-fss-m{owners}-t{threshold}"


def fss_case_names() -> list[str]:
    """The names of :func:`fss_cases`, in order."""
    return [_name(m, t) for m, t in FSS_SETTINGS]


def fss_case(neighbours: FssNeighbours) -> AuditCase:
    """The audit case of one setting (claim: the shipped plan's epsilon, fixed when built): ``w . c~`` of the counts
    opened with the honest owners' draws of the plan calibrated now."""
    pair, plan = neighbours.pair, neighbours.plan

    def released(values: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        current = neighbours.calibrate()
        draws = [current.draw.draw_party(rng, runs=count) for _ in range(neighbours.honest)]
        counts = fss_release_mirror(values, pair.grid, draws, bits=neighbours.bits, owners=neighbours.owners)
        return counts @ pair.weights

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
        epsilon=plan.draw.epsilon, delta=0.0, sample=paired(released, pair.first_values, pair.second_values),
        samples=FSS_SAMPLES,
        statistic=(f"w . c~ over the {pair.grid.size} opened counts (the coalition's draws subtracted), "
                   f"w = {pair.weights.astype(int).tolist()} (dp.audit.statistics.tree_weights): node coefficients "
                   f"in [-1, 1], shift {shift:g}"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)} (the last "
                    f"count is n in both: clipped values count at tau_N); exact loss {shift:g} nodes x {rate:.4g} = "
                    f"{shift * rate:.4g}"))


def fss_cases() -> list[AuditCase]:
    """The FSS release's audit cases (:data:`FSS_SETTINGS`)."""
    return [fss_case(fss_neighbours(m, t)) for m, t in FSS_SETTINGS]
