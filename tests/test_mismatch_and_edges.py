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


# ------------------------------------------------------------------------------ item 2: no path in shared lines


def test_roc_label_outside_zero_one_names_the_party_without_its_path(party_files: Path) -> None:
    """Before: ``error: party 1: label column 'label' of <that party's full path> must hold 0 or 1`` at every
    party.  Now the shared line names party 1 and the column; the path stays in party 1's own note."""
    header, values = small_table(45)
    rows = values[1::3].copy()
    rows[4, header.index("TenYearCHD")] = 2
    write_csv(party_files / "p1.csv", header, rows)
    argv = ["--data", str(party_files / "p{pid}.csv"), "--columns", "score,TenYearCHD", "--domain", "score=0:1",
            "--points", "16", "--ledger", "off"]
    runs = run_parties([argv] * 3, module="roc_private", timeout=60)
    line = same_line(runs)
    assert line == "error: party 1: label column 'TenYearCHD' must hold 0 or 1, found another value", line
    for run in runs:
        assert str(party_files) not in run.stderr and "p1.csv" not in run.stderr
    assert "p1.csv" in runs[1].stdout  # the local note, at party 1 only
    assert "p1.csv" not in runs[0].stdout + runs[2].stdout


# ------------------------------------------------------------------------------ items 4, 5, 6: one party, one line


def single(module: str, *argv: str) -> PartyRun:
    return run_command(scenario_command(module, *argv, "--no-log", "--ledger", "off"), timeout=120)


@pytest.mark.parametrize("module, argv, line", [
    # item 4: before, an OverflowError traceback (ustat) or "internal error (OverflowError ...)" (rank_auc), exit 1
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:1e308,b=0:100"],
     "error: party 0: domain of column 'a' is too wide for its fixed-point encoding: (upper - lower) * 2^8 = inf "
     "steps, at most 2^62; declare a narrower domain or fewer fractional bits"),
    ("rank_auc", ["--columns", "score,label", "--domain", "score=0:1e308:16"],
     "error: party 0: domain of column 'score' is too wide for its fixed-point encoding: (upper - lower) * 2^16 = "
     "inf steps, at most 2^62; declare a narrower domain or fewer fractional bits"),
    # item 6: before, the last --epsilon won; -M 0 ran as one party
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "--epsilon", "1", "--epsilon", "2"],
     "error: party 0: --epsilon given twice: give it once (it takes one value)"),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "--epsilon=1", "--epsilon", "1"],
     "error: party 0: --epsilon given twice: give it once (it takes one value)"),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "-M", "0"],
     "error: party 0: -M must be at least 1, got 0"),
    # a path the options exclude: refused when the options are parsed (dp.umpc.Query), exit 2 and one line
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "--path", "sort"],
     "error: party 0: --path sort runs only auc and gini (a rank-sum form after one secure sort), not 'kendall'"),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "--clip", "secure", "--path",
               "histogram"], "error: party 0: --path histogram counts each party's rows at the party, so its clipping "
                             "is local, but --clip secure clips inside MPC"),
    # item 5: shared parameters, "all parties" is right; exit 2 and one line
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "-L", "0"],
     "error: all parties: the complete kendall of n = 4 rows on the histogram path needs 11-bit secure integers "
     "(sums over all tuples and their noise), got -L 0; give -L 11 or more"),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "-L", "8"],
     "error: all parties: the complete kendall of n = 4 rows on the histogram path needs 11-bit secure integers "
     "(sums over all tuples and their noise), got -L 8; give -L 11 or more"),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10", "-L", "-5"],
     "error: all parties: the complete kendall of n = 4 rows on the histogram path needs 11-bit secure integers "
     "(sums over all tuples and their noise), got -L -5; give -L 11 or more"),
])
def test_one_line_exit_2(tmp_path: Path, module: str, argv: list[str], line: str) -> None:
    data = tmp_path / "t.csv"
    data.write_text("a,b,score,label\n1,2,0.5,1\n3,4,0.25,0\n5,6,0.75,1\n2,1,0.125,0\n")
    assert one_line(single(module, "--data", str(data), *argv)).startswith(line)


#: the six jobs, each reading one score or two columns of a header-only file
JOBS = [
    ("ustat", ["--stat", "auc", "--columns", "score,label", "--domain", "score=0:1"]),
    ("ecdf", ["--columns", "score", "--domain", "score=0:1"]),
    ("ecdf_fss", ["--columns", "score", "--domain", "score=0:1"]),
    ("rank_auc", ["--columns", "score,label", "--domain", "score=0:1:8"]),
    ("roc_private", ["--columns", "score,label", "--domain", "score=0:1"]),
    ("hosmer_lemeshow", ["--columns", "score,label", "--domain", "score=0:1"]),
]


@pytest.mark.parametrize("module, argv", JOBS, ids=[module for module, _ in JOBS])
def test_header_only_file_names_its_party(tmp_path: Path, module: str, argv: list[str]) -> None:
    """Before: ``error: all parties: need at least ... rows over all parties ..., got 0``: a header-only
    file is one party's input, so the line names the party."""
    data = tmp_path / "empty.csv"
    data.write_text("score,label\n")
    assert one_line(single(module, "--data", str(data), *argv)) == \
        "error: party 0: its data has no rows (a header line only)"


def test_header_only_files_at_every_party_name_every_party(tmp_path: Path) -> None:
    data = tmp_path / "empty.csv"
    data.write_text("score,label\n")
    argv = ["--data", str(data), "--stat", "auc", "--columns", "score,label", "--domain", "score=0:1", "--ledger", "off"]
    assert same_line(run_parties([argv] * 3, timeout=60)) == \
        "error: party 0 (also parties 1, 2): its data has no rows (a header line only); no party holds a row"


def test_duplicate_column_in_the_header_is_refused(tmp_path: Path) -> None:
    """Before: ``a,a,b`` ran on the first ``a``."""
    data = tmp_path / "dup.csv"
    data.write_text("a,a,b\n1,2,3\n4,5,6\n7,1,2\n")
    run = single("ustat", "--data", str(data), "--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10")
    assert one_line(run) == "error: party 0: its data file has 2 columns named 'a': rename all but one"
    assert str(data) in run.stdout  # the path: in this party's own note only


def test_a_fifo_as_data_is_not_a_regular_file(tmp_path: Path) -> None:
    """Before: ``cannot read its data file: no such file``."""
    import os

    fifo = tmp_path / "rows"
    os.mkfifo(fifo)
    run = single("ustat", "--data", str(fifo), "--stat", "kendall", "--columns", "a,b", "--domain", "a=0:10,b=0:10")
    assert one_line(run) == "error: party 0: cannot read its data file: not a regular file"


def test_a_party_that_never_started_is_named(tmp_path: Path) -> None:
    """Parties 0 and 1 of three, party 2 never started: before, ``not all 3 parties connected within 3 s``
    without saying which; now both name party 2 (exit 1: a missing party, not a usage mistake)."""
    from conftest import free_base_port

    port = free_base_port()
    processes = [subprocess.Popen(scenario_command("ustat", "-M", "3", "-I", str(index), "-B", str(port), "--no-log",
                                                   "--silence-limit", "3", "--ledger", "off"),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for index in (0, 1)]
    for index, process in enumerate(processes):
        out, err = process.communicate(timeout=60)
        line = one_line(PartyRun(process.returncode, out, err), code=1)
        # the first to reach its deadline says so; the other may see it leave first: both name party 2
        assert line.startswith(f"error: party {index}: not all 3 parties connected"), line
        assert "(no connection from party 2" in line and "lost connection" not in line, line
