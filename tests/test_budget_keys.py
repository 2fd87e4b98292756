"""What a privacy-budget account is keyed by, how old accounts move, what a refusal tells (issues 21, 22).

- the rows key (:func:`dp.budget.ledger.dataset_key_of_rows`): a file re-saved with CRLF line ends, a
  trailing newline, quoting, spaces, a byte-order mark, gzip, another spelling of a number or of a
  missing cell, reordered rows or columns keeps its key; a changed value, a dropped or duplicated row,
  a renamed column does not (the bytes key of the first format changed with every one of them);
- first-format (JSON) accounts migrated on use, a corrupt one refused, an old and a new one together
  refused;
- the refusal of a missing account names the exact command (a job) or the ``budget=`` argument (a script);
- the ledger tool with ``{pid}`` and ``--party 0,1,2``;
- the exact running totals, and that a spend re-verifies nothing while no one else wrote the account
  (the per-spend cost does not grow with the number of spends; no timing here: ``python -m
  scenarios.bench_ledger`` measures it);
- a huge epsilon refused in one line (it overflowed the sampler's decimal arithmetic).
"""
from __future__ import annotations

import gzip
import hashlib
import json
import math
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import dp.budget.ledger as ledger_module
from dp.budget import (Budget, Ledger, LedgerError, Spend, Totals, dataset_key_of_file, dataset_key_of_name,
                       dataset_key_of_rows, list_accounts)
from dp.budget.agreement import SpendRequest, account_keys, create_hint, pure_budget, refusal_texts, with_command

ROOT = Path(__file__).resolve().parent.parent

BASE = "score,label,site\n0.25,1,a b\n0.5,0,c\n1,1,c\n,0,d\n"
SAME = {
    "CRLF line ends": BASE.replace("\n", "\r\n"),
    "a trailing newline": BASE + "\n",
    "no final newline": BASE.rstrip("\n"),
    "quoted cells": 'score,"label",site\n"0.25",1,"a b"\n0.5,"0",c\n1,1,"c"\n"",0,d\n',
    "spaces around cells": "score , label,site\n 0.25,1 , a b \n0.5, 0,c\n1,1,c\n ,0,d\n",
    "a byte-order mark": "\ufeff" + BASE,
    "numbers spelled otherwise": "score,label,site\n2.5e-1,1.0,a b\n0.50,0,c\n1.000,1,c\nNA,0,d\n",
    "rows reordered": "score,label,site\n1,1,c\n,0,d\n0.5,0,c\n0.25,1,a b\n",
    "columns reordered": "site,score,label\na b,0.25,1\nc,0.5,0\nc,1,1\nd,,0\n",
    "a blank line": "score,label,site\n0.25,1,a b\n\n0.5,0,c\n1,1,c\n,0,d\n",
}
CHANGED = {
    "a value": BASE.replace("0.25,1", "0.26,1"),
    "a category's case": BASE.replace("0,d", "0,D"),
    "a dropped row": BASE.replace("1,1,c\n", ""),
    "a duplicated row": BASE + "1,1,c\n",
    "a renamed column": BASE.replace("site", "place"),
    "a missing cell filled": BASE.replace(",0,d", "0,0,d"),
}


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and text, text
    return text


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


# -- the rows key ------------------------------------------------------------------------------------


@pytest.mark.parametrize("variant", sorted(SAME))
def test_a_resaved_file_keeps_its_rows_key(tmp_path: Path, variant: str) -> None:
    base, other = _write(tmp_path / "base.csv", BASE), _write(tmp_path / "other.csv", SAME[variant])
    assert dataset_key_of_rows(other) == dataset_key_of_rows(base)
    assert dataset_key_of_file(other) != dataset_key_of_file(base)  # the first format's key moved with the bytes


def test_a_gzip_file_has_the_rows_key_of_its_contents(tmp_path: Path) -> None:
    packed = tmp_path / "base.csv.gz"
    packed.write_bytes(gzip.compress(BASE.encode()))
    assert dataset_key_of_rows(packed) == dataset_key_of_rows(_write(tmp_path / "base.csv", BASE))


@pytest.mark.parametrize("change", sorted(CHANGED))
def test_a_real_change_makes_a_new_rows_key(tmp_path: Path, change: str) -> None:
    base, other = _write(tmp_path / "base.csv", BASE), _write(tmp_path / "other.csv", CHANGED[change])
    assert dataset_key_of_rows(other) != dataset_key_of_rows(base)


def test_rows_key_format_and_unreadable_file(tmp_path: Path) -> None:
    key = dataset_key_of_rows(_write(tmp_path / "base.csv", BASE))
    assert key.startswith("rows-") and len(key) == len("rows-") + 16
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"x\n\xff\xfe\n")
    with pytest.raises(LedgerError) as raised:
        dataset_key_of_rows(bad)
    shared, local = refusal_texts(raised.value)
    assert shared.startswith("cannot read its data file to key its privacy budget") and str(tmp_path) not in shared
    assert local is not None and str(bad) in local


def test_a_resaved_file_keeps_its_account(tmp_path: Path) -> None:
    """The key a run uses (agreement.account_keys, {pid} replaced) finds the same account after a re-save."""
    for party in range(3):
        _write(tmp_path / f"site{party}.csv", BASE.replace("0.25", str(party)))
    request = SpendRequest(spend=Spend(1.0), scenario="scenarios.ustat", data_file=str(tmp_path / "site{pid}.csv"),
                           ledger=str(tmp_path / "L"))
    key, earlier = account_keys(request, 1)
    assert earlier == (dataset_key_of_file(tmp_path / "site1.csv"),)
    Ledger.create(tmp_path / "L", party=1, dataset=key, budget=Budget(3.0), accountant="basic")
    assert pure_budget(party=1, budget=None, ledger=str(tmp_path / "L"), data_file=request.data_file)
    _write(tmp_path / "site1.csv", BASE.replace("0.25", "1").replace("\n", "\r\n") + "\r\n")
    assert account_keys(request, 1)[0] == key
    assert pure_budget(party=1, budget=None, ledger=str(tmp_path / "L"), data_file=request.data_file)
    _write(tmp_path / "site1.csv", BASE.replace("0.25", "7"))
    assert account_keys(request, 1)[0] != key
    assert not pure_budget(party=1, budget=None, ledger=str(tmp_path / "L"), data_file=request.data_file)


# -- first-format accounts ----------------------------------------------------------------------------


def _legacy_account(directory: Path, key: str, party: int, spends: list[float], budget: float = 3.0) -> Path:
    """A first-format account file as the first ledger wrote it (canonical JSON and its sha256 checksum)."""
    entries = [{"time": f"2026-01-01T00:00:0{number}+00:00", "run_id": f"old-{number}", "scenario": "scenarios.ustat",
                "epsilon": epsilon, "delta": 0.0, "rho": None, "mechanism": "m", "what": "w", "status": "released"}
               for number, epsilon in enumerate(spends)]
    document = {"format": "private-ustats ledger 1", "dataset": key, "party": party, "accountant": "basic",
                "budget": {"epsilon": budget, "delta": 0.0}, "created": "2026-01-01T00:00:00+00:00",
                "history": [{"time": "2026-01-01T00:00:00+00:00", "event": "created", "epsilon": budget,
                             "delta": 0.0}], "entries": entries}
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")
    document["checksum"] = "sha256:" + hashlib.sha256(canonical).hexdigest()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{key}.p{party}.json"
    path.write_text(json.dumps(document, sort_keys=True, indent=1))
    return path


def test_a_first_format_account_is_migrated_on_use(tmp_path: Path) -> None:
    data = _write(tmp_path / "site0.csv", BASE)
    old = _legacy_account(tmp_path / "L", dataset_key_of_file(data), 0, [1.0, 0.5])
    assert list_accounts(tmp_path / "L", legacy=True) == [old]
    shown = Ledger.read(old)                                        # shown as it is, not migrated
    assert shown.legacy and shown.spent() == (1.5, 0.0) and old.exists()
    key = dataset_key_of_rows(data)
    ledger = Ledger.open(tmp_path / "L", party=0, dataset=key, budget=None, accountant="basic",
                         legacy=(dataset_key_of_file(data),))
    assert ledger.path.name == f"{key}.p0.sqlite3" and ledger.spent() == (1.5, 0.0)
    assert [entry.run_id for entry in ledger.spends] == ["old-0", "old-1"]
    assert [change["event"] for change in ledger.history] == ["created", "migrated"]
    assert not old.exists() and old.with_name(old.name + ".migrated").exists()   # kept, never read again
    assert list_accounts(tmp_path / "L", legacy=True) == [] and list_accounts(tmp_path / "L") == [ledger.path]
    ledger.reserve(Spend(1.0), run_id="new", scenario="scenarios.ustat")
    with pytest.raises(LedgerError, match="budget of 3 spent: 2.5 spent, this run needs 1"):
        ledger.reserve(Spend(1.0), run_id="newer", scenario="scenarios.ustat")
    # an old file that reappears beside the migrated account: both kept, the run refused in one line
    _legacy_account(tmp_path / "L", dataset_key_of_file(data), 0, [])
    with pytest.raises(LedgerError) as raised:
        Ledger.open(tmp_path / "L", party=0, dataset=key, budget=None, accountant="basic",
                    legacy=(dataset_key_of_file(data),))
    assert _one_line(raised.value).startswith("two accounts for this dataset at party 0: ")
    assert "old and a new" in refusal_texts(raised.value)[0]


def test_a_named_first_format_account_is_migrated_and_a_corrupt_one_refused(tmp_path: Path) -> None:
    _legacy_account(tmp_path / "L", "name-trial", 2, [0.25])
    ledger = Ledger.open(tmp_path / "L", party=2, dataset="name-trial", budget=Budget(3.0), accountant="basic")
    assert ledger.spent() == (0.25, 0.0) and ledger.budget == Budget(3.0)
    broken = _legacy_account(tmp_path / "M", "name-trial", 0, [0.25])
    broken.write_text(broken.read_text().replace('"epsilon": 0.25', '"epsilon": 0.0'))
    with pytest.raises(LedgerError) as raised:
        Ledger.open(tmp_path / "M", party=0, dataset="name-trial", budget=None, accountant="basic")
    assert _one_line(raised.value) == (f"ledger file {broken} fails its checksum: refusing to use it; it is never "
                                       f"reset silently: restore it or remove it on purpose")
    assert broken.exists() and not list_accounts(tmp_path / "M")


# -- what a refusal of a missing account says ----------------------------------------------------------


def test_a_jobs_refusal_prints_its_own_command_with_budget(tmp_path: Path) -> None:
    request = SpendRequest(spend=Spend(1.0), scenario="scenarios.ustat", data_file="site{pid}.csv",
                           ledger=str(tmp_path / "L"))
    argv = ["-M3", "--data", "site{pid}.csv", "--columns", "a b", "--epsilon", "1", "-I", "1", "--ledger",
            str(tmp_path / "L")]
    commanded = with_command(request, argv)
    assert commanded is not None
    hint = create_hint(commanded, 1, 3)
    job = shlex.join(["python", "-m", "scenarios.ustat", "-M3", "--data", "site{pid}.csv", "--columns", "a b",
                      "--epsilon", "1", "--ledger", str(tmp_path / "L"), "--budget", "EPS"])
    tool = shlex.join(["python", "-m", "scenarios.budget", "--ledger", str(tmp_path / "L"), "create", "--data",
                       "site{pid}.csv", "--party", "0,1,2", "--budget", "EPS"])
    assert hint == f"create one: add --budget EPS[:DELTA] to the command, {job} -- or run {tool}"
    with pytest.raises(LedgerError) as raised:
        Ledger.open(tmp_path / "L", party=1, dataset="name-x", budget=None, accountant="basic", create_hint=hint)
    shared, local = refusal_texts(raised.value)
    assert shared.startswith("it has no privacy budget for this data: create one with --budget EPS[:DELTA]")
    assert local == f"no privacy budget for dataset name-x: {hint}"


def test_a_scripts_refusal_names_the_budget_argument(tmp_path: Path) -> None:
    request = SpendRequest(spend=Spend(1.0), scenario="dp.umpc.release", dataset_name="clinic", in_script=True)
    hint = create_hint(request, 0, 3)
    assert "budget='EPS' (or budget='EPS:DELTA')" in hint and "--budget EPS[:DELTA] to" not in hint
    assert "python -m scenarios.budget create --dataset clinic --party 0,1,2 --budget EPS" in hint
    with pytest.raises(LedgerError) as raised:
        Ledger.open(tmp_path / "L", party=0, dataset="name-clinic", budget=None, accountant="basic",
                    create_hint=hint, in_script=True)
    shared, _ = refusal_texts(raised.value)
    assert "budget='EPS'" in shared and "--budget" not in shared


# -- the ledger tool with {pid} ------------------------------------------------------------------------


def _tool(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scenarios.budget", *words], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_tool_takes_pid_paths_and_several_parties(tmp_path: Path) -> None:
    for party in range(3):
        _write(tmp_path / f"site{party}.csv", BASE.replace("0.25", str(party)))
    data = str(tmp_path / "site{pid}.csv")
    run = _tool("--ledger", "L", "create", "--data", data, "--party", "0,1,2", "--budget", "3", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    for party in range(3):
        key = dataset_key_of_rows(tmp_path / f"site{party}.csv")
        assert f"created L/{key}.p{party}.sqlite3: budget epsilon 3, delta 0" in run.stdout
    run = _tool("--ledger", "L", "raise", "--data", data, "--party", "0,1,2", "--budget", "5", cwd=tmp_path)
    assert run.returncode == 0 and run.stdout.count("budget epsilon 3, delta 0 -> epsilon 5, delta 0") == 3
    run = _tool("--ledger", "L", "show", "--data", data, "--party", "1,2", cwd=tmp_path)
    assert run.returncode == 0 and "2 account(s)" in run.stdout and ".p0." not in run.stdout
    run = _tool("--ledger", "L", "show", "--data", data, cwd=tmp_path)
    assert run.returncode == 2 and run.stderr == "error: --data with {pid} names one file per party: give --party " \
                                                 "P[,P...]\n"
    run = _tool("--ledger", "L", "raise", "--data", data, "--party", "0,x", "--budget", "6", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("error: --party expects a party index 0, 1, ...")
    run = _tool("--ledger", "L", "create", "--dataset", "trial", "--party", "0", "--budget", "1", cwd=tmp_path)
    assert run.returncode == 0 and "name-trial.p0.sqlite3" in run.stdout


# -- totals, cost per spend, huge epsilon ------------------------------------------------------------------


def test_totals_are_exact_through_adds_and_cancels() -> None:
    generator = random.Random(5)
    spends = [Spend(generator.uniform(0, 1e-3), generator.choice([0.0, 1e-9]),
                    generator.choice([None, 1e-4])) for _ in range(500)]
    totals = Totals.of(spends)
    assert float(totals.epsilon) == math.fsum(spend.epsilon for spend in spends)
    for spend in spends:
        totals = totals.plus(spend, sign=-1)
    assert totals == Totals() and Totals.from_text(Totals.of(spends).to_text()) == Totals.of(spends)


def test_a_spend_reverifies_the_account_only_after_another_writer(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole account is read and verified when opened, and again only when another connection wrote it:
    the work of one spend does not grow with the spends before it (the first format re-read and rewrote
    the whole file at every spend)."""
    loads = []
    load = ledger_module._load

    def counted(*arguments):  # type: ignore[no-untyped-def]
        loads.append(1)
        return load(*arguments)

    monkeypatch.setattr(ledger_module, "_load", counted)
    ledger = Ledger.open(tmp_path, party=0, dataset=dataset_key_of_name("many"), budget=Budget(10.0),
                         accountant="basic")
    opened = len(loads)
    for number in range(300):
        ledger.mark_released(ledger.reserve(Spend(0.01), run_id=f"r{number}", scenario="ustat"))
    assert len(loads) == opened                                     # nothing re-read: no one else wrote
    other = Ledger.open(tmp_path, party=0, dataset="name-many", budget=None, accountant="basic")
    other.reserve(Spend(0.01), run_id="other", scenario="ustat")
    before = len(loads)
    ledger.reserve(Spend(0.01), run_id="after", scenario="ustat")
    assert len(loads) == before + 1                                 # another writer: verified whole again
    assert len(ledger.spends) == 302 and ledger.spent()[0] == pytest.approx(3.02, rel=1e-12)


def test_a_huge_epsilon_is_refused_in_one_line() -> None:
    import dp

    columns = [dp.numeric("x", lower=0, upper=10, bits=2)]
    for epsilon in (1e20, 1e300):
        with pytest.raises(ValueError) as raised:
            dp.umpc.Query(statistic="gini", epsilon=epsilon, columns=columns)
        assert _one_line(raised.value).startswith("epsilon must be at most 1e+09")
    assert dp.umpc.Query(statistic="gini", epsilon=1e9, columns=columns).epsilon == 1e9
    with pytest.raises(ValueError, match=r"delta must lie in \[0, 1\)"):
        dp.umpc.Query(statistic="gini", epsilon=1.0, delta=1e300, columns=columns)
    with pytest.raises(ValueError, match="budget epsilon must be positive and finite, got inf"):
        Budget(1e400)


def test_a_line_longer_than_the_readers_block_is_refused_before_it_is_held(tmp_path: Path) -> None:
    """The account key reads the file as the reader does: a line over the reader's block (1 MiB) is refused in
    one line that names no path; a long cell within it (over the csv module's 128 KiB default) is read."""
    from secure.reader import CHUNK_BYTES

    wide = tmp_path / "wide.csv"
    wide.write_text("a,note\n1," + "x" * (200 * 1024) + "\n2,y\n", encoding="utf-8")
    assert dataset_key_of_rows(wide).startswith("rows-")
    long = tmp_path / "long.csv"
    long.write_text("a,note\n1," + "x" * (CHUNK_BYTES + 10) + "\n", encoding="utf-8")
    with pytest.raises(LedgerError) as refused:
        dataset_key_of_rows(long)
    assert "line longer than" in refused.value.shared and str(tmp_path) not in refused.value.shared
