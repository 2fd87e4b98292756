"""Joint public randomness to which every party contributes, so no single party (and no user option) picks it.

Each party inputs a uniformly random element of a 127-bit prime field (from the OS, :func:`own_contribution`)
into the MPC; the sum is opened (``mpc.output``) only after every contribution has been secret-shared.  As long
as one party's contribution is uniform and independent of the others, so is the sum; under the passive threat
model all contributions are, and a passive coalition cannot bias it either (it sees nothing of the honest
inputs before the opening).  The seed then feeds a NumPy generator that every party runs identically.

Two uses, two separate draws:

- :func:`joint_seed` picks the sampled tuples, permutations and data splits (public and the same everywhere);
  a user may replace it by ``--seed`` for reproducible tuples.
- :func:`joint_choice` picks a random subset, e.g. the noise delegates ``Z`` of threat model ``M_HF``
  (Sinh & Ramon §4, :mod:`dp.umpc.delegation`).  It always draws fresh contributions in the call: nothing a
  user passes (``--seed``) and no earlier opened value enters it, so an adversary who knows the seed still
  cannot predict ``Z`` when it corrupts its parties.

Noise never comes from either.
"""
from __future__ import annotations

import secrets

import numpy as np

__all__ = ["FIELD_PRIME", "own_contribution", "joint_seed", "joint_choice", "public_generator", "choose_subset"]

FIELD_PRIME = 2 ** 127 - 1  # a Mersenne prime


def own_contribution() -> int:
    """This party's contribution to a joint draw: a uniform element of ``GF(FIELD_PRIME)`` from the OS."""
    return secrets.randbelow(FIELD_PRIME)


async def joint_seed() -> int:
    """Open the sum of one fresh uniform field element per party: a seed no party chose alone.

    Every call draws new contributions (:func:`own_contribution`); two calls give independent seeds.
    """
    from mpyc.runtime import mpc

    field = mpc.SecFld(FIELD_PRIME)
    contributions = mpc.input(field(own_contribution()))
    opened = await mpc.output(mpc.sum(contributions))
    return int(opened.value)


def public_generator(seed: int) -> np.random.Generator:
    """The NumPy generator every party derives from the public seed (PCG64, platform independent)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed))))


def choose_subset(generator: np.random.Generator, population: int, size: int) -> tuple[int, ...]:
    """``size`` distinct elements of ``range(population)``, uniform without replacement, sorted.

    :raise TypeError: ``generator`` is not a NumPy generator (a seed is not accepted: the caller says where its
        randomness comes from).
    :raise ValueError: ``size`` not in ``[1, population]``.
    """
    if not isinstance(generator, np.random.Generator):
        raise TypeError(f"generator must be a numpy.random.Generator, got {type(generator).__name__}")
    for value, name in ((population, "population"), (size, "size")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if size > population:
        raise ValueError(f"size must be at most the population ({population}), got {size}")
    chosen = generator.choice(int(population), size=int(size), replace=False)
    return tuple(sorted(int(element) for element in chosen))


async def joint_choice(population: int, size: int) -> tuple[int, ...]:
    """``size`` distinct elements of ``range(population)`` from a fresh :func:`joint_seed` (same at every party).

    The subset is a fixed public function (PCG64 seeded with the opened sum, :func:`choose_subset`) of a
    uniform 127-bit value that no party and no option chose, drawn after the static corruption is fixed; it
    is as uniform as PCG64's output (the assumption the tuple sampling makes too).  Every party must call it
    at the same point of the protocol: it is one secure input per party and one opening.
    """
    return choose_subset(public_generator(await joint_seed()), population, size)
