"""Worst-case neighbouring datasets of every audited central / distributed mechanism, and the cases' parameters.

Threat model: passive, static coalition of ``t < m/2`` parties; the datasets are synthetic and public.
Details: docs/audit.md."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from dp.audit.statistics import tree_weights
from dp.bell.subsampled_pairs import SubsampledPairsQuery, pairs_for
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, group_statistics
from dp.ecdf.hosmer_lemeshow_release import Accounting
from dp.ecdf.grid import prefix_incidence, true_counts
from dp.fedauc.ranks import average_ranks, client_layout
from dp.rank_auc import Query as RankAucQuery, exact_sums
from dp.sampling import vertex_degrees
from dp.noise_plans import NoisePlan
from dp.umpc.protocol import Simulation, UStatQuery, plans_for, sample_for, simulate
from dp.validation import check_parties, check_positive_int
from secure.intake import ColumnSpec
from secure.kernels import get_kernel
from secure.public_randomness import public_generator

__all__ = ["PUBLIC_SEED", "CASE_EPSILON", "CASE_DELTA", "BINOMIAL_SPLIT_DELTA", "GAUSSIAN_EPSILON", "GAUSSIAN_DELTA",
           "TREE_EPSILON", "TREE_VECTOR_EPSILON", "HL_EPSILONS", "SimulatedNeighbours", "UStatNeighbours",
           "ustat_neighbours", "TreeNeighbours", "tree_neighbours", "HosmerLemeshowNeighbours",
           "hosmer_lemeshow_neighbours", "FedAucNeighbours", "fedauc_neighbours", "RankAucNeighbours",
           "rank_auc_neighbours", "PairNeighbours", "pair_neighbours", "KENDALL_SPECS"]

#: The columns of the Kendall cases (Pi_U-MPC, complete, subsampled pairs).
KENDALL_SPECS: tuple[ColumnSpec, ...] = (ColumnSpec("x", 0, 15, 0), ColumnSpec("y", 0, 15, 0))
#: Public seed of every case (tuples, permutations, layouts, synthetic rows); noise never uses it.
PUBLIC_SEED: int = 20240611
#: The claimed epsilon of the pure-DP cases: large enough that the loss is resolvable.
CASE_EPSILON: float = 1.0
#: delta of the binomial (epsilon, delta) cases.
CASE_DELTA: float = 1e-5
#: delta of ``umpc-kendall-binomial-m5-t2``, on which a split of the binomial trials over ``m`` instead of
#: ``m - t`` parties is resolvable (docs/audit.md).
BINOMIAL_SPLIT_DELTA: float = 1e-2
#: (epsilon, delta) claimed by the Gaussian (zCDP) cases: rho = zcdp_budget(3, 1e-3) ~ 0.20 keeps
#: the noise small enough that the loss is visible at audit-resolvable event probabilities.
GAUSSIAN_EPSILON: float = 3.0
GAUSSIAN_DELTA: float = 1e-3
#: Hosmer-Lemeshow budgets per accounting: eps' = epsilon/(L + 9) = epsilon/12 on 8 grid points, so
#: the audited loss of the statistics (4 eps' for ``paper``, 8 eps' for ``joint``) is 1.
HL_EPSILONS: dict[Accounting, float] = {"paper": 3.0, "joint": 1.5}
#: epsilon of the tree cases: a node's loss is epsilon/(L + 1), so a larger budget keeps the
#: audited loss (exactly L epsilon/(L + 1) on N = 2^L points) resolvable.
TREE_EPSILON: float = 2.0
#: epsilon of the whole-vector tree case (``tree_vector_case``, N = 8): node rate 1.5, exact loss 4.5 (docs/audit.md).
TREE_VECTOR_EPSILON: float = 6.0


_Pair = TypeVar("_Pair", bound="SimulatedNeighbours")


@dataclass(frozen=True)
class SimulatedNeighbours:
    """Two neighbouring tables (each party's rows of ``D`` and ``D'``) and their noiseless simulated releases
    (integer sums, tuples, plans) under the agreed ``query``, threshold ``t``."""

    query: UStatQuery
    first_rows: tuple[np.ndarray, ...]
    second_rows: tuple[np.ndarray, ...]
    first: Simulation
    second: Simulation
    threshold: int

    @property
    def parties(self) -> int:  # m
        return len(self.first_rows)

    @property
    def rows(self) -> int:  # n
        return sum(len(part) for part in self.first_rows)

    @property
    def plans(self) -> list[NoisePlan]:  # public: they depend on the tuples, n, m, t only
        return self.first.plans

    @property
    def change(self) -> list[int]:  # of each released integer sum from D to D'
        return [int(b) - int(a) for a, b in zip(self.first.sums, self.second.sums)]

    @classmethod
    def of(cls: type[_Pair], run: Callable[..., Simulation], query: UStatQuery, tables: tuple[np.ndarray, np.ndarray],
           parties: int, threshold: int, options: dict[str, Any] | None = None, **fields: Any) -> _Pair:
        """``D`` and ``D'`` (``tables``, stacked rows) split over ``parties`` in order, each with the shipped
        simulation ``run`` (``options``: its further keywords) at zero noise."""
        split = [tuple(np.array(part) for part in np.array_split(table, parties)) for table in tables]
        draws = 1 if query.noise == "mpc" else parties  # noise sampled in MPC: one joint value
        zeros = np.zeros((1, len(query.outputs), draws), dtype=np.int64)
        simulations = [run(query, rows, threshold=threshold, runs=1, noise=zeros, **(options or {})) for rows in split]
        return cls(query, split[0], split[1], simulations[0], simulations[1], threshold, **fields)


@dataclass(frozen=True)
class UStatNeighbours(SimulatedNeighbours):
    """Neighbours for Pi_U-MPC (``first``: :func:`dp.umpc.protocol.simulate`); ``changed_row``: index (over
    all parties, stacked) of the row that differs."""

    changed_row: int = 0

    def calibrate(self) -> list[NoisePlan]:
        """The plans, recomputed now by the shipped calibration (:func:`dp.umpc.protocol.plans_for`) (docs/audit.md)."""
        return plans_for(self.query, self.first.tuples, self.rows, self.parties, self.threshold)


@lru_cache(maxsize=None)
def ustat_neighbours(kernel: str, *, epsilon: float = CASE_EPSILON, delta: float = 0.0, parties: int = 3,
                     threshold: int = 1, rows: int = 24, tuples: int = 48,
                     seed: int = PUBLIC_SEED, noise: str = "parties") -> UStatNeighbours:
    """Neighbouring tables on which the Pi_U-MPC sum moves by exactly its sensitivity (the parameters:
    docs/audit.md).  :raise ValueError: on an unknown kernel or invalid parameters."""
    check_parties(parties, threshold)
    n = check_positive_int(rows, "rows")
    generator = public_generator(seed + 1)
    if kernel == "kendall":
        query = UStatQuery(kernel=get_kernel("kendall"), specs=KENDALL_SPECS,
                           epsilon=epsilon, delta=delta, tuples=tuples, noise=noise)
        table = generator.integers(1, 15, size=(n, 2)).astype(np.float64)
    elif kernel == "gini":
        query = UStatQuery(kernel=get_kernel("gini", precision=1), specs=(ColumnSpec("x", 0, 2, 1),),
                           epsilon=epsilon, delta=delta, tuples=tuples, noise=noise)
        table = generator.integers(1, 5, size=(n, 1)) / 2.0
    else:
        raise ValueError(f"kernel must be 'kendall' or 'gini', got {kernel!r}")
    edges = sample_for(query, n, seed)
    changed = int(np.argmax(vertex_degrees(edges, n)))
    first, second = table.copy(), table.copy()
    if kernel == "kendall":
        first[changed], second[changed] = (15.0, 15.0), (15.0, 0.0)
    else:
        partners = np.unique(edges[np.any(edges == changed, axis=1)])
        first[partners], second[partners] = 0.0, 0.0
        first[changed], second[changed] = 0.0, 2.0
    return UStatNeighbours.of(simulate, query, (first, second), parties, threshold, {"seed": seed},
                              changed_row=changed)


@dataclass(frozen=True)
class TreeNeighbours:
    """Neighbouring datasets for the ECDF tree and the audited linear statistic ``w . c~``: the counts differ by
    exactly 1 on the 1-based ``interval``; ``shift`` is ``w . (c(D) - c(D'))`` (the fields: docs/audit.md)."""

    grid: np.ndarray
    first_values: np.ndarray
    second_values: np.ndarray
    interval: tuple[int, int]
    weights: np.ndarray
    shift: float

    @property
    def first_counts(self) -> np.ndarray:  # #{x <= tau_i} on D (dp.ecdf.grid.true_counts)
        return true_counts(self.first_values, self.grid)

    @property
    def second_counts(self) -> np.ndarray:  # on D'
        return true_counts(self.second_values, self.grid)


def _indicator(points: int, interval: tuple[int, int]) -> np.ndarray:
    indicator = np.zeros(points)
    indicator[interval[0] - 1:interval[1]] = 1.0
    return indicator


def _best_interval(points: int, value: Callable[[tuple[int, int]], float]) -> tuple[int, int]:
    """The 1-based interval ``(a, b)`` of largest ``value`` (the first in ``(a, b)`` order on ties)."""
    best, chosen = -1.0, (1, 1)
    for interval in ((first, last) for first in range(1, points + 1) for last in range(first, points + 1)):
        score = value(interval)
        if score > best + 1e-9:
            best, chosen = score, interval
    return chosen


@lru_cache(maxsize=None)
def _worst_interval(points: int) -> tuple[int, int]:
    """The interval of largest LP value."""
    return _best_interval(points, lambda interval: tree_weights(points, *interval)[1])


def _gaussian_interval(points: int) -> tuple[np.ndarray, tuple[int, int]]:
    """For Gaussian node noise: the interval of largest Mahalanobis norm and its LDA weights."""
    incidence = prefix_incidence(points).toarray().astype(np.float64)
    gram_inverse = np.linalg.inv(incidence @ incidence.T)
    chosen = _best_interval(points, lambda interval: float(_indicator(points, interval) @ gram_inverse
                                                            @ _indicator(points, interval)))
    return gram_inverse @ _indicator(points, chosen), chosen


def tree_neighbours(grid: npt.ArrayLike, *, rows: int = 20, gaussian: bool = False,
                    seed: int = PUBLIC_SEED) -> TreeNeighbours:
    """Two datasets of ``rows`` rows whose ECDF counts differ by 1 on the worst interval ``[a, b]`` of the strictly
    increasing ``grid`` (``N >= 1``); ``gaussian``: interval and weights for Gaussian node noise; ``seed`` public
    (docs/audit.md)."""
    taus = np.asarray(grid, dtype=np.float64)
    points = int(taus.size)
    n = check_positive_int(rows, "rows")
    if gaussian:
        weights, interval = _gaussian_interval(points)
    else:
        interval = _worst_interval(points)
        weights, _ = tree_weights(points, *interval)
    generator = public_generator(seed + 2)
    values = generator.uniform(taus[0] - 1.0, taus[-1] + 1.0, size=n)
    first, second = values.copy(), values.copy()
    a, b = interval
    below = taus[a - 2] if a >= 2 else taus[0] - 1.0
    above = taus[b] if b < points else taus[-1] + 1.0
    first[0] = (below + taus[a - 1]) / 2.0
    second[0] = (taus[b - 1] + above) / 2.0
    difference = true_counts(first, taus) - true_counts(second, taus)
    return TreeNeighbours(taus, first, second, interval, weights, float(weights @ difference))


@dataclass(frozen=True)
class HosmerLemeshowNeighbours:
    """Neighbouring datasets for the Hosmer-Lemeshow group statistics, with fixed group boundaries (the fields:
    docs/audit.md)."""

    query: HosmerLemeshowQuery
    bounds: np.ndarray
    first_fixed: np.ndarray
    first_labels: np.ndarray
    second_fixed: np.ndarray
    second_labels: np.ndarray
    parties: int
    threshold: int

    def statistics(self, second: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(E, O)`` of lines 8-9 (:func:`dp.ecdf.hosmer_lemeshow.group_statistics`) on ``D`` or ``D'``."""
        fixed, labels = (self.second_fixed, self.second_labels) if second else (self.first_fixed, self.first_labels)
        return group_statistics(fixed, labels, self.bounds, scale=self.query.scale)

    @property
    def log_alpha(self) -> np.ndarray:
        """``log alpha`` of every cell, shape ``(2, 2, Q)``: ``[0]`` the E cells, ``[1]`` the O cells."""
        q = self.query
        return np.stack([np.full((2, q.groups), q.expected_log_alpha), np.full((2, q.groups), q.observed_log_alpha)])

    @property
    def change(self) -> np.ndarray:
        """Change of every cell from ``D`` to ``D'``, shape ``(2, 2, Q)`` as :attr:`log_alpha`."""
        return np.stack(self.statistics(True)) - np.stack(self.statistics(False))


def hosmer_lemeshow_neighbours(*, accounting: Accounting, epsilon: float, parties: int = 3, threshold: int = 1,
                               rows: int = 30, seed: int = PUBLIC_SEED) -> HosmerLemeshowNeighbours:
    """Neighbours whose ``4 Q`` statistics move by the joint sensitivity 4 (Barczewski et al., App. A.2; the
    parameters: docs/audit.md).  :raise ValueError: on invalid parameters."""
    check_parties(parties, threshold)
    query = HosmerLemeshowQuery(epsilon=epsilon, groups=3, grid_points=8, precision=3, accounting=accounting)
    generator = public_generator(seed + 3)
    n = check_positive_int(rows, "rows")
    probabilities = generator.integers(0, query.scale + 1, size=n) / query.scale
    labels = (generator.random(n) < probabilities).astype(np.int64)
    first_p, second_p = probabilities.copy(), probabilities.copy()
    first_y, second_y = labels.copy(), labels.copy()
    first_p[0], first_y[0], second_p[0], second_y[0] = 0.0, 0, 1.0, 1
    spec = query.spec
    bounds = np.array([3, 5], dtype=np.int64)
    return HosmerLemeshowNeighbours(query, bounds, spec.encode(first_p), first_y, spec.encode(second_p), second_y,
                                    parties, threshold)


@dataclass(frozen=True)
class FedAucNeighbours:
    """Two labelings differing in one label (label DP), on ``M`` distinct public ``scores`` and a public client
    layout ``client_of``: ``first_labels`` of ``D``, ``second_labels`` of ``D'`` (sample ``flipped``, of ``client``)."""

    scores: np.ndarray
    client_of: np.ndarray
    first_labels: np.ndarray
    second_labels: np.ndarray
    flipped: int
    client: int


def fedauc_neighbours(method: str, *, samples: int = 12, clients: int = 2, seed: int = PUBLIC_SEED) -> FedAucNeighbours:
    """Labelings differing in the label whose flip moves its client's reports by their sensitivity (the parameters:
    docs/audit.md).  :raise ValueError: on an unknown method."""
    m = check_positive_int(samples, "samples")
    generator = public_generator(seed + 4)
    scores = generator.permutation(m).astype(np.float64) / m
    client_of = client_layout(scores, clients=clients, layout="non_iid", rng=generator)
    twice = np.rint(2.0 * average_ranks(scores)).astype(np.int64)
    family = method.split("_")[0]
    if family not in ("global", "rr", "local", "adaptive"):
        raise ValueError(f"unknown FedAUC method {method!r}")
    # global and rr: the top-ranked sample; local and adaptive: a sample of client 0
    members = np.arange(m) if family in ("global", "rr") else np.flatnonzero(client_of == 0)
    ranks = twice[members]
    largest = np.abs(members.size * ranks - int(ranks.sum())) if family == "adaptive" else ranks
    flipped = int(members[np.argmax(largest)])
    labels = (np.arange(m) + int(generator.integers(0, 2))) % 2
    first, second = labels.copy(), labels.copy()
    first[flipped], second[flipped] = 0, 1
    return FedAucNeighbours(scores, client_of, first, second, flipped, int(client_of[flipped]))


@dataclass(frozen=True)
class RankAucNeighbours:
    """Neighbouring ``(score, label)`` tables for the secure rank AUC (``query``: score domain, budget) and their
    exact ``(2U, P)`` (:func:`dp.rank_auc.exact_sums`): ``first_*`` on ``D``, ``second_*`` on ``D'``."""

    query: RankAucQuery
    first_rows: np.ndarray
    second_rows: np.ndarray
    first_sums: tuple[int, int]
    second_sums: tuple[int, int]


def rank_auc_neighbours(*, epsilon: float = CASE_EPSILON, rows: int = 10, seed: int = PUBLIC_SEED) -> RankAucNeighbours:
    """Tables on which ``2U`` moves by ``2 (n - 1)`` and ``P`` by 1, both sensitivities at once (docs/audit.md);
    ``epsilon``: half on each sum; ``rows``: ``n``; ``seed`` public."""
    query = RankAucQuery(score=ColumnSpec("score", 0.0, 1.0, 3), epsilon=epsilon)
    generator = public_generator(seed + 5)
    n = check_positive_int(rows, "rows")
    table = np.column_stack([generator.integers(0, 8, size=n) / 8.0, np.zeros(n)])
    first, second = table.copy(), table.copy()
    first[0], second[0] = (1.0, 0.0), (1.0, 1.0)
    return RankAucNeighbours(query, first, second, exact_sums(query.encode(first)), exact_sums(query.encode(second)))


@dataclass(frozen=True)
class PairNeighbours:
    """Neighbouring tables for per-pair releases of the subsampled-pairs ``query`` (Kendall), the public ``pairs`` and
    the kernel value of every pair on ``D`` and ``D'`` (the fields: docs/audit.md)."""

    query: SubsampledPairsQuery
    first_rows: np.ndarray
    second_rows: np.ndarray
    changed_row: int
    pairs: np.ndarray
    first_values: np.ndarray
    second_values: np.ndarray

    @property
    def touched(self) -> np.ndarray:  # positions of the pairs that contain the changed row
        return np.flatnonzero(np.any(self.pairs == self.changed_row, axis=1))


def pair_neighbours(*, permutations: int = 3, rows: int = 12, all_pairs: bool = False, epsilon: float = CASE_EPSILON,
                    seed: int = PUBLIC_SEED) -> PairNeighbours:
    """Kendall tables on which every pair containing the changed row moves by ``Delta_f = 2`` (the parameters:
    docs/audit.md)."""
    query = SubsampledPairsQuery(kernel=get_kernel("kendall"),
                                 specs=KENDALL_SPECS, epsilon=epsilon, permutations=permutations)
    n = check_positive_int(rows, "rows")
    generator = public_generator(seed + 6)
    table = generator.integers(1, 15, size=(n, 2)).astype(np.float64)
    first, second = table.copy(), table.copy()
    first[0], second[0] = (15.0, 15.0), (15.0, 0.0)
    if all_pairs:
        left, right = np.triu_indices(n, 1)
        pairs = np.stack([left, right], axis=1).astype(np.int64)
    else:
        pairs = pairs_for(query, n, seed)

    def values(rows_: np.ndarray) -> np.ndarray:
        fixed = query.prepare(rows_).integers
        return np.asarray(query.kernel.plaintext([fixed[pairs[:, 0]], fixed[pairs[:, 1]]])[0], dtype=np.int64)

    return PairNeighbours(query, first, second, 0, pairs, values(first), values(second))
