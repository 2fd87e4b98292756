"""Audit cases of the ECDF tree and of Hosmer-Lemeshow (Barczewski, Mawass & Ramon, §3.1 eq. 2, Theorems 1-3).

Threat model: passive, static coalition of ``t < m/2`` parties, which subtracts its own node draws.
Details: docs/audit.md."""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from dp.audit.engine import AuditCase, Sampler, honest_sum, paired
from dp.audit.neighbours import (CASE_EPSILON, GAUSSIAN_DELTA, GAUSSIAN_EPSILON, HL_EPSILONS, TREE_EPSILON,
                                 TREE_VECTOR_EPSILON, HosmerLemeshowNeighbours, TreeNeighbours,
                                 hosmer_lemeshow_neighbours, tree_neighbours)
from dp.audit.statistics import privacy_loss_statistic, tree_privacy_loss_statistic
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, party_statistic_draws
from dp.ecdf.grid import uniform_grid
from dp.ecdf.tree import TreeNoisePlan, draw_gaussian_tree_noise, noisy_counts, plan_tree_noise
from dp.fedauc.mechanisms import zcdp_budget

__all__ = ["tree_vector_case", "tree_case", "ecdf_cases", "hl_cases"]


def _tree_sampler(pair: TreeNeighbours, node_noise: Callable[[int, np.random.Generator], np.ndarray]) -> Sampler:
    """``w . c~`` on both datasets, ``c~ = noisy_counts(c, eta)`` the shipped release (eq. 2) (docs/audit.md)."""
    return paired(lambda counts, count, rng: noisy_counts(counts, node_noise(count, rng)) @ pair.weights,
                  pair.first_counts, pair.second_counts)


def _tree_party_noise(make_plan: Callable[[], TreeNoisePlan]) -> Callable[[int, np.random.Generator], np.ndarray]:
    """The honest parties' node draws: ``m - t`` calls of the shipped :meth:`TreeNoisePlan.draw_party`.
    Details: docs/audit.md."""

    def noise(count: int, rng: np.random.Generator) -> np.ndarray:
        plan = make_plan()
        return honest_sum(lambda: plan.draw_party(rng, runs=count), plan.parties - plan.threshold)

    return noise


def tree_case(name: str, make_plan: Callable[[], TreeNoisePlan], pair: TreeNeighbours, *, claimed: float,
               mechanism: str, control: bool = False) -> AuditCase:
    plan = make_plan()
    exact = pair.shift * -plan.log_alpha
    return AuditCase(
        name=name, mechanism=mechanism, epsilon=claimed, delta=0.0,
        sample=_tree_sampler(pair, _tree_party_noise(make_plan)),
        statistic=(f"w . c~ over the {plan.points} released counts (the coalition's own node draws subtracted), "
                   f"w = {pair.weights.astype(int).tolist()} from the LP of dp.audit.statistics.tree_weights: node "
                   f"coefficients in [-1, 1], shift {pair.shift:g}"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)}; exact loss "
                    f"{pair.shift:g} nodes x {-plan.log_alpha:.4g} = {exact:.4g}"),
        control=control)


def tree_vector_case(*, epsilon: float = TREE_VECTOR_EPSILON, points: int = 8, parties: int = 3,
                     threshold: int = 1) -> AuditCase:
    """The ECDF tree audited on its whole released vector through the claimed privacy-loss statistic (docs/audit.md)."""
    grid = uniform_grid(1.0, float(points), 1.0)
    pair = tree_neighbours(grid)
    claimed = plan_tree_noise(epsilon=epsilon, points=points, parties=parties, threshold=threshold)
    log_alpha = float(claimed.log_alpha)
    window = int(math.ceil(12.0 / -log_alpha))
    noise = _tree_party_noise(lambda: plan_tree_noise(epsilon=epsilon, points=points, parties=parties,
                                                      threshold=threshold))
    first_counts, second_counts = pair.first_counts, pair.second_counts

    def released(counts: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        return tree_privacy_loss_statistic(noisy_counts(counts, noise(count, rng)), first_counts, second_counts,
                                           log_alpha, window=window)

    return AuditCase(
        name=f"ecdf-tree-vector-m{parties}-t{threshold}", epsilon=claimed.epsilon, delta=0.0,
        sample=paired(released, first_counts, second_counts),
        mechanism=(f"ECDF tree on N = {points} points (L = {claimed.depth}), m = {parties}, t = {threshold}, the whole "
                   "released count vector (Barczewski, Mawass & Ramon §3.1 eq. 2, Theorem 1, §4.1): node noise the "
                   "sum of the honest parties' Polya(1/(m-t)) differences (dp.ecdf.tree.TreeNoisePlan)"),
        statistic=(f"the claimed log-likelihood ratio of all {points} released counts (node DLap with log alpha = "
                   f"{log_alpha:.4g}, tree message passing, window {window})"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)}; exact loss "
                    f"{pair.shift:g} nodes x {-log_alpha:.4g} = {pair.shift * -log_alpha:.4g}"))


def ecdf_cases() -> list[AuditCase]:
    grid = uniform_grid(1.0, 8.0, 1.0)
    pair = tree_neighbours(grid)
    one_point = tree_neighbours(uniform_grid(1.0, 1.0, 1.0))
    gaussian_grid = uniform_grid(1.0, 4.0, 1.0)
    gaussian_pair = tree_neighbours(gaussian_grid, gaussian=True)
    rho = zcdp_budget(GAUSSIAN_EPSILON, GAUSSIAN_DELTA)

    def gaussian_noise(count: int, rng: np.random.Generator) -> np.ndarray:
        # the shipped draw, one release at a time (its exact sampler is a Python loop per node anyway)
        return np.stack([draw_gaussian_tree_noise(rho=rho, points=gaussian_grid.size, replace_one=True, rng=rng)
                         for _ in range(count)]).astype(np.int64)

    return [
        tree_case("ecdf-tree-dlap-m3-t1",
                   lambda: plan_tree_noise(epsilon=TREE_EPSILON, points=grid.size, parties=3, threshold=1), pair,
                   claimed=TREE_EPSILON,
                   mechanism=("ECDF tree mechanism across m = 3 parties, t = 1 (Barczewski, Mawass & Ramon §3.1 "
                              "eq. 2, Theorem 1, §4.1 distributed release): node noise DLap(exp(-epsilon/(L+1))) as "
                              "the sum of Polya(1/(m-t)) differences per party (dp.ecdf.tree.TreeNoisePlan)")),
        tree_vector_case(),
        tree_case("ecdf-tree-one-point-m3-t1",
                   lambda: plan_tree_noise(epsilon=CASE_EPSILON, points=1, parties=3, threshold=1), one_point,
                   claimed=CASE_EPSILON,
                   mechanism=("ECDF tree (Barczewski, Mawass & Ramon §3.1 eq. 2, Theorem 1) on a one-point grid "
                              "(L = 0: the released count is count + one node), "
                              "m = 3, t = 1: the tree calibration where its claim is tight, so the coalition shape "
                              "1/(m-t) of TreeNoisePlan is audited exactly (on N >= 2 points the claim exceeds the "
                              "loss by (L+1)/L and a shape of 1/m stays below it)")),
        AuditCase(
            name="ecdf-tree-gaussian",
            mechanism=("ECDF tree with discrete Gaussian nodes N_Z(0, (L+1)/(2 rho)) (Barczewski et al. Theorem 3, "
                       "replace-one form, dp.ecdf.tree.draw_gaussian_tree_noise), rho-zCDP audited at "
                       "epsilon = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016, Prop. 1.3)"),
            epsilon=GAUSSIAN_EPSILON, delta=GAUSSIAN_DELTA,
            sample=_tree_sampler(gaussian_pair, gaussian_noise),
            statistic="w . c~ with the likelihood-ratio direction w = (A A^T)^{-1} 1_[a,b] (a sufficient statistic)",
            neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(gaussian_pair.interval)} "
                        f"of {gaussian_grid.size} (largest Mahalanobis norm)")),
    ]


def _hl_sampler(pair: HosmerLemeshowNeighbours) -> Sampler:
    """The claimed privacy-loss statistic over the changed cells of the released ``E``/``O`` arrays (docs/audit.md)."""
    change = pair.change
    groups = pair.query.groups
    changed = np.flatnonzero(change.ravel())
    claimed_logs = pair.log_alpha.ravel()[changed]
    first_cells = np.stack(pair.statistics(False)).ravel()[changed]
    second_cells = np.stack(pair.statistics(True)).ravel()[changed]
    expected_cell = changed < 2 * groups  # [0] of the (2, 2, Q) layout: the E cells

    def released(cells: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        query = pair.query
        out = np.empty((count, changed.size), dtype=np.int64)
        for column, expected in enumerate(expected_cell):
            log = query.expected_log_alpha if expected else query.observed_log_alpha
            draws = party_statistic_draws(log, count, pair.parties, pair.threshold, rng)
            out[:, column] = cells[column] + draws[pair.threshold:].sum(axis=0)  # the honest parties' rows
        return privacy_loss_statistic(out, first_cells, second_cells, claimed_logs)

    return paired(released, first_cells, second_cells)


def hl_cases() -> list[AuditCase]:
    cases = []
    for accounting, epsilon in HL_EPSILONS.items():
        pair = hosmer_lemeshow_neighbours(accounting=accounting, epsilon=epsilon)
        q = pair.query
        cases.append(AuditCase(
            name=f"hl-statistics-{accounting}-m3-t1",
            mechanism=(f"Hosmer-Lemeshow group statistics E_(s,q), O_(s,q) with distributed discrete Laplace, "
                       f"accounting '{accounting}' (Barczewski, Mawass & Ramon, Algorithm 2 lines 8-9, Theorem 2, "
                       f"App. A.2); epsilon = {epsilon:g}, eps' = epsilon/(L+9) = {q.budget.epsilon_prime:.4g}; "
                       f"claimed: the proven loss 4 x rate = {q.statistics_loss_bound:.4g} of the statistics "
                       f"(spent: 8 eps' = {q.budget.statistics_epsilon:.4g})"),
            epsilon=q.statistics_loss_bound, delta=0.0, sample=_hl_sampler(pair),
            statistic=("claimed privacy-loss statistic sum_j rate_j (|x_j - c'_j| - |x_j - c_j|) over the changed "
                       "cells (coalition shares subtracted)"),
            neighbours="one row (p, y) = (0, 0) in group 1 replaced by (1, 1) in group 3 (boundaries 3/8, 5/8 fixed)"))
    tree_query = HosmerLemeshowQuery(epsilon=3.0 * TREE_EPSILON, groups=3, grid_points=8, precision=3)
    tree_pair = tree_neighbours(tree_query.grid)
    cases.append(tree_case(
        "hl-ecdf-m3-t1", lambda: tree_query.tree_plan(parties=3, threshold=1), tree_pair,
        claimed=tree_query.budget.ecdf_epsilon,
        mechanism=("Hosmer-Lemeshow line 5: the ECDF of the predicted probabilities released with the tree at "
                   "(L+1) eps' (Barczewski, Mawass & Ramon, Algorithm 2, Theorem 2; HosmerLemeshowQuery.tree_plan)")))
    return cases
