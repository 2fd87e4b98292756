"""Honest output of Pi_U-MPC: the tuple-sampling error bound holds, and the record's seed gives back the tuples.

Sinh & Ramon App. D.1.2: the release misses the complete U-statistic by ``E_inc + E_DP``; the record states
``noise_std`` (E_DP), ``sampling_error_bound`` (a data-independent bound on sqrt(E_inc)), ``error_bound`` and
``seed``.  Thresholds are derived (a one-sided 4-standard-error margin on a Monte Carlo mean), never tuned.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from mpyc.runtime import mpc

from dp.sampling import all_tuples, balanced_tuples, uniform_tuples
from dp.umpc.protocol import (UStatQuery, plans_for, prepare_rows, run_secure, sample_for, sampling_error_bound,
                              simulate)
from dp.umpc.sampler_variance import (bernoulli_inc, design_factor, incompleteness_variance_bound,
                                      monte_carlo_inc, pair_moments, uniform_inc)
from secure.intake import ColumnSpec
from secure.kernels import get_kernel

#: one-sided margin in standard errors of a Monte Carlo mean (P(N(0,1) > 4) = 3e-5)
MARGIN_SE = 4.0


def _duplicate_query(sampling: str, tuples: int) -> UStatQuery:
    return UStatQuery(kernel=get_kernel("duplicate"), specs=(ColumnSpec("c", 0, 1, 0),), epsilon=1.0,
                      tuples=tuples, sampling=sampling)


@pytest.mark.parametrize("sampling", ["balanced", "uniform", "bernoulli"])
def test_sampling_error_bound_holds_over_seeds_on_a_near_worst_case(sampling: str) -> None:
    """Two equal categories: ``Var f`` is almost ``range^2 / 4``, so the bound is nearly tight (a wrong
    factor would show); the noise is fixed at 0, and each seed draws new tuples."""
    rows = 60
    values = (np.arange(rows) % 2).astype(float).reshape(-1, 1)
    query = _duplicate_query(sampling, 2 * rows)
    complete = float(np.mean(values[all_tuples(rows, 2)[:, 0], 0] == values[all_tuples(rows, 2)[:, 1], 0]))
    squares, bounds = [], []
    for seed in range(400):
        sim = simulate(query, [values], threshold=0, seed=seed, noise=np.zeros((1, 1, 1), dtype=np.int64))
        squares.append((float(sim.estimates[0]) - complete) ** 2)
        bounds.append(sampling_error_bound(query, rows, sim.tuples, list(sim.sums)) ** 2)
    squares_array = np.asarray(squares)
    mean, error = float(squares_array.mean()), float(squares_array.std(ddof=1) / math.sqrt(squares_array.size))
    bound = float(np.mean(bounds))  # E_inc = E_E[Var_pi(E)] <= E_E[bound(E)] (design_factor); constant otherwise
    assert mean - MARGIN_SE * error <= bound
    # and not vacuous: here Var f = 0.2542 of the 0.25 allowed, so E_inc is close to the bound
    assert mean + MARGIN_SE * error >= 0.5 * bound


def test_bound_exceeds_the_exact_error_on_the_embedded_data() -> None:
    """Kendall's tau of sysBP, diaBP (the demo, n = 4238, |E| = 2n): exact E_inc (uniform, Bernoulli:
    :mod:`dp.umpc.sampler_variance`) and Monte Carlo E_inc (BalancedSamp) lie below the bound."""
    from scenarios.kit.datasets import load_embedded

    table = load_embedded("framingham")
    header = list(table.header)
    rows = np.array([[r[header.index("sysBP")], r[header.index("diaBP")]] for r in table.rows], dtype=float)
    rows = rows[~np.isnan(rows).any(axis=1)]
    n, m = rows.shape[0], 2 * rows.shape[0]

    def kendall(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.sign(a[:, 0] - b[:, 0]) * np.sign(a[:, 1] - b[:, 1])

    moments = pair_moments(rows, kendall)
    uniform_bound = incompleteness_variance_bound("uniform", rows=n, degree=2, tuples=m, value_range=2.0)
    assert uniform_inc(moments, m) <= uniform_bound
    assert bernoulli_inc(moments, m) <= incompleteness_variance_bound("bernoulli", rows=n, degree=2, tuples=m,
                                                                       value_range=2.0)
    generator = np.random.default_rng(3)
    design = balanced_tuples(n, m, 2, generator)
    balanced_bound = incompleteness_variance_bound("balanced", rows=n, degree=2, tuples=m, value_range=2.0,
                                                   design=design)

    def statistic(tuples: np.ndarray) -> float:
        return float(np.mean(kendall(rows[tuples[:, 0]], rows[tuples[:, 1]])))

    mean, error = monte_carlo_inc(statistic, lambda rng: balanced_tuples(n, m, 2, rng), moments.mean,
                                  generator, 60)
    assert mean - MARGIN_SE * error <= balanced_bound


def test_design_factor_of_uniform_designs_is_at_least_claim_d1() -> None:
    """The design bound maximises over the data, so over uniform designs it averages at least Claim D.1's
    exact factor ``(N - m) / ((N - 1) m)`` (which it equals in mean for the worst data)."""
    rows, m = 40, 80
    population = rows * (rows - 1) // 2
    generator = np.random.default_rng(8)
    factors = [design_factor(uniform_tuples(rows, m, 2, generator), rows) for _ in range(200)]
    assert float(np.mean(factors)) >= (population - m) / ((population - 1) * m)
    assert design_factor(all_tuples(rows, 2), rows) == pytest.approx(0.0, abs=1e-12)


def test_all_tuples_have_no_sampling_error() -> None:
    query = UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("x", 0, 10, 0), ColumnSpec("y", 0, 10, 0)),
                       epsilon=1.0)
    assert sampling_error_bound(query, 12, all_tuples(12, 2), [0.0]) == 0.0


def test_record_seed_reproduces_the_sampled_tuples() -> None:
    """The joint seed in the record: ``sample_for(query, n, seed)`` and the plaintext kernel give the released
    estimate back (epsilon = 1e9: the noise is within its slack, i.e. the fixed-point rounding)."""
    generator = np.random.default_rng(21)
    values = np.column_stack([generator.uniform(0, 10, 50), generator.uniform(0, 10, 50)])
    query = UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("x", 0, 10, 4), ColumnSpec("y", 0, 10, 4)),
                       epsilon=1e9, tuples=100)

    async def release() -> object:
        return await run_secure(query, prepare_rows(query, values))  # seed=None: a joint seed is drawn

    result = mpc.run(release())
    record = result.record()
    assert isinstance(record["seed"], int)
    tuples = sample_for(query, 50, record["seed"])
    fixed = prepare_rows(query, values).integers
    recomputed = float(np.sum(query.kernel.plaintext([fixed[tuples[:, 0]], fixed[tuples[:, 1]]])[0])) / len(tuples)
    plan = plans_for(query, tuples, 50, 1, 0)[0]
    assert abs(record["estimate"] - recomputed) <= plan.slack / len(tuples)
    assert record["noise_std"] == result.estimate_std
    assert record["error_bound"] == pytest.approx(math.hypot(record["noise_std"], record["sampling_error_bound"]))
    assert record["sampling_error_bound"] > 0 and "balanced" in record["uncertainty_covers"]
