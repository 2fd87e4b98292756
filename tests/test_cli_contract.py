"""The command-line contract against misuse (issue 11, points 2, 3 and 9).

- Only exact option names: MPyC's parser would expand ``--se`` to its security parameter and ``--co``
  to ``--config``; our own parser would expand ``--eps``.  Each is refused with exit 2 and one line.
- Shamir needs ``2t + 1 <= m``: an impossible ``-T`` exits 2 at once; ``t = 0`` with ``m > 1`` hides
  nothing and is refused unless ``--allow-t0``, and then the output says so.
- Local ``-M m`` runs pick free ports (two runs at once do not join each other); a party that fails
  before all parties connected is reported by party 0 with its first error line.
"""
from __future__ import annotations

import socket
import sys
import subprocess
import time

import pytest

from conftest import ROOT, PartyRun, free_base_port, run_command, run_parties, scenario_command

SMALL = ["--pairs", "40", "--seed", "3", "--no-log"]


def one_error_line(run: PartyRun) -> str:
    """The single ``error:`` line of a run that refused (no traceback, nothing else on stderr)."""
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert "Traceback" not in run.stderr, run.stderr
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: party "), lines[0]
    return lines[0]


@pytest.mark.parametrize("words, named", [
    (["--se", "5"], "--se"),                 # MPyC: --sec-param (would silently weaken comparisons)
    (["--co", "a,b"], "--co"),               # MPyC: --config
    (["--bit", "16"], "--bit"),              # MPyC: --bit-length
    (["--eps", "0.5"], "--eps"),             # ours: --epsilon
    (["--sta", "gini"], "--sta"),            # ours: --stat
])
def test_abbreviated_option_is_refused(words: list[str], named: str) -> None:
    run = run_command(scenario_command("ustat", *words, *SMALL), timeout=60)
    assert run.code == 2
    line = one_error_line(run)
    assert f"unknown option {named} " in line and "spelled out" in line
    assert "private estimate" not in run.stdout


@pytest.mark.parametrize("module, words, expected", [
    ("ustat", ["--out", "x"], "ambiguous option --out (could be --output-windows, --output-file): give it in full"),
    ("ustat", ["--no"], "ambiguous option --no (could be --no-log, "),
    ("ustat", ["--s", "5"], "ambiguous option --s (could be --ssl, --sec-param)"),
    ("ecdf", ["--out", "x"], "ambiguous option --out "),
    ("ecdf_fss", ["--no"], "ambiguous option --no "),
    ("rank_auc", ["--s", "5"], "ambiguous option --s "),
    ("ustat", ["--l"], "unknown option --l (options must be spelled out in full; MPyC would read it as --log-level)"),
    ("ustat", ["--c"], "MPyC would read it as --config"),
    ("ustat", ["-L"], "MPyC option -L/--bit-length: expected one argument"),
    ("ecdf", ["--log-level"], "MPyC option --log-level: expected one argument"),
    ("rank_auc", ["-M", "x"], "MPyC option -M: invalid int value: 'x'"),
])
def test_mpyc_parser_problem_is_one_line(module: str, words: list[str], expected: str) -> None:
    """G1: MPyC's own parser never prints its usage: an ambiguous abbreviation or an MPyC option without its
    value is one line ``error: party 0: ...`` with exit 2 (before: five lines of MPyC usage)."""
    run = run_command(scenario_command(module, *SMALL, *words), timeout=60)
    assert run.code == 2, run.stderr
    line = one_error_line(run)
    assert line.startswith("error: party 0: ") and expected in line, line
    assert "usage:" not in run.stderr and "usage:" not in run.stdout


@pytest.mark.multiparty
def test_ambiguous_option_with_launched_parties_is_one_line() -> None:
    """G1: ``-M3 --out x``: party 0 and the parties it launched agree on the same one line."""
    run = run_command(scenario_command("ustat", "-M3", *SMALL, "--out", "x"), timeout=90)
    assert run.code == 2, run.stderr
    assert "ambiguous option --out (could be --output-windows, --output-file)" in one_error_line(run)


def test_mpyc_help_still_works() -> None:
    """-H still prints MPyC's help, -h ours (exit 0 both)."""
    mpyc_help = run_command(scenario_command("ustat", "-H"), timeout=60)
    ours = run_command(scenario_command("ustat", "-h"), timeout=60)
    assert mpyc_help.code == 0 and "--output-windows" in mpyc_help.stdout
    assert ours.code == 0 and "--epsilon" in ours.stdout


def test_abbreviation_stops_every_party() -> None:
    """Three parties started by hand, one with a typo: all exit 2 with that party's line."""
    argvs = [SMALL, SMALL + ["--se", "5"], SMALL]
    runs = run_parties(argvs, timeout=90)
    assert [run.code for run in runs] == [2, 2, 2], [run.stderr for run in runs]
    lines = {one_error_line(run) for run in runs}
    assert len(lines) == 1 and "party 1" in lines.pop()


def test_impossible_threshold_exits_at_once() -> None:
    started = time.monotonic()
    run = run_command(scenario_command("ustat", "-M3", "-T2", *SMALL), timeout=60)
    assert run.code == 2
    line = one_error_line(run)
    assert "-T 2 is impossible with 3 parties" in line and "2t + 1 <= m" in line
    assert time.monotonic() - started < 30  # no party was launched, nobody waited for a connection


@pytest.mark.multiparty
@pytest.mark.parametrize("topology", [["-M2"], ["-M3", "-T0"]])
def test_threshold_zero_is_refused(topology: list[str]) -> None:
    run = run_command(scenario_command("ustat", *topology, *SMALL), timeout=90)
    assert run.code == 2
    line = one_error_line(run)
    assert "t = 0" in line and "hides nothing" in line and "--allow-t0" in line


@pytest.mark.multiparty
def test_threshold_zero_with_opt_in_says_so() -> None:
    run = run_command(scenario_command("ustat", "-M2", "--allow-t0", *SMALL), timeout=120)
    assert run.code == 0, run.stderr
    assert "NOT HIDING INPUTS" in run.stdout and "private estimate" in run.stdout


def test_same_port_for_two_parties_is_refused() -> None:
    port = free_base_port()
    run = run_command(scenario_command("ustat", "-P", f"localhost:{port}", "-P", f"localhost:{port + 1}",
                                       "-P", f"localhost:{port + 1}", "-I", "0", *SMALL), timeout=60)
    assert run.code == 2
    line = one_error_line(run)
    assert f"localhost:{port + 1} to parties 1 and 2" in line


@pytest.mark.parametrize("value", ["0", "-3", "nan", "soon"])
def test_bad_silence_limit(value: str) -> None:
    run = run_command(scenario_command("ustat", "--silence-limit", value, *SMALL), timeout=60)
    assert run.code == 2
    assert "--silence-limit must be a positive number of seconds" in one_error_line(run)


@pytest.mark.multiparty
def test_parties_disagreeing_on_bit_length_stop_before_sharing() -> None:
    runs = run_parties([SMALL, SMALL + ["-L", "40"], SMALL], timeout=90)
    assert [run.code for run in runs] == [2, 2, 2]
    line = one_error_line(runs[0])
    assert "-L 40 at party 1 but -L 32 at parties 0, 2" in line


@pytest.mark.multiparty
def test_two_local_runs_at_once_pick_their_own_ports() -> None:
    """Without -B, two -M3 runs on one host must not join each other's parties."""
    command = scenario_command("ustat", "-M3", *SMALL)
    first = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = [process.communicate(timeout=180) for process in (first, second)]
    assert [first.returncode, second.returncode] == [0, 0], [err for _, err in outputs]
    assert all("private estimate" in out for out, _ in outputs)


@pytest.mark.multiparty
def test_party_failing_before_connecting_is_quoted() -> None:
    """Party 1's port is taken: party 0 reports party 1's own error line, not just its exit code."""
    base = free_base_port()
    blocker = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    blocker.bind(("", base + 1))  # bound, not listening: party 1 cannot bind, peers are refused
    try:
        run = run_command(scenario_command("ustat", "-M3", "-B", str(base), *SMALL), timeout=120)
    finally:
        blocker.close()
    assert run.code == 1
    line = one_error_line(run)
    assert "party 1 exited with code" in line and "before all parties connected" in line
    assert "address already in use" in line.lower() or "errno 98" in line.lower(), line


def test_no_scenario_starts_mpyc_on_import() -> None:
    """Importing a scenario must not import ``mpyc.runtime``: MPyC would read and strip the command
    line before the checks above run (and with ``-M m`` launch parties nobody waits for)."""
    modules = sorted(path.stem for path in (ROOT / "scenarios").glob("*.py") if path.stem != "__init__")
    program = ("import importlib, sys\n"
               f"for name in {modules!r}:\n"
               "    importlib.import_module('scenarios.' + name)\n"
               "    if 'mpyc.runtime' in sys.modules:\n"
               "        print(name); break\n")
    run = run_command([sys.executable, "-c", program], timeout=120)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == "", f"importing scenarios.{run.stdout.strip()} imports mpyc.runtime"
