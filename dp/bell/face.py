"""The local-model face (Bell et al.): one :class:`Query`, and :func:`release`, :func:`simulate`, :func:`exact`.

Threat model: local DP -- every user randomizes its own value before it leaves (epsilon-LDP per user), an
untrusted server aggregates the reports; no MPC parties (both sides run here in one process).  Details: docs/ldp.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dp.bell.auc import ldp_auc
from dp.bell.generic import histogram, quantized_ustatistic, randomize, renyi2_entropy_from_histogram
from dp.bell.generic import simulate as simulate_generic
from dp.bell.hierarchical import SPLITS, _check_domain_size
from dp.bell.quantize import MATRIX_KINDS, Quantizer, gini_kernel, kernel_matrix
from dp.report_text import text_table
from dp.validation import check_choice, check_delta, check_epsilon, check_score_label_rows

__all__ = ["Query", "BellRelease", "release", "simulate", "exact", "Statistic"]

Statistic = Literal["gini", "renyi2", "auc"]


@dataclass(frozen=True, kw_only=True)
class Query:
    """A statistic released in the local model at each user's budget ``epsilon``: ``gini`` (Algorithm 1), ``renyi2``
    (eq. 5) or ``auc`` (§5, eq. 10); which parameters each one reads: docs/ldp.md."""

    statistic: Statistic
    epsilon: float
    lower: float = 0.0
    upper: float = 1.0
    bins: int = 16
    kind: Literal["average", "midrange", "midpoint"] = "average"
    levels: tuple[float, ...] = ()
    domain_size: int = 1024
    split: Literal["users", "budget"] = "users"
    delta: float = 0.0

    def __post_init__(self) -> None:
        check_choice(self.statistic, ("gini", "renyi2", "auc"), "statistic")
        check_epsilon(self.epsilon)
        check_choice(self.kind, MATRIX_KINDS, "kind")
        check_choice(self.split, SPLITS, "split")
        check_delta(self.delta)
        self.quantizer()
        _check_domain_size(self.domain_size)

    def quantizer(self) -> Quantizer | None:
        """The users' quantization (``gini``: the interval's bins; ``renyi2``: the levels)."""
        if self.statistic == "gini":
            return Quantizer.interval(lower=self.lower, upper=self.upper, bins=self.bins)
        return Quantizer.levels(self.levels) if self.statistic == "renyi2" else None

    def _run(self, data: Any, rng: np.random.Generator | None) -> float:
        if self.statistic == "auc":
            scores, labels = check_score_label_rows(data)
            return ldp_auc(scores[labels == 1], scores[labels == 0], domain_size=self.domain_size, epsilon=self.epsilon,
                           delta=self.delta, split=self.split, rng=rng).auc
        quantizer = self.quantizer()
        assert quantizer is not None
        if self.statistic == "renyi2":  # each user reports its category by k-RR
            reports = randomize(quantizer.quantize(data), bins=quantizer.bins, epsilon=self.epsilon, rng=rng)
            return float(renyi2_entropy_from_histogram(histogram(reports, bins=quantizer.bins), epsilon=self.epsilon))
        return float(simulate_generic(data, gini_kernel, quantizer=quantizer, epsilon=self.epsilon, kind=self.kind,
                                      rng=rng))


@dataclass(frozen=True)
class BellRelease:
    """The server's estimate from ``n`` users' reports."""

    query: Query
    estimate: float
    n: int

    def record(self) -> dict[str, Any]:
        """The JSON record: the estimate and the public parameters."""
        query = self.query
        return {"statistic": query.statistic, "model": "local", "estimate": self.estimate, "epsilon": query.epsilon,
                "delta": query.delta, "n": self.n,
                "guarantee": f"{query.epsilon:g}-LDP per user" if query.delta == 0 else
                f"({query.epsilon:g}, {query.delta:g})-LDP per user"}

    def table(self) -> str:
        """The text a job prints."""
        return text_table([(key, f"{value:.6g}" if isinstance(value, float) else str(value))
                           for key, value in self.record().items()], "Local-model release (Bell et al.)")


def release(query: Query, data: Any) -> BellRelease:
    """The mechanism on real data with OS randomness, what a deployment runs: every user's local randomizer and
    the server's aggregation, in one process.  ``data``: one value per user (``gini``, ``renyi2``) or
    ``(score, label)`` rows (``auc``)."""
    return BellRelease(query, query._run(data, None), len(data))


def simulate(query: Query, data: Any, *, seed: int, noise_rng: np.random.Generator | None = None) -> BellRelease:
    """The release on public or synthetic data with the users' noise from ``noise_rng`` (default: the OS); ``seed``
    is the family's public seed (nothing public is sampled here)."""
    return BellRelease(query, query._run(data, noise_rng), len(data))


def exact(query: Query, data: Any) -> float:
    """The non-private value the protocol estimates without bias: the U-statistic of the quantized kernel matrix
    on the quantized values (``gini``), ``-log`` of the collision U-statistic (``renyi2``), or the AUC with ties
    1/2 (``auc``)."""
    if query.statistic == "auc":
        from dp.fedauc.ranks import auc_from_ranks, average_ranks

        scores, labels = check_score_label_rows(data)
        return auc_from_ranks(average_ranks(scores), labels)
    quantizer = query.quantizer()
    assert quantizer is not None
    if query.statistic == "renyi2":
        collision = quantized_ustatistic(data, quantizer, np.eye(quantizer.bins))
        return -math.log(min(max(collision, 1.0 / quantizer.bins), 1.0))
    return quantized_ustatistic(data, quantizer, kernel_matrix(gini_kernel, quantizer, kind=query.kind))
