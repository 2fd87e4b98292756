r"""The release of the private Hosmer-Lemeshow statistic: parameters and Theorem 2's budget split, group boundaries
on the released ECDF, every party's statistic draws, the released values, their text, record and noise band.

Barczewski, Mawass & Ramon §5.2 (Algorithm 2, Theorem 2); all but the draws is post-processing of released values
and public constants.  The proof of the split and the threat model: ``docs/hosmer_lemeshow.md``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np
from scipy import stats

from dp.calibration import discrete_laplace_log_alpha, distributed_laplace_variance, party_noise_shape
from dp.ecdf.grid import prefix_incidence, tree_depth, uniform_grid
from dp.ecdf.hosmer_lemeshow_statistic import empty_groups, hosmer_lemeshow_test
from dp.ecdf.tree import TreeNoisePlan, plan_tree_noise
from dp.report_text import phases_text, run_rows, text_table
from dp.validation import (check_bool, check_choice, check_epsilon, check_finite, check_int_at_least, check_int_range,
                           check_nonnegative_int, check_positive)
from secure.intake import ColumnSpec, MissingPolicy
from secure.noise.party import polya_difference
from smoothing.inverse import inverse_ecdf
from smoothing.monotone import smooth_ecdf

__all__ = ["Accounting", "ACCOUNTING_MODES", "JOINT_SENSITIVITY", "MAX_PRECISION", "STATISTICS_NODES",
           "HosmerLemeshowBudget", "HosmerLemeshowParameters", "HosmerLemeshowRelease", "release_boundaries",
           "released_statistic", "party_statistic_draws", "BAND_DRAWS", "BAND_SEED", "HosmerLemeshowBand", "noise_band"]

#: Number of eps' shares spent on the group statistics (the ``9 - 1`` of ``L + 9``).
STATISTICS_NODES: int = 8


@dataclass(frozen=True)
class HosmerLemeshowBudget:
    """Theorem 2's split of ``epsilon`` for a tree of depth ``L``: ``eps' = epsilon / (L + 9)``, the ECDF gets
    ``(L + 1) eps'``, the ``4 Q`` group statistics ``8 eps'``; ValueError: a non-positive epsilon, a negative depth."""

    epsilon: float
    depth: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "depth", check_nonnegative_int(self.depth, "depth"))

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
class HosmerLemeshowParameters:
    """What is released: budget, ``Q``, the ECDF grid, fixed point and post-processing (every parameter:
    docs/hosmer_lemeshow.md; :class:`dp.ecdf.hosmer_lemeshow.HosmerLemeshowQuery` adds the face's verbs)."""

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
    #: the rows of one unit of privacy (an owner's ``rows_per_owner``), a factor of every sensitivity
    unit_rows: int = 1

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
        ``2 eps'`` (joint, ``8 eps' / 4``), over ``unit_rows``.  The noise scale is ``Delta / rate``."""
        prime = self.budget.epsilon_prime / self.unit_rows
        return STATISTICS_NODES * prime / JOINT_SENSITIVITY if self.accounting == "joint" else prime

    @property
    def statistics_loss_bound(self) -> float:
        """Proven privacy loss of the released statistics: ``4 * unit_rows * rate`` (``<= 8 eps'``)."""
        return JOINT_SENSITIVITY * self.unit_rows * self.statistics_rate

    @property
    def expected_log_alpha(self) -> float:
        """``log alpha`` of the noise on an expected-count sum (fixed point): ``-rate / 2^b``."""
        return discrete_laplace_log_alpha(self.statistics_rate, self.scale)

    @property
    def observed_log_alpha(self) -> float:
        """``log alpha`` of the noise on an observed count: ``-rate``."""
        return discrete_laplace_log_alpha(self.statistics_rate, 1)

    def tree_plan(self, *, parties: int = 1, threshold: int = 0) -> TreeNoisePlan:
        """The ECDF node-noise plan: ``epsilon = (L + 1) eps'``, i.e. node scale ``1/eps'`` (ValueError unless
        ``2 t < m``)."""
        return plan_tree_noise(epsilon=self.budget.ecdf_epsilon, points=self.grid_points,
                               parties=parties, threshold=threshold, unit_rows=self.unit_rows)

    def expected_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one expected count, in rows^2 (fixed point / ``4^b``)."""
        alpha = math.exp(self.expected_log_alpha)
        return distributed_laplace_variance(alpha, parties, threshold) / float(self.scale) ** 2

    def observed_noise_variance(self, *, parties: int = 1, threshold: int = 0) -> float:
        """Variance of the total noise on one observed count."""
        return distributed_laplace_variance(math.exp(self.observed_log_alpha), parties, threshold)


@dataclass(frozen=True)
class HosmerLemeshowRelease:
    """The released private HL statistic, everything Algorithm 2 publishes, and what the run cost (fields:
    docs/hosmer_lemeshow.md)."""

    query: HosmerLemeshowParameters
    statistic: float
    p_value: float
    boundaries: np.ndarray
    expected: np.ndarray
    observed: np.ndarray
    ecdf: np.ndarray
    smoothed_ecdf: np.ndarray | None
    n: int
    parties: int
    threshold: int
    degrees_of_freedom: int
    floored: int
    empty: np.ndarray
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    seed: int | None = None
    owners: dict[str, Any] | None = None  # from owners' uploads: :meth:`dp.umpc.owners.Owners.record`

    @property
    def budget(self) -> HosmerLemeshowBudget:
        """The split of epsilon (Theorem 2)."""
        return self.query.budget

    @property
    def epsilon(self) -> float:
        """Total budget spent."""
        return self.query.epsilon

    @property
    def grid(self) -> np.ndarray:
        """The ECDF grid ``i / N``."""
        return self.query.grid

    @property
    def ecdf_count_variance(self) -> float:
        """Variance of the noise on one released ECDF count."""
        return self.query.tree_plan(parties=self.parties, threshold=self.threshold).point_variance

    @property
    def expected_noise_variance(self) -> float:
        """Variance of the noise on one ``E`` (rows^2)."""
        return self.query.expected_noise_variance(parties=self.parties, threshold=self.threshold)

    @property
    def observed_noise_variance(self) -> float:
        """Variance of the noise on one ``O``."""
        return self.query.observed_noise_variance(parties=self.parties, threshold=self.threshold)

    @property
    def guarantee(self) -> str:
        """Which noise ran and what it guarantees, in one line."""
        from dp.noise_defaults import party_guarantee

        budget = self.budget
        return (party_guarantee(self.epsilon, 0.0, self.parties, self.threshold, "discrete laplace")
                + f" (ECDF tree {budget.ecdf_epsilon:.4g} + group statistics {budget.statistics_epsilon:.4g}, "
                  f"eps' = eps/{budget.depth + 9})")

    @cached_property
    def band(self) -> HosmerLemeshowBand:
        """The noise band of ``H`` and ``p`` and its warnings (:func:`noise_band`, public seed)."""
        return noise_band(self)

    def table(self) -> str:
        """The text the job prints: the table, the noise and band lines, the boundaries and the group counts."""
        query, budget, band = self.query, self.budget, self.band
        low, high = band.statistic
        lines = [text_table([
            ("statistic", f"Hosmer-Lemeshow H = {self.statistic:.4g}, p-value = {self.p_value:.2g} "
                          f"(chi2, {self.degrees_of_freedom} df)"),
            (f"noise band {band.level:.0%}", f"H {low:.4g} to {high:.4g}, p {band.p_value[0]:.2g} to "
                                             f"{band.p_value[1]:.2g}; noise adds about {band.noise_part:.3g} to H on "
                                             f"average (chance range of chi2({band.degrees_of_freedom}): "
                                             f"{band.chance_range[0]:.3g} to {band.chance_range[1]:.3g})"),
            ("columns", f"score column {query.columns[0]}, label column {query.columns[1]}; {query.groups} groups at "
                        f"the private quantiles of the score"),
            ("epsilon", f"{self.epsilon:g} = ECDF (L+1) eps' {budget.ecdf_epsilon:.4g} + group statistics 8 eps' "
                        f"{budget.statistics_epsilon:.4g}; eps' = eps/(L+9) = {budget.epsilon_prime:.4g}, "
                        f"L = {budget.depth} ({query.grid_points} grid points)"),
            ("accounting", query.accounting + (" (each of the 4Q statistics eps'-DP, at most 8 change)"
                                               if query.accounting == "paper" else
                                               " (joint weighted-L1 sensitivity 4 gets the same 8 eps')")),
            ("noise std", f"ECDF count {np.sqrt(self.ecdf_count_variance):.3g}, expected count "
                          f"{np.sqrt(self.expected_noise_variance):.3g}, observed count "
                          f"{np.sqrt(self.observed_noise_variance):.3g}"),
            ("n", f"{self.n} rows"),
            *run_rows(self, query.missing),
        ], title="Private Hosmer-Lemeshow test (Barczewski, Mawass & Ramon, Algorithm 2)"),
            f"  noise: {self.guarantee}", f"  band: {band.meaning()}"]
        lines += [f"  warning: {warning}" for warning in band.warnings]
        lines.append("  boundaries: " + ", ".join(f"{b:.4g}" for b in self.boundaries[1:-1])
                     + (" (smoothed ECDF)" if query.smoothed else " (raw released ECDF)"))
        lines.append("  group  " + "  ".join(f"{q + 1:>7}" for q in range(query.groups)))
        for label, values in (("E pos", self.expected[1]), ("O pos", self.observed[1]),
                              ("E neg", self.expected[0]), ("O neg", self.observed[0])):
            lines.append(f"  {label}  " + "  ".join(f"{v:>7.1f}" for v in values))
        if self.floored:
            lines.append(f"  {self.floored} noisy expected count(s) raised to {query.expected_floor:g} before "
                         f"dividing (post-processing)")
        if self.empty.any():
            left_out = ", ".join(str(q + 1) for q in np.flatnonzero(self.empty))
            lines.append(f"  group(s) {left_out} empty by construction (equal released boundaries): left out of H and "
                         f"of the degrees of freedom ({self.degrees_of_freedom} df)"
                         + ("; fewer than 3 groups left: no p-value" if self.degrees_of_freedom < 1 else ""))
        lines.append(phases_text(self.phases))
        return "\n".join(lines)

    def record(self) -> dict[str, Any]:
        """The JSON record: the statistic, its noise band (``interval``) and warnings (``warning``), the budget
        split, the released counts and boundaries, the noise stds, the costs."""
        query, budget, band = self.query, self.budget, self.band
        return {"statistic": "hosmer_lemeshow", "estimate": self.statistic, "p_value": self.p_value,
                "interval": band.record(), "warning": " ".join(f"{w}." for w in band.warnings) or None,
                "degrees_of_freedom": self.degrees_of_freedom, "groups": query.groups,
                "epsilon": self.epsilon, "delta": 0.0, "n": self.n, "pairs": None,
                "parties": self.parties, "threshold": self.threshold,
                "budget_split": {"epsilon_prime": budget.epsilon_prime, "ecdf": budget.ecdf_epsilon,
                                 "statistics": budget.statistics_epsilon},
                "accounting": query.accounting, "grid_points": query.grid_points, "depth": budget.depth,
                "precision": query.precision, "smoothed": query.smoothed,
                "boundaries": self.boundaries.tolist(), "expected": self.expected.tolist(),
                "observed": self.observed.tolist(), "floored": self.floored,
                "left_out_groups": [int(q) + 1 for q in np.flatnonzero(self.empty)],
                "ecdf_count_std": float(np.sqrt(self.ecdf_count_variance)),
                "expected_noise_std": float(np.sqrt(self.expected_noise_variance)),
                "observed_noise_std": float(np.sqrt(self.observed_noise_variance)),
                "noise_std": None, "sampling_error_bound": 0.0, "seed": self.seed,
                "uncertainty_covers": "DP noise only (per released count: ecdf_count_std, expected_noise_std, "
                                      "observed_noise_std); exact counts, no sampling error",
                "missing": query.missing.mode, "fill": dict(query.missing.fills),
                "seconds": self.seconds, "bytes_sent": self.bytes_sent, "phases": self.phases,
                "noise_source": "parties", "guarantee": self.guarantee,
                **({"owners": self.owners} if self.owners else {})}


def release_boundaries(ecdf: np.ndarray, query: HosmerLemeshowParameters) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Line 6 of Algorithm 2, post-processing: ``(boundaries, bounds, smoothed)``, the group boundaries
    ``t_q = F^^{-1}(q / Q)`` of a released ECDF, the interior ones in fixed point, the smoothed ECDF or ``None``
    (docs/hosmer_lemeshow.md)."""
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


def released_statistic(query: HosmerLemeshowParameters, expected_sums: np.ndarray, observed_sums: np.ndarray,
                        bounds: np.ndarray, **fields: Any) -> HosmerLemeshowRelease:
    """Line 11 of Algorithm 2 (post-processing), the simulated and secure paths alike: the release from the ``4 Q``
    noisy sums (``E`` in fixed point) and the public interior bounds; ``fields``: the release's other fields."""
    expected = np.asarray(expected_sums).reshape(2, query.groups) / float(query.scale)
    observed = np.asarray(observed_sums).reshape(2, query.groups)
    test = hosmer_lemeshow_test(expected, observed, empty_groups(bounds, top=query.scale), floor=query.expected_floor)
    return HosmerLemeshowRelease(query=query, statistic=test.statistic, p_value=test.p_value, expected=expected,
                                 observed=observed, degrees_of_freedom=test.degrees_of_freedom, floored=test.floored,
                                 empty=test.empty, **fields)


def party_statistic_draws(log_alpha: float, count: int, parties: int, threshold: int,
                          rng: np.random.Generator | None) -> np.ndarray:
    """Every party's noise on ``count`` statistics, ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``: int64
    ``(m, count)``, row ``i`` party ``i``'s draws (``rng=None``: OS randomness; docs/hosmer_lemeshow.md)."""
    shape = party_noise_shape(parties, threshold)
    return np.stack([np.asarray(polya_difference(shape, size=count, rng=rng, log_alpha=log_alpha), dtype=np.int64)
                     for _ in range(parties)])


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
    """How much the release's noise moves ``H`` and its p-value (re-noised copies; not a confidence interval
    for the noiseless ``H``).  Fields and the noise part's formula: docs/hosmer_lemeshow.md."""

    statistic: tuple[float, float]
    p_value: tuple[float, float]
    noise_part: float
    chance_range: tuple[float, float]
    degrees_of_freedom: int
    level: float
    draws: int
    seed: int
    warnings: tuple[str, ...]

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


def noise_band(release: HosmerLemeshowRelease, *, draws: int = BAND_DRAWS, level: float = 0.95,
               seed: int = BAND_SEED) -> HosmerLemeshowBand:
    """The noise band of a release from ``draws`` re-noised copies (central share ``level``, public ``seed``) and
    warnings when the noise dominates (post-processing, no privacy cost; docs/hosmer_lemeshow.md)."""
    copies = check_int_at_least(draws, "draws", 100)
    share = check_finite(level, "level")
    if not 0 < share < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    query = release.query
    rng = np.random.Generator(np.random.PCG64(seed))
    groups = release.expected.shape[1]
    expected_noise, observed_noise = (
        party_statistic_draws(log_alpha, copies * 2 * groups, release.parties, release.threshold, rng)
        .sum(axis=0).reshape(copies, 2, groups) for log_alpha in (query.expected_log_alpha, query.observed_log_alpha))
    expected = release.expected[None] + expected_noise / float(query.scale)
    observed = release.observed[None] + observed_noise
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
