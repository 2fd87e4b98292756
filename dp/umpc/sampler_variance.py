"""Error of Pi_U-MPC's release by tuple sampler: ``E_inc`` (which pairs) plus ``E_DP`` (the noise).

Sinh & Ramon, App. D.1.2.  Derivations: docs/umpc_analysis.md."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dp.calibration import discrete_laplace_alpha, distributed_laplace_variance
from dp.sampling import SAMPLING_METHODS, tuple_count, vertex_degrees
from dp.validation import check_epsilon, check_parties, check_positive_int

__all__ = ["PairMoments", "duplicate_moments", "pair_moments", "uniform_inc", "bernoulli_inc",
           "inverse_size_mean", "balanced_inc_projection", "dp_variance", "degree_bound", "monte_carlo_inc",
           "duplicate_on_tuples", "ESTIMATORS", "design_factor", "incompleteness_variance_bound"]

#: estimators of the Bernoulli sampler: divide by the realised ``|E|`` or by its mean ``q N``
ESTIMATORS: tuple[str, ...] = ("ratio", "ht")

#: the binomial sum of :func:`inverse_size_mean` spans this many standard deviations each side
_WINDOW_SD = 40.0


@dataclass(frozen=True)
class PairMoments:
    """Moments of a degree-2 kernel over all ``N = C(n, 2)`` pairs of ``n`` rows: ``mean`` the complete
    U-statistic ``U``, ``mean_square`` ``mean_{C_2^n} f^2``, ``projection_variance`` ``Var h_1 = n^-1 sum_i h_1(i)^2``
    with ``h_1(i) = mean_{j != i} f(x_i, x_j) - U`` (these sum to 0 over ``i``)."""

    n: int
    mean: float
    mean_square: float
    projection_variance: float

    @property
    def pairs(self) -> int:  # N = C(n, 2)
        return self.n * (self.n - 1) // 2

    @property
    def variance(self) -> float:
        """``Var_{Uni(C_2^n)} f = mean f^2 - U^2`` (Claim D.1)."""
        return max(0.0, self.mean_square - self.mean ** 2)


def duplicate_moments(values: ArrayLike) -> PairMoments:
    """:class:`PairMoments` of ``f(x, y) = I[x = y]`` on one categorical value per row, from the category counts
    ``c`` (O(n log n); docs/umpc_analysis.md); ValueError on fewer than 2 rows."""
    x = np.asarray(values).ravel()
    n = int(x.shape[0])
    if n < 2:
        raise ValueError(f"need at least 2 rows, got {n}")
    _, counts = np.unique(x, return_counts=True)
    counts = counts.astype(float)
    mean = float(np.sum(counts * (counts - 1)) / (n * (n - 1)))
    h1 = (counts - 1) / (n - 1) - mean
    return PairMoments(n=n, mean=mean, mean_square=mean, projection_variance=float(np.sum(counts * h1 ** 2) / n))


def pair_moments(values: ArrayLike, kernel: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> PairMoments:
    """:class:`PairMoments` of a vectorised symmetric ``kernel(a, b)`` (row-wise on two equally shaped arrays) on
    rows of shape ``(n,)`` or ``(n, c)``, by all pairs (O(n^2) time, O(n) memory); ValueError on fewer than 2 rows."""
    x = np.asarray(values, dtype=float)
    n = int(x.shape[0])
    if n < 2:
        raise ValueError(f"need at least 2 rows, got {n}")
    row_sums = np.zeros(n)
    total = square = 0.0
    for i in range(n - 1):
        rest = x[i + 1:]
        out = np.asarray(kernel(np.broadcast_to(x[i], rest.shape), rest), dtype=float)
        total += float(out.sum())
        square += float(np.dot(out, out))
        row_sums[i] += float(out.sum())
        row_sums[i + 1:] += out
    pairs = n * (n - 1) / 2
    mean = total / pairs
    h1 = row_sums / (n - 1) - mean
    return PairMoments(n=n, mean=mean, mean_square=square / pairs, projection_variance=float(np.mean(h1 ** 2)))


def _check_edges(moments: PairMoments, edges: int) -> int:
    m = check_positive_int(edges, "number of pairs |E|")
    if m > moments.pairs:
        raise ValueError(f"|E| = {m} exceeds the C({moments.n}, 2) = {moments.pairs} pairs")
    return m


def uniform_inc(moments: PairMoments, edges: int) -> float:
    r"""Claim D.1, exact: ``E_inc = (N - m) / ((N - 1) m) * Var f`` for ``m`` pairs without replacement
    (ValueError: ``m`` outside ``[1, N]``)."""
    return _population_factor(moments.pairs, _check_edges(moments, edges)) * moments.variance


def inverse_size_mean(pairs: int, probability: float) -> float:
    """``E[1 / S | S >= 1]`` for ``S ~ Binomial(pairs, probability)``, summed over +-40 standard deviations
    (ValueError: ``probability`` outside ``(0, 1]``)."""
    from scipy import stats

    pairs = check_positive_int(pairs, "pairs")
    q = float(probability)
    if not 0.0 < q <= 1.0:
        raise ValueError(f"probability must lie in (0, 1], got {probability}")
    if q == 1.0:
        return 1.0 / pairs
    mean, sd = pairs * q, math.sqrt(pairs * q * (1 - q))
    low = max(1, int(math.floor(mean - _WINDOW_SD * sd)) - 1)
    high = min(pairs, int(math.ceil(mean + _WINDOW_SD * sd)) + 1)
    sizes = np.arange(low, high + 1, dtype=float)
    weights = stats.binom.pmf(sizes, pairs, q)
    nonempty = 1.0 - float(stats.binom.pmf(0, pairs, q))
    return float(np.sum(weights / sizes) / nonempty)


def bernoulli_inc(moments: PairMoments, edges: int, *, estimator: str = "ratio") -> float:
    r"""``E_inc`` of Bernoulli sampling with ``q = m / N``, exact (docs/umpc_analysis.md); ValueError on an unknown
    estimator or ``m`` outside ``[1, N]``."""
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator '{estimator}'; choose one of: {', '.join(ESTIMATORS)}")
    m = _check_edges(moments, edges)
    pairs = moments.pairs
    q = m / pairs
    if estimator == "ht":
        return (1.0 - q) / (q * pairs) * moments.mean_square
    if pairs == 1:
        return 0.0
    return moments.variance / (pairs - 1) * max(0.0, pairs * inverse_size_mean(pairs, q) - 1.0)


def balanced_inc_projection(moments: PairMoments, edges: int) -> float:
    r"""Approximate ``E_inc`` of a sampler with equal degrees: ``(N - m) / ((N - 1) m) (Var f - 2 Var h_1)``
    (docs/umpc_analysis.md)."""
    residual = max(0.0, moments.variance - 2.0 * moments.projection_variance)
    return _population_factor(moments.pairs, _check_edges(moments, edges)) * residual


def dp_variance(max_degree: int, edges: float, epsilon: float, *, sensitivity: int = 1, parties: int = 1,
                threshold: int = 0, scale: float = 1.0) -> float:
    r"""``Var(eta) / (|E| scale)^2`` for the suite's distributed discrete Laplace (Claim D.2, App. C.2.3;
    docs/umpc_analysis.md), calibrated with ``delta_max = max_degree`` and ``Delta_f = sensitivity`` in fixed-point
    units of ``scale``; ``edges`` is the divisor ``|E|`` (``q N`` for the Horvitz-Thompson estimator)."""
    degree = check_positive_int(max_degree, "max_degree")
    check_epsilon(epsilon)
    parties, threshold = check_parties(parties, threshold)
    if not edges > 0:
        raise ValueError(f"edges must be positive, got {edges}")
    alpha = discrete_laplace_alpha(epsilon, degree * check_positive_int(sensitivity, "sensitivity"))
    return distributed_laplace_variance(alpha, parties, threshold) / (float(edges) * scale) ** 2


def degree_bound(n: int, edges: int, *, failure: float) -> int:
    r"""Smallest ``d`` with ``n P(Binomial(n - 1, q) > d) <= failure``, ``q = m / C(n, 2)`` (docs/umpc_analysis.md);
    ValueError on ``failure`` outside ``(0, 1)`` or ``m`` outside ``[1, C(n, 2)]``."""
    from scipy import stats

    n = check_positive_int(n, "n")
    if n < 2:
        raise ValueError(f"need at least 2 rows, got {n}")
    m = _check_edges(PairMoments(n=n, mean=0.0, mean_square=0.0, projection_variance=0.0), edges)
    if not 0.0 < failure < 1.0:
        raise ValueError(f"failure must lie in (0, 1), got {failure}")
    q = m / (n * (n - 1) // 2)
    low, high = 0, n - 1  # P(Bin > n - 1) = 0
    while low < high:
        mid = (low + high) // 2
        if n * float(stats.binom.sf(mid, n - 1, q)) <= failure:
            high = mid
        else:
            low = mid + 1
    return max(1, low)


def duplicate_on_tuples(values: ArrayLike) -> Callable[[NDArray[np.int64]], float]:
    """``tuples -> U_{f,E}`` for ``f = I[x = y]`` on ``values`` (for :func:`monte_carlo_inc`)."""
    x = np.asarray(values).ravel()

    def statistic(tuples: NDArray[np.int64]) -> float:
        return float(np.mean(x[tuples[:, 0]] == x[tuples[:, 1]]))

    return statistic


def monte_carlo_inc(statistic: Callable[[NDArray[np.int64]], float], draw: Callable[[np.random.Generator],
                    NDArray[np.int64]], exact: float, rng: np.random.Generator, samples: int) -> tuple[float, float]:
    """Monte Carlo ``E_inc = E_E[(U_{f,E} - U)^2]``: mean and its standard error over ``samples >= 2`` draws
    ``rng -> tuples`` of ``E``, with the noise-free ``statistic`` (``tuples -> U_{f,E}``) and ``exact`` ``U``."""
    if isinstance(samples, bool) or not isinstance(samples, Integral) or samples < 2:
        raise ValueError(f"samples must be an integer of at least 2, got {samples!r}")
    squares = np.array([(statistic(draw(rng)) - exact) ** 2 for _ in range(int(samples))])
    return float(squares.mean()), float(squares.std(ddof=1) / math.sqrt(squares.size))


def _population_factor(population: int, edges: int) -> float:
    """``(N - m) / ((N - 1) m)``: Claim D.1's factor for ``m`` of ``N`` tuples without replacement."""
    if population <= 1 or edges >= population:
        return 0.0
    return (population - edges) / ((population - 1) * edges)


def design_factor(design: NDArray[np.int64], rows: int) -> float:
    r"""``F(E)`` with ``Var_pi(U_{f, pi(E)} - U) <= F(E) Var f <= F(E) range^2 / 4`` for every data set (``k = 2``)
    of ``rows`` rows and drawn pairs ``design`` (shape ``(m, 2)``; else ValueError; docs/umpc_analysis.md)."""
    tuples = np.asarray(design, dtype=np.int64)
    if tuples.ndim != 2 or tuples.shape[1] != 2:
        raise ValueError(f"design_factor needs a design of pairs, got shape {tuples.shape}")
    n, m = int(rows), int(tuples.shape[0])
    population = n * (n - 1) // 2
    if n < 4:  # a_0 = 0: too small for the elimination; Claim D.1's factor (N <= 3)
        return _population_factor(population, m)
    degrees = vertex_degrees(tuples, n).astype(float)
    _, multiplicity = np.unique(np.sort(tuples, axis=1), axis=0, return_counts=True)
    repeated = float(np.sum(multiplicity.astype(float) * (multiplicity - 1)))
    shared = float(np.sum(degrees * (degrees - 1))) - 2.0 * repeated
    disjoint = float(m) * (m - 1) - shared - repeated
    one, none = 2.0 * (n - 2), (n - 2) * (n - 3) / 2.0
    base = m + repeated - disjoint / none
    slope = shared - disjoint * one / none
    return max(0.0, base - slope / (n - 2), base + slope) / float(m) ** 2


def incompleteness_variance_bound(sampling: str, *, rows: int, degree: int, tuples: int | None,
                                  value_range: float, design: NDArray[np.int64] | None = None) -> float:
    r"""A data-independent upper bound on ``E_inc = E_E[(U_{f,E} - U)^2]`` from public values: the kernel's output
    range ``value_range``, ``n``, ``k``, ``|E|`` (docs/umpc_analysis.md); ValueError on a bad parameter."""
    if sampling not in SAMPLING_METHODS:
        raise ValueError(f"unknown sampling '{sampling}'; choose one of: {', '.join(SAMPLING_METHODS)}")
    if not value_range >= 0:
        raise ValueError(f"value_range must be non-negative, got {value_range}")
    if tuples is None:
        return 0.0
    population = tuple_count(rows, degree)
    m = check_positive_int(tuples, "number of tuples |E|")
    if m > population:
        raise ValueError(f"|E| = {m} exceeds the C({rows}, {degree}) = {population} tuples")
    spread = value_range ** 2 / 4.0
    if sampling == "bernoulli":
        if population == 1:
            return 0.0
        factor = max(0.0, population * inverse_size_mean(population, m / population) - 1.0) / (population - 1)
        return factor * spread
    if sampling == "balanced" and degree == 2 and design is not None:
        return design_factor(design, rows) * spread
    return _population_factor(population, m) * spread
