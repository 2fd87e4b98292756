"""Empirical DP audit of the local and label-DP randomizers (:mod:`dp.audit.local_cases`).

Every mechanism must pass at its claimed epsilon, every negative control must fail.  Fixed seeds;
statistical thresholds come from the sampling distributions: 99.9 % two-sided normal (or exact
chi-square) levels, Bonferroni-corrected over the simultaneous checks of a test.  The audit's own
guarantee is 95 %: a correct mechanism passes with probability at least 0.95 per seed.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from dp.fedauc import mechanisms as fedauc
from dp.audit.engine import audit
from dp.audit.local_cases import (LocalAuditCase, control_krr_binary_denominator, control_label_rr_double_epsilon,
                                  ghazi_case, hadamard_case, hierarchy_budget_case, hierarchy_users_case, krr_case,
                                  label_rr_case, local_cases)
from dp.audit.planning import CONTROL_MARGIN, SAMPLE_STEP, lower_bound_spread, planned_lower_bound, resolving_samples

SEED = 20261121
FAMILY_LEVEL = 0.001  # overall false-failure probability of each statistical test

CASES: list[LocalAuditCase] = local_cases()  # type: ignore[assignment]
MECHANISMS = [c for c in CASES if not c.control]
CONTROLS = [c for c in CASES if c.control]
DISCRETE = [c for c in CASES if c.exact_outputs is not None]


def z_bonferroni(checks: int) -> float:
    """Two-sided normal quantile for ``checks`` simultaneous checks at overall level 0.1 %."""
    return float(stats.norm.isf(FAMILY_LEVEL / (2 * checks)))


def generator(*key: int) -> np.random.Generator:
    return np.random.default_rng([SEED, *key])


# --------------------------------------------------------------------------------------------------
# the case list

def test_every_randomizer_and_both_controls_are_listed() -> None:
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    assert {c.name for c in MECHANISMS} == {
        "ldp-krr-quantized", "ldp-hadamard", "ldp-hierarchy-users", "ldp-hierarchy-budget", "ldp-ghazi-laplace",
        "label-rr"}
    assert {c.name for c in CONTROLS} == {"control-krr-binary-denominator", "control-label-rr-2eps"}
    for case in CASES:
        assert isinstance(case, LocalAuditCase)
        assert case.samples >= SAMPLE_STEP and case.samples % SAMPLE_STEP == 0
        assert case.mechanism and case.statistic and case.neighbours


@pytest.mark.parametrize("case", [c for c in MECHANISMS if c.true_epsilon is not None], ids=lambda c: c.name)
def test_exact_loss_of_each_mechanism_is_at_most_its_claim(case: LocalAuditCase) -> None:
    # the suite's own exact channels (rr_channel, hadamard_output_probabilities, laplace_scales, flip_probability)
    assert case.true_epsilon is not None
    assert case.true_epsilon <= case.epsilon * (1 + 1e-12)
    assert case.true_epsilon >= case.epsilon * (1 - 1e-9)  # the worst-case pair attains the claim


def test_controls_true_epsilon_in_closed_form() -> None:
    krr = control_krr_binary_denominator(bins=4, epsilon=1.0)
    assert krr.true_epsilon == pytest.approx(1.0 + math.log(3.0), rel=1e-12)
    for bins, eps in ((3, 0.5), (8, 2.0)):
        assert control_krr_binary_denominator(bins=bins, epsilon=eps).true_epsilon == pytest.approx(
            eps + math.log(bins - 1), rel=1e-12)
    label = control_label_rr_double_epsilon(epsilon=0.5)
    rho = fedauc.flip_probability(1.0)
    assert label.true_epsilon == pytest.approx(math.log((1 - rho) / rho), rel=1e-15)
    assert 1.0 - 1e-12 < label.true_epsilon <= 1.0  # 2 eps, the flip probability rounded up to 2^-53
    for case in CONTROLS:
        assert case.true_epsilon is not None and case.true_epsilon > case.epsilon


# --------------------------------------------------------------------------------------------------
# the samplers: reproducible from the audit's generator, and distributed as the exact law

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_sampler_uses_only_the_given_generator(case: LocalAuditCase) -> None:
    first = case.sample(500, generator(1))
    second = case.sample(500, generator(1))
    assert all(a.shape == (500,) for a in first)
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("case", DISCRETE, ids=lambda c: c.name)
def test_sampler_follows_the_exact_output_law(case: LocalAuditCase) -> None:
    assert case.exact_outputs is not None
    values, *pmfs = (np.array(part) for part in case.exact_outputs)
    count = 20_000
    outputs = case.sample(count, generator(2, DISCRETE.index(case)))
    threshold = FAMILY_LEVEL / (2 * len(DISCRETE))  # two chi-square tests per case
    for output, pmf in zip(outputs, pmfs):
        assert np.all(np.isin(output, values))
        observed = np.array([np.count_nonzero(output == v) for v in values])
        support = pmf > 0
        assert observed[~support].sum() == 0
        result = stats.chisquare(observed[support], count * pmf[support] / pmf[support].sum())
        assert result.pvalue > threshold


def test_ghazi_extreme_loss_has_the_predicted_probabilities() -> None:
    case = ghazi_case()
    assert case.best_event is not None and case.true_epsilon is not None
    count = 40_000
    first, second = case.sample(count, generator(3))
    top = round(case.true_epsilon, 9)
    z = z_bonferroni(4)
    # under D the loss sits at +eps with prob p and at -eps with prob q; under D' the mirror image
    p, q = case.best_event
    for output, sign in ((first, 1), (second, -1)):
        for level, probability in ((sign * top, p), (-sign * top, q)):
            frequency = np.count_nonzero(np.isclose(output, level, rtol=0, atol=1e-9)) / count
            assert abs(frequency - probability) <= z * math.sqrt(probability * (1 - probability) / count)
        assert np.all(np.abs(output) <= top + 1e-9)  # the loss never exceeds the pair's exact loss


# --------------------------------------------------------------------------------------------------
# the audit: mechanisms pass, controls fail, the bound is tight for randomized response

@pytest.mark.parametrize("case", MECHANISMS, ids=lambda c: c.name)
def test_mechanism_passes_its_audit(case: LocalAuditCase) -> None:
    result = audit(case, samples=case.samples, rng=generator(4, MECHANISMS.index(case)))
    assert not result.violation, f"{case.name}: lower bound {result.epsilon_lower:.4f} > {case.epsilon}"
    assert result.verdict == "pass"


@pytest.mark.parametrize("case", CONTROLS, ids=lambda c: c.name)
def test_control_fails_its_audit(case: LocalAuditCase) -> None:
    assert case.best_event is not None
    # power argument: at the recommended size the expected bound clears the claim by CONTROL_MARGIN sds
    planned = planned_lower_bound(*case.best_event, samples=case.samples)
    spread = lower_bound_spread(*case.best_event, samples=case.samples)
    assert planned - CONTROL_MARGIN * spread > case.epsilon
    result = audit(case, samples=case.samples, rng=generator(5, CONTROLS.index(case)))
    assert result.violation, f"{case.name}: lower bound {result.epsilon_lower:.4f} <= {case.epsilon}"
    assert result.verdict == "FAIL"
    assert case.true_epsilon is not None and result.epsilon_lower <= case.true_epsilon


TIGHT = [krr_case(), label_rr_case(), control_krr_binary_denominator(), control_label_rr_double_epsilon()]


@pytest.mark.parametrize("case", TIGHT, ids=lambda c: c.name)
def test_randomized_response_bound_is_tight(case: LocalAuditCase) -> None:
    """With the singleton event, the bound is the CP bound at the realised counts: close to epsilon.

    The realised bound is ``ln`` of two binomial proportions over ``h`` evaluation samples, so it
    lies within ``z * spread`` (delta method) of the bound at the expected counts, which itself is
    ``true - planned`` below the true epsilon: the tolerance is derived, not tuned.
    """
    assert case.best_event is not None and case.true_epsilon is not None
    samples = 40 * SAMPLE_STEP
    planned = planned_lower_bound(*case.best_event, samples=samples)
    spread = lower_bound_spread(*case.best_event, samples=samples)
    result = audit(case, samples=samples, rng=generator(6, TIGHT.index(case)))
    z = z_bonferroni(len(TIGHT))
    assert abs(result.epsilon_lower - planned) <= z * spread
    assert case.true_epsilon - result.epsilon_lower <= (case.true_epsilon - planned) + z * spread
    assert result.violation == case.control


# --------------------------------------------------------------------------------------------------
# the power helpers

def test_planned_bound_grows_towards_the_log_ratio() -> None:
    p, q = 0.4, 0.1
    bounds = [planned_lower_bound(p, q, samples=n) for n in (1_000, 10_000, 100_000, 1_000_000)]
    assert all(a < b for a, b in zip(bounds, bounds[1:]))
    assert bounds[-1] < math.log(p / q)
    assert math.log(p / q) - bounds[-1] < 4 * lower_bound_spread(p, q, samples=1_000_000)


def test_resolving_samples_is_the_smallest_multiple() -> None:
    p, q, target = 0.3, 0.1, 0.9
    size = resolving_samples(p, q, target=target, margin=2.0, step=1_000)
    assert size % 1_000 == 0

    def margin_at(n: int) -> float:
        return planned_lower_bound(p, q, samples=n) - 2.0 * lower_bound_spread(p, q, samples=n)

    assert margin_at(size) > target >= margin_at(size - 1_000)


@pytest.mark.parametrize("call, message", [
    (lambda: planned_lower_bound(0.0, 0.1, samples=100), "p must lie in"),
    (lambda: planned_lower_bound(0.5, 1.0, samples=100), "q must lie in"),
    (lambda: planned_lower_bound(0.5, 0.1, samples=1), "samples must be at least 2"),
    (lambda: planned_lower_bound(0.5, 0.1, samples=100, confidence=1.0), "confidence must be in"),
    (lambda: lower_bound_spread(0.5, -0.1, samples=100), "q must lie in"),
    (lambda: resolving_samples(0.2, 0.1, target=1.0), "cannot resolve"),
    (lambda: resolving_samples(0.5, 0.1, target=-1.0), "target must be non-negative"),
    (lambda: resolving_samples(0.5, 0.1, target=1.0, margin=-1.0), "margin must be non-negative"),
    (lambda: krr_case(bins=1), "bins must be at least 2"),
    (lambda: krr_case(epsilon=0.0), "epsilon must be positive"),
    (lambda: hadamard_case(bits=9), "bits must lie in"),
    (lambda: hierarchy_users_case(domain_size=6), "domain_size must be a power of two"),
    (lambda: hierarchy_budget_case(domain_size=2), "domain_size must be a power of two"),
    (lambda: ghazi_case(bins=1), "bins must lie in"),
    (lambda: label_rr_case(epsilon=math.inf), "epsilon must be finite"),
    (lambda: control_krr_binary_denominator(bins=2), "bins must be at least 3"),
])
def test_parameters_are_checked_with_plain_messages(call: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()
