"""The privacy budget across runs (issue 15): every job agrees on its spend and reserves it before any data.

Real ``-M3`` runs through subprocess, on free ports; each test passes ``--ledger DIR`` explicitly (the
session's environment turns the default ledger off, tests/conftest.py).  Local parties share the
directory; the ledger keeps one account file (an SQLite database) per party and dataset.
"""
from __future__ import annotations

import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, PartyRun, free_base_port, run_command, run_parties, scenario_command, small_table, write_csv

pytestmark = pytest.mark.multiparty

#: a fast Kendall job on the small table (|E| = 2n sampled tuples)
KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:2,diaBP=40:160:2",
           "--pairs", "2n", "--path", "tuples"]
#: the same statistic on the histogram path: the only one a pure account can pay (it compares nothing)
KENDALL_COMPLETE = [*KENDALL[:6], "--pairs", "all", "--path", "histogram"]


def _csv(tmp_path: Path) -> Path:
    header, values = small_table(rows=30)
    return write_csv(tmp_path / "small.csv", header, values)


def _entries(ledger: Path, party: int) -> list[dict]:
    """The entries of party ``party``'s one account in ``ledger`` (none if it has no account)."""
    from dataclasses import asdict

    from dp.budget import Ledger

    files = sorted(ledger.glob(f"*.p{party}.sqlite3"))
    assert len(files) <= 1, files
    return [asdict(entry) for entry in Ledger.read(files[0]).spends] if files else []


def _counted(ledger: Path, party: int) -> list[dict]:
    return [entry for entry in _entries(ledger, party) if entry["status"] != "cancelled"]


def _one_error_line(run: PartyRun) -> str:
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), run.stderr
    assert "Traceback" not in run.stderr
    return lines[0]


def test_third_run_is_refused_at_every_party_before_any_data(tmp_path: Path) -> None:
    """Budget 2.5, epsilon 1 per run: two runs pass, the third exits 2 at every party, naming the party,
    and neither releases nor records anything; each party kept its own account in the shared directory."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    argv = ["--data", str(data), *KENDALL, "--epsilon", "1", "--budget", "2.5:1e-9", "--ledger", str(ledger)]
    for number in (1, 2):
        runs = run_parties([argv] * 3)
        assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
        assert "private estimate" in runs[0].stdout
        assert f"spent epsilon {number} of 2.5" in runs[0].stdout
        assert "privacy budget: account " in runs[1].stdout and ".p1.sqlite3" in runs[1].stdout
    third = run_parties([argv] * 3)
    assert [run.code for run in third] == [2, 2, 2]
    lines = {_one_error_line(run) for run in third}
    assert len(lines) == 1, lines  # the same line at every party
    line = lines.pop()
    # the shared line is generic: no dataset key (the hash of party 0's file), no path, no budget figures
    # (the run's delta is the in-MPC sampler's truncation bound plus whatever else the job charges: not fixed here)
    assert re.fullmatch(r"error: party 0 \(also parties 1, 2\): its privacy budget for this data does not cover "
                        r"this run \(epsilon 1, delta [0-9.]+e-[0-9]+\); see its local note", line), line
    key = next(ledger.glob("*.p0.sqlite3")).name.split(".")[0]
    for party, run in enumerate(third):  # each party's details are its own note, on its own stdout
        assert key not in run.stderr and str(ledger) not in run.stderr and "2.5" not in run.stderr
        note = [text for text in run.stdout.splitlines() if text.startswith("note (at this party, not shared): ")]
        assert len(note) == 1 and "budget of 2.5 spent: 2 spent, this run needs 1" in note[0] and key in note[0]
        assert f".p{party}.sqlite3" in note[0] and all(f".p{other}.sqlite3" not in run.stdout
                                                       for other in range(3) if other != party)
    assert all("private estimate" not in run.stdout for run in third)
    assert sorted(path.name.split(".")[1] for path in ledger.glob("*.sqlite3")) == ["p0", "p1", "p2"]
    for party in range(3):
        entries = _entries(ledger, party)
        assert [entry["status"] for entry in entries] == ["released", "released"]  # both runs revealed
        assert [entry["epsilon"] for entry in entries] == [1.0, 1.0]
        assert entries[0]["run_id"] != entries[1]["run_id"]
        assert entries[0]["scenario"] == "scenarios.ustat"
    # the run id was agreed: the same at every party
    assert len({_entries(ledger, party)[0]["run_id"] for party in range(3)}) == 1


def test_the_issue_command_line_on_the_embedded_data(tmp_path: Path) -> None:
    """``python -m scenarios.ustat -M3 --epsilon 1 --budget 2.5 --ledger D`` (party 0 launches the others) on
    the embedded data, exactly: twice, then refused at every party before any data is shared.  A pure budget
    (no delta) gets pure-DP party noise by default (the in-MPC sampler's truncation delta could not be paid);
    with ``--noise mpc`` forced, that delta is refused with one line; with ``--budget 2.5:1e-9`` the default
    in-MPC noise runs and its delta is charged."""
    ledger = tmp_path / "D"
    command = scenario_command("ustat", "-M3", "--epsilon", "1", "--budget", "2.5", "--ledger", str(ledger),
                               "--no-log")
    first = run_command(command)
    assert first.code == 0, first.stderr
    assert "Polya" in first.stdout or "party-drawn" in first.stdout  # pure epsilon-DP party noise
    assert run_command(command).code == 0
    third = run_command(command)
    assert third.code == 2
    assert "its privacy budget for this data does not cover this run (epsilon 1)" in _one_error_line(third)
    assert "budget of 2.5 spent: 2 spent, this run needs 1" in third.stdout  # party 0's own note
    assert "private estimate" not in third.stdout
    assert [len(_counted(ledger, party)) for party in range(3)] == [2, 2, 2]
    assert all(entry["delta"] == 0.0 for party in range(3) for entry in _counted(ledger, party))
    forced = run_command(scenario_command("ustat", "-M3", "--epsilon", "1", "--budget", "2.5", "--noise", "mpc",
                                          "--ledger", str(tmp_path / "D1"), "--no-log"))
    assert forced.code == 2 and "allows pure DP only" in _one_error_line(forced)
    assert "run with pure-DP party-drawn noise: --noise parties" in _one_error_line(forced)
    assert "raise" not in _one_error_line(forced)
    approximate = tmp_path / "D2"
    command = scenario_command("ustat", "-M3", "--epsilon", "1", "--budget", "2.5:1e-9", "--ledger", str(approximate),
                               "--no-log")
    assert run_command(command).code == 0
    assert all(entry["delta"] > 0 for party in range(3) for entry in _counted(approximate, party))


def _with_drill_party(argv: list[str], drill: list[str], victim: int = 1, timeout: float = 90.0) -> list[PartyRun]:
    """Three parties on a free port; party ``victim`` runs :mod:`scenarios.drills.party` with ``drill``."""
    port = free_base_port()
    processes = []
    for index in range(3):
        module = "drills.party" if index == victim else "ustat"
        extra = drill if index == victim else []
        command = scenario_command(module, *extra, *argv, "-M", "3", "-I", str(index), "-B", str(port), "--no-log")
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          cwd=ROOT))
    runs = []
    for process in processes:
        out, err = process.communicate(timeout=timeout)
        runs.append(PartyRun(process.returncode, out, err))
    return runs


def test_a_party_killed_after_the_reveal_has_the_spend_recorded(tmp_path: Path) -> None:
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    argv = ["--data", str(data), *KENDALL, "--epsilon", "0.5", "--budget", "3:1e-9", "--ledger", str(ledger),
            "--silence-limit", "10"]
    runs = _with_drill_party(argv, ["--crash-at", "shutdown"])
    assert runs[1].code == 137
    counted = _counted(ledger, 1)
    assert [entry["epsilon"] for entry in counted] == [0.5]
    assert counted[0]["run_id"] == _counted(ledger, 0)[0]["run_id"]


def test_a_party_killed_before_the_agreement_has_nothing_recorded(tmp_path: Path) -> None:
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    argv = ["--data", str(data), *KENDALL, "--epsilon", "0.5", "--budget", "3:1e-9", "--ledger", str(ledger),
            "--silence-limit", "10"]
    runs = _with_drill_party(argv, ["--crash-at", "budget"])
    assert runs[1].code == 137
    assert _counted(ledger, 1) == []
    assert [run.code for run in (runs[0], runs[2])] == [1, 1]  # the others lose it, release nothing
    assert all("private estimate" not in run.stdout for run in runs)


def test_parties_with_different_accountants_are_refused_with_one_line(tmp_path: Path) -> None:
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    base = ["--data", str(data), *KENDALL, "--epsilon", "1", "--budget", "5:1e-6", "--ledger", str(ledger)]
    runs = run_parties([base + ["--accountant", "zcdp"], base, base])
    assert [run.code for run in runs] == [2, 2, 2]
    lines = {_one_error_line(run) for run in runs}
    assert len(lines) == 1
    line = lines.pop()
    assert "different accountants" in line and "party 0: zcdp" in line and "party 1: basic" in line
    assert all(_counted(ledger, party) == [] for party in range(3))


def test_a_corrupt_ledger_at_one_party_stops_every_party_with_its_line(tmp_path: Path) -> None:
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    argv = ["--data", str(data), *KENDALL, "--epsilon", "1", "--budget", "5:1e-9", "--ledger", str(ledger)]
    assert [run.code for run in run_parties([argv] * 3)] == [0, 0, 0]
    account = next(ledger.glob("*.p2.sqlite3"))
    connection = sqlite3.connect(account, isolation_level=None)
    connection.execute("UPDATE entries SET epsilon = 0.0 WHERE number = 1")  # a hand edit that would hide the spend
    connection.close()
    runs = run_parties([argv] * 3)
    assert [run.code for run in runs] == [2, 2, 2]
    lines = {_one_error_line(run) for run in runs}
    assert len(lines) == 1
    line = lines.pop()
    assert line == ("error: party 2: its ledger account for this data cannot be used (corrupt, edited or moved); "
                    "see its local note")
    assert "checksum" in runs[2].stdout and str(account) in runs[2].stdout  # the detail, at party 2 only
    assert str(account) not in runs[0].stdout + runs[1].stdout
    connection = sqlite3.connect(account)
    assert connection.execute("SELECT epsilon FROM entries").fetchall() == [(0.0,)]  # never reset
    connection.close()
    assert [len(_counted(ledger, party)) for party in (0, 1)] == [1, 1]


def test_ledger_off_runs_and_says_so(tmp_path: Path) -> None:
    data = _csv(tmp_path)
    runs = run_parties([["--data", str(data), *KENDALL, "--epsilon", "1", "--ledger", "off"]] * 3)
    assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    assert "privacy budget: no privacy budget kept (--ledger off)" in runs[0].stdout


def test_data_without_an_account_or_budget_is_refused(tmp_path: Path) -> None:
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    runs = run_parties([["--data", str(data), *KENDALL, "--epsilon", "1", "--ledger", str(ledger)]] * 3)
    assert [run.code for run in runs] == [2, 2, 2]
    line = _one_error_line(runs[0])
    assert "it has no privacy budget for this data: create one with --budget" in line and "sha256-" not in line
    assert line.startswith("error: party 0") and "at party" not in line  # the party is named once
    assert "no privacy budget for dataset rows-" in runs[0].stdout  # the key: the local note


@pytest.mark.parametrize("ledger", ["off", "DIR"])
def test_a_missing_data_file_is_the_data_files_line_with_or_without_a_ledger(
        tmp_path: Path, ledger: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The missing file is the problem, not its budget: the reader's own line whether a ledger is kept or not
    (one process: the ledger's check runs before the data is read)."""
    from scenarios.roc_private import main

    missing = tmp_path / "nope.csv"
    assert main(["--data", str(missing), "--ledger", str(tmp_path / "ledger") if ledger == "DIR" else ledger,
                 "--budget", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == ["error: party 0: cannot read its data file: no such file"]
    assert f"cannot read data file {missing}: no such file" in captured.out  # the path: this party's own note
    assert not (tmp_path / "ledger").exists() or not list((tmp_path / "ledger").glob("*.sqlite3"))


def test_embedded_data_is_exempt_without_ledger_options(tmp_path: Path) -> None:
    run = run_command(scenario_command("ustat", "--no-log", "--stat", "gini", "--pairs", "2n", "--path", "tuples"),
                      cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "embedded public data: no budget kept; give --ledger/--budget to keep one" in run.stdout


def test_ecdf_fss_upload_spends_and_answer_spends_nothing(tmp_path: Path) -> None:
    data, ledger, store = _csv(tmp_path), tmp_path / "ledger", tmp_path / "keys"
    upload = run_command(scenario_command("ecdf_fss", "-M3", "--data", str(data), "--columns", "sysBP", "--domain",
                                          "sysBP=80:300", "--points", "64", "--smooth", "none", "--epsilon", "0.7",
                                          "--store", str(store), "--budget", "1", "--ledger", str(ledger),
                                          "--no-log"))
    assert upload.code == 0, upload.stderr
    assert [[entry["epsilon"] for entry in _counted(ledger, party)] for party in range(3)] == [[0.7]] * 3
    answer = run_command(scenario_command("ecdf_fss", "-M2", "--answer", str(store), "--queries", "0,10",
                                          "--smooth", "none", "--ledger", str(ledger), "--no-log"))
    assert answer.code == 0, answer.stderr
    assert "nothing spent: --answer answers from the stored keys" in answer.stdout
    assert [len(_counted(ledger, party)) for party in range(3)] == [1, 1, 1]


def test_api_release_spends_from_the_ledger(tmp_path: Path) -> None:
    """``dp.umpc.release(..., ledger=, budget=, dataset_name=)``: a declared name keys the account."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\nimport dp\nimport secure\n"
        f"DATA = {str(data)!r}\n"
        "QUERY = dp.umpc.Query(statistic='gini', epsilon=1.0, tuples='2n', path='tuples',\n"
        "                      columns=[dp.numeric('sysBP', lower=80, upper=300, bits=2)])\n"
        "async def job(party):\n"
        "    rows = await party.read(DATA, QUERY.columns)\n"
        f"    release = await dp.umpc.release(QUERY, rows, ledger={str(ledger)!r}, budget='1.5:1e-9',\n"
        "                                    dataset_name='clinic')\n"
        "    return lambda: print('estimate', release.estimate, release.budget)\n"
        "sys.exit(secure.run(job))\n")
    command = [sys.executable, str(script), "-M3", "-B", str(free_base_port()), "--no-log"]
    first = run_command(command)
    assert first.code == 0, first.stderr
    assert "account " in first.stdout and "name-clinic.p0.sqlite3" in first.stdout
    second = run_command([*command[:-2], str(free_base_port()), "--no-log"])
    assert second.code == 2 and "does not cover this run (epsilon 1" in _one_error_line(second)
    assert "budget of 1.5 spent: 1 spent, this run needs 1" in second.stdout
    assert [len(_counted(ledger, party)) for party in range(3)] == [1, 1, 1]


def _create_accounts(ledger: Path, budgets: list[str], name: str = "trial7") -> None:
    """``python -m scenarios.budget --ledger L create --dataset-name NAME --party P --budget B`` for each party."""
    from scenarios.budget import main as budget_tool

    for party, budget in enumerate(budgets):
        assert budget_tool(["--ledger", str(ledger), "create", "--dataset-name", name, "--party", str(party),
                            "--budget", budget]) == 0


def test_an_existing_pure_account_gets_party_noise_by_default(tmp_path: Path) -> None:
    """Accounts created with a pure budget (no delta), then runs without --budget: the default noise is
    pure-DP party noise (the in-MPC sampler's delta cannot be paid), as with --budget on the command line;
    the runs spend epsilon only, and each entry is marked released."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    _create_accounts(ledger, ["3", "3", "3"])
    argv = ["--data", str(data), *KENDALL_COMPLETE, "--epsilon", "1", "--ledger", str(ledger), "--dataset-name", "trial7"]
    runs = run_parties([argv] * 3)
    assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    assert "party-drawn" in runs[0].stdout and "private estimate" in runs[0].stdout
    for party in range(3):
        assert [(entry["epsilon"], entry["delta"], entry["status"]) for entry in _entries(ledger, party)] == \
            [(1.0, 0.0, "released")]


def test_parties_whose_accounts_differ_in_purity_stop_at_the_parameter_agreement(tmp_path: Path) -> None:
    """Party 1's account has a delta, the others' are pure: their default noise differs, and the parameter
    agreement stops every party with one line before any budget is spent."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    _create_accounts(ledger, ["3", "3:1e-6", "3"])
    argv = ["--data", str(data), *KENDALL_COMPLETE, "--epsilon", "1", "--ledger", str(ledger), "--dataset-name", "trial7"]
    runs = run_parties([argv] * 3)
    assert [run.code for run in runs] == [2, 2, 2]
    lines = {_one_error_line(run) for run in runs}
    assert len(lines) == 1 and "parameters differ from party 0" in lines.pop()
    assert all(_entries(ledger, party) == [] for party in range(3))


def test_api_release_with_a_pure_budget_gets_party_noise(tmp_path: Path) -> None:
    """``release(q, rows, budget="1.5", ledger=D, dataset_name="x")`` with the default noise: pure-DP party
    noise, as the CLI picks it (the same function), then the account without ``budget=`` picks it too."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    for number, budget in enumerate(("'1.5'", "None")):
        script = tmp_path / f"script{number}.py"
        script.write_text(
            "import sys\nimport dp\nimport secure\n"
            f"DATA = {str(data)!r}\n"
            "QUERY = dp.umpc.Query(statistic='gini', epsilon=0.5, tuples='all', path='histogram',\n"
            "                      columns=[dp.numeric('sysBP', lower=80, upper=300, bits=2)])\n"
            "async def job(party):\n"
            "    rows = await party.read(DATA, QUERY.columns)\n"
            f"    release = await dp.umpc.release(QUERY, rows, ledger={str(ledger)!r}, budget={budget},\n"
            "                                    dataset_name='x')\n"
            "    return lambda: print(*release.notes, 'estimate', release.estimate, release.guarantee, sep='\\n')\n"
            "sys.exit(secure.run(job))\n")
        run = run_command([sys.executable, str(script), "-M3", "-B", str(free_base_port()), "--no-log"])
        assert run.code == 0, run.stderr
        assert "party-drawn" in run.stdout
        # the switch is said in the release's notes, in a script's words (budget=, not --budget)
        said = [line for line in run.stdout.splitlines() if line.startswith("noise: party-drawn shares")]
        assert len(said) == 1 and "x1.5 (m = 3, t = 1)" in said[0] and "give --budget" not in said[0]
        assert ("budget= has no delta" if number == 0 else "account has delta 0") in said[0]
    assert [[(entry["delta"], entry["status"]) for entry in _entries(ledger, party)] for party in range(3)] == \
        [[(0.0, "released")] * 2] * 3


def test_the_jobs_read_this_partys_account_when_parsing_their_options(tmp_path: Path) -> None:
    """One process (party 0): ustat and rank_auc without --budget take party noise from a pure account, the
    in-MPC default from an account with a delta or without an account; an explicit --noise is kept."""
    from scenarios import rank_auc, ustat

    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    common = ["--ledger", str(ledger), "--dataset-name"]
    ustat_argv = ["--data", str(data), *KENDALL_COMPLETE, "--epsilon", "1"]
    assert ustat.parse_options([*ustat_argv, *common, "trial7"]).query.noise == "mpc"  # no account yet
    assert rank_auc.parse_options([*common, "trial7"]).query.noise == "mpc"
    _create_accounts(ledger, ["3"], name="trial7")
    _create_accounts(ledger, ["3:1e-6"], name="approx")
    assert ustat.parse_options([*ustat_argv, *common, "trial7"]).query.noise == "parties"
    assert rank_auc.parse_options([*common, "trial7"]).query.noise == "parties"
    assert ustat.parse_options([*ustat_argv, *common, "approx"]).query.noise == "mpc"
    assert rank_auc.parse_options([*common, "approx"]).query.noise == "mpc"
    assert ustat.parse_options([*ustat_argv, *common, "trial7", "--noise", "mpc"]).query.noise == "mpc"
    assert ustat.parse_options([*ustat_argv, "--ledger", "off"]).query.noise == "mpc"


def test_own_data_without_a_budget_prints_the_command_that_creates_it(tmp_path: Path) -> None:
    """The README's own-data example without an account: exit 2 at every party, and party 0's note prints the
    job's own command line with ``--budget EPS`` added; that command, run verbatim (EPS -> 2.5:1e-9), works.  Then
    every site file is re-saved with CRLF line ends and a trailing newline: the same accounts are spent
    from (the rows key), not fresh ones (the first format keyed the file's bytes and opened new budgets)."""
    header, values = small_table(rows=30)
    for party in range(3):
        write_csv(tmp_path / f"site{party}.csv", header, values[party::3])
    ledger = tmp_path / "ledger"
    argv = ["-M3", "-B", str(free_base_port()), "--data", str(tmp_path / "site{pid}.csv"), *KENDALL, "--epsilon", "1",
            "--ledger", str(ledger), "--no-log"]
    refused = run_command(scenario_command("ustat", *argv))
    assert refused.code == 2
    assert "it has no privacy budget for this data: create one with --budget EPS[:DELTA]" in _one_error_line(refused)
    notes = [line for line in refused.stdout.splitlines() if line.startswith("note (at this party, not shared): ")]
    command = shlex.join(["python", "-m", "scenarios.ustat", *argv, "--budget", "EPS"])
    assert len(notes) == 1 and command in notes[0], refused.stdout
    assert f"python -m scenarios.budget --ledger {ledger} create --data" in notes[0] and "--party 0,1,2" in notes[0]
    words = shlex.split(command)
    words[0], words[-1] = sys.executable, "2.5:1e-9"  # a delta: the tuples path's comparisons leak up to 2^-40
    first = run_command(words)
    assert first.code == 0, first.stderr
    assert "spent epsilon 1 of 2.5" in first.stdout
    for party in range(3):
        path = tmp_path / f"site{party}.csv"
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n") + b"\r\n")
    words[words.index("-B") + 1] = str(free_base_port())
    second = run_command(words)
    assert second.code == 0, second.stderr
    assert "spent epsilon 2 of 2.5" in second.stdout               # the same account, not a fresh budget
    assert [len(_counted(ledger, party)) for party in range(3)] == [2, 2, 2]
    assert len(list(ledger.glob("*.sqlite3"))) == 3


def test_a_scripts_refusal_names_the_budget_argument(tmp_path: Path) -> None:
    """``dp.umpc.release`` without ``budget=`` on a new dataset: the line names ``budget='EPS'`` (a script has no
    ``--budget``); the note names the exact argument and the ledger tool's command."""
    data, ledger = _csv(tmp_path), tmp_path / "ledger"
    script = tmp_path / "script.py"
    script.write_text(
        "import sys\nimport dp\nimport secure\n"
        f"DATA = {str(data)!r}\n"
        "QUERY = dp.umpc.Query(statistic='gini', epsilon=1.0, tuples='2n', path='tuples',\n"
        "                      columns=[dp.numeric('sysBP', lower=80, upper=300, bits=2)])\n"
        "async def job(party):\n"
        "    rows = await party.read(DATA, QUERY.columns)\n"
        f"    release = await dp.umpc.release(QUERY, rows, ledger={str(ledger)!r}, dataset='clinic')\n"
        "    return lambda: print('estimate', release.estimate)\n"
        "sys.exit(secure.run(job))\n")
    run = run_command([sys.executable, str(script), "-M3", "-B", str(free_base_port()), "--no-log"])
    assert run.code == 2
    line = _one_error_line(run)
    assert "create one with budget='EPS' (or 'EPS:DELTA') in the release call" in line and "--budget" not in line
    assert "budget='EPS' (or budget='EPS:DELTA')" in run.stdout
    assert f"python -m scenarios.budget --ledger {ledger} create --dataset clinic --party 0,1,2 --budget EPS" \
        in run.stdout
