"""Tests for :mod:`dp.sampling`: public tuple samplers for incomplete U-statistics."""
from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dp.sampling import (
    SAMPLING_METHODS,
    _balanced_tuples_counted,
    _unrank_colex,
    _unrank_pairs,
    _unrank_python,
    _unrank_tables,
    all_tuples,
    balanced_tuples,
    bernoulli_tuples,
    max_degree,
    sample_tuples,
    tuple_count,
    uniform_tuples,
    vertex_degrees,
)

P_MIN = 1e-3  # goodness-of-fit tests fail with probability 1e-3 under the null


def assert_valid_tuples(tuples: np.ndarray, n: int, k: int) -> None:
    """Shape, dtype, range, ascending rows and distinct vertices inside each tuple."""
    assert tuples.dtype == np.int64
    assert tuples.ndim == 2 and tuples.shape[1] == k
    if tuples.size:
        assert tuples.min() >= 0 and tuples.max() < n
    assert np.all(np.diff(tuples, axis=1) > 0)  # sorted and distinct within each row


# ------------------------------------------------------------------------------------------
# counting, enumeration, degrees
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k", [(1, 1), (5, 1), (8, 2), (7, 3), (9, 4), (6, 6), (10**6, 3)])
def test_tuple_count(n: int, k: int) -> None:
    assert tuple_count(n, k) == math.comb(n, k)
    assert isinstance(tuple_count(n, k), int)


@pytest.mark.parametrize("n,k", [(1, 1), (5, 1), (8, 2), (7, 3), (9, 4), (6, 6)])
def test_all_tuples_lexicographic(n: int, k: int) -> None:
    got = all_tuples(n, k)
    assert_valid_tuples(got, n, k)
    assert got.tolist() == [list(c) for c in combinations(range(n), k)]


def test_all_tuples_refuses_huge_enumeration() -> None:
    with pytest.raises(ValueError, match="too many to enumerate"):
        all_tuples(10**6, 3)


def test_vertex_and_max_degree() -> None:
    tuples = np.array([[0, 1], [1, 2], [1, 3], [0, 1]], dtype=np.int64)
    assert vertex_degrees(tuples, 5).tolist() == [2, 4, 1, 1, 0]
    assert vertex_degrees(tuples, 5).dtype == np.int64
    assert max_degree(tuples, 5) == 4
    assert vertex_degrees(np.empty((0, 2), dtype=np.int64), 3).tolist() == [0, 0, 0]
    with pytest.raises(ValueError, match="tuple entry 3 lies outside the rows 0..2"):
        vertex_degrees(tuples, 3)
    with pytest.raises(ValueError, match="2-D"):
        vertex_degrees(np.arange(4), 5)


# ------------------------------------------------------------------------------------------
# balanced sampling (Algorithm 1)
# ------------------------------------------------------------------------------------------
BALANCE_CASES = [
    # (n, k, m): non-divisible ...
    (4, 2, 3),
    (6, 2, 5),
    (7, 3, 9),
    (5, 3, 4),
    (100, 3, 70),
    (1000, 2, 1600),
    (4238, 2, 5000),
    (50, 3, 101),
    (30, 2, 7),
    (10, 1, 7),
    # ... and divisible
    (3, 2, 3),
    (1000, 2, 1500),
    (4238, 2, 8476),
    (100, 3, 100),
    (12, 3, 20),
]


@pytest.mark.parametrize("n,k,m", BALANCE_CASES)
def test_balanced_degrees_differ_by_at_most_one(n: int, k: int, m: int) -> None:
    rng = np.random.default_rng(20240501 + n + k + m)
    for _ in range(3):
        tuples = balanced_tuples(n, m, k, rng)
        assert tuples.shape == (m, k)
        assert_valid_tuples(tuples, n, k)
        degrees = vertex_degrees(tuples, n)
        assert degrees.sum() == k * m
        assert degrees.max() - degrees.min() <= 1
        assert max_degree(tuples, n) == math.ceil(k * m / n)
        assert degrees.min() == (k * m) // n


DIVISIBLE_CASES = [(n, k, m) for n, k, m in BALANCE_CASES if (k * m) % n == 0]


@pytest.mark.parametrize("n,k,m", DIVISIBLE_CASES)
@pytest.mark.parametrize("strict", [True, False])
def test_balanced_divisible_degrees_exact(n: int, k: int, m: int, strict: bool) -> None:
    rng = np.random.default_rng(7)
    tuples = balanced_tuples(n, m, k, rng, strict_balance=strict)
    assert np.all(vertex_degrees(tuples, n) == k * m // n)


def test_balanced_strict_and_verbatim_agree_when_divisible() -> None:
    a = balanced_tuples(4238, 8476, 2, np.random.default_rng(11), strict_balance=True)
    b = balanced_tuples(4238, 8476, 2, np.random.default_rng(11), strict_balance=False)
    assert np.array_equal(a, b)


def test_balanced_verbatim_respects_capacity_but_may_be_unbalanced() -> None:
    # Algorithm 1 verbatim: max degree <= ceil(km/n) always; n=4, k=2, m=3 can end (2,2,2,0).
    spreads = []
    for seed in range(60):
        tuples = balanced_tuples(4, 3, 2, np.random.default_rng(seed), strict_balance=False)
        assert_valid_tuples(tuples, 4, 2)
        degrees = vertex_degrees(tuples, 4)
        assert degrees.max() <= 2
        spreads.append(int(degrees.max() - degrees.min()))
    assert max(spreads) == 2
    assert min(spreads) == 1


@pytest.mark.parametrize("strict", [True, False])
def test_balanced_deterministic(strict: bool) -> None:
    a = balanced_tuples(300, 450, 3, np.random.default_rng(5), strict_balance=strict)
    b = balanced_tuples(300, 450, 3, np.random.default_rng(5), strict_balance=strict)
    c = balanced_tuples(300, 450, 3, np.random.default_rng(6), strict_balance=strict)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def test_balanced_large_k2_and_k3() -> None:
    for n, m, k in [(20_000, 40_000, 2), (20_000, 25_000, 3)]:
        tuples = balanced_tuples(n, m, k, np.random.default_rng(3))
        assert tuples.shape == (m, k)
        assert_valid_tuples(tuples, n, k)
        degrees = vertex_degrees(tuples, n)
        assert degrees.max() - degrees.min() <= 1


def test_balanced_restart_count_matches_theory() -> None:
    # n=3, k=2, m=3: M=2.  After a first edge {a,b}, the second edge repeats it with probability
    # (1/4)(1/3) + (1/4)(1/3) = 1/6, leaving only row c with capacity: line 5 must restart.
    # Restarts over S samples are negative binomial: failures before S successes, success 5/6.
    samples = 600
    rng = np.random.default_rng(12345)
    restarts = 0
    for _ in range(samples):
        tuples, r = _balanced_tuples_counted(3, 3, 2, rng, True, 10_000)
        assert np.all(vertex_degrees(tuples, 3) == 2)
        restarts += r
    low, high = stats.nbinom.interval(0.999, samples, 5 / 6)
    assert restarts > 0
    assert low <= restarts <= high


def test_balanced_max_restarts_exceeded() -> None:
    outcomes = []
    for seed in range(40):
        try:
            balanced_tuples(3, 3, 2, np.random.default_rng(seed), max_restarts=0)
            outcomes.append(True)
        except RuntimeError as err:
            assert "n=3, k=2, m=3" in str(err)
            outcomes.append(False)
    assert any(outcomes) and not all(outcomes)
    with pytest.raises(RuntimeError, match=r"more than 0 restarts \(n=3, k=2, m=3\)"):
        balanced_tuples(3, 3, 2, np.random.default_rng(outcomes.index(False)), max_restarts=0)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_balanced_property(data: st.DataObject) -> None:
    n = data.draw(st.integers(min_value=1, max_value=12), label="n")
    k = data.draw(st.integers(min_value=1, max_value=min(3, n)), label="k")
    m = data.draw(st.integers(min_value=1, max_value=min(math.comb(n, k), 40)), label="m")
    seed = data.draw(st.integers(min_value=0, max_value=2**32 - 1), label="seed")
    tuples = balanced_tuples(n, m, k, np.random.default_rng(seed))
    assert tuples.shape == (m, k)
    assert_valid_tuples(tuples, n, k)
    degrees = vertex_degrees(tuples, n)
    assert degrees.max() - degrees.min() <= 1
    assert degrees.max() == math.ceil(k * m / n)


# ------------------------------------------------------------------------------------------
# ranking / unranking
# ------------------------------------------------------------------------------------------
def _rank_colex(tuples: np.ndarray) -> list[int]:
    """The colex rank ``sum_i C(c_i, i)`` of each ascending row, exact: the inverse of ``_unrank_colex``."""
    return [sum(math.comb(int(c), i + 1) for i, c in enumerate(row)) for row in np.asarray(tuples).tolist()]


def test_unranking_bijective_small() -> None:
    n, k = 7, 3
    total = math.comb(n, k)
    tuples = _unrank_colex(np.arange(total, dtype=np.int64), n, k)
    assert_valid_tuples(tuples, n, k)
    assert {tuple(row) for row in tuples.tolist()} == set(combinations(range(n), k))
    assert _rank_colex(tuples) == list(range(total))
    assert sorted(_rank_colex(all_tuples(n, k))) == list(range(total))


def test_unranking_paths_agree() -> None:
    rng = np.random.default_rng(99)
    n = 60
    for k in (1, 2, 3, 4):
        total = math.comb(n, k)
        ranks = np.sort(rng.choice(total, size=min(200, total), replace=False))
        reference = _unrank_python([int(r) for r in ranks], n, k)
        assert _rank_colex(reference) == ranks.tolist()
        assert np.array_equal(_unrank_tables(ranks, n, k), reference)
        if k == 2:
            assert np.array_equal(_unrank_pairs(ranks), reference)
    # closed form for k=2 near the top of a large range
    n = 3_000_000
    total = math.comb(n, 2)
    ranks = np.array([0, 1, total - 2, total - 1, total // 2], dtype=np.int64)
    assert np.array_equal(_unrank_pairs(ranks), _unrank_python(ranks.tolist(), n, 2))


# ------------------------------------------------------------------------------------------
# uniform sampling without replacement
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n,k,m", [(8, 2, 10), (7, 3, 20), (100, 2, 4000), (30, 3, 4060), (12, 1, 5)])
def test_uniform_distinct_and_count(n: int, k: int, m: int) -> None:
    tuples = uniform_tuples(n, m, k, np.random.default_rng(1))
    assert tuples.shape == (m, k)
    assert_valid_tuples(tuples, n, k)
    assert len({tuple(row) for row in tuples.tolist()}) == m


@pytest.mark.parametrize("n,k", [(8, 2), (7, 3), (5, 5), (6, 1)])
def test_uniform_all_tuples_when_m_is_total(n: int, k: int) -> None:
    total = math.comb(n, k)
    assert np.array_equal(uniform_tuples(n, total, k, np.random.default_rng(0)), all_tuples(n, k))
    near = uniform_tuples(n, total - 1, k, np.random.default_rng(0)) if total > 1 else None
    if near is not None:
        assert len({tuple(row) for row in near.tolist()}) == total - 1


@pytest.mark.parametrize("n,k", [(10**6, 3), (10**7, 3), (10**5, 2), (200, 60), (64, 32)])
def test_uniform_huge_population(n: int, k: int) -> None:
    m = 1000
    tuples = uniform_tuples(n, m, k, np.random.default_rng(2))
    assert tuples.shape == (m, k)
    assert_valid_tuples(tuples, n, k)
    assert len({tuple(row) for row in tuples.tolist()}) == m
    assert max(_rank_colex(tuples)) < math.comb(n, k)


def test_uniform_deterministic() -> None:
    for n, k in [(500, 2), (10**7, 3)]:
        a = uniform_tuples(n, 300, k, np.random.default_rng(8))
        b = uniform_tuples(n, 300, k, np.random.default_rng(8))
        assert np.array_equal(a, b)


# ------------------------------------------------------------------------------------------
# statistical checks
# ------------------------------------------------------------------------------------------
def test_uniform_inclusion_frequencies_are_uniform() -> None:
    n, k, m, draws = 6, 2, 5, 4000
    index = {t: i for i, t in enumerate(combinations(range(n), k))}
    total = len(index)
    counts = np.zeros(total, dtype=np.int64)
    rng = np.random.default_rng(2024)
    for _ in range(draws):
        for row in uniform_tuples(n, m, k, rng).tolist():
            counts[index[tuple(row)]] += 1
    # Under uniform sampling of m of N tuples, the covariance of the inclusion counts is the
    # multinomial one times (N - m) / (N - 1) (finite-population correction), so the Pearson
    # statistic times (N - 1) / (N - m) is asymptotically chi-square with N - 1 d.o.f.
    statistic = stats.chisquare(counts).statistic * (total - 1) / (total - m)
    assert stats.chi2.sf(statistic, total - 1) > P_MIN


@pytest.mark.parametrize("n,k,m", [(6, 2, 5), (5, 3, 4), (4, 2, 4)])
@pytest.mark.parametrize("strict", [True, False])
def test_balanced_inclusion_frequencies_are_uniform(n: int, k: int, m: int, strict: bool) -> None:
    # Exchangeability makes the edge at any fixed position uniform over the k-subsets; taking
    # position d mod m from the d-th independent sample gives i.i.d. uniform categorical draws,
    # so the plain Pearson chi-square test applies.
    draws = 4000
    index = {t: i for i, t in enumerate(combinations(range(n), k))}
    counts = np.zeros(len(index), dtype=np.int64)
    multiplicity = np.zeros(len(index), dtype=np.int64)
    rng = np.random.default_rng(77 + n + k + m)
    for d in range(draws):
        tuples = balanced_tuples(n, m, k, rng, strict_balance=strict)
        counts[index[tuple(tuples[d % m].tolist())]] += 1
        for row in tuples.tolist():
            multiplicity[index[tuple(row)]] += 1
    assert stats.chisquare(counts).pvalue > P_MIN
    assert multiplicity.sum() == draws * m


def test_bernoulli_mean_size() -> None:
    n, k, m, draws = 8, 2, 10, 2000
    total = math.comb(n, k)
    q = m / total
    rng = np.random.default_rng(31)
    sizes = []
    for _ in range(draws):
        tuples = bernoulli_tuples(n, m, k, rng)
        assert_valid_tuples(tuples, n, k)
        assert len({tuple(row) for row in tuples.tolist()}) == tuples.shape[0]
        sizes.append(tuples.shape[0])
    # each size is Binomial(28, q) (conditioning on >= 1 changes it with probability 4e-6), so
    # the sum over independent draws is Binomial(28 * draws, q)
    low, high = stats.binom.interval(0.999, total * draws, q)
    assert low <= sum(sizes) <= high


def test_bernoulli_never_empty_and_full() -> None:
    rng = np.random.default_rng(4)
    sizes = [bernoulli_tuples(100, 1, 2, rng).shape[0] for _ in range(300)]
    assert min(sizes) >= 1  # P(size 0) ~ exp(-1): the redraw is exercised
    assert np.array_equal(bernoulli_tuples(7, 21, 2, rng), all_tuples(7, 2))


def test_bernoulli_huge_population() -> None:
    for n, k in [(10**6, 3), (10**7, 3)]:  # int64 binomial path and Poisson path
        tuples = bernoulli_tuples(n, 500, k, np.random.default_rng(9))
        assert_valid_tuples(tuples, n, k)
        assert 350 <= tuples.shape[0] <= 650
        assert len({tuple(row) for row in tuples.tolist()}) == tuples.shape[0]


def test_bernoulli_deterministic() -> None:
    a = bernoulli_tuples(40, 100, 3, np.random.default_rng(10))
    b = bernoulli_tuples(40, 100, 3, np.random.default_rng(10))
    assert np.array_equal(a, b)


# ------------------------------------------------------------------------------------------
# dispatch
# ------------------------------------------------------------------------------------------
def test_sampling_methods_constant() -> None:
    assert SAMPLING_METHODS == ("balanced", "uniform", "bernoulli")


@pytest.mark.parametrize("method", SAMPLING_METHODS)
def test_sample_tuples_all(method: str) -> None:
    got = sample_tuples(method, 7, None, 3, np.random.default_rng(0))
    assert np.array_equal(got, all_tuples(7, 3))


def test_sample_tuples_dispatch() -> None:
    direct = {
        "balanced": balanced_tuples(50, 60, 2, np.random.default_rng(3)),
        "uniform": uniform_tuples(50, 60, 2, np.random.default_rng(3)),
        "bernoulli": bernoulli_tuples(50, 60, 2, np.random.default_rng(3)),
    }
    for method in SAMPLING_METHODS:
        got = sample_tuples(method, 50, 60, 2, np.random.default_rng(3))
        assert np.array_equal(got, direct[method])


# ------------------------------------------------------------------------------------------
# validation
# ------------------------------------------------------------------------------------------
SAMPLERS = [balanced_tuples, uniform_tuples, bernoulli_tuples]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_validation_messages(sampler) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="number of tuples must be at least 1, got 0"):
        sampler(8, 0, 2, rng)
    with pytest.raises(ValueError, match=r"number of tuples 50 exceeds C\(8, 2\) = 28 distinct tuples"):
        sampler(8, 50, 2, rng)
    with pytest.raises(ValueError, match="degree must be at least 1, got 0"):
        sampler(8, 3, 0, rng)
    with pytest.raises(ValueError, match="need at least k rows for degree k, got n=1, k=2"):
        sampler(1, 1, 2, rng)
    with pytest.raises(TypeError, match="number of tuples must be an integer"):
        sampler(8, 2.5, 2, rng)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sampler(8, 3, 2, 42)


def test_validation_other() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown sampling method 'random'; known methods: 'balanced', 'uniform', 'bernoulli'"):
        sample_tuples("random", 8, 3, 2, rng)
    with pytest.raises(ValueError, match=r"number of tuples 29 exceeds C\(8, 2\) = 28"):
        sample_tuples("uniform", 8, 29, 2, rng)
    with pytest.raises(ValueError, match="need at least k rows for degree k, got n=2, k=3"):
        sample_tuples("balanced", 2, None, 3, rng)
    with pytest.raises(ValueError, match="max_restarts must be non-negative, got -1"):
        balanced_tuples(8, 3, 2, rng, max_restarts=-1)
    with pytest.raises(ValueError, match="degree must be at least 1, got -2"):
        tuple_count(5, -2)
    with pytest.raises(ValueError, match="need at least k rows for degree k, got n=0, k=1"):
        all_tuples(0, 1)
