"""Coalition drills (scenarios/drills/coalition.py): shares tell t parties nothing, t + 1 parties everything, DP holds.

Two kinds of tests:

- single process, fixed seeds: the drill's analysis on Shamir shares made here with a seeded generator
  (a correct degree-t sharing passes; broken sharings of degree t - 1 are caught), Lagrange
  recombination against MPyC's own ``thresha.recombine``, option validation;
- real MPyC parties (``-M3`` and ``-M5 -T2``, ``--quick``; party 0 launches the others).  Their
  shares come from MPyC's OS randomness, so the share-independence check has a false-alarm rate:
  the drill rejects when its Bonferroni family p-value ``min p * K`` (``K`` = 3 tests for t = 1, 9 for
  t = 2) is below 1e-3, i.e. with probability at most 1e-3 per run under the null (shares independent
  of the inputs and uniform), whatever the dependence between the K tests; at most 3e-3 for the three
  runs here.  The t-share "reconstruction" hits an input with probability 1/p per input (p about
  2**64), so zero hits out of a few thousand fails with probability below 1e-15.
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import free_base_port, read_record, run_command, scenario_command
from dp.audit.engine import coalition_epsilon
from scenarios.kit.cli import UsageError
from scenarios.drills.coalition import (FAMILY_LEVEL, bonferroni, count_reconstructed, independence_tests, known_draw,
                              parse_options)
from secure.views import recombine, share_point

#: MPyC's field for the default ``-L 32`` secure integers (a 64-bit prime).
MODULUS = 18446744073709551427
SUBPROCESS_TIMEOUT = 240.0


def shamir_shares(secrets: list[int], degree: int, parties: int, modulus: int, rng: random.Random) -> list[list[int]]:
    """Shamir shares ``f(i + 1)`` of each secret with a random polynomial of ``degree`` (seeded, for tests)."""
    shares = [[0] * len(secrets) for _ in range(parties)]
    for column, secret in enumerate(secrets):
        coefficients = [secret % modulus] + [rng.randrange(modulus) for _ in range(degree)]
        for party in range(parties):
            x = share_point(party)
            shares[party][column] = sum(c * pow(x, k, modulus) for k, c in enumerate(coefficients)) % modulus
    return shares


def two_rounds(threshold: int, parties: int, degree: int, seed: int, samples: int = 1500) -> tuple[Any, Any, list[int]]:
    """Shares of round a (varied inputs) and round b (zeros) of ``samples`` inputs."""
    rng = random.Random(seed)
    inputs_a = [rng.randrange(56320) for _ in range(samples)]
    round_a = shamir_shares(inputs_a, degree, parties, MODULUS, rng)
    round_b = shamir_shares([0] * samples, degree, parties, MODULUS, rng)
    return round_a, round_b, inputs_a


# --------------------------------------------------------------------------------- single process


@pytest.mark.parametrize("parties, threshold", [(3, 1), (5, 2)])
def test_correct_sharing_passes_and_threshold_reconstructs(parties: int, threshold: int) -> None:
    round_a, round_b, inputs = two_rounds(threshold, parties, degree=threshold, seed=20 + parties)
    coalition = list(range(parties - threshold, parties))
    tests = independence_tests([round_a[c] for c in coalition], [round_b[c] for c in coalition],
                               members=coalition, modulus=MODULUS)
    assert len(tests) == (3 if threshold == 1 else 3 * (threshold + 1))
    assert bonferroni([t["p_value"] for t in tests]) > FAMILY_LEVEL
    extended = [0] + coalition
    assert count_reconstructed(extended, [round_a[p] for p in extended], inputs, MODULUS) == len(inputs)
    assert count_reconstructed(coalition, [round_a[p] for p in coalition], inputs, MODULUS) == 0


@pytest.mark.parametrize("parties, threshold", [(3, 1), (5, 2)])
def test_sharing_of_too_low_degree_is_caught(parties: int, threshold: int) -> None:
    """Negative control: polynomials of degree t - 1 let t parties recombine; the drill must see it."""
    round_a, round_b, inputs = two_rounds(threshold, parties, degree=threshold - 1, seed=40 + parties)
    coalition = list(range(parties - threshold, parties))
    tests = independence_tests([round_a[c] for c in coalition], [round_b[c] for c in coalition],
                               members=coalition, modulus=MODULUS)
    assert bonferroni([t["p_value"] for t in tests]) < FAMILY_LEVEL
    assert count_reconstructed(coalition, [round_a[p] for p in coalition], inputs, MODULUS) == len(inputs)


def test_recombine_interpolates_the_shares_at_zero() -> None:
    rng = random.Random(5)
    secrets = [rng.randrange(1 << 40) for _ in range(50)]
    shares = shamir_shares(secrets, 2, 5, MODULUS, rng)
    members = [1, 3, 4]
    points = [share_point(p) for p in members]
    ours = recombine(points, [shares[p] for p in members], MODULUS)
    assert ours == secrets
    assert recombine([1, 2], [[10], [13]], MODULUS) == [7]  # f(x) = 7 + 3x
    assert recombine([1, 2, 3], [[8], [13], [20]], MODULUS) == [5]  # f(x) = 5 + 2x + x^2
    assert recombine([1, 2], [[8], [13]], MODULUS) == [3]  # the same shares, one point short: the line through them
    with pytest.raises(ValueError, match="distinct"):
        recombine([2, 2], [[7], [7]], MODULUS)


def test_coalition_option_is_validated() -> None:
    assert parse_options([], parties=5, threshold=2).coalition == [3, 4]
    chosen = parse_options(["--coalition", "3,0"], parties=5, threshold=2)
    assert chosen.coalition == [0, 3] and chosen.analyst == 0 and chosen.extended == [0, 1, 3]
    for argv, message in ((["--coalition", "0,1"], "exactly t = 1"), (["--coalition", "3"], "out of range 0..2"),
                          (["--coalition", "a"], "party ids like"), (["--copies", "10"], "at least 50")):
        with pytest.raises(UsageError, match=message):
            parse_options(argv, parties=3, threshold=1)
    with pytest.raises(UsageError, match="distinct"):
        parse_options(["--coalition", "2,2"], parties=5, threshold=2)
    with pytest.raises(UsageError, match="t >= 1"):
        parse_options([], parties=1, threshold=0)


# ------------------------------------------------------------------------------- real MPyC parties


def _drill(tmp_path: Path, *mpyc_and_options: str) -> tuple[dict[str, Any], str]:
    out = tmp_path / "drills.json"
    command = scenario_command("drills.coalition", *mpyc_and_options, "-B", str(free_base_port()), "--no-log", "--quick",
                               "--json", str(out))
    run = run_command(command, timeout=SUBPROCESS_TIMEOUT)
    assert run.code == 0, run.stderr
    assert "Traceback" not in run.stderr
    return read_record(out), run.stdout


@pytest.mark.multiparty
@pytest.mark.parametrize("argv, parties, threshold, coalition", [
    (["-M3"], 3, 1, [2]),
    (["-M5", "-T2"], 5, 2, [3, 4]),
    (["-M5", "-T2", "--coalition", "2,0"], 5, 2, [0, 2]),
])
def test_coalition_drills_with_real_parties(tmp_path: Path, argv: list[str], parties: int, threshold: int,
                                            coalition: list[int]) -> None:
    record, stdout = _drill(tmp_path, *argv)
    assert "Coalition drills" in stdout and "(iii) the threshold is real" in stdout
    for key in ("statistic", "estimate", "epsilon", "delta", "n", "pairs", "parties", "seconds", "bytes_sent"):
        assert key in record
    assert (record["parties"], record["threshold"], record["coalition"]) == (parties, threshold, coalition)
    honest = [p for p in range(parties) if p not in coalition]
    assert record["honest"] == honest

    # (i) the t-coalition's shares do not depend on the inputs (family false-alarm rate <= 1e-3, see top)
    independence = record["independence"]
    p_values = [test["p_value"] for test in independence["tests"]]
    assert len(p_values) == (3 if threshold == 1 else 3 * (threshold + 1))
    assert bonferroni(p_values) == pytest.approx(independence["bonferroni_p"])
    assert independence["bonferroni_p"] > 1e-3, independence["tests"]
    assert independence["samples_per_round"] == len(honest) * record["copies"]

    # (iii) t + 1 parties reconstruct every honest input; t parties hit none (chance rate 1/p)
    drill = record["threshold_drill"]
    assert drill["inputs"] == 2 * len(honest) * record["copies"]
    assert drill["reconstructed"] == drill["inputs"]
    assert len(drill["reconstructed_by"]) == threshold + 1 and drill["t_matches"] == 0

    # (ii) exact epsilon from the honest noise alone: m - t calibration meets the target, m misses it
    for entry in record["exact_epsilon"]:
        target, sensitivity = entry["target"], entry["sensitivity"]
        assert entry["coalition_calibrated"] == pytest.approx(target, abs=1e-6)
        assert entry["coalition_calibrated"] == pytest.approx(coalition_epsilon(
            epsilon=target, sensitivity=sensitivity, parties=parties, threshold=threshold,
            calibration_parties=parties - threshold), abs=1e-9)
        naive = coalition_epsilon(epsilon=target, sensitivity=sensitivity, parties=parties, threshold=threshold,
                                  calibration_parties=parties)
        assert entry["naive"] == pytest.approx(naive, abs=1e-9) and naive > target + 1e-3

    # (ii) released - coalition's own draws = true sum + honest noise, exactly
    noise = record["noise"]
    assert noise["exact"] and noise["released"] - noise["coalition_draws"] == noise["true_sum"] + noise["honest_draws"]
    assert sum(noise["coalition_draws_by_party"].values()) == noise["coalition_draws"]
    known = record["known_draws"]
    assert known["coalition_draws"] == sum(known_draw(p, 0) for p in coalition)
    assert known["honest_noise"] == sum(known_draw(p, 0) for p in honest) == known["honest_draws"]
    assert known["true_sum"] == noise["true_sum"]


def _log_ratio_at_zero(total_shape: float, alpha: float) -> float:
    """``log P(Z = 0) / P(Z = 1)`` for ``Z = A - B``, ``A, B ~ NB(total_shape, alpha)`` iid (a lower bound on epsilon)."""
    from scipy import stats

    one_side = stats.nbinom.pmf(np.arange(400), total_shape, 1.0 - alpha)
    return float(np.log(np.sum(one_side * one_side) / np.sum(one_side[1:] * one_side[:-1])))


@pytest.mark.parametrize("parties, threshold", [(3, 1), (5, 2)])
def test_exact_epsilon_of_both_calibrations_at_sensitivity_one(parties: int, threshold: int) -> None:
    """Sensitivity 1: m - t calibration leaves exactly epsilon; 1/m calibration leaves more (e.g. (3, 1): ~1.39 eps).

    The check is independent of :mod:`dp.audit.engine`: the log-ratio of the honest noise's pmf at 0 and 1,
    from the negative binomial pmf directly, is a lower bound on the exact epsilon.
    """
    honest = parties - threshold
    for epsilon in (0.5, 1.0):
        alpha = float(np.exp(-epsilon))
        calibrated = coalition_epsilon(epsilon=epsilon, sensitivity=1, parties=parties, threshold=threshold,
                                       calibration_parties=honest)
        naive = coalition_epsilon(epsilon=epsilon, sensitivity=1, parties=parties, threshold=threshold,
                                  calibration_parties=parties)
        assert calibrated == pytest.approx(epsilon, abs=1e-6)
        assert _log_ratio_at_zero(1.0, alpha) == pytest.approx(epsilon, abs=1e-9)
        lower = _log_ratio_at_zero(honest / parties, alpha)
        assert lower > epsilon + 1e-3 and naive >= lower - 1e-9


@pytest.mark.multiparty
@pytest.mark.parametrize("coalition, fragment", [("0,1", "exactly t = 1"), ("3", "out of range 0..2")])
def test_bad_coalition_exits_2_with_one_line(coalition: str, fragment: str) -> None:
    command = scenario_command("drills.coalition", "-M3", "-B", str(free_base_port()), "--no-log", "--quick",
                               "--coalition", coalition)
    run = run_command(command, timeout=SUBPROCESS_TIMEOUT)
    assert run.code == 2, run.stderr
    assert "Traceback" not in run.stderr
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and fragment in lines[0], run.stderr
    assert "Coalition drills" not in run.stdout
