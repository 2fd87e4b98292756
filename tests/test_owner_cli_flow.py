"""The owners' command-line flow end to end (issue 24, docs/owners.md): ``python -m scenarios.owner keygen`` at three
servers, ``campaign --dpf``, one ``submit`` per owner, then the servers' jobs ``scenarios.ustat`` (Kendall) and
``scenarios.ecdf`` with ``--owners/--campaign/--server-key`` at epsilon 1e9: each released value equal to the exact
one computed here from the submitted rows.  Two -M3 runs."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scenarios.owner import main as owner_main
from tests.conftest import read_record, run_command, run_parties, scenario_command

OWNERS = 60


@pytest.mark.multiparty
def test_keygen_campaign_submit_then_the_jobs_release_the_exact_statistics(tmp_path: Path) -> None:
    for server in range(3):
        assert run_command(scenario_command("owner", "keygen", "--server", str(server), "--dir",
                                            str(tmp_path / "keys"))).code == 0
    campaign = str(tmp_path / "campaign.json")
    made = run_command(scenario_command("owner", "campaign", "--servers", *(str(tmp_path / f"keys/server{s}.pub")
                                                                            for s in range(3)),
                                        "-T", "1", "--columns", "x,y", "--domain", "x=0:15:0:1,y=0:15:0:1", "--dpf",
                                        "--save", campaign))
    assert made.code == 0, made.stderr
    generator = np.random.default_rng(7)
    x = generator.integers(0, 16, OWNERS)
    y = np.clip(x + generator.integers(-4, 5, OWNERS), 0, 15)
    inbox = str(tmp_path / "inbox/server{pid}")
    first = run_command(scenario_command("owner", "submit", "--campaign", campaign, "--row", f"x={x[0]},y={y[0]}",
                                         "--inbox", inbox))
    assert first.code == 0, first.stderr
    for a, b in zip(x[1:], y[1:]):  # the same command in this process (a subprocess per owner would take a minute)
        assert owner_main(["submit", "--campaign", campaign, "--row", f"x={a},y={b}", "--inbox", inbox]) == 0
    common = ["--owners", inbox, "--campaign", campaign, "--server-key", str(tmp_path / "keys/server{pid}.key"),
              "--epsilon", "1e9"]
    kendall = run_parties([[*common, "--stat", "kendall", "--columns", "x,y", "--pairs", "all", "--json",
                            str(tmp_path / "kendall.json")]] * 3, timeout=120)
    assert [run.code for run in kendall] == [0, 0, 0], kendall[0].stderr
    ecdf = run_parties([[*common, "--columns", "x", "--points", "16", "--json", str(tmp_path / "ecdf.json")]] * 3,
                       module="ecdf", timeout=120)
    assert [run.code for run in ecdf] == [0, 0, 0], ecdf[0].stderr
    # Kendall's tau-a over all pairs of the submitted rows, and #{x <= tau} at tau = 0, ..., 15
    upper = np.triu_indices(OWNERS, 1)
    tau = np.mean(np.sign(x[:, None] - x)[upper] * np.sign(y[:, None] - y)[upper])
    released = read_record(tmp_path / "kendall.json")
    assert released["owners"]["owners"] == OWNERS and released["owners"]["rejected"] == 0
    assert released["estimate"] == pytest.approx(tau, abs=1e-12)
    assert read_record(tmp_path / "ecdf.json")["counts"] == (x[:, None] <= np.arange(16)).sum(axis=0).tolist()
