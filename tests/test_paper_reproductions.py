"""Issue 16 items 4 and 5: GhaziSM's simulated MSE (Sinh & Ramon Fig. 1) and Bell et al.'s Fig. 3 on a
synthetic stand-in with the paper's class sizes.

Statistical checks use fixed seeds and thresholds derived from the sampling distribution of the
Monte Carlo mean and variance (z = 4 standard errors), never tuned.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dp.baselines import ghazi_shuffled
from dp.bell.quantize import Quantizer, gini_kernel
from scenarios.papers import bell_auc_domain, umpc_vs_baselines

Z = 4.0


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _setting(n: int, bins: int, seed: int) -> tuple[np.ndarray, Quantizer, ghazi_shuffled.ShuffledFactorization]:
    values = np.random.default_rng(seed).uniform(0.0, 1.0, size=n)
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=bins)
    return values, quantizer, ghazi_shuffled.prepare(gini_kernel, quantizer, kind="average")


def test_ghazism_simulated_mean_and_variance_match_closed_form() -> None:
    """simulate(): mean within 4 s.e. of E[U_hat], sample variance within 4 s.e. of the exact variance."""
    values, quantizer, params = _setting(300, 32, seed=7)
    runs = 4000
    estimates = ghazi_shuffled.simulate(values, gini_kernel, quantizer=quantizer, epsilon=1.0, runs=runs,
                                        rng=np.random.default_rng(11))
    bins = quantizer.quantize(values)
    mean = ghazi_shuffled.expected_estimate(bins, params)
    var = ghazi_shuffled.variance(bins, params, epsilon=1.0)
    assert abs(estimates.mean() - mean) < Z * math.sqrt(var / runs)
    # the estimate is a sum of (nearly) Gaussian linear terms and a small bilinear term: the sample
    # variance's s.e. is about var * sqrt(2 / runs); allow the kurtosis of the Laplace terms (x 2)
    assert abs(estimates.var(ddof=1) - var) < Z * var * math.sqrt(2.0 * 2.0 / runs)


def test_ghazism_protocol_steps_agree_with_simulation() -> None:
    """run_protocol (per-party Polya shares, 3 shufflers) has the same mean and variance as simulate()."""
    values, quantizer, params = _setting(60, 16, seed=3)
    bins = quantizer.quantize(values)
    runs = 400
    generator = np.random.default_rng(5)
    explicit = np.array([ghazi_shuffled.run_protocol(bins, params, epsilon=1.0, rng=generator) for _ in range(runs)])
    mean = ghazi_shuffled.expected_estimate(bins, params)
    var = ghazi_shuffled.variance(bins, params, epsilon=1.0)
    assert abs(explicit.mean() - mean) < Z * math.sqrt(var / runs)
    assert abs(explicit.var(ddof=1) - var) < Z * var * math.sqrt(2.0 * 2.0 / runs)


def test_shuffled_sum_is_exact() -> None:
    vectors = np.random.default_rng(1).integers(-10**6, 10**6, size=(50, 8))
    total = ghazi_shuffled.shuffled_sum(vectors, shufflers=4, modulus=1 << 40, rng=np.random.default_rng(2))
    assert np.array_equal(total, vectors.sum(axis=0))


def test_ghazism_noise_is_n_times_below_ghazi() -> None:
    """Central noise on the sums: GhaziSM's variance is at least n/4 times below Ghazi's local noise."""
    from dp.baselines import ghazi
    from dp.bell.quantize import kernel_matrix

    values, quantizer, params = _setting(400, 32, seed=9)
    bins = quantizer.quantize(values)
    local = ghazi.variance(bins, ghazi.factorize(kernel_matrix(gini_kernel, quantizer, kind="average")), epsilon=1.0)
    assert ghazi_shuffled.variance(bins, params, epsilon=1.0) * 400 / 4 < local


def test_ghazism_refuses_a_non_constant_diagonal() -> None:
    quantizer = Quantizer.interval(lower=0.0, upper=1.0, bins=8)
    with pytest.raises(ValueError, match="constant diagonal"):
        ghazi_shuffled.prepare(lambda x, y: x * y, quantizer, kind="midpoint")


def test_baselines_quick_simulates_ghazism(tmp_path: Path) -> None:
    """The quick Gini comparison has a GhaziSM row per n with a simulated MSE within 4 s.e. of its exact MSE."""
    assert umpc_vs_baselines.main(["--quick", "--seed", "5", "--results-dir", str(tmp_path)]) == 0
    header, rows = _read(tmp_path / "umpc_vs_baselines.csv")
    assert tuple(header) == umpc_vs_baselines.CSV_COLUMNS
    shuffled = [row for row in rows if row["method"] == "GhaziSM"]
    assert [int(row["n"]) for row in shuffled] == [200, 400]
    for row in shuffled:
        assert int(row["runs"]) == 30
        mse, se, exact = float(row["mse_mean"]), float(row["mse_se"]), float(row["exact_mse"])
        assert abs(mse - exact) < Z * se
        ghazi_row = next(r for r in rows if r["method"] == "Ghazi" and r["n"] == row["n"])
        assert float(row["exact_mse"]) < float(ghazi_row["exact_mse"])
    assert (tmp_path / "umpc_vs_baselines.png").stat().st_size > 0


def test_bell_synthetic_has_the_paper_class_sizes(tmp_path: Path) -> None:
    """--dataset synthetic: 661 positives, 5262 negatives; the quick grid's rows; bias and privacy parts."""
    assert bell_auc_domain.main(["--quick", "--dataset", "synthetic", "--seed", "3",
                                 "--results-dir", str(tmp_path)]) == 0
    header, rows = _read(tmp_path / "bell_auc_domain.csv")
    assert header == list(bell_auc_domain.CSV_COLUMNS)
    assert len(rows) == len(bell_auc_domain.QUICK_ALPHAS) * len(bell_auc_domain.QUICK_EPSILONS)
    for row in rows:
        assert row["dataset"] == "synthetic"
        assert (int(row["positives"]), int(row["negatives"])) == (661, 5262)
        assert float(row["privacy_squared_error_mean"]) >= 0
        assert bell_auc_domain.regime({k: float(row[k]) for k in
                                       ("quantized_auc", "exact_auc", "privacy_squared_error_mean")}) in (
            "privacy", "quantization")
    assert (tmp_path / "bell_auc_domain.png").stat().st_size > 0


def test_bell_synthetic_scores_follow_framingham_shape() -> None:
    """The binormal logits have the fitted class means within 4 s.e. (s.e. = sd / sqrt(count))."""
    scores, labels = bell_auc_domain.synthetic_scores(3, positives=4000, negatives=4000)
    framing, framing_labels = bell_auc_domain.load_scores(3)
    for label in (0, 1):
        logit = np.log(scores[labels == label] / (1 - scores[labels == label]))
        target = np.log(framing / (1 - framing))[framing_labels == label]
        assert abs(logit.mean() - target.mean()) < Z * target.std() / math.sqrt(4000)


def test_bell_synthetic_rejects_bad_class_sizes(tmp_path: Path) -> None:
    assert bell_auc_domain.main(["--dataset", "synthetic", "--positives", "0",
                                 "--results-dir", str(tmp_path)]) == 2
