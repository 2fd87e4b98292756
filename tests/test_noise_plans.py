"""Typed noise plans (dp.noise_plans): one class per mechanism, the same draws as the shipped samplers."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dp.noise_plans import MpcLaplacePlan, PartyBinomialPlan, PartyLaplacePlan, plan_noise
from secure.kernels import KernelOutput
from secure.noise.party import centered_binomial, polya_difference

KENDALL = KernelOutput("kendall", 1, -1, 1)


def test_plan_noise_returns_one_class_per_mechanism() -> None:
    laplace = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1)
    binomial = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=1e-6, parties=3, threshold=1)
    joint = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1, source="mpc")
    assert isinstance(laplace, PartyLaplacePlan) and laplace.mechanism == "discrete laplace" and laplace.delta == 0.0
    assert isinstance(binomial, PartyBinomialPlan) and binomial.mechanism == "binomial" and binomial.party_trials > 0
    assert isinstance(joint, MpcLaplacePlan) and joint.source == "mpc" and joint.delta == joint.sampler.delta
    assert {laplace.source, binomial.source} == {"parties"}
    for plan in (laplace, binomial, joint):
        assert plan.guarantee and plan.slack > 0 and plan.variance > 0
    with pytest.raises(ValueError, match="no party draws"):
        joint.draw()


def test_party_draws_are_the_shipped_samplers_draws() -> None:
    laplace = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1)
    binomial = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=1e-6, parties=3, threshold=1)
    assert isinstance(laplace, PartyLaplacePlan) and isinstance(binomial, PartyBinomialPlan)
    assert laplace.draw(np.random.default_rng(5), 50).tolist() == np.asarray(
        polya_difference(0.5, size=50, rng=np.random.default_rng(5), rate=laplace.rate)).tolist()
    assert laplace.rate == Fraction(1.0) / laplace.sensitivity  # exactly epsilon / sensitivity
    assert binomial.draw(np.random.default_rng(6), 50).tolist() == np.asarray(
        centered_binomial(binomial.party_trials, size=50, rng=np.random.default_rng(6))).tolist()
    assert laplace.draw(np.random.default_rng(7)) == int(polya_difference(0.5, rng=np.random.default_rng(7),
                                                                          rate=laplace.rate))
