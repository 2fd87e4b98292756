"""Audit cases for every central and distributed DP mechanism of the suite, plus negative controls.

Each case runs the suite's own statistic, calibration and noise on worst-case neighbours and returns one
scalar per run for :func:`dp.audit.engine.audit`.
Threat model: passive, static coalition of ``t < m/2`` parties (FedAUC: label DP).
The cases by module and paper: docs/audit.md."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from functools import lru_cache

import numpy as np

from dp.audit.complete_cases import complete_cases
from dp.audit.fss_cases import fss_cases
from dp.audit.engine import AuditCase, Sampler, honest_sum, paired
from dp.audit.fedauc_cases import fedauc_cases
from dp.audit.neighbours import (BINOMIAL_SPLIT_DELTA, CASE_DELTA, CASE_EPSILON, PairNeighbours, UStatNeighbours,
                                 pair_neighbours, rank_auc_neighbours, tree_neighbours, ustat_neighbours)
from dp.audit.statistics import laplace_weights, privacy_loss_statistic
from dp.audit.tree_cases import ecdf_cases, hl_cases, tree_case
from dp.bell.subsampled_analysis import all_pairs_plans
from dp.bell.subsampled_pairs import party_pair_draws, plans_for_pairs
from dp.ecdf.grid import uniform_grid
from dp.ecdf.tree import plan_tree_noise
from dp.noise_plans import NoisePlan
from dp.rank_auc import plans_for_rows
from dp.umpc.delegation import choose_delegates, delegate_plan
from secure.noise.party import polya_difference

__all__ = ["DELEGATES_SEED", "audit_delegates", "RECOMMENDED_SAMPLES", "central_cases", "case_names", "get_case"]

NoiseDraw = Callable[[int, np.random.Generator], np.ndarray]


def _scalar_sampler(pair: UStatNeighbours, noise: NoiseDraw) -> Sampler:
    """Sampler of ``sum + noise`` on both datasets of ``pair``, independent noise for each."""
    return paired(lambda value, count, rng: value + np.asarray(noise(count, rng), dtype=np.float64),
                  float(pair.first.sums[0]), float(pair.second.sums[0]))


def _laplace_plan(plan: NoisePlan) -> NoisePlan:
    """``plan``, checked to be distributed discrete Laplace (the cases whose claim is its ``alpha``)."""
    if plan.mechanism != "discrete laplace" or plan.source != "parties":
        raise TypeError(f"expected distributed discrete Laplace, got {plan.mechanism}")
    return plan


def _honest_shares(plan: NoisePlan, count: int, rng: np.random.Generator) -> np.ndarray:
    """The honest parties' (or delegates') shares of ``plan``, summed, ``count`` releases at a time (docs/audit.md)."""
    return honest_sum(lambda: plan.draw(rng, size=count), plan.honest)


def _ustat_case(name: str, pair: UStatNeighbours, mechanism: str) -> AuditCase:
    """The Pi_U-MPC release: the sum plus the honest parties' shares, or plus the whole noise sampled inside MPC
    (recalibrated at every batch)."""
    plan = pair.plans[0]
    sampler = plan.sampler
    if pair.query.noise == "mpc" and sampler is None:
        raise ValueError(f"case {name}: the query's noise is not sampled inside MPC")

    def noise(count: int, rng: np.random.Generator) -> np.ndarray:
        current = pair.calibrate()[0]  # dp.umpc.protocol.plan_noise (in MPC: dp.secret_noise.plan_secret_laplace)
        if sampler is None:
            return _honest_shares(current, count, rng)
        if current.source != "mpc":
            raise RuntimeError(f"case {name}: the calibration no longer samples inside MPC")
        return current.draw(rng, count)  # the sampler's plaintext mirror, dp.secret_noise.simulate_secret_laplace

    return AuditCase(
        name=name, mechanism=mechanism, epsilon=plan.epsilon, delta=plan.delta, sample=_scalar_sampler(pair, noise),
        statistic=(f"the released integer sum minus the coalition's own {pair.threshold} shares: sum + "
                   f"{pair.parties - pair.threshold} honest shares" if sampler is None else
                   "the released integer sum: sum + noise sampled inside MPC (no party, hence no coalition of "
                   f"{pair.threshold}, knows any part of it); J = {sampler.digits} digits, b = {sampler.bits} bits"),
        neighbours=(f"replace row {pair.changed_row} (a row of largest degree "
                    f"{plan.sensitivity // pair.query.outputs[0].sensitivity} in E); the sum moves by {pair.change[0]} "
                    f"= the sensitivity {plan.sensitivity}"))


def _umpc_cases() -> list[AuditCase]:
    kendall = ustat_neighbours("kendall", parties=3, threshold=1)
    in_mpc = ustat_neighbours("kendall", parties=3, threshold=1, noise="mpc")
    gini = ustat_neighbours("gini", parties=5, threshold=2)
    binomial = ustat_neighbours("kendall", delta=CASE_DELTA, parties=3, threshold=1)
    binomial_split = ustat_neighbours("kendall", delta=BINOMIAL_SPLIT_DELTA, parties=5, threshold=2)
    return [
        _ustat_case("umpc-kendall-dlap-m3-t1", kendall,
                    "Pi_U-MPC Kendall tau on 48 balanced tuples, distributed discrete Laplace: each party adds "
                    "Polya(1/(m-t), alpha) - Polya(1/(m-t), alpha) (Sinh & Ramon, Protocol 3.1, App. B.1, "
                    "sensitivity delta_max Delta_f of App. C.2.3)"),
        _ustat_case("umpc-gini-dlap-m5-t2", gini,
                    "Pi_U-MPC Gini mean difference (1 fractional bit) on 48 balanced tuples, distributed discrete "
                    "Laplace with coalition shape 1/(m-t) (Sinh & Ramon, Protocol 3.1, App. B.1, App. C.2.3)"),
        _ustat_case("umpc-kendall-binomial-m3-t1", binomial,
                    "Pi_U-MPC Kendall tau, (epsilon, delta) variant: each party adds a centred Binomial(N_p, 1/2), "
                    "(m-t) N_p at least the fewest trials meeting (epsilon, delta) exactly "
                    "(dp.calibration.binomial_delta; Sinh & Ramon, Protocol 3.1 with the binomial mechanism)"),
        _ustat_case("umpc-kendall-binomial-m5-t2", binomial_split,
                    "Pi_U-MPC Kendall tau, (epsilon, delta = 1e-2) variant with m = 5, t = 2: each party adds a "
                    "centred Binomial(N_p, 1/2) with N_p = ceil(N/(m-t)) rounded up to even, N the fewest trials "
                    "meeting (epsilon, delta) exactly (dp.calibration.party_binomial_trials; Sinh & Ramon, "
                    "Protocol 3.1 with the binomial mechanism); the case on which a split over m is resolvable"),
        _ustat_case("umpc-kendall-mpc-dlap-m3-t1", in_mpc,
                    "Pi_U-MPC Kendall tau on 48 balanced tuples, one discrete Laplace sampled inside MPC: "
                    "G1 - G2 with G = sum_j 2^j [U_j < T_j], J binary digits of b-bit secret uniform coins "
                    "(dp.secret_noise; Champion, shelat & Ullman 2019 coins; Sinh & Ramon, Protocol 3.1, "
                    "App. C.2.3 sensitivity), claimed (epsilon, delta_s) with delta_s = (1 + e^epsilon) tau"),
    ]


#: Seed of the generator of the audit's noise delegates only, not of the tuples (why it may be fixed: docs/audit.md).
DELEGATES_SEED: int = 20261126


def audit_delegates(parties: int, size: int = 3) -> tuple[int, ...]:
    """``Z`` of the ``delegated-*`` cases: ``size`` of ``parties`` ids from the generator of :data:`DELEGATES_SEED`."""
    return choose_delegates(np.random.default_rng(DELEGATES_SEED), parties, size)


def _delegated_cases() -> list[AuditCase]:
    pair = ustat_neighbours("kendall", parties=5, threshold=2)
    delegates = audit_delegates(pair.parties)
    binomial = ustat_neighbours("kendall", delta=CASE_DELTA, parties=5, threshold=2)
    cases = []
    for name, source, corrupt in (("delegated-dlap-one-honest", pair, None), ("delegated-dlap-two-honest", pair, 1),
                                  ("delegated-binomial-one-honest", binomial, None)):
        plan = delegate_plan(source.plans[0], delegates, corrupt_delegates=corrupt)

        def noise(count: int, rng: np.random.Generator, source: UStatNeighbours = source,
                  corrupt: int | None = corrupt) -> np.ndarray:
            current = delegate_plan(source.calibrate()[0], delegates, corrupt_delegates=corrupt)
            return _honest_shares(current, count, rng)

        cases.append(AuditCase(
            name=name,
            mechanism=(f"noise delegation (Sinh & Ramon §4, threat model M_HF): only the delegates "
                       f"Z = {list(delegates)} of m = 5 draw {plan.mechanism} noise, calibrated within Z for "
                       f"t_Z = {plan.corrupt_delegates} corrupt delegates (shape 1/(|Z| - t_Z)), on the Pi_U-MPC "
                       f"Kendall sum"),
            epsilon=source.query.epsilon, delta=source.query.delta,
            sample=_scalar_sampler(source, noise),
            statistic=f"the Kendall sum plus the {plan.honest} honest delegate draw(s)",
            neighbours=f"replace a row of largest degree; the sum moves by {source.change[0]} = the sensitivity"))
    return cases


def _rank_auc_case() -> AuditCase:
    pair = rank_auc_neighbours()
    parties, threshold = 3, 1
    plans = plans_for_rows(pair.query, len(pair.first_rows), parties, threshold)
    shifts = np.subtract(pair.second_sums, pair.first_sums)
    claimed = np.array([math.log(_laplace_plan(p).alpha) for p in plans])

    def released(sums: tuple[int, int], count: int, rng: np.random.Generator) -> np.ndarray:
        current = plans_for_rows(pair.query, len(pair.first_rows), parties, threshold)  # shipped, every batch
        noisy = np.stack([value + _honest_shares(plan, count, rng) for value, plan in zip(sums, current)], axis=1)
        return privacy_loss_statistic(noisy, pair.first_sums, pair.second_sums, claimed)

    return AuditCase(
        name="rank-auc-m3-t1",
        mechanism=("AUC with scores and labels secret (dp.rank_auc): noisy 2U (sensitivity 2(n-1)) and noisy P "
                   "(sensitivity 1), epsilon/2 each, distributed discrete Laplace of dp.umpc.protocol (Sinh & Ramon App. B.1; "
                   "rank sum of Sun et al. eq. 1)"),
        epsilon=pair.query.epsilon, delta=0.0,
        sample=paired(released, pair.first_sums, pair.second_sums),
        statistic=(f"claimed privacy-loss statistic of (2U~, P~) with the coalition's shares subtracted, rates "
                   f"{(-claimed).tolist()}"),
        neighbours=f"replace a top-score negative by a top-score positive: (2U, P) moves by {shifts.tolist()}")


def _pair_case(name: str, pair: PairNeighbours, plan: NoisePlan, *, delta: float, mechanism: str) -> AuditCase:
    touched = pair.touched
    honest = plan.parties - plan.threshold
    log_alpha = -plan.epsilon / plan.sensitivity  # as dp.bell.subsampled_pairs.party_pair_draws
    shifts = (pair.second_values - pair.first_values)[touched]
    weights = laplace_weights(np.full(touched.size, log_alpha), shifts)

    def released(values: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        noise = honest_sum(lambda: party_pair_draws(plan, count * touched.size, rng), honest)
        return (values[touched][None, :] + noise.reshape(count, touched.size)) @ weights

    return AuditCase(
        name=name, mechanism=mechanism, epsilon=pair.query.epsilon, delta=delta,
        sample=paired(released, pair.first_values, pair.second_values),
        statistic=(f"signed sum of the {touched.size} noisy per-pair values that contain the changed row (the "
                   f"aggregator's view minus the coalition's shares; the other pairs are independent of the change)"),
        neighbours=f"row {pair.changed_row} replaced; each of its {touched.size} pairs moves by Delta_f = 2")


def _subsampled_cases() -> list[AuditCase]:
    parties, threshold = 3, 1
    pair = pair_neighbours(permutations=3)
    plan = plans_for_pairs(pair.query, parties, threshold)[0]
    baseline = pair_neighbours(rows=8, all_pairs=True)
    delta = 1e-8
    base_plan = all_pairs_plans(baseline.query, 8, delta=delta, parties=parties, threshold=threshold)[0]
    return [
        _pair_case("subsampled-pairs-kendall-m3-t1", pair, plan, delta=0.0,
                   mechanism=("subsampled pairs (Bell, Bellet, Gascon & Kulkarni §5, Theorem 5, App. C.1): P = 3 "
                              "public permutations, per-pair distributed DLap(exp(-epsilon/(P Delta_f))), opened to "
                              "the aggregator")),
        _pair_case("subsampled-all-pairs-baseline-m3-t1", baseline, base_plan, delta=delta,
                   mechanism=("all-pairs baseline of Bell et al. §6: every pair released with "
                              "DLap(exp(-epsilon_0/Delta_f)), epsilon_0 from advanced composition over n-1 pairs "
                              "(Dwork, Rothblum & Vadhan) or epsilon/(n-1), whichever is larger")),
    ]


def _control_cases() -> list[AuditCase]:
    kendall = ustat_neighbours("kendall", parties=3, threshold=1)
    plan = kendall.plans[0]
    scale = plan.sensitivity / (2.0 * plan.epsilon)
    cases = [AuditCase(
        name="control-float-laplace-half-scale",
        mechanism=("BROKEN: floating-point Laplace of scale sensitivity/(2 epsilon) -- half the scale that "
                   "Sinh & Ramon App. B.1 calibrates -- on the Pi_U-MPC Kendall sum (numpy Generator.laplace; "
                   "true loss 2 epsilon; and floating-point noise, which Mironov 2012 warns against)"),
        epsilon=plan.epsilon, delta=0.0,
        sample=_scalar_sampler(kendall, lambda count, rng: rng.laplace(0.0, scale, size=count)),
        statistic="the released sum", neighbours="as umpc-kendall-dlap-m3-t1", control=True)]
    for parties, threshold in ((3, 1), (5, 2)):
        pair = ustat_neighbours("kendall", parties=parties, threshold=threshold)
        naive = _laplace_plan(pair.plans[0])

        def honest_naive(count: int, rng: np.random.Generator, alpha: float = naive.alpha,
                         shape: float = 1.0 / parties, honest: int = parties - threshold) -> np.ndarray:
            """The ``m - t`` honest shares of a naive calibration (shape ``1/m``): BROKEN on purpose."""
            return honest_sum(lambda: polya_difference(shape, alpha, size=count, rng=rng), honest)

        cases.append(AuditCase(
            name=f"control-polya-naive-m{parties}-t{threshold}",
            mechanism=(f"BROKEN: Polya shares of shape 1/m = 1/{parties} (naive calibration) while "
                       f"t = {threshold} parties collude: the coalition sees only m - t = {parties - threshold} "
                       f"draws (true loss dp.audit.engine.coalition_epsilon > epsilon; Sinh & Ramon App. B.1 needs shape "
                       f"1/(m-t))"),
            epsilon=naive.epsilon, delta=0.0,
            sample=_scalar_sampler(pair, honest_naive),
            statistic="the Kendall sum plus the honest shares", neighbours="as umpc-kendall-dlap", control=True))
    grid = uniform_grid(1.0, 8.0, 1.0)
    tree_pair = tree_neighbours(grid)
    levels = plan_tree_noise(epsilon=CASE_EPSILON, points=grid.size).levels
    broken = plan_tree_noise(epsilon=CASE_EPSILON * levels, points=grid.size)  # node scale 1/epsilon
    cases.append(tree_case(
        "control-tree-node-scale", lambda: broken, tree_pair, claimed=CASE_EPSILON, control=True,
        mechanism=("BROKEN: ECDF tree with node noise DLap(exp(-epsilon)), i.e. scale 1/epsilon instead of "
                   "(L+1)/epsilon (Barczewski et al. eq. 2 without Theorem 1's division by L + 1)")))
    return cases


#: Recommended outputs per dataset (``AuditCase.samples``) where not the case's own; how they are chosen:
#: docs/audit.md.
RECOMMENDED_SAMPLES: dict[str, int] = {
    "ecdf-tree-gaussian": 3_000,
    "ecdf-tree-vector-m3-t1": 20_000,
    "fedauc-global-gaussian": 5_000,
    "subsampled-all-pairs-baseline-m3-t1": 100_000,
    "control-float-laplace-half-scale": 20_000,
    "control-polya-naive-m3-t1": 40_000,
    "control-polya-naive-m5-t2": 40_000,
    "control-tree-node-scale": 100_000,
}


@lru_cache(maxsize=1)
def _all_cases() -> tuple[AuditCase, ...]:
    built = (_umpc_cases() + _delegated_cases() + ecdf_cases() + hl_cases() + fedauc_cases() + [_rank_auc_case()]
             + _subsampled_cases() + complete_cases() + fss_cases() + _control_cases())
    return tuple(replace(case, samples=RECOMMENDED_SAMPLES.get(case.name, case.samples)) for case in built)


def central_cases(*, controls: bool = True) -> list[AuditCase]:
    """Every central / distributed mechanism's audit case, then (``controls``) the negative controls, each of which
    must fail its audit: a new list of :class:`dp.audit.engine.AuditCase` (built once, then cached)."""
    return [case for case in _all_cases() if controls or not case.control]


def case_names(*, controls: bool = True) -> list[str]:
    """The names of :func:`central_cases`, in order."""
    return [case.name for case in central_cases(controls=controls)]


def get_case(name: str) -> AuditCase:
    """The case called ``name``; ValueError if there is no such case (the message lists the names)."""
    for case in _all_cases():
        if case.name == name:
            return case
    raise ValueError(f"unknown audit case {name!r}; choose one of: {', '.join(case_names())}")
