r"""Audits of the complete U-statistics (:mod:`dp.audit.complete_cases`) and mutation tests of their calibration.

Every case drives the shipped complete release, :func:`dp.umpc.complete.simulate_complete`, recalibrating
with :func:`dp.umpc.complete.complete_plans` at every batch, on neighbouring tables whose complete sums move
as far as one replaced row can move them.  The calibration rests on
:func:`dp.umpc.complete.complete_max_degree` (``C(n-1, k-1)``, the tuples that hold one row); each mutation
here monkeypatches it *where complete_plans looks it up* and asserts that :func:`dp.audit.engine.audit`
proves ``eps_lb > epsilon`` (the claim fixed when the case was built, before the patch); the unmutated
tests assert that every case passes.

Mutations (``<case>/<kind>``):

- ``degree-halved``: ``C(n-1, k-1) // 2`` (at least 1): noise for half the sensitivity or less;
- ``degree-n-2``: ``C(n-2, k-1)``, the count of a row's tuples off by one row (``n - 2`` instead of ``n - 1``
  for pairs): true loss ``(n-1)/(n-2) = 1.25`` times the claim at ``n = 6`` (VUS at ``n = 5``: ``C(3, 2) = 3``
  instead of its ``floor(16/4) = 4``, its pair's loss ``4/3``);
- ``sensitivity-delta-f``: ``1``: each plan's sensitivity is the kernel's ``Delta_f``, as for one tuple.

Sample sizes (derived, not tuned), with the conventions of ``tests/test_audit_mutations.py``: under the
patch, the exact law of the audited statistic from the shipped (mutated) plans -- the honest noise pmf
(:func:`dp.audit.engine.honest_noise_pmf` of the plan's shape and alpha; the binomial pmf of the honest
trials; :func:`dp.secret_noise.construction_pmf` of the in-MPC sampler) -- gives the probabilities of the
audit's candidate events (threshold and singleton events of the released sum; for the two sums of AUC and
VUS the privacy-loss statistic's top event, ``p = prod P(eta_j >= 0)`` against
``q = prod P(eta_j >= |d_j|)``).  :func:`dp.audit.statistics.planned_lower_bound` with the counts held
``PESSIMISM = 3`` standard deviations against the audit, at its confidence ``CONFIDENCE = 0.999``, picks
the smallest of :data:`SIZES` at which the bound exceeds the claim.  So a mutation is missed with
probability about ``Phi(-3) = 0.13 %``, and a correct case is flagged with probability at most 0.1 % per
audit (Clopper-Pearson, any event choice): over the 9 unmutated audits at most 0.9 %.  The unmutated audit
of a case runs at the largest size of its mutations.  Seeds are fixed.

The binomial case's ``degree-n-2`` mutation is a true violation (its exact delta at the claimed epsilon
exceeds the claim, asserted) but only in tails that no size of :data:`SIZES` resolves, so it is not run.

Threat model: that of the cases (passive, static coalition of ``t < m/2`` parties, which subtracts its
own noise shares; noise sampled in MPC is known to no party).
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from scipy import stats

import dp.calibration
import dp.umpc.complete
from dp.audit import central_cases as audit_cases
from dp.audit.complete_cases import (COMPLETE_KERNELS, COMPLETE_SAMPLES, CompleteNeighbours, complete_case_names,
                                     complete_case_neighbours)
from dp.audit.engine import AuditCase, audit, honest_noise_pmf
from dp.audit.statistics import event_probabilities, planned_lower_bound
from dp.noise_plans import NoisePlan
from dp.secret_noise import construction_pmf
from secure.kernels import get_kernel

def largest_vus_change(rows: int) -> int:
    """``floor((n-1)^2 / 4)``: the most triples containing one row that can hold the three classes."""
    others = rows - 1
    return (others // 2) * (others - others // 2)


#: Confidence of every audit here (a correct mechanism is flagged with probability at most 0.1 %).
CONFIDENCE = 0.999
#: Standard deviations of the event counts held against the audit when planning the sample size.
PESSIMISM = 3.0
#: Candidate sample sizes per dataset (the smallest that resolves the mutation is used).
SIZES = (10_000, 20_000, 50_000, 100_000, 200_000, 400_000, 800_000)
#: Events rarer than this (on either dataset) are not planned on (the audit's thresholds are 400 quantiles).
SMALLEST_EVENT = 0.005

Degree = Callable[..., int]
Law = tuple[np.ndarray, np.ndarray, float]  # event probabilities (top, bottom) and the claimed delta

_SHIPPED: Degree = dp.umpc.complete.complete_max_degree
KINDS: dict[str, Degree] = {
    "degree-halved": lambda rows, degree, kernel=None: max(1, _SHIPPED(rows, degree, kernel) // 2),
    "degree-n-2": lambda rows, degree, kernel=None: math.comb(rows - 2, degree - 1),
    "sensitivity-delta-f": lambda rows, degree, kernel=None: 1,
}
#: Mutations no size of SIZES resolves (see the module docstring); asserted to be real violations instead.
UNRESOLVABLE = {("complete-kendall-binomial-m3-t1", "degree-n-2")}
MUTATIONS = [(name, kind) for name in complete_case_names() for kind in KINDS if (name, kind) not in UNRESOLVABLE]


@pytest.fixture(autouse=True)
def _cases_built_before_patching() -> Iterator[None]:
    """Build (and cache) every case first, so the claims are those of the unmutated code."""
    audit_cases.central_cases()
    yield


def _patch(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(dp.umpc.complete, "complete_max_degree", KINDS[kind])


# --------------------------------------------------------------------------------------------------
# exact laws of the audited statistics, from the shipped plans (computed under the patch)


def _honest_pmf(plan: NoisePlan) -> tuple[np.ndarray, int]:
    """The pmf of the noise the coalition cannot subtract, and its offset (``pmf[offset + z] = P(z)``)."""
    if plan.sampler is not None:
        return construction_pmf(plan.sampler)
    if plan.mechanism == "binomial":
        trials = plan.honest * plan.party_trials
        return stats.binom.pmf(np.arange(trials + 1), trials, 0.5), trials // 2
    return honest_noise_pmf(plan.honest, plan.shape, plan.alpha, tail=1e-13)


def _law(pair: CompleteNeighbours, claimed_delta: float) -> Law:
    plans = pair.calibrate()
    if len(plans) == 1:
        pmf, offset = _honest_pmf(plans[0])
        first, second = int(pair.first_sums[0]), int(pair.second_sums[0])
        low = min(first, second) - offset
        p, q = np.zeros(abs(first - second) + pmf.size), np.zeros(abs(first - second) + pmf.size)
        p[first - offset - low:first - offset - low + pmf.size] = pmf
        q[second - offset - low:second - offset - low + pmf.size] = pmf
        top, bottom = event_probabilities(p, q)
        return top, bottom, claimed_delta
    p_top, q_top = 1.0, 1.0
    for plan, shift in zip(plans, pair.change):
        pmf, offset = _honest_pmf(plan)
        tail = np.cumsum(pmf[::-1])[::-1]
        p_top *= float(tail[offset])
        q_top *= float(tail[offset + abs(shift)]) if offset + abs(shift) < pmf.size else 0.0
    return np.array([p_top]), np.array([q_top]), claimed_delta


def planned_samples(law: Law, claimed: float) -> int:
    """The smallest size of :data:`SIZES` at which the planned bound exceeds ``claimed``.

    :raise AssertionError: if none does.
    """
    top, bottom, delta = law
    usable = (top >= SMALLEST_EVENT) & (bottom >= SMALLEST_EVENT / 10)
    for size in SIZES:
        if planned_lower_bound(top[usable], bottom[usable], samples=size, delta=delta, confidence=CONFIDENCE,
                               pessimism=PESSIMISM) > claimed:
            return size
    raise AssertionError(f"no size in {SIZES} resolves the mutation (claim {claimed})")


_PLANNED: dict[tuple[str, str], int] = {}


def _mutated_size(name: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> tuple[AuditCase, int]:
    case = audit_cases.get_case(name)
    if (name, kind) not in _PLANNED:
        with monkeypatch.context() as patched:
            _patch(patched, kind)
            _PLANNED[(name, kind)] = planned_samples(_law(complete_case_neighbours(name), case.delta), case.epsilon)
    return case, _PLANNED[(name, kind)]


# --------------------------------------------------------------------------------------------------
# the audits


@pytest.mark.parametrize("name, kind", MUTATIONS, ids=[f"{n}/{k}" for n, k in MUTATIONS])
def test_complete_calibration_mutation_is_flagged(name: str, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case, size = _mutated_size(name, kind, monkeypatch)
    _patch(monkeypatch, kind)
    assert [p.sensitivity for p in complete_case_neighbours(name).calibrate()] != \
        [p.sensitivity for p in complete_case_neighbours(name).plans]  # the patch reaches the shipped plans
    result = audit(case, samples=size, rng=np.random.default_rng(2026), confidence=CONFIDENCE)
    print(f"MUTATION {name} {kind} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower > case.epsilon, (name, kind, result.epsilon_lower, result.event)


@pytest.mark.parametrize("name", complete_case_names())
def test_complete_case_passes_unmutated(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case = audit_cases.get_case(name)
    size = max(_mutated_size(n, kind, monkeypatch)[1] for n, kind in MUTATIONS if n == name)
    result = audit(case, samples=size, rng=np.random.default_rng(2027), confidence=CONFIDENCE)
    print(f"UNMUTATED {name} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | samples {size}")
    assert result.epsilon_lower <= case.epsilon, (name, result.epsilon_lower, result.event)


# --------------------------------------------------------------------------------------------------
# the cases and their neighbours


def test_complete_cases_are_registered_with_the_auditor_and_the_drill() -> None:
    from scenarios.drills.audit import all_cases

    names = complete_case_names()
    assert len(names) == 9 and {f"complete-{kernel}-dlap-m3-t1" for kernel in COMPLETE_KERNELS} <= set(names)
    assert {"complete-kendall-mpc-dlap-m3-t1", "complete-auc-mpc-dlap-m3-t1"} <= set(names)
    registered = {case.name: case for case in audit_cases.central_cases(controls=False)}
    assert set(names) <= set(registered) and set(names) <= {case.name for case in all_cases()}
    citation = re.compile(r"Protocol \d|App\. [A-Z]")
    for name in names:
        case = registered[name]
        assert case.samples == COMPLETE_SAMPLES and not case.control
        assert citation.search(case.mechanism) and "simulate_complete" in case.mechanism
        assert case.neighbours and case.statistic


@pytest.mark.parametrize("name", complete_case_names())
def test_the_neighbours_move_the_sums_as_far_as_one_row_can(name: str) -> None:
    """Each sum moves by its calibrated sensitivity -- ``C(n-1, k-1) Delta_f``, for VUS the tight
    ``floor((n-1)^2/4) Delta_j`` -- so the pair's exact loss under the claimed noise is the claimed epsilon."""
    pair = complete_case_neighbours(name)
    n, k = pair.rows, pair.query.kernel.degree
    outputs = pair.query.outputs
    tuples = largest_vus_change(n) if pair.query.kernel.name == "vus" else math.comb(n - 1, k - 1)
    assert [p.sensitivity for p in pair.plans] == [tuples * out.sensitivity for out in outputs]
    loss = sum(plan.epsilon * abs(change) / plan.sensitivity for plan, change in zip(pair.plans, pair.change))
    assert [abs(c) for c in pair.change] == [p.sensitivity for p in pair.plans]
    assert loss == pytest.approx(pair.query.epsilon)


def test_vus_largest_change_by_brute_force() -> None:
    """No replacement of one row moves a VUS sum by more than ``floor((n-1)^2/4) Delta_j`` (n = 5).

    Every multiset of the 4 other rows and every pair of values of the replaced row, on scores
    ``{0, 1, 2}`` x classes ``{0, 1, 2}`` (three score levels are enough for ``w = 1``), with the kernel's
    own plaintext over the 6 triples that hold the replaced row.
    """
    vus = get_kernel("vus")
    values = np.array([(s, c) for s in range(3) for c in range(3)], dtype=np.int64)
    encoded = vus.encode(values)
    largest = np.zeros(2, dtype=np.int64)
    pairs = list(itertools.combinations(range(4), 2))
    for others in itertools.combinations_with_replacement(range(len(values)), 4):
        a = np.array([others[i] for i, _ in pairs])
        b = np.array([others[j] for _, j in pairs])
        sums = []
        for row in range(len(values)):
            parts = [np.repeat(encoded[row:row + 1], len(pairs), axis=0), encoded[a], encoded[b]]
            sums.append([int(out.sum()) for out in vus.plaintext(parts)])
        table = np.array(sums)
        largest = np.maximum(largest, table.max(axis=0) - table.min(axis=0))
    outputs = vus.outputs([2, 2])
    assert largest.tolist() == [largest_vus_change(5) * out.sensitivity for out in outputs] == [48, 4]
    assert largest_vus_change(5) < math.comb(4, 2)


def test_the_mutations_reach_complete_plans_and_shrink_the_sensitivity(monkeypatch: pytest.MonkeyPatch) -> None:
    pair = complete_case_neighbours("complete-kendall-dlap-m3-t1")
    shipped = [p.sensitivity for p in pair.calibrate()]
    assert shipped == [2 * (pair.rows - 1)]
    for kind, expected in (("degree-halved", 4), ("degree-n-2", 8), ("sensitivity-delta-f", 2)):
        with monkeypatch.context() as patched:
            _patch(patched, kind)
            assert [p.sensitivity for p in pair.calibrate()] == [expected]
    assert [p.sensitivity for p in pair.calibrate()] == shipped


def test_the_unresolvable_binomial_mutation_is_a_real_violation(monkeypatch: pytest.MonkeyPatch) -> None:
    """``C(n-2, 1)`` on the binomial case breaks ``(epsilon, delta)`` exactly, but too far in the tails."""
    name = "complete-kendall-binomial-m3-t1"
    pair = complete_case_neighbours(name)
    shift = abs(pair.change[0])
    plan = pair.plans[0]
    assert plan.mechanism == "binomial"
    honest = plan.honest
    assert dp.calibration.binomial_delta(honest * plan.party_trials, shift, plan.epsilon) <= plan.delta
    with monkeypatch.context() as patched:
        _patch(patched, "degree-n-2")
        mutated = pair.calibrate()[0]
        assert mutated.mechanism == "binomial"
        assert dp.calibration.binomial_delta(honest * mutated.party_trials, shift, plan.epsilon) > plan.delta
        with pytest.raises(AssertionError, match="no size"):
            planned_samples(_law(pair, plan.delta), plan.epsilon)
