"""The ``ustat`` job is a face over :func:`dp.umpc.release`: its ``--json`` record is ``release.record()`` of a
script's run on the same rows, seed and noise draws, and it prints ``release.table()``.

Both runs are one party in this process (``-M1``): the job through :func:`scenarios.ustat.main`, the script
through :func:`secure.run`.  The noise is injected, not seeded: the party noise samplers read the OS CSPRNG
through :mod:`secrets` (:class:`secure.noise.exact.OSBits`), which both runs see as the same stream.
"""
from __future__ import annotations

import random
import secrets
from pathlib import Path
from typing import Any

import pytest

import dp
import dp.umpc
import secure
from scenarios import ustat
from secure.intake import MissingPolicy
from tests.conftest import read_record

#: the record keys that measure the run (time, bytes), not the release: listed, the only ones left out
MEASURED = ("seconds", "phases", "bytes_sent")
SEED = 11
BUDGET = "10:1e-6"

#: job options -> the same query declared through the API, its fill values, and the path the planner takes
CASES: dict[str, tuple[list[str], dict[str, Any], tuple[tuple[str, float], ...], str]] = {
    "auc on 2n sampled tuples": (
        ["--stat", "auc", "--columns", "score,TenYearCHD", "--domain", "score=0:1:4", "--pairs", "2n"],
        dict(statistic="auc", columns=[dp.numeric("score", lower=0, upper=1, bits=4), dp.label("TenYearCHD")],
             tuples="2n"), (("score", 0.5), ("TenYearCHD", 0.0)), "tuples"),
    "kendall, complete": (
        ["--stat", "kendall", "--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:1,diaBP=40:150:1",
         "--pairs", "all"],
        dict(statistic="kendall", columns=[dp.numeric("sysBP", lower=80, upper=300, bits=1),
                                           dp.numeric("diaBP", lower=40, upper=150, bits=1)], tuples="all"),
        (("sysBP", 120.0), ("diaBP", 80.0)), "histogram"),
}


def _os_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, :mod:`secrets` gives one fixed stream (the same for every run that calls this first).
    MPyC's runtime draws its own key when first imported: imported before, so that both runs read alike."""
    import mpyc.runtime  # noqa: F401

    stream = random.Random(2026)
    monkeypatch.setattr(secrets, "token_bytes", lambda count=32: stream.randbytes(count))
    monkeypatch.setattr(secrets, "randbits", stream.getrandbits)


def _without_measures(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if key not in MEASURED}


def _printed(text: str) -> list[str]:
    """The printed release without its measured lines and the budget line (a ledger path and a run id)."""
    return [line for line in text.splitlines()
            if not line.lstrip().startswith(("seconds at", "phases:", "bytes", "privacy budget:"))]


@pytest.mark.parametrize("case", CASES)
def test_the_jobs_record_is_the_releases_record(case: str, small_csv: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    options, declared, fills, path = CASES[case]
    fill = ",".join(f"{name}={value:g}" for name, value in fills)
    out = tmp_path / "job.json"
    _os_noise(monkeypatch)
    assert ustat.main([*options, "--data", str(small_csv), "--epsilon", "2", "--noise", "parties", "--seed", str(SEED),
                       "--fill", fill, "--ledger", str(tmp_path / "job"), "--dataset", "face", "--budget", BUDGET,
                       "--json", str(out), "--no-log"]) == 0
    printed = capsys.readouterr().out

    query = dp.umpc.Query(epsilon=2.0, noise="parties", **declared)
    policy = MissingPolicy("fill", fills)
    released: list[Any] = []

    async def job(party: secure.Party) -> None:
        rows = await party.read(str(small_csv), query.columns, missing=policy)
        released.append(await dp.umpc.release(query, rows, seed=SEED, missing=policy, ledger=tmp_path / "api",
                                              dataset_name="face", budget=BUDGET))

    _os_noise(monkeypatch)
    assert secure.run(job, argv=["--no-log"]) == 0
    (release,) = released
    record = release.record()
    assert set(MEASURED) <= set(record)
    assert record["path"] == path and record["noise_source"] == "parties" and record["fill"] == dict(fills)
    assert record["ledger_delta"] is not None  # both settled in their own ledger
    assert _without_measures(read_record(out)) == _without_measures(record)
    assert _printed(printed) == _printed(release.table())
