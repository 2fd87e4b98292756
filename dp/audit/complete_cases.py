"""Audit cases of the complete U-statistics (all ``C(n, k)`` tuples; :mod:`dp.umpc.complete`).

Drives :func:`dp.umpc.complete.simulate_complete` on neighbours where the released sums move as far as
any neighbour can move them; one case audits the histogram and the sort path's calibration.
Threat model: passive, static coalition of ``t < m/2`` parties.  Worst-case neighbours (derivations): docs/audit.md."""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from dp.audit.engine import AuditCase, paired
from dp.audit.neighbours import CASE_DELTA, CASE_EPSILON, KENDALL_SPECS, PUBLIC_SEED, SimulatedNeighbours
from dp.audit.statistics import privacy_loss_statistic
from dp.noise_plans import NoisePlan
from dp.umpc.complete import complete_max_degree, complete_plans, simulate_complete
from dp.umpc.protocol import UStatQuery, sampler_summary
from dp.validation import check_choice, check_parties
from secure.intake import ColumnSpec
from secure.kernels import get_kernel
from secure.public_randomness import public_generator

__all__ = ["COMPLETE_KERNELS", "COMPLETE_SAMPLES", "CompleteNeighbours", "complete_neighbours", "complete_case",
           "complete_cases", "complete_case_names", "complete_case_neighbours"]

_CATEGORIES = (0, 1, 2)
#: Per kernel, in case order: its columns, rows ``n`` and the changed row 0 of ``D`` and ``D'`` (docs/audit.md).
_KERNELS: dict[str, tuple[tuple[ColumnSpec, ...], int, tuple[float, ...], tuple[float, ...]]] = {
    "kendall": (KENDALL_SPECS, 6, (15.0, 15.0), (15.0, 0.0)),
    "gini": ((ColumnSpec("x", 0, 2, 1),), 6, (0.0,), (2.0,)),
    "auc": ((ColumnSpec("score", 0, 1, 3), ColumnSpec("label", 0, 1, 0)), 6, (1.0, 0.0), (1.0, 1.0)),
    "duplicate": ((ColumnSpec.categorical("x", _CATEGORIES),), 6, (0.0,), (1.0,)),
    "rand": ((ColumnSpec.categorical("first", _CATEGORIES), ColumnSpec.categorical("second", _CATEGORIES)), 6,
             (0.0, 0.0), (0.0, 1.0)),
    "vus": ((ColumnSpec("score", 0, 1, 3), ColumnSpec("label", 0, 2, 0)), 5, (0.0, 1.0), (0.0, 0.0))}
#: The kernels with a complete audit case, in case order.
COMPLETE_KERNELS: tuple[str, ...] = tuple(_KERNELS)
#: Recommended outputs per dataset of every complete case (runtime only: docs/audit.md).
COMPLETE_SAMPLES: int = 100_000


@dataclass(frozen=True)
class CompleteNeighbours(SimulatedNeighbours):
    """Neighbours for a complete release (``query.tuples=None``: all tuples; row 0 of party 0 differs;
    ``first``: :func:`dp.umpc.complete.simulate_complete` with zero noise)."""

    @property
    def first_sums(self) -> np.ndarray:
        return np.asarray(self.first.sums, dtype=np.int64)

    @property
    def second_sums(self) -> np.ndarray:
        return np.asarray(self.second.sums, dtype=np.int64)

    def calibrate(self) -> list[NoisePlan]:
        """The plans, recomputed now by the shipped calibration (:func:`dp.umpc.complete.complete_plans`)."""
        return complete_plans(self.query, self.rows, self.parties, self.threshold)


def _tables(kernel: str, rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``D`` and ``D'`` (stacked over parties, row 0 the changed one), as docs/audit.md derives."""
    generator = public_generator(seed + 7)
    others = rows - 1
    changed = _KERNELS[kernel][2:]
    if kernel == "kendall":
        background = generator.integers(1, 15, size=(others, 2)).astype(np.float64)
    elif kernel == "auc":
        background = np.column_stack([generator.integers(0, 8, size=others) / 8.0, np.zeros(others)])
    elif kernel == "vus":
        low = others // 2
        scores = np.concatenate([generator.integers(1, 4, size=low), generator.integers(5, 8, size=others - low)]) / 8.0
        background = np.column_stack([scores, np.repeat([1.0, 2.0], [low, others - low])])
    else:  # gini, duplicate, rand: every other row zero
        background = np.zeros((others, len(changed[0])))
    first, second = (np.vstack([np.asarray(row, dtype=np.float64)[None, :], background]) for row in changed)
    return first, second


@lru_cache(maxsize=None)
def complete_neighbours(kernel: str, *, epsilon: float = CASE_EPSILON, delta: float = 0.0, parties: int = 3,
                        threshold: int = 1, noise: str = "parties", seed: int = PUBLIC_SEED) -> CompleteNeighbours:
    """Neighbouring tables on which the complete sums move as far as replacing one row can move them (the
    parameters: docs/audit.md).  :raise ValueError: on an unknown kernel or invalid parameters."""
    check_parties(parties, threshold)
    check_choice(kernel, COMPLETE_KERNELS, "kernel")
    made = get_kernel("gini", precision=1) if kernel == "gini" else get_kernel(kernel)
    specs, rows = _KERNELS[kernel][:2]  # at least the degree + 1
    query = UStatQuery(kernel=made, specs=specs, epsilon=epsilon, delta=delta, noise=noise, path="histogram")
    return CompleteNeighbours.of(simulate_complete, query, _tables(kernel, rows, seed), parties, threshold)


def _honest_view(plans: Sequence[NoisePlan], parties: int, threshold: int, count: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Per-party noise ``(count, outputs, m)``: the honest parties' shipped draws, the coalition's ``t`` zero."""
    noise = np.zeros((count, len(plans), parties), dtype=np.int64)
    for j, plan in enumerate(plans):
        if plan.source != "parties":
            raise TypeError(f"expected party noise, got {plan.mechanism}")
        for party in range(threshold, parties):
            noise[:, j, party] = plan.draw(rng, size=count)
    return noise


def _released(pair: CompleteNeighbours, second: bool, count: int, rng: np.random.Generator) -> np.ndarray:
    """``(count, outputs)`` noisy sums of :func:`simulate_complete` on ``D`` (or ``D'``), coalition's view."""
    rows = pair.second_rows if second else pair.first_rows
    if pair.query.noise == "mpc":
        simulation = simulate_complete(pair.query, rows, threshold=pair.threshold, runs=count, noise_rng=rng)
    else:
        plans = pair.calibrate()  # the shipped calibration, now (mutation tests patch it)
        view = _honest_view(plans, pair.parties, pair.threshold, count, rng)
        simulation = simulate_complete(pair.query, rows, threshold=pair.threshold, runs=count, noise=view)
        if simulation.plans != plans:
            raise RuntimeError("the simulated release calibrated other plans than complete_plans")
    exact = np.asarray(simulation.sums, dtype=np.int64)
    added = np.asarray(simulation.noise, dtype=np.int64).sum(axis=2)
    return exact[None, :] + added


def _mechanism(pair: CompleteNeighbours) -> str:
    query, plans = pair.query, pair.plans
    n, k = pair.rows, query.kernel.degree
    noise = {"discrete laplace": f"distributed discrete Laplace (each of m = {pair.parties} parties adds "
                                 f"Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha), Sinh & Ramon App. B.1)",
             "binomial": "centred binomial party shares meeting (epsilon, delta) exactly (dp.calibration)"}.get(
        plans[0].mechanism, "one discrete Laplace sampled inside MPC (dp.secret_noise), claimed (epsilon, delta_s)")
    sensitivities = ", ".join(str(plan.sensitivity) for plan in plans)
    split = " with epsilon/2 per sum" if len(plans) > 1 else ""
    return (f"complete {query.kernel.name} over all C({n}, {k}) = {math.comb(n, k)} tuples "
            f"(dp.umpc.complete.simulate_complete: histogram polynomial; Sinh & Ramon, Protocol 3.1 with E = every "
            f"tuple, delta_max = {complete_max_degree(n, k, query.kernel)} tuples one row changes, App. C.2.3): "
            f"sensitivity {sensitivities}{split}, {noise}")


def complete_case(name: str, pair: CompleteNeighbours) -> AuditCase:
    """The audit case of ``pair``'s complete release (docs/audit.md)."""
    plans = pair.plans
    if len(plans) == 1:
        statistic = "the released integer sum (coalition's view)"
        sample = paired(lambda other, count, rng: _released(pair, other, count, rng)[:, 0].astype(np.float64),
                        False, True)
    else:
        rates = np.array([-plan.epsilon / plan.sensitivity for plan in plans])  # claimed log alpha of each sum
        first, second = pair.first_sums, pair.second_sums
        statistic = (f"claimed privacy-loss statistic of the {len(plans)} noisy sums (coalition's view), rates "
                     f"{(-rates).tolist()}")
        sample = paired(lambda other, count, rng: privacy_loss_statistic(_released(pair, other, count, rng), first,
                                                                         second, rates), False, True)
    in_mpc = pair.query.noise == "mpc"
    view = ("noise sampled inside MPC (no party, hence no coalition, knows any part of it)" if in_mpc
            else f"the coalition of t = {pair.threshold} subtracts its own shares")
    return AuditCase(
        name=name, mechanism=_mechanism(pair), epsilon=pair.query.epsilon,
        delta=sampler_summary(pair.query, plans)[0] if in_mpc else pair.query.delta, sample=sample,
        statistic=f"{statistic}; {view}", samples=COMPLETE_SAMPLES,
        neighbours=(f"replace row 0 of {pair.rows}; the sums move by {pair.change} (calibrated sensitivities "
                    f"{[plan.sensitivity for plan in plans]})"))


#: Every complete case: name -> (kernel, noise source, delta) of :func:`complete_neighbours`.
_CASES: dict[str, tuple[str, str, float]] = {
    **{f"complete-{kernel}-dlap-m3-t1": (kernel, "parties", 0.0) for kernel in COMPLETE_KERNELS},
    "complete-kendall-mpc-dlap-m3-t1": ("kendall", "mpc", 0.0),
    "complete-auc-mpc-dlap-m3-t1": ("auc", "mpc", 0.0),
    "complete-kendall-binomial-m3-t1": ("kendall", "parties", CASE_DELTA),
}


def complete_case_names() -> list[str]:
    """The names of :func:`complete_cases`, in order (without building them)."""
    return list(_CASES)


def complete_case_neighbours(name: str) -> CompleteNeighbours:
    """The neighbouring tables of the complete case ``name`` (cached); ValueError if there is no such case."""
    if name not in _CASES:
        raise ValueError(f"unknown complete audit case {name!r}; choose one of: {', '.join(_CASES)}")
    kernel, noise, delta = _CASES[name]
    return complete_neighbours(kernel, noise=noise, delta=delta)


def complete_cases() -> list[AuditCase]:
    """Every complete release's case (``m = 3``, ``t = 1``): each kernel with party noise, Kendall and AUC
    with noise sampled in MPC, Kendall with binomial party noise."""
    return [complete_case(name, complete_case_neighbours(name)) for name in _CASES]
