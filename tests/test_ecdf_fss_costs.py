"""The FSS cost scenario (scenarios.papers.ecdf_fss_costs) in --quick mode with three parties, and its helpers.

The key sizes are checked against the serialized keys themselves and the formulas of secure.fss.dcf; the
protocol rows against what the protocols must send at least (every owner's node-noise shares, the keys of
the rows an owner does not serve itself).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from scenarios.kit.cli import UsageError
from scenarios.papers.ecdf_fss_costs import (COST_CSV, KEY_CSV, PNG_NAME, batch_queries, batch_sizes, key_table,
                                             parse_options)
from secure.fss import dcf
from tests.conftest import run_parties


def test_batches_and_queries() -> None:
    assert batch_sizes(1024) == [1, 16, 256, 1024]
    assert batch_sizes(64) == [1, 16, 64]
    for points, batch in ((64, 16), (1024, 256), (8, 8)):
        chosen = batch_queries(points, batch)
        assert chosen.size == batch and chosen[0] == 0 and chosen[-1] == (points - 1 if batch > 1 else 0)
        assert np.all(np.diff(chosen) > 0)


def test_key_table_matches_the_serialized_keys() -> None:
    rows = key_table((6, 10), 4238, np.arange(50) * 7919)
    for row in rows:
        keys, _ = dcf.gen(np.arange(5) % (1 << row["bits"]), row["bits"])
        assert len(keys.to_bytes()) == 16 + 5 * row["bytes_per_key"]
        assert row["paper_bits"] == row["bits"] * (128 + math.ceil(math.log2(4238 + 1)))
        assert row["key_bits"] == 194 * row["bits"] + 192 <= 8 * row["bytes_per_key"]
        assert 1.0 < row["measured_over_paper"] < 2.0


@pytest.mark.parametrize("argv, message", [(["--points", "100"], "power of two"), (["--points", "2"], "power of two")])
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_options(argv)


def test_quick_run_with_three_parties(tmp_path: Path) -> None:
    out = tmp_path / "results"
    runs = run_parties([["--quick", "--results-dir", str(out)]] * 3, module="papers.ecdf_fss_costs", timeout=240)
    assert [r.code for r in runs] == [0, 0, 0], [r.stderr[-400:] for r in runs]
    assert (out / PNG_NAME).stat().st_size > 0
    with open(out / KEY_CSV, encoding="utf-8") as handle:
        keys = list(csv.DictReader(handle))
    assert [int(r["bits"]) for r in keys] == [6, 8]
    with open(out / COST_CSV, encoding="utf-8") as handle:
        costs = list(csv.DictReader(handle))
    n, nodes = 4238, 2 * 64 - 1
    measured = [r for r in costs if r["protocol"] == "fss" and r["kind"] == "measured"]
    assert [int(r["batch"]) for r in measured] == [1, 16, 64]
    key_bytes = int(keys[0]["bytes_per_key"])  # 64 points: bits = 6
    upload = int(measured[0]["upload_bytes"])
    # at least: party 2's keys to both servers, parties 0/1's keys to the other server (~n/3 each), noise shares
    assert upload >= 2 * (n // 3) * 2 * key_bytes + 4 * 8 * nodes
    assert len({int(r["upload_bytes"]) for r in measured}) == 1  # one upload, then rounds only
    rounds = [int(r["batch_bytes"]) for r in measured]
    assert rounds == sorted(rounds) and rounds[-1] >= 2 * 8 * 64  # both servers send one word per query
    assert all(int(r["batch_bytes"]) < upload for r in measured)
    section41 = {int(r["batch"]): int(r["batch_bytes"]) for r in costs
                 if r["protocol"] == "sec4.1" and r["kind"] == "measured"}
    modelled = {int(r["batch"]): int(r["batch_bytes"]) for r in costs
                if r["protocol"] == "sec4.1" and r["kind"] != "measured"}
    assert set(section41) == set(modelled) == {1, 16, 64}
    assert all(modelled[b] > section41[b] for b in modelled) and modelled[64] > modelled[16] > modelled[1]
    assert "Query batches on a grid of N = 64" in runs[0].stdout
