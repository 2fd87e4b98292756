"""Delegated noise (Sinh & Ramon §4, model M_HF): sizing, public choice of Z, calibration, secure path."""
from __future__ import annotations

import json
import math
import sys

import re
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc

from conftest import ROOT, free_base_port, run_command, small_table, write_csv
from dp.umpc.delegation import (add_delegated_noise, choose_delegates, delegate_noise_shape, delegate_plan,
                                 delegate_size)
from dp.noise_plans import NoisePlan
from dp.umpc.protocol import UStatQuery, simulate
from secure.intake import ColumnSpec
from secure.kernels import get_kernel

KENDALL = UStatQuery(kernel=get_kernel("kendall"),
                     specs=(ColumnSpec("sysBP", 80, 300, 8), ColumnSpec("diaBP", 40, 160, 8)),
                     epsilon=1.0, tuples=60)
LAPLACE = NoisePlan(mechanism="discrete laplace", source="parties", epsilon=1.0, delta=0.0, sensitivity=4, parties=5,
                    threshold=2, alpha=math.exp(-0.25), shape=1 / 3)


@pytest.mark.parametrize("epsilon_fail, honest, expected", [
    (2 ** -40, 0.5, 40), (2 ** -20, 0.75, 10), (1e-9, 0.5, 30), (0.1, 0.7, 2), (0.3, 0.7, 1),
    (0.05, 0.6, 4), (1e-6, 1.0, 1), (0.5, 0.5, 1),
])
def test_delegate_size_is_the_least_k_with_corrupt_fraction_power_below_epsilon_fail(
        epsilon_fail: float, honest: float, expected: int) -> None:
    size = delegate_size(epsilon_fail, honest)
    assert size == expected
    if honest < 1.0:
        assert (1 - honest) ** size <= epsilon_fail * (1 + 1e-12)
        assert size == 1 or (1 - honest) ** (size - 1) > epsilon_fail


def test_delegate_size_is_capped_at_the_number_of_parties() -> None:
    assert delegate_size(2 ** -40, 0.5, parties=7) == 7
    assert delegate_size(0.1, 0.7, parties=7) == 2


@pytest.mark.parametrize("args, message", [
    ((0.0, 0.5), "epsilon_fail must lie in (0, 1), got 0.0"),
    ((1.0, 0.5), "epsilon_fail must lie in (0, 1), got 1.0"),
    ((float("nan"), 0.5), "epsilon_fail must lie in (0, 1), got nan"),
    ((0.1, 0.0), "honest_fraction must lie in (0, 1], got 0.0"),
    ((0.1, 1.5), "honest_fraction must lie in (0, 1], got 1.5"),
])
def test_delegate_size_validation_messages(args: tuple[float, float], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        delegate_size(*args)


def test_delegate_size_rejects_bad_types_and_parties() -> None:
    with pytest.raises(TypeError, match="epsilon_fail must be a number"):
        delegate_size("0.1", 0.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="parties must be at least 1, got 0"):
        delegate_size(0.1, 0.5, parties=0)


def test_choose_delegates_is_deterministic_in_the_generator_distinct_and_of_the_right_size() -> None:
    first = choose_delegates(np.random.default_rng(12345), 20, 6)
    assert first == choose_delegates(np.random.default_rng(12345), 20, 6)
    assert len(first) == 6 and len(set(first)) == 6
    assert all(0 <= p < 20 for p in first) and list(first) == sorted(first)
    others = {choose_delegates(np.random.default_rng(seed), 20, 6) for seed in range(30)}
    assert len(others) > 20  # the generator really picks the group
    assert choose_delegates(np.random.default_rng(3), 5, 5) == (0, 1, 2, 3, 4)


def test_choose_delegates_is_roughly_uniform_over_parties() -> None:
    counts = np.zeros(10)
    generator = np.random.default_rng(2000)
    for _ in range(2000):
        counts[list(choose_delegates(generator, 10, 3))] += 1
    # each party is chosen with probability 3/10: binomial(2000, 0.3), sd ~ 20.5; 5 sd around 600
    assert np.all(np.abs(counts - 600) < 5 * math.sqrt(2000 * 0.3 * 0.7))


@pytest.mark.parametrize("args, error, message", [
    ((np.random.default_rng(1), 5, 6), ValueError, "number of delegates must be at most the number of parties (5), got 6"),
    ((np.random.default_rng(1), 5, 0), ValueError, "number of delegates must be at least 1, got 0"),
])
def test_choose_delegates_validation_messages(args: tuple, error: type, message: str) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        choose_delegates(*args)


def test_calibration_within_the_delegates() -> None:
    assert delegate_noise_shape(4) == 1.0
    assert delegate_noise_shape(5, 2) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match=r"^corrupt_delegates must lie in \[0, 3\] for 4 delegates"):
        delegate_noise_shape(4, 4)
    plan = delegate_plan(LAPLACE, [4, 1])
    assert plan.source == "delegates" and plan.delegates == (1, 4) and plan.drawers == 2
    assert plan.shape == 1.0 and plan.corrupt_delegates == 1
    single = 2 * LAPLACE.alpha / (1 - LAPLACE.alpha) ** 2
    assert plan.variance == pytest.approx(2 * single)
    assert LAPLACE.variance == pytest.approx(5 / 3 * single)
    bounded = delegate_plan(LAPLACE, [0, 2, 3], corrupt_delegates=1)
    assert bounded.shape == 0.5 and bounded.variance == pytest.approx(1.5 * single)


def test_delegated_binomial_trials_cover_the_single_mechanism_with_one_honest_delegate() -> None:
    from dp.calibration import binomial_trials

    plan = NoisePlan(mechanism="binomial", source="parties", epsilon=1.0, delta=1e-6, sensitivity=4, parties=5,
                     threshold=2)
    delegated = delegate_plan(plan, [0, 3])
    needed = binomial_trials(1.0, 1e-6, 4)
    assert delegated.party_trials >= needed and delegated.party_trials % 2 == 0
    assert delegated.variance == 2 * delegated.party_trials / 4


def test_delegated_guarantee_names_the_base_mechanism() -> None:
    laplace = delegate_plan(LAPLACE, [0, 3], epsilon_fail=1e-6)
    assert laplace.guarantee.startswith("Polya shares drawn by 2 randomly drawn delegate(s) only")
    assert "1-DP except with probability 1e-06" in laplace.guarantee and laplace.guarantee.endswith("(1, 1e-06)-DP")
    binomial = NoisePlan(mechanism="binomial", source="parties", epsilon=1.0, delta=1e-5, sensitivity=4, parties=5,
                         threshold=2)
    delegated = delegate_plan(binomial, [0, 3], epsilon_fail=1e-6)
    assert delegated.guarantee.startswith("centred binomial shares drawn by 2 randomly drawn delegate(s) only")
    assert "Polya" not in delegated.guarantee
    assert "(1, 1e-05)-DP except with probability 1e-06" in delegated.guarantee
    assert delegated.guarantee.endswith("(1, 1.1e-05)-DP")


def test_delegated_draw_variance_matches_shape() -> None:
    plan = delegate_plan(LAPLACE, [0, 1, 2], corrupt_delegates=1)  # shape 1/2
    draws = plan.draw(np.random.default_rng(11), size=40000)
    per_draw = plan.variance / plan.drawers
    a, r = LAPLACE.alpha, plan.shape
    excess_kurtosis = (1 + 4 * a + a * a) / (2 * r * a)  # kappa4 / kappa2^2 of a Polya difference
    relative_se = math.sqrt((excess_kurtosis + 2) / 40000)  # of the sample variance
    assert per_draw == pytest.approx(2 * r * a / (1 - a) ** 2)
    assert abs(float(np.var(draws, ddof=1)) / per_draw - 1) < 4 * relative_se


@pytest.mark.parametrize("delegates, message", [
    ([], "delegates must name at least one party, got none"),
    ([1, 1], "delegates must be distinct, got [1, 1]"),
    ([0, 5], "delegates must be party ids in [0, 4], got 5"),
])
def test_delegate_plan_validation_messages(delegates: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        delegate_plan(LAPLACE, delegates)


def test_add_delegated_noise_single_process() -> None:
    async def run() -> tuple[int, list[int]]:
        secint = mpc.SecInt(32)
        plan = NoisePlan(mechanism="discrete laplace", source="parties", epsilon=1.0, delta=0.0, sensitivity=4,
                         parties=1, threshold=0, alpha=0.5, shape=1.0)
        scalar = add_delegated_noise(secint(10), plan, [0], noise_source=lambda p: 5)
        vector = add_delegated_noise(secint.array(np.arange(3)), plan, [0],
                                     noise_source=lambda p: np.array([1, 2, 3]))
        return int(await mpc.output(scalar)), [int(v) for v in await mpc.output(vector)]

    assert mpc.run(run()) == (15, [1, 3, 5])


@pytest.mark.multiparty
def test_five_party_delegated_release_equals_simulated_and_saves_bytes(tmp_path: Path) -> None:
    header, values = small_table()
    csv = write_csv(tmp_path / "small.csv", header, values)
    program = ROOT / "tests" / "programs" / "delegated_noise_release.py"
    run = run_command([sys.executable, str(program), "-M5", "-B", str(free_base_port()), "--no-log", str(csv), "9", "0.1", "0.7", "200"])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    delegates = tuple(record["delegates"])
    # Z from fresh joint randomness (draw_delegates), not from the tuples' seed 9: any 2 of the 5 parties
    assert len(delegates) == delegate_size(0.1, 0.7, parties=5) == 2
    assert len(set(delegates)) == 2 and all(0 <= p < 5 for p in delegates) and list(delegates) == sorted(delegates)

    columns = values[:, [header.index("sysBP"), header.index("diaBP")]]
    simulated = simulate(KENDALL, [columns[i::5] for i in range(5)], threshold=2, seed=9, noise=np.zeros((1, 1, 5)))
    delegated = delegate_plan(simulated.plans[0], delegates)
    noise = np.zeros(5, dtype=object)  # the delegates' fixed draws (the program's), 0 at every other party
    noise[list(delegates)] = [10 * (p + 1) + 1 for p in delegates]
    again = simulate(KENDALL, [columns[i::5] for i in range(5)], threshold=2, seed=9, noise=noise.reshape(1, 1, 5))
    assert record["noisy_sums"] == [int(simulated.sums[0]) + int(noise.sum())]
    assert record["noisy_sums"] == [int(again.sums[0] + again.noise.sum())]
    assert record["variance"] == pytest.approx(delegated.variance)

    sent = record["bytes"]
    # share messages: |Z| (m - 1) instead of m (m - 1), same size each
    assert sent["scalar, delegates"] * 5 == sent["scalar, all parties"] * 2
    assert sent["vector, delegates"] < 0.45 * sent["vector, all parties"]


def test_a_run_needing_more_delegates_than_parties_is_refused() -> None:
    """G3: 0.01:0.5 needs ceil(log 0.01 / log 0.5) = 7 delegates; with 5 parties a run refuses instead of quietly
    making all 5 delegates (noise std x sqrt 5, delta 0.01 still charged); 0.1:0.7 needs 2 of 5."""
    from dp.umpc.delegation import delegates_for_run

    with pytest.raises(ValueError, match=r"= 7 noise delegates, but there are 5 parties"):
        delegates_for_run(0.01, 0.5, parties=5)
    assert delegates_for_run(0.1, 0.7, parties=5) == 2
    assert delegates_for_run(0.01, 0.5, parties=7) == 7
    assert delegate_size(0.01, 0.5, parties=5) == 5  # the library's cap stays (cost models), runs refuse
