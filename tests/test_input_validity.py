"""Validity checks of each party's secret count input (issue 21, item 8).

A party that inputs a count vector summing to more than its public row count moved Kendall's tau
from 0.742 to -0.124, the ECDF from 0.533 to 0.946 and the rank AUC from 0.500 to 0.002.  Now every
job with a count input tests, per party, that its vector sums to its public rows (one secure zero
test) and, where the vector is small enough, that its cells are counts (bits); a failing party is
named at every party and nothing is released.

The in-process tests run one MPyC party (``-M1``: the check is per party, so party 0 deviating is
the case to test); the job tests start three parties with party 1 running
:mod:`scenarios.drills.deviating_party`.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mpyc.runtime import mpc

import secure.aggregation as aggregation
from conftest import ROOT, PartyRun, collect_parties, free_base_port
from scenarios.drills.deviating_party import Deviation, deviate, split_deviation
from scenarios.drills.malicious_input import COUNT_JOBS
from secure.errors import InputError


def _sum(own: np.ndarray, totals: list[int], *, nonnegative: bool | None) -> list[int]:
    async def run() -> list[int]:
        joint = await aggregation.sum_counted_vectors(mpc.SecInt(32), own, totals, nonnegative=nonnegative)
        return [int(v) for v in await mpc.output(list(joint))]

    return mpc.run(run())


@pytest.mark.parametrize("nonnegative", [False, True])
def test_an_honest_histogram_passes_and_sums(nonnegative: bool) -> None:
    assert _sum(np.array([3, 0, 2, 1]), [6], nonnegative=nonnegative) == [3, 0, 2, 1]


@pytest.mark.parametrize("nonnegative", [False, True])
@pytest.mark.parametrize("total", [5, 7])
def test_a_vector_of_another_total_is_refused_naming_the_party(nonnegative: bool, total: int) -> None:
    with pytest.raises(InputError, match=r"^party 0: its count vector does not sum to its public row count "
                                         r"\(deviating party\); nothing is released$"):
        _sum(np.array([3, 0, 2, 1]), [total], nonnegative=nonnegative)


def test_a_negative_cell_of_the_right_total_is_refused_by_the_bit_proof(monkeypatch: pytest.MonkeyPatch) -> None:
    """+4 in cell 0 and -4 in cell 3 keeps the total 6; the 'bit' -4 is caught.  With the sum check
    alone the same vector passes (the mutation the proof exists for)."""
    honest_bits = aggregation.count_bits

    def cheating_bits(counts: np.ndarray, width: int) -> np.ndarray:
        bits = honest_bits(np.array([7, 0, 2, 0]), width)
        bits[3, 0] = -3  # cell 3 rebuilt as -3: the vector 7, 0, 2, -3 sums to 6
        return bits

    assert _sum(np.array([7, 0, 2, -3]), [6], nonnegative=False) == [7, 0, 2, -3]  # the sum check alone passes it
    monkeypatch.setattr(aggregation, "count_bits", cheating_bits)
    with pytest.raises(InputError, match=r"^party 0: its count vector has a cell that is not a count of its rows"):
        _sum(np.array([3, 0, 2, 1]), [6], nonnegative=True)


def test_count_bits_are_exact_and_refuse_what_no_party_counts() -> None:
    bits = aggregation.count_bits(np.array([0, 5, 7]), 3)
    assert bits.tolist() == [[0, 0, 0], [1, 0, 1], [1, 1, 1]]
    assert (bits @ (1 << np.arange(3))).tolist() == [0, 5, 7]
    with pytest.raises(ValueError):
        aggregation.count_bits(np.array([8]), 3)
    with pytest.raises(ValueError):
        aggregation.count_bits(np.array([-1]), 3)


def test_the_proof_runs_by_size_from_public_parameters_only() -> None:
    sectype = mpc.SecInt(32)
    assert aggregation._proves_nonnegative(1026, [1413, 1413, 1412], sectype, None) == 11
    assert aggregation._proves_nonnegative(aggregation.NONNEGATIVE_MAX_ELEMENTS, [1], sectype, None) == 1
    assert aggregation._proves_nonnegative(aggregation.NONNEGATIVE_MAX_ELEMENTS + 1, [1], sectype, None) == 0
    assert aggregation._proves_nonnegative(10, [5], sectype, False) == 0


def test_the_deviations_of_the_drill_party() -> None:
    own = np.array([2, 3, 0, 4, 9, 1])  # 4 grid cells, above the grid, outside the subset
    assert deviate(own, Deviation("inflate", 5), 4).tolist() == [7, 3, 0, 4, 9, 1]
    assert deviate(own, Deviation("shift", 0), 4).tolist() == [9, 0, 0, 0, 9, 1]
    assert deviate(own, Deviation("negative", 5), 4).tolist() == [7, 3, 0, -1, 9, 1]
    assert split_deviation(["--inflate-counts", "0", "--epsilon", "1"])[0].error is not None
    assert split_deviation(["--shift-counts", "--inflate-counts", "3"])[0].error is not None
    bias = split_deviation(["--bias-noise", "7"])[0]
    assert (bias.kind, bias.amount, bias.error) == ("bias", 7, None)
    deviation, rest = split_deviation(["--scenario", "ecdf", "--inflate-counts", "3", "--epsilon", "1"])
    assert (deviation.kind, deviation.amount, deviation.scenario, deviation.error, rest) == \
        ("inflate", 3, "ecdf", None, ["--epsilon", "1"])


# ------------------------------------------------------------------------------------------ the jobs

def _three(job: str, deviation: list[str], tmp_path: Path, timeout: float = 120.0) -> list[PartyRun]:
    """Parties 0 and 2 run ``job`` unchanged, party 1 the deviating party with ``deviation``."""
    args, _ = COUNT_JOBS[job]
    port = free_base_port()
    processes = []
    for index in range(3):
        module = (["scenarios.drills.deviating_party", "--scenario", job, *deviation] if index == 1
                  else [f"scenarios.{job}"])
        command = [sys.executable, "-m", *module, *args, "-M", "3", "-I", str(index), "-B", str(port), "--no-log"]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}))
    return collect_parties(processes, timeout)


@pytest.mark.multiparty
@pytest.mark.parametrize("job", list(COUNT_JOBS))
def test_a_count_vector_of_more_rows_than_declared_is_refused_at_every_party(job: str, tmp_path: Path) -> None:
    runs = _three(job, ["--inflate-counts", "250"], tmp_path)
    lines = [r.stderr.strip().splitlines() for r in runs]
    assert [r.code for r in runs] == [2, 2, 2], lines
    assert all(len(line) == 1 and line == lines[0] for line in lines), lines
    expected = ("its DCF keys are not one per public row" if job == "ecdf_fss"
                else "does not sum to its public row count")
    assert lines[0][0].startswith("error: party 1: ") and expected in lines[0][0] and "deviating party" in lines[0][0]
    assert not any(r.stdout.count("private estimate") or "F(" in r.stdout for r in runs)  # nothing released
    assert "Traceback" not in "".join(r.stderr for r in runs)


def _statistics_run(deviating: bool) -> Any:
    """Hosmer-Lemeshow's statistics check, in process: party 0's group counts (one row more in group 0
    when ``deviating``, with its expected value to match, as a careful deviating party would)."""
    from dp.ecdf import hosmer_lemeshow as hl

    scale, groups = 16, 3
    expected = np.array([[10, 20, 5], [22, 28, 11]])  # E1 + E0 = 16 * (O1 + O0) per group
    observed = np.array([[1, 2, 0], [1, 1, 1]])
    if deviating:
        expected[1, 0] += scale
        observed[1, 0] += 1
    own = np.concatenate([expected.ravel(), observed.ravel()])

    async def run() -> list[int]:
        total = await hl._checked_statistics(mpc.SecInt(32), own, groups, scale, 6)
        return [int(v) for v in await mpc.output(list(total))]

    return mpc.run(run())


def test_hosmer_lemeshow_group_counts_must_sum_to_the_party_rows() -> None:
    assert _statistics_run(False)[-6:] == [1, 2, 0, 1, 1, 1]
    with pytest.raises(InputError, match=r"^party 0: its group counts does not sum to its public row count"):
        _statistics_run(True)
