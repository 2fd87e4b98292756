r"""Delegated noise generation: only a random subgroup ``Z`` of the parties draws the DP noise.

``|Z| = ceil(log(epsilon_fail) / log(1 - f_H))`` delegates hold an honest party with probability
``1 - epsilon_fail``; the release is ``(epsilon, delta + epsilon_fail)``-DP, ``Z`` drawn from fresh joint
randomness, never ``--seed``.  Threat model: passive, static, honest majority for the sharing, ``M_HF``
bounds the corrupt fraction by ``1 - f_H``.  Sinh & Ramon §4; proof and calibration: docs/umpc_analysis.md."""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dp import calibration
from dp.noise_plans import NoisePlan
from dp.validation import check_integer, check_interval, check_positive_int
from secure.public_randomness import choose_subset, joint_choice

__all__ = ["delegate_size", "delegates_for_run", "choose_delegates", "draw_delegates", "DELEGATES_DRAWN_FROM",
           "delegate_noise_shape", "delegate_plan", "add_delegated_noise"]

_RELATIVE_TOLERANCE = 1e-12  # floating-point slack when comparing (1 - f_H)^k with epsilon_fail


def delegate_size(epsilon_fail: float, honest_fraction: float, *, parties: int | None = None) -> int:
    """Size ``|Z| = ceil(log(epsilon_fail) / log(1 - f_H))`` (>= 1) of the noise-drawing subgroup, capped at
    ``parties`` if given (Sinh & Ramon §4; docs/umpc_analysis.md); ValueError if a parameter is out of range."""
    fail = check_interval(epsilon_fail, "epsilon_fail", low=0.0, high=1.0, closed_low=False)
    honest = check_interval(honest_fraction, "honest_fraction", low=0.0, high=1.0, closed_low=False,
                            closed_high=True)
    if parties is not None:
        parties = check_positive_int(parties, "parties")
    corrupt = 1.0 - honest
    target = fail * (1.0 + _RELATIVE_TOLERANCE)  # 1 - 0.7 is 0.30000000000000004 in floating point
    if corrupt <= 0.0:
        size = 1
    else:
        size = max(1, math.ceil(math.log(fail) / math.log(corrupt)))
        while size > 1 and corrupt ** (size - 1) <= target:  # log rounding pushed it one too high
            size -= 1
        while corrupt ** size > target:  # or one too low
            size += 1
    return size if parties is None else min(size, parties)


def delegates_for_run(epsilon_fail: float, honest_fraction: float, *, parties: int) -> int:
    """``|Z|`` for a run of ``parties`` parties (delegation only pays when ``|Z| < m``: docs/umpc_analysis.md);
    ValueError if ``|Z| > m``."""
    size = delegate_size(epsilon_fail, honest_fraction)
    count = check_positive_int(parties, "parties")
    if size > count:
        raise ValueError(f"failure probability {epsilon_fail:g} at honest fraction {honest_fraction:g} needs "
                         f"|Z| = ceil(log {epsilon_fail:g} / log {1 - honest_fraction:g}) = {size} noise delegates, "
                         f"but there are {count} parties")
    return size


def choose_delegates(generator: np.random.Generator, parties: int, size: int) -> tuple[int, ...]:
    """The delegates ``Z`` for the simulated path and the audit: ``size`` distinct sorted party ids, uniform without
    replacement from ``generator`` (TypeError for a seed; ValueError unless ``1 <= size <= m``)."""
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"choose_delegates takes a numpy.random.Generator, not a seed (got {generator!r}): in a run "
                        "the delegates come from draw_delegates (fresh joint randomness of the run), never from --seed")
    return choose_subset(generator, *_check_size(parties, size))


#: How a run's ``Z`` is drawn, in the record's ``delegates_drawn_from`` and the printed table.
DELEGATES_DRAWN_FROM = "fresh joint randomness of this run, every party contributes; not from --seed"


async def draw_delegates(parties: int, size: int) -> tuple[int, ...]:
    """``Z`` for a secure run: ``size`` of ``parties`` ids from fresh joint randomness, never ``--seed`` (independent
    of a static corruption: Sinh & Ramon §4; docs/umpc_analysis.md); ValueError unless ``1 <= size <= parties``."""
    return await joint_choice(*_check_size(parties, size))


def _check_size(parties: int, size: int) -> tuple[int, int]:
    m = check_positive_int(parties, "parties")
    k = check_positive_int(size, "number of delegates")
    if k > m:
        raise ValueError(f"number of delegates must be at most the number of parties ({m}), got {k}")
    return m, k


def _check_corrupt(size: int, corrupt_delegates: int | None) -> tuple[int, int]:
    k = check_positive_int(size, "number of delegates")
    if corrupt_delegates is None:
        return k, k - 1
    check_integer(corrupt_delegates, "corrupt_delegates")
    if not 0 <= corrupt_delegates < k:
        raise ValueError(f"corrupt_delegates must lie in [0, {k - 1}] for {k} delegates "
                         f"(at least one must be honest), got {corrupt_delegates}")
    return k, int(corrupt_delegates)


def delegate_noise_shape(size: int, corrupt_delegates: int | None = None) -> float:
    """Pólya shape of each delegate's draw, ``1/(|Z| - t_Z)`` for ``size = |Z|`` and ``corrupt_delegates = t_Z``;
    ``1`` when ``t_Z`` is not bounded (``None``: ``|Z| - 1``).  ValueError if ``t_Z`` is not in ``[0, |Z| - 1]``."""
    k, t = _check_corrupt(size, corrupt_delegates)
    return 1.0 / (k - t)


def delegate_plan(plan: NoisePlan, delegates: Sequence[int], *, corrupt_delegates: int | None = None,
                  epsilon_fail: float | None = None) -> NoisePlan:
    """Recalibrate a party-drawn ``plan`` so that only ``delegates`` draw, any ``|Z| - t_Z`` honest draws making up
    the full noise (``t_Z`` default ``|Z| - 1``; docs/umpc_analysis.md); ValueError: a bad plan, delegate or ``t_Z``."""
    if plan.source != "parties":
        raise ValueError(f"only noise the parties draw can be delegated, got noise from {plan.source}")
    ids = [int(p) for p in delegates]
    if not ids:
        raise ValueError("delegates must name at least one party, got none")
    if len(set(ids)) != len(ids):
        raise ValueError(f"delegates must be distinct, got {ids}")
    bad = [p for p in ids if not 0 <= p < plan.parties]
    if bad:
        raise ValueError(f"delegates must be party ids in [0, {plan.parties - 1}], got {bad[0]}")
    k, t = _check_corrupt(len(ids), corrupt_delegates)
    if epsilon_fail is not None:
        check_interval(epsilon_fail, "epsilon_fail", low=0.0, high=1.0, closed_low=False)
    trials = 0
    if plan.mechanism == "binomial":
        per_delegate = -(-calibration.binomial_trials(plan.epsilon, plan.delta, plan.sensitivity) // (k - t))
        trials = per_delegate + per_delegate % 2
    return replace(plan, source="delegates", delegates=tuple(sorted(ids)), corrupt_delegates=t,
                   epsilon_fail=epsilon_fail, shape=delegate_noise_shape(k, t), party_trials=trials)


DelegateNoiseSource = Callable[[NoisePlan], "int | np.ndarray"]


def add_delegated_noise(total: Any, plan: NoisePlan, delegates: Sequence[int], *,
                        noise_source: DelegateNoiseSource | None = None) -> Any:
    """``total`` plus the delegates' secret-shared draws (``mpc.input(..., senders=Z)``), every party with the same
    ``delegates``; ValueError if they and the plan disagree, or a delegate id is out of range."""
    from mpyc.runtime import mpc

    if plan.source == "delegates":
        if tuple(sorted(int(p) for p in delegates)) != plan.delegates:
            raise ValueError(f"delegates {list(delegates)} differ from the plan's {list(plan.delegates)}")
        delegated = plan
    else:
        delegated = delegate_plan(plan, delegates)
    senders = list(delegated.delegates)
    if max(senders) >= len(mpc.parties):
        raise ValueError(f"delegate {max(senders)} is not a party of this {len(mpc.parties)}-party run")
    shape: Any = getattr(total, "shape", None)
    is_array = shape is not None and hasattr(type(total), "sectype")
    sectype = type(total).sectype if is_array else type(total)
    if mpc.pid not in senders:
        value: Any = np.zeros(shape, dtype=np.int64) if is_array else 0  # placeholder, never sent
    elif noise_source is not None:
        value = noise_source(delegated)
    else:
        value = delegated.draw(None, int(np.prod(shape))) if is_array else delegated.draw()
    secret = type(total)(np.asarray(value, dtype=np.int64).reshape(shape)) if is_array else sectype(int(value))
    draws = mpc.input(secret, senders=senders)  # a list: one secure value per delegate
    return total + sum(draws[1:], draws[0])
