"""A joint public seed to which every party contributes, so no single party picks the tuples.

Each party inputs a uniformly random element of a 127-bit prime field (from the OS) into the MPC;
the sum is opened.  As long as one party's contribution is uniform and independent of the others,
so is the sum; under the passive threat model all contributions are, and a passive coalition
cannot bias it either (it sees nothing of the honest inputs before the opening).  The seed then
feeds a NumPy generator that every party runs identically: the sampled tuples, permutations and
data splits are public and the same everywhere.  Noise never comes from this seed.
"""
from __future__ import annotations

import secrets

import numpy as np

__all__ = ["FIELD_PRIME", "joint_seed", "public_generator"]

FIELD_PRIME = 2 ** 127 - 1  # a Mersenne prime


async def joint_seed() -> int:
    """Open the sum of one uniform field element per party: a seed no party chose alone."""
    from mpyc.runtime import mpc

    field = mpc.SecFld(FIELD_PRIME)
    contributions = mpc.input(field(secrets.randbelow(FIELD_PRIME)))
    opened = await mpc.output(mpc.sum(contributions))
    return int(opened.value)


def public_generator(seed: int) -> np.random.Generator:
    """The NumPy generator every party derives from the public seed (PCG64, platform independent)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(int(seed))))
