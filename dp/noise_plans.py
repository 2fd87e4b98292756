"""Noise plans: the calibrated noise of one released sum, in one typed place.

A :class:`NoisePlan` says which mechanism adds the noise of one released integer sum and with which
parameters, calibrated for the coalition (Sinh & Ramon, Protocol 3.1; docs/design.md, "Noise").  It is a
protocol (what every plan answers: mechanism, budget, sensitivity, ``m``, ``t``, source, variance,
slack, guarantee); each mechanism is its own frozen dataclass holding only the fields valid for it,
so a caller tells them apart with ``isinstance`` (never by a string or ``getattr``):

- :class:`PartyLaplacePlan` (``discrete laplace``): each of the ``m`` parties draws a difference of two Polya variables of shape
  ``1/(m-t)`` and parameter ``alpha = exp(-epsilon/sensitivity)``, so that the ``m - t`` honest parties
  alone sum to a discrete Laplace (:func:`dp.calibration.discrete_laplace_alpha`);
- :class:`PartyBinomialPlan` (``binomial``): ``(epsilon, delta)`` with centred binomial shares whose honest total meets the exact
  hockey-stick delta (:func:`dp.calibration.party_binomial_trials`);
- :class:`MpcLaplacePlan` (:data:`MPC_LAPLACE`): one discrete Laplace sampled inside MPC from joint secret random bits
  (:mod:`dp.secret_noise`), known to no party; its truncation counts in delta.

Plans whose parties draw (the first two, and :class:`dp.umpc.delegation.DelegatedNoisePlan`) also
meet :class:`PartyNoisePlan`, which adds ``draw()``.

Used by Pi_U-MPC (:mod:`dp.umpc.protocol`), noise delegation (:mod:`dp.umpc.delegation`), the
subsampled-pairs protocol and the auditor.  Noise randomness is OS randomness, never a seed.
Threat model: passive, static coalition of at most ``t < m/2`` parties.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Final, Literal, Protocol, Union, overload

import numpy as np

from dp import calibration
from dp.noise_defaults import mpc_guarantee, party_guarantee
from dp.secret_noise import DEFAULT_SAMPLER_DELTA, SecretLaplacePlan, plan_secret_laplace
from dp.validation import check_delta, check_epsilon, check_noise_scale, check_parties
from secure.kernels import KernelOutput
from secure.noise.party import centered_binomial, exact_rate, exact_shape, polya_difference

__all__ = ["NoisePlan", "PartyNoisePlan", "PartyLaplacePlan", "PartyBinomialPlan", "MpcLaplacePlan", "PlannedNoise",
           "plan_noise", "plan_party_laplace", "polya_tail_bound", "MPC_LAPLACE", "NOISE_SOURCES", "NoiseSource",
           "Mechanism", "PartyMechanism"]

#: where the noise comes from: ``parties`` (each party draws a share) or ``mpc`` (sampled inside MPC)
NoiseSource = Literal["parties", "mpc"]
#: the mechanisms whose shares the parties draw
PartyMechanism = Literal["discrete laplace", "binomial"]
#: every mechanism of a released sum
Mechanism = Literal["discrete laplace", "binomial", "discrete laplace, sampled in MPC"]
#: noise sources, in the order the options list them
NOISE_SOURCES: Final[tuple[NoiseSource, ...]] = ("parties", "mpc")
#: mechanism name of noise sampled inside MPC
MPC_LAPLACE: Final = "discrete laplace, sampled in MPC"
_TAIL_BITS = 41  # the noise exceeds the slack of the guarded reveal with probability < 2**-40


#: a rational upper bound of ln 2 (its first 31 digits rounded up)
_LN2_UP = Fraction(6931471805599453094172321214582, 10**31)


def polya_tail_bound(alpha: float, total_shape: float | Fraction, failure_bits: int = _TAIL_BITS, *,
                     rate: Fraction | None = None) -> int:
    """A bound ``x`` with ``P(|A - B| > x) < 2**-(failure_bits - 1)`` for ``A, B ~ NB(total_shape, alpha)``.

    The total distributed noise is such a difference (``total_shape = m/(m-t)`` per node or sum).
    Chernoff with ``e^lambda = alpha^(-1/2)``: ``P(A > x) <= alpha^(x/2) (1 + sqrt(alpha))^R
    <= alpha^(x/2) 2^R``, so ``x = 2 (failure_bits + R) ln 2 / (-ln alpha)`` suffices for each tail.
    With ``rate`` (the exact rational ``-ln alpha`` the party samplers run,
    :func:`secure.noise.party.exact_rate`) the bound is computed in exact rational arithmetic with ``ln 2``
    rounded up, so it holds for the distribution actually drawn.
    """
    if rate is not None:
        shape = Fraction(total_shape).limit_denominator(1 << 20)
        if float(shape) != float(total_shape):
            shape = Fraction(total_shape)
        bound = 2 * (failure_bits + shape) * _LN2_UP / Fraction(rate)
        return -(-bound.numerator // bound.denominator) + 1
    if alpha <= 0.0:
        return 0
    return int(math.ceil(2 * (failure_bits + float(total_shape)) * math.log(2) / -math.log(alpha))) + 1


def binomial_tail_bound(trials: int, failure_bits: int = _TAIL_BITS) -> int:
    """Hoeffding: ``|centred Binomial(trials, 1/2)| > x`` with probability below ``2**-(failure_bits - 1)``."""
    return int(math.ceil(math.sqrt(trials * failure_bits * math.log(2) / 2))) + 1


# ---------------------------------------------------------------------------------------- protocols


class NoisePlan(Protocol):
    """What every calibrated noise plan of one released sum answers (fixed-point integer units).

    ``epsilon``/``delta``: the budget of this sum (for MPC noise ``delta`` is the sampler's ``delta_s``);
    ``sensitivity``: ``delta_max * Delta_f``; ``parties``/``threshold``: ``m``/``t``; ``variance``: of the
    total noise; ``slack``: a bound on ``|total noise|`` exceeded with probability below ``2**-40``;
    ``guarantee``: the plan's DP guarantee in one line (:mod:`dp.noise_defaults`).
    """

    @property
    def mechanism(self) -> Mechanism: ...

    @property
    def epsilon(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def sensitivity(self) -> int: ...

    @property
    def parties(self) -> int: ...

    @property
    def threshold(self) -> int: ...

    @property
    def source(self) -> NoiseSource: ...

    @property
    def variance(self) -> float: ...

    @property
    def slack(self) -> int: ...

    @property
    def guarantee(self) -> str: ...


class PartyNoisePlan(NoisePlan, Protocol):
    """A plan whose noise parties draw: one party's (or delegate's) share by :meth:`draw`."""

    @overload
    def draw(self, rng: np.random.Generator | None = None, size: None = None) -> int: ...

    @overload
    def draw(self, rng: np.random.Generator | None, size: int) -> np.ndarray: ...

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray: ...


# -------------------------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class PartyLaplacePlan:
    """Distributed discrete Laplace: each party adds ``Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha)``.

    :param epsilon: budget of this sum (pure DP: ``delta`` is 0).
    :param sensitivity: ``delta_max * Delta_f`` in integer units.
    :param parties: ``m``; ``threshold``: ``t``.
    :param alpha: discrete Laplace parameter ``exp(-epsilon/sensitivity)``.
    """

    epsilon: float
    sensitivity: int
    parties: int
    threshold: int
    alpha: float

    @property
    def mechanism(self) -> Literal["discrete laplace"]:
        """``discrete laplace``."""
        return "discrete laplace"

    @property
    def delta(self) -> float:
        """0: pure DP."""
        return 0.0

    @property
    def source(self) -> Literal["parties"]:
        """``parties``."""
        return "parties"

    @property
    def shape(self) -> float:
        """Polya shape of each party's draw, ``1/(m-t)`` (:func:`dp.calibration.party_noise_shape`)."""
        return calibration.party_noise_shape(self.parties, self.threshold)

    @property
    def exact_shape(self) -> Fraction:
        """The rational shape the exact sampler runs: ``1/(m-t)`` exactly (:func:`secure.noise.party.exact_shape`)."""
        return exact_shape(self.shape)

    @property
    def rate(self) -> Fraction:
        """The exact rational ``gamma`` with which the party samplers run ``alpha = e^{-gamma}``.

        ``epsilon / sensitivity`` exactly when ``alpha`` is the calibration's ``exp(-epsilon/sensitivity)``
        (:func:`dp.calibration.discrete_laplace_alpha`), so ``sensitivity * ln(1/alpha) = epsilon`` holds
        exactly for the noise drawn; any other ``alpha`` runs as ``e^{-gamma} >= alpha``
        (:func:`secure.noise.party.exact_rate`).
        """
        if self.alpha == math.exp(-self.epsilon / self.sensitivity):
            return Fraction(self.epsilon) / self.sensitivity
        gamma = exact_rate(alpha=self.alpha)
        if gamma is None:
            raise ValueError("alpha must be positive")
        return gamma

    @property
    def variance(self) -> float:
        """Variance of the total noise (all ``m`` draws), including the ``m/(m-t)`` factor, at ``alpha = e^{-rate}``."""
        alpha = math.exp(-float(self.rate))
        return calibration.distributed_laplace_variance(alpha, self.parties, self.threshold)

    @property
    def slack(self) -> int:
        """Chernoff bound on the total, a difference of two ``NB(m/(m-t), e^{-rate})`` (:func:`polya_tail_bound`)."""
        return polya_tail_bound(self.alpha, Fraction(self.parties, self.parties - self.threshold), rate=self.rate)

    @property
    def guarantee(self) -> str:
        """:func:`dp.noise_defaults.party_guarantee` of this sum."""
        return party_guarantee(self.epsilon, self.delta, self.parties, self.threshold, self.mechanism)

    @overload
    def draw(self, rng: np.random.Generator | None = None, size: None = None) -> int: ...

    @overload
    def draw(self, rng: np.random.Generator | None, size: int) -> np.ndarray: ...

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray:
        """One party's draw (OS randomness unless a test passes ``rng``).

        :param size: ``None`` for one draw (an ``int``, what each party adds in the secure path), or a
            count of independent draws of the same party share (int64 array; the simulated path and
            the auditor of :mod:`dp.audit.central_cases`, which sums ``m - t`` of them for the coalition's view).
        """
        value = polya_difference(self.exact_shape, size=size, rng=rng, rate=self.rate)
        return int(value) if size is None else np.asarray(value, dtype=np.int64)


@dataclass(frozen=True)
class PartyBinomialPlan:
    """Distributed binomial noise: each party adds a centred ``Binomial(party_trials, 1/2)``.

    :param epsilon: budget of this sum; ``delta``: its delta (> 0).
    :param sensitivity: ``delta_max * Delta_f`` in integer units.
    :param parties: ``m``; ``threshold``: ``t``.
    :param party_trials: even trials per party, ``(m-t) party_trials`` meeting ``(epsilon, delta)``
        exactly (:func:`dp.calibration.party_binomial_trials`).
    """

    epsilon: float
    delta: float
    sensitivity: int
    parties: int
    threshold: int
    party_trials: int

    @property
    def mechanism(self) -> Literal["binomial"]:
        """``binomial``."""
        return "binomial"

    @property
    def source(self) -> Literal["parties"]:
        """``parties``."""
        return "parties"

    @property
    def variance(self) -> float:
        """Variance of the total noise, ``m party_trials / 4``."""
        return calibration.distributed_binomial_variance(self.party_trials, self.parties)

    @property
    def slack(self) -> int:
        """Hoeffding bound on the total of ``m party_trials`` centred coins (:func:`binomial_tail_bound`)."""
        return binomial_tail_bound(self.parties * self.party_trials)

    @property
    def guarantee(self) -> str:
        """:func:`dp.noise_defaults.party_guarantee` of this sum."""
        return party_guarantee(self.epsilon, self.delta, self.parties, self.threshold, self.mechanism)

    @overload
    def draw(self, rng: np.random.Generator | None = None, size: None = None) -> int: ...

    @overload
    def draw(self, rng: np.random.Generator | None, size: int) -> np.ndarray: ...

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray:
        """One party's draw (OS randomness unless a test passes ``rng``); ``size`` as :meth:`PartyLaplacePlan.draw`."""
        value = centered_binomial(self.party_trials, size=size, rng=rng)
        return int(value) if size is None else np.asarray(value, dtype=np.int64)


@dataclass(frozen=True)
class MpcLaplacePlan:
    """One discrete Laplace sampled inside MPC (:mod:`dp.secret_noise`): no party draws or knows it.

    :param epsilon: budget of this sum.
    :param sensitivity: ``delta_max * Delta_f`` in integer units.
    :param parties: ``m``; ``threshold``: ``t`` (the noise needs no coalition calibration).
    :param sampler: the in-MPC sampler's public plan (digits, coin bits, truncation ``delta_s``).
    """

    epsilon: float
    sensitivity: int
    parties: int
    threshold: int
    sampler: SecretLaplacePlan

    @property
    def mechanism(self) -> Literal["discrete laplace, sampled in MPC"]:
        """:data:`MPC_LAPLACE`."""
        return MPC_LAPLACE

    @property
    def delta(self) -> float:
        """The sampler's truncation ``delta_s``."""
        return self.sampler.delta

    @property
    def alpha(self) -> float:
        """Discrete Laplace parameter of the sampled noise."""
        return self.sampler.alpha

    @property
    def source(self) -> Literal["mpc"]:
        """``mpc``."""
        return "mpc"

    @property
    def variance(self) -> float:
        """The exact variance of the sampled construction, that of one DLap (no ``m/(m-t)`` factor)."""
        return self.sampler.variance

    @property
    def slack(self) -> int:
        """``2^J - 1``, never exceeded."""
        return self.sampler.slack

    @property
    def guarantee(self) -> str:
        """:func:`dp.noise_defaults.mpc_guarantee` of this sum."""
        return mpc_guarantee(self.epsilon, self.delta, self.sampler.delta)

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray:
        """No party draws noise sampled inside MPC.

        :raise ValueError: always; the plaintext mirror is :func:`dp.secret_noise.simulate_secret_laplace`.
        """
        raise ValueError("noise sampled inside MPC has no party draws; use dp.secret_noise.simulate_secret_laplace")


#: what :func:`plan_noise` returns: one of the three plans (narrow with ``isinstance``)
PlannedNoise = Union[PartyLaplacePlan, PartyBinomialPlan, MpcLaplacePlan]


# ------------------------------------------------------------------------------------------ planning


def plan_party_laplace(output: KernelOutput, *, max_degree: int, epsilon: float, parties: int,
                       threshold: int) -> PartyLaplacePlan:
    """Calibrate distributed discrete Laplace (pure DP) for one released sum.

    The Laplace branch of :func:`plan_noise`, for callers that need its Laplace-only fields
    (``alpha``, ``shape``), e.g. :mod:`dp.bell.subsampled_pairs`.

    :raise ValueError: on an invalid parameter or a noise scale beyond the integer range.
    """
    check_epsilon(epsilon)
    check_parties(parties, threshold)
    sensitivity = int(max_degree) * output.sensitivity
    check_noise_scale(epsilon, sensitivity, name="epsilon per released sum")
    alpha = calibration.discrete_laplace_alpha(epsilon, sensitivity)
    return PartyLaplacePlan(epsilon, sensitivity, parties, threshold, alpha=alpha)


def plan_noise(output: KernelOutput, *, max_degree: int, epsilon: float, delta: float,
               parties: int, threshold: int, source: str = "parties") -> PlannedNoise:
    """Calibrate the noise of one released sum.

    :param output: the kernel output summed (its sensitivity ``Delta_f``).
    :param max_degree: ``delta_max`` of the sampled tuples.
    :param epsilon: budget for this sum; ``delta``: 0 for discrete Laplace, else binomial (party
        noise) or the budget of the sampler's truncation (MPC noise).
    :param parties: ``m``; ``threshold``: ``t`` (coalition calibration 1/(m-t) of party noise).
    :param source: ``parties`` or ``mpc`` (:data:`NOISE_SOURCES`).
    :raise ValueError: on an invalid parameter, or MPC noise whose truncation cannot meet the delta.
    """
    check_epsilon(epsilon)
    check_delta(delta)
    check_parties(parties, threshold)
    if source not in NOISE_SOURCES:
        raise ValueError(f"unknown noise source '{source}'; choose one of: {', '.join(NOISE_SOURCES)}")
    sensitivity = int(max_degree) * output.sensitivity
    if source == "mpc":
        sampler = plan_secret_laplace(epsilon=epsilon, sensitivity=sensitivity,
                                      delta_budget=delta if delta > 0 else DEFAULT_SAMPLER_DELTA)
        return MpcLaplacePlan(epsilon, sensitivity, parties, threshold, sampler=sampler)
    if delta > 0:
        trials = calibration.party_binomial_trials(epsilon, delta, sensitivity, parties, threshold)
        return PartyBinomialPlan(epsilon, delta, sensitivity, parties, threshold, party_trials=trials)
    return plan_party_laplace(output, max_degree=max_degree, epsilon=epsilon, parties=parties, threshold=threshold)
