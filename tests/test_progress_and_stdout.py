"""Progress inside long phases and a stdout that is the result alone (issue 22, item 8)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from mpyc.runtime import mpc

from conftest import ROOT, free_base_port
from dp.umpc.planner import MIN_PROGRESS_BATCH, TUPLES_PER_BATCH, batch_size
from secure import meter
from secure.clipping import MIN_CLIP_ROWS, clip_secure, clip_secure_in_steps

#: the start of a line of Python's logging as MPyC configures it ('{asctime} {message}')
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} ")


def test_kernel_batches_give_about_twenty_steps() -> None:
    assert batch_size(8476) == 1024 and -(-8476 // batch_size(8476)) == 9  # the demo's 2n: 9 steps, not 1
    assert batch_size(10 ** 6) == 50000  # 20 steps
    assert batch_size(10 ** 8) == TUPLES_PER_BATCH and batch_size(10) == MIN_PROGRESS_BATCH


def test_clipping_in_steps_equals_clipping_at_once_and_reports_each_step() -> None:
    reports: list[tuple[str, int, int]] = []
    rows = 3 * MIN_CLIP_ROWS + 5  # four slices
    generator = np.random.default_rng(3)
    raw = np.column_stack([generator.integers(-50, 150, rows), generator.integers(0, 2, rows)])
    secint = mpc.SecInt(16)

    async def both() -> tuple[list[int], list[int]]:
        shared = secint.array(raw)
        stepped = await clip_secure_in_steps(shared, [100, None])
        return list(await mpc.output(clip_secure(shared, [100, None]))), list(await mpc.output(stepped))

    meter.set_progress_reporter(lambda task, done, total: reports.append((task, done, total)))
    try:
        at_once, stepped = mpc.run(both())
    finally:
        meter.set_progress_reporter(None)
    np.testing.assert_array_equal(np.array(stepped), np.array(at_once))
    np.testing.assert_array_equal(np.array(stepped).reshape(rows, 2)[:, 0], np.clip(raw[:, 0], 0, 100))
    assert reports == [("secure clipping", done, 4) for done in range(5)]


def test_progress_log_lines_carry_percentages(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO"):
        meter.report_progress("kernel batches", 3, 9)
    assert "kernel batches: 3/9 (33 %)" in caplog.text


def _three_parties(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    generator = np.random.default_rng(11)
    a = generator.uniform(0, 100, 600)
    b = np.clip(a / 2 + generator.normal(0, 10, 600), 0, 100)
    data = tmp_path / "rows.csv"
    data.write_text("a,b\n" + "".join(f"{x:.2f},{y:.2f}\n" for x, y in zip(a, b)), encoding="utf-8")
    command = [sys.executable, "-m", "scenarios.ustat", "-M3", "-B", str(free_base_port()), "--data", str(data),
               "--stat", "kendall", "--columns", "a,b", "--domain", "a=0:100,b=0:100", "--precision", "2",
               "--ledger", str(tmp_path / "ledger"), *options]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=180)


@pytest.mark.multiparty
def test_a_three_party_run_prints_the_table_alone_on_stdout(tmp_path: Path) -> None:
    """MPyC's log on stderr; stdout: the pure-budget noise line, then the table (a pure account takes the
    histogram path: it cannot pay the comparisons' delta)."""
    done = _three_parties(tmp_path, "--path", "histogram", "--budget", "5")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert not [line for line in out if LOG_LINE.match(line)]  # the old code logged 'Start MPyC runtime' here
    assert out[0].startswith("noise: party-drawn shares, not the in-MPC sampler") and "x1.5 (m = 3, t = 1)" in out[0]
    assert out[1].startswith("Private U-statistic")
    assert "All 3 parties connected." in done.stderr


@pytest.mark.multiparty
def test_the_kernel_phase_reports_its_progress_on_stderr(tmp_path: Path) -> None:
    """Sampled tuples: the kernel phase's batches are reported on stderr, never on stdout."""
    done = _three_parties(tmp_path, "--pairs", "2n", "--budget", "5:1e-9")
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert not [line for line in out if LOG_LINE.match(line)] and out[0].startswith("Private U-statistic")
    assert "kernel batches: 2/2 (100 %)" in done.stderr  # 2n = 1200 tuples: two batches of 1024 and 176
