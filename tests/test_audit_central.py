"""Audits of every central / distributed DP mechanism (dp.audit.central_cases) and unit tests of the engine (dp.audit.engine).

Statistical design (fixed seeds, thresholds from distributions, nothing tuned):

* Every non-control case must pass.  A correct mechanism passes one audit with probability at least
  its confidence; the cases form a family, so each audit runs at the Bonferroni level
  ``1 - 0.05 / (number of non-control cases)``: the chance that *any* correct case fails is at most 5 %.
* Every negative control must fail.  Its sample size comes from a power argument
  (:func:`test_control_sample_sizes_have_power`): from the control's *exact* output distribution, the
  Clopper-Pearson bound of its best event, with the counts held two standard deviations against the
  audit, must exceed the claimed epsilon at that sample size and that confidence.
* Non-control sample sizes only set how close the measured bound gets to the true loss; they are
  chosen for runtime (Laplace-type cases 200,000 per dataset, the pure-Python exact discrete Gaussian
  sampler of the zCDP cases a few thousand).  All sizes are the cases' ``samples``
  (``dp.audit.central_cases.RECOMMENDED_SAMPLES``).
"""
from __future__ import annotations

import math
import re
import zlib

import numpy as np
import pytest
from scipy import stats

from dp.audit.engine import (
    AuditCase,
    AuditResult,
    audit,
    clopper_pearson_lower,
    clopper_pearson_upper,
    coalition_epsilon,
    exact_epsilon,
    honest_noise_pmf,
)
from dp.audit.central_cases import audit_delegates, case_names, central_cases, get_case
from dp.audit.fedauc_cases import fedauc_release
from dp.audit.neighbours import (
    CASE_EPSILON,
    HL_EPSILONS,
    PUBLIC_SEED,
    fedauc_neighbours,
    hosmer_lemeshow_neighbours,
    pair_neighbours,
    rank_auc_neighbours,
    tree_neighbours,
    ustat_neighbours,
)
from dp.audit.statistics import event_probabilities, planned_lower_bound, tree_weights
from dp.calibration import discrete_laplace_pmf
from dp.ecdf.grid import prefix_incidence, uniform_grid
from dp.ecdf.analysis import interval_nodes
from dp.ecdf.tree import noisy_counts, plan_tree_noise
from dp.fedauc.montecarlo import simulate_fedauc
from dp.fedauc.ranks import average_ranks, server_auc
from dp.rank_auc import plans_for_rows
from dp.ecdf.hosmer_lemeshow import JOINT_SENSITIVITY
from dp.umpc.delegation import delegate_plan
from dp.bell.subsampled_pairs import plans_for_pairs, simulate_subsampled
from dp.sampling import max_degree
from dp.umpc.protocol import sample_for
from secure.noise.party import polya_difference
from secure.public_randomness import public_generator

NON_CONTROLS = case_names(controls=False)
CONTROLS = [name for name in case_names() if name not in NON_CONTROLS]
#: Bonferroni: the family of non-control audits has false-alarm probability at most 5 %.
CONFIDENCE = 1.0 - 0.05 / len(NON_CONTROLS)


def _seed(name: str) -> int:
    """A fixed per-case seed (CRC32 of the name), so adding a case does not move the others."""
    return zlib.crc32(name.encode())


def _run(name: str) -> AuditResult:
    case = get_case(name)
    return audit(case, samples=case.samples, rng=np.random.default_rng(_seed(name)), confidence=CONFIDENCE)


# ------------------------------------------------------------------------------------------ the audits


@pytest.mark.parametrize("name", NON_CONTROLS)
def test_every_mechanism_passes_its_audit(name: str) -> None:
    result = _run(name)
    assert not result.violation, (name, result.epsilon_lower, result.event)
    assert 0.0 <= result.epsilon_lower <= result.case.epsilon


@pytest.mark.parametrize("name", CONTROLS)
def test_every_negative_control_fails_its_audit(name: str) -> None:
    result = _run(name)
    assert result.violation, (name, result.epsilon_lower, result.event)
    assert result.verdict == "FAIL"


def test_cases_cover_every_mechanism_and_cite_the_paper() -> None:
    names = case_names()
    assert len(set(names)) == len(names)
    for prefix in ("umpc-", "umpc-kendall-binomial", "umpc-kendall-mpc-dlap", "delegated-", "ecdf-tree-dlap", "ecdf-tree-gaussian",
                   "hl-statistics", "hl-ecdf", "fedauc-global-laplace", "fedauc-local-laplace",
                   "fedauc-adaptive-laplace", "fedauc-global-gaussian", "rank-auc", "subsampled-pairs",
                   "subsampled-all-pairs"):
        assert any(n.startswith(prefix) for n in NON_CONTROLS), prefix
    assert sorted(CONTROLS) == sorted(["control-float-laplace-half-scale", "control-polya-naive-m3-t1",
                                       "control-polya-naive-m5-t2", "control-tree-node-scale"])
    citation = re.compile(r"§|Alg(orithm)?\.? ?\d|eq\. ?\(?\d|Theorem \d|Protocol \d|App\. [A-Z]|Prop\. ")
    for case in central_cases():
        assert citation.search(case.mechanism), case.name
        assert case.neighbours and case.statistic
        assert case.control == case.name.startswith("control-")
    assert [c.name for c in central_cases(controls=False)] == NON_CONTROLS
    with pytest.raises(ValueError, match="unknown audit case 'nope'; choose one of: umpc-kendall"):
        get_case("nope")


# ----------------------------------------------------------------------- power of the negative controls


def _shifted(pmf: np.ndarray, first: int, second: int) -> tuple[np.ndarray, np.ndarray]:
    """The pmfs of ``first + Z`` and ``second + Z`` on one common support."""
    low = min(first, second)
    width = pmf.size + abs(first - second)
    out_first, out_second = np.zeros(width), np.zeros(width)
    out_first[first - low:first - low + pmf.size] = pmf
    out_second[second - low:second - low + pmf.size] = pmf
    return out_first, out_second


def _control_events(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Exact event probabilities of a control's two output distributions."""
    if name == "control-float-laplace-half-scale":
        pair = ustat_neighbours("kendall", parties=3, threshold=1)
        plan = pair.plans[0]
        scale = plan.sensitivity / (2 * plan.epsilon)
        first, second = float(pair.first.sums[0]), float(pair.second.sums[0])
        cuts = np.linspace(min(first, second) - 20 * scale, max(first, second) + 20 * scale, 4001)
        law = stats.laplace
        upper_first, upper_second = law.sf(cuts, first, scale), law.sf(cuts, second, scale)
        lower_first, lower_second = law.cdf(cuts, first, scale), law.cdf(cuts, second, scale)
        top = np.concatenate([upper_first, lower_first, upper_second, lower_second])
        bottom = np.concatenate([upper_second, lower_second, upper_first, lower_first])
        return top, bottom
    if name.startswith("control-polya-naive"):
        parties, threshold = (int(x) for x in re.findall(r"\d+", name))
        pair = ustat_neighbours("kendall", parties=parties, threshold=threshold)
        pmf, _ = honest_noise_pmf(parties - threshold, 1.0 / parties, pair.plans[0].alpha)
        first, second = _shifted(pmf, int(pair.first.sums[0]), int(pair.second.sums[0]))
        return event_probabilities(first, second)
    assert name == "control-tree-node-scale"
    pair = tree_neighbours(uniform_grid(1.0, 8.0, 1.0))
    coefficients = prefix_incidence(8).T @ pair.weights
    assert set(np.abs(coefficients).round(9)) <= {0.0, 1.0}
    nodes = int(np.count_nonzero(coefficients))
    node = discrete_laplace_pmf(np.arange(-200, 201), math.exp(-CASE_EPSILON))  # broken: DLap(exp(-epsilon))
    pmf = np.array([1.0])
    for _ in range(nodes):  # the +-1 coefficients do not matter: DLap is symmetric
        pmf = np.convolve(pmf, node)
    first, second = _shifted(pmf / pmf.sum(), 0, int(round(pair.shift)))
    return event_probabilities(first, second)


@pytest.mark.parametrize("name", CONTROLS)
def test_control_sample_sizes_have_power(name: str) -> None:
    """Power argument: at the chosen sample size the control's best event, with counts two standard
    deviations against the audit, already proves a loss above the claim (the true losses are 2 epsilon,
    coalition_epsilon(...) = 1.72 / 1.92 epsilon, and L epsilon = 3 epsilon respectively)."""
    top, bottom = _control_events(name)
    case = get_case(name)
    planned = planned_lower_bound(top, bottom, samples=case.samples, delta=case.delta, confidence=CONFIDENCE,
                                  pessimism=2.0)
    assert planned > case.epsilon, (name, planned)
    # and the claim is wrong by a margin the audit can see: the exact loss of the control
    exact = planned_lower_bound(top, bottom, samples=10**12, confidence=CONFIDENCE, pessimism=0.0)
    assert exact > 1.3 * case.epsilon


def test_naive_polya_controls_exceed_epsilon_exactly_as_coalition_epsilon_says() -> None:
    for parties, threshold in ((3, 1), (5, 2)):
        plan = ustat_neighbours("kendall", parties=parties, threshold=threshold).plans[0]
        naive = coalition_epsilon(epsilon=plan.epsilon, sensitivity=plan.sensitivity, parties=parties,
                                  threshold=threshold, calibration_parties=parties)
        pmf, _ = honest_noise_pmf(parties - threshold, 1.0 / parties, plan.alpha)
        assert naive == pytest.approx(exact_epsilon(pmf, plan.sensitivity))
        assert naive > 1.5 * plan.epsilon


# --------------------------------------------------------------------------- the neighbouring datasets


@pytest.mark.parametrize("kernel, parties, threshold, delta", [
    ("kendall", 3, 1, 0.0), ("gini", 5, 2, 0.0), ("kendall", 3, 1, 1e-5), ("kendall", 5, 2, 0.0)])
def test_umpc_neighbours_move_the_sum_by_exactly_the_sensitivity(kernel: str, parties: int, threshold: int,
                                                                 delta: float) -> None:
    pair = ustat_neighbours(kernel, parties=parties, threshold=threshold, delta=delta)
    plan = pair.plans[0]
    rows = sum(len(r) for r in pair.first_rows)
    degree = max_degree(sample_for(pair.query, rows, PUBLIC_SEED), rows)
    assert plan.sensitivity == degree * pair.query.outputs[0].sensitivity
    assert abs(pair.change[0]) == plan.sensitivity
    assert plan.sensitivity <= 16  # a few fixed-point units: the loss stays resolvable
    assert pair.second.plans == pair.first.plans  # the calibration is public (tuples only)
    assert plan.mechanism == ("binomial" if delta else "discrete laplace")
    if not delta:
        assert plan.shape == pytest.approx(1.0 / (parties - threshold))
        assert plan.alpha == pytest.approx(math.exp(-plan.epsilon / plan.sensitivity))
    stacked = np.vstack(pair.first_rows) != np.vstack(pair.second_rows)
    assert np.flatnonzero(stacked.any(axis=1)).tolist() == [pair.changed_row]


def test_delegated_cases_leave_only_the_honest_delegates_noise() -> None:
    pair = ustat_neighbours("kendall", parties=5, threshold=2)
    delegates = audit_delegates(5)  # a generator of its own, not the tuples' PUBLIC_SEED
    assert delegate_plan(pair.plans[0], delegates).honest == 1
    assert delegate_plan(pair.plans[0], delegates).shape == 1.0
    assert delegate_plan(pair.plans[0], delegates, corrupt_delegates=1).shape == 0.5
    binomial = ustat_neighbours("kendall", parties=5, threshold=2, delta=1e-5)
    count = 50_000
    for name, source, corrupt in (("delegated-dlap-one-honest", pair, None), ("delegated-dlap-two-honest", pair, 1),
                                  ("delegated-binomial-one-honest", binomial, None)):
        plan = delegate_plan(source.plans[0], delegates, corrupt_delegates=corrupt)
        first, second = get_case(name).sample(count, np.random.default_rng(3))
        # the honest delegates' noise: variance |Z| - t_Z times one delegate's (mean 0); 6 sigma on the difference
        one = (plan.party_trials / 4 if plan.mechanism == "binomial"
               else 2 * plan.shape * plan.alpha / (1 - plan.alpha) ** 2)
        tolerance = 6 * math.sqrt(2 * plan.honest * one / count)
        assert np.mean(second) - np.mean(first) == pytest.approx(source.change[0], abs=tolerance)


def test_tree_neighbours_differ_on_the_worst_interval_and_the_statistic_is_eq_2() -> None:
    grid = uniform_grid(1.0, 8.0, 1.0)
    pair = tree_neighbours(grid)
    a, b = pair.interval
    difference = pair.first_counts - pair.second_counts
    assert np.array_equal(difference, ((np.arange(1, 9) >= a) & (np.arange(1, 9) <= b)).astype(int))
    incidence = prefix_incidence(8)
    coefficients = incidence.T @ pair.weights
    assert np.max(np.abs(coefficients)) == pytest.approx(1.0)
    # the LP value is reached by Lemma 1's representation: exact loss = value * epsilon/(L+1)
    assert pair.shift == pytest.approx(len(interval_nodes(a, b, 8))) == pytest.approx(3.0)
    # finding: no pair on N = 2^L = 8 points exceeds L = 3 nodes, i.e. loss 3/4 epsilon < epsilon
    assert max(tree_weights(8, i, j)[1] for i in range(1, 9) for j in range(i, 9)) == pytest.approx(3.0)
    plan = plan_tree_noise(epsilon=1.0, points=8, parties=3, threshold=1)
    eta = plan.draw_total(np.random.default_rng(5))
    released = noisy_counts(pair.first_counts, eta) @ pair.weights
    assert released == pytest.approx(pair.first_counts @ pair.weights + coefficients @ eta)


def test_every_interval_on_8_points_is_an_integer_shift_of_3_nodes() -> None:
    """The other side of the tree finding: for every interval ``[a, b]`` of ``N = 8`` grid points an
    integer node vector ``zeta`` with ``A zeta = 1_[a, b]`` and ``||zeta||_1 <= L = 3`` exists (integer
    programme), so shifting the integer node noise by ``zeta`` bounds every pair's loss by
    ``3 epsilon/(L + 1)``; with the LP statistic above it is exactly that on the audited pair."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    incidence = prefix_incidence(8).toarray().astype(float)
    nodes = incidence.shape[1]
    worst = 0.0
    for a in range(1, 9):
        for b in range(a, 9):
            indicator = ((np.arange(1, 9) >= a) & (np.arange(1, 9) <= b)).astype(float)
            result = milp(np.ones(2 * nodes), integrality=np.ones(2 * nodes), bounds=Bounds(0, np.inf),
                          constraints=[LinearConstraint(np.hstack([incidence, -incidence]), indicator, indicator)])
            assert result.success
            worst = max(worst, float(result.fun))
            assert len(interval_nodes(a, b, 8)) >= result.fun - 1e-9  # Lemma 1's construction is one such zeta
    assert worst == pytest.approx(3.0)


def test_hosmer_lemeshow_neighbours_reach_the_joint_sensitivity() -> None:
    for accounting, epsilon in HL_EPSILONS.items():
        pair = hosmer_lemeshow_neighbours(accounting=accounting, epsilon=epsilon)
        change = pair.change
        weighted = np.abs(change[0]).sum() / pair.query.scale + np.abs(change[1]).sum()
        assert weighted == JOINT_SENSITIVITY
        loss = float(np.sum(-pair.log_alpha * np.abs(change)))
        assert loss == pytest.approx(pair.query.statistics_loss_bound)
        assert get_case(f"hl-statistics-{accounting}-m3-t1").epsilon == pair.query.statistics_loss_bound
    paper = hosmer_lemeshow_neighbours(accounting="paper", epsilon=HL_EPSILONS["paper"]).query
    assert get_case("hl-statistics-paper-m3-t1").epsilon == pytest.approx(paper.budget.statistics_epsilon / 2)


def fedauc_estimates(scores: np.ndarray, client_of: np.ndarray, released: dict[str, np.ndarray]) -> np.ndarray:
    """The server's AUC (eq. 1, :func:`dp.fedauc.ranks.server_auc`) from the :func:`fedauc_release` reports, one per
    run; adaptive reports turned back into ``localSum'_k = (T_k localP'_k + D'_k) / (2 n_k)`` (Sun et al. §5.3)."""
    owner = np.asarray(client_of, dtype=np.int64)
    if "orthogonal" in released:
        twice = np.rint(2.0 * average_ranks(scores)).astype(np.int64)
        sizes = np.bincount(owner).astype(np.float64)
        twice_total = np.bincount(owner, weights=twice.astype(np.float64))
        local_p = released["count"]
        local_sum = (twice_total[None, :] * local_p + released["orthogonal"]) / (2.0 * sizes[None, :])
        return server_auc(local_sum.sum(axis=1), local_p.sum(axis=1), scores.size)
    return server_auc(released["sum"].sum(axis=1) / 2.0, released["count"].sum(axis=1), scores.size)


@pytest.mark.parametrize("method, runs", [("global_laplace", 40), ("local_laplace", 40), ("adaptive_laplace", 40),
                                          ("global_gaussian", 4), ("local_gaussian", 3)])
def test_fedauc_reports_are_those_of_simulate_fedauc(method: str, runs: int) -> None:
    pair = fedauc_neighbours(method)
    delta = 1e-3 if method.endswith("gaussian") else 0.0
    released = fedauc_release(pair.scores, pair.first_labels, pair.client_of, method=method, epsilon=1.0, delta=delta,
                              runs=runs, rng=np.random.default_rng(11))
    simulated = simulate_fedauc(pair.scores, pair.first_labels, method=method, epsilon=1.0, delta=delta,
                                layout=pair.client_of, runs=runs, rng=public_generator(0),
                                noise_rng=np.random.default_rng(11))
    np.testing.assert_array_equal(fedauc_estimates(pair.scores, pair.client_of, released), simulated.estimates)


@pytest.mark.parametrize("method", ["global_laplace", "local_laplace", "adaptive_laplace"])
def test_fedauc_flip_moves_the_client_report_by_its_sensitivity(method: str) -> None:
    pair = fedauc_neighbours(method)
    assert np.sum(pair.first_labels != pair.second_labels) == 1
    name = "orthogonal" if method.startswith("adaptive") else "sum"
    reports = [fedauc_release(pair.scores, labels, pair.client_of, method=method, epsilon=1e9, runs=1,
                              rng=np.random.default_rng(0))[name][0, pair.client]
               for labels in (pair.first_labels, pair.second_labels)]
    ranks = 2 * (np.argsort(np.argsort(pair.scores)))
    members = pair.client_of == pair.client
    if method == "global_laplace":
        sensitivity = 2 * (pair.scores.size - 1)
    elif method == "local_laplace":
        sensitivity = int(ranks[members].max())
    else:
        n, total = int(members.sum()), int(ranks[members].sum())
        sensitivity = max(n * int(ranks[members].max()) - total, total - n * int(ranks[members].min()))
    assert abs(int(reports[1]) - int(reports[0])) == sensitivity  # epsilon = 1e9: alpha underflows to 0, no noise


def test_rank_auc_neighbours_move_both_sums_by_their_sensitivities() -> None:
    pair = rank_auc_neighbours()
    plans = plans_for_rows(pair.query, len(pair.first_rows), 3, 1)
    shifts = np.subtract(pair.second_sums, pair.first_sums).tolist()
    assert shifts == [plans[0].sensitivity, plans[1].sensitivity] == [2 * (len(pair.first_rows) - 1), 1]
    assert all(p.epsilon == pair.query.epsilon / 2 for p in plans)


@pytest.mark.parametrize("all_pairs", [False, True])
def test_pair_neighbours_move_every_touched_pair_by_delta_f(all_pairs: bool) -> None:
    pair = pair_neighbours(all_pairs=all_pairs, rows=8 if all_pairs else 12)
    change = pair.second_values - pair.first_values
    touched = pair.touched
    assert np.all(np.abs(change[touched]) == 2) and np.all(np.delete(change, touched) == 0)
    if all_pairs:
        assert touched.size == 7
        return
    plan = plans_for_pairs(pair.query, 3, 1)[0]
    assert touched.size == pair.query.permutations == plan.sensitivity // 2
    rows = np.array_split(pair.first_rows, 3)
    simulated = simulate_subsampled(pair.query, rows, threshold=1, seed=PUBLIC_SEED, runs=1,
                                    noise=np.zeros((1, 1, 3, len(pair.pairs)), dtype=np.int64))
    np.testing.assert_array_equal(simulated.pairs, pair.pairs)
    np.testing.assert_array_equal(simulated.pair_values[0], pair.first_values)


# ------------------------------------------------------------------------------------------ the engine


@pytest.mark.parametrize("successes, trials", [(0, 50), (1, 50), (17, 50), (49, 50), (50, 50), (3, 1000),
                                               (512, 1000), (9_990, 10_000)])
@pytest.mark.parametrize("level", [0.95, 0.975, 0.999])
def test_clopper_pearson_matches_scipy_exact_interval(successes: int, trials: int, level: float) -> None:
    # a one-sided bound at level l is one end of the two-sided exact interval at confidence 2 l - 1; scipy
    # finds it by root finding on the binomial cdf (relative accuracy ~1e-9 here), the engine by the beta
    # quantile, so the two agree to 1e-6 and the engine's bound solves the defining equation to 1e-9
    interval = stats.binomtest(successes, trials).proportion_ci(confidence_level=2 * level - 1, method="exact")
    lower = float(clopper_pearson_lower(successes, trials, level))
    upper = float(clopper_pearson_upper(successes, trials, level))
    assert lower == pytest.approx(interval.low, rel=1e-6, abs=1e-15)
    assert upper == pytest.approx(interval.high, rel=1e-6, abs=1e-15)
    if successes > 0:  # P[X >= k | p_low] = 1 - level
        assert stats.binom.sf(successes - 1, trials, lower) == pytest.approx(1 - level, rel=1e-9)
    else:
        assert lower == 0.0
    if successes < trials:  # P[X <= k | p_high] = 1 - level
        assert stats.binom.cdf(successes, trials, upper) == pytest.approx(1 - level, rel=1e-9)
    else:
        assert upper == 1.0


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("sensitivity", [1, 3, 8])
def test_exact_epsilon_of_discrete_laplace_is_epsilon(epsilon: float, sensitivity: int) -> None:
    alpha = math.exp(-epsilon / sensitivity)
    pmf = discrete_laplace_pmf(np.arange(-400, 401), alpha)
    assert exact_epsilon(pmf, sensitivity) == pytest.approx(epsilon, rel=1e-9)


@pytest.mark.parametrize("parties, threshold", [(3, 1), (5, 2)])
@pytest.mark.parametrize("sensitivity", [1, 4])
def test_coalition_epsilon_is_epsilon_with_m_minus_t_and_more_with_m(parties: int, threshold: int,
                                                                      sensitivity: int) -> None:
    calibrated = coalition_epsilon(epsilon=1.0, sensitivity=sensitivity, parties=parties, threshold=threshold,
                                   calibration_parties=parties - threshold)
    naive = coalition_epsilon(epsilon=1.0, sensitivity=sensitivity, parties=parties, threshold=threshold,
                              calibration_parties=parties)
    assert calibrated == pytest.approx(1.0, abs=1e-6)
    assert naive > 1.3
    pmf, width = honest_noise_pmf(parties - threshold, 1.0 / (parties - threshold), math.exp(-1.0 / sensitivity))
    z = np.arange(-width, width + 1)
    np.testing.assert_allclose(pmf, discrete_laplace_pmf(z, math.exp(-1.0 / sensitivity)), rtol=1e-6, atol=1e-15)


def test_audit_is_sound_on_a_correct_discrete_laplace_over_many_seeds() -> None:
    """30 independent audits of an exactly epsilon-DP discrete Laplace (shift 4) at 20,000 samples: each
    passes with probability at least 0.95, so at least ``binom.ppf(0.001, 30, 0.95)`` of them pass except
    with probability 0.001."""
    sensitivity, epsilon = 4, 1.0
    alpha = math.exp(-epsilon / sensitivity)
    def sample(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (np.asarray(polya_difference(1.0, alpha, size=count, rng=rng), dtype=float),
                sensitivity + np.asarray(polya_difference(1.0, alpha, size=count, rng=rng), dtype=float))

    case = AuditCase("dlap-shift-4", "discrete Laplace, shift = sensitivity", epsilon, 0.0, sample)
    runs = 30
    passes = sum(not audit(case, samples=20_000, rng=np.random.default_rng(1000 + seed)).violation
                 for seed in range(runs))
    assert passes >= stats.binom.ppf(0.001, runs, 0.95)


def test_audit_detects_a_mechanism_at_twice_its_claim() -> None:
    """DLap calibrated for epsilon 2 claimed at 1; the exact loss 2 planned at 20,000 samples clears 1."""
    alpha = math.exp(-2.0)
    case = AuditCase("dlap-twice", "discrete Laplace, half the scale", 1.0, 0.0,
                     lambda count, rng: (np.asarray(polya_difference(1.0, alpha, size=count, rng=rng), dtype=float),
                                         1.0 + np.asarray(polya_difference(1.0, alpha, size=count, rng=rng),
                                                          dtype=float)))
    z = np.arange(-60, 61)
    top, bottom = event_probabilities(*_shifted(discrete_laplace_pmf(z, alpha), 0, 1))
    assert planned_lower_bound(top, bottom, samples=20_000, pessimism=2.0) > 1.0
    result = audit(case, samples=20_000, rng=np.random.default_rng(7))
    assert result.violation and result.epsilon_lower <= 2.0


def _constant(count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(count), np.ones(count)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"samples": 1}, ValueError, "samples must be at least 2, got 1"),
    ({"samples": 0}, ValueError, "samples must be at least 1, got 0"),
    ({"samples": 2.5}, TypeError, "samples must be an integer, got 2.5"),
    ({"samples": 10, "confidence": 0.0}, ValueError, "confidence must be in (0, 1), got 0.0"),
    ({"samples": 10, "confidence": 1.0}, ValueError, "confidence must be in (0, 1), got 1.0"),
])
def test_audit_validates_its_parameters(kwargs: dict[str, float], error: type[Exception], message: str) -> None:
    case = AuditCase("constant", "constant", 1.0, 0.0, _constant)
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        audit(case, rng=np.random.default_rng(0), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("case, error, message", [
    (AuditCase("bad-eps", "", 0.0, 0.0, _constant), ValueError, "epsilon must be positive, got 0.0"),
    (AuditCase("bad-delta", "", 1.0, 1.0, _constant), ValueError, "delta must lie in [0, 1), got 1.0"),
    (AuditCase("list", "", 1.0, 0.0, lambda c, r: [np.zeros(c), np.zeros(c)]),  # type: ignore[arg-type,return-value]
     TypeError,
     "case list: sample must return a pair of arrays"),
    (AuditCase("short", "", 1.0, 0.0, lambda c, r: (np.zeros(c), np.zeros(c - 1))), ValueError,
     "case short: sample returned 10 and 9 outputs, expected 10"),
    (AuditCase("nan", "", 1.0, 0.0, lambda c, r: (np.full(c, np.nan), np.zeros(c))), ValueError,
     "case nan: outputs must be finite"),
])
def test_audit_rejects_bad_cases(case: AuditCase, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        audit(case, samples=10, rng=np.random.default_rng(0))


def test_engine_helpers_validate_their_inputs() -> None:
    with pytest.raises(ValueError, match="shape must be positive, got 0"):
        honest_noise_pmf(2, 0, 0.5)
    with pytest.raises(ValueError, match=re.escape("alpha must be in (0, 1), got 1.0")):
        honest_noise_pmf(2, 0.5, 1.0)
    with pytest.raises(ValueError, match="shift 5 does not fit in a support of 3 points"):
        exact_epsilon([0.2, 0.6, 0.2], 5)
    with pytest.raises(ValueError, match="threshold must be below half the number of parties"):
        coalition_epsilon(epsilon=1.0, sensitivity=1, parties=4, threshold=2, calibration_parties=2)
    with pytest.raises(ValueError, match="the pmfs must be one-dimensional of equal length"):
        event_probabilities([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="samples must be at least 2, got 1"):
        planned_lower_bound([0.5], [0.5], samples=1)
    with pytest.raises(ValueError, match=re.escape("confidence must be in (0, 1), got 1.5")):
        planned_lower_bound([0.5], [0.5], samples=10, confidence=1.5)
    with pytest.raises(ValueError, match="pessimism must be positive, got -1"):
        planned_lower_bound([0.5], [0.5], samples=10, pessimism=-1)
