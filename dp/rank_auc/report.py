"""The rank AUC's release: the noisy ``2U`` and ``P``, the estimate, its uncertainty, the table and the record."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dp.noise_plans import NoisePlan
from dp.rank_auc.query import Query
from dp.report_text import phases_text, run_rows, text_table
from dp.umpc.report import local_note

__all__ = ["RankAucRelease", "estimate_auc", "estimate_noise_std"]


def estimate_auc(twice_u: float, positives: float, rows: int) -> float:
    """``(2U/2) / (P (n-P))``; NaN when the noisy class sizes leave no pair."""
    pairs = positives * (rows - positives)
    return float(twice_u / 2 / pairs) if pairs > 0 else float("nan")


def estimate_noise_std(plans: Sequence[NoisePlan], twice_u: float, positives: float, rows: int) -> float:
    """Sd of the estimate due to the noise: the delta method on ``(2U/2) / (P (n - P))`` with the released sums
    plugged in (post-processing); ``nan`` when the noisy class sizes leave no pair."""
    pairs = positives * (rows - positives)
    if pairs <= 0:
        return float("nan")
    d_twice_u = 1.0 / (2.0 * pairs)
    d_positives = -(twice_u / 2.0) * (rows - 2.0 * positives) / pairs ** 2
    return math.sqrt(plans[0].variance * d_twice_u ** 2 + plans[1].variance * d_positives ** 2)


@dataclass
class RankAucRelease:
    """The released noisy ``2U`` and ``P``, the estimate, the costs; :meth:`table` and :meth:`record`.
    A job running several releases on the same rows sets ``runs``, ``epsilon_total`` and ``budget`` (the settled
    ledger keys) after the last one; ``notes`` are lines printed above the table."""

    estimate: float
    twice_u: int
    positives: int
    n: int
    epsilon: float
    parties: int
    threshold: int
    query: Query
    seconds: float = 0.0
    bytes_sent: int = 0
    phases: dict[str, dict[str, float]] = field(default_factory=dict)
    delta: float = 0.0
    noise_source: str = "parties"
    mechanism: str = "discrete laplace"
    guarantee: str = ""
    noise_std: float = 0.0
    #: the path that computed the sums (``histogram`` or ``sort``) and the planner's line
    path: str = "sort"
    plan: str = ""
    #: the sort's masked openings and their delta (:meth:`dp.comparison_leakage.ComparisonLeak.record`)
    comparison_leak: dict[str, Any] = field(default_factory=dict)
    #: this party's own count of filled missing values (printed locally, never recorded)
    filled: int = 0
    runs: int = 1
    epsilon_total: float | None = None
    budget: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    owners: dict[str, Any] | None = None  # from owners' uploads: :meth:`dp.umpc.owners.Owners.record`

    @property
    def no_estimate(self) -> str | None:
        """Why there is no AUC, or None: the noisy number of pairs ``P (n - P)`` is not positive.  Said in terms of
        the released sums only: the labels are secret, so the true class sizes are never claimed."""
        if self.positives * (self.n - self.positives) > 0:
            return None
        return (f"no AUC at this epsilon: the noisy number of pairs P (n - P) is not positive (noisy P = "
                f"{self.positives} of n = {self.n} rows; post-processing of the released sums)")

    @property
    def released_estimate(self) -> float | None:
        """The estimate, or None when there is none (:attr:`no_estimate`): never NaN in a record."""
        return None if self.no_estimate is not None else self.estimate

    def honest_keys(self) -> dict[str, Any]:
        """The record's uncertainty keys (as :meth:`dp.umpc.protocol.UStatRelease.record`), None, never NaN: all
        ``n (n - 1) / 2`` pairs enter 2U, so the error is the noise's only (no sampling error, no seed)."""
        std = self.noise_std if math.isfinite(self.noise_std) else None
        return {"noise_std": std, "sampling_error_bound": 0.0, "error_bound": std, "seed": None,
                "uncertainty_covers": "DP noise only (noise_std, delta method with the released sums); all pairs, "
                                      "no sampling error"}

    def record(self) -> dict[str, Any]:
        """The JSON record the job writes (``--json``: a list of these, one per run)."""
        missing = self.query.missing
        return {"statistic": "auc", "estimate": self.released_estimate, "epsilon": self.epsilon, "delta": self.delta,
                "n": self.n, "parties": self.parties, "seconds": self.seconds, "bytes_sent": self.bytes_sent,
                "epsilon_total": self.epsilon if self.epsilon_total is None else self.epsilon_total,
                "delta_total": self.delta * self.runs, "runs": self.runs, **self.budget,
                "threshold": self.threshold, "noise_source": self.noise_source, "mechanism": self.mechanism,
                "guarantee": self.guarantee, "phases": self.phases, "noisy_2u": self.twice_u,
                "noisy_positives": self.positives, "path": self.path, "plan": self.plan, **self.comparison_leak,
                "missing": missing.mode, "fill": dict(missing.fills), **self.honest_keys(),
                **({"owners": self.owners} if self.owners else {})}

    def table(self) -> str:
        """The text the job prints: notes, the table, the plan, the guarantee, this party's local counts, phases."""
        query = self.query
        rows = [("statistic", f"AUC of {query.score.name} for {query.label} (scores and labels secret)"),
                ("private estimate", f"{self.estimate:.6g}" if self.no_estimate is None else self.no_estimate),
                ("uncertainty", f"noise std {self.noise_std:.2g} (all pairs, no sampling error)"
                 if self.no_estimate is None else "none (no estimate)"),
                ("epsilon", self._spent()), ("n", f"{self.n} rows"), *run_rows(self, query.missing)]
        return "\n".join([*self.notes, text_table(rows, f"Private AUC, scores and labels secret ({self.path} path)"),
                          f"  {self.plan}", f"  noise: {self.guarantee}", local_note(filled=self.filled),
                          phases_text(self.phases)])

    def _spent(self) -> str:
        """The epsilon line: this run's budget and, over several runs on the same rows, the total."""
        runs, delta = self.runs, self.delta
        if runs == 1:
            text = f"{self.epsilon:g} (2U and P, epsilon/2 each)"
        else:
            text = (f"{self.epsilon_total:g} in total: {self.epsilon:.3g} per run x {runs} runs on the same rows "
                    f"(2U and P, half each)")
        if delta:
            text += f"; delta {delta:.2g}" + (f" per run, {delta * runs:.2g} in total" if runs > 1 else "")
        return text
