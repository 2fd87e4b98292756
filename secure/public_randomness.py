"""Joint public randomness to which every party contributes, so no single party (and no user option) picks it: the
sum of one secret-shared uniform element of a 127-bit prime field per party, uniform if one contribution is (passive
threat model).  Seeds the sampled tuples, permutations, splits and noise delegates, never the noise (Sinh & Ramon
§4).  Details: docs/secure_layer.md."""
from __future__ import annotations

import secrets

import numpy as np

from secure.checks import check_generator

__all__ = ["FIELD_PRIME", "own_contribution", "joint_seed", "joint_choice", "public_generator", "choose_subset"]

FIELD_PRIME = 2 ** 127 - 1  # a Mersenne prime


def own_contribution() -> int:
    """This party's contribution to a joint draw: a uniform element of ``GF(FIELD_PRIME)`` from the OS."""
    return secrets.randbelow(FIELD_PRIME)


async def joint_seed() -> int:
    """Open the sum of one fresh uniform field element per party: a seed no party chose alone.
    Every call draws new contributions (:func:`own_contribution`); two calls give independent seeds."""
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
    :raise ValueError: ``size`` not in ``[1, population]``."""
    check_generator(generator, "generator")
    for value, name in ((population, "population"), (size, "size")):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if size > population:
        raise ValueError(f"size must be at most the population ({population}), got {size}")
    chosen = generator.choice(int(population), size=int(size), replace=False)
    return tuple(sorted(int(element) for element in chosen))


async def joint_choice(population: int, size: int) -> tuple[int, ...]:
    """``size`` distinct elements of ``range(population)`` from a fresh :func:`joint_seed` (same at every party).
    Every party must call it at the same point of the protocol (one secure input per party, one opening).
    Details: docs/secure_layer.md."""
    return choose_subset(public_generator(await joint_seed()), population, size)
