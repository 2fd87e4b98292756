"""Bad input and faults with three real parties: every party stops with the same one-line error.

Each bad input: all parties exit 2 within 30 s, one line ``error: party i: ...`` naming the party and
the problem, no traceback.  A party killed mid-run: the others exit 1 within 60 s, nothing released.
"""
from __future__ import annotations

import signal
import sys
import subprocess
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest

from conftest import ROOT, PartyRun, free_base_port, read_record, run_parties, scenario_command, small_table, write_csv

pytestmark = pytest.mark.multiparty

KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8,diaBP=40:160:8",
           "--seed", "4"]


def _with(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """``argv`` with each ``--option value`` of ``flags`` replacing the option's value, or appended (a
    single-valued option given twice is itself refused)."""
    out = list(argv)
    for option, value in zip(flags[::2], flags[1::2]):
        if option in out:
            out[out.index(option) + 1] = value
        else:
            out += [option, value]
    return out


def _same(argv: Sequence[str]) -> list[list[str]]:
    return [list(argv)] * 3


def assert_all_refuse(runs: list[PartyRun], party: int | None, fragment: str, code: int = 2) -> None:
    """Every party exited ``code`` with the same single ``error: party i: ...`` line, no traceback.

    ``party=None``: a problem of the union of the rows, named ``error: all parties: ...``.
    """
    lines = []
    for run in runs:
        assert run.code == code, run.stderr
        assert "Traceback" not in run.stderr
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, run.stderr
        lines.append(errors[0])
        assert "private estimate" not in run.stdout
    assert len(set(lines)) == 1, lines
    named = "all parties" if party is None else f"party {party}"
    assert lines[0].startswith(f"error: {named}"), lines[0]
    assert fragment in lines[0], lines[0]


def _timed(argvs: list[list[str]]) -> tuple[list[PartyRun], float]:
    start = time.monotonic()
    runs = run_parties(argvs, timeout=60)
    return runs, time.monotonic() - start


def test_non_numeric_cell_at_one_party_stops_all(party_files: Path) -> None:
    text = (party_files / "p1.csv").read_text().splitlines()
    cells = text[3].split(",")
    cells[text[0].split(",").index("diaBP")] = "high"
    text[3] = ",".join(cells)
    (party_files / "p1.csv").write_text("\n".join(text) + "\n")
    runs, seconds = _timed(_same(["--data", str(party_files / "p{pid}.csv"), *KENDALL]))
    assert_all_refuse(runs, 1, "column 'diaBP' has a value that is not a number")
    assert seconds < 30
    for run in runs:  # the shared line carries no row data: no cell value, no line number
        assert "high" not in run.stderr and "line 4" not in run.stderr
    assert "note (at this party, not shared)" in runs[1].stdout and "line 4" in runs[1].stdout
    assert "high" not in runs[0].stdout + runs[2].stdout


def test_missing_file_at_one_party_stops_all(party_files: Path) -> None:
    (party_files / "p2.csv").unlink()
    runs, seconds = _timed(_same(["--data", str(party_files / "p{pid}.csv"), *KENDALL]))
    assert_all_refuse(runs, 2, "cannot read its data file: no such file")
    assert seconds < 30


def test_auc_label_outside_zero_one_stops_all(party_files: Path) -> None:
    header, values = small_table(45)
    values = values[2::3].copy()
    values[5, header.index("TenYearCHD")] = 2
    write_csv(party_files / "p2.csv", header, values)
    argv = ["--data", str(party_files / "p{pid}.csv"), "--stat", "auc", "--columns", "score,TenYearCHD",
            "--domain", "score=0:1:8"]
    runs = run_parties(_same(argv))
    assert_all_refuse(runs, 2, "column 'TenYearCHD' must hold labels 0/1, found another value")
    assert "the first 2" in runs[2].stdout and "the first" not in runs[0].stdout  # the value: local detail only


def test_missing_values_are_refused_by_default_and_filled_when_declared(party_files: Path, tmp_path: Path) -> None:
    """Default policy refuse: every party stops, the line names party and column only (no count, no
    line); with --missing fill the declared values stand in and n stays the number of rows."""
    header = (party_files / "p1.csv").read_text().splitlines()[0].split(",")
    sys_bp = header.index("sysBP")
    text = (party_files / "p1.csv").read_text().splitlines()
    for line in (1, 2):
        cells = text[line].split(",")
        cells[sys_bp] = "NA" if line == 1 else ""
        text[line] = ",".join(cells)
    (party_files / "p1.csv").write_text("\n".join(text) + "\n")
    runs = run_parties(_same(["--data", str(party_files / "p{pid}.csv"), *KENDALL]))
    assert_all_refuse(runs, 1, "column 'sysBP' has a missing value")
    assert all("2 " not in run.stderr and "line" not in run.stderr for run in runs)
    out = tmp_path / "r.json"
    runs = run_parties(_same(["--data", str(party_files / "p{pid}.csv"), *KENDALL, "--missing", "fill",
                              "--fill", "sysBP=190,diaBP=100", "--json", str(out)]))
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    record = read_record(out)
    assert record["n"] == 45 and record["missing"] == "fill" and record["fill"] == {"diaBP": 100.0, "sysBP": 190.0}
    assert "dropped_missing" not in record and "clipped" not in record
    assert "at this party, not shared: 2 missing value(s) filled" in runs[1].stdout
    assert "at this party, not shared: 0 missing value(s) filled" in runs[0].stdout


def test_values_outside_domain_are_clipped_and_the_count_stays_local(party_files: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    argv = ["--data", str(party_files / "p{pid}.csv"), "--stat", "kendall", "--columns", "sysBP,diaBP",
            "--domain", "sysBP=80:130:8,diaBP=40:160:8", "--json", str(out)]
    runs = run_parties(_same(argv))
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    header, values = small_table(45)
    record = read_record(out)
    assert "clipped" not in record and record["clipping"] == "local"
    own = [int(np.sum(values[party::3, header.index("sysBP")] > 130)) for party in range(3)]
    assert sum(own) > 0 and len(set(own)) > 1  # the parties' counts differ, so a printed total would show
    for party, run in enumerate(runs):  # each party prints its own count, none prints another's
        assert f"not shared: 0 missing value(s) filled, {own[party]} value(s) clipped" in run.stdout


def test_fewer_rows_than_the_degree_stops_all(tmp_path: Path) -> None:
    header, values = small_table(45)
    write_csv(tmp_path / "p0.csv", header, values[:1])
    for party in (1, 2):
        write_csv(tmp_path / f"p{party}.csv", header, values[:0])
    runs = run_parties(_same(["--data", str(tmp_path / "p{pid}.csv"), *KENDALL]))
    assert_all_refuse(runs, None, "need at least 2 rows over all parties for a degree-2 kernel, got 1")


@pytest.mark.parametrize("flags, fragment", [
    (["--epsilon", "0"], "epsilon must be positive, got 0"),
    (["--epsilon", "-1"], "epsilon must be positive"),
    (["--epsilon", "inf"], "epsilon must be finite"),
    (["--epsilon", "nan"], "epsilon must be finite"),
    (["--delta", "1"], "delta must lie in [0, 1)"),
    (["--delta", "-0.5"], "delta must lie in [0, 1)"),
    (["--pairs", "0"], "--pairs must be at least 1, got 0"),
    (["--pairs", "991"], "--pairs 991 asks for 991 tuples, more than the C(45, 2) = 990 distinct ones"),
    (["--stat", "median"], "invalid choice: 'median'"),
    (["--columns", "sysBP,weight"], "its data file has no column 'weight'"),
])
def test_bad_parameters_stop_all(party_files: Path, flags: list[str], fragment: str) -> None:
    argv = _with(["--data", str(party_files / "p{pid}.csv"), *KENDALL], flags)
    if "weight" in fragment:
        argv = _with(argv, ["--domain", "sysBP=80:300:8,weight=0:200"])
    runs, seconds = _timed(_same(argv))
    assert_all_refuse(runs, None if "distinct" in fragment else 0, fragment)
    assert seconds < 30


@pytest.mark.parametrize("override, fragment", [
    (["--epsilon", "2"], "parameters differ from party 0: epsilon=2.0 at party 1 but 1.0 at party 0"),
    (["--columns", "diaBP,sysBP"], "parameters differ from party 0: columns="),
])
def test_parties_disagreeing_on_parameters_stop_before_sharing(party_files: Path, override: list[str],
                                                               fragment: str) -> None:
    base = ["--data", str(party_files / "p{pid}.csv"), *KENDALL]
    runs, seconds = _timed([base, _with(base, override), base])
    assert_all_refuse(runs, 1, fragment)
    assert seconds < 30


def test_domain_too_wide_for_the_secure_integers_stops_all(party_files: Path) -> None:
    argv = ["--data", str(party_files / "p{pid}.csv"), *KENDALL, "-L", "12"]
    assert_all_refuse(run_parties(_same(argv)), None, "need 17-bit secure integers, got -L 12; give -L 17")


def test_overflowing_sum_is_caught_by_the_guarded_reveal(party_files: Path) -> None:
    """Gini of totChol at 6 fractional bits fits 17-bit comparisons, but its sum (about 2.8e6) does not
    fit -L 20.  epsilon = 1e9 makes the noise zero: with epsilon = 1 the noise (std about 3e6 here) could
    itself bring the released value back inside 20 bits."""
    argv = ["--data", str(party_files / "p{pid}.csv"), "--stat", "gini", "--columns", "totChol",
            "--domain", "totChol=100:700:6", "--pairs", "all", "--path", "tuples", "--seed", "3", "--epsilon", "1e9",
            "-L", "20"]
    runs = run_parties(_same(argv))
    for run in runs:
        assert run.code == 1, run.stderr
        assert "Traceback" not in run.stderr and "private estimate" not in run.stdout
        assert "wrapped around, so nothing is released; rerun with -L" in run.stderr


def test_party_killed_mid_run_ends_the_others_without_release(tmp_path: Path) -> None:
    header, values = small_table(400)
    csv = write_csv(tmp_path / "big.csv", header, values)
    port = free_base_port()
    processes = []
    for party in range(3):
        command = scenario_command("ustat", "--data", str(csv), *KENDALL, "--pairs", "30000",
                                   "-M3", "-I", str(party), "-B", str(port))
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          cwd=ROOT))
    victim = processes[1]
    assert victim.stderr is not None
    for line in victim.stderr:  # MPyC's log (on stderr): wait until the kernel phase has started
        if "phase kernel" in line:
            break
    time.sleep(0.5)
    victim.kill()
    start = time.monotonic()
    for party in (0, 2):
        out, err = processes[party].communicate(timeout=60)
        assert processes[party].returncode == 1, err
        assert "lost connection to party 1 during the kernel phase; nothing was released" in err
        assert "private estimate" not in out and "Traceback" not in err
    victim.communicate()
    assert time.monotonic() - start < 60


def _kill_while_descheduled(csv: Path, pause: float) -> list[str]:
    """Party 1 is killed in the kernel phase while party 2 is stopped (``SIGSTOP``, from 0.3 s before the kill
    to ``pause`` seconds after it), as a survivor whose event loop is busy or descheduled would be; returns the
    survivors' error lines."""
    port = free_base_port()
    processes = [subprocess.Popen(scenario_command("ustat", "--data", str(csv), *KENDALL, "--pairs", "30000",
                                                   "-M3", "-I", str(party), "-B", str(port)),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                  for party in range(3)]
    victim, slow = processes[1], processes[2]
    assert victim.stderr is not None
    for line in victim.stderr:  # MPyC's log (on stderr): wait until the kernel phase has started
        if "phase kernel" in line:
            break
    slow.send_signal(signal.SIGSTOP)
    time.sleep(0.3)  # party 2 falls behind in the kernel phase: messages to it pile up unread
    victim.kill()
    time.sleep(pause)
    slow.send_signal(signal.SIGCONT)
    lines = []
    for party in (0, 2):
        out, err = processes[party].communicate(timeout=60)
        assert processes[party].returncode == 1, err
        assert "private estimate" not in out and "Traceback" not in err
        lines += [line for line in err.splitlines() if line.startswith("error:")]
    victim.communicate()
    return lines


def test_every_survivor_names_the_killed_party_even_when_busy_meanwhile(tmp_path: Path) -> None:
    """Issue 26 item 5: a survivor whose event loop was busy when party 1 died used to find both party 1's
    and the other survivor's closed connections at once and name whichever it processed first ("lost
    connection to party 0").  Party 2 is held stopped until 1 s after the kill: longer than the old fixed
    0.5 s during which party 0 kept its connections open, shorter than the LOST_PEER_GRACE (3 s) during
    which party 0 now waits for party 2 to learn, from party 0's notice, which party was lost.

    On the old code party 2 named party 0 in 19 of 20 such runs: it passes one run with probability
    about 0.05, all six about 0.05^6.  On the new code the notice precedes
    party 0's close on the same connection (TCP keeps the order), so the check fails only if party 2 is
    still not scheduled 2 s after its SIGCONT with the notice also stuck in party 0's send buffer: 0 of
    the 20 runs above, and 0 of 40 with party 2 stopped only from the kill on.
    """
    header, values = small_table(400)
    csv = write_csv(tmp_path / "big.csv", header, values)
    for _ in range(6):
        lines = _kill_while_descheduled(csv, pause=1.0)
        assert lines == [f"error: party {party}: lost connection to party 1 during the kernel phase; nothing was "
                         f"released" for party in (0, 2)], lines


def test_a_party_late_to_learn_the_verdict_still_names_it(tmp_path: Path) -> None:
    """Every party stops on the same usage verdict, but party 0's frames reach party 1 a second late: party 2
    holds every verdict first and must not close its connections before party 1 has them too (it did: party 1
    then saw party 2 gone in the connect phase and named a lost party, exit 1)."""
    from conftest import collect_parties

    port, processes = free_base_port(), []
    for index in range(3):
        # 1 s late: without the ordered stop party 2 closes at once; with it, it waits up to 3 s for party 1
        command = [sys.executable, str(ROOT / "tests/programs/slow_verdict.py"), "1", "--not-an-option", "-M3", "-I",
                   str(index), "-B", str(port), "--no-log"]
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT))
    assert_all_refuse(collect_parties(processes, 60), 0, "unknown option --not-an-option")
