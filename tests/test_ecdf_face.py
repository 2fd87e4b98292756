"""The ECDF family's face (dp.ecdf): each job's --json record is release.record() of the API run with the same
noise draws, and simulate agrees with exact where the noise vanishes."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import read_record, small_table, write_csv
import dp.ecdf.tree
from dp.ecdf import EcdfQuery, exact, release, simulate
from secure.intake import MissingPolicy
from tests.conftest import release_at_one_party, unmeasured

#: keys measured by the run (wall clock, bytes on the wire) or drawn at random for it (the run identifier)


def _fixed_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every party's node draw at position p is (p % 5) - 2: the OS source of draw_party replaced, in both runs."""
    monkeypatch.setattr(dp.ecdf.tree.TreeNoisePlan, "draw_party",
                        lambda self, rng=None, runs=None: (np.arange(self.node_count) % 5) - 2)


def _api_record(query: EcdfQuery, values: np.ndarray) -> dict[str, Any]:
    return release_at_one_party(lambda: release(query, values)).record()


def _without(record: dict[str, Any]) -> dict[str, Any]:
    return unmeasured(record, "run_id")


@pytest.mark.parametrize("job, extra, query", [
    ("ecdf", ["--release", "40"], {"protocol": "tree", "release": 40}),
    ("ecdf_fss", ["--queries", "at:100,150"], {"protocol": "fss", "at": (100.0, 150.0), "bits": 7}),
])
def test_the_job_record_is_the_record_of_the_api_release(job: str, extra: list[str], query: dict[str, Any],
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    header, table = small_table()
    csv = write_csv(tmp_path / "small.csv", header, table)
    out = tmp_path / "job.json"
    _fixed_draws(monkeypatch)
    argv = ["--data", str(csv), "--columns", "sysBP", "--domain", "sysBP=80:300", "--points", "100",
            "--epsilon", "0.5", "--json", str(out), "--no-log", *extra]
    assert importlib.import_module(f"scenarios.{job}").main(argv) == 0
    values = np.clip(table[:, header.index("sysBP")], 80, 300)
    api = _api_record(EcdfQuery(column="sysBP", lower=80.0, upper=300.0, points=100, epsilon=0.5,
                                missing=MissingPolicy("refuse"), **query), values)
    job_record = read_record(out)
    assert set(job_record) == set(api)
    assert _without(job_record) == _without(api)


@pytest.mark.parametrize("protocol", ["tree", "fss"])
def test_simulate_agrees_with_exact_at_huge_epsilon(protocol: str) -> None:
    """At epsilon 1e9 each node's DLap(alpha) has alpha = exp(-1e9 / (L + 1)): it is 0 with probability
    1 - 2e-43429, so the simulated counts are the exact ones and the record says so."""
    generator = np.random.default_rng(5)
    parts = [generator.normal(0.5, 0.2, size) for size in (30, 41, 29)]
    query = EcdfQuery(lower=0.0, upper=1.0, points=64, epsilon=1e9, protocol=protocol, smooth=None)
    simulated = simulate(query, parts, seed=1)
    np.testing.assert_array_equal(simulated.values, exact(query, parts))
    assert simulated.record()["n"] == 100 and simulated.parties == 3 and simulated.threshold == 1
    assert "Private ECDF" in simulated.table()


def test_simulate_uses_the_noise_law_of_the_release() -> None:
    """At epsilon 1 the simulated counts differ from the exact ones (fails if the noise were dropped):
    a point gets L + 1 = 7 node noises of variance >= 2 alpha/(1 - alpha)^2 > 0, all 64 zero with tiny odds."""
    parts = [np.linspace(0, 1, 50), np.linspace(0, 1, 50), np.linspace(0.2, 0.8, 50)]
    query = EcdfQuery(lower=0.0, upper=1.0, points=64, epsilon=1.0, smooth=None)
    assert not np.array_equal(simulate(query, parts, seed=1).values, exact(query, parts))


@pytest.mark.parametrize("kwargs, message", [
    ({"lower": 0.0, "upper": 1.0, "epsilon": -1.0}, "epsilon must be positive, got -1"),
    ({"lower": 0.0, "upper": 1.0, "protocol": "tree", "at": (0.5,)}, "at is an option of protocol='fss'"),
    ({"lower": 0.0, "upper": 1.0, "release": 1}, "release must lie in [2, points = 1024], got 1"),
    ({"lower": 0.0, "upper": 1.0, "quantiles": (0.5, 1.0)}, "quantiles must lie strictly between 0 and 1"),
    ({"epsilon": 1.0}, "lower and upper (the declared domain) are required"),
])
def test_the_query_refuses_a_bad_parameter_with_a_plain_message(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as raised:
        EcdfQuery(**kwargs)
    assert message in str(raised.value)
