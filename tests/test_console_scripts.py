"""The console scripts of pyproject.toml: each names a job's ``main``, and one runs three real parties."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+; the project supports 3.10 too

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def test_every_console_script_names_a_main_function() -> None:
    assert SCRIPTS, "pyproject.toml declares no console scripts"
    for name, target in SCRIPTS.items():
        module_name, _, function = target.partition(":")
        module = importlib.import_module(module_name)
        assert callable(getattr(module, function)), f"{name} -> {target} is not callable"
        assert function == "main"


def test_every_job_has_a_console_script() -> None:
    jobs = {"ustat", "ecdf", "ecdf_fss", "rank_auc", "roc_private", "hosmer_lemeshow", "budget"}
    assert jobs <= {target.partition(":")[0].removeprefix("scenarios.") for target in SCRIPTS.values()}


@pytest.mark.multiparty
def test_console_script_runs_three_parties(tmp_path: Path) -> None:
    """``private-ustats-ustat -M3`` re-launches itself for parties 1 and 2 and prints the same record as the module."""
    script = Path(sys.executable).parent / "private-ustats-ustat"
    if not script.exists():
        found = shutil.which("private-ustats-ustat")
        if found is None:
            pytest.skip("the package is not installed with its console scripts in this environment")
        script = Path(found)
    record = tmp_path / "r.json"
    env = {**os.environ, "PRIVATE_USTATS_LEDGER": "off"}
    done = subprocess.run([str(script), "-M3", "--stat", "duplicate", "--columns", "education", "--json", str(record)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    result = json.loads(record.read_text())
    assert result["parties"] == 3 and result["statistic"]
