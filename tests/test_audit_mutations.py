r"""Mutation tests of the DP auditor: the shipped calibration, broken on purpose, must be flagged.

Every audit case of :mod:`dp.audit.central_cases` and :mod:`dp.audit.local_cases` drives the shipped release
code (the plans, party draws and release functions the protocols call), recalibrating at every batch.
So a regression in the shipped calibration reaches the audit.  Each test here monkeypatches one
calibration function *where the shipped module looks it up* and asserts that
:func:`dp.audit.engine.audit` proves ``eps_lb > epsilon`` (the claimed epsilon, fixed when the case was
built, before the patch); the ``unmutated`` tests assert the same case passes (``eps_lb <= epsilon``).

Mutations, per family (``mutation-*`` ids):

- ``eps-doubled``: the noise is calibrated for ``2 epsilon`` (true loss ``2 epsilon`` on a tight pair);
- ``sensitivity-halved``: calibrated for half the sensitivity (the same ``2 epsilon`` for Laplace; for
  the binomial mechanism the trials of ``(epsilon, delta)`` at ``Delta/2``; for the tree, half the
  nodes per change: node noise halved);
- ``shape-1/m``: each party's Pólya shape ``1/m`` instead of ``1/(m - t)`` (for delegation: ``1/|Z|``
  instead of ``1/(|Z| - t_Z)``): the ``m - t`` honest shares are lighter and more concentrated than
  ``DLap(alpha)``, true loss :func:`dp.audit.engine.exact_epsilon` of the honest pmf ``> epsilon``.

Families: U-MPC party noise, noise sampled in MPC, binomial, delegated, ECDF tree, rank AUC, FedAUC,
Hosmer-Lemeshow, and the LDP protocols (k-RR, Hadamard, hierarchical).  The ECDF tree's shape mutation
runs on the one-point grid: on ``N = 2^L >= 2`` points the tree's claim exceeds its loss by
``(L + 1)/L`` and a shape of ``1/m`` stays below the claim (exact count-level loss on ``N = 2``,
``m = 3``, ``t = 1``: 0.588 against a claim of 1), so no sound auditor can flag it there.  The binomial
analogue (``binomial-split-shape-1/m``: :func:`dp.calibration.party_binomial_trials` splits the trials
over ``m`` instead of ``m - t``, so the honest parties supply ``(m - t) ceil(N/m) < N``) is a violation
only in the tails at ``delta = 1e-5`` (``m = 3``, ``t = 1``: planned bounds 0.43 / 0.67 / 0.81 at
100 000 / 800 000 / 3 200 000 outputs against the claim 1); it runs on its own case
``umpc-kendall-binomial-m5-t2`` at ``delta = 1e-2`` (Delta = 8: 546 honest trials of the 906 needed,
exact delta 0.035 at epsilon 1, best threshold event of log-ratio 1.40; the binomial shift has a monotone
likelihood ratio, so threshold events are optimal), resolved at 100 000 (planned bound 1.03).  The 8-point tree (``L = 3``) is
audited on its whole released vector (``ecdf-tree-vector-m3-t1``, claimed log-likelihood ratio of
:func:`dp.audit.statistics.tree_privacy_loss_statistic`, epsilon 6): node noise halved and epsilon doubled
(count-level loss 9 against 6) are flagged; its sizes come from a pilot run (:func:`_tree_vector_law`)
because the statistic's exact law is not tractable.  Shape ``1/m`` there is no violation
(``test_mutation_tree_vector_shape_one_over_m_is_not_a_violation``: loss at most 5.699 < 6).  The
delegated shape mutation patches :func:`dp.umpc.delegation.delegate_noise_shape`, which the shipped
:func:`dp.umpc.delegation.delegate_plan` now calls (before, the plan computed ``1/(|Z| - t_Z)`` itself and the
patch was a no-op, hence "no size resolves it"); with one honest delegate (``t_Z = |Z| - 1``, the
``M_HF`` coalition holding every delegate but one) shape ``1/|Z| = 1/3`` is a large violation.

Sample sizes (derived, not tuned)
---------------------------------
For every mutation the test computes, under the patch, the *exact* law of the audited statistic
from the shipped (mutated) plan: the honest noise pmf (:func:`dp.audit.engine.honest_noise_pmf` of the plan's
shape and alpha; the binomial pmf of the honest trials; :func:`dp.secret_noise.construction_pmf` of
the in-MPC sampler; convolutions for the tree's linear statistic), then the probabilities ``(p, q)`` of
the audit's candidate events on the two datasets (threshold events; for the privacy-loss statistics
of :func:`dp.audit.statistics.privacy_loss_statistic` the product event at its maximum, ``p = prod P(eta_j
>= 0)``, ``q = prod P(eta_j >= |d_j|)``; for LDP the exact output pmfs of the shipped randomizer).
:func:`dp.audit.statistics.planned_lower_bound` gives the bound the audit reaches with the event counts
held ``PESSIMISM = 3`` standard deviations against it, at the audit's confidence ``CONFIDENCE``; the
sample size is the smallest of :data:`SIZES` at which that bound exceeds the claimed epsilon (its
log-ratio must exceed epsilon: the mutated mechanism's true epsilon does).  So each mutation is missed
with probability about ``Phi(-3) = 0.13 %`` (given the event chosen on the first half is the planned
one, which the half of equal size finds with the same counts), and a correct mechanism is flagged
with probability at most ``1 - CONFIDENCE = 0.1 %`` per test (Clopper-Pearson, any event choice):
over the 13 unmutated tests at most 1.3 %.  The unmutated test of a family runs at the largest size of
its mutations.  Seeds are fixed, so a run is reproducible.

Threat model: that of the audited cases (passive coalition of ``t < m/2`` parties; label DP for
FedAUC; an untrusted aggregator for LDP).
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from scipy import stats

import dp.calibration
import dp.ecdf.grid
import dp.ecdf.tree
import dp.fedauc.mechanisms
import dp.fedauc.ranks
import dp.ecdf.hosmer_lemeshow_release
import dp.bell.generic
import dp.bell.hadamard
import dp.bell.hierarchical
import dp.umpc.delegation
import dp.noise_plans
import dp.umpc.protocol
from dp.audit import central_cases as audit_cases
from dp.audit import neighbours as audit_neighbours
from dp.audit import local_cases as audit_local_cases
from dp.audit.engine import AuditCase, audit, clopper_pearson_lower, clopper_pearson_upper, exact_epsilon, honest_noise_pmf
from dp.audit.statistics import event_probabilities, planned_lower_bound
from dp.ecdf.grid import prefix_incidence
from dp.ecdf.tree import plan_tree_noise
from dp.rank_auc import plans_for_rows
from dp.umpc.delegation import delegate_plan
from dp.secret_noise import construction_pmf

#: Confidence of every audit here (the bound of a correct mechanism exceeds epsilon w.p. <= 0.1 %).
CONFIDENCE = 0.999
#: Standard deviations of the event counts held against the audit when planning the sample size.
PESSIMISM = 3.0
#: Candidate sample sizes per dataset (the smallest that resolves the mutation is used).
SIZES = (10_000, 20_000, 50_000, 100_000, 200_000, 400_000, 800_000)
#: Events rarer than this (on either dataset) are not planned on: the audit picks thresholds among
#: 400 quantiles of the pooled first half, so it may not place one inside a rarer tail.
SMALLEST_EVENT = 0.005

Patch = Callable[[pytest.MonkeyPatch], None]
Law = tuple[np.ndarray, np.ndarray, float]  # event probabilities (top, bottom) and the claimed delta


# --------------------------------------------------------------------------------------------------
# mutations of the shipped calibration


def _wrap(target: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> Patch:
    def patch(monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(target, name, make(getattr(target, name)))
    return patch


def _epsilon_doubled(target: Any, name: str) -> Patch:
    """``f(epsilon, sensitivity, ...)`` called with ``2 epsilon``."""
    return _wrap(target, name, lambda f: lambda eps, sens, *a, **k: f(2 * eps, sens, *a, **k))


def _sensitivity_halved(target: Any, name: str, integer: bool = False) -> Patch:
    """``f(epsilon, sensitivity, ...)`` called with half the sensitivity."""
    return _wrap(target, name, lambda f: lambda eps, sens, *a, **k: f(eps, sens // 2 if integer else sens / 2, *a, **k))


def _shape_one_over_m(target: Any, name: str) -> Patch:
    """``party_noise_shape(m, t)`` returning ``1/m``."""
    return _wrap(target, name, lambda f: lambda parties, threshold: 1.0 / parties)


def _keyword_epsilon_doubled(target: Any, name: str) -> Patch:
    return _wrap(target, name, lambda f: lambda *a, epsilon, **k: f(*a, epsilon=2 * epsilon, **k))


def _keyword_sensitivity_halved(target: Any, name: str) -> Patch:
    return _wrap(target, name, lambda f: lambda *a, sensitivity, **k: f(*a, sensitivity=sensitivity // 2, **k))


def _fedauc_budget_doubled(monkeypatch: pytest.MonkeyPatch) -> None:
    original = dp.fedauc.mechanisms.noise_parameter
    monkeypatch.setattr(dp.fedauc.mechanisms, "noise_parameter", lambda release, budget, gaussian:
                        original(release, 2 * budget, gaussian))


def _fedauc_sensitivity_halved(monkeypatch: pytest.MonkeyPatch) -> None:
    original = dp.fedauc.mechanisms.noise_parameter
    monkeypatch.setattr(dp.fedauc.mechanisms, "noise_parameter", lambda release, budget, gaussian: original(
        dataclasses.replace(release, sensitivity=release.sensitivity / 2), budget, gaussian))


def _delegate_shape_over_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dp.umpc.delegation, "delegate_noise_shape",
                        lambda size, corrupt_delegates=None: 1.0 / size)


def _binomial_trials_split_over_m(monkeypatch: pytest.MonkeyPatch) -> None:
    """The binomial analogue of shape ``1/m``: the trials ``N`` split over ``m`` parties, not ``m - t``.

    :func:`dp.calibration.party_binomial_trials` (where :func:`dp.noise_plans.plan_noise` looks it up) divides
    ``N`` by its honest count ``m - t``; called with ``t = 0`` it divides by ``m``: ``N_p = ceil(N/m)``
    (rounded up to even), so the ``m - t`` honest parties supply ``(m - t) N_p < N`` trials.
    """
    original = dp.calibration.party_binomial_trials
    monkeypatch.setattr(dp.calibration, "party_binomial_trials",
                        lambda epsilon, delta, sensitivity, parties, threshold:
                        original(epsilon, delta, sensitivity, parties, 0))


# --------------------------------------------------------------------------------------------------
# exact laws of the audited statistics (from the shipped plans, computed under the patch)


def _scalar_law(first: int, second: int, pmf: np.ndarray, offset: int, delta: float = 0.0) -> Law:
    """Events of ``value + noise`` on the two datasets; ``pmf[offset + z] = P(noise = z)``."""
    low = min(first, second) - offset
    size = abs(first - second) + pmf.size
    p, q = np.zeros(size), np.zeros(size)
    p[first - offset - low:first - offset - low + pmf.size] = pmf
    q[second - offset - low:second - offset - low + pmf.size] = pmf
    top, bottom = event_probabilities(p, q)
    return top, bottom, delta


def _polya_pmf(honest: int, shape: float, alpha: float) -> tuple[np.ndarray, int]:
    return honest_noise_pmf(honest, shape, alpha, tail=1e-13)


def _binomial_pmf(trials: int) -> tuple[np.ndarray, int]:
    pmf = stats.binom.pmf(np.arange(trials + 1), trials, 0.5)
    return pmf, trials // 2


def _product_law(pmfs: list[tuple[np.ndarray, int]], shifts: list[int]) -> Law:
    """The privacy-loss statistic's top event: ``prod P(eta_j >= 0)`` against ``prod P(eta_j >= |d_j|)``."""
    p, q = 1.0, 1.0
    for (pmf, offset), shift in zip(pmfs, shifts):
        tail = np.cumsum(pmf[::-1])[::-1]
        p *= float(tail[offset])
        q *= float(tail[offset + abs(int(shift))]) if offset + abs(int(shift)) < pmf.size else 0.0
    return np.array([p]), np.array([q]), 0.0


def _umpc_law(name: str) -> Law:
    pair = _ustat_pair(name)
    plan = pair.calibrate()[0]
    first, second = int(pair.first.sums[0]), int(pair.second.sums[0])
    if plan.sampler is not None:
        pmf, offset = construction_pmf(plan.sampler)
        return _scalar_law(first, second, pmf, offset, plan.delta)
    honest = plan.parties - plan.threshold
    if plan.mechanism == "binomial":
        return _scalar_law(first, second, *_binomial_pmf(honest * plan.party_trials), pair.query.delta)
    return _scalar_law(first, second, *_polya_pmf(honest, plan.shape, plan.alpha))


def _ustat_pair(name: str) -> audit_neighbours.UStatNeighbours:
    if name == "umpc-kendall-mpc-dlap-m3-t1":
        return audit_neighbours.ustat_neighbours("kendall", parties=3, threshold=1, noise="mpc")
    if name == "umpc-kendall-binomial-m3-t1":
        return audit_neighbours.ustat_neighbours("kendall", delta=audit_neighbours.CASE_DELTA, parties=3, threshold=1)
    if name == "umpc-kendall-binomial-m5-t2":
        return audit_neighbours.ustat_neighbours("kendall", delta=audit_neighbours.BINOMIAL_SPLIT_DELTA, parties=5, threshold=2)
    if name == "delegated-dlap-one-honest":
        return audit_neighbours.ustat_neighbours("kendall", parties=5, threshold=2)
    return audit_neighbours.ustat_neighbours("kendall", parties=3, threshold=1)


def _delegated_law(name: str) -> Law:
    pair = _ustat_pair(name)
    plan = delegate_plan(pair.calibrate()[0], audit_cases.audit_delegates(pair.parties))
    return _scalar_law(int(pair.first.sums[0]), int(pair.second.sums[0]),
                       *_polya_pmf(plan.honest, plan.shape, plan.alpha))


def _tree_law(name: str) -> Law:
    if name == "ecdf-tree-one-point-m3-t1":
        pair = audit_neighbours.tree_neighbours(dp.ecdf.grid.uniform_grid(1.0, 1.0, 1.0))
        plan = plan_tree_noise(epsilon=audit_neighbours.CASE_EPSILON, points=1, parties=3, threshold=1)
    else:
        pair = audit_neighbours.tree_neighbours(dp.ecdf.grid.uniform_grid(1.0, 8.0, 1.0))
        plan = plan_tree_noise(epsilon=audit_neighbours.TREE_EPSILON, points=8, parties=3, threshold=1)
    node, offset = _polya_pmf(plan.parties - plan.threshold, plan.shape, math.exp(plan.log_alpha))
    coefficients = prefix_incidence(pair.grid.size).T @ pair.weights
    assert np.allclose(coefficients, np.rint(coefficients)) and np.all(np.abs(coefficients) <= 1)
    pmf, width = np.ones(1), 0
    for _ in range(int(np.count_nonzero(np.rint(coefficients)))):  # symmetric nodes: the sign is immaterial
        pmf, width = np.convolve(pmf, node), width + offset
    first = int(round(float(pair.first_counts @ pair.weights)))
    second = int(round(float(pair.second_counts @ pair.weights)))
    return _scalar_law(first, second, pmf, width)


def _rank_auc_law(name: str) -> Law:
    pair = audit_neighbours.rank_auc_neighbours()
    plans = plans_for_rows(pair.query, len(pair.first_rows), 3, 1)
    return _product_law([_polya_pmf(p.parties - p.threshold, p.shape, p.alpha) for p in plans],
                        list(np.subtract(pair.second_sums, pair.first_sums)))


def _hl_law(name: str) -> Law:
    pair = audit_neighbours.hosmer_lemeshow_neighbours(accounting="joint", epsilon=audit_neighbours.HL_EPSILONS["joint"])
    change = pair.change
    shape = dp.ecdf.hosmer_lemeshow_release.party_noise_shape(pair.parties, pair.threshold)
    honest = pair.parties - pair.threshold
    query = pair.query
    pmfs, shifts = [], []
    for index in np.flatnonzero(change.ravel()):
        log = query.expected_log_alpha if index < 2 * query.groups else query.observed_log_alpha
        pmfs.append(_polya_pmf(honest, shape, math.exp(log)))
        shifts.append(int(change.ravel()[index]))
    return _product_law(pmfs, shifts)


def _fedauc_law(name: str) -> Law:
    pair = audit_neighbours.fedauc_neighbours("global_laplace")
    k = pair.client
    parts = [dp.fedauc.mechanisms.client_releases(
                 dp.fedauc.ranks.local_statistics(dp.fedauc.ranks.average_ranks(pair.scores), labels, pair.client_of),
                 method="global_laplace", samples=pair.scores.size)
             for labels in (pair.first_labels, pair.second_labels)]
    pmfs, shifts = [], []
    for report in parts[0]:
        log = float(dp.fedauc.mechanisms.noise_parameter(parts[0][report], audit_neighbours.CASE_EPSILON, False)[k])
        pmfs.append(_polya_pmf(1, 1.0, math.exp(log)))
        shifts.append(int(parts[1][report].value[k] - parts[0][report].value[k]))
    return _product_law(pmfs, shifts)


#: Outputs per dataset of the pilot run that plans the whole-vector tree audits (module docstring).
TREE_PILOT = 50_000


def _tree_vector_law(name: str) -> Law:
    """Pessimistic event probabilities of the whole-vector tree statistic, from a pilot run under the patch.

    The statistic's exact law (a function of 8 counts mixing 15 nodes) is not tractable, so a pilot of
    :data:`TREE_PILOT` outputs per dataset (seed 11, independent of the audit's) estimates the
    probabilities of the audit's threshold events; they enter the plan as their Clopper-Pearson bounds
    at ``CONFIDENCE`` (top probability from below, bottom from above), then :func:`planned_samples`
    holds the audit's own counts ``PESSIMISM`` deviations against it.
    """
    case = audit_cases.get_case(name)
    first, second = case.sample(TREE_PILOT, np.random.default_rng(11))
    pooled = np.concatenate([first, second])
    thresholds = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, 401)[1:-1], method="nearest"))
    sorted_first, sorted_second = np.sort(first), np.sort(second)
    upper_first = first.size - np.searchsorted(sorted_first, thresholds, side="left")
    upper_second = second.size - np.searchsorted(sorted_second, thresholds, side="left")
    lower_first = np.searchsorted(sorted_first, thresholds, side="right")
    lower_second = np.searchsorted(sorted_second, thresholds, side="right")
    top_counts = np.concatenate([upper_first, upper_second, lower_first, lower_second])
    bottom_counts = np.concatenate([upper_second, upper_first, lower_second, lower_first])
    return (clopper_pearson_lower(top_counts, TREE_PILOT, CONFIDENCE),
            clopper_pearson_upper(bottom_counts, TREE_PILOT, CONFIDENCE), 0.0)


def _local_law(name: str) -> Law:
    case = _local_case(name)
    assert case.exact_outputs is not None
    _, first, second = case.exact_outputs
    top, bottom = event_probabilities(np.array(first), np.array(second))
    return top, bottom, 0.0


def _local_case(name: str) -> audit_local_cases.LocalAuditCase:
    builders: dict[str, Callable[[], audit_local_cases.LocalAuditCase]] = {"ldp-krr-quantized": audit_local_cases.krr_case, "ldp-hadamard": audit_local_cases.hadamard_case,
                "ldp-hierarchy-budget": audit_local_cases.hierarchy_budget_case}
    return builders[name]()


# --------------------------------------------------------------------------------------------------
# the table of mutations


FAMILIES: dict[str, tuple[str, Callable[[str], Law]]] = {
    "umpc-party": ("umpc-kendall-dlap-m3-t1", _umpc_law),
    "in-mpc": ("umpc-kendall-mpc-dlap-m3-t1", _umpc_law),
    "binomial": ("umpc-kendall-binomial-m3-t1", _umpc_law),
    "binomial-split": ("umpc-kendall-binomial-m5-t2", _umpc_law),
    "delegated": ("delegated-dlap-one-honest", _delegated_law),
    "ecdf-tree-one-point": ("ecdf-tree-one-point-m3-t1", _tree_law),
    "ecdf-tree-vector": ("ecdf-tree-vector-m3-t1", _tree_vector_law),
    "rank-auc": ("rank-auc-m3-t1", _rank_auc_law),
    "fedauc": ("fedauc-global-laplace", _fedauc_law),
    "hosmer-lemeshow": ("hl-statistics-joint-m3-t1", _hl_law),
    "ldp-krr": ("ldp-krr-quantized", _local_law),
    "ldp-hadamard": ("ldp-hadamard", _local_law),
    "ldp-hierarchy": ("ldp-hierarchy-budget", _local_law),
}

MUTATIONS: dict[str, tuple[str, Patch]] = {
    "umpc-party-eps-doubled": ("umpc-party", _epsilon_doubled(dp.calibration, "discrete_laplace_alpha")),
    "umpc-party-sensitivity-halved": ("umpc-party", _sensitivity_halved(dp.calibration, "discrete_laplace_alpha")),
    "umpc-party-shape-1/m": ("umpc-party", _shape_one_over_m(dp.calibration, "party_noise_shape")),
    "in-mpc-eps-doubled": ("in-mpc", _keyword_epsilon_doubled(dp.noise_plans, "plan_secret_laplace")),
    "in-mpc-sensitivity-halved": ("in-mpc", _keyword_sensitivity_halved(dp.noise_plans, "plan_secret_laplace")),
    "binomial-eps-doubled": ("binomial", _epsilon_doubled(dp.calibration, "party_binomial_trials")),
    "binomial-sensitivity-halved": ("binomial", _wrap(dp.calibration, "party_binomial_trials",
                                                      lambda f: lambda e, d, s, m, t: f(e, d, s // 2, m, t))),
    "binomial-split-shape-1/m": ("binomial-split", _binomial_trials_split_over_m),
    "delegated-eps-doubled": ("delegated", _epsilon_doubled(dp.calibration, "discrete_laplace_alpha")),
    "delegated-sensitivity-halved": ("delegated", _sensitivity_halved(dp.calibration, "discrete_laplace_alpha")),
    "delegated-shape-1/|Z|": ("delegated", _delegate_shape_over_size),
    "ecdf-tree-eps-doubled": ("ecdf-tree-one-point", _epsilon_doubled(dp.ecdf.tree, "discrete_laplace_log_alpha")),
    "ecdf-tree-node-noise-halved": ("ecdf-tree-one-point",
                                    _sensitivity_halved(dp.ecdf.tree, "discrete_laplace_log_alpha")),
    "ecdf-tree-shape-1/m": ("ecdf-tree-one-point", _shape_one_over_m(dp.ecdf.tree, "party_noise_shape")),
    "ecdf-tree-vector-eps-doubled": ("ecdf-tree-vector", _epsilon_doubled(dp.ecdf.tree, "discrete_laplace_log_alpha")),
    "ecdf-tree-vector-node-noise-halved": ("ecdf-tree-vector",
                                           _sensitivity_halved(dp.ecdf.tree, "discrete_laplace_log_alpha")),
    "rank-auc-eps-doubled": ("rank-auc", _epsilon_doubled(dp.calibration, "discrete_laplace_alpha")),
    "rank-auc-sensitivity-halved": ("rank-auc", _sensitivity_halved(dp.calibration, "discrete_laplace_alpha")),
    "rank-auc-shape-1/m": ("rank-auc", _shape_one_over_m(dp.calibration, "party_noise_shape")),
    "fedauc-eps-doubled": ("fedauc", _fedauc_budget_doubled),
    "fedauc-sensitivity-halved": ("fedauc", _fedauc_sensitivity_halved),
    "hl-eps-doubled": ("hosmer-lemeshow", _epsilon_doubled(dp.ecdf.hosmer_lemeshow_release, "discrete_laplace_log_alpha")),
    "hl-sensitivity-halved": ("hosmer-lemeshow",
                              _sensitivity_halved(dp.ecdf.hosmer_lemeshow_release, "discrete_laplace_log_alpha")),
    "hl-shape-1/m": ("hosmer-lemeshow", _shape_one_over_m(dp.ecdf.hosmer_lemeshow_release, "party_noise_shape")),
    "ldp-krr-eps-doubled": ("ldp-krr", _keyword_epsilon_doubled(dp.bell.generic, "rr_beta")),
    "ldp-hadamard-eps-doubled": ("ldp-hadamard", _wrap(dp.bell.hadamard, "_flip_threshold", lambda f: lambda e: f(2 * e))),
    "ldp-hierarchy-eps-doubled": ("ldp-hierarchy", _wrap(dp.bell.hierarchical, "level_epsilon",
                                                         lambda f: lambda e, **k: f(2 * e, **k))),
}


def _case(family: str) -> AuditCase:
    name = FAMILIES[family][0]
    if name.startswith("ldp-"):
        return _local_case(name)
    return audit_cases.get_case(name)


def planned_samples(law: Law, claimed: float) -> int:
    """The smallest size of :data:`SIZES` at which the planned bound exceeds ``claimed`` (module docstring).

    :raise AssertionError: if none does (the mutation is not resolvable within the sizes).
    """
    top, bottom, delta = law
    usable = (top >= SMALLEST_EVENT) & (bottom >= SMALLEST_EVENT / 10)
    for size in SIZES:
        bound = planned_lower_bound(top[usable], bottom[usable], samples=size, delta=delta, confidence=CONFIDENCE,
                                    pessimism=PESSIMISM)
        if bound > claimed:
            return size
    raise AssertionError(f"no size in {SIZES} resolves the mutation (claim {claimed})")


@pytest.fixture(autouse=True)
def _cases_built_before_patching() -> Iterator[None]:
    """Build (and cache) every case first, so the claims are those of the unmutated code."""
    audit_cases.central_cases()
    yield


_PLANNED: dict[str, int] = {}  # mutation -> planned size (the pilot of the tree-vector plan is costly)


def _mutated_size(mutation: str, monkeypatch: pytest.MonkeyPatch) -> tuple[AuditCase, int]:
    family, patch = MUTATIONS[mutation]
    case = _case(family)
    if mutation not in _PLANNED:
        with monkeypatch.context() as patched:
            patch(patched)
            _PLANNED[mutation] = planned_samples(FAMILIES[family][1](FAMILIES[family][0]), case.epsilon)
    return case, _PLANNED[mutation]


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_mutation_is_flagged(mutation: str, monkeypatch: pytest.MonkeyPatch) -> None:
    family, patch = MUTATIONS[mutation]
    case, size = _mutated_size(mutation, monkeypatch)
    patch(monkeypatch)
    result = audit(case, samples=size, rng=np.random.default_rng(2026), confidence=CONFIDENCE)
    print(f"MUTATION {mutation} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower > case.epsilon, (mutation, result.epsilon_lower, result.event)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_mutation_unmutated_case_passes(family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    sizes = [_mutated_size(m, monkeypatch)[1] for m, (f, _) in MUTATIONS.items() if f == family]
    case = _case(family)
    size = max(sizes)
    result = audit(case, samples=size, rng=np.random.default_rng(2027), confidence=CONFIDENCE)
    print(f"UNMUTATED {family} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower <= case.epsilon, (family, result.epsilon_lower, result.event)


def test_mutation_table_covers_every_family_and_kind() -> None:
    assert set(f for f, _ in MUTATIONS.values()) == set(FAMILIES)
    kinds = {m.split("-", 2)[-1] for m in MUTATIONS}
    assert {"eps-doubled", "sensitivity-halved"} <= {k.replace("party-", "").replace("mpc-", "") for k in kinds}


def test_mutation_shape_one_over_m_is_a_real_violation_for_the_scalar_cases(monkeypatch: pytest.MonkeyPatch) -> None:
    """The true loss of the shape mutations exceeds the claim (so flagging them is sound, not luck)."""
    for family, patch in (("umpc-party", _shape_one_over_m(dp.calibration, "party_noise_shape")),
                          ("ecdf-tree-one-point", _shape_one_over_m(dp.ecdf.tree, "party_noise_shape"))):
        with monkeypatch.context() as patched:
            patch(patched)
            if family == "umpc-party":
                plan = _ustat_pair("umpc-kendall-dlap-m3-t1").calibrate()[0]
                pmf, _ = _polya_pmf(plan.parties - plan.threshold, plan.shape, plan.alpha)
                shift, claimed = plan.sensitivity, plan.epsilon
            else:
                tree = plan_tree_noise(epsilon=1.0, points=1, parties=3, threshold=1)
                pmf, _ = _polya_pmf(tree.parties - tree.threshold, tree.shape, math.exp(tree.log_alpha))
                shift, claimed = 1, tree.epsilon
        assert exact_epsilon(pmf, shift) > 1.3 * claimed


def test_mutation_tree_vector_shape_one_over_m_is_not_a_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    """On N = 8 at the vector case's epsilon = 6, Polya shape 1/m keeps the claim (so no test may flag it).

    The counts of the worst pair differ by ``A zeta`` with an integer ``zeta`` on ``L = 3`` nodes, so the
    count-level loss is at most ``L`` times the node-level loss of the honest node noise (post-processing
    of the node release): with shape ``1/m`` (``m = 3``, ``t = 1``: 2 honest draws of shape 1/3, total
    2/3) at the claimed node rate 1.5 that is ``3 x 1.8998 = 5.699 < 6``.  Any pair's loss is at most
    this (the worst interval needs ``L`` nodes).  The violation exists on the one-point grid
    (``ecdf-tree-shape-1/m``): with ``L = 0`` the claim is one node's loss, which any shape below
    ``1/(m - t)`` exceeds.
    """
    case = audit_cases.get_case("ecdf-tree-vector-m3-t1")
    with monkeypatch.context() as patched:
        _shape_one_over_m(dp.ecdf.tree, "party_noise_shape")(patched)
        plan = plan_tree_noise(epsilon=case.epsilon, points=8, parties=3, threshold=1)
        assert plan.shape == pytest.approx(1 / 3)
        pmf, _ = _polya_pmf(plan.parties - plan.threshold, plan.shape, math.exp(plan.log_alpha))
    bound = plan.depth * exact_epsilon(pmf, 1)
    assert 5.6 < bound < case.epsilon


def test_mutation_delegated_shape_reaches_the_shipped_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The delegated plan's shape is looked up in :func:`dp.umpc.delegation.delegate_noise_shape`."""
    pair = _ustat_pair("delegated-dlap-one-honest")
    delegates = audit_cases.audit_delegates(pair.parties)
    assert delegate_plan(pair.calibrate()[0], delegates).shape == 1.0
    _delegate_shape_over_size(monkeypatch)
    assert delegate_plan(pair.calibrate()[0], delegates).shape == pytest.approx(1 / 3)


def test_mutation_binomial_shape_one_over_m_reaches_the_plan_and_is_a_real_violation(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The trial split over ``m`` reaches the shipped plan and breaks ``(epsilon, delta)`` exactly.

    ``N`` = :func:`dp.calibration.binomial_trials` of the plan.  Unmutated, the ``m - t`` honest parties
    hold at least ``N`` trials; split over ``m`` they hold ``(m - t) ceil(N/m)`` (even-rounded) ``< N``,
    and the exact ``delta`` of that binomial mechanism at the claimed epsilon
    (:func:`dp.calibration.binomial_delta`, the hockey-stick divergence of the shifted pmfs) exceeds the
    claimed ``delta``, so flagging it is sound.  At ``m = 3``, ``t = 1``, ``delta = 1e-5`` the split is a
    violation too, but in tails no size of :data:`SIZES` resolves (module docstring).
    """
    pair = _ustat_pair("umpc-kendall-binomial-m5-t2")
    plan = pair.calibrate()[0]
    parties, threshold = plan.parties, plan.threshold
    honest = parties - threshold
    total = dp.calibration.binomial_trials(plan.epsilon, plan.delta, plan.sensitivity)
    assert plan.party_trials == -(-total // honest) + (-(-total // honest)) % 2
    assert dp.calibration.binomial_delta(honest * plan.party_trials, plan.sensitivity, plan.epsilon) <= plan.delta
    _binomial_trials_split_over_m(monkeypatch)
    mutated = pair.calibrate()[0]
    assert mutated.party_trials == -(-total // parties) + (-(-total // parties)) % 2
    assert honest * mutated.party_trials < total
    assert dp.calibration.binomial_delta(honest * mutated.party_trials, plan.sensitivity, plan.epsilon) > 2 * plan.delta
    small_delta = _ustat_pair("umpc-kendall-binomial-m3-t1").calibrate()[0]
    assert dp.calibration.binomial_delta(2 * small_delta.party_trials, small_delta.sensitivity,
                                         small_delta.epsilon) > small_delta.delta
    with pytest.raises(AssertionError, match="no size"):
        planned_samples(_umpc_law("umpc-kendall-binomial-m3-t1"), small_delta.epsilon)
