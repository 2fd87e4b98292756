"""Discrete Laplace noise sampled inside MPC: thresholds, accounting, pmf, mirror, secure sampler, release.

Statistical design (nothing tuned):

* Exact checks compare with independent exact arithmetic (Fractions, interval bounds on ``exp``).
* Distribution tests are chi-square tests against the *exact* pmf of the construction
  (:func:`dp.secret_noise.construction_pmf`), cells with expected count below 5 merged into the
  tails.  Where the randomness is ours the seed is fixed; MPyC's random bits are not seedable, so
  those tests reject only at ``p < 1e-3``: a correct sampler fails one of them with probability
  ``1e-3`` (the chi-square statistic's null distribution, by construction of the p-value).
* Tolerances follow from the total-variation bound ``tau``: a pointwise bound ``|p'(z) - p(z)| <= tau``
  gives ``|log p'(z) - log p(z)| <= -log(1 - tau/(f - tau))`` wherever ``p'(z) >= f``.
"""
from __future__ import annotations

import json
import math
import sys
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc
from scipy import stats

from conftest import ROOT, free_base_port, run_command, scenario_command
from dp.audit.engine import audit, exact_epsilon
from dp.audit.central_cases import case_names, get_case
from dp.audit.neighbours import ustat_neighbours
from dp.calibration import discrete_laplace_pmf, discrete_laplace_variance
from dp.secret_noise import (
    DEFAULT_SAMPLER_DELTA,
    SecretLaplacePlan,
    construction_pmf,
    digit_thresholds,
    geometric_pmf,
    plan_secret_laplace,
    sampler_delta,
    secret_laplace_noise,
    secret_laplace_plan,
    simulate_secret_laplace,
    truncation_tv,
)
from dp.umpc.protocol import MPC_LAPLACE, UStatQuery, plan_noise, plans_for, prepare_rows, run_secure, simulate
from secure.intake import ColumnSpec
from secure.kernels import KernelOutput, get_kernel
from secure.noise.mpc import (
    less_than_public,
    secret_bernoulli,
    secret_discrete_laplace,
    threshold_bits,
)

#: Reject a distribution only below this p-value (false alarm rate of a correct sampler).
P_REJECT = 1e-3
#: The demo's plan: Kendall, sensitivity delta_max * Delta_f = 4 * 2, epsilon 1.
DEMO = plan_secret_laplace(epsilon=1.0, sensitivity=8)
#: A coarse plan whose truncation and rounding errors are large enough to see.
COARSE = secret_laplace_plan(epsilon=0.5, sensitivity=2, digits=4, bits=10)
#: A plan needing more than 64 bits (large epsilon), as the end-to-end test uses.
WIDE = plan_secret_laplace(epsilon=30.0, sensitivity=8)
#: A small plan for the secure sampler (few bits, so many samples are cheap).
SMALL = secret_laplace_plan(epsilon=1.0, sensitivity=2, digits=5, bits=16)


# ------------------------------------------------------------------------------- exact arithmetic


def _exp_interval(rate: Fraction, precision_bits: int) -> tuple[Fraction, Fraction]:
    """Rigorous bounds on ``exp(-rate)``, ``rate >= 0``: ``1/U <= exp(-rate) <= 1/L`` with ``L <= e^rate <= U``.

    Taylor series of ``e^rate`` (positive terms): the partial sum ``L`` is a lower bound; the remainder
    after term ``K`` is at most ``term_{K+1} / (1 - rate/(K+2))``.
    """
    total, term, k = Fraction(1), Fraction(1), 0
    while True:
        k += 1
        term = term * rate / k
        total += term
        if k + 2 > 2 * rate:
            remainder = term * rate / (k + 1) / (1 - rate / (k + 2))
            if remainder < total * Fraction(1, 1 << precision_bits):
                break
    lower, upper = total, total + remainder
    return 1 / upper, 1 / lower


def _chi_square(samples: np.ndarray, pmf: np.ndarray, offset: int) -> float:
    """p-value of the chi-square test of integer samples against ``pmf`` (``pmf[offset + z]``)."""
    counts = np.bincount(np.asarray(samples, dtype=np.int64) + offset, minlength=pmf.size)
    assert counts.size == pmf.size, "a sample outside the pmf's support"
    expected = pmf * samples.size
    keep = expected >= 5
    low = int(np.argmax(keep))
    high = int(keep.size - np.argmax(keep[::-1]))
    observed = np.concatenate([[counts[:low].sum()], counts[low:high], [counts[high:].sum()]])
    wanted = np.concatenate([[expected[:low].sum()], expected[low:high], [expected[high:].sum()]])
    observed, wanted = observed[wanted > 0], wanted[wanted > 0]
    return float(stats.chisquare(observed, wanted * observed.sum() / wanted.sum()).pvalue)


def _dlap_tv(plan: SecretLaplacePlan) -> Decimal:
    """TV distance between the construction and DLap(alpha), in 80-digit decimal arithmetic.

    Independent of :func:`construction_pmf` (floats cannot resolve ``tau`` of order ``1e-26``): the
    geometric's pmf as products of the exact digit probabilities, its autocorrelation, DLap's pmf from
    ``exp``, and DLap's mass ``2 alpha^(2^J) / (1 + alpha)`` outside the support.
    """
    with localcontext() as context:
        context.prec = 80
        probabilities = [Decimal(t) / Decimal(1 << plan.bits) for t in plan.thresholds]
        size = 1 << plan.digits
        geometric = []
        for g in range(size):
            weight = Decimal(1)
            for j, pj in enumerate(probabilities):
                weight *= pj if (g >> j) & 1 else 1 - pj
            geometric.append(weight)
        alpha = (-(Decimal(plan.epsilon) / plan.sensitivity)).exp()
        total = 2 * alpha ** size / (1 + alpha)
        for z in range(-(size - 1), size):
            sampled = sum(geometric[a] * geometric[a - z] for a in range(max(0, z), min(size, size + z)))
            total += abs(sampled - (1 - alpha) / (1 + alpha) * alpha ** abs(z))
        return total / 2


# -------------------------------------------------------------------------------- (1) accounting


@pytest.mark.parametrize("plan", [DEMO, COARSE, WIDE, SMALL], ids=["demo", "coarse", "wide", "small"])
def test_thresholds_are_q_j_rounded_to_b_bits_exactly(plan: SecretLaplacePlan) -> None:
    rate = Fraction(plan.epsilon) / plan.sensitivity
    for j, threshold in enumerate(plan.thresholds):
        low, high = _exp_interval(rate * (1 << j), plan.bits + 64)
        q_low, q_high = low / (1 + low), high / (1 + high)  # x/(1+x) is increasing
        scaled_low, scaled_high = q_low * (1 << plan.bits), q_high * (1 << plan.bits)
        rounded = math.floor(scaled_low + Fraction(1, 2))
        assert rounded == math.floor(scaled_high + Fraction(1, 2)), "the interval straddles a rounding point"
        assert threshold == rounded
        assert abs(Fraction(threshold) - scaled_low) <= Fraction(1, 2) + (scaled_high - scaled_low)
    assert plan.thresholds == digit_thresholds(epsilon=plan.epsilon, sensitivity=plan.sensitivity,
                                               digits=plan.digits, bits=plan.bits)


def test_sampler_delta_is_one_plus_e_epsilon_times_tau() -> None:
    for plan in (DEMO, COARSE, WIDE, SMALL):
        tau = 2 * (math.exp(-(2 ** plan.digits) * plan.epsilon / plan.sensitivity) + plan.digits * 2.0 ** -plan.bits)
        assert plan.tv == pytest.approx(tau, rel=1e-12) and plan.tv >= tau * (1 - 1e-15)
        assert plan.delta == pytest.approx(min((1 + math.exp(plan.epsilon)) * tau, 1.0), rel=1e-12)
        assert plan.tv == truncation_tv(epsilon=plan.epsilon, sensitivity=plan.sensitivity, digits=plan.digits,
                                        bits=plan.bits)


@pytest.mark.parametrize("epsilon, sensitivity, budget", [
    (1.0, 8, DEFAULT_SAMPLER_DELTA), (0.5, 8, DEFAULT_SAMPLER_DELTA), (1.0, 1, DEFAULT_SAMPLER_DELTA),
    (0.01, 1 << 16, DEFAULT_SAMPLER_DELTA), (30.0, 8, DEFAULT_SAMPLER_DELTA), (1.0, 8, 1e-6), (2.0, 4, 1e-20)])
def test_plan_takes_the_fewest_digits_and_64_bits_unless_e_epsilon_needs_more(epsilon: float, sensitivity: int,
                                                                             budget: float) -> None:
    plan = plan_secret_laplace(epsilon=epsilon, sensitivity=sensitivity, delta_budget=budget)
    assert plan.delta <= budget
    fewer = [sampler_delta(epsilon=epsilon, sensitivity=sensitivity, digits=j, bits=plan.bits)
             for j in range(1, plan.digits)]
    assert all(d > budget for d in fewer)
    if plan.bits > 64:  # no J at all works with 8 fewer bits
        floor = 2 * (1 + math.exp(epsilon)) * 2.0 ** -(plan.bits - 8)
        assert floor > budget or all(
            sampler_delta(epsilon=epsilon, sensitivity=sensitivity, digits=j, bits=plan.bits - 8) > budget
            for j in range(1, 49))
    else:
        assert plan.bits == 64
    assert plan.slack == 2 ** plan.digits - 1


def test_plan_choices_of_the_demo_and_of_large_epsilon() -> None:
    assert (DEMO.digits, DEMO.bits) == (8, 64)       # alpha^256 = e^-32; 2^-40 needs e^-30.4 / 7.4
    assert (WIDE.digits, WIDE.bits) == (4, 88)       # e^30 = 2^43.3: b = 64 leaves 2^-20 at best
    assert DEMO.delta < 1e-13 and WIDE.delta <= DEFAULT_SAMPLER_DELTA


def test_invalid_parameters_are_refused_with_plain_messages() -> None:
    with pytest.raises(ValueError, match="epsilon must be positive, got -1"):
        plan_secret_laplace(epsilon=-1, sensitivity=8)
    with pytest.raises(ValueError, match="sensitivity must be at least 1, got 0"):
        plan_secret_laplace(epsilon=1.0, sensitivity=0)
    with pytest.raises(ValueError, match=r"delta_budget must lie in \(0, 1\), got 0"):
        plan_secret_laplace(epsilon=1.0, sensitivity=8, delta_budget=0)
    with pytest.raises(ValueError, match="too large for 256-bit uniform integers"):
        plan_secret_laplace(epsilon=500.0, sensitivity=8)
    with pytest.raises(ValueError, match="needs more than 48 binary digits"):
        plan_secret_laplace(epsilon=1e-9, sensitivity=1 << 30)
    with pytest.raises(ValueError, match=r"digits must lie in \[1, 48\], got 0"):
        digit_thresholds(epsilon=1.0, sensitivity=8, digits=0, bits=64)
    with pytest.raises(ValueError, match="thresholds must be digit_thresholds"):
        SecretLaplacePlan(1.0, 8, 2, 64, (1, 2), 0.1, 0.1)
    with pytest.raises(ValueError, match="size must be at least 1, got 0"):
        simulate_secret_laplace(DEMO, 0)
    with pytest.raises(ValueError, match="bits must be an integer of at least 64"):
        DEMO.thresholds_at(32)


def test_construction_pmf_is_the_convolution_of_the_digit_distributions() -> None:
    """Against an independent Fraction computation, point by point (COARSE: 4 digits, 10 bits)."""
    p = [Fraction(t, 1 << COARSE.bits) for t in COARSE.thresholds]
    geometric = {}
    for g in range(2 ** COARSE.digits):
        weight = Fraction(1)
        for j, pj in enumerate(p):
            weight *= pj if (g >> j) & 1 else 1 - pj
        geometric[g] = weight
    pmf, offset = construction_pmf(COARSE)
    assert offset == 2 ** COARSE.digits - 1
    for z in range(-offset, offset + 1):
        exact = sum(geometric[a] * geometric[a - z] for a in geometric if 0 <= a - z <= offset)
        assert pmf[offset + z] == pytest.approx(float(exact), rel=1e-12, abs=1e-300)
    assert geometric_pmf(COARSE).sum() == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize("plan", [DEMO, COARSE, WIDE, SMALL], ids=["demo", "coarse", "wide", "small"])
def test_construction_is_within_tau_of_discrete_laplace(plan: SecretLaplacePlan) -> None:
    distance = _dlap_tv(plan)
    assert distance <= Decimal(plan.tv)
    if plan is COARSE:  # the bound is not vacuous: DLap's mass beyond the support alone is 2 alpha^16/(1 + alpha)
        assert distance >= Decimal(2 * plan.alpha ** 16 / (1 + plan.alpha)) * Decimal("0.999")


@pytest.mark.parametrize("plan", [DEMO, WIDE, SMALL], ids=["demo", "wide", "small"])
def test_variance_is_that_of_one_discrete_laplace(plan: SecretLaplacePlan) -> None:
    """Exact variance against the pmf, and against DLap: on ``|z| < 2^J`` the second moments differ by at
    most ``4^J * 2 tau`` (pointwise difference at most ``tau`` ... summed: at most ``2 tau`` in l1), plus
    DLap's second moment beyond ``2^J``."""
    pmf, offset = construction_pmf(plan)
    z = np.arange(-offset, offset + 1, dtype=np.float64)
    assert plan.variance == pytest.approx(float(np.dot(z * z, pmf)), rel=1e-9)
    tail = np.arange(offset + 1, offset + 4000, dtype=np.float64)
    beyond = 2 * float(np.dot(tail * tail, discrete_laplace_pmf(tail, plan.alpha)))
    bound = 4.0 ** plan.digits * 2 * plan.tv + beyond
    assert abs(plan.variance - discrete_laplace_variance(plan.alpha)) <= bound + 1e-12 * plan.variance


@pytest.mark.parametrize("plan, floor", [(DEMO, 1e-9), (SMALL, 1e-2), (WIDE, 1e-15)], ids=["demo", "small", "wide"])
def test_exact_epsilon_of_the_construction_is_epsilon_within_the_tau_tolerance(plan: SecretLaplacePlan,
                                                                                floor: float) -> None:
    """Where both points have ``p' >= f``, ``|p' - p| <= tau`` moves each log-probability by at most
    ``eta = -log(1 - tau/(f - tau))``, so the largest log-ratio lies within ``2 eta`` of DLap's, which
    is ``epsilon`` exactly at the shift ``s`` (e.g. between 0 and s, both far above ``f``)."""
    pmf, _ = construction_pmf(plan)
    eta = -math.log1p(-plan.tv / (floor - plan.tv))
    measured = exact_epsilon(pmf, plan.sensitivity, floor=floor)
    assert abs(measured - plan.epsilon) <= 2 * eta + 1e-9 * plan.epsilon


# -------------------------------------------------------------------------------- (2) the mirror


@pytest.mark.parametrize("plan, seed", [(DEMO, 11), (WIDE, 12), (COARSE, 13)], ids=["demo", "wide", "coarse"])
def test_mirror_samples_pass_chi_square_against_the_exact_pmf(plan: SecretLaplacePlan, seed: int) -> None:
    pmf, offset = construction_pmf(plan)
    samples = simulate_secret_laplace(plan, 100_000, np.random.default_rng(seed))
    assert np.all(np.abs(samples) <= plan.slack)
    assert _chi_square(samples, pmf, offset) >= P_REJECT


def test_mirror_is_reproducible_and_thresholds_at_more_bits_keep_the_probabilities() -> None:
    first = simulate_secret_laplace(DEMO, 1000, np.random.default_rng(4))
    assert np.array_equal(first, simulate_secret_laplace(DEMO, 1000, np.random.default_rng(4)))
    wider = DEMO.thresholds_at(96)
    assert [Fraction(t, 1 << 96) for t in wider] == list(DEMO.digit_probabilities)


# ------------------------------------------------------------------------ (3) the secure sampler


def _prefix_product(ubits: np.ndarray, thresholds: list[int]) -> np.ndarray:
    """The formula of less_than_public on plain bits: ``[U < T] = t_0 + sum_k (t_{k+1} - t_k) prod_{j <= k} e_j``."""
    tbits = threshold_bits(thresholds, ubits.shape[1])
    coefficients = np.diff(np.concatenate([tbits, np.zeros((tbits.shape[0], 1), dtype=np.int64)], axis=1), axis=1)
    prefix = np.cumprod(ubits * (2 * tbits - 1) + (1 - tbits), axis=1)
    return tbits[:, 0] + np.sum(coefficients * prefix, axis=1)


def test_prefix_product_comparison_is_exact_on_every_pair_of_5_bit_values() -> None:
    bits = 5
    u, t = (a.ravel() for a in np.meshgrid(np.arange(2 ** bits), np.arange(2 ** bits), indexing="ij"))
    ubits = threshold_bits(u.tolist(), bits)
    assert np.array_equal(_prefix_product(ubits, t.tolist()), (u < t).astype(np.int64))
    sectype = mpc.SecInt(32)

    async def compare() -> np.ndarray:
        return np.asarray(await mpc.output(less_than_public(sectype.array(ubits), t.tolist())))

    assert np.array_equal(mpc.run(compare()).astype(np.int64), (u < t).astype(np.int64))


def test_secure_sampler_in_one_process_passes_chi_square() -> None:
    sectype = mpc.SecInt(32)
    count = 3000

    async def sample() -> np.ndarray:
        return np.asarray(await mpc.output(secret_discrete_laplace(sectype, [SMALL.thresholds] * count, SMALL.bits)))

    samples = mpc.run(sample()).astype(np.int64)
    pmf, offset = construction_pmf(SMALL)
    assert np.all(np.abs(samples) <= SMALL.slack)
    assert _chi_square(samples, pmf, offset) >= P_REJECT


def test_secure_sampler_keeps_rows_in_order_across_groups_of_thresholds() -> None:
    """Rows of three kinds interleaved: no digits (always 0), one fair digit (|x| <= 1), two fair digits
    (|x| <= 3, and |x| >= 2 with probability 6/16 per row).  A misplaced row shows with probability
    at least 1 - (10/16)^100."""
    sectype = mpc.SecInt(32)
    kinds = np.arange(300) % 3
    rows = [[0, 0] if k == 0 else [1 << 7] if k == 1 else [1 << 7, 1 << 7] for k in kinds]

    async def sample() -> np.ndarray:
        return np.asarray(await mpc.output(secret_discrete_laplace(sectype, rows, 8)))

    values = mpc.run(sample()).astype(np.int64)
    assert np.all(values[kinds == 0] == 0)
    assert np.all(np.abs(values[kinds == 1]) <= 1) and np.any(values[kinds == 1] != 0)
    assert np.all(np.abs(values[kinds == 2]) <= 3) and np.any(np.abs(values[kinds == 2]) >= 2)


def test_secure_bernoulli_and_noise_list_for_plans_of_different_widths() -> None:
    sectype = mpc.SecInt(32)

    async def run() -> tuple[np.ndarray, list[int]]:
        coins = np.asarray(await mpc.output(secret_bernoulli(sectype, [0, 15, 0, 1], 4)))
        noise = secret_laplace_noise(sectype, [WIDE, SMALL])
        return coins, [int(v) for v in await mpc.output(noise)]

    coins, noise = mpc.run(run())
    assert coins[0] == 0 and coins[2] == 0 and set(coins.tolist()) <= {0, 1}
    assert len(noise) == 2 and abs(noise[0]) <= WIDE.slack and abs(noise[1]) <= SMALL.slack


def test_secure_layer_refuses_bad_parameters() -> None:
    sectype = mpc.SecInt(32)
    with pytest.raises(ValueError, match=r"thresholds must lie in \[0, 2\*\*4\), got 16"):
        secret_bernoulli(sectype, [16], 4)
    with pytest.raises(TypeError, match="sectype must be an MPyC secure integer type"):
        secret_discrete_laplace(int, [[1]], 4)
    with pytest.raises(ValueError, match="does not fit 32-bit secure integers"):
        secret_discrete_laplace(sectype, [[1] * 31], 4)
    with pytest.raises(ValueError, match="at least one row"):
        secret_discrete_laplace(sectype, [], 4)


@pytest.mark.multiparty
def test_secure_sampler_with_three_parties_passes_chi_square() -> None:
    program = ROOT / "tests" / "programs" / "secret_noise_samples.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(SMALL.epsilon), str(SMALL.sensitivity),
                       str(SMALL.digits), str(SMALL.bits), "2000"], timeout=120)
    assert run.code == 0, run.stderr
    samples = np.array(json.loads(run.stdout.strip().splitlines()[-1])["samples"], dtype=np.int64)
    pmf, offset = construction_pmf(SMALL)
    assert samples.size == 2000 and np.all(np.abs(samples) <= SMALL.slack)
    assert _chi_square(samples, pmf, offset) >= P_REJECT


# ------------------------------------------------------------------------------ dp.umpc.protocol plumbing


KENDALL = KernelOutput("kendall", 1, -1, 1)


def test_mpc_plan_has_the_variance_of_one_discrete_laplace_and_a_hard_slack() -> None:
    party = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1)
    joint = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=0.0, parties=3, threshold=1, source="mpc")
    assert joint.mechanism == MPC_LAPLACE and joint.source == "mpc" and joint.sampler == DEMO
    assert joint.delta == DEMO.delta and joint.alpha == pytest.approx(party.alpha)
    assert joint.variance == pytest.approx(discrete_laplace_variance(joint.alpha), rel=1e-9)
    assert party.variance == pytest.approx(1.5 * joint.variance, rel=1e-9)  # m/(m-t) = 3/2 for party shares
    assert joint.slack == 255
    assert joint.draw(np.random.default_rng(4), 20).tolist() == simulate_secret_laplace(  # the plaintext mirror
        DEMO, 20, np.random.default_rng(4)).tolist()
    given = plan_noise(KENDALL, max_degree=4, epsilon=1.0, delta=1e-6, parties=3, threshold=1, source="mpc")
    assert given.mechanism == MPC_LAPLACE and given.delta <= 1e-6 and given.sampler.digits <= DEMO.digits
    with pytest.raises(ValueError, match="unknown noise source 'nobody'; choose one of: parties, mpc"):
        UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("x", 0, 15, 0), ColumnSpec("y", 0, 15, 0)),
                   epsilon=1.0, noise="nobody")


def _small_query(epsilon: float = 1.0) -> tuple[UStatQuery, list[np.ndarray]]:
    query = UStatQuery(kernel=get_kernel("kendall"), specs=(ColumnSpec("x", 0, 15, 0), ColumnSpec("y", 0, 15, 0)),
                       epsilon=epsilon, tuples=60, noise="mpc")
    rows = np.random.default_rng(2).integers(0, 16, size=(30, 2)).astype(np.float64)
    return query, [rows[i::3] for i in range(3)]


def test_simulate_uses_the_mirror_and_its_spread_is_one_discrete_laplace() -> None:
    query, rows = _small_query()
    runs = 4000
    result = simulate(query, rows, threshold=1, seed=3, runs=runs, noise_rng=np.random.default_rng(8))
    sampler = result.plans[0].sampler
    assert result.noise.shape == (runs, 1, 1)
    mirrored = simulate_secret_laplace(sampler, runs, np.random.default_rng(8))
    assert np.array_equal(result.noise[:, 0, 0].astype(np.int64), mirrored)
    pmf, offset = construction_pmf(sampler)
    assert _chi_square(mirrored, pmf, offset) >= P_REJECT
    fixed = simulate(query, rows, threshold=1, seed=3, noise=np.array([[5]]))
    assert fixed.estimates[0] == pytest.approx((int(fixed.sums[0]) + 5) / 60)


def test_run_secure_in_one_process_adds_in_mpc_noise_within_its_slack() -> None:
    query, rows = _small_query(epsilon=30.0)
    values = np.vstack(rows)
    exact = simulate(query, [values], threshold=0, seed=6, noise=np.array([[0]]))

    async def release() -> object:
        return await run_secure(query, prepare_rows(query, values), seed=6)

    result = mpc.run(release())
    sampler = exact.plans[0].sampler
    assert abs(result.noisy_sums[0] - int(exact.sums[0])) <= sampler.slack
    assert result.mechanism == MPC_LAPLACE and result.noise_source == "mpc"
    # the tuples path compares: delta adds MPyC's comparison leakage (at the raised -K) to the sampler's
    assert result.sampler_delta == sampler.delta
    assert result.delta == pytest.approx(sampler.delta + result.comparison_leak["comparison_leak_delta"], rel=1e-12)
    assert result.sampler["digits"] == [sampler.digits] and result.sampler["bits"] == [sampler.bits]

    async def refused() -> object:
        return await run_secure(query, prepare_rows(query, values), seed=6, noise_source=lambda plan, index: 0)

    with pytest.raises(ValueError, match="noise_source and noise_delegates"):
        mpc.run(refused())


def test_run_secure_refuses_noise_that_the_secure_integers_cannot_hold() -> None:
    """About 31 binary digits of noise: without -L the sampled path derives a length that holds them and
    releases; an explicit -L 32 (holds 30) is refused with one line naming the -L needed."""
    from secure.session import InputError, RunSettings, run_with

    query, rows = _small_query(epsilon=1e-7)  # epsilon / s = 1.25e-8: about 31 digits, -L 32 holds 30
    values = np.vstack(rows)
    assert query.noise == "mpc"

    async def release() -> object:
        return await run_secure(query, prepare_rows(query, values), seed=6)

    derived = mpc.run(release())  # no launcher: no explicit -L
    assert derived is not None
    with run_with(RunSettings.of_runtime(bit_length=32)), \
            pytest.raises(InputError, match=r"binary digits .* give -L \d+ or more"):
        mpc.run(release())


# ------------------------------------------------------------------------ (4) the scenario, end to end


@pytest.mark.multiparty
def test_main_job_with_mpc_noise_runs_with_three_parties(tmp_path: Path) -> None:
    from scenarios.ustat import load_rows, parse_options

    out = tmp_path / "r.json"
    argv = ["--mpc-noise", "--epsilon", "30", "--seed", "5", "--pairs", "3000"]
    run = run_command(scenario_command("ustat", "-M3", "--no-log", *argv, "--json", str(out)), timeout=180)
    assert run.code == 0, run.stderr
    record = json.loads(out.read_text())
    options = parse_options(argv)
    rows = [load_rows(options, 5, party, 3).values for party in range(3)]
    exact = simulate(options.query, rows, threshold=1, seed=5, noise=np.array([[0]]))
    plan = exact.plans[0]
    assert plans_for(options.query, exact.tuples, sum(len(r) for r in rows), 3, 1) == exact.plans
    sampler = plan.sampler
    assert sampler.bits > 64  # e^30 J 2^-64 alone would exceed 2^-40
    # the noise never exceeds 2^J - 1: the estimate is within that many units of the exact one
    assert abs(record["noisy_sums"][0] - int(exact.sums[0])) <= sampler.slack
    assert abs(record["estimate"] - exact.estimates[0]) <= sampler.slack / record["pairs"] + 1e-12
    assert record["mechanism"] == MPC_LAPLACE and record["noise_source"] == "mpc"
    assert record["sampler_delta"] == sampler.delta <= DEFAULT_SAMPLER_DELTA
    assert record["delta"] == pytest.approx(sampler.delta + record["comparison_leak_delta"], rel=1e-12)
    assert record["sampler"]["digits"] == [sampler.digits] and record["sampler"]["bits"] == [sampler.bits]
    assert record["estimate_std"] == pytest.approx(math.sqrt(sampler.variance) / 3000)
    assert record["parties"] == 3 and record["threshold"] == 1
    assert "sampled inside MPC" in run.stdout and "truncation delta_s" in run.stdout


def test_mpc_noise_with_delta_uses_it_as_the_truncation_budget(tmp_path: Path) -> None:
    from scenarios.ustat import main

    out = tmp_path / "r.json"
    assert main(["--mpc-noise", "--delta", "1e-6", "--stat", "auc", "--pairs", "300", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["delta"] == pytest.approx(1e-6 + record["comparison_leak_delta"], rel=1e-12)
    assert 0 < record["sampler_delta"] <= 1e-6
    assert len(record["sampler"]["digits"]) == 2  # AUC releases two sums, each with its own plan
    assert all(d <= 0.5e-6 for d in record["sampler"]["delta"])


def test_delegate_noise_with_mpc_noise_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.ustat import main

    assert main(["--mpc-noise", "--delegate-noise", "1e-6:0.5", "--pairs", "100"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "--delegate-noise" in err and "--mpc-noise" in err
    assert len(err.splitlines()) == 1


# --------------------------------------------------------------------------------- (5) the audit


def test_audit_case_of_in_mpc_noise_passes_at_its_claimed_epsilon_and_delta_s() -> None:
    name = "umpc-kendall-mpc-dlap-m3-t1"
    assert name in case_names(controls=False)
    case = get_case(name)
    plan = ustat_neighbours("kendall", parties=3, threshold=1, noise="mpc").plans[0]
    assert case.delta == plan.delta == plan.sampler.delta <= DEFAULT_SAMPLER_DELTA
    assert (case.epsilon, plan.sensitivity) == (1.0, 8) and plan.sampler == DEMO
    result = audit(case, samples=case.samples, rng=np.random.default_rng(20240611), confidence=0.999)
    assert not result.violation, (result.epsilon_lower, result.event)
    assert 0.0 <= result.epsilon_lower <= case.epsilon
