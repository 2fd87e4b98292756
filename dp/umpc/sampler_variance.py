r"""Error of Pi_U-MPC's release by tuple sampler: ``E_inc`` (which pairs) plus ``E_DP`` (the noise).

Sinh & Ramon, *Accurate, private, secure, federated U-statistics with higher degree*, App. D.1.2: for a
fixed sample of ``n`` rows and a degree-2 kernel ``f``, the release ``U_{f,E} + eta / (|E| scale)`` of
Protocol 3.1 misses the complete U-statistic ``U = U_{f, C_2^n}`` by

    E_tot - E_sample = E_inc + E_DP,
    E_inc = E_E[(U_{f,E} - U)^2],           E_DP = E_E[Var(eta | E)] / (|E| scale)^2

(the noise is independent of ``E`` given its calibration and has mean zero, so the cross term vanishes).
``N = C(n, 2)`` pairs, ``m`` the requested ``|E|``, ``Var f = Var_{Uni(C_2^n)} f`` the variance of the
kernel over all pairs.  What this module computes, per sampler of :mod:`dp.sampling`:

- uniform without replacement (``m`` distinct pairs): Claim D.1's exact
  ``E_inc = (N - m) / ((N - 1) m) * Var f`` (:func:`uniform_inc`);
- Bernoulli with ``q = m / N``, **ratio estimator** (divide by the realised ``|E| = S``, as
  :func:`dp.umpc.protocol.simulate` does): given ``S = s`` the set is uniform without replacement of size
  ``s``, so ``E_inc = Var f / (N - 1) * (N E[1/S | S >= 1] - 1)`` with ``S ~ Binomial(N, q)``
  conditioned on ``S >= 1`` as in :func:`dp.sampling.bernoulli_tuples` (:func:`bernoulli_inc`, exact
  up to the summation window of the binomial, ``> 40`` standard deviations);
- Bernoulli, **Horvitz-Thompson estimator** (divide by ``q N``, not by ``S``): the inclusions are
  independent, so ``E_inc = (1 - q) / (q N) * mean_{C_2^n} f^2`` exactly (:func:`bernoulli_inc` with
  ``estimator="ht"``): it pays ``mean f^2`` instead of ``Var f``, i.e. ``1 / (1 - U)`` times the ratio
  estimator's for a 0/1 kernel;
- BalancedSamp (Algorithm 1): no closed form (App. D.1.2 only bounds it by the uniform one), so
  :func:`monte_carlo_inc` estimates it by drawing ``E`` without noise.  :func:`balanced_inc_projection`
  is an explanatory approximation: with the Hoeffding projection ``h_1(i) = mean_{j != i} f(x_i, x_j) - U``,
  ``f(x_i, x_j) - U = h_1(i) + h_1(j) + r(i, j)``; a sampler whose every row has the same degree ``d``
  adds ``d sum_i h_1(i) = 0``, so only the residual ``r`` is left, of variance about
  ``Var f - 2 Var h_1`` (exactly ``Var f - 2 Var h_1 n / (n - 1)`` over uniform pairs), while uniform
  sampling pays the whole ``Var f``.  The gain of balancing is the share ``2 Var h_1 / Var f``.

``E_DP`` (Claim D.2, with the suite's calibration, :mod:`dp.umpc.protocol`): distributed discrete Laplace on
the integer sum, ``alpha = exp(-epsilon / (delta_max Delta_f))`` with the **realised** largest degree
``delta_max`` of the drawn ``E`` (App. C.2.3), and

    Var(eta) = m_p / (m_p - t) * 2 alpha / (1 - alpha)^2

for ``m_p`` parties calibrated against a coalition of ``t`` (``m_p / (m_p - t) = 1``: one central
discrete Laplace, Claim D.2's setting; ``2 alpha / (1 - alpha)^2 -> 2 (delta_max Delta_f / epsilon)^2``,
the continuous Laplace variance, as ``alpha -> 1``) (:func:`dp_variance`).  BalancedSamp has
``delta_max = ceil(2 m / n)``; uniform and Bernoulli have random degrees, about ``Binomial(n - 1, q)``
each, whose maximum is several standard deviations above ``2 m / n``.  :func:`degree_bound` gives a
data-independent ``delta`` with ``P(delta_max > delta) <= failure`` (union bound over the rows), the
calibration one would need if the noise could not depend on the drawn ``E``.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dp.calibration import discrete_laplace_alpha, distributed_laplace_variance
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
    """Moments of a degree-2 kernel over all ``N = C(n, 2)`` pairs of a fixed sample.

    :param n: rows.
    :param mean: ``U``, the complete U-statistic.
    :param mean_square: ``mean_{C_2^n} f^2``.
    :param projection_variance: ``Var h_1 = n^-1 sum_i h_1(i)^2`` with
        ``h_1(i) = mean_{j != i} f(x_i, x_j) - U`` (these sum to 0 over ``i``).
    """

    n: int
    mean: float
    mean_square: float
    projection_variance: float

    @property
    def pairs(self) -> int:
        """``N = C(n, 2)``."""
        return self.n * (self.n - 1) // 2

    @property
    def variance(self) -> float:
        """``Var_{Uni(C_2^n)} f = mean f^2 - U^2`` (Claim D.1)."""
        return max(0.0, self.mean_square - self.mean ** 2)


def duplicate_moments(values: ArrayLike) -> PairMoments:
    """:class:`PairMoments` of ``f(x, y) = I[x = y]`` from the category counts ``c`` (O(n log n)).

    ``U = sum c (c - 1) / (n (n - 1))``, ``f^2 = f``, and a row of category ``x`` has
    ``h_1 = (c_x - 1) / (n - 1) - U``.

    :param values: one categorical value per row (at least 2 rows).
    :raise ValueError: fewer than 2 rows.
    """
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
    """:class:`PairMoments` of any vectorised symmetric kernel, by all pairs (O(n^2) time, O(n) memory).

    :param values: rows, shape ``(n,)`` or ``(n, c)``.
    :param kernel: ``kernel(a, b)`` evaluated row-wise on two equally shaped arrays.
    :raise ValueError: fewer than 2 rows.
    """
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
    r"""Claim D.1, exact: ``E_inc = (N - m) / ((N - 1) m) * Var f`` for ``m`` pairs without replacement.

    :raise ValueError: ``m`` outside ``[1, N]``.
    """
    m = _check_edges(moments, edges)
    pairs = moments.pairs
    if pairs == 1:
        return 0.0
    return (pairs - m) / ((pairs - 1) * m) * moments.variance


def inverse_size_mean(pairs: int, probability: float) -> float:
    """``E[1 / S | S >= 1]`` for ``S ~ Binomial(pairs, probability)``, summed over +-40 standard deviations.

    :raise ValueError: ``probability`` outside ``(0, 1]``.
    """
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
    r"""``E_inc`` of Bernoulli sampling with ``q = m / N``, exact.

    ``estimator="ratio"`` (what :mod:`dp.umpc.protocol` releases, ``sum_E f / |E|``):
    ``Var f / (N - 1) * (N E[1/S | S >= 1] - 1)``.  ``estimator="ht"`` (Horvitz-Thompson,
    ``sum_E f / (q N)``): ``(1 - q) / (q N) * mean f^2``.

    :raise ValueError: unknown estimator or ``m`` outside ``[1, N]``.
    """
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
    r"""Approximate ``E_inc`` of a sampler with equal degrees: ``(N - m) / ((N - 1) m) (Var f - 2 Var h_1)``.

    An explanation, not an estimate to test against (the degrees of BalancedSamp differ by one
    when ``n`` does not divide ``2m``, it draws a multiset, and the residual's variance over a
    regular graph is not exactly its variance over uniform pairs); :func:`monte_carlo_inc` is the
    estimate.
    """
    m = _check_edges(moments, edges)
    pairs = moments.pairs
    if pairs == 1:
        return 0.0
    residual = max(0.0, moments.variance - 2.0 * moments.projection_variance)
    return (pairs - m) / ((pairs - 1) * m) * residual


def dp_variance(max_degree: int, edges: float, epsilon: float, *, sensitivity: int = 1, parties: int = 1,
                threshold: int = 0, scale: float = 1.0) -> float:
    r"""``Var(eta) / (|E| scale)^2`` for the suite's distributed discrete Laplace (Claim D.2, App. C.2.3).

    ``alpha = exp(-epsilon / (max_degree * sensitivity))`` and
    ``Var(eta) = parties / (parties - threshold) * 2 alpha / (1 - alpha)^2``.

    :param max_degree: ``delta_max`` the noise is calibrated with.
    :param edges: the divisor ``|E|`` (``q N`` for the Horvitz-Thompson estimator).
    :param sensitivity: ``Delta_f`` in fixed-point units.
    :param scale: fixed-point scale of the kernel output.
    """
    degree = check_positive_int(max_degree, "max_degree")
    check_epsilon(epsilon)
    parties, threshold = check_parties(parties, threshold)
    if not edges > 0:
        raise ValueError(f"edges must be positive, got {edges}")
    alpha = discrete_laplace_alpha(epsilon, degree * check_positive_int(sensitivity, "sensitivity"))
    return distributed_laplace_variance(alpha, parties, threshold) / (float(edges) * scale) ** 2


def degree_bound(n: int, edges: int, *, failure: float) -> int:
    r"""Smallest ``d`` with ``n P(Binomial(n - 1, q) > d) <= failure``, ``q = m / C(n, 2)``.

    Each row's degree under Bernoulli sampling is ``Binomial(n - 1, q)``; by the union bound the
    largest degree exceeds ``d`` with probability at most ``failure``.  (Uniform sampling's degrees
    are hypergeometric, with lighter tails, so the same ``d`` is valid there.)

    :raise ValueError: ``failure`` outside ``(0, 1)`` or ``m`` outside ``[1, C(n, 2)]``.
    """
    from scipy import stats

    n = check_positive_int(n, "n")
    if n < 2:
        raise ValueError(f"need at least 2 rows, got {n}")
    m = check_positive_int(edges, "number of pairs |E|")
    pairs = n * (n - 1) // 2
    if m > pairs:
        raise ValueError(f"|E| = {m} exceeds the C({n}, 2) = {pairs} pairs")
    if not 0.0 < failure < 1.0:
        raise ValueError(f"failure must lie in (0, 1), got {failure}")
    q = m / pairs
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
    """Monte Carlo ``E_inc = E_E[(U_{f,E} - U)^2]``: mean and its standard error over ``samples`` draws of ``E``.

    :param statistic: ``tuples -> U_{f,E}`` (noise-free).
    :param draw: ``rng -> tuples``, one draw of the sampler.
    :param exact: ``U``.
    :param samples: number of draws (at least 2).
    """
    if isinstance(samples, bool) or not isinstance(samples, Integral) or samples < 2:
        raise ValueError(f"samples must be an integer of at least 2, got {samples!r}")
    squares = np.array([(statistic(draw(rng)) - exact) ** 2 for _ in range(int(samples))])
    return float(squares.mean()), float(squares.std(ddof=1) / math.sqrt(squares.size))


# ------------------------------------------------------------------------ data-independent bounds
def _population_factor(population: int, edges: int) -> float:
    """``(N - m) / ((N - 1) m)``: Claim D.1's factor for ``m`` of ``N`` tuples without replacement."""
    if population <= 1 or edges >= population:
        return 0.0
    return (population - edges) / ((population - 1) * edges)


def design_factor(design: NDArray[np.int64], rows: int) -> float:
    r"""``F(E)`` with ``Var_pi(U_{f, pi(E)} - U) <= F(E) Var f <= F(E) range^2 / 4`` for every data set (``k = 2``).

    The variance is over a uniformly random relabelling ``pi`` of the ``n`` rows of the drawn design ``E``
    (a multiset of ``m`` pairs).  Derivation (finite population of the ``N = C(n, 2)`` pairs, ``g = f - U``,
    ``sum g = 0``): for ``j != l`` the relabelled pair ``(pi e_j, pi e_l)`` is uniform over the ordered pairs
    of pairs with the same overlap ``c = |e_j & e_l|``, so with ``sigma_c`` the mean of ``g(e) g(e')`` over
    those (``sigma_2 = Var f``) and ``P_c`` the number of ordered ``j != l`` of overlap ``c`` in ``E``,

        m^2 Var_pi = (m + P_2) sigma_2 + P_1 sigma_1 + P_0 sigma_0.

    ``(sum g)^2 = 0`` gives ``sigma_2 + a_1 sigma_1 + a_0 sigma_0 = 0`` (``a_1 = 2 (n - 2)``,
    ``a_0 = C(n - 2, 2)`` pairs meet a given pair in one / no row); ``sum_i (sum_j g(ij))^2 >= 0`` gives
    ``sigma_1 >= -sigma_2 / (n - 2)``; Cauchy-Schwarz ``sigma_1 <= sigma_2``.  Eliminating ``sigma_0``,

        m^2 Var_pi = (m + P_2 - P_0 / a_0) sigma_2 + (P_1 - P_0 a_1 / a_0) sigma_1,

    linear in ``sigma_1 = t sigma_2``, so its largest value is at ``t = -1/(n - 2)`` or ``t = 1``.
    ``P_1 + 2 P_2 = sum_i d_i (d_i - 1)`` (degrees ``d_i``) and ``P_2`` counts repeated pairs, all public.
    For an exchangeable sampler (BalancedSamp, uniform, Bernoulli: :mod:`dp.sampling`) ``E`` has the law of
    ``pi(E')``, so ``E_inc = E_{E'}[Var_pi]`` (Sinh & Ramon App. D.1.2): the factor of the drawn design bounds
    the incompleteness variance of that design, data-independently.  For uniform sampling without
    replacement its mean over designs is Claim D.1's ``(N - m) / ((N - 1) m)``.

    :param design: the drawn pairs, shape ``(m, 2)``; ``rows``: ``n``.
    :raise ValueError: a design that is not of pairs.
    """
    from dp.sampling import vertex_degrees

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
    r"""A data-independent upper bound on ``E_inc = E_E[(U_{f,E} - U)^2]`` for a kernel with values in an
    interval of length ``value_range`` (public: the kernel's output range), ``n``, ``k``, ``|E|`` public.

    Every formula of this module is ``factor * Var f`` and ``Var f <= value_range^2 / 4`` (Popoviciu), so:

    - ``tuples=None`` (all ``C(n, k)`` tuples): 0, no sampling error;
    - ``uniform``: Claim D.1 (Sinh & Ramon App. D.1.2, :func:`uniform_inc`, any ``k``):
      ``(N - m) / ((N - 1) m) * value_range^2 / 4``, ``N = C(n, k)``;
    - ``bernoulli`` (ratio estimator, :func:`bernoulli_inc`, any ``k``):
      ``(N E[1/S | S >= 1] - 1) / (N - 1) * value_range^2 / 4``;
    - ``balanced`` (BalancedSamp): with the drawn pairs ``design`` (``k = 2``), :func:`design_factor` of that
      design (a proof, through the exchangeability of BalancedSamp); otherwise (``k >= 3``) the paper's
      Claim D.1 bound, the uniform one (App. D.1.2 argues BalancedSamp is a stratified sample).  That
      argument is not a proof: for ``k = 2``, ``n = 60``, ``|E| = 120`` and two equal categories of the
      duplicate kernel, BalancedSamp's E_inc is 0.002094 +- 0.000021 (20000 draws) against Claim D.1's
      0.001943, while :func:`design_factor` gives 0.002094; for ``k >= 3`` the value is the paper's
      claim, not ours.

    :raise ValueError: unknown sampling, ``|E|`` outside ``[1, C(n, k)]`` or a negative range.
    """
    from dp.sampling import SAMPLING_METHODS, tuple_count

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
