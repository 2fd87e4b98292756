"""The privacy-budget ledger and its accountants (issue 15): dp.budget and python -m scenarios.budget.

- accountants: basic composition and zCDP with numbers derived here by hand, the zCDP conversion
  (Bun & Steinke 2016, Prop. 1.3) against an independent numerical minimisation over Renyi orders
  (scipy), against the exact privacy profile of the Gaussian mechanism (Balle & Wang 2018, Thm 8:
  the conversion must be conservative), and Prop. 1.4 (pure eps -> eps^2/2) against the Renyi
  divergences of randomized response;
- the ledger (an SQLite database per account, WAL): two processes reserving at once when only one fits
  (exactly one refusal, the write lock held across read-check-write: the insert is slowed down so that
  without the lock both would pass), a crash after reserve (counted) and during the write (previous
  account whole), cancel, a hand-edited and a truncated file (refused with one line, never reset), an
  unwritable directory, bad budgets, accountant and budget mismatches, a zCDP account of delta 0;
- first-format (JSON) accounts: migrated on use, corrupt ones refused as before;
- dataset keys: a declared name, or the canonical digest of the parsed rows (a re-saved file with CRLF
  line ends, a trailing newline, quoting or reordered rows keeps its key; a changed value does not);
- the tool: show / create / raise, -h, usage errors (exit 2, one line).
"""
from __future__ import annotations

import json
import math
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import optimize, stats

from dp.budget import (Budget, BudgetExceeded, Ledger, LedgerError, Spend, Totals, dataset_key_of_file,
                       dataset_key_of_name, dataset_key_of_rows, default_ledger_directory, ledger_disabled,
                       list_accounts, parse_budget, zcdp_to_epsilon)
from dp.budget.accountants import Accountant, would_exceed_totals
from dp.budget.agreement import pure_budget, refusal_texts

ROOT = Path(__file__).resolve().parent.parent
REFUSED = "fails its checksum: refusing to use it; it is never reset silently: restore it or remove it on purpose"


def _disk(path: Path) -> tuple[bytes, bytes]:
    """The account's bytes on disk: the database and its write-ahead log."""
    wal = Path(f"{path}-wal")
    return path.read_bytes(), wal.read_bytes() if wal.exists() else b""


def _edit(path: Path, statement: str) -> None:
    """A hand edit with SQLite itself (what a user with the sqlite3 shell would do)."""
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(statement)
    connection.close()


def _one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text and text, text
    return text


# -- accountants --------------------------------------------------------------------------------------


def total_spent(accountant: Accountant, spends: list[Spend], delta_target: float) -> tuple[float, float]:
    return Totals.of(spends).composed(accountant, delta_target)


def would_exceed(accountant: Accountant, budget: Budget, spends: list[Spend], new: Spend) -> str | None:
    return would_exceed_totals(accountant, budget, Totals.of(spends), new)


def test_basic_composition_adds_epsilons_and_deltas() -> None:
    spends = [Spend(0.5), Spend(0.25, 1e-6), Spend(0.125, 2e-6, rho=0.01)]
    epsilon, delta = total_spent("basic", spends, delta_target=1e-5)
    assert epsilon == 0.5 + 0.25 + 0.125
    assert delta == pytest.approx(3e-6, rel=1e-12)


def test_zcdp_two_pure_spends() -> None:
    # Prop. 1.4: each pure 0.5 is 0.5^2 / 2 = 0.125-zCDP; two of them 0.25 (Lemma 1.7)
    rho = 2 * 0.5 ** 2 / 2
    assert rho == 0.25
    expected = 0.25 + 2 * math.sqrt(0.25 * math.log(1e6))          # Prop. 1.3 at delta' = 1e-6
    epsilon, delta = total_spent("zcdp", [Spend(0.5), Spend(0.5)], delta_target=1e-6)
    assert epsilon == pytest.approx(expected, rel=1e-12)
    assert delta == pytest.approx(1e-6, rel=1e-12)
    assert expected == pytest.approx(3.966922, abs=1e-6)           # 0.25 + 2 sqrt(3.4538776)


def test_zcdp_gaussian_spends_use_their_rho() -> None:
    sigma = 4.0                                                     # sensitivity 1: rho = 1 / (2 * 16)
    rho = 1 / (2 * sigma ** 2)
    spends = [Spend(1.0, 1e-7, rho=rho, mechanism="Gaussian") for _ in range(3)]
    epsilon, delta = total_spent("zcdp", spends, delta_target=1e-5)
    assert epsilon == pytest.approx(3 / 32 + 2 * math.sqrt(3 / 32 * math.log(1e5)), rel=1e-12)
    assert delta == pytest.approx(1e-5, rel=1e-12)


def test_zcdp_keeps_non_convertible_spends_beside() -> None:
    # (1, 1e-7)-DP without rho stays additive; delta' = 1e-6 - 1e-7 for the zCDP part of a pure 0.5
    spends = [Spend(1.0, 1e-7), Spend(0.5)]
    epsilon, delta = total_spent("zcdp", spends, delta_target=1e-6)
    delta_prime = 1e-6 - 1e-7
    assert epsilon == pytest.approx(0.125 + 2 * math.sqrt(0.125 * math.log(1 / delta_prime)) + 1.0, rel=1e-12)
    assert delta == pytest.approx(1e-6, rel=1e-12)
    # without any zCDP spend it is the basic composition of those spends
    assert total_spent("zcdp", [Spend(1.0, 1e-7)], delta_target=1e-6) == (1.0, 1e-7)
    # the non-convertible deltas use up the budget's delta: no conversion exists
    assert math.isinf(total_spent("zcdp", [Spend(1.0, 1e-6), Spend(0.5)], delta_target=1e-6)[0])


@pytest.mark.parametrize("rho, delta", [(0.25, 1e-6), (0.01, 1e-9), (3.0, 1e-5), (1e-4, 0.01)])
def test_zcdp_conversion_is_the_optimum_over_renyi_orders(rho: float, delta: float) -> None:
    """rho-zCDP means D_alpha <= rho alpha for all alpha > 1, so (rho alpha + ln(1/delta)/(alpha - 1), delta)-DP
    for every alpha; minimise numerically (independently of the closed form)."""
    found = optimize.minimize_scalar(lambda alpha: rho * alpha + math.log(1 / delta) / (alpha - 1),
                                     bounds=(1 + 1e-9, 1e7), method="bounded", options={"xatol": 1e-10})
    assert zcdp_to_epsilon(rho, delta) == pytest.approx(found.fun, rel=1e-6)


@pytest.mark.parametrize("sigma", [0.8, 2.0, 10.0, 50.0])
def test_zcdp_conversion_is_conservative_for_the_gaussian(sigma: float) -> None:
    """Exact privacy profile of the Gaussian mechanism, sensitivity 1 (Balle & Wang 2018, Thm 8):
    delta(eps) = Phi(1/(2 sigma) - eps sigma) - e^eps Phi(-1/(2 sigma) - eps sigma); at the epsilon the
    accountant states for delta = 1e-6 the exact delta must not exceed 1e-6."""
    rho = 1 / (2 * sigma ** 2)
    target = 1e-6
    epsilon = total_spent("zcdp", [Spend(1.0, target, rho=rho)], delta_target=target)[0]
    exact = stats.norm.cdf(1 / (2 * sigma) - epsilon * sigma) - math.exp(epsilon) * stats.norm.cdf(
        -1 / (2 * sigma) - epsilon * sigma)
    assert exact <= target


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 3.0])
def test_pure_dp_is_half_epsilon_squared_zcdp(epsilon: float) -> None:
    """Prop. 1.4 on randomized response (an exactly eps-DP mechanism): D_alpha(P||Q) <= alpha eps^2 / 2."""
    p = math.exp(epsilon) / (1 + math.exp(epsilon))
    q = 1 - p
    for alpha in np.linspace(1.01, 60, 400):
        divergence = math.log(p ** alpha * q ** (1 - alpha) + q ** alpha * p ** (1 - alpha)) / (alpha - 1)
        assert divergence <= alpha * epsilon ** 2 / 2 * (1 + 1e-12)


def test_would_exceed_reasons() -> None:
    budget = Budget(2.5)
    assert would_exceed("basic", budget, [Spend(1.0), Spend(1.0)], Spend(0.5)) is None
    assert would_exceed("basic", budget, [Spend(1.0), Spend(1.0)], Spend(1.0)) == \
        "budget of 2.5 spent: 2 spent, this run needs 1"
    # floating-point rounding: 0.1 + 0.1 + 0.1 = 0.30000000000000004 still fits 0.3
    assert would_exceed("basic", Budget(0.3), [Spend(0.1), Spend(0.1)], Spend(0.1)) is None
    assert would_exceed("basic", Budget(10, 1e-6), [Spend(1, 6e-7)], Spend(1, 6e-7)) == \
        "delta budget of 1e-06 spent: 6e-07 spent, this run needs 6e-07"
    assert "pure DP only" in str(would_exceed("basic", Budget(10), [], Spend(1, 1e-9)))
    reason = would_exceed("zcdp", Budget(3.0, 1e-6), [Spend(0.5)], Spend(0.5))
    assert reason is not None and reason.startswith("budget of 3 spent: ") and "zcdp accountant" in reason


@pytest.mark.parametrize("text, message", [
    ("-1", "budget epsilon must be positive and finite, got -1"),
    ("0", "budget epsilon must be positive and finite, got 0"),
    ("nan", "budget epsilon must be positive and finite, got nan"),
    ("inf", "budget epsilon must be positive and finite, got inf"),
    ("1:1", "budget delta must lie in [0, 1), got 1"),
    ("1:-0.1", "budget delta must lie in [0, 1), got -0.1"),
    ("abc", "budget must be EPS or EPS:DELTA with numbers (e.g. 2.5 or 2.5:1e-6), got 'abc'"),
    ("1:2:3", "budget must be EPS or EPS:DELTA (e.g. 2.5 or 2.5:1e-6), got '1:2:3'"),
    ("", "budget must be EPS or EPS:DELTA (e.g. 2.5 or 2.5:1e-6), got ''"),
])
def test_bad_budgets_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_budget(text)
    assert _one_line(raised.value) == message


def test_budgets_and_spends_parse_and_check() -> None:
    assert parse_budget("2.5") == Budget(2.5, 0.0)
    assert parse_budget(" 1:1e-6 ") == Budget(1.0, 1e-6)
    with pytest.raises(ValueError, match="budget epsilon must be positive and finite, got -1"):
        Budget(-1)
    for bad in (dict(epsilon=-0.5), dict(epsilon=math.inf), dict(epsilon=1.0, delta=1.0),
                dict(epsilon=1.0, rho=-1.0), dict(epsilon=1.0, rho=math.nan)):
        with pytest.raises(ValueError):
            Spend(**bad)  # type: ignore[arg-type]


# -- the ledger ---------------------------------------------------------------------------------------


def _open(directory: Path, budget: Budget | None = Budget(2.5), *, party: int = 0, name: str = "trial",
          accountant: Any = "basic") -> Ledger:
    return Ledger.open(directory, party=party, dataset=dataset_key_of_name(name), budget=budget,
                       accountant=accountant)


def test_reserve_until_spent_then_cancel(tmp_path: Path) -> None:
    ledger = _open(tmp_path)
    first = ledger.reserve(Spend(1.0, mechanism="discrete Laplace"), run_id="run-1", scenario="ustat")
    ledger.reserve(Spend(1.0), run_id="run-2", scenario="ustat")
    assert (first.number, first.status, first.run_id) == (1, "reserved", "run-1")
    before = _disk(ledger.path)
    with pytest.raises(BudgetExceeded) as raised:
        ledger.reserve(Spend(1.0), run_id="run-3", scenario="ustat")
    assert _one_line(raised.value).startswith("budget of 2.5 spent: 2 spent, this run needs 1, on dataset name-trial")
    assert _disk(ledger.path) == before                             # a refusal writes nothing
    assert ledger.spent() == (2.0, 0.0) and ledger.left() == (0.5, 0.0)
    ledger.cancel(first)
    reopened = _open(tmp_path, None)
    assert reopened.spent() == (1.0, 0.0)
    assert [entry.status for entry in reopened.spends] == ["cancelled", "reserved"]
    reopened.cancel(first)                                          # twice: no change
    assert reopened.spent() == (1.0, 0.0)
    reopened.reserve(Spend(1.0), run_id="run-3", scenario="ustat")
    assert reopened.spent() == (2.0, 0.0)


def test_a_refusal_shares_a_generic_line_and_keeps_key_path_and_figures_local(tmp_path: Path) -> None:
    data = tmp_path / "site0.csv"
    data.write_text("x\n1\n2\n")
    key = dataset_key_of_rows(data)
    ledger = Ledger.open(tmp_path / "L", party=0, dataset=key, budget=Budget(2.5), accountant="basic")
    ledger.reserve(Spend(2.0), run_id="run-1", scenario="ustat")
    with pytest.raises(BudgetExceeded) as raised:
        ledger.reserve(Spend(1.0), run_id="run-2", scenario="ustat")
    shared, local = refusal_texts(raised.value)
    assert shared == "its privacy budget for this data does not cover this run (epsilon 1); see its local note"
    assert local is not None and local.startswith("budget of 2.5 spent: 2 spent, this run needs 1, on dataset " + key)
    assert str(ledger.path) in local
    for secret in (key, str(tmp_path), "2.5", "spent"):
        assert secret not in shared
    pure = Ledger.open(tmp_path / "L", party=0, dataset="name-pure", budget=Budget(3.0), accountant="basic")
    with pytest.raises(BudgetExceeded) as raised:
        pure.reserve(Spend(1.0, 2.0 ** -40), run_id="run-3", scenario="ustat")
    shared, local = refusal_texts(raised.value)
    assert shared == ("its privacy budget for this data allows pure DP only (no delta) and this run needs a delta "
                      "(epsilon 1, delta 9.09e-13): run with pure-DP party-drawn noise: --noise parties "
                      "(noise='parties' in a script); see its local note")
    assert local is not None and "raise" not in local and "name-pure" in local
    with pytest.raises(LedgerError) as missing:  # no account and no budget: the key stays local too
        Ledger.open(tmp_path / "L", party=1, dataset=key, budget=None, accountant="basic")
    shared, local = refusal_texts(missing.value)
    assert key not in shared and shared.startswith("it has no privacy budget for this data: create one with --budget")
    assert local is not None and key in local
    assert refusal_texts(LedgerError("dataset name must be ...")) == ("dataset name must be ...", None)
    shared, local = refusal_texts(PermissionError(13, "Permission denied", str(tmp_path / "L" / "x")))
    assert str(tmp_path) not in shared and local is not None and str(tmp_path) in local


def test_a_released_run_is_marked_released_and_stays_counted(tmp_path: Path) -> None:
    ledger = _open(tmp_path)
    first = ledger.reserve(Spend(1.0), run_id="run-1", scenario="ustat")
    second = ledger.reserve(Spend(1.0), run_id="run-2", scenario="ustat")
    ledger.mark_released(first)
    ledger.cancel(second)
    ledger.mark_released(second)                                    # a cancelled entry is never released
    reopened = _open(tmp_path, None)
    assert [entry.status for entry in reopened.spends] == ["released", "cancelled"]
    assert reopened.spent() == (1.0, 0.0)                           # released counts as reserved did


def test_pure_budget_reads_the_budget_or_the_existing_account(tmp_path: Path) -> None:
    """The test behind the default noise (CLI and API): a budget without delta, else an existing account of
    delta 0 at this party; nothing is created or changed."""
    directory = tmp_path / "L"
    assert pure_budget(party=0, budget="3", ledger=str(directory), dataset_name="trial7")
    assert pure_budget(party=0, budget=Budget(3.0), ledger=str(directory), dataset_name="trial7")
    assert not pure_budget(party=0, budget="3:1e-6", ledger=str(directory), dataset_name="trial7")
    assert not pure_budget(party=0, budget=None, ledger=str(directory), dataset_name="trial7")  # no account yet
    assert not directory.exists()                                   # nothing created
    Ledger.create(directory, party=0, dataset="name-trial7", budget=Budget(3.0), accountant="basic")
    Ledger.create(directory, party=1, dataset="name-trial7", budget=Budget(3.0, 1e-6), accountant="basic")
    assert pure_budget(party=0, budget=None, ledger=str(directory), dataset_name="trial7")
    assert not pure_budget(party=1, budget=None, ledger=str(directory), dataset_name="trial7")
    assert not pure_budget(party=0, budget=None, ledger="off", dataset_name="trial7")
    assert not pure_budget(party=0, budget=None, ledger=str(directory), dataset_name="trial7", exempt="embedded")
    data = tmp_path / "rows.csv"
    data.write_text("x\n1\n")
    Ledger.create(directory, party=2, dataset=dataset_key_of_rows(data), budget=Budget(1.0), accountant="basic")
    assert pure_budget(party=2, budget=None, ledger=str(directory), data_file=str(tmp_path / "rows.csv"))
    assert not pure_budget(party=2, budget=None, ledger=str(directory), data_file=str(tmp_path / "gone.csv"))


def test_each_party_keeps_its_own_account(tmp_path: Path) -> None:
    zero, one = _open(tmp_path, party=0), _open(tmp_path, Budget(1.0), party=1)
    zero.reserve(Spend(2.0), run_id="r", scenario="ecdf")
    with pytest.raises(BudgetExceeded):
        one.reserve(Spend(2.0), run_id="r", scenario="ecdf")
    assert [path.name for path in list_accounts(tmp_path)] == ["name-trial.p0.sqlite3", "name-trial.p1.sqlite3"]
    assert zero.spent() == (2.0, 0.0) and one.spent() == (0.0, 0.0)


def test_zcdp_account(tmp_path: Path) -> None:
    """A zCDP account of delta 0 would refuse every pure spend (its epsilon at delta 0 is infinite): refused
    when created, in one line saying why and what to give; then a zCDP account with a delta composes."""
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path, Budget(4.0), accountant="zcdp")
    line = _one_line(raised.value)
    assert line.startswith("the zcdp accountant needs a budget delta > 0: with delta 0 its total in epsilon is "
                           "infinite")
    assert "--budget 4:1e-6 (budget='4:1e-6' in a script)" in line and "basic accountant" in line
    assert not list_accounts(tmp_path)
    with pytest.raises(LedgerError, match="zcdp accountant needs a budget delta > 0"):
        Ledger.create(tmp_path, party=0, dataset="name-z", budget=Budget(4.0), accountant="zcdp")
    ledger = _open(tmp_path, Budget(4.0, 1e-6), accountant="zcdp")
    ledger.reserve(Spend(0.5), run_id="a", scenario="ustat")
    ledger.reserve(Spend(0.5), run_id="b", scenario="ustat")
    assert ledger.spent()[0] == pytest.approx(0.25 + 2 * math.sqrt(0.25 * math.log(1e6)), rel=1e-12)
    assert ledger.left()[0] == pytest.approx(4.0 - ledger.spent()[0], rel=1e-12)


def test_open_refusals(tmp_path: Path) -> None:
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path, None)
    assert _one_line(raised.value) == ("no privacy budget for dataset name-trial: create one with "
                                       "--budget EPS[:DELTA] (or python -m scenarios.budget)")
    assert not list_accounts(tmp_path)
    _open(tmp_path, Budget(2.5))
    assert _open(tmp_path, Budget(2.5)).budget == Budget(2.5)      # the same budget again: fine
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path, Budget(5.0))
    assert "--budget epsilon 5, delta 0 differs" in _one_line(raised.value)
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path, None, accountant="zcdp")
    assert "uses the basic accountant, this run asks for zcdp" in _one_line(raised.value)
    with pytest.raises(ValueError, match="accountant must be one of basic, zcdp"):
        _open(tmp_path, None, accountant="rdp")
    with pytest.raises(LedgerError, match="dataset key must be"):
        Ledger.open(tmp_path, party=0, dataset="../etc", budget=Budget(1), accountant="basic")
    with pytest.raises(LedgerError, match="dataset name must be"):
        dataset_key_of_name("a/b")
    with pytest.raises(LedgerError, match="the ledger is off"):
        Ledger.open("off", party=0, dataset="name-x", budget=Budget(1), accountant="basic")


def test_dataset_keys_and_default_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "rows.csv"
    data.write_bytes(b"x\n1\n")
    import hashlib

    assert dataset_key_of_file(data) == "sha256-" + hashlib.sha256(b"x\n1\n").hexdigest()[:16]
    assert dataset_key_of_name("hospital-a") == "name-hospital-a"
    monkeypatch.setenv("PRIVATE_USTATS_LEDGER", str(tmp_path / "L"))
    assert default_ledger_directory() == tmp_path / "L"
    monkeypatch.setenv("PRIVATE_USTATS_LEDGER", "off")
    assert ledger_disabled(default_ledger_directory()) and not ledger_disabled(tmp_path / "off")
    monkeypatch.delenv("PRIVATE_USTATS_LEDGER")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_ledger_directory() == tmp_path / "xdg" / "private-ustats" / "ledger"
    monkeypatch.delenv("XDG_DATA_HOME")
    assert default_ledger_directory() == Path.home() / ".local" / "share" / "private-ustats" / "ledger"


def test_hand_edited_file_is_refused_and_kept(tmp_path: Path) -> None:
    ledger = _open(tmp_path)
    ledger.reserve(Spend(1.0), run_id="r", scenario="ustat")
    _edit(ledger.path, "UPDATE entries SET epsilon = 0.1 WHERE number = 1")   # "I only spent 0.1"
    edited = _disk(ledger.path)
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path)
    assert _one_line(raised.value) == f"ledger file {ledger.path} {REFUSED}"
    with pytest.raises(LedgerError, match="fails its checksum"):
        ledger.reserve(Spend(0.1), run_id="s", scenario="ustat")   # the open object re-reads too
    assert _disk(ledger.path) == edited                             # never reset
    assert list_accounts(tmp_path) == [ledger.path]
    for statement in ("DELETE FROM entries", "UPDATE account SET budget_epsilon = 9",
                      "UPDATE entries SET status = 'cancelled'"):
        _edit(ledger.path, statement)
        with pytest.raises(LedgerError, match="fails its checksum"):
            _open(tmp_path, None)


def test_truncated_file_is_refused_and_kept(tmp_path: Path) -> None:
    ledger = _open(tmp_path)
    ledger.reserve(Spend(1.0), run_id="r", scenario="ustat")
    ledger.close()                                                  # the last connection folds the log in
    whole = ledger.path.read_bytes()
    ledger.path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(LedgerError) as raised:
        _open(tmp_path, None)
    assert _one_line(raised.value) == f"ledger file {ledger.path} {REFUSED}"
    assert ledger.path.read_bytes() == whole[: len(whole) // 2]
    ledger.path.write_bytes(b"")
    with pytest.raises(LedgerError, match="fails its checksum"):
        _open(tmp_path, None)


def test_account_copied_under_another_name_is_refused(tmp_path: Path) -> None:
    ledger = _open(tmp_path, party=0)
    ledger.close()
    (tmp_path / "name-trial.p1.sqlite3").write_bytes(ledger.path.read_bytes())
    with pytest.raises(LedgerError, match="moved or copied under another name"):
        _open(tmp_path, None, party=1)


def test_unwritable_directory_gives_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "ledger"
    ledger = _open(folder)
    os.chmod(folder, 0o500)
    try:
        if os.access(folder, os.W_OK):
            pytest.skip("running as root: chmod 0500 does not stop this process from writing")
        with pytest.raises(LedgerError) as raised:
            _open(folder, None, party=1)
        assert _one_line(raised.value).startswith(f"ledger directory {folder} is not writable")
        with pytest.raises(LedgerError) as raised:
            ledger.reserve(Spend(1.0), run_id="r", scenario="ustat")
        assert "cannot write ledger file" in _one_line(raised.value)
        assert ledger.spent() == (0.0, 0.0)
    finally:
        os.chmod(folder, 0o700)


def test_ledger_directory_that_is_a_file_gives_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LedgerError) as raised:
        _open(blocker)
    assert _one_line(raised.value) == f"ledger directory {blocker} is not a directory"
    with pytest.raises(LedgerError) as raised:
        _open(blocker / "below")
    assert _one_line(raised.value).startswith(f"cannot create ledger directory {blocker / 'below'}")


# -- processes: the lock, crashes ------------------------------------------------------------------------

_FORK = multiprocessing.get_context("fork")


def _reserve_slowly(directory: str, barrier: Any, results: Any) -> None:
    """A party's reserve() with a slow write (0.3 s between the check and the insert): without the lock
    both processes would read the empty account, both pass the check and both write."""
    import dp.budget.ledger as module

    append = module._append_entry

    def slow(*arguments: Any) -> None:
        time.sleep(0.3)
        append(*arguments)

    module._append_entry = slow  # type: ignore[assignment]
    ledger = Ledger.open(directory, party=0, dataset="name-trial", budget=None, accountant="basic")
    barrier.wait(timeout=30)
    try:
        ledger.reserve(Spend(1.0), run_id=f"run-{os.getpid()}", scenario="ustat")
        results.put("passed")
    except BudgetExceeded as exc:
        results.put(f"refused: {exc}")


def test_two_processes_at_once_cannot_both_pass(tmp_path: Path) -> None:
    _open(tmp_path, Budget(1.5))                                    # room for one spend of 1, not two
    barrier, results = _FORK.Barrier(2), _FORK.Queue()
    workers = [_FORK.Process(target=_reserve_slowly, args=(str(tmp_path), barrier, results)) for _ in range(2)]
    for worker in workers:
        worker.start()
    outcomes = sorted(results.get(timeout=60) for _ in workers)
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    assert outcomes[0] == "passed"
    assert outcomes[1].startswith("refused: budget of 1.5 spent: 1 spent, this run needs 1")
    ledger = _open(tmp_path, None)
    assert ledger.spent() == (1.0, 0.0) and len(ledger.spends) == 1


def _reserve_then_crash(directory: str) -> None:
    ledger = Ledger.open(directory, party=0, dataset="name-trial", budget=None, accountant="basic")
    ledger.reserve(Spend(0.75, mechanism="discrete Laplace"), run_id="crashed", scenario="ustat")
    os._exit(9)                                                     # killed right after the write-ahead


def _crash_during_write(directory: str) -> None:
    import dp.budget.ledger as module

    append = module._append_entry

    def torn(*arguments: Any) -> None:
        append(*arguments)
        os._exit(9)                                                 # dies after the insert, before the commit

    module._append_entry = torn  # type: ignore[assignment]
    ledger = Ledger.open(directory, party=0, dataset="name-trial", budget=None, accountant="basic")
    ledger.reserve(Spend(0.5), run_id="torn", scenario="ustat")
    os._exit(0)


def test_crash_after_reserve_leaves_the_spend_counted(tmp_path: Path) -> None:
    _open(tmp_path)
    worker = _FORK.Process(target=_reserve_then_crash, args=(str(tmp_path),))
    worker.start()
    worker.join(timeout=60)
    assert worker.exitcode == 9
    ledger = _open(tmp_path, None)
    assert ledger.spent() == (0.75, 0.0)
    assert [(entry.run_id, entry.status) for entry in ledger.spends] == [("crashed", "reserved")]


def test_crash_during_the_write_keeps_the_previous_account(tmp_path: Path) -> None:
    ledger = _open(tmp_path)
    ledger.reserve(Spend(1.0), run_id="done", scenario="ustat")
    ledger.close()
    before = ledger.path.read_bytes()
    worker = _FORK.Process(target=_crash_during_write, args=(str(tmp_path),))
    worker.start()
    worker.join(timeout=60)
    assert worker.exitcode == 9
    assert ledger.path.read_bytes() == before                       # the torn transaction never reached it
    assert _open(tmp_path, None).spent() == (1.0, 0.0)              # whole, verified; the torn log rolled back
    assert list_accounts(tmp_path) == [ledger.path]


# -- python -m scenarios.budget ------------------------------------------------------------------------


def _tool(*words: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "scenarios.budget", *words], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def test_tool_create_show_raise(tmp_path: Path) -> None:
    data = tmp_path / "rows.csv"
    data.write_text("x\n1\n2\n")
    key = dataset_key_of_rows(data)
    ledger = tmp_path / "L"
    run = _tool("--ledger", str(ledger), "create", "--data", str(data), "--party", "1", "--budget", "2.5", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert f"created {ledger / (key + '.p1.sqlite3')}: budget epsilon 2.5, delta 0, basic accountant" in run.stdout
    account = Ledger.open(ledger, party=1, dataset=key, budget=None, accountant="basic")
    account.reserve(Spend(1.0, mechanism="discrete Laplace", what="Kendall tau"), run_id="ab" * 32, scenario="ustat")
    run = _tool("create", "--ledger", str(ledger), "--dataset-name", "trial", "--party", "0", "--budget", "4:1e-6",
                "--accountant", "zcdp", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    run = _tool("--ledger", str(ledger), "show", cwd=tmp_path)
    assert run.returncode == 0 and run.stderr == "", run.stderr
    assert f"ledger {ledger}: 2 account(s)" in run.stdout
    assert "spent   epsilon 1, delta 0 in 1 run(s)" in run.stdout and "left    epsilon 1.5, delta 0" in run.stdout
    assert "Kendall tau" in run.stdout and "discrete Laplace" in run.stdout and "abababababab" in run.stdout
    run = _tool("--ledger", str(ledger), "show", "--dataset-name", "trial", cwd=tmp_path)
    assert "1 account(s) for dataset name-trial" in run.stdout and "zcdp accountant" in run.stdout
    run = _tool("--ledger", str(ledger), "raise", "--data", str(data), "--party", "1", "--budget", "4", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "budget epsilon 2.5, delta 0 -> epsilon 4, delta 0" in run.stdout
    assert Ledger.read(account.path).budget == Budget(4.0) and Ledger.read(account.path).spent() == (1.0, 0.0)
    run = _tool(cwd=tmp_path, env={"PRIVATE_USTATS_LEDGER": str(ledger)})   # no flags: show the default ledger
    assert run.returncode == 0 and "2 account(s)" in run.stdout


@pytest.mark.parametrize("words, message", [
    (["raise", "--dataset-name", "trial", "--party", "0", "--budget", "1"],
     "error: party 0: a budget is only raised: epsilon 1, delta 0 is not above the budget epsilon 2, delta 0"),
    (["create", "--dataset-name", "trial", "--party", "0", "--budget", "3"], "error: party 0: account "),
    (["create", "--dataset-name", "other", "--party", "0", "--budget", "-1"],
     "error: party 0: --budget: budget epsilon must be positive and finite, got -1"),
    (["raise", "--dataset-name", "other", "--party", "0", "--budget", "3"],
     "error: party 0: no account for dataset name-other in "),
    (["create", "--dataset-name", "other", "--party", "0"], "error: the following arguments are required: --budget"),
    (["show", "--name", "trial"], "error: unknown option --name"),
    (["frob"], "error: argument {show,create,raise}: invalid choice: 'frob'"),
    (["--led", "D", "show"], "error: unknown option --led (did you mean --ledger? options must be spelled out "
                             "in full)"),
    (["show", "--part", "0"], "error: unknown option --part (did you mean --party? options must be spelled out "
                              "in full)"),
    (["create", "--dataset-name", "x", "--party", "0", "--budg", "1"],
     "error: unknown option --budg (did you mean --budget? options must be spelled out in full)"),
])
def test_tool_usage_errors_exit_2_with_one_line(tmp_path: Path, words: list[str], message: str) -> None:
    ledger = tmp_path / "L"
    Ledger.create(ledger, party=0, dataset="name-trial", budget=Budget(2.0), accountant="basic")
    run = _tool("--ledger", str(ledger), *words, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(message), run.stderr


def test_tool_refuses_a_corrupt_account_and_the_ledger_off(tmp_path: Path) -> None:
    ledger = _open(tmp_path / "L")
    ledger.close()
    ledger.path.write_bytes(ledger.path.read_bytes()[:len(ledger.path.read_bytes()) // 2])
    run = _tool("--ledger", str(tmp_path / "L"), "show", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr == f"error: ledger file {ledger.path} {REFUSED}\n"
    run = _tool("--ledger", "off", cwd=tmp_path)
    assert run.returncode == 2 and run.stderr.startswith("error: the ledger is off")


def test_tool_help(tmp_path: Path) -> None:
    for words in (["-h"], ["show", "--help"], ["create", "-h"]):
        run = _tool(*words, cwd=tmp_path)
        assert run.returncode == 0 and run.stderr == ""
        assert run.stdout.startswith("usage: python -m scenarios.budget") and "-H" in run.stdout
        assert "--ledger" in run.stdout and "issue" not in run.stdout
    assert "--accountant" in _tool("create", "-h", cwd=tmp_path).stdout


@pytest.mark.parametrize("step", ["reserve", "settle"])
def test_a_failed_write_is_one_ledger_line_and_changes_nothing(step: str, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite failing inside the transaction (a full disk) gives the ledger's one-line error, not sqlite3's exception
    (which would end a run in a traceback), and leaves the account as it was, in memory and on disk."""
    import sqlite3

    from dp.budget import ledger as module

    ledger = _open(tmp_path)
    entry = ledger.reserve(Spend(1.0), run_id="first", scenario="ustat")

    def full(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(module, "_store_account", full)
    with pytest.raises(LedgerError, match="^cannot write ledger file .*: database or disk is full$") as refused:
        if step == "reserve":
            ledger.reserve(Spend(0.5), run_id="second", scenario="ustat")
        else:
            ledger.settle(entry, 0.0)
    assert refused.value.shared == "cannot write its ledger account: database or disk is full"
    assert ledger.spent() == (1.0, 0.0) and [e.status for e in ledger.spends] == ["reserved"]
    monkeypatch.undo()
    assert _open(tmp_path, None).spent() == (1.0, 0.0)
