r"""The private Hosmer-Lemeshow (HL) calibration statistic: the query, the simulated path, the family face.

Barczewski, Mawass & Ramon, *Differentially Private Empirical Cumulative Distribution Functions*, §5.2 (eq. 5,
Algorithm 2, Theorem 2), App. A.2, §6.6 (Fig. 6).  With ``eps' = epsilon / (L + 9)``, ``L = log2 N``: the ECDF
of the predicted probabilities is released by the tree mechanism at ``(L + 1) eps'``, the ``Q - 1`` group
boundaries are read off it by Algorithm 1 (post-processing), and the ``4 Q`` expected and observed counts per
group get integer discrete Laplace noise worth ``8 eps'``; ``H`` (eq. 5) and its p-value against
``chi2(Q' - 2)`` are post-processing.  ``epsilon``-DP under replace-one rows against a passive coalition of
``t < m/2`` parties, every party drawing ``Polya(1/(m - t), alpha)`` differences from OS randomness.  The
algorithm, the proof of the split (and the sharper ``joint`` accounting), empty groups, the fixed point and the
threat model: ``docs/hosmer_lemeshow.md``.

:class:`HosmerLemeshowQuery` is the query of the ``dp.ecdf`` face (``release`` across parties,
:mod:`dp.ecdf.hosmer_lemeshow_secure`; ``simulate``, :func:`private_hosmer_lemeshow`, equal to it for the same
draws; ``exact``, :func:`dp.ecdf.hosmer_lemeshow_statistic.exact_hosmer_lemeshow`).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dp.calibration import discrete_laplace_log_alpha, distributed_laplace_variance
from dp.ecdf.grid import tree_depth, true_counts, uniform_grid
from dp.ecdf.hosmer_lemeshow_release import (STATISTICS_NODES, HosmerLemeshowBudget, HosmerLemeshowRelease,
                                             party_statistic_draws, release_boundaries)
from dp.ecdf.hosmer_lemeshow_secure import run_secure_hosmer_lemeshow
from dp.ecdf.hosmer_lemeshow_statistic import (HosmerLemeshowResult, empty_groups, exact_hosmer_lemeshow,
                                               group_statistics, hosmer_lemeshow_test, relative_squared_error)
from dp.ecdf.tree import TreeNoisePlan, noisy_counts, plan_tree_noise
from dp.validation import (check_bool, check_choice, check_epsilon, check_int_at_least, check_int_range, check_labels,
                           check_parties, check_positive, check_rows_by_party, check_score_label_rows, check_seed,
                           check_values)
from secure.intake import ColumnSpec, MissingPolicy

__all__ = ["Accounting", "ACCOUNTING_MODES", "JOINT_SENSITIVITY", "MAX_PRECISION", "HosmerLemeshowQuery",
           "private_hosmer_lemeshow",
           # re-exported from the modules of the statistic and the release
           "HosmerLemeshowBudget", "HosmerLemeshowRelease", "HosmerLemeshowResult", "party_statistic_draws",
           "exact_hosmer_lemeshow", "group_statistics", "relative_squared_error"]

#: ``paper``: each of the 4Q statistics is eps'-DP for its own sensitivity (8 change: 8 eps');
#: ``joint``: the 4Q-vector's weighted L1 sensitivity 4 gets the same 8 eps' (half the noise scale).
Accounting = Literal["paper", "joint"]
ACCOUNTING_MODES: tuple[Accounting, ...] = ("paper", "joint")

#: Weighted L1 sensitivity of the 4Q statistics (E in units of 2^b, O in counts) under replace-one.
JOINT_SENSITIVITY: int = 4

#: Largest fixed-point precision: keeps ``n 2^b`` far inside int64 and the Polya means of the
#: E noise (about ``2^b / eps'``) below :data:`secure.noise.party.MAX_POLYA_MEAN` for sensible budgets.
MAX_PRECISION: int = 24


@dataclass(frozen=True, kw_only=True)
class HosmerLemeshowQuery:
    """What is released: the budget, ``Q``, the ECDF grid, the fixed point and post-processing.

    :param epsilon: total privacy budget of Algorithm 2 (ECDF and group statistics), positive.
    :param groups: number of quantile groups ``3 <= Q <= N`` (``Q - 2`` degrees of freedom, fewer when equal
        released boundaries leave groups empty).
    :param grid_points: number ``N`` of ECDF grid points ``i / N``, a power of two in ``[2, 2^precision]``.
    :param precision: fractional bits ``b`` of the fixed-point probabilities, in ``[1, 24]``.
    :param smoothed: find the boundaries on the monotone-smoothed ECDF (eq. 3) instead of the raw one.
    :param norm: ``p`` of the smoothing (1 or 2); used only when ``smoothed``.
    :param accounting: ``paper`` (each statistic eps'-DP, 8 of them change) or ``joint`` (their joint
        weighted-L1 sensitivity 4 gets the same ``8 eps'``: half the noise scale).
    :param expected_floor: noisy expected counts below this (in rows) are raised to it before they divide in
        eq. (5) (post-processing), positive.
    :param columns: the names of the score and label columns (for the printed text).
    :param missing: the missing-value policy the rows were read with (public; printed and recorded).
    :raise ValueError: on an invalid parameter, e.g. ``epsilon must be positive, got 0``.
    :raise TypeError: if a parameter has the wrong type.
    """

    epsilon: float
    groups: int = 10
    grid_points: int = 1024
    precision: int = 16
    smoothed: bool = False
    norm: Literal[1, 2] = 2
    accounting: Accounting = "paper"
    expected_floor: float = 1.0
    columns: tuple[str, str] = ("score", "label")
    missing: MissingPolicy = field(default_factory=MissingPolicy)

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "groups", check_int_at_least(self.groups, "groups", 3))
        object.__setattr__(self, "precision", check_int_range(self.precision, "precision", low=1, high=MAX_PRECISION))
        points = check_int_at_least(self.grid_points, "grid_points", 2)
        if points & (points - 1):
            raise ValueError(f"grid_points must be a power of two, got {self.grid_points}")
        if points > 2**self.precision:
            raise ValueError(f"grid_points must be at most 2**precision = {2**self.precision}, got {points}")
        if self.groups > points:
            raise ValueError(f"groups must be at most grid_points = {points} (the group boundaries lie on the ECDF "
                             f"grid), got {self.groups}")
        object.__setattr__(self, "grid_points", points)
        check_bool(self.smoothed, "smoothed")
        if self.norm not in (1, 2):
            raise ValueError(f"norm must be 1 or 2, got {self.norm}")
        check_choice(self.accounting, ACCOUNTING_MODES, "accounting")
        object.__setattr__(self, "expected_floor", check_positive(self.expected_floor, "expected_floor"))
        object.__setattr__(self, "columns", tuple(self.columns))

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
        return uniform_grid(step, 1.0, step)

    @property
    def statistics_rate(self) -> float:
        """Privacy loss per unit of sensitivity of each statistic's noise: ``eps'`` (paper) or
        ``2 eps'`` (joint, ``8 eps' / 4``).  The noise scale is ``Delta / rate``."""
        prime = self.budget.epsilon_prime
        return STATISTICS_NODES * prime / JOINT_SENSITIVITY if self.accounting == "joint" else prime

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

        :raise ValueError: if ``(parties, threshold)`` is invalid (``2 t < m``).
        """
        return plan_tree_noise(epsilon=self.budget.ecdf_epsilon, points=self.grid_points,
                               parties=parties, threshold=threshold)

    def expected_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one expected count, in rows^2 (fixed point / ``4^b``)."""
        alpha = math.exp(self.expected_log_alpha)
        return distributed_laplace_variance(alpha, parties, threshold) / float(self.scale) ** 2

    def observed_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one observed count."""
        return distributed_laplace_variance(math.exp(self.observed_log_alpha), parties, threshold)

    async def _release(self, rows: Any, *, receivers: Sequence[int] = (0,),
                       seed: int | None = None) -> HosmerLemeshowRelease | None:
        """``dp.ecdf.release``: every party, its own ``(probability, label)`` rows, on a started MPyC runtime
        (:func:`dp.ecdf.hosmer_lemeshow_secure.run_secure_hosmer_lemeshow`); the release at ``receivers``
        (party 0 among them), ``None`` elsewhere.  ``seed``: the public seed the rows came from, recorded."""
        probabilities, labels = check_score_label_rows(rows)
        return await run_secure_hosmer_lemeshow(probabilities, labels, self, receivers=receivers, seed=seed)

    def _simulate(self, rows_by_party: Sequence[Any], *, seed: int, threshold: int | None = None,
                  noise_rng: np.random.Generator | None = None) -> HosmerLemeshowRelease:
        """``dp.ecdf.simulate``: Algorithm 2 in one process on the union of the parties' rows, every party's draws
        (:func:`private_hosmer_lemeshow`; OS randomness unless ``noise_rng``).  Every row is counted: the public
        ``seed`` picks nothing here (recorded as the rows' seed)."""
        probabilities, labels, parties = check_rows_by_party(rows_by_party)
        return private_hosmer_lemeshow(probabilities, labels, self, parties=parties, rng=noise_rng,
                                       threshold=(parties - 1) // 2 if threshold is None else threshold,
                                       seed=check_seed(seed))

    def _exact(self, rows_by_party: Sequence[Any]) -> HosmerLemeshowResult:
        """``dp.ecdf.exact``: the non-private HL statistic, groups at the exact quantiles."""
        probabilities, labels, _ = check_rows_by_party(rows_by_party)
        return exact_hosmer_lemeshow(probabilities, labels, self.groups)


def _check_noise(noise: npt.ArrayLike | None, name: str, groups: int) -> np.ndarray | None:
    if noise is None:
        return None
    array = np.asarray(noise)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {array.dtype}")
    if array.shape != (2, groups):
        raise ValueError(f"{name} must have shape (2, {groups}), got {array.shape}")
    return array.astype(np.int64)


def private_hosmer_lemeshow(probabilities: npt.ArrayLike, labels: npt.ArrayLike, query: HosmerLemeshowQuery, *,
                            parties: int = 1, threshold: int = 0, rng: np.random.Generator | None = None,
                            node_noise: npt.ArrayLike | None = None, expected_noise: npt.ArrayLike | None = None,
                            observed_noise: npt.ArrayLike | None = None, seed: int | None = None) -> HosmerLemeshowRelease:
    """Algorithm 2 (HL-STAT-DP), simulated in one process with the protocol's integer noise.

    ``epsilon``-DP (``query.epsilon``) under replace-one adjacency against any passive coalition of
    ``threshold`` parties.  Noise is drawn per party as in the secure path (``parties`` draws of shape
    ``1/(m - t)`` per node and per statistic) unless given: with all of ``node_noise``, ``expected_noise``,
    ``observed_noise`` given the result is deterministic (the secure path's with the same draws).

    :param probabilities: predicted probabilities in ``[0, 1]`` (one per row), one-dimensional.
    :param labels: true labels in ``{0, 1}``, same length.
    :param parties: number of parties ``m >= 1`` (noise calibration only; all rows are at hand).
    :param threshold: coalition size ``t`` with ``2 t < m``.
    :param rng: generator for the noise (tests), or ``None`` for fresh OS randomness per draw.
    :param node_noise: total ECDF node noise (int array of ``query.tree_plan(...).node_count``).
    :param expected_noise: total noise on the fixed-point ``E`` sums, int array of shape ``(2, Q)``.
    :param observed_noise: total noise on the ``O`` counts, int array of shape ``(2, Q)``.
    :param seed: the public seed the rows came from, recorded on the release.
    :raise ValueError: on invalid input, e.g. ``probabilities must lie in [0, 1], got 1.5``.
    :raise TypeError: if an argument has the wrong type.
    :raise smoothing.SmoothingError: if ``query.smoothed`` and every smoothing solver fails.
    """
    if not isinstance(query, HosmerLemeshowQuery):
        raise TypeError(f"query must be a HosmerLemeshowQuery, got {type(query).__name__}")
    m, t = check_parties(parties, threshold)
    p = check_values(probabilities, "probabilities", low=0.0, high=1.0)
    y = check_labels(labels, p.shape[0])
    q_count, scale, n = query.groups, query.scale, p.shape[0]
    given_expected = _check_noise(expected_noise, "expected_noise", q_count)
    given_observed = _check_noise(observed_noise, "observed_noise", q_count)
    fixed = query.spec.encode(p)                 # k_i = round(p_i 2^b) in [0, 2^b]
    # line 5: the ECDF of predicted probabilities, released once at (L + 1) eps'
    plan = query.tree_plan(parties=m, threshold=t)
    noise = plan.draw_total(rng) if node_noise is None else node_noise
    ecdf = noisy_counts(true_counts(query.spec.decode(fixed), query.grid), noise) / n
    boundaries, bounds, smoothed = release_boundaries(ecdf, query)
    # lines 8-9: the 4Q group statistics with distributed discrete Laplace noise
    true_expected, true_observed = group_statistics(fixed, y, bounds, scale=scale)
    if given_expected is None:
        given_expected = party_statistic_draws(query.expected_log_alpha, 2 * q_count, m, t, rng).sum(axis=0)
    if given_observed is None:
        given_observed = party_statistic_draws(query.observed_log_alpha, 2 * q_count, m, t, rng).sum(axis=0)
    noisy_expected = (true_expected + given_expected.reshape(2, q_count)) / float(scale)
    noisy_observed = true_observed + given_observed.reshape(2, q_count)
    # line 11 (post-processing)
    test = hosmer_lemeshow_test(noisy_expected, noisy_observed, empty_groups(bounds, top=scale),
                                floor=query.expected_floor)
    return HosmerLemeshowRelease(query=query, statistic=test.statistic, p_value=test.p_value, boundaries=boundaries,
                                 expected=noisy_expected, observed=noisy_observed, ecdf=ecdf, smoothed_ecdf=smoothed,
                                 n=n, parties=m, threshold=t, degrees_of_freedom=test.degrees_of_freedom,
                                 floored=test.floored, empty=test.empty, seed=seed)
