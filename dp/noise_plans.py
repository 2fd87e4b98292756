"""Noise plans: the calibrated noise of one released sum, in one typed place.

A :class:`NoisePlan` says which mechanism adds the noise of one released integer sum and with which
parameters, calibrated for the coalition (Sinh & Ramon, Protocol 3.1; DESIGN, "Noise"):

- ``discrete laplace``: each of the ``m`` parties draws a difference of two Polya variables of shape
  ``1/(m-t)`` and parameter ``alpha = exp(-epsilon/sensitivity)``, so that the ``m - t`` honest parties
  alone sum to a discrete Laplace (:func:`dp.calibration.discrete_laplace_alpha`);
- ``binomial``: ``(epsilon, delta)`` with centred binomial shares whose honest total meets the exact
  hockey-stick delta (:func:`dp.calibration.party_binomial_trials`);
- :data:`MPC_LAPLACE`: one discrete Laplace sampled inside MPC from joint secret random bits
  (:mod:`dp.secret_noise`), known to no party; its truncation counts in delta.

Used by Pi_U-MPC (:mod:`dp.umpc.protocol`), noise delegation (:mod:`dp.umpc.delegation`), the
subsampled-pairs protocol and the auditor.  Noise randomness is OS randomness, never a seed.
Threat model: passive, static coalition of at most ``t < m/2`` parties.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import overload

import numpy as np

from dp import calibration
from dp.secret_noise import DEFAULT_SAMPLER_DELTA, SecretLaplacePlan, plan_secret_laplace
from dp.validation import check_delta, check_epsilon, check_noise_scale, check_parties
from secure.kernels import KernelOutput
from secure.noise.party import centered_binomial, polya_difference

__all__ = ["NoisePlan", "plan_noise", "polya_tail_bound", "MPC_LAPLACE", "NOISE_SOURCES"]

#: noise sources: ``parties`` (each party draws a share) or ``mpc`` (sampled inside MPC)
NOISE_SOURCES = ("parties", "mpc")
#: mechanism name of noise sampled inside MPC
MPC_LAPLACE = "discrete laplace, sampled in MPC"
_TAIL_BITS = 41  # the noise exceeds the slack of the guarded reveal with probability < 2**-40


def polya_tail_bound(alpha: float, total_shape: float, failure_bits: int = _TAIL_BITS) -> int:
    """A bound ``x`` with ``P(|A - B| > x) < 2**-(failure_bits - 1)`` for ``A, B ~ NB(total_shape, alpha)``.

    The total distributed noise is such a difference (``total_shape = m/(m-t)`` per node or sum).
    Chernoff with ``e^lambda = alpha^(-1/2)``: ``P(A > x) <= alpha^(x/2) (1 + sqrt(alpha))^R
    <= alpha^(x/2) 2^R``, so ``x = 2 (failure_bits + R) ln 2 / (-ln alpha)`` suffices for each tail.
    """
    if alpha <= 0.0:
        return 0
    return int(math.ceil(2 * (failure_bits + total_shape) * math.log(2) / -math.log(alpha))) + 1


@dataclass(frozen=True)
class NoisePlan:
    """Calibrated distributed noise for one released sum (fixed-point integer units).

    :param mechanism: ``discrete laplace``, ``binomial``, or :data:`MPC_LAPLACE`.
    :param epsilon: budget of this sum; ``delta`` likewise (for MPC noise: ``delta_s`` of the sampler).
    :param sensitivity: ``delta_max * Delta_f`` in integer units.
    :param parties: ``m``; ``threshold``: ``t``.
    :param alpha: discrete Laplace parameter ``exp(-epsilon/sensitivity)`` (Laplace only).
    :param party_trials: binomial trials per party (binomial only).
    :param source: ``parties`` (each party draws a share) or ``mpc`` (sampled inside MPC).
    :param sampler: the in-MPC sampler's public plan (``source == "mpc"`` only).
    """

    mechanism: str
    epsilon: float
    delta: float
    sensitivity: int
    parties: int
    threshold: int
    alpha: float = 0.0
    party_trials: int = 0
    source: str = "parties"
    sampler: SecretLaplacePlan | None = None

    @property
    def shape(self) -> float:
        """Polya shape of each party's draw, ``1/(m-t)``."""
        return calibration.party_noise_shape(self.parties, self.threshold)

    @property
    def variance(self) -> float:
        """Variance of the total noise (all ``m`` draws), including the ``m/(m-t)`` factor.

        Noise sampled in MPC: the exact variance of the sampled construction, that of one DLap.
        """
        if self.sampler is not None:
            return self.sampler.variance
        if self.mechanism == "binomial":
            return calibration.distributed_binomial_variance(self.party_trials, self.parties)
        return calibration.distributed_laplace_variance(self.alpha, self.parties, self.threshold)

    @property
    def slack(self) -> int:
        """A bound on ``|total noise|`` exceeded with probability below ``2**-40``.

        Laplace: the total is a difference of two NB(R, alpha), ``R = m/(m-t)``; a Chernoff bound
        with ``e^lambda = alpha^(-1/2)`` gives ``P(NB > x) <= alpha^(x/2) 2^R``.  Binomial: Hoeffding.
        Sampled in MPC: ``2^J - 1``, never exceeded.
        """
        if self.sampler is not None:
            return self.sampler.slack
        if self.mechanism == "binomial":
            trials = self.parties * self.party_trials
            return int(math.ceil(math.sqrt(trials * _TAIL_BITS * math.log(2) / 2))) + 1
        return polya_tail_bound(self.alpha, self.parties / (self.parties - self.threshold))

    @overload
    def draw(self, rng: np.random.Generator | None = None, size: None = None) -> int: ...

    @overload
    def draw(self, rng: np.random.Generator | None, size: int) -> np.ndarray: ...

    def draw(self, rng: np.random.Generator | None = None, size: int | None = None) -> int | np.ndarray:
        """One party's noise draw (OS randomness unless a test passes ``rng``).

        :param size: ``None`` for one draw (an ``int``, what each party adds in the secure path), or a
            count of independent draws of the same party share (int64 array; the simulated path and
            the auditor of :mod:`dp.audit.central_cases`, which sums ``m - t`` of them for the coalition's view).
        :raise ValueError: for noise sampled inside MPC, which no party draws.
        """
        if self.source == "mpc":
            raise ValueError("noise sampled inside MPC has no party draws; use dp.secret_noise.simulate_secret_laplace")
        if self.mechanism == "binomial":
            value = centered_binomial(self.party_trials, size=size, rng=rng)
        else:
            value = polya_difference(self.shape, self.alpha, size=size, rng=rng)
        return int(value) if size is None else np.asarray(value, dtype=np.int64)


def plan_noise(output: KernelOutput, *, max_degree: int, epsilon: float, delta: float,
               parties: int, threshold: int, source: str = "parties") -> NoisePlan:
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
        return NoisePlan(MPC_LAPLACE, epsilon, sampler.delta, sensitivity, parties, threshold,
                         alpha=sampler.alpha, source="mpc", sampler=sampler)
    if delta > 0:
        trials = calibration.party_binomial_trials(epsilon, delta, sensitivity, parties, threshold)
        return NoisePlan("binomial", epsilon, delta, sensitivity, parties, threshold, party_trials=trials)
    check_noise_scale(epsilon, sensitivity, name="epsilon per released sum")
    alpha = calibration.discrete_laplace_alpha(epsilon, sensitivity)
    return NoisePlan("discrete laplace", epsilon, 0.0, sensitivity, parties, threshold, alpha=alpha)
