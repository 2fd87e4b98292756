"""The secure-path audit cases (:mod:`dp.audit.secure_cases`, issue 21 item 6) and mutations they catch.

The cases open batches of releases computed in one MPyC session (``-M1`` in this process): the
Kendall sum plus the honest parties' secret-shared Pólya shares, and the sum plus discrete Laplace
noise sampled inside MPC.  They are held to the engine and the confidence of the other mutation tests
(:mod:`tests.test_audit_mutations`): an unmutated case is flagged with probability at most
``1 - CONFIDENCE``; a mutation's sample size is checked against the plan of
:func:`dp.audit.statistics.planned_lower_bound` on the mutated mechanism's exact law (its event
counts held ``PESSIMISM`` standard deviations against the audit), so it is missed with probability
about ``Phi(-3)``.  The secure randomness is the OS's and MPyC's own (not seeded): these tests are
probabilistic within those bounds, never tuned.

Mutations:

- ``secure-in-mpc-thresholds-eps-doubled``: the in-MPC sampler's digit thresholds planned for
  ``2 epsilon`` (:func:`dp.noise_plans.plan_secret_laplace` called with twice the budget), the
  thresholds handed to :func:`secure.noise.mpc.secret_discrete_laplace`;
- ``secure-party-eps-doubled``: the party shares' ``alpha`` calibrated for ``2 epsilon``
  (:func:`dp.calibration.discrete_laplace_alpha`), reaching the exact rate the shares run.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from test_audit_mutations import CONFIDENCE, PESSIMISM, SMALLEST_EVENT, _epsilon_doubled, _keyword_epsilon_doubled, \
    _umpc_law

import dp.calibration
import dp.noise_plans
from dp.audit import secure_cases as secure
from dp.audit.engine import AuditCase, audit
from dp.audit.statistics import planned_lower_bound


@pytest.fixture(autouse=True)
def _fresh_session() -> Iterator[None]:
    secure.clear_session_cache()
    yield
    secure.clear_session_cache()


def _case(name: str) -> AuditCase:
    return {case.name: case for case in secure.secure_cases()}[name]


def _planned_bound(law_name: str, samples: int) -> float:
    top, bottom, delta = _umpc_law(law_name)
    usable = (top >= SMALLEST_EVENT) & (bottom >= SMALLEST_EVENT / 10)
    return float(planned_lower_bound(top[usable], bottom[usable], samples=samples, delta=delta, confidence=CONFIDENCE,
                                     pessimism=PESSIMISM))


def test_secure_cases_are_in_the_audit_and_pass_unmutated() -> None:
    from scenarios.drills.audit import all_cases

    names = [case.name for case in all_cases()]
    cases = secure.secure_cases()
    assert {case.name for case in cases} <= set(names)
    results = [audit(case, samples=case.samples, rng=np.random.default_rng(2027), confidence=CONFIDENCE)
               for case in cases]  # one MPyC session for both (the second takes the cached batch)
    for case, result in zip(cases, results):
        print(f"SECURE {case.name} | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | "
              f"samples {case.samples}")
        assert result.epsilon_lower <= case.epsilon, (case.name, result.epsilon_lower, result.event)


def test_secure_in_mpc_threshold_mutation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _case("secure-umpc-kendall-mpc-dlap-m3-t1")
    monkeypatch.setattr(secure, "SECURE_SAMPLES", 10)  # the party batch of the same session: not audited here
    _keyword_epsilon_doubled(dp.noise_plans, "plan_secret_laplace")(monkeypatch)
    assert _planned_bound("umpc-kendall-mpc-dlap-m3-t1", case.samples) > case.epsilon  # resolvable at this size
    result = audit(case, samples=case.samples, rng=np.random.default_rng(2026), confidence=CONFIDENCE)
    print(f"MUTATION secure-in-mpc-thresholds-eps-doubled | claimed {case.epsilon:.4g} | "
          f"eps_lb {result.epsilon_lower:.4f} | samples {case.samples}")
    assert result.epsilon_lower > case.epsilon, (result.epsilon_lower, result.event)


def test_secure_party_share_mutation_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    case = _case("secure-umpc-kendall-party-dlap-m3-t1")
    monkeypatch.setattr(secure, "SECURE_MPC_SAMPLES", 10)
    _epsilon_doubled(dp.calibration, "discrete_laplace_alpha")(monkeypatch)
    assert _planned_bound("umpc-kendall-dlap-m3-t1", case.samples) > case.epsilon
    result = audit(case, samples=case.samples, rng=np.random.default_rng(2026), confidence=CONFIDENCE)
    print(f"MUTATION secure-party-eps-doubled | claimed {case.epsilon:.4g} | eps_lb {result.epsilon_lower:.4f} | "
          f"samples {case.samples}")
    assert result.epsilon_lower > case.epsilon, (result.epsilon_lower, result.event)


def test_session_request_round_trips_through_json() -> None:
    from fractions import Fraction

    request = secure.SessionRequest(party_count=3, mpc_count=2, party_sums=(1, -1), shape=Fraction(1, 2),
                                    rate=Fraction(1, 8), honest=2, mpc_sums=(4, 0), thresholds=(5, 3), bits=4)
    assert secure.SessionRequest.from_json(request.to_json()) == request
