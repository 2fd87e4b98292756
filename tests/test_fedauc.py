"""FedAUC (Sun et al.), the paper's deployment: exactness, unbiasedness, closed forms, adaptive split.

Statistical thresholds come from the sampling distributions (99.9 % two-sided, z = 3.29), with
fixed seeds; the run counts are chosen so that the intervals are narrow enough for the claims.
"""
from __future__ import annotations

import csv
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import roc_auc_score

from dp.calibration import discrete_laplace_variance
from dp.fedauc.mechanisms import (adaptive_count_fraction, debias_auc, discrete_gaussian_variance, discrete_laplace_noise,
                                  flip_probability, randomized_response,
                                  sample_discrete_gaussian)
from dp.fedauc.montecarlo import (METHODS, global_laplace_variance, local_laplace_variance, predict_fedauc,
                                  rr_debiased_bias, rr_variance, simulate_fedauc)
from dp.fedauc.ranks import auc_from_ranks, average_ranks, client_layout, local_statistics, server_auc
from tests.statistics_checks import Z999



def synthetic(samples: int, base_rate: float, seed: int, ties: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Scores separating the classes moderately (AUC about 0.7); rounded to 1/8 for ties."""
    generator = np.random.default_rng(seed)
    labels = (generator.random(samples) < base_rate).astype(np.int64)
    labels[0], labels[1] = 1, 0
    scores = generator.normal(0.8 * labels, 1.0)
    if ties:
        scores = np.round(scores * 8) / 8
    return scores, labels


def std_within(result_std: float, closed_form: float, estimates: np.ndarray, tolerance: float = 0.10) -> None:
    """Assert ``|std/closed - 1| <= tolerance`` after checking the run count makes that meaningful.

    The sample std has relative standard error ``sqrt((kurtosis - 1)/(4 R))`` (delta method on the
    sample variance), with the kurtosis estimated from the runs; its 99.9 % interval must lie well
    inside the tolerance (half of it), so a pass is informative and a correct formula passes.
    """
    runs = estimates.size
    kurtosis = stats.kurtosis(estimates, fisher=False)
    half_width = Z999 * math.sqrt((kurtosis - 1.0) / (4.0 * runs))
    assert half_width <= tolerance / 2, f"too few runs ({runs}) for a {tolerance:.0%} check: CI +-{half_width:.1%}"
    assert abs(result_std / closed_form - 1.0) <= tolerance, (result_std, closed_form)


# --------------------------------------------------------------------------------------------------
# eq. (1), exactness at epsilon = infinity

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.booleans()), min_size=2, max_size=60))
def test_rank_auc_is_the_exactly_rounded_mann_whitney_value_and_sklearn_agrees(pairs: list[tuple[int, bool]]) -> None:
    scores = np.array([s for s, _ in pairs], dtype=np.float64)
    labels = np.array([int(b) for _, b in pairs])
    if labels.sum() in (0, labels.size):
        return
    ours = auc_from_ranks(average_ranks(scores), labels)
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = sum(Fraction(int(a > b)) + Fraction(int(a == b), 2) for a in pos for b in neg)
    assert ours == float(wins / (pos.size * neg.size))  # correctly rounded rational
    assert abs(ours - roc_auc_score(labels, scores)) <= 1e-15  # sklearn's trapezoid: last-ulp rounding only


@pytest.mark.parametrize(("method", "counts"), [(method, counts) for method in METHODS for counts in ("noisy", "exact")
                                                 if not (method.startswith(("adaptive", "orthogonal")) and counts == "exact")])
def test_infinite_epsilon_gives_sklearn_auc_in_every_run(method: str, counts: str) -> None:
    scores, labels = synthetic(1500, 0.2, seed=1)
    result = simulate_fedauc(scores, labels, method=method, epsilon=math.inf, clients=37, layout="non_iid", runs=5,
                             rng=np.random.default_rng(2), counts=counts, noise_rng=np.random.default_rng(3))
    exact = auc_from_ranks(average_ranks(scores), labels)
    assert np.all(result.estimates == exact) and result.exact_auc == exact
    assert abs(exact - roc_auc_score(labels, scores)) <= 1e-15
    assert result.predicted_std == 0.0


def test_identical_runs_have_exactly_zero_std_and_their_own_mean() -> None:
    """Review D4: at epsilon = inf every run returns the exact AUC; its mean and std are that value and 0 exactly,
    not numpy's rounding residue (seed 2's AUC is one where ``np.std`` of 20 copies gives 1.1e-16)."""
    scores, labels = synthetic(1500, 0.2, seed=2)
    exact = auc_from_ranks(average_ranks(scores), labels)
    runs = 20
    assert np.std(np.full(runs, exact), ddof=1) > 0 and np.mean(np.full(runs, exact)) != exact  # the residue
    result = simulate_fedauc(scores, labels, method="rr", epsilon=math.inf, clients=37, layout="iid", runs=runs,
                             rng=np.random.default_rng(2), noise_rng=np.random.default_rng(3))
    assert np.all(result.estimates == exact)
    assert result.std == 0.0 and result.mean == exact
    noisy = simulate_fedauc(scores, labels, method="rr", epsilon=1.0, clients=37, layout="iid", runs=runs,
                            rng=np.random.default_rng(2), noise_rng=np.random.default_rng(3))
    assert noisy.std == float(np.std(noisy.estimates, ddof=1)) > 0 and noisy.mean == float(np.mean(noisy.estimates))


def test_no_flip_and_no_noise_leave_the_aggregates_exact() -> None:
    scores, labels = synthetic(400, 0.3, seed=4)
    assert flip_probability(math.inf) == 0.0
    assert np.array_equal(randomized_response(labels, math.inf, rng=np.random.default_rng(0)), labels)
    ranks = average_ranks(scores)
    stats_ = local_statistics(ranks, labels, client_layout(scores, clients=9, layout="iid",
                                                           rng=np.random.default_rng(5)))
    total = server_auc(stats_.local_sum.sum(), stats_.local_positives.sum(), scores.size)
    assert float(total) == auc_from_ranks(ranks, labels)
    assert float(debias_auc(total, labels.sum(), labels.size - labels.sum(), 0.0)) == float(total)


# --------------------------------------------------------------------------------------------------
# randomized response and debiasing

def test_flip_probability_is_rounded_up_and_spends_at_most_epsilon() -> None:
    for epsilon in (0.01, 0.5, 1.0, 4.0, 20.0, 40.0):
        rho = flip_probability(epsilon)
        paper = 1.0 / (1.0 + math.exp(epsilon))
        assert paper <= rho <= paper + 2.0**-51
        assert math.log((1 - rho) / rho) <= epsilon + 1e-12


def test_debiasing_inverts_the_expected_noisy_auc() -> None:
    """Eq. (3)-(4) with pi' of App. P map the expected noisy AUC back to the clean AUC exactly."""
    scores, labels = synthetic(3000, 0.15, seed=6)
    ranks = average_ranks(scores)
    m, p = labels.size, int(labels.sum())
    for epsilon in (0.5, 1.0, 3.0):
        rho = flip_probability(epsilon)
        pbar = p * (1 - rho) + (m - p) * rho
        rank_sum = (1 - 2 * rho) * float(ranks @ labels) + rho * ranks.sum()
        noisy = float(server_auc(rank_sum, pbar, m))
        clean = float(debias_auc(noisy, pbar, m - pbar, rho))
        assert clean == pytest.approx(auc_from_ranks(ranks, labels), abs=1e-12)


def test_debiased_rr_is_unbiased() -> None:
    """Mean over many runs inside its 99.9 % interval around the true AUC.

    Balanced classes at epsilon = 4, where the estimator's second-order (ratio) bias is below a
    tenth of the interval; the bias itself is checked in the next test.
    """
    scores, labels = synthetic(2000, 0.5, seed=7)
    runs = 8000
    result = simulate_fedauc(scores, labels, method="rr", epsilon=4.0, runs=runs, rng=np.random.default_rng(0),
                             noise_rng=np.random.default_rng(8))
    half_width = Z999 * result.std / math.sqrt(runs)
    assert abs(rr_debiased_bias(average_ranks(scores), labels, 4.0)) < half_width / 10
    assert abs(result.mean - result.exact_auc) <= half_width


def test_debiased_rr_has_the_predicted_second_order_bias_on_small_unbalanced_data() -> None:
    """At epsilon = 1 with 15 % positives the O(1/M) bias is visible; it matches rr_debiased_bias."""
    scores, labels = synthetic(2000, 0.15, seed=9)
    runs = 12000
    result = simulate_fedauc(scores, labels, method="rr", epsilon=1.0, runs=runs, rng=np.random.default_rng(0),
                             noise_rng=np.random.default_rng(10))
    half_width = Z999 * result.std / math.sqrt(runs)
    bias = rr_debiased_bias(average_ranks(scores), labels, 1.0)
    assert bias > half_width  # a real effect at this sample size
    assert abs(result.mean - (result.exact_auc + bias)) <= half_width


def test_randomized_response_flips_at_the_stated_rate() -> None:
    labels = np.zeros(200_000, dtype=np.int64)
    flipped = randomized_response(labels, 1.0, rng=np.random.default_rng(11))
    rho = flip_probability(1.0)
    assert abs(flipped.mean() - rho) <= Z999 * math.sqrt(rho * (1 - rho) / labels.size)


# --------------------------------------------------------------------------------------------------
# closed forms vs Monte Carlo

def test_eq7_matches_monte_carlo() -> None:
    """Eq. (7) is the variance of the flipped-label rank sum over accurate P N (App. I)."""
    scores, labels = synthetic(1000, 0.3, seed=12)
    result = simulate_fedauc(scores, labels, method="rr_noisy", epsilon=1.0, counts="exact", runs=6000,
                             rng=np.random.default_rng(0), noise_rng=np.random.default_rng(13))
    p = int(labels.sum())
    eq7 = math.sqrt(rr_variance(average_ranks(scores), p, labels.size - p, 1.0))
    assert result.paper_std == pytest.approx(eq7)
    std_within(result.std, eq7, result.estimates)


def test_eq8_matches_monte_carlo() -> None:
    scores, labels = synthetic(1000, 0.3, seed=14)
    for epsilon in (1.0, 4.0):
        result = simulate_fedauc(scores, labels, method="global_laplace", epsilon=epsilon, clients=30, layout="iid",
                                 counts="exact", runs=6000, rng=np.random.default_rng(0),
                                 noise_rng=np.random.default_rng(15))
        p = int(labels.sum())
        eq8 = math.sqrt(global_laplace_variance(30, labels.size, p, labels.size - p, epsilon))
        assert result.paper_std == pytest.approx(eq8)
        std_within(result.std, eq8, result.estimates)


def test_eq9_matches_monte_carlo_and_the_papers_one_row_per_client_form() -> None:
    scores, labels = synthetic(800, 0.3, seed=16, ties=False)
    p, k = int(labels.sum()), labels.size
    n = k - p
    for epsilon in (1.0, 4.0):
        result = simulate_fedauc(scores, labels, method="local_laplace", epsilon=epsilon, layout="one_per_client",
                                 counts="exact", runs=6000, rng=np.random.default_rng(0),
                                 noise_rng=np.random.default_rng(17))
        paper_form = k * (k - 1) * (2 * k - 1) / (3 * p**2 * n**2 * epsilon**2)  # eq. (9) as printed
        assert result.paper_std == pytest.approx(math.sqrt(paper_form), rel=1e-12)
        assert local_laplace_variance(np.arange(k), p, n, epsilon) == pytest.approx(paper_form, rel=1e-12)
        std_within(result.std, math.sqrt(paper_form), result.estimates)
        assert result.clients == k  # the tables' K = M rows (scenarios.papers.fedauc_tables record it from here)
    # GlobalLaplace / LocalLaplace at one row per client: sqrt(6 (M-1)/(2M-1)) -> sqrt(3)
    ratio = math.sqrt(global_laplace_variance(k, k, p, n, 1.0) / local_laplace_variance(np.arange(k), p, n, 1.0))
    assert ratio == pytest.approx(math.sqrt(6 * (k - 1) / (2 * k - 1)))
    assert abs(ratio - math.sqrt(3)) < 2e-3


@pytest.mark.parametrize(("method", "layout", "epsilon"), [
    ("rr", "iid", 2.0), ("local_laplace", "iid", 2.0), ("global_laplace", "non_iid", 4.0),
    ("adaptive_laplace", "iid", 2.0), ("adaptive_laplace", "non_iid", 2.0)])
def test_delta_method_std_of_the_deployed_estimators_matches_monte_carlo(method: str, layout: str,
                                                                          epsilon: float) -> None:
    scores, labels = synthetic(3000, 0.3, seed=18)
    result = simulate_fedauc(scores, labels, method=method, epsilon=epsilon, clients=30, layout=layout, runs=6000,
                             rng=np.random.default_rng(0), noise_rng=np.random.default_rng(19))
    assert result.undefined_runs == 0
    std_within(result.std, result.predicted_std, result.estimates)


def test_gaussian_form_matches_its_closed_form() -> None:
    scores, labels = synthetic(600, 0.3, seed=20)
    for method in ("local_gaussian", "adaptive_gaussian"):
        result = simulate_fedauc(scores, labels, method=method, epsilon=2.0, delta=1e-6, clients=6, layout="non_iid",
                                 runs=3000, rng=np.random.default_rng(0), noise_rng=np.random.default_rng(21))
        std_within(result.std, result.predicted_std, result.estimates, tolerance=0.10)


# --------------------------------------------------------------------------------------------------
# §5.3: orthogonal decomposition and adaptive allocation

def test_adaptive_fraction_minimises_the_papers_criterion() -> None:
    grid = np.linspace(1e-4, 1 - 1e-4, 20001)
    for a, b in [(10.0, 3.0), (1.0, 100.0), (250.0, 250.0), (7.0, 0.5)]:
        laplace = adaptive_count_fraction(a, b, mechanism="laplace")
        gaussian = adaptive_count_fraction(a, b, mechanism="gaussian")
        assert float(laplace) == pytest.approx(grid[np.argmin(a**2 / grid**2 + b**2 / (1 - grid) ** 2)], abs=1e-3)
        assert float(gaussian) == pytest.approx(grid[np.argmin(a**2 / grid + b**2 / (1 - grid))], abs=1e-3)
    assert float(adaptive_count_fraction(5.0, 0.0)) == 1.0  # r parallel to u: all budget on localP'


def _random_layout(kind: int, scores: np.ndarray, generator: np.random.Generator) -> np.ndarray:
    m = scores.size
    if kind < 2:
        k = int(generator.integers(1, m + 1))
        return client_layout(scores, clients=k, layout="iid" if kind == 0 else "non_iid", rng=generator)
    k = int(generator.integers(2, 300))
    cuts = np.zeros(m, dtype=np.int64)
    cuts[generator.choice(np.arange(1, m), k - 1, replace=False)] = 1
    blocks = np.cumsum(cuts)
    order = generator.permutation(m) if kind == 2 else np.argsort(scores, kind="stable")
    out = np.empty(m, dtype=np.int64)
    out[order] = blocks  # random sizes, random members (2) or contiguous in score (3)
    return out


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_adaptive_is_never_worse_than_alpha_half_on_random_layouts(mechanism: str) -> None:
    """Closed-form (delta-method) std of the AUC: adaptive beta vs naive alpha = 0.5, 160 random layouts."""
    scores, labels = synthetic(1500, 0.15, seed=23)
    generator = np.random.default_rng(24)
    delta = 1e-6 if mechanism == "gaussian" else 0.0
    worst = 0.0
    for trial in range(160):
        layout = _random_layout(trial % 4, scores, generator)
        epsilon = float(generator.choice([0.5, 1.0, 2.0, 4.0, 8.0]))
        common = dict(epsilon=epsilon, layout=layout, rng=generator, delta=delta)
        adaptive = predict_fedauc(scores, labels, method=f"adaptive_{mechanism}", **common).predicted_std
        naive = predict_fedauc(scores, labels, method=f"local_{mechanism}", sum_fraction=0.5, **common).predicted_std
        worst = max(worst, adaptive / naive)
    assert worst <= 1.0


def test_adaptive_heuristic_can_lose_on_a_crafted_layout() -> None:
    """The §5.3 heuristic minimises Var(localSum') and ignores that localP' also enters Pbar.

    A client with ranks 0..98 plus the top rank gets beta ~ 0.1, so its very noisy localP' moves eq. (1)
    by ``c`` (about M/2) per unit; there naive alpha = 0.5 wins, in closed form and in Monte Carlo.
    """
    m = 2000
    labels = (np.random.default_rng(25).random(m) < 0.5).astype(np.int64)
    scores = np.arange(m, dtype=np.float64)
    layout = np.ones(m, dtype=np.int64)
    layout[:99] = 0
    layout[m - 1] = 0
    results = {method: simulate_fedauc(scores, labels, method=method, epsilon=1.0, layout=layout, runs=3000,
                                       rng=np.random.default_rng(0), noise_rng=np.random.default_rng(26))
               for method in ("adaptive_laplace", "local_laplace")}
    assert results["adaptive_laplace"].predicted_std > 1.4 * results["local_laplace"].predicted_std
    assert results["adaptive_laplace"].std > 1.4 * results["local_laplace"].std


# --------------------------------------------------------------------------------------------------
# layouts and noise

def test_layouts() -> None:
    scores, _ = synthetic(1003, 0.3, seed=27)
    iid = client_layout(scores, clients=10, layout="iid", rng=np.random.default_rng(0))
    sizes = np.bincount(iid)
    assert sizes.size == 10 and sizes.min() >= 100 and sizes.max() <= 101
    assert np.array_equal(iid, client_layout(scores, clients=10, layout="iid", rng=np.random.default_rng(0)))
    non_iid = client_layout(scores, clients=10, layout="non_iid", rng=np.random.default_rng(0))
    highest = np.array([scores[non_iid == k].max() for k in range(10)])
    lowest = np.array([scores[non_iid == k].min() for k in range(10)])
    assert np.all(highest[:-1] <= lowest[1:])  # contiguous blocks of sorted scores (ties may straddle)
    assert np.bincount(non_iid).min() >= 100
    assert np.array_equal(client_layout(scores, clients=None, layout="one_per_client", rng=np.random.default_rng(0)),
                          np.arange(scores.size))


def test_per_client_discrete_laplace_has_the_calibrated_variance() -> None:
    log_alpha = np.array([-np.inf, -1.0, -0.1, -0.01])
    draws = discrete_laplace_noise(log_alpha, 100_000, np.random.default_rng(28))
    assert np.all(draws[:, 0] == 0)
    for column in range(1, 4):
        expected = discrete_laplace_variance(math.exp(log_alpha[column]))
        sample = draws[:, column].astype(np.float64)
        kurtosis = stats.kurtosis(sample, fisher=False)
        half_width = Z999 * math.sqrt((kurtosis - 1) / sample.size)  # relative, on the variance
        assert abs(sample.var() / expected - 1) <= half_width


def test_discrete_gaussian_sampler_is_exact_in_distribution() -> None:
    generator = np.random.default_rng(29)
    draws = sample_discrete_gaussian(0.7, 30_000, generator)
    support = np.arange(-6, 7)
    weights = np.exp(-support**2 / (2 * 0.7))
    weights /= weights.sum()
    observed = np.array([(draws == z).sum() for z in support])
    keep = weights * draws.size >= 5
    expected = weights[keep] / weights[keep].sum() * observed[keep].sum()
    assert stats.chisquare(observed[keep], expected).pvalue > 1e-3
    large = sample_discrete_gaussian(400.0, 20_000, generator).astype(np.float64)
    assert abs(large.mean()) <= Z999 * 20.0 / math.sqrt(large.size)
    assert abs(large.var() / discrete_gaussian_variance(400.0) - 1) <= Z999 * math.sqrt(2 / large.size)


# --------------------------------------------------------------------------------------------------
# validation

@pytest.mark.parametrize(("change", "error", "message"), [
    ({"epsilon": -1}, ValueError, "epsilon must be positive, got -1"),
    ({"epsilon": 0}, ValueError, "epsilon must be positive, got 0"),
    ({"method": "laplace"}, ValueError, "method must be one of"),
    ({"layout": "random"}, ValueError, "layout must be one of"),
    ({"clients": 0}, ValueError, "clients must be at least 1, got 0"),
    ({"clients": 10_000}, ValueError, "clients must be at most the number of samples"),
    ({"runs": 0}, ValueError, "runs must be at least 1, got 0"),
    ({"sum_fraction": 1.0}, ValueError, r"sum_fraction must lie in \(0, 1\), got 1.0"),
    ({"counts": "clean"}, ValueError, "counts must be one of"),
    ({"method": "local_gaussian"}, ValueError, r"delta must lie in \(0, 1\) for local_gaussian, got 0.0"),
    ({"delta": 1e-6}, ValueError, "delta must be 0 for local_laplace"),
    ({"delta": 1.5, "method": "local_gaussian"}, ValueError, r"delta must lie in \[0, 1\), got 1.5"),
    ({"method": "adaptive_laplace", "counts": "exact"}, ValueError, "counts must be 'noisy' for adaptive_laplace"),
    ({"rng": None}, TypeError, "rng must be a numpy.random.Generator, got None"),
    ({"epsilon": "1"}, TypeError, "epsilon must be a number"),
])
def test_simulate_validates_its_parameters(change: dict, error: type, message: str) -> None:
    scores, labels = synthetic(200, 0.3, seed=30)
    arguments = dict(method="local_laplace", epsilon=1.0, clients=10, layout="iid", runs=3,
                     rng=np.random.default_rng(0), noise_rng=np.random.default_rng(1))
    arguments.update(change)
    with pytest.raises(error, match=message):
        simulate_fedauc(scores, labels, **arguments)


def test_data_validation_messages() -> None:
    scores, labels = synthetic(50, 0.3, seed=31)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        simulate_fedauc(scores, labels * 2, method="rr", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="labels must contain both classes, got 0 positives of 50"):
        simulate_fedauc(scores, np.zeros(50), method="rr", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="labels must be one-dimensional of length 50"):
        simulate_fedauc(scores, labels[:10], method="rr", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="scores must be finite"):
        simulate_fedauc(np.full(50, np.nan), labels, method="rr", epsilon=1.0, rng=rng)
    with pytest.raises(ValueError, match="clients must equal the number of samples"):
        client_layout(scores, clients=3, layout="one_per_client", rng=rng)
    with pytest.raises(ValueError, match="ranks must be multiples of 1/2"):
        auc_from_ranks(np.arange(50) + 0.3, labels)
    with pytest.raises(ValueError, match="client_of must use every client index"):
        local_statistics(average_ranks(scores), labels, np.where(np.arange(50) < 25, 0, 2))
    with pytest.raises(ValueError, match="sigma2 must be a finite non-negative number, got -1"):
        sample_discrete_gaussian(-1, 3)


# --------------------------------------------------------------------------------------------------
# the scenario

def test_scenario_quick_mode_writes_csv_and_png(tmp_path: Path) -> None:
    from scenarios.papers.fedauc_tables import main

    assert main(["--quick", "--seed", "3", "--results-dir", str(tmp_path)]) == 0
    with open(tmp_path / "fedauc_std.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert {row["method"] for row in rows} == {"rr", "global_laplace", "local_laplace", "adaptive_laplace"}
    assert all(float(row["std"]) >= 0 and float(row["predicted_std"]) > 0 for row in rows)
    with open(tmp_path / "fedauc_rr_debias.csv", newline="") as handle:
        rr_rows = list(csv.DictReader(handle))
    no_privacy = [row for row in rr_rows if float(row["epsilon"]) == math.inf]
    assert no_privacy and all(float(row["mean"]) == float(row["exact_auc"]) for row in no_privacy)
    assert (tmp_path / "fedauc_std.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_scenario_rejects_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.papers.fedauc_tables import main

    assert main(["--runs", "1", "--results-dir", str(tmp_path)]) == 2
    assert "--runs must be at least 2, got 1" in capsys.readouterr().err
