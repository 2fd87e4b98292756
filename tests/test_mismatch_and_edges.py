"""Issue 26: parties whose MPyC options differ stop at once (exit 2, one line); the last adversarial
cases give one line naming the right party, exit 2, and no party's path in a line another party sees.

Each case runs real parties as subprocesses on free ports (``tests/conftest.py``); the ones that need
no protocol (a refusal before any party connects) run one process.
"""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Sequence

import pytest

from conftest import ROOT, PartyRun, run_command, run_parties, scenario_command, small_table, write_csv

KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8,diaBP=40:160:8",
           "--seed", "4", "--ledger", "off"]


@pytest.fixture()
def party_files(tmp_path: Path) -> Path:
    """Three per-party files ``p0.csv``, ``p1.csv``, ``p2.csv`` cut from the small table."""
    header, values = small_table(45)
    for party in range(3):
        write_csv(tmp_path / f"p{party}.csv", header, values[party::3])
    return tmp_path


def one_line(run: PartyRun, code: int = 2) -> str:
    """The run exited ``code`` with exactly one ``error:`` line and no traceback; that line."""
    assert run.code == code, (run.code, run.stderr)
    assert "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, run.stderr
    return errors[0]


def same_line(runs: Sequence[PartyRun], code: int = 2) -> str:
    """Every party exited ``code`` with the same single line; that line."""
    lines = {one_line(run, code) for run in runs}
    assert len(lines) == 1, lines
    return lines.pop()


# ------------------------------------------------------------------------------ item 1: options differ


@pytest.mark.parametrize("extra, line", [
    (["-T", "0", "--allow-t0"], "error: party 1: -T 0 at party 1 but -T 1 at parties 0, 2: "),
    (["--no-prss"], "error: party 1: --no-prss given at party 1 but not given at parties 0, 2: "),
    (["--mix32-64bit"], "error: party 1: --mix32-64bit given at party 1 but not given at parties 0, 2: "),
    (["--no-numpy"], "error: party 1: --no-numpy given at party 1 but not given at parties 0, 2: "),
])
def test_one_party_with_other_mpyc_options_stops_every_party(party_files: Path, extra: list[str], line: str) -> None:
    """Before: all three hung > 90 s after connecting (-T, --no-prss, --mix32-64bit: the PRSS keys
    sent on connecting, or the message labels, differ), or ``internal error (AttributeError ...)``
    (--no-numpy).  Now the options are compared before MPyC reads a byte of a peer's connection."""
    base = ["--data", str(party_files / "p{pid}.csv"), *KENDALL, "--silence-limit", "10"]
    # a hang guard, not a timing: a party still running after 25 s is reported as code -999
    runs = run_parties([base, base + extra, base], timeout=25)
    assert same_line(runs).startswith(line)


def test_every_party_with_no_numpy_is_refused(party_files: Path) -> None:
    """Before: ``internal error (AttributeError: 'NoneType' object has no attribute 'ndarray')``, exit 1."""
    argv = ["--data", str(party_files / "p{pid}.csv"), *KENDALL, "--no-numpy"]
    line = same_line(run_parties([argv] * 3, timeout=60))
    assert line.startswith("error: party 0 (also parties 1, 2): --no-numpy is not supported"), line


def test_heartbeats_alone_do_not_count_as_an_answer() -> None:
    """A live peer (heartbeats arrive) that sends no protocol message while this party waits for it is
    named after ``STALL_FACTOR * limit`` seconds; before, heartbeats reset the clock and the wait was endless."""
    from secure.session import STALL_FACTOR, SilenceWatch

    watch = SilenceWatch([1, 2], limit=5.0, now=0.0)
    for second in range(1, 40):
        watch.heard(1, now=float(second), protocol=False)  # heartbeats only from party 1
        watch.heard(2, now=float(second))  # party 2 answers
        assert watch.observe([1, 2], now=float(second)) is None  # alive: never silent
        stall = watch.stalled(now=float(second))
        if second - 1 < STALL_FACTOR * 5.0:  # the wait started at the first look, second 1
            assert stall is None
        else:
            assert stall == (1, STALL_FACTOR * 5.0)
            break
    else:
        pytest.fail("the stalled peer was never named")
    # a protocol message restarts its clock
    watch.heard(1, now=40.0)
    assert watch.observe([1], now=40.0) is None  # waiting for party 1 only now
    assert watch.stalled(now=45.0) is None
