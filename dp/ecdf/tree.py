"""The tree mechanism for a differentially private ECDF across parties (Barczewski, Mawass & Ramon, §3.1 eq. 2,
Theorems 1 and 3).  Threat model: passive, static coalition of at most ``t < m/2`` of ``m`` parties, each
party adding Pólya node draws of shape ``1/(m-t)``.  Proof, error and cost: docs/ecdf.md."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from dp.calibration import (discrete_laplace_alpha, discrete_laplace_log_alpha, distributed_laplace_variance,
                            party_noise_shape)
from dp.ecdf.grid import check_points, node_count, prefix_positions, tree_depth, true_counts
from dp.validation import (check_bool, check_epsilon, check_integer_vector, check_noise_scale, check_parties, check_positive,
                           check_positive_int)
from secure.noise.party import polya_difference

__all__ = ["TreeNoisePlan", "plan_tree_noise", "noisy_counts", "private_ecdf", "continual_gaussian_sigma",
           "draw_gaussian_tree_noise"]


@dataclass(frozen=True)
class TreeNoisePlan:
    """Calibration of the integer node noise of the ECDF tree for ``m`` parties, threshold ``t`` (Theorem 1, or
    Theorem 3's scale with ``continual``; ``unit_rows``: an owner's rows, a factor of the nodes a change shifts)."""

    epsilon: float
    points: int
    parties: int = 1
    threshold: int = 0
    continual: bool = False
    unit_rows: int = 1

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "points", check_points(self.points))
        m, t = check_parties(self.parties, self.threshold)
        object.__setattr__(self, "parties", m)
        object.__setattr__(self, "threshold", t)
        check_bool(self.continual, "continual")
        # each node's DLap has scale nodes_per_change / epsilon: its party draws must be representable
        check_noise_scale(self.epsilon, self.nodes_per_change)

    @property
    def depth(self) -> int:
        """Tree depth ``L = ceil(log2 N)``."""
        return tree_depth(self.points)

    @property
    def levels(self) -> int:
        """Number of levels ``L + 1``: the number of nodes summed into each count."""
        return self.depth + 1

    @property
    def node_count(self) -> int:
        """Number of nodes ``|I[L]|`` (length of a party's draw)."""
        return node_count(self.points)

    @property
    def nodes_per_change(self) -> int:
        """Nodes a neighbouring input may shift: ``L + 1``, or ``ceil((L + 1)/2)`` if continual, times ``unit_rows``."""
        return self.unit_rows * ((self.levels + 1) // 2 if self.continual else self.levels)

    @property
    def node_scale(self) -> float:
        """Laplace scale of one node: ``(L + 1)/epsilon``, or ``ceil((L + 1)/2)/epsilon``."""
        return self.nodes_per_change / self.epsilon

    @property
    def alpha(self) -> float:
        """``alpha = exp(-1/node_scale)`` of the per-node ``DLap(alpha)`` (node sensitivity 1)."""
        return discrete_laplace_alpha(self.epsilon, self.nodes_per_change)

    @property
    def log_alpha(self) -> float:
        """``log(alpha) = -epsilon / nodes_per_change`` exactly (used for sampling)."""
        return discrete_laplace_log_alpha(self.epsilon, self.nodes_per_change)

    @property
    def shape(self) -> float:
        """Pólya shape ``1/(m - t)`` of each party's draws."""
        return party_noise_shape(self.parties, self.threshold)

    @property
    def variance_factor(self) -> float:
        """``m/(m - t)``: total node variance over that of a single ``DLap(alpha)``."""
        return self.parties / (self.parties - self.threshold)

    @property
    def node_variance(self) -> float:
        """Variance of the total noise of one node, summed over all parties:
        ``m/(m - t) * 2 alpha/(1 - alpha)^2``."""
        return distributed_laplace_variance(self.alpha, self.parties, self.threshold)

    @property
    def point_variance(self) -> float:
        """Variance of the noise added to one released count: ``(L + 1) * node_variance`` (Theorem 1; docs/ecdf.md)."""
        return self.levels * self.node_variance

    def draw_party(self, rng: np.random.Generator | None = None, runs: int | None = None) -> np.ndarray:
        """One party's noise for every node, ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``, or ``runs`` independent
        draws of it (``rng`` for tests, ``None``: OS randomness; docs/ecdf.md)."""
        count = self.node_count if runs is None else check_positive_int(runs, "runs") * self.node_count
        draws = np.asarray(polya_difference(self.shape, size=count, rng=rng, log_alpha=self.log_alpha), dtype=np.int64)
        return draws if runs is None else draws.reshape(runs, self.node_count)

    def draw_total(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """The total node noise of the simulated path, int64 of length :attr:`node_count`: the sum of ``m`` party draws
        (``rng`` for tests; ``None``: fresh OS randomness for every party draw)."""
        return np.stack([self.draw_party(rng) for _ in range(self.parties)]).sum(axis=0, dtype=np.int64)


def plan_tree_noise(*, epsilon: float, points: int, parties: int = 1, threshold: int = 0,
                    continual: bool = False, unit_rows: int = 1) -> TreeNoisePlan:
    """The validated :class:`TreeNoisePlan` for an ECDF on ``points`` grid points (its parameters and errors)."""
    return TreeNoisePlan(epsilon=epsilon, points=points, parties=parties, threshold=threshold,
                         continual=continual, unit_rows=check_positive_int(unit_rows, "unit_rows"))


def noisy_counts(counts: npt.ArrayLike, node_noise: npt.ArrayLike) -> np.ndarray:
    """The released counts ``counts + prefix_incidence(N) @ node_noise`` (eq. 2 times n), int64 of length ``N``, or
    ``(runs, N)`` for node noise of shape ``(runs, |I[L]|)``; ValueError, TypeError on bad arrays (docs/ecdf.md)."""
    count_vec = check_integer_vector(counts, "counts")
    if count_vec.shape[0] == 0:
        raise ValueError("counts must not be empty")
    points = check_points(count_vec.shape[0])
    raw = np.asarray(node_noise)
    if raw.ndim == 2 and raw.shape[0] == 0:
        raise ValueError("node_noise must hold at least one run")
    check_integer_vector(raw[0] if raw.ndim == 2 else raw, "node_noise", node_count(points))  # dtype, every length
    return count_vec + raw.astype(np.int64, copy=False)[..., prefix_positions(points)].sum(axis=-1)


def private_ecdf(values: npt.ArrayLike, grid: npt.ArrayLike, plan: TreeNoisePlan, *,
                 node_noise: npt.ArrayLike | None = None,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """The simulated path of eq. (2): ``F^(tau_i)``, float64 of length ``N``; with ``node_noise`` the secure path's
    for the same draws, else party draws from ``rng`` (ValueError, TypeError: docs/ecdf.md)."""
    counts = true_counts(values, grid)
    rows = int(np.asarray(values).shape[0])
    if rows == 0:
        raise ValueError("values must contain at least one row, got 0")
    if counts.shape[0] != plan.points:
        raise ValueError(f"grid must have plan.points = {plan.points} points, got {counts.shape[0]}")
    noise = plan.draw_total(rng) if node_noise is None else check_integer_vector(node_noise, "node_noise",
                                                                            plan.node_count)
    return noisy_counts(counts, noise) / rows


def continual_gaussian_sigma(rho: float, points: int, *, replace_one: bool = False) -> float:
    """The node standard deviation of Theorem 3's Gaussian tree for ``rho``-zCDP: ``sqrt(k / (2 rho))`` with
    ``k = ceil((L+1)/2)``, or ``L + 1`` with ``replace_one``; ValueError out of range (docs/ecdf.md)."""
    r = check_positive(rho, "rho")
    levels = tree_depth(points) + 1
    shifted = levels if replace_one else (levels + 1) // 2
    return math.sqrt(shifted / (2.0 * r))


def draw_gaussian_tree_noise(*, rho: float, points: int, replace_one: bool = True,
                             rng: np.random.Generator | None = None) -> np.ndarray:
    """Integer node noise of Theorem 3's Gaussian form, every node ``N_Z(0, sigma^2)`` (:func:`continual_gaussian_sigma`),
    rho-zCDP; one curator only, OS randomness unless a test passes ``rng``; add it with :func:`noisy_counts`
    (docs/ecdf.md): an int64 array with one draw per tree node."""
    from secure.noise.party import sample_discrete_gaussian

    sigma = continual_gaussian_sigma(rho, points, replace_one=replace_one)
    return sample_discrete_gaussian(sigma * sigma, node_count(points), rng)
