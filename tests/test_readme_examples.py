"""The own-data examples a new user copies -- from the README's "Your own data" section and from the
``-h`` text of ``ustat`` and ``ecdf`` -- run verbatim with three real parties on generated CSV files.

The commands are read from the README and the help text at test time, so an example that stops working
(a missing ``--budget``, a renamed option) fails here, not in a user's first hour.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PARTIES = 3
ROWS_PER_PARTY = 300


def _commands(text: str) -> list[str]:
    """Shell commands of ``text``: backslash continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def readme_own_data_commands() -> list[str]:
    """Every command of the ``sh`` blocks of the README's "Your own data" section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Your own data", 1)[1].split("\n### ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, flags=re.S)
    return [command for block in blocks for command in _commands(block)]


def help_own_data_commands(module: str) -> list[str]:
    """The example lines of ``python -m MODULE -h`` that read the user's own ``--data``."""
    shown = subprocess.run([sys.executable, "-m", module, "-h"], cwd=ROOT, capture_output=True, text=True,
                           timeout=120)
    assert shown.returncode == 0, shown.stderr
    return [command for command in _commands(shown.stdout)
            if command.startswith(f"python -m {module} ") and "--data" in command]


def write_user_files(directory: Path) -> None:
    """Three sites' files and one shared scores file, as a new user would have them (a score, a 0/1 label,
    two numeric columns, an income column)."""
    generator = np.random.default_rng(2026)
    for party in range(PARTIES):
        a = generator.uniform(0, 10, ROWS_PER_PARTY)
        b = np.clip(8 * a + generator.normal(0, 15, ROWS_PER_PARTY), 0, 100)
        income = generator.gamma(2.0, 20000.0, ROWS_PER_PARTY).clip(0, 200000)
        lines = ["a,b,income"] + [f"{x:.3f},{y:.2f},{z:.0f}" for x, y, z in zip(a, b, income)]
        (directory / f"site{party}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    label = generator.integers(0, 2, PARTIES * ROWS_PER_PARTY)
    score = np.clip(0.5 + 0.2 * (label - 0.5) + generator.normal(0, 0.2, label.size), 0, 1)
    lines = ["score,label"] + [f"{s:.4f},{y}" for s, y in zip(score, label)]
    (directory / "scores.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _run(command: str, directory: Path) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command, comments=True)
    assert words[0] == "python", command
    env = {**os.environ, "PRIVATE_USTATS_LEDGER": str(directory / "ledger")}
    return subprocess.run([sys.executable, *words[1:]], cwd=directory, env=env, capture_output=True, text=True,
                          timeout=400)


def test_the_examples_are_found() -> None:
    """The collectors find what they should: the README's two own-data examples, and one in each -h."""
    assert len(readme_own_data_commands()) >= 2
    assert help_own_data_commands("scenarios.ustat") and help_own_data_commands("scenarios.ecdf")


@pytest.mark.multiparty
@pytest.mark.parametrize("source", ["README", "scenarios.ustat", "scenarios.ecdf"])
def test_own_data_examples_run_verbatim(source: str, tmp_path: Path) -> None:
    """Each example exits 0 on the user's generated files, budget step included, as written."""
    write_user_files(tmp_path)
    commands = readme_own_data_commands() if source == "README" else help_own_data_commands(source)
    assert commands
    for command in commands:
        done = _run(command, tmp_path)
        assert done.returncode == 0, f"{command}\nexit {done.returncode}\n{done.stderr[-2000:]}"
