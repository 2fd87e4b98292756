"""The record and the ledger agree on delta (issue 26 item 6), and a pure account pays no comparison leak it
cannot afford (issue 21 item 2).

- :meth:`dp.budget.ledger.Ledger.settle`: the reservation agreed before any data is shared is an upper bound
  (MPyC's comparison leakage depends on ``n``); after the reveal the entry is settled to the release's delta,
  only ever lower: a higher delta, a delta that would raise the account's composed charge (zCDP), an entry
  that is not reserved, are refused and leave the account as it was;
- runs (``-M1`` in-process, one ``-M3`` subprocess and one ``-M1`` script): the record's ``delta`` equals the
  ledger entry's delta exactly (read through :mod:`dp.budget`), ``delta_reserved`` is the reservation, on the
  tuples path (sampler + comparisons), the histogram path and the rank-AUC sort over two runs;
- a pure account (delta 0) on a comparing path (``--path sort/tuples``, ``--pairs 2n``, ``--clip secure``)
  is refused with one line; ``--path auto`` takes the histogram path (delta 0 in the record and the ledger),
  or is refused when only comparing paths exist.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

from conftest import run_command, run_parties, small_table, write_csv
from dp.budget import Budget, Ledger, LedgerError, Spend, list_accounts
from dp.budget.agreement import Reservation

#: the in-MPC sampler's and the comparisons' reservations (dp.comparison_leakage.LEAK_TARGET)
BOUND = 2.0 ** -40
PURE_LINE = ("comparisons leak up to delta 2^-40 (MPyC's masks), which a pure account cannot pay: use --path "
             "histogram, or give the account a delta with `python -m scenarios.budget raise ... --budget EPS:DELTA`")
#: Kendall on the small table, whose grid (111 x 61) the histogram path takes
KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:2,diaBP=40:160:2"]


def _account(tmp_path: Path, budget: Budget, accountant: str = "basic") -> Ledger:
    return Ledger.open(tmp_path, party=0, dataset="name-settle", budget=budget, accountant=accountant)  # type: ignore[arg-type]


def _entries(ledger: Path, party: int = 0) -> list:
    files = [path for path in list_accounts(ledger) if path.name.endswith(f".p{party}.sqlite3")]
    assert len(files) == 1, files
    return list(Ledger.read(files[0]).spends)


# ------------------------------------------------------------------------------------------ the ledger


def test_settling_lowers_the_reserved_delta_and_marks_the_entry_released(tmp_path: Path) -> None:
    ledger = _account(tmp_path, Budget(5.0, 1e-6))
    entry = ledger.reserve(Spend(1.0, 2 * BOUND, what="kendall"), run_id="r1", scenario="test")
    settled = ledger.settle(entry, 9.689301709292977e-13)
    assert (settled.delta, settled.status) == (9.689301709292977e-13, "released")
    again = Ledger.read(ledger.path)  # verified from disk: checksums and exact totals
    assert [(each.delta, each.status) for each in again.spends] == [(9.689301709292977e-13, "released")]
    assert again.spent() == (1.0, 9.689301709292977e-13)
    assert f"reserved delta {2 * BOUND!r}" in again.spends[0].what


def test_settling_above_the_reservation_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    ledger = _account(tmp_path, Budget(5.0, 1e-6))
    entry = ledger.reserve(Spend(1.0, BOUND), run_id="r1", scenario="test")
    with pytest.raises(LedgerError, match="would raise its reserved delta"):
        ledger.settle(entry, 2 * BOUND)
    with pytest.raises(LedgerError, match=r"must be a number in \[0, 1\)"):
        ledger.settle(entry, 1.0)  # a vacuous delta (huge epsilon) is not a settlement either
    again = Ledger.read(ledger.path)
    assert [(each.delta, each.status) for each in again.spends] == [(BOUND, "reserved")]
    assert again.spent() == (1.0, BOUND)
    ledger.settle(entry, BOUND)  # the reserved delta itself: released, nothing lowered
    with pytest.raises(LedgerError, match="is released, only a reserved entry is settled"):
        ledger.settle(entry, 0.0)  # a released entry is final
    cancelled = ledger.reserve(Spend(1.0, BOUND), run_id="r2", scenario="test")
    ledger.cancel(cancelled)
    with pytest.raises(LedgerError, match="is cancelled"):
        ledger.settle(cancelled, 0.0)
    assert [(each.delta, each.status) for each in Ledger.read(ledger.path).spends] == \
        [(BOUND, "released"), (BOUND, "cancelled")]


def test_a_lower_delta_that_raises_the_zcdp_charge_is_refused(tmp_path: Path) -> None:
    """zCDP: an approximate spend (delta > 0, no rho) sits beside the zCDP part; settled to delta 0 it would
    become a pure spend of rho = eps^2 / 2 = 0.5, whose conversion at delta 1e-6 is
    0.5 + 2 sqrt(0.5 ln 1e6) = 5.76 > 1 (Bun & Steinke Prop. 1.3): lowering delta would raise epsilon."""
    ledger = _account(tmp_path, Budget(10.0, 1e-6), accountant="zcdp")
    entry = ledger.reserve(Spend(1.0, BOUND), run_id="r1", scenario="test")
    with pytest.raises(LedgerError, match="would raise the account's zcdp charge"):
        ledger.settle(entry, 0.0)
    assert Ledger.read(ledger.path).spent() == (1.0, BOUND)
    assert ledger.settle(entry, BOUND / 2).delta == BOUND / 2  # within the same part: lowered


def test_a_reservation_whose_settlement_is_refused_keeps_the_reserved_charge(tmp_path: Path) -> None:
    """The run never fails on it: the entry is marked released at the reserved delta, and the record's
    ``ledger_delta`` says what the ledger holds."""
    ledger = _account(tmp_path, Budget(5.0, 1e-6))
    spend = Spend(1.0, BOUND)
    entry = ledger.reserve(spend, run_id="r1", scenario="test")
    reservation = Reservation(run_id="r1", spend=spend, ledger=ledger, entry=entry)
    settled = reservation.settle(1.0)
    assert settled.refused is not None and settled.record() == {"delta_reserved": BOUND, "ledger_delta": BOUND}
    assert [(each.delta, each.status) for each in Ledger.read(ledger.path).spends] == [(BOUND, "released")]
    off = Reservation(run_id="r2", spend=spend, note="ledger off").settle(BOUND / 4)
    assert off.record() == {"delta_reserved": BOUND, "ledger_delta": None}


# ------------------------------------------------------------------------------------------ runs


def _record(path: Path) -> dict:
    return json.loads(path.read_text())


def test_kendall_on_sampled_tuples_records_the_delta_the_ledger_charges(tmp_path: Path) -> None:
    """The Kendall demo with ``--pairs 2n`` (one process): reserved 2 x 2^-40 (sampler, comparisons); the
    record's delta (sampler delta_s + the comparisons' leak, dp.comparison_leakage) is the ledger's exactly."""
    from scenarios.ustat import main

    ledger, out = tmp_path / "ledger", tmp_path / "r.json"
    assert main(["--pairs", "2n", "--ledger", str(ledger), "--budget", "10:1e-6", "--json", str(out)]) == 0
    record, (entry,) = _record(out), _entries(ledger)
    assert record["path"] == "tuples" and record["comparisons"] > 0
    assert record["delta"] == record["sampler_delta"] + record["comparison_leak_delta"]
    assert entry.delta == record["delta"] == record["ledger_delta"] and entry.status == "released"
    assert record["delta_reserved"] == 2 * BOUND > record["delta"]


def test_the_histogram_path_settles_to_the_samplers_delta(tmp_path: Path) -> None:
    """``--path auto --pairs all`` with a delta account: 2^-40 reserved for comparisons that the histogram path
    then does not make; the entry is settled to the sampler's delta_s alone."""
    from scenarios.ustat import main

    ledger, out = tmp_path / "ledger", tmp_path / "r.json"
    assert main(["--pairs", "all", "--ledger", str(ledger), "--budget", "10:1e-6", "--json", str(out)]) == 0
    record, (entry,) = _record(out), _entries(ledger)
    assert record["path"] == "histogram" and record["comparison_leak_delta"] == 0.0
    assert entry.delta == record["delta"] == record["sampler_delta"] == record["ledger_delta"]
    assert record["delta_reserved"] == 2 * BOUND


def test_rank_auc_settles_to_the_sum_of_its_runs(tmp_path: Path) -> None:
    """Two ``--rows`` runs on the sort path: the entry is settled to ``delta_total``, the (correctly rounded)
    sum of the runs' deltas; reserved 2 x (2 sums + comparisons) x 2^-40."""
    from scenarios.rank_auc import main

    ledger, out = tmp_path / "ledger", tmp_path / "r.json"
    assert main(["--path", "sort", "--rows", "60,90", "--ledger", str(ledger), "--budget", "10:1e-6",
                 "--json", str(out)]) == 0
    records, (entry,) = _record(out), _entries(ledger)
    assert len(records) == 2 and all(record["path"] == "sort" for record in records)
    total = math.fsum(record["delta"] for record in records)
    assert entry.delta == total == records[0]["delta_total"] == records[1]["ledger_delta"]
    assert records[0]["delta_reserved"] == 6 * BOUND > total


def test_three_parties_each_settle_to_the_records_delta(tmp_path: Path) -> None:
    """``-M3`` (the one multi-party run here): every party's own ledger entry holds party 0's record's delta."""
    header, values = small_table(rows=30)
    data, ledger, out = write_csv(tmp_path / "small.csv", header, values), tmp_path / "ledger", tmp_path / "r.json"
    argv = ["--data", str(data), *KENDALL, "--pairs", "2n", "--path", "tuples", "--epsilon", "1",
            "--budget", "2.5:1e-9", "--ledger", str(ledger), "--json", str(out)]
    runs = run_parties([argv] * 3)
    assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    record = _record(out)
    assert [_entries(ledger, party)[0].delta for party in range(3)] == [record["delta"]] * 3
    assert record["delta"] == record["ledger_delta"] < record["delta_reserved"] == 2 * BOUND


# ------------------------------------------------------------------------------------------ pure accounts


@pytest.mark.parametrize("options, what", [
    (["--path", "tuples"], "--path tuples compares secret values"),
    (["--pairs", "2n"], "--pairs 2n runs on sampled tuples"),
    (["--clip", "secure", "--path", "tuples"], "--path tuples compares secret values"),
    (["--clip", "secure"], "--clip secure compares secret values"),
])
def test_a_pure_account_refuses_the_comparing_paths_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                options: list[str], what: str) -> None:
    from scenarios.ustat import main

    code = main([*options, "--ledger", str(tmp_path), "--budget", "5"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: party 0: "), err
    assert what in lines[0] and "which a pure account cannot pay" in lines[0]
    assert "scenarios.budget raise ... --budget EPS:DELTA" in lines[0]
    assert list_accounts(tmp_path) == []  # refused when parsing: no account made, nothing spent


def test_the_sort_path_refusal_is_the_line_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.rank_auc import main

    assert main(["--path", "sort", "--ledger", str(tmp_path), "--budget", "5"]) == 2
    assert capsys.readouterr().err.strip() == \
        f"error: party 0: --path sort compares secret values and this party's account is pure: {PURE_LINE}"


def test_a_pure_account_on_path_auto_takes_the_histogram_path(tmp_path: Path) -> None:
    """``--path auto`` (``--pairs auto``): the histogram path, party noise, delta 0 in the record and the ledger
    -- for ustat and for rank_auc, whose auto would otherwise weigh the sort."""
    from scenarios import rank_auc, ustat

    ledger = tmp_path / "ledger"
    assert ustat.main(["--ledger", str(ledger), "--dataset", "u", "--budget", "5", "--json", str(tmp_path / "u.json")]) == 0
    record = _record(tmp_path / "u.json")
    assert (record["path"], record["delta"], record["ledger_delta"], record["comparisons"]) == ("histogram", 0.0, 0.0, 0)
    assert rank_auc.main(["--ledger", str(ledger), "--dataset", "a", "--budget", "5", "--rows", "200",
                          "--json", str(tmp_path / "a.json")]) == 0
    (auc,) = _record(tmp_path / "a.json")
    assert (auc["path"], auc["delta"], auc["ledger_delta"]) == ("histogram", 0.0, 0.0)
    for path in list_accounts(ledger):  # name-a and name-u
        assert [(entry.delta, entry.status) for entry in Ledger.read(path).spends] == [(0.0, "released")]


def test_path_auto_is_refused_when_only_comparing_paths_exist() -> None:
    """A grid far too large for the histogram path (2^20 x 2^20 cells): a pure account has no way to pay."""
    from dp.umpc.planner import pure_account_path
    from secure.columns import ColumnSpec
    from secure.kernels import get_kernel

    specs = [ColumnSpec("a", 0, 1, 20), ColumnSpec("b", 0, 1, 20)]
    with pytest.raises(ValueError, match="only comparing paths can compute 'kendall' here") as refused:
        pure_account_path(get_kernel("kendall", precision=0), specs, parties=3, choice="auto")
    assert "\n" not in str(refused.value) and "scenarios.budget raise" in str(refused.value)
    small = [ColumnSpec("a", 0, 10, 0), ColumnSpec("b", 0, 10, 0)]
    assert pure_account_path(get_kernel("kendall", precision=0), small, parties=3, choice="auto") == "histogram"


def test_the_api_settles_and_refuses_as_the_jobs(tmp_path: Path) -> None:
    """``dp.umpc.release`` (one party, a script): with a delta account on sampled tuples the release's record
    carries the settled delta, which the ledger holds; with a pure account ``tuples='2n'`` is refused in one
    line in the script's words."""
    header, values = small_table(rows=30)
    data, ledger = write_csv(tmp_path / "small.csv", header, values), tmp_path / "ledger"
    runs = []
    for budget, name in (("5:1e-6", "x"), ("5", "y")):
        script = tmp_path / f"script_{name}.py"
        script.write_text(
            "import json, sys\nimport dp\nimport secure\n"
            "QUERY = dp.umpc.Query(statistic='gini', epsilon=0.5, tuples='2n',\n"
            "                      columns=[dp.numeric('sysBP', lower=80, upper=300, bits=2)])\n"
            "async def job(party):\n"
            f"    rows = await party.read({str(data)!r}, QUERY.columns)\n"
            f"    release = await dp.umpc.release(QUERY, rows, ledger={str(ledger)!r}, budget={budget!r},\n"
            f"                                    dataset_name={name!r})\n"
            "    return lambda: print(json.dumps(release.record()))\n"
            "sys.exit(secure.run(job))\n")
        runs.append(run_command([sys.executable, str(script), "-M1", "--no-log"]))
    assert runs[0].code == 0, runs[0].stderr
    record = json.loads(runs[0].stdout.strip().splitlines()[-1])
    (entry,) = _entries(ledger)
    assert record["path"] == "tuples" and entry.delta == record["delta"] == record["ledger_delta"]
    assert record["delta"] < record["delta_reserved"] == 2 * BOUND
    lines = [line for line in runs[1].stderr.splitlines() if line.strip()]
    assert runs[1].code == 2 and len(lines) == 1, runs[1].stderr
    assert "tuples='2n' runs on sampled tuples" in lines[0] and "use tuples='all' with path='histogram'" in lines[0]
