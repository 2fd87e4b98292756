r"""Audit cases for every central and distributed DP mechanism of the suite, plus negative controls.

Each :class:`dp.audit.engine.AuditCase` built here runs one of the suite's mechanisms with the suite's own
functions -- the deterministic statistic from the module's own kernels or counting functions, the
calibration from its own plans, the noise from :mod:`secure.noise.party` (or the module's wrapper of it)
with the generator the auditor passes -- on a pair of neighbouring datasets chosen to be worst case
for that mechanism, and returns one scalar per run.  :func:`dp.audit.engine.audit` then bounds the privacy
loss from below.  The cases, by module and paper:

=============================  ===========================================================================
``umpc-*``                     Pi_U-MPC (:mod:`dp.umpc.protocol`; Sinh & Ramon, Protocol 3.1, App. B.1, App. C.2.3)
``delegated-*``                noise delegation (:mod:`dp.umpc.delegation`; Sinh & Ramon §4)
``ecdf-*``                     ECDF tree (:mod:`dp.ecdf.tree`, :mod:`dp.ecdf.secure_release`; Barczewski, Mawass &
                               Ramon §3.1 eq. 2, Thm 1, Thm 3, §4.1)
``hl-*``                       Hosmer-Lemeshow (:mod:`dp.ecdf.hosmer_lemeshow`; same paper, Alg. 2, Thm 2)
``fedauc-*``                   FedAUC (:mod:`dp.fedauc.mechanisms`; Sun et al. §4, §5, §5.3, Alg. 1 and 4)
``rank-auc-*``                 secure rank AUC (:mod:`dp.rank_auc`)
``subsampled-*``               subsampled pairs and its all-pairs baseline (:mod:`dp.bell.subsampled_pairs`;
                               Bell et al. §5, Thm 5, App. C.1)
``control-*``                  negative controls: deliberately broken mechanisms that must FAIL
=============================  ===========================================================================

What is audited
---------------
*Distributed noise.*  Against a coalition of ``t`` of the ``m`` parties (passive, static) the release
is the statistic plus every party's noise share; the coalition subtracts its own shares
(post-processing), so what must be DP is the statistic plus the ``m - t`` *honest* shares.  The
distributed cases sample exactly that view: ``m - t`` draws of the party share (for noise
delegation: the honest delegates' draws only).  Noise sampled inside MPC
(``umpc-kendall-mpc-dlap-m3-t1``, :mod:`dp.secret_noise`) has no shares at all: no coalition knows
any part of it, so the case samples the whole noise with the sampler's plaintext mirror and claims
``(epsilon, delta_s)``, ``delta_s`` the sampler's truncation delta.

*Vector releases* (tree counts, the ``4 Q`` Hosmer-Lemeshow statistics, FedAUC's two reports per
client, the pair of secure-AUC sums, per-pair values) are audited through a *linear* statistic of
the released vector, which is post-processing of the release, so a violation on it is a violation
of the mechanism.  With independent discrete Laplace coordinates of loss rate ``r_j`` per unit
(``alpha_j = exp(-r_j)``) and neighbouring shift ``d_j``, the statistic
``T = sum_j r_j sign(d_j) X_j`` has shift ``sum_j r_j |d_j|`` -- the mechanism's whole privacy loss
on that pair -- and noise whose tails decay at rate 1, so its tail events approach that loss
(:func:`laplace_weights`).  With Gaussian coordinates the likelihood-ratio (LDA) direction
``d_j / sigma_j^2`` is used instead.  For the tree, whose released counts ``c + A eta`` mix the
node noises ``eta``, the weights are the solution of a small linear programme: the ``w`` maximising
the shift ``w . 1_[a, b]`` subject to ``|A^T w| <= 1`` node-wise (:func:`tree_weights`).  Its value
is the least ``l1`` norm of a node vector ``zeta`` with ``A zeta = 1_[a, b]`` (LP duality), so
``T = w . c~`` reaches the exact pure privacy loss ``value * epsilon / (L + 1)`` of the pair.

Sizes are kept small on purpose (sensitivities of a few fixed-point units, a few dozen rows), so
that a pure-DP privacy loss is resolvable with a few hundred thousand samples.  All public
randomness (tuples, permutations, client layouts, synthetic rows) comes from
:data:`PUBLIC_SEED` through :func:`secure.public_randomness.public_generator`.

Findings the cases make explicit (asserted in ``tests/test_audit_central.py``): the ECDF tree's worst
neighbouring pair on ``N = 2^L`` grid points has exact loss ``L epsilon / (L + 1)`` (the calibration
to ``L + 1`` nodes is conservative by that factor); Hosmer-Lemeshow with ``accounting="paper"`` has
loss ``4 eps'`` on its group statistics, half of the ``8 eps'`` it spends (as its module states).

Threat model: passive (semi-honest), static adversary corrupting at most ``t < m/2`` parties (MPyC's
Shamir threshold; for FedAUC the server and any set of other clients, label DP).  The audit runs the
simulated path in one process (equal to the secure path for the same noise draws, as the modules'
own tests hold); it can only prove violations, passing is evidence, not proof.

Negative controls (``control=True``): ``control-float-laplace-half-scale`` (floating-point Laplace
of half the calibrated scale on the U-MPC sum: true loss ``2 epsilon``), ``control-polya-naive-*``
(Pólya shares of shape ``1/m`` with ``t`` corrupt parties: true loss
:func:`dp.audit.engine.coalition_epsilon` ``> epsilon``), ``control-tree-node-scale`` (tree node noise of
scale ``1/epsilon`` instead of ``(L+1)/epsilon``: true loss ``L epsilon`` on the audited pair).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import numpy.typing as npt
from scipy.optimize import linprog

from dp.audit.engine import AuditCase, Sampler, clopper_pearson_lower, clopper_pearson_upper
from dp.calibration import party_noise_shape
from dp.ecdf.tree import (
    TreeNoisePlan,
    draw_gaussian_tree_noise,
    interval_nodes,
    noisy_counts,
    plan_tree_noise,
    prefix_incidence,
    true_counts,
    uniform_grid,
)
from dp.fedauc.mechanisms import (
    ClientRelease,
    average_ranks,
    client_releases,
    client_layout,
    noisy_client_reports,
    local_statistics,
    noise_parameter,
    server_auc,
    zcdp_budget,
)
from dp.rank_auc import RankAucQuery, exact_sums, plans_for_rows
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, group_statistics, party_statistic_draws
from dp.umpc.delegation import DelegatedNoisePlan, choose_delegates, delegate_plan
from dp.sampling import vertex_degrees
from dp.secret_noise import simulate_secret_laplace
from dp.bell.subsampled_pairs import SubsampledPairsQuery, all_pairs_plans, pairs_for, party_pair_draws, plans_for_pairs
from dp.umpc.protocol import NoisePlan, Simulation, UStatQuery, plans_for, sample_for, simulate
from dp.validation import check_delta, check_epsilon, check_parties, check_positive, check_positive_int
from secure.intake import ColumnSpec
from secure.kernels import get_kernel
from secure.noise.party import polya_difference, sample_discrete_gaussian
from secure.public_randomness import public_generator

__all__ = [
    "PUBLIC_SEED",
    "CASE_EPSILON",
    "CASE_DELTA",
    "BINOMIAL_SPLIT_DELTA",
    "GAUSSIAN_EPSILON",
    "GAUSSIAN_DELTA",
    "TREE_EPSILON",
    "HL_EPSILONS",
    "RECOMMENDED_SAMPLES",
    "DEFAULT_SAMPLES",
    "UStatNeighbours",
    "ustat_neighbours",
    "TreeNeighbours",
    "tree_weights",
    "tree_neighbours",
    "TREE_VECTOR_EPSILON",
    "tree_log_likelihood",
    "tree_privacy_loss_statistic",
    "tree_vector_case",
    "HosmerLemeshowNeighbours",
    "hosmer_lemeshow_neighbours",
    "FedAucNeighbours",
    "fedauc_neighbours",
    "fedauc_release",
    "fedauc_estimates",
    "RankAucNeighbours",
    "rank_auc_neighbours",
    "PairNeighbours",
    "pair_neighbours",
    "laplace_weights",
    "central_cases",
    "case_names",
    "get_case",
    "event_probabilities",
    "planned_lower_bound",
]

#: Public seed of every case (tuples, permutations, layouts, synthetic rows); noise never uses it.
PUBLIC_SEED: int = 20240611
#: The claimed epsilon of the pure-DP cases: large enough that the loss is resolvable.
CASE_EPSILON: float = 1.0
#: delta of the binomial (epsilon, delta) cases.
CASE_DELTA: float = 1e-5
#: delta of ``umpc-kendall-binomial-m5-t2``, the case on which a wrong split of the binomial trials
#: (over ``m`` parties instead of ``m - t``) is resolvable: at ``m = 5``, ``t = 2``, Delta = 8 the honest
#: parties then hold 546 of the 906 trials, true delta 0.035 at the claimed epsilon 1 and a best threshold
#: event of log-ratio 1.40, which ``tests/test_audit_mutations.py`` resolves at 100 000 outputs; at
#: :data:`CASE_DELTA` the same violation lies in tails too rare to resolve below millions of outputs.
BINOMIAL_SPLIT_DELTA: float = 1e-2
#: (epsilon, delta) claimed by the Gaussian (zCDP) cases: rho = zcdp_budget(3, 1e-3) ~ 0.20 keeps
#: the noise small enough that the loss is visible at audit-resolvable event probabilities.
GAUSSIAN_EPSILON: float = 3.0
GAUSSIAN_DELTA: float = 1e-3
#: Hosmer-Lemeshow budgets per accounting: eps' = epsilon/(L + 9) = epsilon/12 on 8 grid points, so
#: the audited loss of the statistics (4 eps' for ``paper``, 8 eps' for ``joint``) is 1.
HL_EPSILONS: dict[str, float] = {"paper": 3.0, "joint": 1.5}
#: epsilon of the tree cases: a node's loss is epsilon/(L + 1), so a larger budget keeps the
#: audited loss (exactly L epsilon/(L + 1) on N = 2^L points) resolvable.
TREE_EPSILON: float = 2.0
#: epsilon of the whole-vector tree case (:func:`tree_vector_case`, N = 8, L = 3): node rate
#: epsilon/4 = 1.5, exact loss of the worst pair 3 x 1.5 = 4.5.  At this rate a node-level loss of
#: twice the claimed rate (node noise halved or epsilon doubled: count-level loss 9 > 6) is resolved
#: by events of probability about 1 % (``tests/test_audit_mutations.py`` plans 200 000 outputs).
TREE_VECTOR_EPSILON: float = 6.0

NoiseDraw = Callable[[int, np.random.Generator], np.ndarray]


# --------------------------------------------------------------------------------------------------
# small helpers


def _scalar_sampler(first: float, second: float, noise: NoiseDraw) -> Sampler:
    """Sampler of ``value + noise`` on both datasets, independent noise for each."""

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (first + np.asarray(noise(count, rng), dtype=np.float64),
                second + np.asarray(noise(count, rng), dtype=np.float64))

    return sample


def _honest_sum(draw: NoiseDraw, honest: int) -> NoiseDraw:
    """Sum of ``honest`` independent draws (the shares a coalition cannot subtract)."""
    check_positive_int(honest, "honest")

    def noise(count: int, rng: np.random.Generator) -> np.ndarray:
        total = np.zeros(count, dtype=np.int64)
        for _ in range(honest):
            total += np.asarray(draw(count, rng), dtype=np.int64)
        return total

    return noise


def _honest_shares(plan: NoisePlan | DelegatedNoisePlan, count: int, rng: np.random.Generator) -> np.ndarray:
    """The honest parties' (or delegates') shares of ``plan``, summed, ``count`` releases at a time.

    Each share is the shipped party draw (:meth:`dp.umpc.protocol.NoisePlan.draw` or
    :meth:`dp.umpc.delegation.DelegatedNoisePlan.draw`, vectorised by ``size``); the release sums
    every party's share, and a coalition of ``t`` subtracts its own, leaving the ``m - t`` honest ones.
    """
    honest = plan.honest_delegates if isinstance(plan, DelegatedNoisePlan) else plan.parties - plan.threshold
    total = np.zeros(count, dtype=np.int64)
    for _ in range(honest):
        total += np.asarray(plan.draw(rng, size=count), dtype=np.int64)
    return total


def _naive_polya_draw(shape: float, alpha: float) -> NoiseDraw:
    """Negative controls only (a deliberately broken calibration): ``count`` Polya differences."""
    return lambda count, rng: np.asarray(polya_difference(shape, alpha, size=count, rng=rng))


def privacy_loss_statistic(released: np.ndarray, first: npt.ArrayLike, second: npt.ArrayLike,
                           log_alpha: npt.ArrayLike) -> np.ndarray:
    """The claimed privacy-loss statistic of independent discrete Laplace coordinates.

    ``T = sum_j -log(alpha_j) (|x_j - c'_j| - |x_j - c_j|)``: the log-likelihood ratio of ``D``
    against ``D'`` under the *claimed* noise (a fixed function of the release, so post-processing).
    It is sufficient for the pair under the claimed law; its largest value ``sum_j -log(alpha_j) |d_j|``
    (the claimed loss) is reached on the product event ``{every x_j on c_j's far side from c'_j}``,
    whose probability ratio is exactly ``e^epsilon`` for correctly calibrated noise and larger when the
    noise is too light *or too concentrated* (Pólya shares of shape ``1/m``: each coordinate's
    ``P(eta >= 0) / P(eta >= |d_j|)`` grows), which a linear statistic would average away.

    :param released: ``(runs, k)`` released coordinates; ``first``, ``second``: their noiseless values
        on ``D`` and ``D'``; ``log_alpha``: claimed ``log alpha_j < 0``.
    :return: ``(runs,)`` float64, rounded to 9 decimals (merges floating-point variants of a value).
    """
    x = np.asarray(released, dtype=np.float64)
    rates = -np.asarray(log_alpha, dtype=np.float64)
    if np.any(~(rates > 0)):
        raise ValueError("log_alpha must be negative")
    c, c_prime = np.asarray(first, dtype=np.float64), np.asarray(second, dtype=np.float64)
    return np.round((np.abs(x - c_prime) - np.abs(x - c)) @ rates, 9)


def laplace_weights(log_alpha: npt.ArrayLike, shift: npt.ArrayLike) -> np.ndarray:
    """Weights ``-log(alpha_j) sign(d_j)`` of the linear statistic of a discrete Laplace vector.

    ``T = sum_j w_j X_j`` then has shift ``sum_j -log(alpha_j) |d_j|`` between the datasets, the
    mechanism's privacy loss on the pair, and its noise has unit-rate tails (module docstring).

    :param log_alpha: ``log alpha_j < 0`` per coordinate.
    :param shift: ``d_j``, the change of coordinate ``j`` from the first to the second dataset.
    :return: float64 array of weights (0 where ``d_j = 0``).
    :raise ValueError: if a ``log_alpha`` is not negative or the shapes differ.
    """
    logs = np.asarray(log_alpha, dtype=np.float64)
    d = np.asarray(shift, dtype=np.float64)
    if logs.shape != d.shape:
        raise ValueError(f"log_alpha and shift must have the same shape, got {logs.shape} and {d.shape}")
    if np.any(~(logs < 0)):
        raise ValueError("log_alpha must be negative")
    return -logs * np.sign(d)


# --------------------------------------------------------------------------------------------------
# Pi_U-MPC (dp.umpc.protocol)


@dataclass(frozen=True)
class UStatNeighbours:
    """Two neighbouring tables for Pi_U-MPC and their noiseless simulated releases.

    :ivar query: the agreed query.
    :ivar first_rows: each party's rows of ``D``; ``second_rows`` those of ``D'``.
    :ivar changed_row: index (over all parties, stacked) of the row that differs.
    :ivar first: :func:`dp.umpc.protocol.simulate` on ``D`` with zero noise (integer sums, tuples, plans).
    :ivar second: the same on ``D'``.
    :ivar threshold: ``t``.
    """

    query: UStatQuery
    first_rows: tuple[np.ndarray, ...]
    second_rows: tuple[np.ndarray, ...]
    changed_row: int
    first: Simulation
    second: Simulation
    threshold: int

    @property
    def parties(self) -> int:
        """``m``."""
        return len(self.first_rows)

    @property
    def plans(self) -> list[NoisePlan]:
        """Noise plans of the released sums (public: they depend only on the tuples)."""
        return self.first.plans

    @property
    def change(self) -> list[int]:
        """Change of each released integer sum from ``D`` to ``D'``."""
        return [int(b) - int(a) for a, b in zip(self.first.sums, self.second.sums)]

    def calibrate(self) -> list[NoisePlan]:
        """The plans, recomputed now by the shipped calibration (:func:`dp.umpc.protocol.plans_for`).

        The samplers call this at every batch, so that what is audited is what the protocol would
        calibrate with the code as it is (the mutation tests patch it).
        """
        rows = sum(len(part) for part in self.first_rows)
        return plans_for(self.query, self.first.tuples, rows, self.parties, self.threshold)


def _split_rows(rows: np.ndarray, parties: int) -> tuple[np.ndarray, ...]:
    return tuple(np.array(part) for part in np.array_split(rows, parties))


def _zero_noise_simulation(query: UStatQuery, rows_by_party: Sequence[np.ndarray], threshold: int,
                           seed: int) -> Simulation:
    draws = 1 if query.noise == "mpc" else len(rows_by_party)  # noise sampled in MPC: one joint value
    zeros = np.zeros((1, len(query.outputs), draws), dtype=np.int64)
    return simulate(query, rows_by_party, threshold=threshold, seed=seed, runs=1, noise=zeros)


@lru_cache(maxsize=None)
def ustat_neighbours(kernel: str, *, epsilon: float = CASE_EPSILON, delta: float = 0.0, parties: int = 3,
                     threshold: int = 1, rows: int = 24, tuples: int = 48,
                     seed: int = PUBLIC_SEED, noise: str = "parties") -> UStatNeighbours:
    """Neighbouring tables on which the Pi_U-MPC sum moves by exactly its sensitivity.

    The tuples ``E`` come from BalancedSamp on the public seed (Sinh & Ramon, Alg. 1); the changed
    row ``r`` is a row of largest degree ``delta_max``, so the plan's sensitivity is
    ``delta_max * Delta_f`` (App. C.2.3).  Every tuple containing ``r`` changes by exactly
    ``Delta_f``:

    - ``kendall`` (columns ``x, y`` on ``[0, 15]``, integers): the other rows lie in ``[1, 14]``;
      ``r = (15, 15)`` in ``D`` is concordant with every partner (``+1``) and ``r = (15, 0)`` in
      ``D'`` discordant with every partner (``-1``): a change of ``2 = Delta_f`` per tuple.
    - ``gini`` (column ``x`` on ``[0, 2]``, 1 fractional bit, so ``Delta_f = 4`` units): ``r``'s
      partners are at 0; ``r = 0`` in ``D`` (``|x_r - x_j| = 0``) and ``r = 2`` in ``D'`` (``4``).

    :param kernel: ``kendall`` or ``gini``.
    :param epsilon: budget of the release; ``delta``: 0 (discrete Laplace) or binomial noise.
    :param parties: ``m``; ``threshold``: ``t`` with ``2 t < m``.
    :param rows: ``n``; ``tuples``: ``|E|`` (balanced, so ``delta_max = ceil(2 |E| / n)``).
    :param seed: public seed of the tuples and the synthetic rows.
    :param noise: ``parties`` (party shares) or ``mpc`` (sampled inside MPC), as ``UStatQuery.noise``.
    :raise ValueError: on an unknown kernel or invalid parameters.
    """
    check_parties(parties, threshold)
    n = check_positive_int(rows, "rows")
    generator = public_generator(seed + 1)
    if kernel == "kendall":
        query = UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("x", 0, 15, 0), ColumnSpec("y", 0, 15, 0)),
                           epsilon=epsilon, delta=delta, tuples=tuples, noise=noise)
        table = generator.integers(1, 15, size=(n, 2)).astype(np.float64)
    elif kernel == "gini":
        query = UStatQuery(kernel=get_kernel("gini", precision=1), specs=(ColumnSpec("x", 0, 2, 1),),
                           epsilon=epsilon, delta=delta, tuples=tuples, noise=noise)
        table = generator.integers(1, 5, size=(n, 1)) / 2.0
    else:
        raise ValueError(f"kernel must be 'kendall' or 'gini', got {kernel!r}")
    edges = sample_for(query, n, seed)
    changed = int(np.argmax(vertex_degrees(edges, n)))
    first, second = table.copy(), table.copy()
    if kernel == "kendall":
        first[changed], second[changed] = (15.0, 15.0), (15.0, 0.0)
    else:
        partners = np.unique(edges[np.any(edges == changed, axis=1)])
        first[partners], second[partners] = 0.0, 0.0
        first[changed], second[changed] = 0.0, 2.0
    first_rows, second_rows = _split_rows(first, parties), _split_rows(second, parties)
    return UStatNeighbours(query, first_rows, second_rows, changed,
                           _zero_noise_simulation(query, first_rows, threshold, seed),
                           _zero_noise_simulation(query, second_rows, threshold, seed), threshold)


def _ustat_case(name: str, pair: UStatNeighbours, mechanism: str) -> AuditCase:
    plan = pair.plans[0]
    honest = pair.parties - pair.threshold
    first, second = float(pair.first.sums[0]), float(pair.second.sums[0])
    return AuditCase(
        name=name, mechanism=mechanism, epsilon=pair.query.epsilon, delta=pair.query.delta,
        sample=_scalar_sampler(first, second, lambda count, rng: _honest_shares(pair.calibrate()[0], count, rng)),
        statistic=(f"the released integer sum minus the coalition's own {pair.threshold} shares: sum + "
                   f"{honest} honest shares"),
        neighbours=(f"replace row {pair.changed_row} (a row of largest degree "
                    f"{plan.sensitivity // pair.query.outputs[0].sensitivity} in E); the sum moves by "
                    f"{pair.change[0]} = the sensitivity {plan.sensitivity}"))


def _mpc_noise_case(name: str, pair: UStatNeighbours, mechanism: str) -> AuditCase:
    """The release with noise sampled inside MPC: the sum plus the whole (jointly sampled) noise."""
    plan = pair.plans[0]
    sampler = plan.sampler
    if sampler is None:
        raise ValueError(f"case {name}: the query's noise is not sampled inside MPC")
    first, second = float(pair.first.sums[0]), float(pair.second.sums[0])

    def noise(count: int, rng: np.random.Generator) -> np.ndarray:
        current = pair.calibrate()[0].sampler  # dp.umpc.protocol.plan_noise -> dp.secret_noise.plan_secret_laplace
        if current is None:
            raise RuntimeError(f"case {name}: the calibration no longer samples inside MPC")
        return simulate_secret_laplace(current, count, rng)

    return AuditCase(
        name=name, mechanism=mechanism, epsilon=plan.epsilon, delta=plan.delta,
        sample=_scalar_sampler(first, second, noise),
        statistic=("the released integer sum: sum + noise sampled inside MPC (no party, hence no coalition of "
                   f"{pair.threshold}, knows any part of it); J = {sampler.digits} digits, b = {sampler.bits} bits"),
        neighbours=(f"replace row {pair.changed_row} (a row of largest degree "
                    f"{plan.sensitivity // pair.query.outputs[0].sensitivity} in E); the sum moves by "
                    f"{pair.change[0]} = the sensitivity {plan.sensitivity}"))


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
        _mpc_noise_case("umpc-kendall-mpc-dlap-m3-t1", in_mpc,
                        "Pi_U-MPC Kendall tau on 48 balanced tuples, one discrete Laplace sampled inside MPC: "
                        "G1 - G2 with G = sum_j 2^j [U_j < T_j], J binary digits of b-bit secret uniform coins "
                        "(dp.secret_noise; Champion, shelat & Ullman 2019 coins; Sinh & Ramon, Protocol 3.1, "
                        "App. C.2.3 sensitivity), claimed (epsilon, delta_s) with delta_s = (1 + e^epsilon) tau"),
    ]


def _delegated_cases() -> list[AuditCase]:
    pair = ustat_neighbours("kendall", parties=5, threshold=2)
    delegates = choose_delegates(PUBLIC_SEED, pair.parties, 3)
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
            sample=_scalar_sampler(float(source.first.sums[0]), float(source.second.sums[0]), noise),
            statistic=f"the Kendall sum plus the {plan.honest_delegates} honest delegate draw(s)",
            neighbours=f"replace a row of largest degree; the sum moves by {source.change[0]} = the sensitivity"))
    return cases


# --------------------------------------------------------------------------------------------------
# ECDF tree (dp.ecdf.tree, dp.ecdf.secure_release)


def tree_weights(points: int, first: int, last: int) -> tuple[np.ndarray, float]:
    """The most sensitive linear statistic of the tree's released counts for the interval ``[a, b]``.

    Solves ``max_w sum_{i=a..b} w_i`` subject to ``|(A^T w)_node| <= 1`` for every node, with
    ``A = prefix_incidence(N)`` (eq. 2): the statistic ``w . c~`` then has shift equal to the value,
    and node-noise coefficients of magnitude at most 1.  By LP duality the value is the least
    ``l1`` norm of a real node vector ``zeta`` with ``A zeta = 1_[a, b]``, so ``value * epsilon/(L+1)``
    is a lower bound on the pure privacy loss of the pair whose counts differ on ``[a, b]``
    (reached in the tails of ``w . c~``), and the exact loss when an *integer* ``zeta`` of the same
    norm exists (a shift of the integer node noise; the tests check this for ``N = 8``).  Among the optimal
    ``w`` a second programme picks one with the least ``sum |A^T w|`` (fewest noisy nodes in the
    statistic, hence tails that approach the loss sooner).

    :param points: ``N``; ``first``, ``last``: 1-based grid indices ``a <= b``.
    :return: ``(w, value)`` with ``w`` rounded to integers when the optimum is integral.
    :raise ValueError: on an invalid interval or if a programme fails.
    """
    interval_nodes(first, last, points)  # validates the interval
    transposed = prefix_incidence(points).toarray().astype(np.float64).T
    nodes = transposed.shape[0]
    indicator = np.zeros(points)
    indicator[first - 1:last] = 1.0
    best = linprog(-indicator, A_ub=np.vstack([transposed, -transposed]), b_ub=np.ones(2 * nodes),
                   bounds=[(None, None)] * points, method="highs")
    if not best.success:
        raise ValueError(f"the weight programme failed for [{first}, {last}] on {points} points: {best.message}")
    value = -float(best.fun)
    # variables (w, s): minimise sum s subject to -s <= A^T w <= s, s <= 1, shift >= value
    identity = np.eye(nodes)
    sparse = linprog(np.concatenate([np.zeros(points), np.ones(nodes)]),
                     A_ub=np.vstack([np.hstack([transposed, -identity]), np.hstack([-transposed, -identity]),
                                     np.concatenate([-indicator, np.zeros(nodes)])[None, :]]),
                     b_ub=np.concatenate([np.zeros(2 * nodes), [-value + 1e-9]]),
                     bounds=[(None, None)] * points + [(0.0, 1.0)] * nodes, method="highs")
    weights = np.asarray(sparse.x[:points] if sparse.success else best.x, dtype=np.float64)
    rounded = np.rint(weights)
    if np.allclose(weights, rounded, atol=1e-7):
        weights = rounded
    return weights, float(indicator @ weights)


@dataclass(frozen=True)
class TreeNeighbours:
    """Neighbouring datasets for the ECDF tree and the audited linear statistic.

    :ivar grid: the grid ``tau_1 < ... < tau_N``.
    :ivar first_values: the rows of ``D``; ``second_values`` those of ``D'`` (one row differs).
    :ivar interval: 1-based ``(a, b)``: the counts differ by 1 exactly on ``[a, b]``.
    :ivar weights: ``w`` of the statistic ``w . c~`` (length ``N``).
    :ivar shift: ``w . (c(D) - c(D'))`` in count units (the LP value).
    """

    grid: np.ndarray
    first_values: np.ndarray
    second_values: np.ndarray
    interval: tuple[int, int]
    weights: np.ndarray
    shift: float

    @property
    def first_counts(self) -> np.ndarray:
        """``#{x <= tau_i}`` on ``D`` (:func:`dp.ecdf.tree.true_counts`)."""
        return true_counts(self.first_values, self.grid)

    @property
    def second_counts(self) -> np.ndarray:
        """``#{x <= tau_i}`` on ``D'``."""
        return true_counts(self.second_values, self.grid)


@lru_cache(maxsize=None)
def _worst_interval(points: int) -> tuple[int, int]:
    """The interval of largest LP value (first in ``(a, b)`` order on ties)."""
    best, chosen = -1.0, (1, 1)
    for first in range(1, points + 1):
        for last in range(first, points + 1):
            _, value = tree_weights(points, first, last)
            if value > best + 1e-9:
                best, chosen = value, (first, last)
    return chosen


def _gaussian_interval(points: int) -> tuple[np.ndarray, tuple[int, int]]:
    """For Gaussian node noise: the interval of largest Mahalanobis norm and its LDA weights."""
    incidence = prefix_incidence(points).toarray().astype(np.float64)
    gram_inverse = np.linalg.inv(incidence @ incidence.T)
    best, chosen = -1.0, (1, 1)
    for first in range(1, points + 1):
        for last in range(first, points + 1):
            indicator = np.zeros(points)
            indicator[first - 1:last] = 1.0
            value = float(indicator @ gram_inverse @ indicator)
            if value > best + 1e-9:
                best, chosen = value, (first, last)
    indicator = np.zeros(points)
    indicator[chosen[0] - 1:chosen[1]] = 1.0
    return gram_inverse @ indicator, chosen


def tree_neighbours(grid: npt.ArrayLike, *, rows: int = 20, gaussian: bool = False,
                    seed: int = PUBLIC_SEED) -> TreeNeighbours:
    """Two datasets whose ECDF counts differ by 1 on the worst interval ``[a, b]`` of the grid.

    The changed row sits just above ``tau_{a-1}`` in ``D`` and just above ``tau_b`` in ``D'``, so
    ``c(D) - c(D') = 1_[a, b]`` (Barczewski et al., App. A.1: replacing one row changes the counts on
    one interval).  Laplace nodes: the interval maximises the LP value of :func:`tree_weights`;
    Gaussian nodes: it maximises ``1_[a,b]^T (A A^T)^{-1} 1_[a,b]``, and ``w`` is the LDA direction.

    :param grid: strictly increasing grid of ``N >= 2`` points.
    :param rows: number of rows ``n``.
    :param gaussian: choose the interval and weights for Gaussian node noise.
    :param seed: public seed of the synthetic rows.
    """
    taus = np.asarray(grid, dtype=np.float64)
    points = int(taus.size)
    if points < 1:
        raise ValueError(f"grid must have at least 1 point, got {points}")
    n = check_positive_int(rows, "rows")
    if gaussian:
        weights, interval = _gaussian_interval(points)
    else:
        interval = _worst_interval(points)
        weights, _ = tree_weights(points, *interval)
    generator = public_generator(seed + 2)
    values = generator.uniform(taus[0] - 1.0, taus[-1] + 1.0, size=n)
    first, second = values.copy(), values.copy()
    a, b = interval
    below = taus[a - 2] if a >= 2 else taus[0] - 1.0
    above = taus[b] if b < points else taus[-1] + 1.0
    first[0] = (below + taus[a - 1]) / 2.0
    second[0] = (taus[b - 1] + above) / 2.0
    difference = true_counts(first, taus) - true_counts(second, taus)
    return TreeNeighbours(taus, first, second, interval, weights, float(weights @ difference))


def _tree_sampler(pair: TreeNeighbours, node_noise: Callable[[int, int, np.random.Generator], np.ndarray]) -> Sampler:
    """``w . c~`` on both datasets, ``c~ = noisy_counts(c, eta)`` the shipped release (eq. 2).

    ``node_noise(count, nodes, rng)`` returns a ``(count, nodes)`` array of total node noise (the
    noise a coalition cannot subtract), one row per release.
    """
    nodes = prefix_incidence(pair.grid.size).shape[1]

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (noisy_counts(pair.first_counts, node_noise(count, nodes, rng)) @ pair.weights,
                noisy_counts(pair.second_counts, node_noise(count, nodes, rng)) @ pair.weights)

    return sample


def _tree_party_noise(make_plan: Callable[[], TreeNoisePlan]) -> Callable[[int, int, np.random.Generator], np.ndarray]:
    """The honest parties' node draws: ``m - t`` calls of the shipped :meth:`TreeNoisePlan.draw_party`.

    The plan is rebuilt at every batch by ``make_plan`` (the shipped :func:`dp.ecdf.tree.plan_tree_noise`
    or :meth:`HosmerLemeshowQuery.tree_plan`), so the calibration audited is the code's as it is.
    """

    def noise(count: int, nodes: int, rng: np.random.Generator) -> np.ndarray:
        plan = make_plan()
        if plan.node_count != nodes:
            raise RuntimeError(f"the plan has {plan.node_count} nodes, the grid {nodes}")
        total = np.zeros((count, nodes), dtype=np.int64)
        for _ in range(plan.parties - plan.threshold):
            total += plan.draw_party(rng, runs=count)
        return total

    return noise


def _tree_case(name: str, make_plan: Callable[[], TreeNoisePlan], pair: TreeNeighbours, *, claimed: float,
               mechanism: str, control: bool = False) -> AuditCase:
    plan = make_plan()
    exact = pair.shift * -plan.log_alpha
    return AuditCase(
        name=name, mechanism=mechanism, epsilon=claimed, delta=0.0,
        sample=_tree_sampler(pair, _tree_party_noise(make_plan)),
        statistic=(f"w . c~ over the {plan.points} released counts (the coalition's own node draws subtracted), "
                   f"w = {pair.weights.astype(int).tolist()} from the LP of dp.audit.central_cases.tree_weights: node "
                   f"coefficients in [-1, 1], shift {pair.shift:g}"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)}; exact loss "
                    f"{pair.shift:g} nodes x {-plan.log_alpha:.4g} = {exact:.4g}"),
        control=control)


def tree_log_likelihood(noise: npt.ArrayLike, log_alpha: float, *, window: int) -> np.ndarray:
    """``log sum_{eta : A eta = z} prod_v alpha^|eta_v|``: the claimed log-likelihood of count noise ``z``.

    The released counts are ``c + A eta`` (eq. 2, ``A = prefix_incidence(N)``); under the claimed node
    noise, i.i.d. ``DLap(alpha)``, the likelihood of a count-noise vector ``z = c~ - c`` is the sum over
    the node vectors that produce it.  It is computed exactly, up to the window, by passing messages
    up the tree: a leaf's noise is fixed by ``z_i`` and the sum ``s`` of its ancestors' noises, so the
    leaf message is ``alpha^|z_i - s|``; a node at level ``l >= 1`` sums its own noise ``e`` out of the
    product of its children's messages at ``s + e``; the root's message at ``s = 0`` is the
    likelihood.  Ancestor sums ``s`` are restricted to ``[-window, window]`` (a deterministic
    truncation: the result is still a fixed function of the release).  The normalising constant
    ``((1 - alpha)/(1 + alpha))^{|I[L]|}`` is left out (it cancels in a likelihood ratio).

    :param noise: ``(runs, N)`` integer count noise ``z``.
    :param log_alpha: the claimed ``log alpha < 0`` of every node.
    :param window: bound on the ancestor sums, ``>= 1``.
    :return: ``(runs,)`` float64 log-likelihoods.
    :raise ValueError: on a non-negative ``log_alpha``, a bad window or a non-2-D ``noise``.
    """
    z = np.asarray(noise, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] < 1:
        raise ValueError(f"noise must have shape (runs, N) with N >= 1, got {z.shape}")
    if not log_alpha < 0:
        raise ValueError(f"log_alpha must be negative, got {log_alpha}")
    width = check_positive_int(window, "window")
    rate = -float(log_alpha)
    if z.shape[1] == 1:  # L = 0: the count is the single node
        return -rate * np.abs(z[:, 0])
    sums = np.arange(-width, width + 1, dtype=np.float64)
    kernel = np.exp(-rate * np.abs(sums[:, None] - sums[None, :]))  # alpha^|e|, e = s' - s
    # (log scale per run, message normalised to a maximum of 1), one per node of the current level
    messages: list[tuple[np.ndarray, np.ndarray]] = []
    for i in range(z.shape[1]):
        log_message = -rate * np.abs(z[:, i:i + 1] - sums[None, :])
        top = log_message.max(axis=1, keepdims=True)
        messages.append((top[:, 0], np.exp(log_message - top)))
    while True:
        parents: list[tuple[np.ndarray, np.ndarray]] = []
        for j in range(0, len(messages), 2):  # children (2j-1, l-1), (2j, l-1) of node (j, l)
            scale = messages[j][0].copy()
            product = messages[j][1].copy()
            for extra_scale, extra in messages[j + 1:j + 2]:
                scale += extra_scale
                product *= extra
            if len(messages) <= 2:  # the root: its ancestors' sum is 0
                return scale + np.log(product @ kernel[:, width])
            summed = product @ kernel
            top = summed.max(axis=1)
            parents.append((scale + np.log(top), summed / top[:, None]))
        messages = parents


def tree_privacy_loss_statistic(released: npt.ArrayLike, first_counts: npt.ArrayLike, second_counts: npt.ArrayLike,
                                log_alpha: float, *, window: int) -> np.ndarray:
    """The claimed log-likelihood ratio of ``D`` against ``D'`` of the whole released count vector.

    ``T = log f(c~ - c(D)) - log f(c~ - c(D'))`` with ``f`` the claimed likelihood of
    :func:`tree_log_likelihood`: the privacy-loss random variable of the release under the claimed
    calibration, a fixed function of the released vector (post-processing), so a violation on it is a
    violation of the mechanism.  Unlike the linear statistic of :func:`tree_weights` (whose noise is a
    sum of 8 nodes on ``N = 8`` and approaches the loss only far in its tails) it uses every count.

    :param released: ``(runs, N)`` released counts; ``first_counts``, ``second_counts``: ``c(D)``, ``c(D')``.
    :return: ``(runs,)`` float64, rounded to 9 decimals.
    """
    counts = np.asarray(released, dtype=np.float64)
    return np.round(tree_log_likelihood(counts - np.asarray(first_counts, dtype=np.float64), log_alpha,
                                        window=window)
                    - tree_log_likelihood(counts - np.asarray(second_counts, dtype=np.float64), log_alpha,
                                          window=window), 9)


def tree_vector_case(*, epsilon: float = TREE_VECTOR_EPSILON, points: int = 8, parties: int = 3,
                     threshold: int = 1) -> AuditCase:
    """The ECDF tree audited on its whole released vector through the claimed privacy-loss statistic.

    The release is the shipped one: every batch rebuilds the plan with :func:`dp.ecdf.tree.plan_tree_noise`,
    draws the ``m - t`` honest parties' node vectors with :meth:`dp.ecdf.tree.TreeNoisePlan.draw_party` and
    forms :func:`dp.ecdf.tree.noisy_counts`; the neighbours are those of :func:`tree_neighbours` (counts
    differing by 1 on the worst interval, exact loss ``L epsilon/(L + 1)``).  The statistic is
    :func:`tree_privacy_loss_statistic` with the claimed node ``log alpha = -epsilon/(L + 1)``, fixed
    when the case is built, and a window of ``ceil(12/rate)`` (ancestor sums beyond it weigh less than
    ``e^-12`` of the centre under the claimed noise).

    Threat model: passive coalition of ``t < m/2`` parties, which subtracts its own node draws.
    """
    grid = uniform_grid(1.0, float(points), 1.0)
    pair = tree_neighbours(grid)
    claimed = plan_tree_noise(epsilon=epsilon, points=points, parties=parties, threshold=threshold)
    log_alpha = float(claimed.log_alpha)
    window = int(math.ceil(12.0 / -log_alpha))
    noise = _tree_party_noise(lambda: plan_tree_noise(epsilon=epsilon, points=points, parties=parties,
                                                      threshold=threshold))
    nodes = claimed.node_count
    first_counts, second_counts = pair.first_counts, pair.second_counts

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        first, second = (tree_privacy_loss_statistic(noisy_counts(counts, noise(count, nodes, rng)), first_counts,
                                                     second_counts, log_alpha, window=window)
                         for counts in (first_counts, second_counts))
        return first, second

    return AuditCase(
        name=f"ecdf-tree-vector-m{parties}-t{threshold}", epsilon=claimed.epsilon, delta=0.0, sample=sample,
        mechanism=(f"ECDF tree on N = {points} points (L = {claimed.depth}), m = {parties}, t = {threshold}, the whole "
                   "released count vector (Barczewski, Mawass & Ramon §3.1 eq. 2, Theorem 1, §4.1): node noise the "
                   "sum of the honest parties' Polya(1/(m-t)) differences (dp.ecdf.tree.TreeNoisePlan)"),
        statistic=(f"the claimed log-likelihood ratio of all {points} released counts (node DLap with log alpha = "
                   f"{log_alpha:.4g}, tree message passing, window {window})"),
        neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(pair.interval)}; exact loss "
                    f"{pair.shift:g} nodes x {-log_alpha:.4g} = {pair.shift * -log_alpha:.4g}"))


def _ecdf_cases() -> list[AuditCase]:
    grid = uniform_grid(1.0, 8.0, 1.0)
    pair = tree_neighbours(grid)
    plan = plan_tree_noise(epsilon=TREE_EPSILON, points=grid.size, parties=3, threshold=1)
    one_point = tree_neighbours(uniform_grid(1.0, 1.0, 1.0))
    gaussian_grid = uniform_grid(1.0, 4.0, 1.0)
    gaussian_pair = tree_neighbours(gaussian_grid, gaussian=True)
    rho = zcdp_budget(GAUSSIAN_EPSILON, GAUSSIAN_DELTA)

    def gaussian_noise(count: int, nodes: int, rng: np.random.Generator) -> np.ndarray:
        # the shipped draw, one release at a time (its exact sampler is a Python loop per node anyway)
        return np.stack([draw_gaussian_tree_noise(rho=rho, points=gaussian_grid.size, replace_one=True, rng=rng)
                         for _ in range(count)]).astype(np.int64)

    return [
        _tree_case("ecdf-tree-dlap-m3-t1",
                   lambda: plan_tree_noise(epsilon=TREE_EPSILON, points=grid.size, parties=3, threshold=1), pair,
                   claimed=plan.epsilon,
                   mechanism=("ECDF tree mechanism across m = 3 parties, t = 1 (Barczewski, Mawass & Ramon §3.1 "
                              "eq. 2, Theorem 1, §4.1 distributed release): node noise DLap(exp(-epsilon/(L+1))) as "
                              "the sum of Polya(1/(m-t)) differences per party (dp.ecdf.tree.TreeNoisePlan)")),
        tree_vector_case(),
        _tree_case("ecdf-tree-one-point-m3-t1",
                   lambda: plan_tree_noise(epsilon=CASE_EPSILON, points=1, parties=3, threshold=1), one_point,
                   claimed=CASE_EPSILON,
                   mechanism=("ECDF tree (Barczewski, Mawass & Ramon §3.1 eq. 2, Theorem 1) on a one-point grid "
                              "(L = 0: the released count is count + one node), "
                              "m = 3, t = 1: the tree calibration where its claim is tight, so the coalition shape "
                              "1/(m-t) of TreeNoisePlan is audited exactly (on N >= 2 points the claim exceeds the "
                              "loss by (L+1)/L and a shape of 1/m stays below it)")),
        AuditCase(
            name="ecdf-tree-gaussian",
            mechanism=("ECDF tree with discrete Gaussian nodes N_Z(0, (L+1)/(2 rho)) (Barczewski et al. Theorem 3, "
                       "replace-one form, dp.ecdf.tree.draw_gaussian_tree_noise), rho-zCDP audited at "
                       "epsilon = rho + 2 sqrt(rho log(1/delta)) (Bun & Steinke 2016, Prop. 1.3)"),
            epsilon=GAUSSIAN_EPSILON, delta=GAUSSIAN_DELTA,
            sample=_tree_sampler(gaussian_pair, gaussian_noise),
            statistic="w . c~ with the likelihood-ratio direction w = (A A^T)^{-1} 1_[a,b] (a sufficient statistic)",
            neighbours=(f"one row moves so that the counts differ by 1 on grid indices {list(gaussian_pair.interval)} "
                        f"of {gaussian_grid.size} (largest Mahalanobis norm)")),
    ]


# --------------------------------------------------------------------------------------------------
# Hosmer-Lemeshow (dp.ecdf.hosmer_lemeshow)


@dataclass(frozen=True)
class HosmerLemeshowNeighbours:
    """Neighbouring datasets for the Hosmer-Lemeshow group statistics, with fixed group boundaries.

    :ivar query: the HL query (budget, ``Q``, precision, accounting).
    :ivar bounds: the ``Q - 1`` interior boundaries in fixed point (public, as released by the ECDF).
    :ivar first_fixed: fixed-point probabilities of ``D``; ``first_labels`` its labels; likewise ``second_*``.
    :ivar parties: ``m``; ``threshold``: ``t``.
    """

    query: HosmerLemeshowQuery
    bounds: np.ndarray
    first_fixed: np.ndarray
    first_labels: np.ndarray
    second_fixed: np.ndarray
    second_labels: np.ndarray
    parties: int
    threshold: int

    def statistics(self, second: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """``(E, O)`` of lines 8-9 (:func:`dp.ecdf.hosmer_lemeshow.group_statistics`) on ``D`` or ``D'``."""
        fixed, labels = (self.second_fixed, self.second_labels) if second else (self.first_fixed, self.first_labels)
        return group_statistics(fixed, labels, self.bounds, scale=self.query.scale)

    @property
    def log_alpha(self) -> np.ndarray:
        """``log alpha`` of every cell, shape ``(2, 2, Q)``: ``[0]`` the E cells, ``[1]`` the O cells."""
        q = self.query
        return np.stack([np.full((2, q.groups), q.expected_log_alpha), np.full((2, q.groups), q.observed_log_alpha)])

    @property
    def change(self) -> np.ndarray:
        """Change of every cell from ``D`` to ``D'``, shape ``(2, 2, Q)`` as :attr:`log_alpha`."""
        return np.stack(self.statistics(True)) - np.stack(self.statistics(False))


def hosmer_lemeshow_neighbours(*, accounting: str, epsilon: float, parties: int = 3, threshold: int = 1,
                               rows: int = 30, seed: int = PUBLIC_SEED) -> HosmerLemeshowNeighbours:
    """Neighbours whose ``4 Q`` statistics move by the joint sensitivity 4 (Barczewski et al., App. A.2).

    ``Q = 3`` groups, probabilities with 3 fractional bits, ``N = 8`` grid points; boundaries fixed
    at ``3/8`` and ``5/8`` (the statistics are released given the boundaries, adaptive composition
    with the ECDF part).  The changed row is ``(p, y) = (0, 0)`` in ``D`` (group 1) and ``(1, 1)``
    in ``D'`` (group 3): ``E_{0,1} -= 2^b``, ``E_{1,3} += 2^b``, ``O_{0,1} -= 1``, ``O_{1,3} += 1``,
    weighted ``l1`` norm 4.

    :param accounting: ``paper`` or ``joint`` (:data:`dp.ecdf.hosmer_lemeshow.ACCOUNTING_MODES`).
    :param epsilon: total budget of Algorithm 2.
    :param parties: ``m``; ``threshold``: ``t`` with ``2 t < m``.
    :param rows: number of rows ``n``; ``seed``: public seed of the synthetic rows.
    :raise ValueError: on invalid parameters.
    """
    check_parties(parties, threshold)
    query = HosmerLemeshowQuery(epsilon, groups=3, grid_points=8, precision=3, accounting=accounting)
    generator = public_generator(seed + 3)
    n = check_positive_int(rows, "rows")
    probabilities = generator.integers(0, query.scale + 1, size=n) / query.scale
    labels = (generator.random(n) < probabilities).astype(np.int64)
    first_p, second_p = probabilities.copy(), probabilities.copy()
    first_y, second_y = labels.copy(), labels.copy()
    first_p[0], first_y[0], second_p[0], second_y[0] = 0.0, 0, 1.0, 1
    spec = query.spec
    bounds = np.array([3, 5], dtype=np.int64)
    return HosmerLemeshowNeighbours(query, bounds, spec.encode(first_p), first_y, spec.encode(second_p), second_y,
                                    parties, threshold)


def _hl_sampler(pair: HosmerLemeshowNeighbours) -> Sampler:
    """The claimed privacy-loss statistic over the changed cells of the released ``E``/``O`` arrays.

    Each changed cell gets the ``m - t`` honest rows of the shipped per-party draws
    (:func:`dp.ecdf.hosmer_lemeshow.party_statistic_draws`, calibrated at every batch by
    ``query.expected_log_alpha`` / ``observed_log_alpha``); cells the row does not change are
    independent of the change and are not drawn.  The statistic is :func:`privacy_loss_statistic`
    with the claimed rates, fixed when the case is built.
    """
    change = pair.change
    groups = pair.query.groups
    changed = np.flatnonzero(change.ravel())
    claimed_logs = pair.log_alpha.ravel()[changed]
    first_cells = np.stack(pair.statistics(False)).ravel()[changed]
    second_cells = np.stack(pair.statistics(True)).ravel()[changed]
    expected_cell = changed < 2 * groups  # [0] of the (2, 2, Q) layout: the E cells

    def released(cells: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        query = pair.query
        out = np.empty((count, changed.size), dtype=np.int64)
        for column, expected in enumerate(expected_cell):
            log = query.expected_log_alpha if expected else query.observed_log_alpha
            draws = party_statistic_draws(log, count, pair.parties, pair.threshold, rng)
            out[:, column] = cells[column] + draws[pair.threshold:].sum(axis=0)  # the honest parties' rows
        return privacy_loss_statistic(out, first_cells, second_cells, claimed_logs)

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return released(first_cells, count, rng), released(second_cells, count, rng)

    return sample


def _hl_cases() -> list[AuditCase]:
    cases = []
    for accounting, epsilon in HL_EPSILONS.items():
        pair = hosmer_lemeshow_neighbours(accounting=accounting, epsilon=epsilon)
        q = pair.query
        cases.append(AuditCase(
            name=f"hl-statistics-{accounting}-m3-t1",
            mechanism=(f"Hosmer-Lemeshow group statistics E_(s,q), O_(s,q) with distributed discrete Laplace, "
                       f"accounting '{accounting}' (Barczewski, Mawass & Ramon, Algorithm 2 lines 8-9, Theorem 2, "
                       f"App. A.2); epsilon = {epsilon:g}, eps' = epsilon/(L+9) = {q.budget.epsilon_prime:.4g}; "
                       f"claimed: the proven loss 4 x rate = {q.statistics_loss_bound:.4g} of the statistics "
                       f"(spent: 8 eps' = {q.budget.statistics_epsilon:.4g})"),
            epsilon=q.statistics_loss_bound, delta=0.0, sample=_hl_sampler(pair),
            statistic=("claimed privacy-loss statistic sum_j rate_j (|x_j - c'_j| - |x_j - c_j|) over the changed "
                       "cells (coalition shares subtracted)"),
            neighbours="one row (p, y) = (0, 0) in group 1 replaced by (1, 1) in group 3 (boundaries 3/8, 5/8 fixed)"))
    tree_query = HosmerLemeshowQuery(3.0 * TREE_EPSILON, groups=3, grid_points=8, precision=3)
    tree_pair = tree_neighbours(tree_query.grid)
    cases.append(_tree_case(
        "hl-ecdf-m3-t1", lambda: tree_query.tree_plan(parties=3, threshold=1), tree_pair,
        claimed=tree_query.budget.ecdf_epsilon,
        mechanism=("Hosmer-Lemeshow line 5: the ECDF of the predicted probabilities released with the tree at "
                   "(L+1) eps' (Barczewski, Mawass & Ramon, Algorithm 2, Theorem 2; HosmerLemeshowQuery.tree_plan)")))
    return cases


# --------------------------------------------------------------------------------------------------
# FedAUC (dp.fedauc.mechanisms)

_FEDAUC_LAPLACE = ("global_laplace", "local_laplace", "adaptive_laplace")
_FEDAUC_GAUSSIAN = ("global_gaussian", "local_gaussian", "adaptive_gaussian")


@dataclass(frozen=True)
class FedAucNeighbours:
    """Two labelings differing in one label (label DP), on public scores and a public client layout.

    :ivar scores: the ``M`` public scores (distinct).
    :ivar client_of: each sample's client (public).
    :ivar first_labels: labels of ``D``; ``second_labels``: of ``D'`` (one label flipped).
    :ivar flipped: the sample whose label differs; ``client``: its client.
    """

    scores: np.ndarray
    client_of: np.ndarray
    first_labels: np.ndarray
    second_labels: np.ndarray
    flipped: int
    client: int


def _fedauc_components(scores: np.ndarray, labels: np.ndarray, client_of: np.ndarray, method: str,
                       sum_fraction: float) -> dict[str, ClientRelease]:
    """The integer reports of every client (Sun et al. Algorithm 4 and §5.3), by :func:`dp.fedauc.mechanisms.client_releases`."""
    stats = local_statistics(average_ranks(scores), labels, client_of)
    return client_releases(stats, method=method, samples=scores.size, sum_fraction=sum_fraction)


def _fedauc_parameters(components: dict[str, ClientRelease], method: str, epsilon: float,
                       delta: float) -> dict[str, np.ndarray]:
    """Per report and client: ``log alpha`` (Laplace) or ``sigma^2`` (Gaussian, budget
    ``rho_z = zcdp_budget(epsilon, delta)``), by :func:`dp.fedauc.mechanisms.noise_parameter`."""
    gaussian = method.endswith("_gaussian")
    budget = zcdp_budget(epsilon, delta) if gaussian else epsilon
    for name, c in components.items():
        if np.any(c.sensitivity <= 0):
            raise ValueError(f"every client's {name} report needs a positive sensitivity in the audit cases")
    return {name: noise_parameter(c, budget, gaussian) for name, c in components.items()}


def fedauc_release(scores: npt.ArrayLike, labels: npt.ArrayLike, client_of: npt.ArrayLike, *, method: str,
                   epsilon: float, delta: float = 0.0, sum_fraction: float = 0.5, runs: int,
                   rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every client's noisy integer reports of FedAUC_Lap / Gaussian, ``runs`` times.

    Sun et al. Algorithm 4 (global / local sensitivity, App. N) and §5.3 (adaptive split), with the
    integer reports of :mod:`dp.fedauc.mechanisms`: ``2 localSum_k`` (sensitivity ``2 (M - 1)`` or twice the
    client's largest rank) and ``localP_k`` (sensitivity 1) with ``sum_fraction`` and
    ``1 - sum_fraction`` of the budget, or ``localP_k`` and ``D_k = n_k <2 v', y>`` with ``beta_k``
    and ``1 - beta_k``.  Noise: the shipped :func:`dp.fedauc.mechanisms.noisy_client_reports` (budget ``epsilon``,
    or ``zcdp_budget(epsilon, delta)`` for Gaussian), which :func:`dp.fedauc.mechanisms.simulate_fedauc` calls
    too, so that the same generator gives the same reports (a test holds the estimates equal).

    :param scores: public scores; ``labels``: 0/1; ``client_of``: public client of each sample.
    :param method: one of ``global_laplace``, ``local_laplace``, ``adaptive_laplace``,
        ``global_gaussian``, ``local_gaussian``, ``adaptive_gaussian``.
    :param epsilon: budget per label; ``delta``: in ``(0, 1)`` for Gaussian, 0 for Laplace.
    :param sum_fraction: the paper's alpha (global/local only), in ``(0, 1)``.
    :param runs: number of independent releases; ``rng``: the noise generator.
    :return: ``{report name: int64 array (runs, K)}``.
    :raise ValueError: on an invalid parameter.
    """
    if method not in _FEDAUC_LAPLACE + _FEDAUC_GAUSSIAN:
        raise ValueError(f"method must be one of {', '.join(_FEDAUC_LAPLACE + _FEDAUC_GAUSSIAN)}, got {method!r}")
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta)
    gaussian = method.endswith("_gaussian")
    if gaussian == (dlt == 0.0):
        raise ValueError(f"delta must be in (0, 1) for Gaussian methods and 0 for Laplace ones, got {delta}")
    if not 0.0 < sum_fraction < 1.0:
        raise ValueError(f"sum_fraction must lie in (0, 1), got {sum_fraction}")
    r = check_positive_int(runs, "runs")
    values = np.asarray(scores, dtype=np.float64)
    components = _fedauc_components(values, np.asarray(labels, dtype=np.int64), np.asarray(client_of, dtype=np.int64),
                                    method, sum_fraction)
    _fedauc_parameters(components, method, eps, dlt)  # validates the sensitivities
    return noisy_client_reports(components, budget=zcdp_budget(eps, dlt) if gaussian else eps, gaussian=gaussian,
                                runs=r, rng=rng)


def fedauc_estimates(scores: npt.ArrayLike, client_of: npt.ArrayLike, released: dict[str, np.ndarray]) -> np.ndarray:
    """The server's AUC (eq. 1, :func:`dp.fedauc.mechanisms.server_auc`) from :func:`fedauc_release` reports.

    Adaptive reports are turned back into ``localSum'_k = (T_k localP'_k + D'_k) / (2 n_k)`` (§5.3).

    :param scores: the public scores; ``client_of``: each sample's client.
    :param released: the reports of :func:`fedauc_release`.
    :return: one AUC estimate per run (NaN where the noisy counts leave no pair).
    """
    values = np.asarray(scores, dtype=np.float64)
    owner = np.asarray(client_of, dtype=np.int64)
    if "orthogonal" in released:
        twice = np.rint(2.0 * average_ranks(values)).astype(np.int64)
        sizes = np.bincount(owner).astype(np.float64)
        twice_total = np.bincount(owner, weights=twice.astype(np.float64))
        local_p = released["count"]
        local_sum = (twice_total[None, :] * local_p + released["orthogonal"]) / (2.0 * sizes[None, :])
        return server_auc(local_sum.sum(axis=1), local_p.sum(axis=1), values.size)
    return server_auc(released["sum"].sum(axis=1) / 2.0, released["count"].sum(axis=1), values.size)


def fedauc_neighbours(method: str, *, samples: int = 12, clients: int = 2, seed: int = PUBLIC_SEED) -> FedAucNeighbours:
    """Labelings differing in the label whose flip moves its client's reports by their sensitivity.

    Scores are distinct (a public permutation), the layout is ``non_iid`` (:func:`dp.fedauc.mechanisms.client_layout`,
    contiguous blocks of sorted scores), the labels alternate with a public random start.  The flipped
    sample: the top-ranked one (global sensitivity ``2 (M - 1)``), the top-ranked one of client 0 (local
    sensitivity, twice its largest rank), or client 0's sample maximising ``|n_k 2 r_i - T_k|``
    (adaptive, the sensitivity of ``D_k``).  It is 0 in ``D`` and 1 in ``D'``.

    :param method: a FedAUC Laplace or Gaussian method, or ``rr`` (the top-ranked sample).
    :param samples: ``M``; ``clients``: ``K``; ``seed``: public seed of scores, layout and labels.
    :raise ValueError: on an unknown method.
    """
    m = check_positive_int(samples, "samples")
    generator = public_generator(seed + 4)
    scores = generator.permutation(m).astype(np.float64) / m
    client_of = client_layout(scores, clients=clients, layout="non_iid", rng=generator)
    twice = np.rint(2.0 * average_ranks(scores)).astype(np.int64)
    family = method.split("_")[0]
    if family in ("global", "rr"):
        flipped = int(np.argmax(twice))
    elif family == "local":
        members = np.flatnonzero(client_of == 0)
        flipped = int(members[np.argmax(twice[members])])
    elif family == "adaptive":
        members = np.flatnonzero(client_of == 0)
        total = int(twice[members].sum())
        flipped = int(members[np.argmax(np.abs(members.size * twice[members] - total))])
    else:
        raise ValueError(f"unknown FedAUC method {method!r}")
    labels = (np.arange(m) + int(generator.integers(0, 2))) % 2
    first, second = labels.copy(), labels.copy()
    first[flipped], second[flipped] = 0, 1
    return FedAucNeighbours(scores, client_of, first, second, flipped, int(client_of[flipped]))


def _fedauc_case(method: str, *, epsilon: float, delta: float = 0.0) -> AuditCase:
    pair = fedauc_neighbours(method)
    gaussian = method.endswith("_gaussian")
    first = _fedauc_components(pair.scores, pair.first_labels, pair.client_of, method, 0.5)
    second = _fedauc_components(pair.scores, pair.second_labels, pair.client_of, method, 0.5)
    parameters = _fedauc_parameters(first, method, epsilon, delta)
    names = list(first)
    k = pair.client
    shifts = np.array([second[n].value[k] - first[n].value[k] for n in names], dtype=np.float64)
    if any(not np.array_equal(first[n].sensitivity, second[n].sensitivity) for n in names):
        raise RuntimeError("the calibration must not depend on the labels")
    claimed = np.array([parameters[n][k] for n in names])
    first_values = np.array([first[n].value[k] for n in names], dtype=np.float64)
    weights = shifts / claimed if gaussian else laplace_weights(claimed, shifts)  # shown in the description

    def statistic(labels: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        released = fedauc_release(pair.scores, labels, pair.client_of, method=method, epsilon=epsilon, delta=delta,
                                  runs=count, rng=rng)
        reports = np.stack([released[n][:, k] for n in names], axis=1)
        if gaussian:
            return reports @ weights  # likelihood-ratio direction (a sufficient statistic)
        return privacy_loss_statistic(reports, first_values, first_values + shifts, claimed)

    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return statistic(pair.first_labels, count, rng), statistic(pair.second_labels, count, rng)

    family = method.split("_")[0]
    reference = {"global": "Algorithm 4 with GlobalLaplace sensitivity 2(M-1) (App. N)",
                 "local": "Algorithm 4 with LocalLaplace sensitivity, the client's largest rank (§5.2)",
                 "adaptive": "the adaptive orthogonal split localP' / <v', y>' of §5.3"}[family]
    noise = ("exact discrete Gaussian (Canonne-Kamath-Steinke), rho_z = zcdp_budget(epsilon, delta) "
             "(Bun & Steinke Prop. 1.3)" if gaussian else "discrete Laplace on the integer reports")
    return AuditCase(
        name=f"fedauc-{method.replace('_', '-')}", epsilon=epsilon, delta=delta, sample=sample,
        mechanism=f"FedAUC label DP (Sun et al. §5): {reference}, {noise}, on 2 localSum and localP",
        statistic=(f"the flipped sample's client's reports {names}: " + (
            f"linear, weights {np.round(weights, 5).tolist()}" if gaussian else
            f"claimed privacy-loss statistic, rates {np.round(-claimed, 5).tolist()}")),
        neighbours=(f"label of sample {pair.flipped} (client {k}) flipped 0 -> 1; report shifts "
                    f"{shifts.astype(int).tolist()}"))


def _fedauc_cases() -> list[AuditCase]:
    return [_fedauc_case("global_laplace", epsilon=CASE_EPSILON), _fedauc_case("local_laplace", epsilon=CASE_EPSILON),
            _fedauc_case("adaptive_laplace", epsilon=CASE_EPSILON),
            _fedauc_case("global_gaussian", epsilon=GAUSSIAN_EPSILON, delta=GAUSSIAN_DELTA)]


# --------------------------------------------------------------------------------------------------
# secure rank AUC (dp.rank_auc)


@dataclass(frozen=True)
class RankAucNeighbours:
    """Neighbouring ``(score, label)`` tables for the secure rank AUC and their exact ``(2U, P)``.

    :ivar query: the query (score domain, budget).
    :ivar first_rows: the rows of ``D``; ``second_rows``: of ``D'``.
    :ivar first_sums: ``(2U, P)`` on ``D`` (:func:`dp.rank_auc.exact_sums`); ``second_sums``: on ``D'``.
    """

    query: RankAucQuery
    first_rows: np.ndarray
    second_rows: np.ndarray
    first_sums: tuple[int, int]
    second_sums: tuple[int, int]


def rank_auc_neighbours(*, epsilon: float = CASE_EPSILON, rows: int = 10, seed: int = PUBLIC_SEED) -> RankAucNeighbours:
    """Tables on which ``2U`` moves by ``2 (n - 1)`` and ``P`` by 1, both sensitivities at once.

    The other ``n - 1`` rows are negatives with scores in ``[0, 0.875]``; the changed row is a
    negative of score 1 in ``D`` (no positive: ``2U = P = 0``) and a positive of score 1 in ``D'``
    (above every negative: ``2U = 2 (n - 1)``, ``P = 1``).  A change of ``2U`` by ``2 (n - 1)``
    requires the changed row to be comparable with all others, hence the one-class background.

    :param epsilon: budget of the release (half on each sum); ``rows``: ``n``; ``seed``: public seed.
    """
    query = RankAucQuery(ColumnSpec("score", 0.0, 1.0, 3), epsilon)
    generator = public_generator(seed + 5)
    n = check_positive_int(rows, "rows")
    table = np.column_stack([generator.integers(0, 8, size=n) / 8.0, np.zeros(n)])
    first, second = table.copy(), table.copy()
    first[0], second[0] = (1.0, 0.0), (1.0, 1.0)
    return RankAucNeighbours(query, first, second, exact_sums(query.encode(first)), exact_sums(query.encode(second)))


def _rank_auc_case() -> AuditCase:
    pair = rank_auc_neighbours()
    parties, threshold = 3, 1
    plans = plans_for_rows(pair.query, len(pair.first_rows), parties, threshold)
    shifts = np.subtract(pair.second_sums, pair.first_sums)
    claimed = np.array([math.log(p.alpha) for p in plans])

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
        sample=lambda count, rng: (released(pair.first_sums, count, rng), released(pair.second_sums, count, rng)),
        statistic=(f"claimed privacy-loss statistic of (2U~, P~) with the coalition's shares subtracted, rates "
                   f"{(-claimed).tolist()}"),
        neighbours=f"replace a top-score negative by a top-score positive: (2U, P) moves by {shifts.tolist()}")


# --------------------------------------------------------------------------------------------------
# subsampled pairs (dp.bell.subsampled_pairs)


@dataclass(frozen=True)
class PairNeighbours:
    """Neighbouring tables for per-pair releases, the pairs and the noiseless pair values.

    :ivar query: the subsampled-pairs query (Kendall).
    :ivar first_rows: rows of ``D``; ``second_rows``: of ``D'``; ``changed_row``: the row that differs.
    :ivar pairs: the public pairs (``P`` permutations, or all pairs for the baseline).
    :ivar first_values: kernel value of every pair on ``D``; ``second_values``: on ``D'``.
    """

    query: SubsampledPairsQuery
    first_rows: np.ndarray
    second_rows: np.ndarray
    changed_row: int
    pairs: np.ndarray
    first_values: np.ndarray
    second_values: np.ndarray

    @property
    def touched(self) -> np.ndarray:
        """Positions of the pairs that contain the changed row."""
        return np.flatnonzero(np.any(self.pairs == self.changed_row, axis=1))


def pair_neighbours(*, permutations: int = 3, rows: int = 12, all_pairs: bool = False, epsilon: float = CASE_EPSILON,
                    seed: int = PUBLIC_SEED) -> PairNeighbours:
    """Kendall tables on which every pair containing the changed row moves by ``Delta_f = 2``.

    As :func:`ustat_neighbours` (``kendall``): other rows in ``[1, 14]``, the changed row ``(15, 15)``
    in ``D`` and ``(15, 0)`` in ``D'``.  Pairs: :func:`dp.bell.subsampled_pairs.pairs_for` (``P``
    permutations of an even number of rows: every row in exactly ``P`` pairs), or all ``C(n, 2)``
    pairs for the baseline.

    :param permutations: ``P``; ``rows``: ``n``; ``all_pairs``: the all-pairs baseline's pairs.
    :param epsilon: budget of the release; ``seed``: public seed of the rows and permutations.
    """
    query = SubsampledPairsQuery(kernel=get_kernel("kendall"),
                                 specs=(ColumnSpec("x", 0, 15, 0), ColumnSpec("y", 0, 15, 0)),
                                 epsilon=epsilon, permutations=permutations)
    n = check_positive_int(rows, "rows")
    generator = public_generator(seed + 6)
    table = generator.integers(1, 15, size=(n, 2)).astype(np.float64)
    first, second = table.copy(), table.copy()
    first[0], second[0] = (15.0, 15.0), (15.0, 0.0)
    if all_pairs:
        left, right = np.triu_indices(n, 1)
        pairs = np.stack([left, right], axis=1).astype(np.int64)
    else:
        pairs = pairs_for(query, n, seed)

    def values(rows_: np.ndarray) -> np.ndarray:
        fixed = query.prepare(rows_).integers
        return np.asarray(query.kernel.plaintext([fixed[pairs[:, 0]], fixed[pairs[:, 1]]])[0], dtype=np.int64)

    return PairNeighbours(query, first, second, 0, pairs, values(first), values(second))


def _pair_case(name: str, pair: PairNeighbours, plan: NoisePlan, *, delta: float, mechanism: str) -> AuditCase:
    touched = pair.touched
    honest = plan.parties - plan.threshold
    log_alpha = -plan.epsilon / plan.sensitivity  # as dp.bell.subsampled_pairs._party_draws
    shifts = (pair.second_values - pair.first_values)[touched]
    weights = laplace_weights(np.full(touched.size, log_alpha), shifts)

    def released(values: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
        noise = np.zeros((count, touched.size), dtype=np.int64)
        for _ in range(honest):
            noise += party_pair_draws(plan, count * touched.size, rng).reshape(count, touched.size)
        return (values[touched][None, :] + noise) @ weights

    return AuditCase(
        name=name, mechanism=mechanism, epsilon=pair.query.epsilon, delta=delta,
        sample=lambda count, rng: (released(pair.first_values, count, rng), released(pair.second_values, count, rng)),
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


# --------------------------------------------------------------------------------------------------
# negative controls


def _control_cases() -> list[AuditCase]:
    kendall = ustat_neighbours("kendall", parties=3, threshold=1)
    plan = kendall.plans[0]
    scale = plan.sensitivity / (2.0 * plan.epsilon)
    first, second = float(kendall.first.sums[0]), float(kendall.second.sums[0])
    cases = [AuditCase(
        name="control-float-laplace-half-scale",
        mechanism=("BROKEN: floating-point Laplace of scale sensitivity/(2 epsilon) -- half the scale that "
                   "Sinh & Ramon App. B.1 calibrates -- on the Pi_U-MPC Kendall sum (numpy Generator.laplace; "
                   "true loss 2 epsilon; and floating-point noise, which Mironov 2012 warns against)"),
        epsilon=plan.epsilon, delta=0.0,
        sample=_scalar_sampler(first, second, lambda count, rng: rng.laplace(0.0, scale, size=count)),
        statistic="the released sum", neighbours="as umpc-kendall-dlap-m3-t1", control=True)]
    for parties, threshold in ((3, 1), (5, 2)):
        pair = ustat_neighbours("kendall", parties=parties, threshold=threshold)
        naive = pair.plans[0]
        cases.append(AuditCase(
            name=f"control-polya-naive-m{parties}-t{threshold}",
            mechanism=(f"BROKEN: Polya shares of shape 1/m = 1/{parties} (naive calibration) while "
                       f"t = {threshold} parties collude: the coalition sees only m - t = {parties - threshold} "
                       f"draws (true loss dp.audit.engine.coalition_epsilon > epsilon; Sinh & Ramon App. B.1 needs shape "
                       f"1/(m-t))"),
            epsilon=naive.epsilon, delta=0.0,
            sample=_scalar_sampler(float(pair.first.sums[0]), float(pair.second.sums[0]),
                                   _honest_sum(_naive_polya_draw(1.0 / parties, naive.alpha), parties - threshold)),
            statistic="the Kendall sum plus the honest shares", neighbours="as umpc-kendall-dlap", control=True))
    grid = uniform_grid(1.0, 8.0, 1.0)
    tree_pair = tree_neighbours(grid)
    levels = plan_tree_noise(epsilon=CASE_EPSILON, points=grid.size).levels
    broken = plan_tree_noise(epsilon=CASE_EPSILON * levels, points=grid.size)  # node scale 1/epsilon
    cases.append(_tree_case(
        "control-tree-node-scale", lambda: broken, tree_pair, claimed=CASE_EPSILON, control=True,
        mechanism=("BROKEN: ECDF tree with node noise DLap(exp(-epsilon)), i.e. scale 1/epsilon instead of "
                   "(L+1)/epsilon (Barczewski et al. eq. 2 without Theorem 1's division by L + 1)")))
    return cases


# --------------------------------------------------------------------------------------------------
# public entry points


#: Recommended outputs per dataset (``AuditCase.samples``).  Controls: the power argument of
#: ``tests/test_audit_central.py`` (:func:`planned_lower_bound` on the control's exact output
#: distribution clears the claim with the counts two standard deviations against the audit, at
#: the Bonferroni confidence of the whole family).  Others: runtime only (the exact discrete
#: Gaussian sampler is a Python loop); more samples only tighten the measured bound.
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
#: Recommended outputs per dataset of every other case.
DEFAULT_SAMPLES: int = 200_000


@lru_cache(maxsize=1)
def _all_cases() -> tuple[AuditCase, ...]:
    built = (_umpc_cases() + _delegated_cases() + _ecdf_cases() + _hl_cases() + _fedauc_cases() + [_rank_auc_case()]
             + _subsampled_cases() + _control_cases())
    cases = [replace(case, samples=RECOMMENDED_SAMPLES.get(case.name, DEFAULT_SAMPLES)) for case in built]
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise RuntimeError("audit case names must be unique")
    return tuple(cases)


def central_cases(*, controls: bool = True) -> list[AuditCase]:
    """Every central / distributed mechanism's audit case, then the negative controls.

    :param controls: include the negative controls (``control=True``; each must fail its audit).
    :return: a new list of :class:`dp.audit.engine.AuditCase` (built once, then cached).
    """
    return [case for case in _all_cases() if controls or not case.control]


def case_names(*, controls: bool = True) -> list[str]:
    """The names of :func:`central_cases`, in order."""
    return [case.name for case in central_cases(controls=controls)]


def get_case(name: str) -> AuditCase:
    """The case called ``name``.

    :raise ValueError: if there is no such case (the message lists the names).
    """
    for case in _all_cases():
        if case.name == name:
            return case
    raise ValueError(f"unknown audit case {name!r}; choose one of: {', '.join(case_names())}")


# --------------------------------------------------------------------------------------------------
# planning: the bound an audit should reach, from exact output distributions


def event_probabilities(first_pmf: npt.ArrayLike, second_pmf: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of the audit's candidate events under two pmfs on the same integer support.

    The events of :func:`dp.audit.engine.audit`: ``{x >= c}``, ``{x <= c}`` and ``{x = c}`` for every support
    point ``c``, each in both directions.

    :param first_pmf: pmf of the output on ``D``; ``second_pmf``: on ``D'`` (same length).
    :return: ``(top, bottom)``: for every event, its probability under the dataset on top (whose
        probability is bounded from below) and under the other one.
    :raise ValueError: if the pmfs differ in length or are not one-dimensional.
    """
    p = np.asarray(first_pmf, dtype=np.float64)
    q = np.asarray(second_pmf, dtype=np.float64)
    if p.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"the pmfs must be one-dimensional of equal length, got {p.shape} and {q.shape}")
    events_p = np.concatenate([np.cumsum(p[::-1])[::-1], np.cumsum(p), p])
    events_q = np.concatenate([np.cumsum(q[::-1])[::-1], np.cumsum(q), q])
    return np.concatenate([events_p, events_q]), np.concatenate([events_q, events_p])


def planned_lower_bound(top: npt.ArrayLike, bottom: npt.ArrayLike, *, samples: int, delta: float = 0.0,
                        confidence: float = 0.95, pessimism: float = 2.0) -> float:
    """The lower bound an audit of ``samples`` outputs per dataset reaches on the best of some events.

    For every event with probabilities ``top`` (dataset on top) and ``bottom``, the evaluation half
    of ``samples - samples // 2`` outputs sees about ``top * T`` and ``bottom * T`` hits; with counts
    moved ``pessimism`` standard deviations against the audit (fewer on top, more below), the
    Clopper-Pearson bounds at level ``1 - (1 - confidence)/2`` give
    ``log((p_low - delta) / q_high)``; the best event's value is returned.  This is the power
    argument behind the sample sizes of the negative controls: if it exceeds the claimed epsilon,
    the audit proves the violation unless the counts fall ``pessimism`` deviations short (the
    event chosen on the first half is assumed to be the best one).

    :param top: event probabilities under the dataset on top; ``bottom``: under the other one.
    :param samples: outputs per dataset, at least 2.
    :param delta: the claimed delta.
    :param confidence: the audit's confidence, in ``(0, 1)``.
    :param pessimism: standard deviations of the counts held against the audit (``>= 0``).
    :return: the planned lower bound (0 if no event beats ``delta``).
    :raise ValueError: on invalid parameters.
    """
    n = check_positive_int(samples, "samples")
    if n < 2:
        raise ValueError(f"samples must be at least 2, got {samples}")
    check_delta(delta)
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if pessimism != 0.0:
        check_positive(pessimism, "pessimism")
    p = np.clip(np.asarray(top, dtype=np.float64), 0.0, 1.0)
    q = np.clip(np.asarray(bottom, dtype=np.float64), 0.0, 1.0)
    trials = n - n // 2
    level = 1.0 - (1.0 - confidence) / 2.0
    hits_top = np.floor(np.maximum(p * trials - pessimism * np.sqrt(p * (1 - p) * trials), 0.0))
    hits_bottom = np.ceil(np.minimum(q * trials + pessimism * np.sqrt(q * (1 - q) * trials), trials))
    p_low = clopper_pearson_lower(hits_top, trials, level)
    q_high = clopper_pearson_upper(hits_bottom, trials, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.where(p_low > delta, np.log(np.maximum(p_low - delta, 1e-300) / q_high), 0.0)
    return float(max(np.max(loss, initial=0.0), 0.0))
