"""Shared fixtures: a small CSV with ties, and running MPyC parties as real processes."""
from __future__ import annotations

import csv
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
_ports = itertools.count(23000 + 40 * (os.getpid() % 200), 10)

# The tests are not about privacy budgets (they use epsilon = 1e9 often): no ledger for the whole session,
# inherited by every party process they start.  The budget tests pass --ledger DIR (ledger=...) explicitly.
os.environ["PRIVATE_USTATS_LEDGER"] = "off"

#: what a test file that starts party processes says somewhere in its text
_STARTS_PARTIES = ("run_parties(", "run_command(", "subprocess.run(", '"-M3"')


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The files that start party processes first, each file's tests kept together and in order: under ``make
    test`` (``-n auto --dist loadfile``) the long files start early and the in-process ones fill the end."""
    starts: dict[Path, bool] = {}
    for item in items:
        if item.path not in starts:
            text = item.path.read_text(encoding="utf-8")
            starts[item.path] = any(word in text for word in _STARTS_PARTIES)
    items.sort(key=lambda item: not starts[item.path])


@dataclass
class PartyRun:
    """Outcome of one party process."""

    code: int
    stdout: str
    stderr: str


def small_table(rows: int = 40, seed: int = 7) -> tuple[list[str], np.ndarray]:
    """A small table from the embedded Framingham data plus synthetic columns, with many ties.

    Columns: sysBP, diaBP, totChol, education, age, TenYearCHD (real rows without missing values),
    score (multiples of 1/16, ties), clusterA, clusterB (small clusterings), grade (classes 0/1/2).
    Every value is exactly representable at the declared precisions, so fixed point loses nothing.
    """
    from scenarios.kit.datasets import load_embedded

    table = load_embedded("framingham")
    wanted = ["sysBP", "diaBP", "totChol", "education", "age", "TenYearCHD"]
    positions = [table.header.index(c) for c in wanted]
    complete = [[float(r[p]) for p in positions] for r in table.rows
                if all(r[p] not in ("NA", "") for p in positions)]
    generator = np.random.default_rng(seed)
    chosen = np.array(complete)[generator.choice(len(complete), size=rows, replace=False)]
    # make sure both labels occur
    chosen[0, 5], chosen[1, 5] = 1.0, 0.0
    score = np.round(np.clip(0.15 + 0.5 * chosen[:, 5] + generator.normal(0, 0.25, rows), 0, 1) * 16) / 16
    cluster_a = generator.integers(0, 3, rows)
    cluster_b = np.where(generator.random(rows) < 0.7, cluster_a, generator.integers(0, 3, rows))
    grade = np.arange(rows) % 3
    values = np.column_stack([chosen, score, cluster_a, cluster_b, grade])
    header = wanted + ["score", "clusterA", "clusterB", "grade"]
    return header, values


def write_csv(path: Path, header: Sequence[str], values: np.ndarray) -> Path:
    """Write a table (``%g`` numbers) to ``path``."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for row in values:
            writer.writerow([f"{v:g}" for v in row])
    return path


@pytest.fixture(scope="session")
def small_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small table as one CSV (parties keep rows i, i+m, ...)."""
    header, values = small_table()
    return write_csv(tmp_path_factory.mktemp("data") / "small.csv", header, values)


def scenario_command(module: str, *args: str) -> list[str]:
    """``python -m scenarios.<module> args``."""
    return [sys.executable, "-m", f"scenarios.{module}", *args]


def run_command(command: Sequence[str], timeout: float = 120.0, cwd: Path | None = None) -> PartyRun:
    """Run a command (one party, or party 0 launching the rest) and capture its output."""
    done = subprocess.run(list(command), capture_output=True, text=True, timeout=timeout, cwd=cwd or ROOT)
    return PartyRun(done.returncode, done.stdout, done.stderr)


def free_base_port() -> int:
    """A base port for MPyC's ``-B`` not used by an earlier test of this session."""
    return next(_ports)


def run_parties(argvs: Sequence[Sequence[str]], module: str = "ustat", timeout: float = 90.0) -> list[PartyRun]:
    """Start one process per party (``-M m -I i -B port`` added) with its own argv; wait for all."""
    parties = len(argvs)
    port = free_base_port()
    processes = []
    for index, argv in enumerate(argvs):
        command = scenario_command(module, *argv, "-M", str(parties), "-I", str(index), "-B", str(port), "--no-log")
        processes.append(subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                          cwd=ROOT))
    return collect_parties(processes, timeout)


def collect_parties(processes: Sequence[subprocess.Popen[str]], timeout: float) -> list[PartyRun]:
    """Wait for each started party (``timeout`` seconds each); one that does not end is killed (code -999)."""
    runs = []
    for process in processes:
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            runs.append(PartyRun(-999, out, err))
            continue
        runs.append(PartyRun(process.returncode, out, err))
    return runs


def read_record(path: Path) -> dict:
    """The JSON result record written by party 0."""
    return json.loads(path.read_text())


@pytest.fixture()
def party_files(tmp_path: Path) -> Path:
    """Three per-party files ``p0.csv``, ``p1.csv``, ``p2.csv`` cut from the small table."""
    header, values = small_table(45)
    for party in range(3):
        write_csv(tmp_path / f"p{party}.csv", header, values[party::3])
    return tmp_path


def record_transfers(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every payload this process sends through ``mpc.transfer`` from now on (the list fills as it runs):
    what a party exchanges outside the secret-shared values, to inspect in a test."""
    from mpyc.runtime import mpc

    sent: list[Any] = []
    original = mpc.transfer

    def spy(obj: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(obj)
        return original(obj, *args, **kwargs)

    monkeypatch.setattr(mpc, "transfer", spy)
    return sent


#: what a record measures about its run rather than releases: left out when two runs' records are compared
MEASURED_KEYS = ("seconds", "bytes_sent", "phases")


def unmeasured(record: dict[str, Any], *also: str) -> dict[str, Any]:
    """``record`` without :data:`MEASURED_KEYS` (and the keys ``also``): what two runs of one release share."""
    left_out = {*MEASURED_KEYS, *also}
    return {key: value for key, value in record.items() if key not in left_out}


def release_at_one_party(release: Callable[[], Awaitable[Any]]) -> Any:
    """What ``release()`` returns when run in this process as the only MPyC party (the ``-M1`` path)."""
    from mpyc.runtime import mpc

    mpc.run(mpc.start())
    try:
        result = mpc.run(release())
    finally:
        mpc.run(mpc.shutdown())
    assert result is not None
    return result
