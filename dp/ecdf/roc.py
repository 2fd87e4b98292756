r"""A private ROC curve with private labels: two private class ECDFs, each normalised by its own noisy total.

Barczewski, Mawass & Ramon, §5.1: the tree mechanism (eq. 2) on each class's counts at :func:`class_epsilon`;
rates, smoothing, the curve and its interval are post-processing.  Threat model: passive, static, at most
``t < m/2`` parties, against which the honest draws alone are calibrated.  Details: docs/roc.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from dp.budget.accountants import Spend
from dp.ecdf.grid import grid_of_points, prefix_incidence, tree_depth, true_counts
from dp.ecdf.owners import Owners, at_points, by_label, owner_cells
from dp.ecdf.tree import TreeNoisePlan, noisy_counts, plan_tree_noise
from dp.report_text import run_rows, text_table
from dp.validation import (check_choice, check_epsilon, check_labels, check_rows_by_party, check_score_label_rows,
                           check_seed)
from secure.intake import MissingPolicy

__all__ = ["Split", "SPLITS", "class_epsilon", "class_scores", "self_normalise", "RocQuery",
           "RocRelease", "plan_roc_noise", "auc_digits", "private_roc", "run_secure_roc", "ClassNoiseSource", "AucInterval",
           "auc_interval", "RAW_DRAWS", "SMOOTHED_DRAWS", "BAND_SEED", "WIDE_AUC"]

#: budget splits between the two class ECDFs (see the module docstring)
Split = Literal["half", "disjoint"]
SPLITS: tuple[Split, ...] = ("half", "disjoint")

#: ``(plan, label) -> this party's node draws for that class's ECDF`` (tests); default OS randomness
ClassNoiseSource = Callable[[TreeNoisePlan, int], np.ndarray]


def class_epsilon(epsilon: float, points: int, split: str = "half") -> float:
    """The budget of each class ECDF so that the pair is ``epsilon``-DP for replace-one ``(score, label)`` rows:
    ``half`` (paper: ``epsilon/2`` each) or ``disjoint`` (``epsilon (L+1)/(2 ceil((L+1)/2))``, ``L = ceil(log2 N)``)."""
    value = check_epsilon(epsilon)
    levels = tree_depth(points) + 1
    if split == "half":
        return value / 2
    if split == "disjoint":
        return value * levels / (2 * math.ceil(levels / 2))
    raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")


def class_scores(scores: npt.ArrayLike, labels: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Split scores by a 0/1 label: ``(scores of class 1, scores of class 0)``; ValueError if shapes differ, a score
    is not finite, or a label is not 0 or 1 (no count in the message)."""
    values = np.asarray(scores, dtype=float)
    if values.ndim != 1:
        raise ValueError(f"scores must be one-dimensional, got shape {values.shape}")
    marks = check_labels(labels, values.shape[0])
    if not np.all(np.isfinite(values)):
        raise ValueError("scores must be finite")
    return values[marks == 1], values[marks == 0]


def self_normalise(counts: npt.ArrayLike) -> tuple[np.ndarray, int]:
    """The paper's normalisation ``F^(t) / F^(c_max)`` of one class's released noisy cumulative counts:
    ``(counts / d, d)`` with ``d = max(counts[-1], 1)`` (a non-positive noisy total becomes 1)."""
    values = np.asarray(counts)
    if values.ndim != 1 or values.size == 0:
        raise ValueError(f"counts must be a non-empty one-dimensional array, got shape {values.shape}")
    total = max(int(values[-1]), 1)
    return values.astype(float) / total, total


@dataclass(frozen=True, kw_only=True)
class RocQuery:
    """The private-label ROC curve of scores on ``points`` thresholds of ``[lower, upper]`` at budget ``epsilon``,
    split ``half`` (the paper's ``epsilon/2`` per class ECDF) or ``disjoint`` (:func:`class_epsilon`); ``smooth``:
    the norm of eq. (3) of the printed curve and AUC (``None``: raw); ``columns`` and ``missing`` (the policy the
    rows were read with) are printed and recorded."""

    epsilon: float = 1.0
    lower: float = 0.0
    upper: float = 1.0
    points: int = 256
    split: Split = "half"
    smooth: Literal[1, 2] | None = 2
    columns: tuple[str, str] = ("score", "label")
    missing: MissingPolicy = field(default_factory=MissingPolicy)

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_choice(self.split, SPLITS, "split")
        if self.smooth not in (None, 1, 2):
            raise ValueError(f"smooth must be 1, 2 or None, got {self.smooth!r}")
        if not (np.isfinite(self.lower) and np.isfinite(self.upper) and np.isfinite(self.upper - self.lower)) \
                or not self.lower < self.upper:
            raise ValueError(f"domain must be finite with LOW < HIGH, got {self.lower:g}:{self.upper:g}")
        if not 2 <= self.points <= 1 << 20:
            raise ValueError(f"points must lie in [2, 2^20], got {self.points}")
        plan_roc_noise(epsilon=self.epsilon, points=self.points, split=self.split)  # the node noise must be drawable
        try:
            self.grid()
        except ValueError as exc:
            raise ValueError(f"domain {self.lower:g}:{self.upper:g} with points {self.points}: {exc}") from None
        object.__setattr__(self, "columns", tuple(self.columns))

    def public(self) -> dict[str, Any]:
        """The parameters every party must share (checked before any data)."""
        return {"columns": list(self.columns), "domain": [self.lower, self.upper], "points": self.points,
                "epsilon": self.epsilon, "split": self.split, "missing": self.missing.mode,
                "fill": [list(item) for item in self.missing.fills]}

    def grid(self) -> np.ndarray:
        """The public grid: ``points`` evenly spaced thresholds from ``lower`` to ``upper``."""
        return grid_of_points(self.lower, self.upper, self.points)

    def _spend(self) -> tuple[Spend, str | None]:
        """``dp.ecdf.release``'s spend: epsilon, pure DP (two tree-mechanism class ECDFs, split as ``split`` says)."""
        return Spend(epsilon=float(self.epsilon), mechanism="distributed discrete Laplace tree noise",
                     what=f"ROC of {','.join(self.columns)} on {self.points} grid points, two class ECDFs "
                          f"({self.split} split)"), None

    async def _release(self, rows: Any, *, receivers: Sequence[int] | None = None,
                       noise_source: ClassNoiseSource | None = None) -> RocRelease | None:
        """``dp.ecdf.release``: every party, its own ``(score, label)`` rows (scores clipped to the domain at their
        owner), on a started MPyC runtime (:func:`run_secure_roc`); the release at ``receivers`` (default all)."""
        from mpyc.runtime import mpc

        owned, unit = None, 1
        if isinstance(rows, Owners):  # the campaign's servers: each class's counts from the owners' DPF keys
            what, unit = "ROC curve", rows.plan.rows_per_owner
            counts, (cells, marks) = await owner_cells(rows, self.columns, what, lambda _: mpc.SecInt())
            owned = [(at_points(c, cells, self.grid(), self.lower, self.upper), rows.rows)
                     for c in by_label(counts, marks, what)]
            rows = np.empty((0, 2))
        scores, labels = check_score_label_rows(rows)
        release = await run_secure_roc(np.clip(scores, self.lower, self.upper), labels, self.grid(),
                                       epsilon=self.epsilon, split=self.split, noise_source=noise_source,
                                       receivers=receivers, owned=owned, unit_rows=unit)
        return None if release is None else replace(release, query=self)

    def _union(self, rows_by_party: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, int]:
        scores, labels, parties = check_rows_by_party(rows_by_party)
        return np.clip(scores, self.lower, self.upper), labels, parties

    def _simulate(self, rows_by_party: Sequence[Any], *, seed: int, threshold: int | None = None,
                  noise_rng: np.random.Generator | None = None) -> RocRelease:
        """``dp.ecdf.simulate``: :func:`private_roc` on the union of the parties' rows, every party's node draws
        (OS randomness unless ``noise_rng``).  Every row is counted: the public ``seed`` picks nothing here."""
        check_seed(seed)
        scores, labels, parties = self._union(rows_by_party)
        release = private_roc(scores, labels, self.grid(), epsilon=self.epsilon, split=self.split, parties=parties,
                              threshold=(parties - 1) // 2 if threshold is None else threshold, rng=noise_rng)
        return replace(release, query=self)

    def _exact(self, rows_by_party: Sequence[Any]) -> float:
        """``dp.ecdf.exact``: the AUC of the exact ROC curve on the grid (scores rounded up to it)."""
        scores, labels, _ = self._union(rows_by_party)
        grid = self.grid()
        exact = RocRelease(query=self, grid=grid, positive_counts=true_counts(scores[labels == 1], grid),
                           negative_counts=true_counts(scores[labels == 0], grid), n=len(scores))
        return float(exact.curve(None).auc)


def auc_digits(noise_std: float) -> int:
    """Decimals to print an AUC with: down to two significant digits of its noise std, at least 3, at most 6."""
    if not noise_std > 0:
        return 6
    return int(min(6, max(3, 1 - math.floor(math.log10(noise_std)))))


@dataclass(frozen=True, kw_only=True)
class RocRelease:
    """The two released noisy class count vectors on the grid (``#{label 1, score <= tau_i} + tree noise``, the same
    for label 0), the query, ``n`` (all rows, public; class sizes not released) and the run's costs."""

    query: RocQuery
    grid: np.ndarray
    positive_counts: np.ndarray
    negative_counts: np.ndarray
    n: int
    parties: int = 1
    threshold: int = 0
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    unit_rows: int = 1
    owners: dict[str, Any] | None = None  # from owners' uploads: :meth:`dp.umpc.owners.Owners.record`

    @property
    def epsilon(self) -> float:
        """Budget of the pair of class ECDFs."""
        return float(self.query.epsilon)

    @property
    def split(self) -> str:
        """How ``epsilon`` is split between the class ECDFs."""
        return self.query.split

    @property
    def class_epsilon(self) -> float:
        """Budget of each class ECDF (:func:`class_epsilon`)."""
        return class_epsilon(self.epsilon, len(self.grid), self.split)

    @property
    def plan(self) -> TreeNoisePlan:
        """The tree noise plan each class ECDF was released with."""
        return plan_roc_noise(epsilon=self.epsilon, points=len(self.grid), split=self.split, parties=self.parties,
                              threshold=self.threshold, unit_rows=self.unit_rows)

    @property
    def count_std(self) -> float:
        """Standard deviation of the noise on one released count."""
        return math.sqrt(self.plan.point_variance)

    @property
    def positive_total(self) -> int:
        """The noisy number of rows of class 1 (the released count at ``tau_N``)."""
        return int(self.positive_counts[-1])

    @property
    def negative_total(self) -> int:
        """The noisy number of rows of class 0."""
        return int(self.negative_counts[-1])

    def unusable_classes(self) -> list[str]:
        """The classes (``"positive"``, ``"negative"``) whose noisy total is 0 or below: their rates are the
        noisy counts over 1 (:func:`self_normalise`), clipped, and mean nothing (public: the totals are released)."""
        return [name for name, total in (("positive", self.positive_total), ("negative", self.negative_total))
                if total < 1]

    def rates(self) -> tuple[np.ndarray, np.ndarray]:
        """The self-normalised class ECDFs ``(F_pos, F_neg)`` on the grid, clipped to ``[0, 1]`` (not monotone;
        the clipping is post-processing and changes nothing where the noisy counts lie in ``[0, total]``)."""
        return self.smoothed_rates(None)

    def smoothed_rates(self, norm: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The self-normalised rates smoothed by eq. 3 with ``norm`` 1 or 2 (from the unclipped values, as the
        paper; the result lies in ``[0, 1]``), or ``None``: the raw :meth:`rates` (clipped)."""
        positive, negative = self_normalise(self.positive_counts)[0], self_normalise(self.negative_counts)[0]
        if norm is None:
            return np.clip(positive, 0.0, 1.0), np.clip(negative, 0.0, 1.0)
        from smoothing.monotone import smooth_ecdf

        incidence = prefix_incidence(len(self.grid))
        return smooth_ecdf(positive, incidence, norm=norm).values, smooth_ecdf(negative, incidence, norm=norm).values

    def curve(self, norm: int | None = 2) -> Any:
        """The ROC curve (:class:`smoothing.roc.RocCurve`) of the (smoothed) self-normalised ECDFs."""
        from smoothing.roc import roc_from_ecdfs

        positive, negative = self.smoothed_rates(norm)
        return roc_from_ecdfs(positive, negative, thresholds=self.grid)

    @property
    def guarantee(self) -> str:
        """Which noise ran and what it guarantees, in one line, with how epsilon is split and why it composes."""
        from dp.noise_defaults import party_guarantee

        each, levels = self.class_epsilon, tree_depth(len(self.grid)) + 1
        if self.split == "half":
            split = (f"epsilon {self.epsilon:g} = {each:g} (class 1 ECDF) + {each:g} (class 0 ECDF), sequential "
                     f"composition (Barczewski et al. §5.1)")
        else:
            split = (f"epsilon {self.epsilon:g}: {each:.6g} per class ECDF (disjoint classes; a label change "
                     f"shifts a suffix of each, {math.ceil(levels / 2)} of {levels} tree nodes)")
        return (party_guarantee(self.epsilon, 0.0, self.parties, self.threshold, "discrete laplace")
                + f" (two class ECDFs, {split}; class sizes private)")

    @cached_property
    def interval(self) -> AucInterval:
        """The AUC's bootstrap interval and warnings for the query's smoothing (:func:`auc_interval`)."""
        return auc_interval(self, smooth=self.query.smooth)

    def table(self) -> str:
        """The text the job prints: the table, the noise and interval lines, warnings and unusable classes."""
        query, interval = self.query, self.interval
        score, label = query.columns
        curve, raw, digits = self.curve(query.smooth), self.curve(None), auc_digits(interval.noise_std)
        lines = [text_table([
            ("statistic", f"ROC curve of {score} for {label} (scores and labels private)"),
            ("AUC", f"{curve.auc:.{digits}f} ({interval.level:.0%} interval {interval.low:.{digits}f} to "
                    f"{interval.high:.{digits}f}, noise std {interval.noise_std:.2g}"
                    + (")" if query.smooth is None else f"; smoothed p = {query.smooth}, raw curve "
                                                        f"{raw.auc:.{digits}f})")),
            ("grid", f"{len(self.grid)} thresholds on [{query.lower:g}, {query.upper:g}]"),
            ("epsilon", f"{self.epsilon:g}: {self.class_epsilon:.6g} per class ECDF ({self.split} split)"),
            ("n", f"{self.n} rows (class sizes not released; noisy totals {self.positive_total} and "
                  f"{self.negative_total}, count noise std {self.count_std:.3g})"),
            *run_rows(self, query.missing),
        ], title="Private ROC curve, self-normalised (Barczewski, Mawass & Ramon §5.1)"),
            f"  noise: {self.guarantee}", f"  interval: {interval.meaning()}"]
        lines += [f"  warning: {warning}" for warning in interval.warnings]
        if unusable := self.unusable_classes():
            which = (f"noisy total of the {unusable[0]} class is 0 or below: that class's" if len(unusable) == 1 else
                     "noisy totals of both classes are 0 or below: their")
            lines.append(f"  the {which} rates (and the curve and AUC) mean nothing at this epsilon; raise --epsilon or "
                         f"use more rows")
        return "\n".join(lines)

    def record(self) -> dict[str, Any]:
        """The JSON record: the AUC (smoothed as the query says, and raw), its interval and warnings, the released
        counts, the curve, the budget split, the costs."""
        query, interval = self.query, self.interval
        curve = self.curve(query.smooth)
        warnings = list(interval.warnings) + [f"the noisy total of the {name} class is 0 or below: the curve and AUC "
                                              f"mean nothing" for name in self.unusable_classes()]
        return {"statistic": "roc", "estimate": curve.auc, "auc_raw": self.curve(None).auc,
                "interval": interval.record(), "warning": " ".join(f"{w}." for w in warnings) or None,
                "epsilon": self.epsilon, "delta": 0.0, "class_epsilon": self.class_epsilon, "split": self.split,
                "smooth": query.smooth, "n": self.n, "pairs": None, "points": len(self.grid),
                "parties": self.parties, "threshold": self.threshold, "seconds": self.seconds,
                "bytes_sent": self.bytes_sent, "phases": self.phases, "noise_source": "parties",
                "guarantee": self.guarantee, "count_std": self.count_std,
                "positive_counts": [int(c) for c in self.positive_counts],
                "negative_counts": [int(c) for c in self.negative_counts],
                "false_positive_rate": curve.false_positive_rate.tolist(),
                "true_positive_rate": curve.true_positive_rate.tolist(),
                "missing": query.missing.mode, "fill": dict(query.missing.fills),
                **({"owners": self.owners} if self.owners else {})}


def plan_roc_noise(*, epsilon: float, points: int, split: str = "half", parties: int = 1,
                   threshold: int = 0, unit_rows: int = 1) -> TreeNoisePlan:
    """The tree noise plan of each class ECDF (budget :func:`class_epsilon`); ValueError names a bad parameter."""
    return plan_tree_noise(epsilon=class_epsilon(epsilon, points, split), points=points, parties=parties,
                           threshold=threshold, unit_rows=unit_rows)


def _default_query(grid: np.ndarray, epsilon: float, split: str) -> RocQuery:
    """The query of a release made from a grid (the protocol functions), domain its first and last point."""
    return RocQuery(epsilon=epsilon, lower=float(grid[0]), upper=float(grid[-1]), points=len(grid),
                    split=check_choice(split, SPLITS, "split"))  # type: ignore[arg-type]


def private_roc(scores: npt.ArrayLike, labels: npt.ArrayLike, grid: npt.ArrayLike, *, epsilon: float,
                split: str = "half", parties: int = 1, threshold: int = 0,
                positive_noise: npt.ArrayLike | None = None, negative_noise: npt.ArrayLike | None = None,
                rng: np.random.Generator | None = None) -> RocRelease:
    """The simulated path (one process, all rows at hand): the two noisy class count vectors.  ``positive_noise``
    / ``negative_noise``: each class's total node noise (summed over parties; ``None``: ``plan.draw_total(rng)``);
    with the secure path's draws the result equals :func:`run_secure_roc`'s.  ValueError: bad rows or parameter."""
    taus = np.asarray(grid, dtype=float)
    positive, negative = class_scores(scores, labels)
    rows = positive.size + negative.size
    if rows == 0:
        raise ValueError("need at least 1 row for a ROC curve, got 0")
    plan = plan_roc_noise(epsilon=epsilon, points=len(taus), split=split, parties=parties, threshold=threshold)
    noise_1 = plan.draw_total(rng) if positive_noise is None else np.asarray(positive_noise)
    noise_0 = plan.draw_total(rng) if negative_noise is None else np.asarray(negative_noise)
    return RocRelease(query=_default_query(taus, epsilon, split), grid=taus,
                      positive_counts=noisy_counts(true_counts(positive, taus), noise_1),
                      negative_counts=noisy_counts(true_counts(negative, taus), noise_0), n=rows,
                      parties=plan.parties, threshold=plan.threshold)


#: Re-noised copies behind :func:`auc_interval`: all vectorised on the raw curve; on the smoothed curve every
#: copy costs two solves of eq. 3 (about 2-3 ms each at N = 256), hence fewer.
RAW_DRAWS = 2000
SMOOTHED_DRAWS = 400

#: Public seed of the band's generator (post-processing of released values: nothing to protect; never the
#: release's own noise, which comes from the operating system).
BAND_SEED = 0x524F43  # "ROC"

#: An AUC interval wider than this is called noise-dominated: 40 % of the range 0.5..1 of a better-than-chance
#: score, and about where the percentile interval stops covering at its nominal rate (:func:`auc_interval`).
WIDE_AUC = 0.2


@dataclass(frozen=True)
class AucInterval:
    """A parametric-bootstrap interval for the AUC from released values and the public noise law only (it covers
    DP noise only; fields and measured coverage: docs/roc.md)."""

    estimate: float
    low: float
    high: float
    noise_std: float
    level: float
    draws: int
    seed: int
    smooth: int | None
    warnings: tuple[str, ...]

    def meaning(self) -> str:
        """What the interval is, in one sentence."""
        curve = "raw" if self.smooth is None else f"smoothed (p = {self.smooth})"
        return (f"{self.level:.0%} parametric-bootstrap interval: the released class counts re-noised {self.draws} "
                f"times with the public noise law (post-processing, public seed {self.seed}), the {curve} AUC "
                f"recomputed, central {self.level:.0%}; it covers DP noise only (every row counted)")

    def record(self) -> dict[str, Any]:
        """The record's ``interval`` entry."""
        return {"low": self.low, "high": self.high, "level": self.level, "noise_std": self.noise_std,
                "draws": self.draws, "seed": self.seed, "method": "parametric bootstrap, percentile",
                "meaning": self.meaning()}


def auc_interval(release: RocRelease, *, smooth: int | None, draws: int | None = None, level: float = 0.95,
                 seed: int = BAND_SEED) -> AucInterval:
    """The AUC's interval and warnings (:class:`AucInterval`; post-processing, no privacy cost) for the AUC smoothed
    with norm ``smooth`` (``None``: raw); ValueError unless ``draws >= 100``, ``0 < level < 1`` (docs/roc.md)."""
    copies = (RAW_DRAWS if smooth is None else SMOOTHED_DRAWS) if draws is None else int(draws)
    if copies < 100:
        raise ValueError(f"draws must be at least 100, got {draws}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    from smoothing.roc import batch_auc

    rng, plan, rates = np.random.Generator(np.random.PCG64(seed)), release.plan, []
    for counts in (release.positive_counts, release.negative_counts):  # self-normalised copies, positive first
        noise = sum((plan.draw_party(rng, runs=copies) for _ in range(plan.parties)),  # m parties' fresh draws
                    np.zeros((copies, plan.node_count), dtype=np.int64))
        copied = noisy_counts(np.asarray(counts, dtype=np.int64), noise)
        normalised = copied.astype(float) / np.maximum(copied[:, -1:], 1).astype(float)
        if smooth is None:
            rates.append(np.clip(normalised, 0.0, 1.0))
        else:  # cvxpy loads only here
            from smoothing.monotone import smooth_many

            rates.append(smooth_many(normalised, prefix_incidence(len(release.grid)), norm=smooth))
    areas = batch_auc(*rates)
    estimate = float(release.curve(smooth).auc)
    low, high = (float(q) for q in np.quantile(areas, [(1 - level) / 2, (1 + level) / 2]))
    warnings: list[str] = []
    if high - low > WIDE_AUC:
        warnings.append(f"the AUC's {level:.0%} interval is {high - low:.2f} wide, more than {WIDE_AUC:g} of the "
                        f"range 0.5..1 of a better-than-chance score: the noise dominates, and the interval itself "
                        f"is rough (it covers less often than {level:.0%} at this noise)")
    if low <= 0.5 <= high:
        warnings.append("the interval contains 0.5: at this epsilon the release cannot tell the score from chance")
    spread = float(np.std(areas)) if np.ptp(areas) > 0 else 0.0  # identical copies: exactly 0, not round-off
    return AucInterval(estimate, low, high, spread, float(level), copies, seed, smooth, tuple(warnings))


async def run_secure_roc(scores: np.ndarray, labels: np.ndarray, grid: np.ndarray, *, epsilon: float,
                         split: str = "half", noise_source: ClassNoiseSource | None = None,
                         receivers: Sequence[int] | None = None, owned: Sequence[tuple[Any, int]] | None = None,
                         unit_rows: int = 1) -> RocRelease | None:
    """Every party calls this with its own ``(score, label)`` rows (scores clipped by the caller) on a started MPyC
    runtime, parameters agreed: two secure tree-mechanism releases, class 1 then class 0, only each party's total row
    count exchanged; the release at ``receivers`` (default all), ``None`` elsewhere.  Parameters: docs/roc.md."""
    from mpyc.runtime import mpc

    from dp.ecdf.secure_release import run_secure_ecdf

    taus = np.asarray(grid, dtype=float)
    positive, negative = class_scores(scores, labels)
    plan = plan_roc_noise(epsilon=epsilon, points=len(taus), split=split, parties=len(mpc.parties),
                          threshold=int(mpc.threshold), unit_rows=unit_rows)
    own_rows = positive.size + negative.size
    releases = []
    for label, values in ((1, positive), (0, negative)):
        source = None if noise_source is None else (lambda p, label=label: noise_source(p, label))
        releases.append(await run_secure_ecdf(values, taus, plan, noise_source=source, receivers=receivers,
                                              public_rows=own_rows, owned=owned[1 - label] if owned else None))
    first, second = releases
    if first is None or second is None:
        return None
    phases = {f"class {label} {name}": cost for label, release in ((1, first), (0, second))
              for name, cost in release.phases.items()}
    return RocRelease(query=_default_query(taus, epsilon, split), grid=taus, positive_counts=first.counts,
                      negative_counts=second.counts, n=first.n, parties=plan.parties, threshold=plan.threshold,
                      unit_rows=unit_rows,
                      seconds=first.seconds + second.seconds, bytes_sent=first.bytes_sent + second.bytes_sent,
                      phases=phases)
