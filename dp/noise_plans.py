"""Noise plans: the calibrated noise of one released sum, as one frozen record.

Sources ``parties`` (Pólya or binomial shares calibrated for the coalition), ``mpc`` (one discrete Laplace
sampled inside MPC) and ``delegates`` (Sinh & Ramon §4); OS randomness, never a seed.  Threat model:
passive, static coalition of at most ``t < m/2`` parties.  Sinh & Ramon, Protocol 3.1; docs/noise.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal, overload

import numpy as np

from dp import calibration
from dp.noise_defaults import delegated_guarantee, mpc_guarantee, party_guarantee
from dp.secret_noise import DEFAULT_SAMPLER_DELTA, SecretLaplacePlan, plan_secret_laplace, simulate_secret_laplace
from dp.validation import check_delta, check_epsilon, check_noise_scale, check_parties
from secure.kernels import KernelOutput
from secure.noise.party import centered_binomial, exact_rate, exact_shape, polya_difference

__all__ = ["NoisePlan", "DRAWS", "plan_noise", "plan_party_laplace", "samplers", "polya_tail_bound", "MPC_LAPLACE",
           "NOISE_SOURCES", "NoiseSource", "Mechanism"]

#: who draws the noise: ``parties`` (each a share), ``mpc`` (sampled inside MPC) or ``delegates`` (only ``Z``)
NoiseSource = Literal["parties", "mpc", "delegates"]
#: every mechanism of a released sum
Mechanism = Literal["discrete laplace", "binomial", "discrete laplace, sampled in MPC"]
#: noise sources a query may ask for, in the order the options list them
NOISE_SOURCES: Final[tuple[NoiseSource, ...]] = ("parties", "mpc")
#: mechanism name of noise sampled inside MPC
MPC_LAPLACE: Final = "discrete laplace, sampled in MPC"
_TAIL_BITS = 41  # the noise exceeds the slack of the guarded reveal with probability < 2**-40
#: a rational upper bound of ln 2 (its first 31 digits rounded up)
_LN2_UP = Fraction(6931471805599453094172321214582, 10**31)


def polya_tail_bound(alpha: float, total_shape: float | Fraction, failure_bits: int = _TAIL_BITS, *,
                     rate: Fraction | None = None) -> int:
    """A bound ``x`` with ``P(|A - B| > x) < 2**-(failure_bits - 1)`` for ``A, B ~ NB(total_shape, alpha)``.

    Chernoff; with ``rate`` exact rational arithmetic (derivation: docs/noise.md)."""
    if rate is not None:
        shape = Fraction(total_shape).limit_denominator(1 << 20)
        if float(shape) != float(total_shape):
            shape = Fraction(total_shape)
        bound = 2 * (failure_bits + shape) * _LN2_UP / Fraction(rate)
        return -(-bound.numerator // bound.denominator) + 1
    if alpha <= 0.0:
        return 0
    return int(math.ceil(2 * (failure_bits + float(total_shape)) * math.log(2) / -math.log(alpha))) + 1


@dataclass(frozen=True, kw_only=True)
class NoisePlan:
    """The calibrated noise of one released sum (fixed-point integer units); every property follows from the fields
    (field by field: docs/noise.md)."""

    mechanism: Mechanism
    source: NoiseSource
    epsilon: float
    delta: float
    sensitivity: int
    parties: int
    threshold: int
    alpha: float = 0.0
    shape: float = 0.0
    party_trials: int = 0
    sampler: SecretLaplacePlan | None = None
    delegates: tuple[int, ...] = ()
    corrupt_delegates: int = 0
    epsilon_fail: float | None = None

    @property
    def drawers(self) -> int:
        """How many draws make up the total: ``m`` parties, ``|Z|`` delegates, or one joint value in MPC."""
        return {"parties": self.parties, "delegates": len(self.delegates), "mpc": 1}[self.source]

    @property
    def honest(self) -> int:
        """How many draws a coalition cannot subtract: ``m - t``, ``|Z| - t_Z``, or the one value in MPC."""
        return {"parties": self.parties - self.threshold, "delegates": len(self.delegates) - self.corrupt_delegates,
                "mpc": 1}[self.source]

    @property
    def digits(self) -> int:
        """Binary digits of noise sampled in MPC (``|noise| < 2^digits``); 0 for noise the parties draw."""
        return 0 if self.sampler is None else self.sampler.digits

    @property
    def rate(self) -> Fraction:
        """The exact rational ``gamma`` with which the party samplers run ``alpha = e^{-gamma}``: ``epsilon /
        sensitivity`` exactly for the calibration's ``alpha``, else ``e^{-gamma} >= alpha`` (docs/noise.md)."""
        if self.alpha == math.exp(-self.epsilon / self.sensitivity):
            return Fraction(self.epsilon) / self.sensitivity
        gamma = exact_rate(alpha=self.alpha)
        if gamma is None:
            raise ValueError("alpha must be positive")
        return gamma

    @property
    def exact_shape(self) -> Fraction:
        """The rational shape the exact sampler runs: ``1/(m-t)`` exactly (:func:`secure.noise.party.exact_shape`)."""
        return exact_shape(self.shape)

    @property
    def variance(self) -> float:
        """Variance of the total noise: the sampled construction's (MPC), ``drawers N_p / 4`` (binomial), or
        ``drawers/honest`` times that of ``DLap(e^{-rate})`` (party-drawn Laplace)."""
        if self.sampler is not None:
            return self.sampler.variance
        if self.mechanism == "binomial":
            return self.drawers * self.party_trials / 4.0
        a = math.exp(-float(self.rate))
        return self.drawers / self.honest * 2.0 * a / (1.0 - a) ** 2

    @property
    def slack(self) -> int:
        """A bound on ``|total noise|`` exceeded with probability below ``2**-40`` (``2^J - 1`` in MPC: never):
        Hoeffding on the binomial, Chernoff on the Pólya shares (:func:`polya_tail_bound`)."""
        if self.sampler is not None:
            return self.sampler.slack
        if self.mechanism == "binomial":
            return int(math.ceil(math.sqrt(self.drawers * self.party_trials * _TAIL_BITS * math.log(2) / 2))) + 1
        return polya_tail_bound(self.alpha, Fraction(self.drawers, self.honest), rate=self.rate)

    @property
    def guarantee(self) -> str:
        """The plan's DP guarantee in one line (:mod:`dp.noise_defaults`); delegates count ``epsilon_fail`` in delta."""
        if self.sampler is not None:
            return mpc_guarantee(self.epsilon, self.delta, self.sampler.delta)
        if self.source == "delegates":
            failure = self.epsilon_fail or 0.0
            return delegated_guarantee(self.epsilon, self.delta + failure, failure, self.drawers, self.mechanism)
        return party_guarantee(self.epsilon, self.delta, self.parties, self.threshold, self.mechanism)

    @overload
    def draw(self, rng: np.random.Generator | None = None, size: None = None) -> int: ...

    @overload
    def draw(self, rng: np.random.Generator | None, size: int) -> np.ndarray: ...

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray:
        """One drawer's draw in the clear (:data:`DRAWS`; OS randomness unless a test or the auditor passes ``rng``):
        an ``int`` (``size=None``, what a party adds in the secure path), or ``size`` draws as an int64 array."""
        value = DRAWS[self.source](self, rng, 1 if size is None else size)
        return int(value[0]) if size is None else value


def _share(plan: NoisePlan, rng: np.random.Generator | None, size: int) -> np.ndarray:
    """A party's (or delegate's) share: a Pólya difference of the plan's shape and rate, or centred binomial coins."""
    if plan.mechanism == "binomial":
        return np.asarray(centered_binomial(plan.party_trials, size=size, rng=rng), dtype=np.int64)
    return np.asarray(polya_difference(plan.exact_shape, size=size, rng=rng, rate=plan.rate), dtype=np.int64)


def _mirror(plan: NoisePlan, rng: np.random.Generator | None, size: int) -> np.ndarray:
    """The plaintext mirror of the in-MPC sampler (:func:`dp.secret_noise.simulate_secret_laplace`): the
    simulated path and the auditor; a secure run samples it inside MPC, no party draws it."""
    assert plan.sampler is not None
    return simulate_secret_laplace(plan.sampler, size, rng)


#: one draw per source: ``size`` draws of one drawer, as an int64 array
DRAWS: Final[dict[NoiseSource, Callable[[NoisePlan, np.random.Generator | None, int], np.ndarray]]] = {
    "parties": _share, "delegates": _share, "mpc": _mirror}


def samplers(plans: Sequence[NoisePlan]) -> list[SecretLaplacePlan]:
    """The in-MPC samplers of ``plans`` (none for noise the parties draw)."""
    return [plan.sampler for plan in plans if plan.sampler is not None]


def plan_party_laplace(output: KernelOutput, *, max_degree: int, epsilon: float, parties: int,
                       threshold: int) -> NoisePlan:
    """Distributed discrete Laplace (pure DP) for one released sum: the Laplace branch of :func:`plan_noise`, for
    callers that need it whatever the delta (:mod:`dp.bell.subsampled_pairs`); ValueError on a bad parameter."""
    check_epsilon(epsilon)
    check_parties(parties, threshold)
    sensitivity = int(max_degree) * output.sensitivity
    check_noise_scale(epsilon, sensitivity, name="epsilon per released sum")
    return NoisePlan(mechanism="discrete laplace", source="parties", epsilon=epsilon, delta=0.0,
                     sensitivity=sensitivity, parties=parties, threshold=threshold,
                     alpha=calibration.discrete_laplace_alpha(epsilon, sensitivity),
                     shape=calibration.party_noise_shape(parties, threshold))


def plan_noise(output: KernelOutput, *, max_degree: int, epsilon: float, delta: float,
               parties: int, threshold: int, source: str = "parties") -> NoisePlan:
    """Calibrate the noise of one released sum of ``output`` with ``delta_max = max_degree`` (``delta = 0``: discrete
    Laplace; else binomial, or the in-MPC sampler's truncation budget); ValueError on a parameter it cannot serve."""
    check_epsilon(epsilon)
    check_delta(delta)
    check_parties(parties, threshold)
    if source not in NOISE_SOURCES:
        raise ValueError(f"unknown noise source '{source}'; choose one of: {', '.join(NOISE_SOURCES)}")
    sensitivity = int(max_degree) * output.sensitivity
    if source == "mpc":
        sampler = plan_secret_laplace(epsilon=epsilon, sensitivity=sensitivity,
                                      delta_budget=delta if delta > 0 else DEFAULT_SAMPLER_DELTA)
        return NoisePlan(mechanism=MPC_LAPLACE, source="mpc", epsilon=epsilon, delta=sampler.delta,
                         sensitivity=sensitivity, parties=parties, threshold=threshold, alpha=sampler.alpha,
                         sampler=sampler)
    if delta > 0:
        trials = calibration.party_binomial_trials(epsilon, delta, sensitivity, parties, threshold)
        return NoisePlan(mechanism="binomial", source="parties", epsilon=epsilon, delta=delta, sensitivity=sensitivity,
                         parties=parties, threshold=threshold, party_trials=trials)
    return plan_party_laplace(output, max_degree=max_degree, epsilon=epsilon, parties=parties, threshold=threshold)
