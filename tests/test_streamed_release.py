"""The ``ustat`` job on a user's file counts it while reading when the path may be the histogram path
(:func:`secure.counting.count_file` inside :func:`dp.umpc.release`), and releases what reading every row releases:
the same record (estimate, noisy sums, n, fill, local note) with the same injected noise.  When the plan turns out
to be another path, the rows are read after all; a forced ``--path sort`` reads them from the start.

One party in this process (``-M1``); the party noise is injected through :mod:`secrets` as in
tests/test_ustat_face.py.
"""
from __future__ import annotations

import random
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dp.umpc.scripting as scripting
import secure.counting as counting
from scenarios import ustat
from tests.conftest import read_record, small_table, write_csv

MEASURED = ("seconds", "phases", "bytes_sent", "budget", "ledger_delta", "run_id")
KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:1,diaBP=40:150:1",
           "--fill", "sysBP=120,diaBP=80"]
AUC = ["--stat", "auc", "--columns", "score,TenYearCHD", "--domain", "score=0:1:4", "--fill", "score=0.5,TenYearCHD=0"]


@pytest.fixture
def gappy_csv(tmp_path: Path) -> Path:
    """The small table with a few missing cells (filled by the policy) and values outside the domains (clipped)."""
    header, values = small_table(rows=60)
    values[3, 0], values[7, 1], values[11, 6] = np.nan, np.nan, np.nan
    values[5, 0], values[9, 1] = 400.0, 20.0
    return write_csv(tmp_path / "gappy.csv", header, values)


def _run(options: list[str], data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
         capsys: pytest.CaptureFixture[str], *, streamed: bool) -> tuple[dict[str, Any], list[str], int]:
    """(record, printed lines, files counted) of one run with the injected noise; ``streamed=False``: the release
    never counts while reading (the rows are read, as before)."""
    import mpyc.runtime  # noqa: F401  (draws its key before the stream is fixed)

    stream = random.Random(2026)
    monkeypatch.setattr(secrets, "token_bytes", lambda count=32: stream.randbytes(count))
    monkeypatch.setattr(secrets, "randbits", stream.getrandbits)
    calls: list[str] = []
    original = counting.count_file

    def spy(path: str, *args: Any, **named: Any) -> Any:
        calls.append(path)
        return original(path, *args, **named)

    monkeypatch.setattr(scripting, "count_file", spy)  # where the release looks them up
    if not streamed:
        monkeypatch.setattr(scripting, "histogram_possible", lambda *a, **k: False)
    out = tmp_path / f"{streamed}.json"
    assert ustat.main([*options, "--data", str(data), "--epsilon", "2", "--noise", "parties", "--seed", "5",
                       "--ledger", "off", "--json", str(out), "--no-log"]) == 0
    monkeypatch.undo()
    lines = [line for line in capsys.readouterr().out.splitlines()
             if not line.lstrip().startswith(("seconds at", "phases:", "bytes"))]
    return {k: v for k, v in read_record(out).items() if k not in MEASURED}, lines, len(calls)


@pytest.mark.parametrize("options, local", [([*KENDALL, "--pairs", "all"], "2 missing value(s) filled, 2 value(s)"),
                                            ([*AUC, "--path", "histogram"], "1 missing value(s) filled, 0 value(s)")],
                         ids=["kendall", "auc"])
def test_counted_while_read_releases_what_reading_the_rows_releases(
        options: list[str], local: str, gappy_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    streamed, printed, counted = _run(options, gappy_csv, tmp_path, monkeypatch, capsys, streamed=True)
    read, printed_read, not_counted = _run(options, gappy_csv, tmp_path, monkeypatch, capsys, streamed=False)
    assert (counted, not_counted) == (1, 0)  # the mutation "never count" (or "always") fails here
    assert streamed["path"] == "histogram" and streamed["fill"] and streamed["n"] == 60
    assert streamed == read
    assert printed == printed_read and f"  at this party, not shared: {local} clipped to the domain" in printed


def test_a_plan_other_than_the_histogram_reads_the_rows_after_counting(
        gappy_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``--path auto`` counts first (the histogram path was possible); a plan for the sort path (forced here
    through the planner) then reads the rows, every party alike, and releases what reading them at once does."""
    original = scripting.plan_for

    def sort_plan(query: Any, **named: Any) -> Any:
        return original(replace(query, path="sort"), **named)

    results = []
    for streamed in (True, False):
        monkeypatch.setattr(scripting, "plan_for", sort_plan)
        results.append(_run([*AUC, "--pairs", "all"], gappy_csv, tmp_path, monkeypatch, capsys, streamed=streamed))
    (record, printed, counted), (read, printed_read, _) = results
    assert counted == 1 and record["path"] == "sort"
    assert record == read and printed == printed_read


def test_a_forced_sort_path_reads_the_file(gappy_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    record, _, counted = _run([*AUC, "--path", "sort"], gappy_csv, tmp_path, monkeypatch, capsys, streamed=True)
    assert counted == 0 and record["path"] == "sort" and record["n"] == 60
