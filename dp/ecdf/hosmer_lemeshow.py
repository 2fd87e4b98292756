r"""A differentially private Hosmer-Lemeshow (HL) calibration statistic (simulated path).

Barczewski, Mawass & Ramon, "Differentially Private Empirical Cumulative Distribution Functions":
§5.2 (eq. 5, Algorithm 2, Theorem 2), App. A.2 (proof of Theorem 2), §6.6 (Fig. 6).

What is computed
----------------
Each row is a predicted probability ``p_i = M(x_i)`` in ``[0, 1]`` and a label ``y_i`` in ``{0, 1}``.
The HL statistic (eq. 5) splits the rows into ``Q`` quantile groups of the predicted probability and
compares, in every group ``q`` and for ``s = 1`` (positives) and ``s = 0`` (negatives), the observed
count ``O_{s,q}`` with the expected count ``E_{1,q} = sum p_i``, ``E_{0,q} = sum (1 - p_i)``::

    H = sum_q [ (O_{1,q} - E_{1,q})^2 / E_{1,q} + (O_{0,q} - E_{0,q})^2 / E_{0,q} ]

and is compared with a chi-square distribution with ``Q - 2`` degrees of freedom (p-value
``chi2.sf(H, Q - 2)``).  Algorithm 2 computes it from U-statistics only:

1. ``eps' = epsilon / (L + 9)``, ``L = ceil(log2 N)`` the depth of the ECDF tree on ``N`` grid points;
2. the ECDF ``F^_M`` of the predicted probabilities is released once with the tree mechanism
   (:mod:`dp.ecdf.tree`, eq. 2) at budget ``(L + 1) eps'`` (node noise of scale ``1/eps'``);
3. the group boundaries ``t_q = F^_M^{-1}(q / Q)``, ``q = 1..Q-1`` (``t_0 = 0``, ``t_Q = 1``) are
   found by Algorithm 1 (:func:`smoothing.inverse_ecdf`) on the released curve -- raw, as in the
   paper, or after the monotone smoothing of eq. (3) (``smoothed=True``);
4. the ``4 Q`` sums ``E_{s,q}``, ``O_{s,q}`` over the groups ``t_{q-1} < p <= t_q`` are released with
   discrete Laplace noise (lines 8-9), and ``H`` is computed from them (line 11).

Empty groups.  Two equal boundaries ``t_{q-1} = t_q`` (ties in the data, a flat stretch of the released
ECDF, or more groups than distinct quantiles) leave group ``q`` empty whatever the rows; so does
``t_{Q-1} = 1`` for the last group.  That is known from the boundaries alone (public), so such a group is
left out of ``H`` and of the degrees of freedom, ``Q' - 2`` with ``Q'`` the groups formed; its noisy
counts are still released, and being pure noise would add about 2 to ``H`` per group otherwise.  With
fewer than three groups left there is no test (p-value nan).

Groups are half-open, ``G_1 = {p <= t_1}``, ``G_q = {t_{q-1} < p <= t_q}``, ``G_Q = {p > t_{Q-1}}``,
so that every row lies in exactly one group (the paper's ``M[l, u]`` uses closed intervals, which
would count a row equal to a boundary in two groups and break the sensitivity argument below).
:func:`exact_hosmer_lemeshow` applies the same rule to the exact quantiles
``t_q = inf{x : F(x) >= q/Q}`` of the data (the inverted-CDF quantile), so with zero noise, and
probabilities on the grid, both give the same groups and the same ``H``.

Integers and fixed point.  Probabilities enter in fixed point with ``precision = b`` fractional
bits, ``k_i = round(p_i 2^b)`` (:class:`secure.intake.ColumnSpec` ``("score", 0, 1, b)``); the
released ``E`` sums are the integers ``sum k_i`` and ``sum (2^b - k_i)`` (divide by ``2^b`` to read
them), the ``O`` sums are counts.  The ECDF grid is ``tau_i = i / N``, ``i = 1..N``, with ``N`` a power
of two not above ``2^b``, so every boundary is a fixed-point number and ``L = log2 N`` exactly.

Privacy accounting (Theorem 2, App. A.2)
----------------------------------------
Adjacency: replace one row ``(p, y) -> (p', y')``; ``n`` is public.  Let ``eps' = eps / (L + 9)``.

* ECDF.  Replacing a row changes the ECDF counts by ``+-1`` on one interval of grid indices, which
  Lemma 1 writes as a ``+-1`` combination of at most ``L + 1`` tree nodes.  Every node gets
  ``DLap(exp(-eps'))`` (scale ``1/eps'``), so the whole curve is ``(L + 1) eps'``-DP, however many
  inverse evaluations read it: the ``Q - 1`` calls of Algorithm 1 (and the smoothing) are
  post-processing.  This is :func:`dp.ecdf.tree.plan_tree_noise` with ``epsilon = (L + 1) eps'``.
* Group statistics, for boundaries fixed by the released ECDF (adaptive sequential composition).
  The row moves from its group ``g`` to a group ``g'`` (possibly ``g = g'``).  In fixed-point units:

  - ``g != g'``: ``E_{1,g} -= k``, ``E_{1,g'} += k'``, ``E_{0,g} -= 2^b - k``, ``E_{0,g'} += 2^b - k'``,
    ``O_{y,g} -= 1``, ``O_{y',g'} += 1``: **eight** of the ``4Q`` statistics change (the paper's count),
    each by at most its own sensitivity ``Delta_E = 2^b`` (one unit of probability) or
    ``Delta_O = 1``;
  - ``g = g'``: ``E_{1,g}`` and ``E_{0,g}`` change by ``-+(k' - k)``, ``|k' - k| <= 2^b``, and if
    ``y != y'`` two counts change by 1.

  So each statistic has sensitivity ``Delta_E = 2^b`` resp. ``Delta_O = 1``, at most 8 of them move,
  and with independent ``DLap(exp(-eps'/Delta))`` noise on each (scale ``Delta/eps'``) the ``4Q``
  statistics together are ``8 eps'``-DP: the paper's accounting (``accounting="paper"``).
  Total: ``(L + 1) eps' + 8 eps' = eps``.

  Sharper: measured in the weighted L1 norm ``||d|| = sum_E |d_c| / 2^b + sum_O |d_c|``, the change is
  at most **4** in both cases (``g != g'``: ``(k + k' + 2^b - k + 2^b - k') / 2^b + 2 = 4``;
  ``g = g'``: ``2 |k' - k| / 2^b + 2 <= 4``).  With noise of scale ``Delta/eps'`` the privacy loss
  of the statistics is therefore at most ``4 eps'``: the paper's ``8 eps'`` is conservative by a
  factor of 2.  ``accounting="joint"`` spends the same ``8 eps'`` on this joint sensitivity, i.e.
  noise of scale ``Delta/(2 eps')`` (a quarter of the variance); the total is still exactly
  ``eps``, and eps' is still ``eps/(L + 9)``.

Noise.  All noise is integer (discrete Laplace), drawn as in the secure protocol: each of the
``m`` parties contributes a difference of two ``Polya(1/(m - t), alpha)`` variables per node and per
statistic (:func:`secure.noise.party.polya_difference`, OS randomness unless a test passes ``rng``), so
any ``m - t`` honest parties alone supply the calibrated noise and the total variance is
``m/(m - t)`` times that of one ``DLap(alpha)``.

Post-processing choices (no privacy cost: functions of released values and public constants only):
boundaries are made non-decreasing (``maximum.accumulate``; Algorithm 1 on one fixed curve is
already monotone in ``q``); noisy counts below 0 are raised to 0 and noisy expected counts below
``expected_floor`` (default 1, one row) are raised to it before entering a denominator of eq. (5).
When every true ``E_{s,q} >= expected_floor`` these are projections on convex sets containing the
truth, so they never increase any cell's error; without them a noisy ``E <= 0`` would make ``H``
negative or infinite.  The released ``expected``/``observed`` values are the raw noisy ones.

Threat model
------------
Passive (semi-honest), static adversary corrupting at most ``t < m/2`` of the ``m`` parties (MPyC's
Shamir threshold).  In the secure protocol each party computes its own ECDF counts and group sums
in the clear, shares them together with its noise shares, and only the noisy totals are opened; a
coalition of ``t`` parties learns only the released ECDF and ``E``/``O`` statistics (and its own
shares), which are ``epsilon``-DP against it because the honest parties' noise alone is calibrated.
This module is the *simulated* path (one process, all rows at hand, the same integer statistics
and the same per-party noise draws) used for Monte Carlo experiments such as Fig. 6; the MPyC path
is :mod:`dp.ecdf.hosmer_lemeshow_secure` (the job ``scenarios.hosmer_lemeshow``), equal to this one for
the same draws.  Probabilities outside ``[0, 1]`` are rejected (the secure path would clip
them to the declared domain), so no row moves a statistic by more than its sensitivity.
"""
from __future__ import annotations

import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats

from dp.calibration import discrete_laplace_log_alpha, distributed_laplace_variance, party_noise_shape
from dp.ecdf.grid import prefix_incidence, tree_depth, true_counts, uniform_grid
from dp.ecdf.tree import TreeNoisePlan, noisy_counts, plan_tree_noise
from dp.validation import check_epsilon, check_finite, check_integer, check_number, check_parties, check_positive_int
from secure.intake import ColumnSpec
from secure.noise.party import polya_difference
from smoothing.inverse import inverse_ecdf
from smoothing.monotone import smooth_ecdf

__all__ = [
    "ACCOUNTING_MODES",
    "STATISTICS_NODES",
    "MAX_PRECISION",
    "HosmerLemeshowBudget",
    "HosmerLemeshowQuery",
    "HosmerLemeshowRelease",
    "HosmerLemeshowResult",
    "group_statistics",
    "HosmerLemeshowTerms",
    "hosmer_lemeshow_terms",
    "hosmer_lemeshow_statistic",
    "empty_groups",
    "HosmerLemeshowTest",
    "hosmer_lemeshow_test",
    "exact_hosmer_lemeshow",
    "private_hosmer_lemeshow",
    "party_statistic_draws",
    "BAND_DRAWS",
    "BAND_SEED",
    "HosmerLemeshowBand",
    "noise_band",
    "release_boundaries",
    "relative_squared_error",
]

#: ``paper``: each of the 4Q statistics is eps'-DP for its own sensitivity (8 change: 8 eps');
#: ``joint``: the 4Q-vector's weighted L1 sensitivity 4 gets the same 8 eps' (half the noise scale).
ACCOUNTING_MODES: tuple[str, ...] = ("paper", "joint")

#: Number of eps' shares spent on the group statistics (the ``9 - 1`` of ``L + 9``).
STATISTICS_NODES: int = 8

#: Weighted L1 sensitivity of the 4Q statistics (E in units of 2^b, O in counts) under replace-one.
JOINT_SENSITIVITY: int = 4

#: Largest fixed-point precision: keeps ``n 2^b`` far inside int64 and the Polya means of the
#: E noise (about ``2^b / eps'``) below :data:`secure.noise.party.MAX_POLYA_MEAN` for sensible budgets.
MAX_PRECISION: int = 24


# --------------------------------------------------------------------------------------------------
# validation helpers

def _check_probabilities(probabilities: npt.ArrayLike) -> np.ndarray:
    data = np.asarray(probabilities)
    if data.dtype == np.bool_ or not (np.issubdtype(data.dtype, np.integer)
                                      or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"probabilities must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"probabilities must be one-dimensional, got shape {data.shape}")
    if data.shape[0] == 0:
        raise ValueError("probabilities must contain at least one row, got 0")
    values = data.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("probabilities must be finite")
    outside = values[(values < 0.0) | (values > 1.0)]
    if outside.size:
        raise ValueError(f"probabilities must lie in [0, 1], got {outside[0]:g}")
    return values


def _check_labels(labels: npt.ArrayLike, rows: int) -> np.ndarray:
    data = np.asarray(labels)
    if not (data.dtype == np.bool_ or np.issubdtype(data.dtype, np.integer)
            or np.issubdtype(data.dtype, np.floating)):
        raise TypeError(f"labels must be numeric, got dtype {data.dtype}")
    if data.ndim != 1:
        raise ValueError(f"labels must be one-dimensional, got shape {data.shape}")
    if data.shape[0] != rows:
        raise ValueError(f"labels must have one entry per probability ({rows}), got {data.shape[0]}")
    values = data.astype(np.float64)
    bad = values[(values != 0.0) & (values != 1.0)]
    if bad.size:
        raise ValueError(f"labels must be 0 or 1, got {bad[0]:g}")
    return values.astype(np.int64)


def _check_noise(noise: npt.ArrayLike | None, name: str, groups: int) -> np.ndarray | None:
    if noise is None:
        return None
    array = np.asarray(noise)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != (2, groups):
        raise ValueError(f"{name} must have shape (2, {groups}), got {array.shape}")
    return array.astype(np.int64)


# --------------------------------------------------------------------------------------------------
# budget and query

@dataclass(frozen=True)
class HosmerLemeshowBudget:
    """Theorem 2's split of ``epsilon`` for a tree of depth ``L``.

    ``eps' = epsilon / (L + 9)``; the ECDF gets ``(L + 1) eps'`` and the ``4 Q`` group statistics
    ``8 eps'``; the parts add up to ``epsilon``.

    :param epsilon: total budget, positive.
    :param depth: tree depth ``L >= 0``.
    :raise ValueError: if ``epsilon`` is not positive or ``depth`` is negative.
    """

    epsilon: float
    depth: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        depth = check_integer(self.depth, "depth")
        if depth < 0:
            raise ValueError(f"depth must be non-negative, got {self.depth}")
        object.__setattr__(self, "depth", depth)

    @property
    def epsilon_prime(self) -> float:
        """``eps' = epsilon / (L + 9)``."""
        return self.epsilon / (self.depth + 1 + STATISTICS_NODES)

    @property
    def ecdf_epsilon(self) -> float:
        """``(L + 1) eps'``: the whole released ECDF, read by every inverse evaluation."""
        return (self.depth + 1) * self.epsilon_prime

    @property
    def statistics_epsilon(self) -> float:
        """``8 eps'``: the ``4 Q`` released ``E`` and ``O`` statistics together."""
        return STATISTICS_NODES * self.epsilon_prime

    def parts(self) -> dict[str, float]:
        """The per-part budgets (they add up to :attr:`epsilon`).

        :return: ``{"ecdf": (L+1) eps', "statistics": 8 eps'}``.
        """
        return {"ecdf": self.ecdf_epsilon, "statistics": self.statistics_epsilon}


@dataclass(frozen=True)
class HosmerLemeshowQuery:
    """What is released: the budget, ``Q``, the ECDF grid, the fixed point and post-processing.

    :param epsilon: total privacy budget of Algorithm 2 (ECDF and group statistics), positive.
    :param groups: number of quantile groups ``3 <= Q <= N`` (the test has ``Q - 2`` degrees of freedom, fewer
        when equal released boundaries leave groups empty: :func:`empty_groups`).
    :param grid_points: number ``N`` of ECDF grid points ``i / N``, a power of two in
        ``[2, 2^precision]``; the tree depth is ``L = log2 N``.
    :param precision: fractional bits ``b`` of the fixed-point probabilities, in ``[1, 24]``.
    :param smoothed: find the boundaries on the monotone-smoothed ECDF (eq. 3) instead of the raw
        released one (Algorithm 2 as printed uses the raw one).
    :param norm: ``p`` of the smoothing (1 or 2); used only when ``smoothed``.
    :param accounting: ``"paper"`` (each statistic eps'-DP, 8 of them change) or ``"joint"`` (the
        joint weighted-L1 sensitivity 4 gets the same ``8 eps'``: half the noise scale).
    :param expected_floor: noisy expected counts below this (in rows) are raised to it before they
        divide in eq. (5) (post-processing), positive.
    :raise ValueError: on an invalid parameter, e.g. ``epsilon must be positive, got 0``.
    :raise TypeError: if a parameter has the wrong type.
    """

    epsilon: float
    _: KW_ONLY
    groups: int = 10
    grid_points: int = 1024
    precision: int = 16
    smoothed: bool = False
    norm: int = 2
    accounting: str = "paper"
    expected_floor: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        groups = check_positive_int(self.groups, "groups")
        if groups < 3:
            raise ValueError(f"groups must be at least 3, got {self.groups}")
        object.__setattr__(self, "groups", groups)
        precision = check_integer(self.precision, "precision")
        if not 1 <= precision <= MAX_PRECISION:
            raise ValueError(f"precision must lie in [1, {MAX_PRECISION}] bits, got {self.precision}")
        object.__setattr__(self, "precision", precision)
        points = check_integer(self.grid_points, "grid_points")
        if points < 2:
            raise ValueError(f"grid_points must be at least 2, got {self.grid_points}")
        if points & (points - 1):
            raise ValueError(f"grid_points must be a power of two, got {self.grid_points}")
        if points > 2**precision:
            raise ValueError(f"grid_points must be at most 2**precision = {2**precision}, got {self.grid_points}")
        if groups > points:
            raise ValueError(f"groups must be at most grid_points = {points} (the group boundaries lie on the ECDF "
                             f"grid), got {groups}")
        object.__setattr__(self, "grid_points", points)
        if not isinstance(self.smoothed, bool):
            raise TypeError(f"smoothed must be a bool, got {self.smoothed!r}")
        norm = check_integer(self.norm, "norm")
        if norm not in (1, 2):
            raise ValueError(f"norm must be 1 or 2, got {self.norm}")
        object.__setattr__(self, "norm", norm)
        if self.accounting not in ACCOUNTING_MODES:
            raise ValueError(f"accounting must be one of {', '.join(ACCOUNTING_MODES)}, got {self.accounting!r}")
        floor = check_finite(self.expected_floor, "expected_floor")
        if floor <= 0:
            raise ValueError(f"expected_floor must be positive, got {self.expected_floor}")
        object.__setattr__(self, "expected_floor", floor)

    @property
    def depth(self) -> int:
        """Tree depth ``L = log2 N``."""
        return tree_depth(self.grid_points)

    @property
    def budget(self) -> HosmerLemeshowBudget:
        """Theorem 2's split of :attr:`epsilon`."""
        return HosmerLemeshowBudget(self.epsilon, self.depth)

    @property
    def scale(self) -> int:
        """Fixed-point scale ``2^b``: the sensitivity ``Delta_E`` of an expected-count sum."""
        return 2**self.precision

    @property
    def spec(self) -> ColumnSpec:
        """The fixed-point column of predicted probabilities, domain ``[0, 1]``."""
        return ColumnSpec("score", 0.0, 1.0, self.precision)

    @property
    def grid(self) -> np.ndarray:
        """The ECDF grid ``tau_i = i / N``, ``i = 1..N`` (exact dyadic fractions)."""
        step = 1.0 / self.grid_points
        grid = uniform_grid(step, 1.0, step)
        if grid.shape[0] != self.grid_points:  # cannot happen for a power of two; guard the contract
            raise RuntimeError(f"uniform grid has {grid.shape[0]} points, expected {self.grid_points}")
        return grid

    @property
    def statistics_rate(self) -> float:
        """Privacy loss per unit of sensitivity of each statistic's noise: ``eps'`` (paper) or
        ``2 eps'`` (joint, ``8 eps' / 4``).  The noise scale is ``Delta / rate``."""
        prime = self.budget.epsilon_prime
        if self.accounting == "joint":
            return STATISTICS_NODES * prime / JOINT_SENSITIVITY
        return prime

    @property
    def statistics_loss_bound(self) -> float:
        """Proven privacy loss of the released statistics: ``4 * rate`` (``<= 8 eps'``)."""
        return JOINT_SENSITIVITY * self.statistics_rate

    @property
    def expected_log_alpha(self) -> float:
        """``log alpha`` of the noise on an expected-count sum (fixed point): ``-rate / 2^b``."""
        return discrete_laplace_log_alpha(self.statistics_rate, self.scale)

    @property
    def observed_log_alpha(self) -> float:
        """``log alpha`` of the noise on an observed count: ``-rate``."""
        return discrete_laplace_log_alpha(self.statistics_rate, 1)

    def tree_plan(self, *, parties: int = 1, threshold: int = 0) -> TreeNoisePlan:
        """The ECDF node-noise plan: ``epsilon = (L + 1) eps'``, i.e. node scale ``1/eps'``.

        :param parties: number of parties ``m >= 1``.
        :param threshold: coalition size ``t`` with ``2 t < m``.
        :raise ValueError: if ``(parties, threshold)`` is invalid.
        """
        return plan_tree_noise(epsilon=self.budget.ecdf_epsilon, points=self.grid_points,
                               parties=parties, threshold=threshold)

    def expected_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one expected count, in rows^2 (fixed point / ``4^b``).

        :param parties: number of parties ``m >= 1``.
        :param threshold: coalition size ``t`` with ``2 t < m``.
        :raise ValueError: if ``(parties, threshold)`` is invalid.
        """
        alpha = math.exp(self.expected_log_alpha)
        return distributed_laplace_variance(alpha, parties, threshold) / float(self.scale) ** 2

    def observed_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one observed count.

        :param parties: number of parties ``m >= 1``.
        :param threshold: coalition size ``t`` with ``2 t < m``.
        :raise ValueError: if ``(parties, threshold)`` is invalid.
        """
        alpha = math.exp(self.observed_log_alpha)
        return distributed_laplace_variance(alpha, parties, threshold)


# --------------------------------------------------------------------------------------------------
# results

@dataclass(frozen=True)
class HosmerLemeshowResult:
    """An exact (non-private) HL statistic with its groups.

    :ivar statistic: ``H`` of eq. (5).
    :ivar p_value: ``chi2.sf(H, Q' - 2)`` (nan without degrees of freedom).
    :ivar boundaries: ``t_0 = 0 <= t_1 <= ... <= t_Q = 1``.
    :ivar expected: ``E_{s,q}``, shape ``(2, Q)``, row ``s`` (0 negatives, 1 positives), in rows.
    :ivar observed: ``O_{s,q}``, shape ``(2, Q)``, counts.
    :ivar degrees_of_freedom: ``Q' - 2``, ``Q'`` the groups not empty by construction (:func:`empty_groups`).
    :ivar empty: the groups empty by construction, bool ``(Q,)``.
    """

    statistic: float
    p_value: float
    boundaries: np.ndarray
    expected: np.ndarray
    observed: np.ndarray
    degrees_of_freedom: int
    empty: np.ndarray


@dataclass(frozen=True)
class HosmerLemeshowRelease:
    """The released private HL statistic and everything Algorithm 2 publishes.

    :ivar statistic: ``H`` from the post-processed noisy statistics.
    :ivar p_value: ``chi2.sf(H, Q - 2)``.
    :ivar boundaries: ``t_0 = 0 <= t_1 <= ... <= t_Q = 1`` from the released ECDF.
    :ivar expected: noisy released ``E_{s,q}`` in rows (fixed-point sum / ``2^b``), shape ``(2, Q)``.
    :ivar observed: noisy released ``O_{s,q}``, int, shape ``(2, Q)``.
    :ivar ecdf: the released ECDF ``F^`` on :attr:`grid` (raw, not monotone).
    :ivar smoothed_ecdf: the smoothed ECDF if the boundaries came from it, else ``None``.
    :ivar grid: the ECDF grid ``i / N``.
    :ivar budget: the split of epsilon (Theorem 2).
    :ivar accounting: ``paper`` or ``joint``.
    :ivar n: number of rows (public).
    :ivar parties: ``m``; ``threshold``: ``t``.
    :ivar degrees_of_freedom: ``Q' - 2``, ``Q'`` the groups not empty by construction (:func:`empty_groups`).
    :ivar floored: number of expected counts raised to the floor before dividing.
    :ivar ecdf_count_variance: variance of the noise on one released ECDF count.
    :ivar expected_noise_variance: variance of the noise on one ``E`` (rows^2).
    :ivar observed_noise_variance: variance of the noise on one ``O``.
    :ivar empty: the groups empty by construction (equal released boundaries), left out of ``H``, bool ``(Q,)``.
    """

    statistic: float
    p_value: float
    boundaries: np.ndarray
    expected: np.ndarray
    observed: np.ndarray
    ecdf: np.ndarray
    smoothed_ecdf: np.ndarray | None
    grid: np.ndarray
    budget: HosmerLemeshowBudget
    accounting: str
    n: int
    parties: int
    threshold: int
    degrees_of_freedom: int
    floored: int
    ecdf_count_variance: float
    expected_noise_variance: float
    observed_noise_variance: float
    empty: np.ndarray

    @property
    def epsilon(self) -> float:
        """Total budget spent (``= budget.epsilon``)."""
        return self.budget.epsilon


# --------------------------------------------------------------------------------------------------
# the pieces of Algorithm 2

def group_statistics(fixed_point: npt.ArrayLike, labels: npt.ArrayLike, bounds: npt.ArrayLike, *,
                     scale: int) -> tuple[np.ndarray, np.ndarray]:
    """The exact integer statistics of lines 8-9: ``E`` in fixed point and ``O`` counts per group.

    Row ``i`` with fixed-point probability ``k_i`` lies in group ``q`` (0-based) when
    ``bounds[q-1] < k_i <= bounds[q]`` (``bounds`` are the ``Q - 1`` interior boundaries, in fixed
    point; the first group has no lower end, the last no upper end).  This is what each party
    computes on its own rows in the secure path; replacing one row changes at most 8 entries,
    each ``E`` entry by at most ``scale`` and each ``O`` entry by at most 1, and the weighted L1
    norm ``sum |dE| / scale + sum |dO|`` by at most 4 (module docstring).

    :param fixed_point: ``k_i`` in ``[0, scale]``, one-dimensional integers.
    :param labels: ``y_i`` in ``{0, 1}``, same length.
    :param bounds: the ``Q - 1`` interior boundaries in fixed point, non-decreasing.
    :param scale: ``2^b``, positive.
    :return: ``(expected, observed)``, int64 arrays of shape ``(2, Q)``, row ``s``:
        ``expected[1, q] = sum k_i``, ``expected[0, q] = sum (scale - k_i)``, ``observed[s, q]`` the
        number of rows with label ``s``, all over group ``q``.
    :raise ValueError: on shapes, ranges or unsorted bounds.
    :raise TypeError: if an array is not of an integer dtype.
    """
    unit = check_positive_int(scale, "scale")
    values = np.asarray(fixed_point)
    if values.dtype == np.bool_ or not np.issubdtype(values.dtype, np.integer):
        raise TypeError(f"fixed_point must be an integer array, got dtype {values.dtype}")
    if values.ndim != 1:
        raise ValueError(f"fixed_point must be one-dimensional, got shape {values.shape}")
    values = values.astype(np.int64)
    if values.size and (values.min() < 0 or values.max() > unit):
        raise ValueError(f"fixed_point must lie in [0, {unit}]")
    ys = _check_labels(labels, values.shape[0])
    edges = np.asarray(bounds)
    if edges.dtype == np.bool_ or not np.issubdtype(edges.dtype, np.integer):
        raise TypeError(f"bounds must be an integer array, got dtype {edges.dtype}")
    if edges.ndim != 1:
        raise ValueError(f"bounds must be one-dimensional, got shape {edges.shape}")
    if np.any(np.diff(edges) < 0):
        raise ValueError("bounds must be non-decreasing")
    groups = edges.shape[0] + 1
    group = np.searchsorted(edges.astype(np.int64), values, side="left")
    expected = np.zeros((2, groups), dtype=np.int64)
    observed = np.zeros((2, groups), dtype=np.int64)
    np.add.at(expected[1], group, values)
    np.add.at(expected[0], group, unit - values)
    np.add.at(observed[1], group, ys)
    np.add.at(observed[0], group, 1 - ys)
    return expected, observed


@dataclass(frozen=True)
class HosmerLemeshowTerms:
    """The cells of eq. (5), one per class ``s`` and group ``q``, and which counts were raised first.

    :ivar cells: ``(O_{s,q} - E_{s,q})^2 / E_{s,q}``, shape ``(2, Q)`` (row 0 negatives, row 1 positives),
        from the counts as used (private mode: after raising); ``inf`` for an exact ``E = 0 < O``.
    :ivar expected_raised: ``E`` cells raised to the floor before dividing (private mode), bool ``(2, Q)``.
    :ivar observed_raised: ``O`` cells raised to 0 (private mode), bool ``(2, Q)``.
    """

    cells: np.ndarray
    expected_raised: np.ndarray
    observed_raised: np.ndarray

    @property
    def per_group(self) -> np.ndarray:
        """Each group's contribution to ``H``: ``cells[0, q] + cells[1, q]``, shape ``(Q,)``."""
        return np.asarray(self.cells[0] + self.cells[1], dtype=np.float64)

    @property
    def statistic(self) -> float:
        """``H``: the sum of all cells."""
        return float(np.sum(self.cells))


def hosmer_lemeshow_terms(expected: npt.ArrayLike, observed: npt.ArrayLike, *,
                          floor: float | None = None, empty: npt.ArrayLike | None = None) -> HosmerLemeshowTerms:
    """The cells of eq. (5) from ``E_{s,q}`` and ``O_{s,q}`` (arrays of shape ``(2, Q)``); ``H`` is their sum.

    Exact mode (``floor=None``): a cell with ``E = 0`` adds 0 if ``O = 0`` (an empty cell) and
    ``inf`` otherwise.  Private mode (``floor > 0``, post-processing of released values): ``O`` is
    raised to at least 0 and ``E`` to at least ``floor`` before the division.

    :param expected: expected counts (rows), shape ``(2, Q)``.
    :param observed: observed counts, shape ``(2, Q)``.
    :param floor: the smallest denominator in private mode, or ``None`` for exact mode.
    :param empty: groups empty by construction (:func:`empty_groups`), bool ``(Q,)``: their cells are 0 and
        nothing of theirs is raised (default: none).
    :return: the cells and the masks of raised counts.
    :raise ValueError: on mismatched shapes, non-finite values, a negative ``E`` in exact mode or a
        non-positive floor.
    """
    e = np.asarray(expected, dtype=np.float64)
    o = np.asarray(observed, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] != 2 or e.shape != o.shape:
        raise ValueError(f"expected and observed must both have shape (2, Q), got {e.shape} and {o.shape}")
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(o))):
        raise ValueError("expected and observed must be finite")
    none = np.zeros(e.shape, dtype=bool)
    left_out = none.copy()
    if empty is not None:
        mask = np.asarray(empty, dtype=bool)
        if mask.shape != (e.shape[1],):
            raise ValueError(f"empty must have shape ({e.shape[1]},), got {mask.shape}")
        left_out[:, mask] = True
    if floor is None:
        if np.any(e < 0) or np.any(o < 0):
            raise ValueError("exact expected and observed counts must be non-negative")
        empty = e == 0
        safe = np.where(empty, 1.0, e)
        cells = np.where(empty, np.where(o > 0, math.inf, 0.0), (o - e) ** 2 / safe)
        return HosmerLemeshowTerms(np.where(left_out, 0.0, cells), none, none.copy())
    bottom = check_finite(floor, "floor")
    if bottom <= 0:
        raise ValueError(f"floor must be positive, got {floor}")
    e_used = np.maximum(e, bottom)
    o_used = np.maximum(o, 0.0)
    return HosmerLemeshowTerms(np.where(left_out, 0.0, (o_used - e_used) ** 2 / e_used), (e < bottom) & ~left_out,
                               (o < 0) & ~left_out)


def hosmer_lemeshow_statistic(expected: npt.ArrayLike, observed: npt.ArrayLike, *,
                              floor: float | None = None, empty: npt.ArrayLike | None = None) -> tuple[float, int]:
    """``H`` of eq. (5) from ``E_{s,q}`` and ``O_{s,q}`` (arrays of shape ``(2, Q)``): the sum of the cells of
    :func:`hosmer_lemeshow_terms` (its modes, raising, groups left out and errors).

    :return: ``(H, number of E cells raised to the floor)``.
    """
    terms = hosmer_lemeshow_terms(expected, observed, floor=floor, empty=empty)
    return terms.statistic, int(np.count_nonzero(terms.expected_raised))


def empty_groups(bounds: npt.ArrayLike, *, top: float) -> np.ndarray:
    """The groups that no row can fall in, from the ``Q - 1`` interior boundaries alone (public).

    Group ``q`` (1-based) is ``t_{q-1} < p <= t_q``: empty when ``t_{q-1} = t_q`` (``1 < q < Q``), and the
    last group ``p > t_{Q-1}`` when ``t_{Q-1} >= top`` (no probability lies above 1).  The first group
    ``p <= t_1`` is never empty by construction.

    :param bounds: the interior boundaries, non-decreasing (fixed-point integers or probabilities).
    :param top: the largest possible value (``2^b`` in fixed point, 1.0 for probabilities).
    :return: bool array of shape ``(Q,)``.
    """
    edges = np.asarray(bounds)
    empty = np.zeros(edges.shape[0] + 1, dtype=bool)
    if edges.shape[0]:
        empty[1:-1] = edges[:-1] == edges[1:]
        empty[-1] = bool(edges[-1] >= top)
    return empty


@dataclass(frozen=True)
class HosmerLemeshowTest:
    """``H``, its degrees of freedom and p-value, from the (noisy) counts and the public boundaries.

    :ivar statistic: ``H`` over the groups not empty by construction.
    :ivar p_value: ``chi2.sf(H, Q' - 2)``, nan if ``Q' < 3``.
    :ivar degrees_of_freedom: ``Q' - 2`` (``Q'`` the groups left; may be below 1).
    :ivar floored: expected counts raised to the floor before dividing (private mode).
    :ivar empty: the groups left out, bool ``(Q,)``.
    """

    statistic: float
    p_value: float
    degrees_of_freedom: int
    floored: int
    empty: np.ndarray


def hosmer_lemeshow_test(expected: npt.ArrayLike, observed: npt.ArrayLike, empty: np.ndarray, *,
                         floor: float | None = None) -> HosmerLemeshowTest:
    """Line 11 of Algorithm 2 (post-processing), shared by the exact, simulated and secure paths: the ``empty``
    groups are left out, ``H`` (eq. 5) over the others, ``Q' - 2`` degrees of freedom.

    :param expected: ``E_{s,q}``, shape ``(2, Q)``; ``observed``: ``O_{s,q}``.
    :param empty: the groups to leave out, bool ``(Q,)``: on a release those empty by construction
        (:func:`empty_groups`, public boundaries); exactly, every group without rows.
    :param floor: the smallest denominator in private mode, ``None`` for exact mode.
    """
    statistic, floored = hosmer_lemeshow_statistic(expected, observed, floor=floor, empty=empty)
    degrees = int(empty.shape[0] - np.count_nonzero(empty)) - 2
    return HosmerLemeshowTest(statistic, _p_value(statistic, degrees), degrees, floored, empty)


def _p_value(statistic: float, degrees: int) -> float:
    if degrees < 1:
        return math.nan
    return float(stats.chi2.sf(statistic, degrees))


def exact_hosmer_lemeshow(probabilities: npt.ArrayLike, labels: npt.ArrayLike, groups: int = 10) -> HosmerLemeshowResult:
    """The exact (non-private) HL statistic, groups at the exact quantiles of the probabilities.

    ``t_q = inf{x : F(x) >= q/Q}`` (the ``ceil(q n / Q)``-th smallest probability), ``t_0 = 0``,
    ``t_Q = 1``; group ``q`` is ``t_{q-1} < p <= t_q`` (the first group includes ``p = 0``): the same
    rule as the private path with the noiseless ECDF.  Expected counts use the probabilities as
    given (no fixed point).  Ties can leave a group empty (equal boundaries, or a last group above the
    largest probability): a group without rows is left out of ``H`` and of the degrees of freedom
    (:func:`hosmer_lemeshow_test`).  A release can only leave out the groups empty by construction
    (:func:`empty_groups`): a last group empty in fact adds its floored noise.

    :param probabilities: predicted probabilities in ``[0, 1]``, one-dimensional, at least one.
    :param labels: labels in ``{0, 1}``, same length.
    :param groups: ``Q >= 3``.
    :return: the statistic, its p-value against ``chi2(Q' - 2)``, the groups and their counts.
    :raise ValueError: on invalid input, e.g. ``groups must be at least 3, got 2``.
    :raise TypeError: if an argument has the wrong type.
    """
    q_count = check_positive_int(groups, "groups")
    if q_count < 3:
        raise ValueError(f"groups must be at least 3, got {groups}")
    p = _check_probabilities(probabilities)
    y = _check_labels(labels, p.shape[0])
    n = p.shape[0]
    ordered = np.sort(p)
    ranks = np.array([-(-q * n // q_count) for q in range(1, q_count)], dtype=np.int64)  # ceil(q n / Q)
    interior = ordered[ranks - 1]
    group = np.searchsorted(interior, p, side="left")
    expected = np.zeros((2, q_count))
    observed = np.zeros((2, q_count), dtype=np.int64)
    np.add.at(expected[1], group, p)
    np.add.at(expected[0], group, 1.0 - p)
    np.add.at(observed[1], group, y)
    np.add.at(observed[0], group, 1 - y)
    test = hosmer_lemeshow_test(expected, observed, empty_groups(interior, top=1.0) | (observed.sum(axis=0) == 0))
    boundaries = np.concatenate(([0.0], interior, [1.0]))
    return HosmerLemeshowResult(test.statistic, test.p_value, boundaries, expected, observed, test.degrees_of_freedom,
                                test.empty)


def party_statistic_draws(log_alpha: float, count: int, parties: int, threshold: int,
                          rng: np.random.Generator | None) -> np.ndarray:
    """Every party's noise on ``count`` statistics: ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``.

    Row ``i`` is party ``i``'s draws (what it secret-shares in the secure path); the released noise
    is the column sum, and a coalition of ``t`` parties knows its own rows (the auditor of
    :mod:`dp.audit.central_cases` keeps the ``m - t`` honest rows).

    :param log_alpha: ``log(alpha) < 0`` of the statistics (:attr:`HosmerLemeshowQuery.expected_log_alpha`
        or ``observed_log_alpha``).
    :param count: number of statistics (or of independent releases of one statistic).
    :param parties: ``m``; ``threshold``: ``t`` with ``2 t < m``.
    :param rng: generator (tests), or ``None`` for fresh OS randomness.
    :return: int64 array of shape ``(m, count)``.
    """
    shape = party_noise_shape(parties, threshold)
    return np.stack([np.asarray(polya_difference(shape, size=count, rng=rng, log_alpha=log_alpha), dtype=np.int64)
                     for _ in range(parties)])


def release_boundaries(ecdf: np.ndarray, query: HosmerLemeshowQuery) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Line 6 of Algorithm 2: the group boundaries ``t_q = F^^{-1}(q / Q)`` from a released ECDF.

    Post-processing only (Algorithm 1, :func:`smoothing.inverse_ecdf`, on the raw released curve, or on
    its monotone smoothing, eq. 3, when ``query.smoothed``).  Shared by the simulated path
    (:func:`private_hosmer_lemeshow`) and the secure one (:mod:`dp.ecdf.hosmer_lemeshow_secure`), so
    both group the rows alike for the same released ECDF.

    :param ecdf: the released ECDF ``noisy count / n`` on ``query.grid`` (not monotone).
    :param query: the number of groups, the grid, the fixed point and the smoothing.
    :return: ``(boundaries, bounds, smoothed)``: ``t_0 = 0 <= ... <= t_Q = 1`` (made non-decreasing),
        the ``Q - 1`` interior ones in fixed point (exact integers: grid points are multiples of
        ``1/N`` with ``N | 2^b``), and the smoothed ECDF (``None`` unless ``query.smoothed``).
    :raise smoothing.SmoothingError: if ``query.smoothed`` and every smoothing solver fails.
    """
    q_count = query.groups
    curve = np.asarray(ecdf, dtype=np.float64)
    smoothed: np.ndarray | None = None
    if query.smoothed:
        smoothed = smooth_ecdf(curve, prefix_incidence(query.grid_points), norm=query.norm).values
        curve = smoothed
    grid = query.grid
    interior = np.array([inverse_ecdf((grid, curve), q / q_count, lower=0.0, upper=1.0)
                         for q in range(1, q_count)])
    boundaries = np.maximum.accumulate(np.concatenate(([0.0], interior, [1.0])))
    bounds = np.rint(boundaries[1:-1] * query.scale).astype(np.int64)
    return boundaries, bounds, smoothed


def _distributed_draws(log_alpha: float, count: int, parties: int, threshold: int,
                       rng: np.random.Generator | None) -> np.ndarray:
    """Sum of ``m`` party draws ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``, ``count`` each."""
    return party_statistic_draws(log_alpha, count, parties, threshold, rng).sum(axis=0)


def private_hosmer_lemeshow(probabilities: npt.ArrayLike, labels: npt.ArrayLike, query: HosmerLemeshowQuery, *,
                            parties: int = 1, threshold: int = 0, rng: np.random.Generator | None = None,
                            node_noise: npt.ArrayLike | None = None, expected_noise: npt.ArrayLike | None = None,
                            observed_noise: npt.ArrayLike | None = None) -> HosmerLemeshowRelease:
    """Algorithm 2 (HL-STAT-DP), simulated in one process with the protocol's integer noise.

    ``epsilon``-DP (``query.epsilon``) under replace-one adjacency against any passive coalition
    of ``threshold`` parties (module docstring).  Noise is drawn per party as in the secure path
    (``parties`` draws of shape ``1/(m - t)`` per node and per statistic) unless given: with all of
    ``node_noise``, ``expected_noise``, ``observed_noise`` given the result is deterministic (the
    secure path's with the same draws).

    :param probabilities: predicted probabilities in ``[0, 1]`` (one per row), one-dimensional.
    :param labels: true labels in ``{0, 1}``, same length.
    :param query: budget, number of groups, grid, precision and post-processing.
    :param parties: number of parties ``m >= 1`` (noise calibration only; all rows are at hand).
    :param threshold: coalition size ``t`` with ``2 t < m``.
    :param rng: generator for the noise (tests), or ``None`` for fresh OS randomness per draw.
    :param node_noise: total ECDF node noise (int array of ``query.tree_plan(...).node_count``).
    :param expected_noise: total noise on the fixed-point ``E`` sums, int array of shape ``(2, Q)``.
    :param observed_noise: total noise on the ``O`` counts, int array of shape ``(2, Q)``.
    :return: the release (statistic, p-value, boundaries, noisy ``E``/``O``, ECDF, variances).
    :raise ValueError: on invalid input, e.g. ``probabilities must lie in [0, 1], got 1.5``.
    :raise TypeError: if an argument has the wrong type.
    :raise smoothing.SmoothingError: if ``query.smoothed`` and every smoothing solver fails.
    """
    if not isinstance(query, HosmerLemeshowQuery):
        raise TypeError(f"query must be a HosmerLemeshowQuery, got {type(query).__name__}")
    m, t = check_parties(parties, threshold)
    p = _check_probabilities(probabilities)
    y = _check_labels(labels, p.shape[0])
    q_count = query.groups
    given_expected = _check_noise(expected_noise, "expected_noise", q_count)
    given_observed = _check_noise(observed_noise, "observed_noise", q_count)
    n = p.shape[0]
    spec = query.spec
    scale = query.scale
    fixed = spec.encode(p)                       # k_i = round(p_i 2^b) in [0, 2^b]
    decoded = spec.decode(fixed)                 # exact dyadic values k_i / 2^b

    # line 5: the ECDF of predicted probabilities, released once at (L + 1) eps'
    grid = query.grid
    plan = query.tree_plan(parties=m, threshold=t)
    noise = plan.draw_total(rng) if node_noise is None else node_noise
    ecdf = noisy_counts(true_counts(decoded, grid), noise) / n
    boundaries, bounds, smoothed = release_boundaries(ecdf, query)

    # lines 8-9: the 4Q group statistics with distributed discrete Laplace noise
    true_expected, true_observed = group_statistics(fixed, y, bounds, scale=scale)
    if given_expected is None:
        given_expected = _distributed_draws(query.expected_log_alpha, 2 * q_count, m, t, rng).reshape(2, q_count)
    if given_observed is None:
        given_observed = _distributed_draws(query.observed_log_alpha, 2 * q_count, m, t, rng).reshape(2, q_count)
    noisy_expected = (true_expected + given_expected) / float(scale)
    noisy_observed = true_observed + given_observed

    # line 11 (post-processing)
    test = hosmer_lemeshow_test(noisy_expected, noisy_observed, empty_groups(bounds, top=scale),
                                floor=query.expected_floor)
    return HosmerLemeshowRelease(
        statistic=test.statistic,
        p_value=test.p_value,
        boundaries=boundaries,
        expected=noisy_expected,
        observed=noisy_observed,
        ecdf=ecdf,
        smoothed_ecdf=smoothed,
        grid=grid,
        budget=query.budget,
        accounting=query.accounting,
        n=n,
        parties=m,
        threshold=t,
        degrees_of_freedom=test.degrees_of_freedom,
        floored=test.floored,
        ecdf_count_variance=plan.point_variance,
        expected_noise_variance=query.expected_noise_variance(parties=m, threshold=t),
        observed_noise_variance=query.observed_noise_variance(parties=m, threshold=t),
        empty=test.empty,
    )


# --------------------------------------------------------------------------------------------------
# the noise band of a release (post-processing)

#: Number of re-noised copies behind :func:`noise_band` (vectorised; a few milliseconds).
BAND_DRAWS: int = 2000

#: Public seed of the band's generator.  The band is post-processing of released values with the public
#: noise law: its randomness protects nothing, so a fixed public seed (reproducible output) is right; it is
#: never the source of the release's own noise, which comes from the operating system.
BAND_SEED: int = 0x48_4C_42  # "HLB"

#: Share of ``[0, 1]`` that the p-value's band may span before the p-value is called noise-dominated.
P_BAND_SPAN: float = 0.5


@dataclass(frozen=True)
class HosmerLemeshowBand:
    """How much the release's noise moves ``H`` and its p-value, from released values and the public noise law.

    The released ``E``/``O`` are re-noised ``draws`` times with independent draws of the same noise law
    (every party's ``Polya(1/(m - t), alpha)`` differences, the query's ``alpha``), and ``H`` and ``p`` are
    recomputed from each copy exactly as the release computed them (same boundaries, groups left out,
    floor).  The band is the central ``level`` share of those values: the spread that noise of this law
    gives around the released counts.  It is *not* a confidence interval for the noiseless ``H``: re-noising
    adds noise to counts that already carry it, so the band sits above the released ``H`` by about
    :attr:`noise_part`, as the released ``H`` sits above the noiseless one; and the boundaries, found on the
    noisy ECDF, are kept as released.

    :ivar statistic: ``(low, high)`` of ``H``.
    :ivar p_value: ``(low, high)`` of the p-value (nan without degrees of freedom).
    :ivar noise_part: the expected contribution of the noise to ``H``,
        ``sum (var_O + var_E) / max(E^, floor)`` over the cells used (``E[(O + a - E - b)^2] = (O - E)^2 +
        var_O + var_E`` for independent zero-mean noises ``a``, ``b``; plug-in of the released ``E``).
    :ivar chance_range: ``(low, high)``, the central ``level`` range of ``chi2(Q' - 2)``: where ``H`` of a
        perfectly calibrated model falls without noise.
    :ivar warnings: plain sentences, empty when the noise does not dominate.
    """

    statistic: tuple[float, float]
    p_value: tuple[float, float]
    noise_part: float
    chance_range: tuple[float, float]
    degrees_of_freedom: int
    level: float
    draws: int
    seed: int
    warnings: tuple[str, ...]

    @property
    def dominated(self) -> bool:
        """Whether the noise dominates (a warning was raised)."""
        return bool(self.warnings)

    def meaning(self) -> str:
        """What the band is, in one sentence (printed and recorded with it)."""
        return (f"central {self.level:.0%} of H and p recomputed from the released counts re-noised {self.draws} "
                f"times with the public noise law (post-processing, public seed {self.seed}): the noise's spread "
                f"around the released values, not a confidence interval for the noiseless H")

    def record(self) -> dict[str, Any]:
        """The record's ``interval`` entry."""
        return {"statistic": list(self.statistic), "p_value": list(self.p_value), "level": self.level,
                "draws": self.draws, "seed": self.seed, "noise_part": self.noise_part,
                "chance_range": list(self.chance_range), "meaning": self.meaning()}


def _band_draws(log_alpha: float, shape: tuple[int, ...], parties: int, threshold: int,
                rng: np.random.Generator) -> np.ndarray:
    count = int(np.prod(shape))
    return party_statistic_draws(log_alpha, count, parties, threshold, rng).sum(axis=0).reshape(shape)


def noise_band(release: HosmerLemeshowRelease, query: HosmerLemeshowQuery, *, draws: int = BAND_DRAWS,
               level: float = 0.95, seed: int = BAND_SEED) -> HosmerLemeshowBand:
    """The noise band of a release and a warning when the noise dominates (post-processing, no privacy cost).

    Uses only released values (``E``, ``O``, the groups left out) and public constants (the query's noise law,
    ``m``, ``t``); the band's randomness is a generator seeded with the public ``seed``, never the release's
    noise source.  Warnings, each a plain sentence: an expected count was raised to the floor (the noise
    exceeds that count); the expected noise part of ``H`` exceeds ``Q' - 2`` (the mean of ``H`` for a
    perfectly calibrated model: noise then moves ``H`` more than miscalibration of that size would); the
    band of ``H`` is wider than the chance range of ``chi2(Q' - 2)``; the p-value's band spans more than
    :data:`P_BAND_SPAN` of ``[0, 1]``.

    :param release: the release (:func:`private_hosmer_lemeshow` or the secure path).
    :param query: its query (noise law, floor).
    :param draws: number of re-noised copies, at least 100.
    :param level: central share of the band, in ``(0, 1)``.
    :param seed: public seed of the band's generator.
    :raise ValueError: on an invalid ``draws`` or ``level``.
    """
    copies = check_positive_int(draws, "draws")
    if copies < 100:
        raise ValueError(f"draws must be at least 100, got {draws}")
    share = check_finite(level, "level")
    if not 0 < share < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    rng = np.random.Generator(np.random.PCG64(seed))
    groups = release.expected.shape[1]
    m, t = release.parties, release.threshold
    expected = release.expected[None] + _band_draws(query.expected_log_alpha, (copies, 2, groups), m, t, rng) \
        / float(query.scale)
    observed = release.observed[None] + _band_draws(query.observed_log_alpha, (copies, 2, groups), m, t, rng)
    floor = query.expected_floor
    used = np.maximum(expected, floor)
    cells = (np.maximum(observed, 0.0) - used) ** 2 / used
    cells[:, :, release.empty] = 0.0
    statistics = cells.sum(axis=(1, 2))
    degrees = release.degrees_of_freedom
    tails = ((1 - share) / 2, 1 - (1 - share) / 2)
    h_band = (float(np.quantile(statistics, tails[0])), float(np.quantile(statistics, tails[1])))
    if degrees >= 1:
        p_values = stats.chi2.sf(statistics, degrees)
        p_band = (float(np.quantile(p_values, tails[0])), float(np.quantile(p_values, tails[1])))
        chance = (float(stats.chi2.ppf(tails[0], degrees)), float(stats.chi2.ppf(tails[1], degrees)))
    else:
        p_band, chance = (math.nan, math.nan), (math.nan, math.nan)
    kept = ~release.empty
    denominators = np.maximum(release.expected[:, kept], floor)
    noise_part = float(np.sum((release.observed_noise_variance + release.expected_noise_variance) / denominators))
    warnings: list[str] = []
    if release.floored:
        warnings.append(f"{release.floored} released expected count(s) fell below {floor:g} and were raised to it: "
                        f"the noise exceeds those counts")
    if degrees >= 1 and noise_part > degrees:
        warnings.append(f"noise alone adds about {noise_part:.3g} to H on average, more than the {degrees} "
                        f"(= degrees of freedom) H has for a perfectly calibrated model: H and p mostly measure "
                        f"the noise")
    if degrees >= 1 and h_band[1] - h_band[0] > chance[1] - chance[0]:
        warnings.append(f"H's noise band ({h_band[1] - h_band[0]:.3g} wide) is wider than the chance range of "
                        f"chi2({degrees}) ({chance[0]:.3g} to {chance[1]:.3g})")
    if degrees >= 1 and p_band[1] - p_band[0] > P_BAND_SPAN:
        warnings.append(f"the p-value's noise band {p_band[0]:.2g} to {p_band[1]:.2g} spans most of 0..1")
    return HosmerLemeshowBand(h_band, p_band, noise_part, chance, degrees, share, copies, seed, tuple(warnings))


def relative_squared_error(private: float, exact: float) -> float:
    """``(H_private - H_exact)^2 / H_exact^2``, the quantity averaged in Fig. 6.

    :param private: the private statistic (may be ``inf``, giving ``inf``).
    :param exact: the exact statistic, finite and non-zero.
    :raise ValueError: if ``exact`` is zero or not finite, or ``private`` is NaN.
    :raise TypeError: if an argument is not a number.
    """
    check_number(private, "private")
    reference = check_finite(exact, "exact")
    if reference == 0:
        raise ValueError("exact must be non-zero, got 0")
    value = float(private)
    if math.isnan(value):
        raise ValueError("private must not be NaN")
    return (value - reference) ** 2 / reference**2
