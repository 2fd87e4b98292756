"""The owners drill and the owners' benchmark (issue 24, part 6): each malicious upload of the drill is what it
says and is refused where it can be seen in one process; the drill's three-server runs (refusals, the statistic
over the honest owners, a server frozen or killed) and one -M3 run of ``bench_owners --quick`` at epsilon 1e9."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scenarios.drills.owners import CASES, _file, build_inbox
from secure.fss.dpf import MODULUS, full_domain_sum
from secure.owners import load_private_key, open_inbox

ROOT = Path(__file__).resolve().parents[1]


def test_each_malicious_upload_is_refused_or_not_one_hot(tmp_path: Path) -> None:
    built = build_inbox(str(tmp_path), 20)
    tokens, campaign = built["tokens"], built["campaign"]
    opened = [open_inbox(campaign, s, load_private_key(tmp_path / f"keys/server{s}.key"), tmp_path / "inbox/server{pid}")
              for s in range(3)]
    for server, intake in enumerate(opened):
        lines = "\n".join(intake.rejected)
        assert f"record {_file('wrong campaign')} refused: wrong campaign" in lines
        assert f"duplicate owner token {tokens['replayed record']}" in lines
        assert tokens["replayed record"] not in intake.tokens
        assert (tokens["wrong field"] in intake.tokens) == (server < 2)  # a share = p: refused where it was sent
        assert (f"record {_file('wrong field')} refused: share not in [0, p)" in lines) == (server == 2)
        assert (tokens["record at only some servers"] in intake.tokens) == (server in CASES["record at only some servers"])
        # the honest owners, value 2 and two-hot; at servers 0 and 1 also wrong field and only-some-servers
        assert len(intake.tokens) == 22 + 2 * (server < 2)
    # the keys that pass opening: value 2 and two-hot, not one-hot when servers 0 and 1 combine them (y0 + y1 mod q)
    for case, expected in (("value 2", [2]), ("two-hot", [1, 1])):
        sums = []
        for intake in opened[:2]:
            keep = intake.keep([tokens[case]])
            assert keep.dpf is not None
            sums.append(full_domain_sum(keep.dpf).astype(object))
        joint = (sums[0] + sums[1]) % MODULUS
        assert sorted(joint[joint != 0].tolist()) == expected, case


@pytest.mark.multiparty
def test_drill_rejects_every_case_and_stops_on_a_lost_server(tmp_path: Path) -> None:
    out = tmp_path / "owners.json"
    run = subprocess.run([sys.executable, "-m", "scenarios.drills.owners", "--quick", "--json", str(out)],
                         capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    record = json.loads(out.read_text())
    assert {case["name"]: case["servers"] for case in record["cases"]} == {k: list(v) for k, v in CASES.items()}
    assert all(case["ok"] for case in record["cases"])
    first = {case["name"]: case["line"] for case in record["cases"]}  # the servers' own lines (Owners say=print)
    assert first["wrong campaign"].startswith("note (at this server, not shared): server 0: record wrong_campaign")
    assert first["value 2"].endswith("rejected by the one-hot check")
    statistic, frozen, killed = record["drills"]
    assert statistic["codes"] == [0, 0, 0] and statistic["ok"], statistic
    assert frozen["codes"] == [1, -9, 1] and killed["codes"] == [1, 137, 1]
    for drill in (frozen, killed):  # one line each survivor, naming server 1, within the limit plus 10 s
        assert drill["ok"] and drill["seconds_to_stop"] <= 20, drill
        assert all(len(lines) == 1 and "party 1" in lines[0] for lines in drill["lines"][::2])
    assert "malicious upload" in run.stdout and "server 1 killed at histogram" in run.stdout


@pytest.mark.multiparty
def test_bench_owners_quick_releases_the_exact_statistics() -> None:
    run = subprocess.run([sys.executable, "-m", "scenarios.bench_owners", "-M3", "--quick", "--epsilon", "1e9",
                          "--no-log"], capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    pairs = re.findall(r"released / exact\s+(\S+) / (\S+)", run.stdout)
    assert len(pairs) == 5 and all(float(a) == float(b) for a, b in pairs), run.stdout
    assert re.findall(r"difference released - exact\s+(\S+)", run.stdout) == ["0"] * 5  # the ECDF's: at all points
    assert re.findall(r"^(\w+): N = 300 owners", run.stdout, re.M) == ["kendall", "duplicate", "auc", "ecdf",
                                                                      "hosmer_lemeshow"]
