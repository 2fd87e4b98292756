"""LDP AUC from Hadamard-response hierarchical histograms (Bell, Bellet, Gascón & Kulkarni, §4, App. B).

Statistical checks use fixed seeds and thresholds from the sampling distributions: 99.9 % two-sided
normal intervals, Bonferroni-corrected over the number of simultaneous checks in a test.
"""
from __future__ import annotations

import math
import tracemalloc
from typing import Any, Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

from dp.bell.auc import (AUCTraversal, hierarchical_auc, ldp_auc, mse_bound, optimal_threshold_constant,
                        variance_constant)
from dp.bell.hadamard import (FrequencyOracle, HadamardReports, flip_probability, hadamard_entry,
                             hadamard_output_probabilities, hadamard_randomize)
from dp.bell.hadamard import _direct_sums, _hadamard_sums
from dp.bell.hierarchical import HadamardHierarchy, composed_epsilon, level_epsilon, randomize_hierarchy

class ExactHierarchy:
    """Noiseless :class:`dp.bell.hierarchical.HierarchyEstimate` of integer scores in ``[0, domain_size)``: the exact
    hierarchical histogram (Bell et al. Definition 3), node counts by binary search in the sorted scores."""

    def __init__(self, values: Any, *, domain_size: int, variance_bound: float = 0.0) -> None:
        self.levels, self.total, self.variance_bound = domain_size.bit_length() - 1, float(len(values)), variance_bound
        self._sorted = np.sort(np.asarray(values, dtype=np.int64))

    def estimate(self, level: int, nodes: Any) -> np.ndarray:
        shift, queries = self.levels - level, np.asarray(nodes, dtype=np.int64)
        return (np.searchsorted(self._sorted, (queries + 1) << shift)
                - np.searchsorted(self._sorted, queries << shift)).astype(np.float64)


class HierarchyTable:
    """A hand-built :class:`dp.bell.hierarchical.HierarchyEstimate`: ``counts[l]`` the ``2^l`` node values of level
    ``l`` (taken as estimates: they may be negative or inconsistent across levels, as noisy ones are)."""

    def __init__(self, counts: Any, *, variance_bound: float = 0.0) -> None:
        self._tables = [np.asarray(level, dtype=np.float64) for level in counts]
        self.levels, self.total, self.variance_bound = len(counts) - 1, float(self._tables[0][0]), variance_bound

    def estimate(self, level: int, nodes: Any) -> np.ndarray:
        return self._tables[level][np.asarray(nodes, dtype=np.int64)]


FAMILY_LEVEL = 0.001  # overall false-failure probability of each statistical test


def z_bonferroni(checks: int) -> float:
    """Two-sided normal quantile for ``checks`` simultaneous checks at overall level 0.1 %."""
    return float(stats.norm.isf(FAMILY_LEVEL / (2 * checks)))


def sklearn_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    labels = np.r_[np.ones(positive.size), np.zeros(negative.size)]
    return float(roc_auc_score(labels, np.r_[positive, negative]))


def strict_auc(positive: np.ndarray, negative: np.ndarray) -> float:
    return float(np.mean(positive[:, None] > negative[None, :]))


def sylvester(bits: int) -> np.ndarray:
    matrix = np.array([[1]])
    for _ in range(bits):
        matrix = np.kron(np.array([[1, 1], [1, -1]]), matrix)
    return matrix


# --------------------------------------------------------------------------------------------------
# Algorithm 2: Hadamard entries, the randomizer, epsilon-LDP

def test_hadamard_entries_are_the_sylvester_matrix() -> None:
    for bits in range(1, 6):
        index = np.arange(1 << bits)
        assert np.array_equal(hadamard_entry(index[:, None], index[None, :]), sylvester(bits))


@pytest.mark.parametrize("epsilon", [1e-3, 0.5, 1.0, 3.0, 20.0, 50.0, 1000.0])
@pytest.mark.parametrize("bits", [1, 2, 4])
def test_randomizer_is_epsilon_ldp_exactly(bits: int, epsilon: float) -> None:
    tables = np.stack([hadamard_output_probabilities(v, bits=bits, epsilon=epsilon) for v in range(1 << bits)])
    assert np.all(tables > 0)
    assert np.allclose(tables.sum(axis=(1, 2)), 1.0, rtol=0, atol=1e-15)
    worst = float((tables.max(axis=0) / tables.min(axis=0)).max())  # over outputs, any two inputs
    rho = flip_probability(epsilon)
    assert worst == (1 - rho) / rho  # attained: the loss is exactly ln((1 - rho)/rho) ...
    assert math.log(worst) <= epsilon  # ... which never exceeds epsilon
    assert rho >= math.exp(-epsilon) / (1 + math.exp(-epsilon))


def test_randomizer_samples_the_exact_distribution() -> None:
    bits, value, epsilon, draws = 3, 5, 1.0, 160_000
    reports = hadamard_randomize(np.full(draws, value), bits=bits, epsilon=epsilon, rng=np.random.default_rng(11))
    cells = reports.rows * 2 + (reports.signs > 0)
    observed = np.bincount(cells, minlength=2 << bits)
    expected = hadamard_output_probabilities(value, bits=bits, epsilon=epsilon).ravel() * draws
    assert stats.chisquare(observed, expected).pvalue > FAMILY_LEVEL


def test_budget_split_user_is_epsilon_ldp_over_all_levels() -> None:
    domain, epsilon = 8, 1.2
    levels = 3
    eps0 = level_epsilon(epsilon, levels=levels, split="budget")
    assert eps0 == pytest.approx(epsilon / levels)

    def joint(score: int) -> np.ndarray:
        table = np.ones(1)
        for level in range(1, levels + 1):
            table = np.multiply.outer(table, hadamard_output_probabilities(
                score >> (levels - level), bits=level, epsilon=eps0).ravel()).ravel()
        return table

    tables = np.stack([joint(s) for s in range(domain)])
    assert np.isclose(tables.sum(axis=1), 1.0, rtol=0, atol=1e-14).all()
    assert float((tables.max(axis=0) / tables.min(axis=0)).max()) <= math.exp(epsilon) * (1 + 1e-12)


def test_level_epsilon_and_advanced_composition() -> None:
    assert level_epsilon(0.7, levels=16) == 0.7
    assert level_epsilon(0.7, levels=16, split="budget") == pytest.approx(0.7 / 16)
    # advanced composition wins for many levels and a loose delta; the result is the largest that fits
    eps, levels, delta = 1.0, 40, 1e-3
    eps0 = level_epsilon(eps, levels=levels, delta=delta, split="budget")
    assert eps0 > eps / levels
    assert composed_epsilon(eps0, levels=levels, delta=delta) <= eps
    assert composed_epsilon(eps0 * (1 + 1e-9), levels=levels, delta=delta) > eps
    # ... and basic composition is kept when it is better (16 levels, delta = 1e-6)
    assert level_epsilon(1.0, levels=16, delta=1e-6, split="budget") == pytest.approx(1 / 16)
    # the paper's closed form under its condition eps <= sqrt(alpha) ln 2 can exceed eps (docstring)
    alpha, delta = 100, 0.5
    eps = math.sqrt(alpha) * math.log(2)
    paper = eps / (math.sqrt(alpha) * (1 + math.sqrt(2 * math.log(1 / delta))))
    assert composed_epsilon(paper, levels=alpha, delta=delta) == pytest.approx(15.6, abs=0.1)
    assert composed_epsilon(level_epsilon(eps, levels=alpha, delta=delta, split="budget"),
                            levels=alpha, delta=delta) <= eps


# --------------------------------------------------------------------------------------------------
# Algorithm 3: the frequency oracle

@settings(max_examples=60, deadline=None)
@given(st.integers(1, 62), st.lists(st.tuples(st.integers(0, 2**62), st.integers(-3, 3)), min_size=1, max_size=80),
       st.lists(st.integers(0, 2**62), min_size=1, max_size=60), st.integers(0, 61))
def test_split_hadamard_sums_equal_the_direct_sums(bits: int, reports: list[tuple[int, int]],
                                                   queries: list[int], split: int) -> None:
    mask = (1 << bits) - 1
    rows = np.array([r & mask for r, _ in reports], dtype=np.int64)
    weights = np.array([w for _, w in reports], dtype=np.float64)
    asked = np.array([q & mask for q in queries], dtype=np.int64)
    brute = (hadamard_entry(asked[:, None], rows[None, :]) * weights).sum(axis=1)
    assert np.array_equal(_direct_sums(rows, weights, asked), brute)
    assert np.array_equal(_hadamard_sums(rows, weights, asked, bits, split=split % bits), brute)
    assert np.array_equal(_hadamard_sums(rows, weights, asked, bits), brute)


@pytest.mark.parametrize("bits,users", [(4, 500), (20, 300)])  # grouped by row / kept as reported
def test_oracle_counts_are_algorithm_3(bits: int, users: int) -> None:
    generator = np.random.default_rng(5)
    values = generator.integers(0, 1 << bits, users)
    reports = hadamard_randomize(values, bits=bits, epsilon=0.8, rng=generator)
    oracle = FrequencyOracle(reports)
    queries = np.unique(np.r_[values[:20], generator.integers(0, 1 << bits, 20)])
    debias = (1 + math.exp(0.8)) / (math.exp(0.8) - 1)
    brute = debias * (hadamard_entry(queries[:, None], reports.rows[None, :]) * reports.signs).sum(axis=1)
    assert np.allclose(oracle.counts(queries), brute, rtol=1e-12)


def test_oracle_is_unbiased_with_the_exact_variance_and_uncorrelated_answers() -> None:
    bits, epsilon, runs = 3, 1.0, 4000
    counts = np.array([50, 30, 0, 40, 20, 0, 60, 0])
    values = np.repeat(np.arange(8), counts)
    generator = np.random.default_rng(2019)
    answers = np.empty((runs, 8))
    for run in range(runs):
        oracle = FrequencyOracle(hadamard_randomize(values, bits=bits, epsilon=epsilon, rng=generator))
        answers[run] = oracle.counts(np.arange(8))
    variance = oracle.variance(counts)
    assert np.allclose(variance, values.size * oracle.debias_factor ** 2 - counts)
    # unbiased (Lemma 5): 8 means
    z = z_bonferroni(8)
    assert np.all(np.abs(answers.mean(axis=0) - counts) <= z * np.sqrt(variance / runs))
    # variance n K^2 - count (not eq. (23)'s n (K^2 - 1)): 8 sample variances, asymptotic normal
    centred = answers - answers.mean(axis=0)
    sample_var = (centred ** 2).mean(axis=0)
    fourth = (centred ** 4).mean(axis=0)
    assert np.all(np.abs(sample_var - variance) <= z * np.sqrt((fourth - sample_var ** 2) / runs))
    # pairwise uncorrelated (Lemma 6): 28 correlations, Fisher z
    correlation = np.corrcoef(answers, rowvar=False)[np.triu_indices(8, 1)]
    assert np.all(np.abs(np.arctanh(correlation)) * math.sqrt(runs - 3) <= z_bonferroni(28))


# --------------------------------------------------------------------------------------------------
# hierarchical histograms (both splits): unbiased dyadic counts, exact variance

@pytest.mark.parametrize("split", ["users", "budget"])
def test_hierarchy_estimates_dyadic_counts_without_bias(split: str) -> None:
    domain, runs, epsilon = 8, 2500, 2.0
    scores = np.repeat(np.arange(domain), [9, 0, 3, 14, 0, 0, 20, 4])  # 50 users, 3 levels
    truth = ExactHierarchy(scores, domain_size=domain)
    generator = np.random.default_rng(7 if split == "users" else 8)
    nodes = [np.arange(1 << level) for level in range(1, 4)]
    answers = [np.empty((runs, n.size)) for n in nodes]
    for run in range(runs):
        tree = HadamardHierarchy(randomize_hierarchy(scores, domain_size=domain, epsilon=epsilon, split=split,
                                                     rng=generator))
        for level in range(1, 4):
            answers[level - 1][run] = tree.estimate(level, nodes[level - 1])
    assert tree.estimate(0, [0])[0] == scores.size
    z = z_bonferroni(2 * 14)
    for level in range(1, 4):
        exact = truth.estimate(level, nodes[level - 1])
        variance = tree.variance(level, exact)
        assert np.all(variance <= tree.variance_bound * (1 + 1e-12))
        got = answers[level - 1]
        assert np.all(np.abs(got.mean(axis=0) - exact) <= z * np.sqrt(variance / runs))
        centred = got - got.mean(axis=0)
        sample_var = (centred ** 2).mean(axis=0)
        spread = np.sqrt(((centred ** 4).mean(axis=0) - sample_var ** 2) / runs)
        assert np.all(np.abs(sample_var - variance) <= z * spread)


def test_variance_bound_and_constant_of_each_split() -> None:
    scores = np.arange(1000) % 256
    generator = np.random.default_rng(1)
    users = HadamardHierarchy(randomize_hierarchy(scores, domain_size=256, epsilon=1.0, rng=generator))
    k2 = ((math.e + 1) / (math.e - 1)) ** 2
    assert users.variance_bound == pytest.approx(1000 ** 2 * k2 / 125)  # n^2 K^2 / min n_l, n_l = 125
    budget = HadamardHierarchy(randomize_hierarchy(scores, domain_size=256, epsilon=1.0, split="budget",
                                                   rng=generator))
    k2_level = ((math.exp(1 / 8) + 1) / (math.exp(1 / 8) - 1)) ** 2
    assert budget.variance_bound == pytest.approx(1000 * k2_level)
    assert variance_constant(budget, budget) == pytest.approx(k2_level / 8)  # v = C n alpha
    assert users.oracle(3).users == 125 and users.oracle(3).bits == 3


# --------------------------------------------------------------------------------------------------
# the pruning on hand-built trees

def leaves_to_table(leaves: list[float]) -> list[np.ndarray]:
    levels = [np.asarray(leaves, dtype=float)]
    while levels[0].size > 1:
        levels.insert(0, levels[0].reshape(-1, 2).sum(axis=1))
    return levels


def _count(nodes: tuple[np.ndarray, ...]) -> int:
    return sum(level.size for level in nodes)


def decisions(result: AUCTraversal) -> tuple[list[list[int]], list[list[int]]]:
    return [n.tolist() for n in result.expanded], [n.tolist() for n in result.discarded]


def test_pruning_on_an_exact_hand_built_tree() -> None:
    # positives {2, 3, 6, 6, 7, 7}, negatives {0, 1, 1, 2, 4, 5, 5}: exact AUC numerator 35.5
    positive = HierarchyTable(leaves_to_table([0, 0, 1, 1, 0, 0, 2, 2]), variance_bound=1.0)
    negative = HierarchyTable(leaves_to_table([1, 2, 1, 0, 1, 2, 0, 0]), variance_bound=1.0)
    # a = 4: tau = 4, floors sqrt(4)/2 = 1; expand iff max(h+, 1) max(h-, 1) >= 4
    half = hierarchical_auc(positive, negative, threshold_constant=4.0)
    assert (half.threshold, half.positive_floor, half.negative_floor) == (4.0, 1.0, 1.0)
    # root 6*7; level 1: (2, 4) -> 8, (4, 3) -> 12; level 2: (0,3)->3, (2,1)->2, (0,3)->3, (4,0)->4 = tau
    assert decisions(half) == ([[0], [0, 1], [3]], [[], [], [0, 1, 2]])
    assert [t.tolist() for t in half.expanded_terms] == [[16.0], [6.0, 12.0], [0.0]]
    # discarded: 1/2 (sum of children)+ (sum of children)-: (0)(3), (1+1)(1+0), (0)(1+2)
    assert [t.tolist() for t in half.discarded_terms] == [[], [], [0.0, 1.0, 0.0]]
    assert half.pair_sum == 35.0 and half.auc == 35.0 / 42
    zero = hierarchical_auc(positive, negative, threshold_constant=4.0, discard="zero")
    assert decisions(zero) == decisions(half)
    assert [t.tolist() for t in zero.discarded_terms] == [[], [], [0.0, 0.0, 0.0]]
    assert zero.pair_sum == 34.0
    # no pruning: the exact value with ties 1/2 (pos 2 = neg 2), strict without
    exact = hierarchical_auc(positive, negative, threshold_constant=0.0)
    assert exact.pair_sum == 35.5 and _count(exact.discarded) == 0 and _count(exact.expanded) == 7
    assert hierarchical_auc(positive, negative, threshold_constant=0.0, count_ties=False).pair_sum == 35.0


def test_pruning_on_a_noisy_hand_built_tree_uses_the_floors() -> None:
    # estimates may be negative and inconsistent; v+ = 4, v- = 1, a = 1: tau = 2, floors 1 and 1/2
    positive = HierarchyTable([[10.0], [9.0, 1.5], [3.0, 7.0, 0.2, -0.4], [1, 2, 3, 4, 0, 0.5, -0.5, 0]],
                              variance_bound=4.0)
    negative = HierarchyTable([[10.0], [-2.0, 12.0], [-1.0, 0.3, 5.0, 6.0], [-1, 0, 0, 0.3, 2, 3, 4, 2]],
                              variance_bound=1.0)
    half = hierarchical_auc(positive, negative, threshold_constant=1.0)
    assert (half.threshold, half.positive_floor, half.negative_floor) == (2.0, 1.0, 0.5)
    # level 1: node 0: 9 * max(-2, 1/2) = 4.5 >= 2 (one heavy class suffices), node 1: 1.5 * 12
    # level 2: node 0: 3 * 0.5 = 1.5 < 2; node 1: 7 * 0.5; node 2: max(0.2, 1) * 5; node 3: 1 * 6
    assert decisions(half) == ([[0], [0, 1], [1, 2, 3]], [[], [], [0]])
    # own terms h+_{p1} h-_{p0}; at level 2 plus ties 1/2 sum_b h+_b h-_b of the two leaves
    assert np.allclose(half.expanded_terms[0], [1.5 * -2.0])
    assert np.allclose(half.expanded_terms[1], [7.0 * -1.0, -0.4 * 5.0])
    assert np.allclose(half.expanded_terms[2], [4 * 0 + 0.5 * (3 * 0 + 4 * 0.3),
                                                0.5 * 2 + 0.5 * (0 * 2 + 0.5 * 3),
                                                0 * 4 + 0.5 * (-0.5 * 4 + 0 * 2)])
    assert np.allclose(half.discarded_terms[2], [0.5 * (1 + 2) * (-1 + 0)])
    assert half.pair_sum == pytest.approx(-3 - 9 - 1.5 + 0.6 + 1.75 - 1.0)
    assert half.auc == pytest.approx(half.pair_sum / 100)
    zero = hierarchical_auc(positive, negative, threshold_constant=1.0, discard="zero")
    assert decisions(zero) == decisions(half)
    assert zero.pair_sum == pytest.approx(half.pair_sum + 1.5)
    strict = hierarchical_auc(positive, negative, threshold_constant=1.0, count_ties=False)
    assert strict.pair_sum == pytest.approx(-3 - 9 - 1.5 + 0 + 1 + 0)


def test_a_discarded_root_ends_the_traversal() -> None:
    # v = 4, a = 2: tau = 8 > 2 * 3, so the root is discarded at once
    positive = HierarchyTable([[2.0], [0.5, 1.0], [0, 0.5, 0.5, 0.5]], variance_bound=4.0)
    negative = HierarchyTable([[3.0], [2.0, 0.5], [1, 1, 0.5, 0]], variance_bound=4.0)
    half = hierarchical_auc(positive, negative, threshold_constant=2.0)
    assert decisions(half) == ([[], []], [[0], []])
    assert half.pair_sum == 0.5 * 1.5 * 2.5
    assert hierarchical_auc(positive, negative, threshold_constant=2.0, discard="zero").pair_sum == 0.0


def test_default_threshold_constant_is_the_corollarys() -> None:
    positive = HierarchyTable(leaves_to_table([0, 0, 1, 1, 0, 0, 2, 2]), variance_bound=3.0)
    negative = HierarchyTable(leaves_to_table([1, 2, 1, 0, 1, 2, 0, 0]), variance_bound=2.0)
    constant = max(3.0 / (6 * 3), 2.0 / (7 * 3))
    assert variance_constant(positive, negative) == constant
    for discard in ("half", "zero"):
        result = hierarchical_auc(positive, negative, discard=discard)
        a = optimal_threshold_constant(6, 7, variance_constant=constant, levels=3, discard=discard)
        assert result.threshold_constant == a
        assert result.threshold == pytest.approx(a * math.sqrt(6.0))


def test_threshold_constants_solve_the_corollaries_equations() -> None:
    n_pos, n_neg, constant, levels = 3e5, 1e6, 4.67, 16
    n, n_min = n_pos + n_neg, min(n_pos, n_neg)
    a4 = optimal_threshold_constant(n_pos, n_neg, variance_constant=constant, levels=levels)
    # Corollary 4: (sqrt a - 1)^2 = 21 sqrt(2 n C alpha) / (8 n_min) (first order of sqrt a (sqrt a - 1)^2 = ...)
    assert (math.sqrt(a4) - 1) ** 2 == pytest.approx(21 * math.sqrt(2 * n * constant * levels) / (8 * n_min))
    a5 = optimal_threshold_constant(n_pos, n_neg, variance_constant=constant, levels=levels, discard="zero")
    assert (math.sqrt(a5) - 1) ** 2 == pytest.approx(math.sqrt(2 * constant * levels * n) / (16 * n_min))
    assert 1 < a5 < a4 < 2
    assert optimal_threshold_constant(10, 10, variance_constant=0.0, levels=3) == 1.0
    # Corollary 5's closed form of the bound at its a
    bound = mse_bound(n_pos, n_neg, variance_constant=constant, levels=levels, threshold_constant=a5, discard="zero")
    closed = constant / (n_min * (n - n_min)) * levels ** 2 * (
        (8 * a5 + 2) * n_min + 2 * n + (512 * constant * levels * n * n_min ** 2) ** 0.25)
    assert bound == pytest.approx(closed)


# --------------------------------------------------------------------------------------------------
# exactness without noise; the full protocol

@settings(max_examples=80, deadline=None)
@given(st.integers(1, 10).flatmap(lambda levels: st.tuples(
    st.just(levels),
    st.lists(st.integers(0, 2 ** levels - 1), min_size=1, max_size=40),
    st.lists(st.integers(0, 2 ** levels - 1), min_size=1, max_size=40))))
def test_noiseless_traversal_equals_sklearn_with_ties_half(case: tuple[int, list[int], list[int]]) -> None:
    levels, positive, negative = case
    pos, neg = np.array(positive), np.array(negative)
    domain = 1 << levels
    trees = ExactHierarchy(pos, domain_size=domain), ExactHierarchy(neg, domain_size=domain)
    result = hierarchical_auc(*trees)  # v = 0: a = 1, tau = 0, nothing is discarded
    assert result.threshold == 0.0 and _count(result.discarded) == 0
    assert result.auc == pytest.approx(sklearn_auc(pos, neg), rel=1e-12, abs=1e-15)
    strict = hierarchical_auc(*trees, count_ties=False, discard="zero")
    assert strict.auc == pytest.approx(strict_auc(pos, neg), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("split", ["users", "budget"])
def test_full_protocol_without_pruning_is_unbiased_at_huge_epsilon(split: str) -> None:
    # Hadamard response is never noiseless (the random row j): the estimate is unbiased instead
    generator = np.random.default_rng(31 if split == "users" else 32)
    positive = generator.integers(4, 16, 40)
    negative = generator.integers(0, 12, 30)
    truth = sklearn_auc(positive, negative)
    runs = 1500
    estimates = np.array([ldp_auc(positive, negative, domain_size=16, epsilon=50.0, split=split,
                                  threshold_constant=0.0, rng=generator).auc for _ in range(runs)])
    assert abs(estimates.mean() - truth) <= z_bonferroni(1) * estimates.std(ddof=1) / math.sqrt(runs)


@pytest.mark.parametrize("discard", ["half", "zero"])
def test_pruned_protocol_meets_theorem_3(discard: str) -> None:
    # split='budget' meets conditions 1-4; alpha = 4 <= sqrt(n); auc_one is the paper's hard case
    generator = np.random.default_rng(41)
    domain, users, runs = 16, 2000, 150
    datasets = {"auc_one": (np.full(users, 15), np.zeros(users, dtype=np.int64)),
                "shift": (np.clip(generator.integers(0, 16, users) + 4, 0, 15), generator.integers(0, 16, users))}
    for positive, negative in datasets.values():
        truth = sklearn_auc(positive, negative)
        results = [ldp_auc(positive, negative, domain_size=domain, epsilon=50.0, split="budget", discard=discard,
                           rng=generator) for _ in range(runs)]
        squared = np.array([(r.auc - truth) ** 2 for r in results])
        constant = variance_constant(results[0].positive, results[0].negative)
        bound = mse_bound(users, users, variance_constant=constant, levels=4,
                          threshold_constant=results[0].traversal.threshold_constant, discard=discard)
        # H0: MSE <= bound; reject only if the mean squared error exceeds it beyond its sampling error
        one_sided = float(stats.norm.isf(FAMILY_LEVEL / len(datasets)))
        assert squared.mean() - one_sided * squared.std(ddof=1) / math.sqrt(runs) <= bound


def test_large_domain_needs_no_domain_sized_table() -> None:
    generator = np.random.default_rng(3)
    domain = 1 << 40
    positive = generator.integers(domain // 4, domain, 4000)
    negative = generator.integers(0, 3 * domain // 4, 4000)
    result = ldp_auc(positive, negative, domain_size=domain, epsilon=2.0, rng=generator)
    assert math.isfinite(result.auc) and _count(result.traversal.expanded) > 0
    medium = 1 << 24  # a float64 table of this size is 128 MiB
    tracemalloc.start()
    try:
        ldp_auc(positive % medium, negative % medium, domain_size=medium, epsilon=2.0, split="budget",
                rng=generator)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    table_bytes = 8 * medium
    assert peak < table_bytes / 8  # far below one table of d doubles


# --------------------------------------------------------------------------------------------------
# parameter validation

def _call(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[[], Any]:
    return lambda: function(*args, **kwargs)


_POS, _NEG = np.array([1, 2, 3]), np.array([0, 1])
_TREE = HierarchyTable([[2.0], [1.0, 1.0]])


@pytest.mark.parametrize("call,error,message", [
    (_call(ldp_auc, _POS, _NEG, domain_size=6, epsilon=1.0), ValueError, "domain_size must be a power of two"),
    (_call(ldp_auc, _POS, _NEG, domain_size=1, epsilon=1.0), ValueError, "domain_size must be a power of two"),
    (_call(ldp_auc, _POS, _NEG, domain_size=2.0, epsilon=1.0), TypeError, "domain_size must be an integer"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=-1.0), ValueError, "epsilon must be positive, got -1"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=math.inf), ValueError, "epsilon must be finite"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon="1"), TypeError, "epsilon must be a number"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1e-300), ValueError, "epsilon is too small"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, delta=1.0), ValueError, r"delta must lie in \[0, 1\)"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, delta=1e-6), ValueError, "delta must be 0 with split='users'"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, split="levels"), ValueError, "split must be one of users, budget, got 'levels'"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, discard="one"), ValueError, "discard must be one of half, zero, got 'one'"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, count_ties=1), TypeError, "count_ties must be a bool"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, threshold_constant=-1.0), ValueError,
     "threshold_constant must be non-negative"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, threshold_constant=math.nan), ValueError,
     "threshold_constant must be finite"),
    (_call(ldp_auc, [1, 4], _NEG, domain_size=4, epsilon=1.0), ValueError, r"positive_scores must lie in \[0, 4\), got 4"),
    (_call(ldp_auc, _POS, [-1, 0], domain_size=4, epsilon=1.0), ValueError, r"negative_scores must lie in \[0, 4\), got -1"),
    (_call(ldp_auc, [0.5], _NEG, domain_size=4, epsilon=1.0), ValueError, "positive_scores must be integers, got 0.5"),
    (_call(ldp_auc, ["a"], _NEG, domain_size=4, epsilon=1.0), TypeError, "positive_scores must hold integers"),
    (_call(ldp_auc, [], _NEG, domain_size=4, epsilon=1.0), ValueError, "positive_scores must not be empty"),
    (_call(ldp_auc, [[1]], _NEG, domain_size=4, epsilon=1.0), ValueError, "positive_scores must be a one-dimensional"),
    (_call(ldp_auc, [1], _NEG, domain_size=4, epsilon=1.0), ValueError, "at least one user per level"),
    (_call(ldp_auc, _POS, _NEG, domain_size=4, epsilon=1.0, rng=3), TypeError, "rng must be a numpy.random.Generator"),
    (_call(hadamard_randomize, [1], bits=0, epsilon=1.0), ValueError, r"bits must lie in \[1, 62\], got 0"),
    (_call(hadamard_randomize, [8], bits=3, epsilon=1.0), ValueError, r"values must lie in \[0, 8\), got 8"),
    (_call(hadamard_output_probabilities, 0, bits=21, epsilon=1.0), ValueError, "bits must be at most 20"),
    (_call(hadamard_output_probabilities, 4, bits=2, epsilon=1.0), ValueError, r"value must lie in \[0, 4\), got 4"),
    (_call(hadamard_entry, [-1], [0]), ValueError, "row must be non-negative"),
    (_call(hadamard_entry, [0.5], [0]), TypeError, "row must hold integers"),
    (_call(HadamardReports, bits=2, epsilon=1.0, rows=np.array([0, 1]), signs=np.array([1, 0])), ValueError,
     "signs must be"),
    (_call(FrequencyOracle, HadamardReports(bits=2, epsilon=1.0, rows=np.zeros(0, np.int64),
                                            signs=np.zeros(0, np.int8))), ValueError, "at least one user"),
    (_call(level_epsilon, 1.0, levels=0), ValueError, "levels must be at least 1, got 0"),
    (_call(composed_epsilon, 0.0, levels=3), ValueError, "epsilon must be positive, got 0"),
    (_call(hierarchical_auc, _TREE, HierarchyTable([[2.0], [1, 1], [1, 0, 0, 1]])), ValueError,
     "same number of levels, got 1 and 2"),
    (_call(hierarchical_auc, _TREE, object()), TypeError, "negative must provide levels"),
    (_call(optimal_threshold_constant, 0, 5, variance_constant=1.0, levels=3), ValueError,
     "positive_users must be positive, got 0"),
    (_call(optimal_threshold_constant, 5, 5, variance_constant=-1.0, levels=3), ValueError,
     "variance_constant must be non-negative"),
    (_call(mse_bound, 5, 5, variance_constant=1.0, levels=3, threshold_constant=1.0), ValueError,
     "threshold_constant must exceed 1"),
])
def test_parameters_are_validated_with_plain_messages(call: Callable[[], Any], error: type[Exception],
                                                      message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_integral_floats_are_accepted_as_scores() -> None:
    generator = np.random.default_rng(0)
    result = ldp_auc(np.array([3.0, 2.0, 3.0]), np.array([0.0, 1.0]), domain_size=4, epsilon=1.0, rng=generator)
    assert math.isfinite(result.auc) and result.level_epsilon == 1.0
