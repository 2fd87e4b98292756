"""The rank-AUC face (dp.rank_auc): the job's --json record and printed table are release.record() and
release.table() of the API run with the same rows and the same noise draws; simulate agrees with exact."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import read_record, small_table, write_csv
from dp.noise_plans import NoisePlan
from dp.rank_auc import Query, RankAucRelease, exact, release, simulate
from secure.intake import ColumnSpec, MissingPolicy
from tests.conftest import MEASURED_KEYS, release_at_one_party, unmeasured

#: keys measured by the run (wall clock, bytes on the wire), not decided by the rows, the query or the noise


def _fixed_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS source of every party draw replaced, in both runs: 7 on 2U (sensitivity 78), -1 on P."""
    monkeypatch.setattr(NoisePlan, "draw", lambda self, rng=None, size=None: 7 if self.sensitivity > 1 else -1)


def _api(query: Query, rows: np.ndarray) -> RankAucRelease:
    result: RankAucRelease = release_at_one_party(lambda: release(query, rows))
    return result


def _unmeasured(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith(("seconds at party", "bytes", "phases:"))]


def test_the_job_prints_and_records_the_api_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.rank_auc import main

    header, table = small_table()
    rows = table[:, [header.index("score"), header.index("TenYearCHD")]]
    csv = write_csv(tmp_path / "small.csv", ["score", "TenYearCHD"], rows)
    out = tmp_path / "job.json"
    _fixed_draws(monkeypatch)
    assert main(["--data", str(csv), "--domain", "0:1:8", "--epsilon", "0.5", "--noise", "parties",
                 "--json", str(out), "--no-log"]) == 0
    printed = capsys.readouterr().out
    query = Query(score=ColumnSpec("score", 0, 1, 8), label="TenYearCHD", epsilon=0.5, noise="parties",
                  missing=MissingPolicy("refuse"))
    api = _api(query, rows)
    [job] = read_record(out)
    assert set(job) == set(api.record()) and set(MEASURED_KEYS) < set(job) and "ledger_delta" in job
    assert unmeasured(job) == unmeasured(api.record())
    assert job["noisy_2u"] == exact_2u(query, rows) + 7 and job["noisy_positives"] == int(rows[:, 1].sum()) - 1
    lines = _unmeasured(api.table())  # the job prints the table, then its budget line
    assert _unmeasured(printed)[:len(lines)] == lines and len(lines) == 11


def exact_2u(query: Query, rows: np.ndarray) -> int:
    from dp.rank_auc import exact_sums

    return exact_sums(query.encode(rows))[0]


def test_simulate_agrees_with_exact_at_huge_epsilon() -> None:
    """At epsilon 1e9 the party noise of P has alpha = exp(-5e8 / 1) per share: every draw is 0 except with
    probability below 1e-2e8, and 2U's (sensitivity 2(n-1) = 198) alike, so the simulated AUC is the exact one."""
    generator = np.random.default_rng(11)
    parts = [np.column_stack([generator.random(size), generator.integers(0, 2, size)]) for size in (30, 40, 30)]
    query = Query(score=ColumnSpec("score", 0, 1, 10), epsilon=1e9)
    simulated = simulate(query, parts, seed=0)
    assert simulated.estimate == exact(query, parts) and simulated.n == 100 and simulated.threshold == 1
    assert simulated.record()["estimate"] == simulated.estimate and "Private AUC" in simulated.table()
    noisy = simulate(Query(score=ColumnSpec("score", 0, 1, 10), epsilon=0.01), parts, seed=0)
    assert noisy.estimate != exact(query, parts)  # the noise is there at a small epsilon (sd of P's noise ~ 283)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"epsilon": -1.0}, ValueError, "epsilon must be positive, got -1"),
    ({"epsilon": 1.0, "path": "tuples"}, ValueError, "path must be one of auto, histogram, sort, got 'tuples'"),
    ({"epsilon": 1.0, "noise": "server"}, ValueError, "noise must be one of mpc, parties, got 'server'"),
    ({"epsilon": 1.0, "rtt": -5}, ValueError, "rtt must be a round-trip time in milliseconds in [0, 60000], got -5"),
    ({"epsilon": 1.0, "score": "score"}, TypeError, "score must be a numeric column declaration, got 'score'"),
])
def test_the_query_refuses_a_bad_parameter_with_a_plain_message(kwargs: dict[str, Any], error: type[Exception],
                                                                 message: str) -> None:
    with pytest.raises(error) as raised:
        Query(**{"score": ColumnSpec("score", 0, 1, 8), **kwargs})
    assert message in str(raised.value)
    with pytest.raises(TypeError):
        Query(ColumnSpec("score", 0, 1, 8), 1.0)  # type: ignore[misc]  # keyword-only


def test_a_misspelt_ledger_keyword_is_a_type_error_at_the_call() -> None:
    from dp.rank_auc import release_runs

    query = Query(score=ColumnSpec("score", 0, 1, 4), epsilon=1.0)
    with pytest.raises(TypeError, match="ledgr"):
        release_runs(query, [np.zeros((2, 2))], ledgr="off")  # type: ignore[call-arg]
