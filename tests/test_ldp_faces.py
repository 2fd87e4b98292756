"""The local-model (dp.bell) and FedAUC (dp.fedauc) faces: simulate and release agree with exact where the noise
vanishes, the FedAUC_RR estimator is unbiased, a release records no non-private value, and Query refuses a bad
parameter with a plain message."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import dp.bell
import dp.fedauc
from tests.statistics_checks import assert_mean_near


def _scored(rows: int = 300, seed: int = 4) -> np.ndarray:
    generator = np.random.default_rng(seed)
    labels = generator.integers(0, 2, rows)
    return np.column_stack([np.round(generator.normal(labels, 1.0), 2), labels])


@pytest.mark.parametrize("query, data", [
    (dp.bell.Query(statistic="gini", epsilon=1e9, bins=8), np.random.default_rng(1).random(300)),
    (dp.bell.Query(statistic="renyi2", epsilon=1e9, levels=(0, 1, 2, 3)),
     np.random.default_rng(2).integers(0, 4, 300).astype(float)),
])
def test_bell_simulate_and_release_are_exact_at_huge_epsilon(query: dp.bell.Query, data: np.ndarray) -> None:
    """k-RR keeps the true bin with probability 1 - beta, beta = k / (e^1e9 + k - 1) = 0 in floating point: the
    reports are the quantized values, the debiasing divides by (1 - beta)^2 = 1, so the estimate is the quantized
    U-statistic (exact) up to rounding."""
    expected = dp.bell.exact(query, data)
    simulated = dp.bell.simulate(query, data, seed=0, noise_rng=np.random.default_rng(3))
    assert simulated.estimate == pytest.approx(expected, rel=1e-12)
    assert dp.bell.release(query, data).estimate == pytest.approx(expected, rel=1e-12)
    assert simulated.record()["n"] == 300 and "1e+09-LDP per user" in simulated.table()


def test_bell_gini_is_noisy_at_a_small_epsilon() -> None:
    """At epsilon 0.5 with k = 8 about 84 % of reports are uniform: the estimate moves (fails if noise were dropped)."""
    data = np.random.default_rng(1).random(300)
    query = dp.bell.Query(statistic="gini", epsilon=0.5, bins=8)
    noisy = dp.bell.simulate(query, data, seed=0, noise_rng=np.random.default_rng(5))
    assert noisy.estimate != dp.bell.exact(query, data)


@pytest.mark.parametrize("method", ["rr", "global_laplace", "local_laplace", "adaptive_gaussian"])
def test_fedauc_simulate_and_release_are_exact_without_noise(method: Any) -> None:
    """epsilon = inf draws no noise (flip probability 0, noise scale 0): the server's AUC is eq. (1) exactly."""
    rows = _scored()
    query = dp.fedauc.Query(method=method, epsilon=float("inf"), clients=10)
    expected = dp.fedauc.exact(query, rows)
    assert dp.fedauc.simulate(query, rows, seed=1).estimate == pytest.approx(expected, abs=1e-12)
    assert dp.fedauc.release(query, rows).estimate == pytest.approx(expected, abs=1e-12)


def test_fedauc_rr_is_unbiased() -> None:
    """FedAUC_RR with accurate counts is exactly unbiased (eq. 3-4, docs/fedauc.md): the mean of 4000 runs at
    epsilon 1 lies within the CLT bound (Z999 s / sqrt(4000)) of the exact AUC."""
    rows = _scored()
    query = dp.fedauc.Query(method="rr", epsilon=1.0, counts="exact")
    simulated = dp.fedauc.simulate(query, rows, seed=1, runs=4000, noise_rng=np.random.default_rng(9))
    assert simulated.simulation is not None and simulated.simulation.std > 0
    assert_mean_near(simulated.simulation.estimates, dp.fedauc.exact(query, rows))


def test_a_fedauc_release_records_no_value_computed_from_the_labels_in_the_clear() -> None:
    rows = _scored()
    query = dp.fedauc.Query(method="global_laplace", epsilon=1.0, clients=10)
    record = dp.fedauc.release(query, rows).record()
    assert {"exact_auc", "predicted_std", "mean", "std"}.isdisjoint(record) and record["samples"] == 300
    assert "exact_auc" in dp.fedauc.simulate(query, rows, seed=1).record()


@pytest.mark.parametrize("make, message", [
    (lambda: dp.bell.Query(statistic="gini", epsilon=-1), "epsilon must be positive, got -1"),
    (lambda: dp.bell.Query(statistic="kendall", epsilon=1),  # type: ignore[arg-type]
     "statistic must be one of gini, renyi2, auc, got 'kendall'"),
    (lambda: dp.bell.Query(statistic="renyi2", epsilon=1), "levels must not be empty"),
    (lambda: dp.bell.Query(statistic="auc", epsilon=1, domain_size=100), "domain_size must be a power of two"),
    (lambda: dp.fedauc.Query(method="rr", epsilon=-1), "epsilon must be positive, got -1"),
    (lambda: dp.fedauc.Query(method="laplace", epsilon=1),  # type: ignore[arg-type]
     "method must be one of rr, rr_noisy,"),
    (lambda: dp.fedauc.Query(method="global_laplace", epsilon=1, delta=0.1),
     "delta must be 0 for global_laplace (pure epsilon-DP), got 0.1"),
    (lambda: dp.fedauc.Query(method="rr", epsilon=1, layout="random"),  # type: ignore[arg-type]
     "layout must be one of iid, non_iid, one_per_client, got 'random'"),
])
def test_the_queries_refuse_a_bad_parameter_with_a_plain_message(make: Any, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        make()
    assert message in str(raised.value)
    with pytest.raises(TypeError):
        dp.fedauc.Query("rr", 1.0)  # type: ignore[misc]  # keyword-only
