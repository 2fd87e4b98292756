"""``--pairs auto`` weighs accuracy as well as time (issue 22, item 6): a complete path when it is cheap in
absolute terms, or when the sampled run's sampling error would exceed its noise; the plan line says why."""
from __future__ import annotations

from dp.umpc.complete import plan_for, sampled_accuracy
from dp.umpc.planner import AUTO_ACCURACY_SECONDS, AUTO_CHEAP_SECONDS, SampledAccuracy, plan_path
from dp.umpc.protocol import UStatQuery
from secure.columns import ColumnSpec
from secure.kernels import get_kernel

KENDALL = get_kernel("kendall")


def _specs(bits: int) -> tuple[ColumnSpec, ColumnSpec]:
    return ColumnSpec("a", 0, 100, bits), ColumnSpec("b", 0, 100, bits)


def test_the_issue_case_900_rows_takes_the_complete_path_and_says_why() -> None:
    """900 rows, Kendall at 2 fractional bits: the 401 x 401 histogram is modelled slower than 2n = 1800 sampled
    tuples but far under 30 s, and those tuples' sampling error (about 0.024) exceeds their noise (about 0.006)."""
    query = UStatQuery(kernel=KENDALL, specs=_specs(2), epsilon=1.0, tuples=1800, noise="mpc")
    plan = plan_for(query, rows=900, parties=3, pairs="auto")
    assert plan.costs["histogram"].seconds > plan.costs["tuples"].seconds  # the old rule sampled here
    assert plan.path == "histogram"
    assert f"under {AUTO_CHEAP_SECONDS:g} s" in plan.reason and "sampling error <= 0.024" in plan.reason
    accuracy = sampled_accuracy(query, 900, 3)
    assert accuracy is not None and accuracy.sampling_dominates
    # BalancedSamp's bound for Kendall (range 2, sd <= 1): about sqrt(1/|E|) = 0.024; noise sqrt(2) e^-... / |E|
    assert 0.015 < accuracy.sampling_error < 0.03 and accuracy.noise_std < 0.01


def test_a_slow_complete_path_only_when_sampling_would_dominate() -> None:
    """At 5 fractional bits the 3201 x 3201 histogram is modelled at about 90 s: between the two limits."""
    specs = _specs(5)
    cost = plan_path(KENDALL, specs, rows=900, parties=3, tuples=1800, sample_if_cheaper=True)
    assert AUTO_CHEAP_SECONDS < cost.costs["histogram"].seconds <= AUTO_ACCURACY_SECONDS
    assert cost.path == "tuples"  # time alone: sampled
    dominated = plan_path(KENDALL, specs, rows=900, parties=3, tuples=1800, sample_if_cheaper=True,
                          accuracy=SampledAccuracy(sampling_error=0.024, noise_std=0.006))
    assert dominated.path == "histogram" and "larger sampling error than noise" in dominated.reason
    noisy = plan_path(KENDALL, specs, rows=900, parties=3, tuples=1800, sample_if_cheaper=True,
                      accuracy=SampledAccuracy(sampling_error=0.024, noise_std=0.3))
    assert noisy.path == "tuples" and "the noise dominates" in noisy.reason


def test_under_the_cheap_limit_the_complete_path_wins_whatever_the_noise() -> None:
    specs = _specs(4)  # 1601 x 1601 cells: about 22 s modelled
    plan = plan_path(KENDALL, specs, rows=900, parties=3, tuples=1800, sample_if_cheaper=True,
                     accuracy=SampledAccuracy(sampling_error=0.001, noise_std=0.3))
    assert plan.costs["histogram"].seconds <= AUTO_CHEAP_SECONDS and plan.path == "histogram"


def test_beyond_the_accuracy_limit_sampling_stays_and_names_pairs_all() -> None:
    """Gini of 50000 rows with the histogram ruled out: one secure sort, modelled at about 800 s."""
    gini = get_kernel("gini", precision=16)
    plan = plan_path(gini, (ColumnSpec("x", 0, 1, 16),), rows=50000, parties=3, tuples=100000, sample_if_cheaper=True,
                     unavailable={"histogram": "ruled out by the test"},
                     accuracy=SampledAccuracy(sampling_error=0.024, noise_std=0.006))
    assert plan.costs["sort"].seconds > AUTO_ACCURACY_SECONDS
    assert plan.path == "tuples" and "--pairs all computes the complete statistic" in plan.reason


def test_with_no_complete_path_the_line_says_so() -> None:
    plan = plan_path(KENDALL, _specs(6), rows=900, parties=3, tuples=1800, sample_if_cheaper=True)
    assert plan.path == "tuples" and "no complete path can run here" in plan.reason  # the grid is over the memory limit
