"""Audit cases that drive the *secure* (MPyC) path of the noise: party shares and the in-MPC sampler.

Opens, in one MPyC session, a batch of releases ``sum + noise`` computed on secret shares.
Threat model: passive, static coalition of ``t < m/2`` parties.  Details: docs/audit.md."""
from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from dp.audit.engine import AuditCase
from dp.audit.neighbours import UStatNeighbours, ustat_neighbours
from dp.noise_plans import NoisePlan
from dp.secret_noise import SecretLaplacePlan

__all__ = ["SECURE_SAMPLES", "SECURE_MPC_SAMPLES", "secure_cases", "SessionRequest", "run_session",
           "clear_session_cache"]

#: Recommended outputs per dataset of the party-share case (runtime only: a correct mechanism; more
#: samples only tighten the measured bound).
SECURE_SAMPLES: int = 20_000
#: Recommended outputs per dataset of the in-MPC case (about 10 s in -M1; why enough: docs/audit.md).
SECURE_MPC_SAMPLES: int = 2_000
_SECURE_TYPE_BITS = 48


@dataclass(frozen=True)
class SessionRequest:
    """What one secure session computes: releases on each of the two datasets, per noise kind (docs/audit.md)."""

    party_count: int
    mpc_count: int
    party_sums: tuple[int, int]
    shape: Fraction
    rate: Fraction
    honest: int
    mpc_sums: tuple[int, int]
    thresholds: tuple[int, ...]
    bits: int

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "shape": [self.shape.numerator, self.shape.denominator],
                           "rate": [self.rate.numerator, self.rate.denominator]})

    @staticmethod
    def from_json(text: str) -> SessionRequest:
        raw = json.loads(text)
        return SessionRequest(**{**raw, **{name: tuple(raw[name]) for name in ("party_sums", "mpc_sums", "thresholds")},
                                 "shape": Fraction(*raw["shape"]), "rate": Fraction(*raw["rate"])})


async def _session(request: SessionRequest) -> dict[str, list[list[int]]]:
    """The secure session: both kinds of releases on both datasets, opened; ``{kind: [first, second]}``."""
    from mpyc.runtime import mpc

    from secure.aggregation import sum_party_vectors
    from secure.noise.mpc import secret_discrete_laplace
    from secure.noise.party import polya_difference

    await mpc.start()
    sectype = mpc.SecInt(_SECURE_TYPE_BITS)
    released: dict[str, list[list[int]]] = {"party": [], "mpc": []}
    for index in range(2):
        # party noise: the honest parties' shares, each secret-shared and summed on shares
        count = request.party_count
        total = sectype.array(np.full(count, request.party_sums[index], dtype=np.int64))
        for _ in range(request.honest):
            share = np.asarray(polya_difference(request.shape, size=count, rate=request.rate), dtype=np.int64)
            total = total + sum_party_vectors(sectype, share)
        released["party"].append([int(v) for v in await mpc.output(total)])
        # noise sampled inside MPC from the public digit thresholds
        count = request.mpc_count
        noise = secret_discrete_laplace(sectype, [request.thresholds] * count, request.bits)
        total = sectype.array(np.full(count, request.mpc_sums[index], dtype=np.int64)) + noise
        released["mpc"].append([int(v) for v in await mpc.output(total)])
    await mpc.shutdown()
    return released


def run_session(request: SessionRequest) -> dict[str, list[list[int]]]:
    """Run :func:`_session` in this process (one MPyC party) or in a ``-M1`` child process."""
    from mpyc.runtime import mpc

    if len(mpc.parties) == 1:
        result: dict[str, list[list[int]]] = mpc.run(_session(request))
        return result
    child = subprocess.run([sys.executable, "-m", "dp.audit.secure_cases", "-M1", "--no-log"],
                           input=request.to_json(), capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError("the secure audit session failed")
    answer: dict[str, list[list[int]]] = json.loads(child.stdout.strip().splitlines()[-1])
    return answer


_CACHE: dict[tuple[str, int], tuple[np.ndarray, np.ndarray]] = {}


def clear_session_cache() -> None:
    """Forget batches produced for a case that has not asked for them yet."""
    _CACHE.clear()


def _party_plan(pair: UStatNeighbours) -> NoisePlan:
    plan = pair.calibrate()[0]
    if plan.mechanism != "discrete laplace" or plan.source != "parties":
        raise RuntimeError("the calibration of the party case no longer gives distributed discrete Laplace")
    return plan


def _mpc_plan(pair: UStatNeighbours) -> tuple[NoisePlan, SecretLaplacePlan]:
    plan = pair.calibrate()[0]
    if plan.sampler is None:
        raise RuntimeError("the calibration of the in-MPC case no longer samples inside MPC")
    return plan, plan.sampler


def _batch(kind: str, count: int, party: UStatNeighbours, in_mpc: UStatNeighbours) -> tuple[np.ndarray, np.ndarray]:
    """``count`` releases per dataset of ``kind`` from the session (run it unless a batch is cached) (docs/audit.md)."""
    key = (kind, count)
    if key not in _CACHE:
        party_plan, (_, sampler) = _party_plan(party), _mpc_plan(in_mpc)
        request = SessionRequest(
            party_count=count if kind == "party" else SECURE_SAMPLES,
            mpc_count=count if kind == "mpc" else SECURE_MPC_SAMPLES, party_sums=(int(party.first.sums[0]), int(party.second.sums[0])),
            shape=party_plan.exact_shape, rate=party_plan.rate, honest=party_plan.honest,
            mpc_sums=(int(in_mpc.first.sums[0]), int(in_mpc.second.sums[0])),
            thresholds=sampler.thresholds_at(sampler.bits), bits=sampler.bits)
        released = run_session(request)
        for name, (first, second) in released.items():
            _CACHE[(name, len(first))] = (np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64))
    return _CACHE.pop(key)


def secure_cases() -> list[AuditCase]:
    """The two secure-path cases (docs/audit.md)."""
    party = ustat_neighbours("kendall", parties=3, threshold=1)
    in_mpc = ustat_neighbours("kendall", parties=3, threshold=1, noise="mpc")
    party_plan, (mpc_plan, sampler) = _party_plan(party), _mpc_plan(in_mpc)
    neighbours = (f"replace row {party.changed_row} (a row of largest degree); the sum moves by {party.change[0]} "
                  f"= the sensitivity {party_plan.sensitivity}")

    return [
        AuditCase(
            name="secure-umpc-kendall-party-dlap-m3-t1",
            mechanism=("the secure path of umpc-kendall-dlap-m3-t1: the m - t honest parties' exact "
                       "Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha) shares secret-shared and added to the secure "
                       "Kendall sum in one MPyC session (secure.aggregation.sum_party_vectors; Sinh & Ramon, "
                       "Protocol 3.1, App. B.1)"),
            epsilon=party_plan.epsilon, delta=0.0, sample=lambda count, rng: _batch("party", count, party, in_mpc),
            statistic="the opened sum plus the 2 honest shares (the coalition's own share subtracted)",
            neighbours=neighbours, samples=SECURE_SAMPLES),
        AuditCase(
            name="secure-umpc-kendall-mpc-dlap-m3-t1",
            mechanism=("the secure path of umpc-kendall-mpc-dlap-m3-t1: one discrete Laplace per release sampled "
                       "inside MPC (secure.noise.mpc.secret_discrete_laplace: biased coins [U < T_j] on secret "
                       "random bits, Champion, shelat & Ullman 2019), added to the secure Kendall sum and opened, "
                       f"all releases in one MPyC session; J = {sampler.digits} digits, b = {sampler.bits} bits"),
            epsilon=mpc_plan.epsilon, delta=mpc_plan.delta,
            sample=lambda count, rng: _batch("mpc", count, party, in_mpc),
            statistic="the opened sum plus the noise sampled inside MPC",
            neighbours=neighbours, samples=SECURE_MPC_SAMPLES),
    ]


if __name__ == "__main__":  # the child process of run_session: python -m dp.audit.secure_cases -M1 --no-log
    from mpyc.runtime import mpc as _runtime

    _answer: Any = _runtime.run(_session(SessionRequest.from_json(sys.stdin.read())))
    print(json.dumps(_answer))
