"""FedAUC's face (Sun et al.): one :class:`Query`, and :func:`release`, :func:`simulate`, :func:`exact`.

Threat model: label DP (Sun et al. §3): scores, ranks and the client layout are public, labels private; each client
randomizes its labels or local statistics, the server aggregates; no MPC parties.  Details: docs/fedauc.md."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dp.fedauc.montecarlo import FedAucSimulation, check_parameters, simulate_fedauc
from dp.fedauc.ranks import LAYOUTS, auc_from_ranks, average_ranks
from dp.report_text import text_table
from dp.validation import check_choice, check_score_label_rows

__all__ = ["Query", "FedAucRelease", "release", "simulate", "exact", "Method", "Layout"]

Method = Literal["rr", "rr_noisy", "global_laplace", "local_laplace", "adaptive_laplace", "global_gaussian",
                 "local_gaussian", "adaptive_gaussian", "orthogonal_laplace", "orthogonal_gaussian"]
Layout = Literal["iid", "non_iid", "one_per_client"]


@dataclass(frozen=True, kw_only=True)
class Query:
    """A label-DP AUC by one of FedAUC's estimators (:data:`dp.fedauc.montecarlo.METHODS`); the parameters and their
    errors (ValueError naming the parameter, TypeError a wrong type): docs/fedauc.md."""

    method: Method
    epsilon: float
    delta: float = 0.0
    clients: int | None = None
    layout: Layout = "iid"
    sum_fraction: float = 0.5
    counts: Literal["noisy", "exact"] = "noisy"

    def __post_init__(self) -> None:
        check_parameters(self.method, self.epsilon, self.sum_fraction, self.delta, self.counts)
        check_choice(self.layout, LAYOUTS, "layout")

    def _run(self, data: Any, seed: int | None, runs: int, noise_rng: np.random.Generator | None) -> FedAucSimulation:
        scores, labels = check_score_label_rows(data)
        layout_rng = np.random.default_rng(seed)  # public: the layout (seed None: fresh OS entropy)
        return simulate_fedauc(scores, labels, method=self.method, epsilon=self.epsilon, clients=self.clients,
                               layout=self.layout, runs=runs, rng=layout_rng, sum_fraction=self.sum_fraction,
                               delta=self.delta, counts=self.counts, noise_rng=noise_rng)


@dataclass(frozen=True)
class FedAucRelease:
    """The server's AUC estimate; a simulation also carries its runs and closed forms (from all labels: no release)."""

    query: Query
    estimate: float
    samples: int
    clients: int
    simulation: FedAucSimulation | None = None

    def record(self) -> dict[str, Any]:
        """The JSON record: the estimate (None where the noisy counts leave no pair) and the public parameters."""
        query = self.query
        record: dict[str, Any] = {"statistic": "auc", "protocol": "fedauc", "method": query.method,
                                  "estimate": self.estimate if math.isfinite(self.estimate) else None,
                                  "epsilon": query.epsilon, "delta": query.delta, "counts": query.counts,
                                  "layout": query.layout, "clients": self.clients, "samples": self.samples}
        sim = self.simulation
        if sim is not None:
            record.update(runs=sim.runs, mean=sim.mean, std=sim.std, exact_auc=sim.exact_auc,
                          predicted_std=sim.predicted_std, paper_std=sim.paper_std, undefined_runs=sim.undefined_runs)
        return record

    def table(self) -> str:
        """The text a job prints."""
        return text_table([(key, f"{value:.6g}" if isinstance(value, float) else str(value))
                           for key, value in self.record().items() if key != "statistic"], "FedAUC, label-DP AUC")


def release(query: Query, data: Any) -> FedAucRelease:
    """The mechanism on real ``(score, label)`` rows with OS randomness, what a deployment runs: every client's
    local randomizer and the server's aggregation, in one process; the layout drawn from fresh OS entropy."""
    simulation = query._run(data, None, 1, None)
    return FedAucRelease(query, float(simulation.estimates[0]), simulation.samples, simulation.clients)


def simulate(query: Query, data: Any, *, seed: int, runs: int = 1,
             noise_rng: np.random.Generator | None = None) -> FedAucRelease:
    """``runs`` Monte Carlo runs on public or synthetic rows: the layout from the public ``seed``, the noise from
    ``noise_rng`` (default OS randomness); ``estimate`` is the first run's, ``simulation`` holds them all."""
    simulation = query._run(data, seed, runs, noise_rng)
    return FedAucRelease(query, float(simulation.estimates[0]), simulation.samples, simulation.clients, simulation)


def exact(query: Query, data: Any) -> float:
    """The non-private AUC (eq. 1, average ranks for ties: ``roc_auc_score``)."""
    scores, labels = check_score_label_rows(data)
    return auc_from_ranks(average_ranks(scores), labels)
