"""Pi_U-MPC: secure and simulated paths agree; the noise has the variance we derive; validation."""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc
from scipy import stats

from conftest import ROOT, free_base_port, run_command, small_table
from dp.calibration import binomial_trials
from dp.sampling import max_degree
from dp.umpc.protocol import UStatQuery, plan_noise, prepare_rows, run_secure, simulate
from secure.intake import ColumnSpec
from secure.kernels import KernelOutput, get_kernel

KENDALL = UStatQuery(kernel=get_kernel("kendall"),
                     specs=(ColumnSpec("sysBP", 80, 300, 8), ColumnSpec("diaBP", 40, 160, 8)),
                     epsilon=1.0, tuples=80)
AUC = UStatQuery(kernel=get_kernel("auc"),
                 specs=(ColumnSpec("score", 0, 1, 8), ColumnSpec("TenYearCHD", 0, 1, 0, (0, 1))),
                 epsilon=1.0, tuples=60)


def _columns(names: list[str]) -> np.ndarray:
    header, values = small_table()
    return values[:, [header.index(c) for c in names]]


def _split(values: np.ndarray, parties: int) -> list[np.ndarray]:
    """Party i keeps rows i, i+m, ... (the --data convention)."""
    return [values[i::parties] for i in range(parties)]


def test_secure_path_equals_simulated_path_with_fixed_noise_in_process() -> None:
    values = _columns(["sysBP", "diaBP"])
    fixed_draws = [123]

    async def secure() -> object:
        return await run_secure(KENDALL, prepare_rows(KENDALL, values), seed=5,
                                noise_source=lambda plan, index: fixed_draws[index])

    release = mpc.run(secure())
    simulated = simulate(KENDALL, [values], threshold=0, seed=5, noise=np.array([[[123]]]))
    assert release.noisy_sums == [int(simulated.sums[0]) + 123]
    assert release.estimate == simulated.estimates[0]
    assert release.max_degree == max_degree(simulated.tuples, 40)


@pytest.mark.multiparty
@pytest.mark.parametrize("stat, columns, domains", [
    ("kendall", "sysBP,diaBP", "80:300:8,40:160:8"),
    ("auc", "score,TenYearCHD", "0:1:8,0:1:0"),
])
def test_three_party_secure_path_equals_simulated_path_with_fixed_noise(
        stat: str, columns: str, domains: str, small_csv: Path) -> None:
    program = ROOT / "tests" / "programs" / "fixed_noise_release.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", stat, str(small_csv), "9", columns, domains])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    query = KENDALL if stat == "kendall" else AUC
    query = UStatQuery(kernel=query.kernel, specs=query.specs, epsilon=1.0, tuples=60)
    outputs = len(query.outputs)
    draws = np.array([[[3 * (i + 1) - 5 + 7 * j for i in range(3)] for j in range(outputs)]])
    simulated = simulate(query, _split(_columns(columns.split(",")), 3), threshold=1, seed=9, noise=draws)
    assert record["noisy_sums"] == [int(s) for s in simulated.sums + draws[0].sum(axis=1)]
    assert record["estimate"] == pytest.approx(float(simulated.estimates[0]), abs=1e-15)
    assert record["threshold"] == 1 and record["parties"] == 3


def _noise_cumulants(query: UStatQuery, plan) -> tuple[float, float]:
    """Second and fourth cumulants of the total noise (sum of m Polya differences of shape 1/(m-t))."""
    a, r, m = plan.alpha, plan.shape, plan.parties
    kappa2 = 2 * m * r * a / (1 - a) ** 2
    kappa4 = 2 * m * r * a * (1 + 4 * a + a * a) / (1 - a) ** 4
    return kappa2, kappa4


@pytest.mark.parametrize("parties, threshold", [(3, 1), (5, 2), (1, 0)])
def test_spread_of_estimate_minus_partial_ustatistic_matches_derived_noise_variance(parties: int, threshold: int) -> None:
    """Var(estimate - U_E) = m/(m-t) * 2 alpha/(1-alpha)^2 / (|E| scale)^2, within a 99.9 % interval.

    The interval comes from the distribution: the sample variance of N draws has relative standard
    error sqrt((kappa4/kappa2^2 + 2)/N); we also require that interval to be narrower than 10 %.
    """
    runs = 20000
    values = _columns(["sysBP", "diaBP"])
    sim = simulate(KENDALL, _split(values, parties), threshold=threshold, seed=3, runs=runs,
                   noise_rng=np.random.default_rng(2024 + parties))
    errors = sim.estimates - sim.exact_on_tuples
    plan = sim.plans[0]
    scale = len(sim.tuples) * KENDALL.outputs[0].scale
    derived = plan.variance / scale ** 2
    assert plan.variance == pytest.approx(parties / (parties - threshold) * 2 * plan.alpha / (1 - plan.alpha) ** 2)
    kappa2, kappa4 = _noise_cumulants(KENDALL, plan)
    assert kappa2 == pytest.approx(plan.variance)
    relative_se = math.sqrt((kappa4 / kappa2 ** 2 + 2) / runs)
    z = stats.norm.ppf(0.9995)
    assert z * relative_se < 0.10
    observed = float(np.var(errors, ddof=1))
    assert abs(observed / derived - 1) < z * relative_se
    assert abs(float(np.mean(errors))) < z * math.sqrt(derived / runs)


def test_binomial_noise_spread_matches_its_variance() -> None:
    runs = 4000
    values = _columns(["sysBP", "diaBP"])
    query = UStatQuery(kernel=KENDALL.kernel, specs=KENDALL.specs, epsilon=1.0, delta=1e-6, tuples=80)
    sim = simulate(query, _split(values, 3), threshold=1, seed=3, runs=runs, noise_rng=np.random.default_rng(8))
    plan = sim.plans[0]
    assert plan.mechanism == "binomial"
    assert 2 * plan.party_trials >= binomial_trials(1.0, 1e-6, plan.sensitivity)  # honest parties suffice
    derived = plan.variance / len(sim.tuples) ** 2
    total_trials = 3 * plan.party_trials
    relative_se = math.sqrt((-2 / total_trials + 2) / runs)  # kappa4/kappa2^2 of Bin(N, 1/2) is -2/N
    observed = float(np.var(sim.estimates - sim.exact_on_tuples, ddof=1))
    assert abs(observed / derived - 1) < stats.norm.ppf(0.9995) * relative_se


def test_sensitivity_is_max_degree_times_kernel_range() -> None:
    values = _columns(["sysBP", "diaBP"])
    sim = simulate(KENDALL, [values], threshold=0, seed=1, noise=np.zeros((1, 1, 1)))
    degree = max_degree(sim.tuples, 40)
    assert degree == 4  # BalancedSamp: 2 * 80 / 40 tuples per row, all equal
    assert sim.plans[0].sensitivity == degree * 2
    assert sim.plans[0].alpha == pytest.approx(math.exp(-1.0 / (degree * 2)))


def test_ratio_statistics_split_the_budget() -> None:
    sim = simulate(AUC, [_columns(["score", "TenYearCHD"])], threshold=0, seed=1, noise=np.zeros((1, 2, 1)))
    assert [plan.epsilon for plan in sim.plans] == [0.5, 0.5]
    assert [plan.sensitivity for plan in sim.plans] == [2 * max_degree(sim.tuples, 40), max_degree(sim.tuples, 40)]


def test_coalition_calibration_shape_and_variance_factor() -> None:
    output = KernelOutput("x", 1, -1, 1)
    alone = plan_noise(output, max_degree=4, epsilon=1.0, delta=0.0, parties=1, threshold=0)
    three = plan_noise(output, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1)
    five = plan_noise(output, max_degree=4, epsilon=1.0, delta=0.0, parties=5, threshold=2)
    assert (three.shape, five.shape) == (0.5, 1 / 3)
    assert three.variance == pytest.approx(1.5 * alone.variance)
    assert five.variance == pytest.approx(5 / 3 * alone.variance)


@pytest.mark.parametrize("kwargs, message", [
    (dict(epsilon=0.0), "epsilon must be positive, got 0.0"),
    (dict(epsilon=float("inf")), "epsilon must be finite"),
    (dict(epsilon=float("nan")), "epsilon must be finite"),
    (dict(delta=1.0), r"delta must lie in \[0, 1\), got 1.0"),
    (dict(delta=-0.1), r"delta must lie in \[0, 1\)"),
    (dict(tuples=0), "number of tuples .* must be at least 1, got 0"),
    (dict(sampling="stratified"), "unknown sampling 'stratified'"),
    (dict(clipping="maybe"), "unknown clipping 'maybe'"),
])
def test_query_parameters_are_validated(kwargs: dict, message: str) -> None:
    arguments = dict(kernel=KENDALL.kernel, specs=KENDALL.specs, epsilon=1.0)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        UStatQuery(**arguments)


def test_too_few_rows_and_too_many_tuples_are_rejected() -> None:
    values = _columns(["sysBP", "diaBP"])
    with pytest.raises(ValueError, match="need at least 2 rows"):
        simulate(KENDALL, [values[:1]], threshold=0, seed=1)
    query = UStatQuery(kernel=KENDALL.kernel, specs=KENDALL.specs, epsilon=1.0, tuples=781)
    with pytest.raises(ValueError, match=r"exceeds the C\(40, 2\) = 780"):
        simulate(query, [values], threshold=0, seed=1)


FINE_KENDALL = UStatQuery(kernel=get_kernel("kendall"),
                          specs=(ColumnSpec("sysBP", 80, 300, 24), ColumnSpec("diaBP", 40, 160, 24)),
                          epsilon=1.0, tuples=80)


def test_sampled_path_derives_its_bit_length_without_l() -> None:
    """G2: 24 fractional bits on sysBP's domain need more than MPyC's default 32 bits; without -L the sampled
    path derives the length (before: "need 34-bit secure integers, got -L 32; give -L 34")."""
    from dp.umpc.protocol import sampled_bit_length

    needed = sampled_bit_length(FINE_KENDALL, 40, 1, 0)
    comparison = FINE_KENDALL.kernel.comparison_bits(FINE_KENDALL.widths)
    assert needed >= comparison > 32
    values = _columns(["sysBP", "diaBP"])
    release = mpc.run(run_secure(FINE_KENDALL, prepare_rows(FINE_KENDALL, values), seed=5,
                                 noise_source=lambda plan, index: 0))
    simulated = simulate(FINE_KENDALL, [values], threshold=0, seed=5, noise=np.array([[[0]]]))
    assert release.noisy_sums == [int(simulated.sums[0])]


def test_sampled_bit_length_holds_the_largest_noisy_sum() -> None:
    """The derived length holds |E| times the largest kernel output plus the noise's tail bound."""
    from dp.umpc.protocol import sampled_bit_length

    gini = UStatQuery(kernel=get_kernel("gini", precision=24), specs=(ColumnSpec("x", 0, 300, 24),), epsilon=1.0, tuples=None)
    rows = 60
    bits = sampled_bit_length(gini, rows, 3, 1)
    tuples = rows * (rows - 1) // 2
    largest = max(abs(tuples * out.high) for out in gini.outputs) + max(
        int(plan_noise(out, max_degree=rows - 1, epsilon=1.0, delta=0.0, parties=3, threshold=1,
                       source=gini.noise).slack) for out in gini.outputs)
    assert largest < 2 ** (bits - 2)
    assert sampled_bit_length(KENDALL, 40, 1, 0) == 32  # small domains keep MPyC's default


def test_explicit_short_l_is_still_refused() -> None:
    """An explicit -L shorter than the comparisons need stays a one-line refusal naming the -L to give."""
    from secure.errors import InputError
    from secure.session import RunSettings, run_with

    with run_with(RunSettings.of_runtime(bit_length=32)), \
            pytest.raises(InputError, match=r"need \d+-bit secure integers, got -L 32; give -L \d+"):
        mpc.run(run_secure(FINE_KENDALL, prepare_rows(FINE_KENDALL, _columns(["sysBP", "diaBP"])), seed=5,
                           noise_source=lambda plan, index: 0))
