"""Hierarchical histograms of one class from Hadamard reports, budget split across levels (Bell et al., App. B.2).

Threat model: local DP, one user = one score; epsilon-LDP per report (or ``(epsilon, delta)`` per user with
``split="budget"`` and ``delta > 0``, Dwork, Rothblum & Vadhan 2010).  Public: class sizes, report levels.
Splitting strategies and variances: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from dp.bell import hadamard
from dp.bell.hadamard import (MAX_LEVELS, FrequencyOracle, HadamardReports, _check_nodes, _check_true_counts, _freeze,
                              _randomize)
from dp.validation import check_choice, check_delta, check_epsilon, check_indices, check_int_range, check_positive_int
from secure.noise.party import noise_generator

__all__ = ["SPLITS", "level_epsilon", "composed_epsilon", "advanced_composition", "HierarchyReports",
           "randomize_hierarchy", "HierarchyEstimate", "HadamardHierarchy"]

Split = Literal["users", "budget"]

#: Splitting strategies: ``users`` (one level each, the full ε) and ``budget`` (every level, a share of ε).
SPLITS: Final[tuple[str, ...]] = ("users", "budget")


def _check_domain_size(domain_size: int) -> int:
    size = check_positive_int(domain_size, "domain_size")
    if size < 2 or size & (size - 1) or size > 1 << MAX_LEVELS:
        raise ValueError(f"domain_size must be a power of two between 2 and 2**{MAX_LEVELS}, got {domain_size}")
    return size


def _check_split(split: str) -> Split:
    return check_choice(split, SPLITS, "split")  # type: ignore[return-value]


def composed_epsilon(level_epsilon: float, *, levels: int, delta: float = 0.0) -> float:
    """Total privacy loss of ``levels >= 1`` reports that are each ``level_epsilon``-LDP, by advanced composition
    with ``δ`` in ``[0, 1)`` (0: basic composition).  Details: docs/ldp.md."""
    eps0 = check_epsilon(level_epsilon)
    count = check_positive_int(levels, "levels")
    dlt = check_delta(delta)
    basic = count * eps0
    return basic if dlt == 0.0 else min(basic, advanced_composition(eps0, count, dlt))


def advanced_composition(eps0: float, count: int, delta: float) -> float:
    """Advanced composition: ``count`` ``eps0``-DP mechanisms are together
    ``(sqrt(2 count ln(1/delta)) eps0 + count eps0 (e^eps0 - 1), delta)``-DP; unchecked arguments (docs/ldp.md)."""
    return math.sqrt(2.0 * count * math.log(1.0 / delta)) * eps0 + count * eps0 * math.expm1(eps0)


def level_epsilon(epsilon: float, *, levels: int, delta: float = 0.0, split: str = "users") -> float:
    """``ε_0``, the ε each report gets when a user's ``epsilon`` is split over ``α = log2 d`` levels by ``users`` or
    ``budget`` (App. B.2.2; ``δ`` in ``[0, 1)``, 0 with ``users``).  Details: docs/ldp.md."""
    eps = check_epsilon(epsilon)
    count = check_positive_int(levels, "levels")
    dlt = check_delta(delta)
    mode = _check_split(split)
    if mode == "users":
        if dlt != 0.0:
            raise ValueError(f"delta must be 0 with split='users' (each user reports once, pure epsilon-LDP), got {delta}")
        return eps
    basic = eps / count
    if dlt == 0.0:
        return basic
    low, high = 0.0, eps
    if advanced_composition(high, count, dlt) <= eps:
        return max(basic, high)
    for _ in range(200):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if advanced_composition(middle, count, dlt) <= eps:
            low = middle
        else:
            high = middle
    return max(basic, low)


@dataclass(frozen=True)
class HierarchyReports:
    """All reports of one class's users for a hierarchical histogram (user side of App. B.2): ``d = 2^levels``, the
    ``split``, the public class size ``users``, each user's ``epsilon`` and ``delta`` (0: pure LDP), ``level_epsilon``
    (``ε_0`` of each report); ``reports[l - 1]`` are the reports at level ``l`` (``bits = l``)."""

    domain_size: int
    split: str
    users: int
    epsilon: float
    delta: float
    level_epsilon: float
    reports: tuple[HadamardReports, ...]

    @property
    def levels(self) -> int:
        """``α = log2 d``."""
        return self.domain_size.bit_length() - 1


def randomize_hierarchy(values: npt.ArrayLike, *, domain_size: int, epsilon: float, delta: float = 0.0,
                        split: str = "users", rng: np.random.Generator | None = None) -> HierarchyReports:
    """Every user of one class randomizes her score for a hierarchical histogram (App. B.2.2); the parameters and
    details: docs/ldp.md."""
    size = _check_domain_size(domain_size)
    levels = size.bit_length() - 1
    mode = _check_split(split)
    eps0 = level_epsilon(epsilon, levels=levels, delta=delta, split=mode)
    threshold = hadamard._flip_threshold(eps0)
    scores = check_indices(values, size, "values")
    generator = noise_generator(rng)
    users = scores.size
    reports: list[HadamardReports] = []
    if mode == "users":
        if users < levels:
            raise ValueError(f"split='users' needs at least one user per level ({levels}), got {users} users")
        order = generator.permutation(users)
    for level in range(1, levels + 1):
        members = scores[order[level - 1::levels]] if mode == "users" else scores
        reports.append(_randomize(members >> (levels - level), level, threshold, eps0, generator))
    return HierarchyReports(domain_size=size, split=mode, users=users, epsilon=float(epsilon),
                            delta=float(delta), level_epsilon=eps0, reports=tuple(reports))


@runtime_checkable
class HierarchyEstimate(Protocol):
    """An (estimated) hierarchical histogram ``ĥ`` of one class, as the traversal queries it: ``levels`` ``α = log2 d``,
    the root count ``total`` ``h_λ = n``, ``variance_bound`` ``v`` and the float64 node estimates; docs/ldp.md."""

    @property
    def levels(self) -> int:
        ...

    @property
    def total(self) -> float:
        ...

    @property
    def variance_bound(self) -> float:
        ...

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        ...


@dataclass(frozen=True, init=False, eq=False, repr=False)
class HadamardHierarchy:
    """The server's estimate ``ĥ`` of one class's hierarchical histogram from :func:`randomize_hierarchy`'s reports.
    Attributes and details: docs/ldp.md."""

    levels: int
    domain_size: int
    total: float
    split: str
    level_epsilon: float
    variance_bound: float
    _users: int
    _oracles: tuple[FrequencyOracle, ...]
    _scales: tuple[float, ...]

    def __init__(self, reports: HierarchyReports) -> None:
        if not isinstance(reports, HierarchyReports):
            raise TypeError(f"reports must be HierarchyReports, got {type(reports).__name__}")
        users = reports.users
        oracles = tuple(FrequencyOracle(level_reports) for level_reports in reports.reports)
        scales = tuple(users / oracle.users for oracle in oracles)
        bound = max(scale ** 2 * oracle.variance_bound for scale, oracle in zip(scales, oracles))
        _freeze(self, levels=reports.levels, domain_size=reports.domain_size, total=float(users), split=reports.split,
                level_epsilon=reports.level_epsilon, variance_bound=bound, _users=users, _oracles=oracles,
                _scales=scales)

    def oracle(self, level: int) -> FrequencyOracle:
        """The frequency oracle of ``level`` (``1 <= level <= levels``)."""
        index = check_int_range(level, "level", low=0, high=self.levels)
        if index == 0:
            raise ValueError("level must be at least 1 (the root has no oracle), got 0")
        return self._oracles[index - 1]

    def estimate(self, level: int, nodes: npt.ArrayLike) -> np.ndarray:
        """Unbiased estimates of the counts of ``nodes`` (dyadic intervals in ``[0, 2^level)``) at ``level`` (0, the
        root: the class size)."""
        index = check_int_range(level, "level", low=0, high=self.levels)
        queries = _check_nodes(nodes, index)
        if index == 0:
            return np.full(queries.size, float(self._users))
        return self._scales[index - 1] * self._oracles[index - 1]._unchecked_counts(queries)

    def variance(self, level: int, true_counts: npt.ArrayLike) -> np.ndarray:
        """Exact variance of :meth:`estimate` at ``level >= 1`` for nodes of true counts ``h`` in ``[0, n]``.
        Details: docs/ldp.md."""
        oracle = self.oracle(level)
        n = float(self._users)
        share = _check_true_counts(true_counts, self._users) / n
        members = float(oracle.users)
        sampling = share * (1.0 - share) * (n - members) / (n - 1.0) if n > members else 0.0 * share
        return n * n / members * (oracle.debias_factor ** 2 - share + sampling)
