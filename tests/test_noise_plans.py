"""Noise plans as data (dp.noise_plans): one frozen plan, one draw per source, the shipped samplers' draws."""
from __future__ import annotations

import dataclasses
from fractions import Fraction

import numpy as np
import pytest

from dp.noise_plans import DRAWS, NoisePlan, plan_noise, samplers
from dp.secret_noise import simulate_secret_laplace
from dp.umpc.delegation import delegate_plan
from secure.kernels import KernelOutput
from secure.noise.party import centered_binomial, polya_difference

KENDALL = KernelOutput("kendall", 1, -1, 1)


def _plans() -> tuple[NoisePlan, NoisePlan, NoisePlan]:
    return (plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1),
            plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=1e-6, parties=3, threshold=1),
            plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1, source="mpc"))


def test_plan_noise_fills_one_frozen_record_per_mechanism() -> None:
    laplace, binomial, joint = _plans()
    assert (laplace.mechanism, laplace.source, laplace.delta, laplace.shape) == ("discrete laplace", "parties", 0.0, 0.5)
    assert binomial.mechanism == "binomial" and binomial.party_trials > 0 and binomial.sampler is None
    assert joint.source == "mpc" and joint.sampler is not None and joint.delta == joint.sampler.delta
    assert joint.digits == joint.sampler.digits and laplace.digits == binomial.digits == 0
    assert samplers([laplace, joint, binomial]) == [joint.sampler]
    assert [(p.drawers, p.honest) for p in (laplace, binomial, joint)] == [(3, 2), (3, 2), (1, 1)]
    for plan in (laplace, binomial, joint):
        assert plan.guarantee and plan.slack > 0 and plan.variance > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        laplace.epsilon = 2.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        NoisePlan("binomial", "parties", 1.0, 1e-6, 4, 3, 1)  # type: ignore[misc]  # keyword-only
    assert set(DRAWS) == {"parties", "mpc", "delegates"}


def test_each_source_draws_with_the_shipped_sampler() -> None:
    """Parties and delegates: Pólya differences or centred binomials; MPC: the in-MPC sampler's plaintext mirror."""
    laplace, binomial, joint = _plans()
    assert laplace.draw(np.random.default_rng(5), 50).tolist() == np.asarray(
        polya_difference(0.5, size=50, rng=np.random.default_rng(5), rate=laplace.rate)).tolist()
    assert laplace.rate == Fraction(1.0) / laplace.sensitivity  # exactly epsilon / sensitivity
    assert binomial.draw(np.random.default_rng(6), 50).tolist() == np.asarray(
        centered_binomial(binomial.party_trials, size=50, rng=np.random.default_rng(6))).tolist()
    assert laplace.draw(np.random.default_rng(7)) == int(polya_difference(0.5, rng=np.random.default_rng(7),
                                                                          rate=laplace.rate))
    assert joint.sampler is not None and joint.draw(np.random.default_rng(8), 30).tolist() == (
        simulate_secret_laplace(joint.sampler, 30, np.random.default_rng(8)).tolist())
    assert isinstance(joint.draw(np.random.default_rng(8)), int)
    delegated = delegate_plan(laplace, [0, 2])  # shape 1: one honest delegate supplies the whole DLap
    assert delegated.source == "delegates" and delegated.shape == 1.0 and delegated.honest == 1
    assert delegated.draw(np.random.default_rng(9), 40).tolist() == np.asarray(
        polya_difference(1, size=40, rng=np.random.default_rng(9), rate=laplace.rate)).tolist()
    with pytest.raises(ValueError, match="^only noise the parties draw can be delegated, got noise from mpc$"):
        delegate_plan(joint, [0, 2])


def test_variance_and_slack_are_those_of_the_calibration() -> None:
    """The properties follow from the fields as the calibration's formulas (dp.calibration), bit for bit."""
    from dp.calibration import distributed_binomial_variance, distributed_laplace_variance

    laplace, binomial, joint = _plans()
    assert laplace.variance == distributed_laplace_variance(laplace.alpha, 3, 1)
    assert binomial.variance == distributed_binomial_variance(binomial.party_trials, 3)
    assert joint.sampler is not None and (joint.variance, joint.slack) == (joint.sampler.variance, joint.sampler.slack)
