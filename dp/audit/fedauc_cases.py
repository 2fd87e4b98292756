"""Audit cases of FedAUC's label-DP Laplace and Gaussian releases (Sun et al., §4, §5, Algorithm 4).

Threat model: label DP; the server and any set of other clients see every report.  Details: docs/audit.md."""
from __future__ import annotations

import numpy as np
import numpy.typing as npt

from dp.audit.engine import AuditCase, paired
from dp.audit.neighbours import CASE_EPSILON, GAUSSIAN_DELTA, GAUSSIAN_EPSILON, fedauc_neighbours
from dp.audit.statistics import laplace_weights, privacy_loss_statistic
from dp.fedauc.mechanisms import ClientRelease, client_releases, noise_parameter, noisy_client_reports, zcdp_budget
from dp.fedauc.ranks import average_ranks, local_statistics
from dp.validation import check_choice, check_delta, check_epsilon, check_interval, check_positive_int

__all__ = ["fedauc_release", "fedauc_cases"]

_FEDAUC_LAPLACE = ("global_laplace", "local_laplace", "adaptive_laplace")
_FEDAUC_GAUSSIAN = ("global_gaussian", "local_gaussian", "adaptive_gaussian")


def _fedauc_components(scores: np.ndarray, labels: np.ndarray, client_of: np.ndarray, method: str,
                       sum_fraction: float) -> dict[str, ClientRelease]:
    """The integer reports of every client (Sun et al. Algorithm 4 and §5.3), by :func:`dp.fedauc.mechanisms.client_releases`."""
    stats = local_statistics(average_ranks(scores), labels, client_of)
    return client_releases(stats, method=method, samples=scores.size, sum_fraction=sum_fraction)


def _fedauc_parameters(components: dict[str, ClientRelease], method: str, epsilon: float,
                       delta: float) -> dict[str, np.ndarray]:
    """Per report and client: ``log alpha`` (Laplace) or ``sigma^2`` (Gaussian, budget
    ``rho_z = zcdp_budget(epsilon, delta)``), by :func:`dp.fedauc.mechanisms.noise_parameter`."""
    gaussian = method.endswith("_gaussian")
    budget = zcdp_budget(epsilon, delta) if gaussian else epsilon
    for name, c in components.items():
        if np.any(c.sensitivity <= 0):
            raise ValueError(f"every client's {name} report needs a positive sensitivity in the audit cases")
    return {name: noise_parameter(c, budget, gaussian) for name, c in components.items()}


def fedauc_release(scores: npt.ArrayLike, labels: npt.ArrayLike, client_of: npt.ArrayLike, *, method: str,
                   epsilon: float, delta: float = 0.0, sum_fraction: float = 0.5, runs: int,
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every client's noisy integer reports of FedAUC_Lap / Gaussian, ``runs`` times with ``rng``: ``{report name:
    int64 array (runs, K)}`` (the parameters: docs/audit.md).  :raise ValueError: on an invalid parameter."""
    check_choice(method, _FEDAUC_LAPLACE + _FEDAUC_GAUSSIAN, "method")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    gaussian = method.endswith("_gaussian")
    if gaussian == (dlt == 0.0):
        raise ValueError(f"delta must be in (0, 1) for Gaussian methods and 0 for Laplace ones, got {delta}")
    check_interval(sum_fraction, "sum_fraction", low=0.0, high=1.0, closed_low=False)
    r = check_positive_int(runs, "runs")
    values = np.asarray(scores, dtype=np.float64)
    components = _fedauc_components(values, np.asarray(labels, dtype=np.int64), np.asarray(client_of, dtype=np.int64),
                                    method, sum_fraction)
    _fedauc_parameters(components, method, eps, dlt)  # validates the sensitivities
    return noisy_client_reports(components, budget=zcdp_budget(eps, dlt) if gaussian else eps, gaussian=gaussian,
                                runs=r, rng=rng)


def _fedauc_case(method: str, *, epsilon: float, delta: float = 0.0) -> AuditCase:
    pair = fedauc_neighbours(method)
    gaussian = method.endswith("_gaussian")
    first = _fedauc_components(pair.scores, pair.first_labels, pair.client_of, method, 0.5)
    second = _fedauc_components(pair.scores, pair.second_labels, pair.client_of, method, 0.5)
    parameters = _fedauc_parameters(first, method, epsilon, delta)
    names = list(first)
    k = pair.client
    shifts = np.array([second[n].value[k] - first[n].value[k] for n in names], dtype=np.float64)
    if any(not np.array_equal(first[n].sensitivity, second[n].sensitivity) for n in names):
        raise RuntimeError("the calibration must not depend on the labels")
    claimed = np.array([parameters[n][k] for n in names])
    first_values = np.array([first[n].value[k] for n in names], dtype=np.float64)
    weights = shifts / claimed if gaussian else laplace_weights(claimed, shifts)  # shown in the description

    def statistic(labels: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        released = fedauc_release(pair.scores, labels, pair.client_of, method=method, epsilon=epsilon, delta=delta,
                                  runs=count, rng=rng)
        reports = np.stack([released[n][:, k] for n in names], axis=1)
        if gaussian:
            return reports @ weights  # likelihood-ratio direction (a sufficient statistic)
        return privacy_loss_statistic(reports, first_values, first_values + shifts, claimed)

    family = method.split("_")[0]
    reference = {"global": "Algorithm 4 with GlobalLaplace sensitivity 2(M-1) (App. N)",
                 "local": "Algorithm 4 with LocalLaplace sensitivity, the client's largest rank (§5.2)",
                 "adaptive": "the adaptive orthogonal split localP' / <v', y>' of §5.3"}[family]
    noise = ("exact discrete Gaussian (Canonne-Kamath-Steinke), rho_z = zcdp_budget(epsilon, delta) "
             "(Bun & Steinke Prop. 1.3)" if gaussian else "discrete Laplace on the integer reports")
    return AuditCase(
        name=f"fedauc-{method.replace('_', '-')}", epsilon=epsilon, delta=delta,
        sample=paired(statistic, pair.first_labels, pair.second_labels),
        mechanism=f"FedAUC label DP (Sun et al. §5): {reference}, {noise}, on 2 localSum and localP",
        statistic=(f"the flipped sample's client's reports {names}: " + (
            f"linear, weights {np.round(weights, 5).tolist()}" if gaussian else
            f"claimed privacy-loss statistic, rates {np.round(-claimed, 5).tolist()}")),
        neighbours=(f"label of sample {pair.flipped} (client {k}) flipped 0 -> 1; report shifts "
                    f"{shifts.astype(int).tolist()}"))


def fedauc_cases() -> list[AuditCase]:
    return [*(_fedauc_case(method, epsilon=CASE_EPSILON) for method in _FEDAUC_LAPLACE),
            _fedauc_case("global_gaussian", epsilon=GAUSSIAN_EPSILON, delta=GAUSSIAN_DELTA)]
