"""A '{pid}' path with one party (no -M): that party holds every row, read from every file (issue 22, item 4)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from secure.intake import party_rows
from secure.reader import party_files, read_columns

ROOT = Path(__file__).resolve().parents[1]


def _sites(directory: Path, sizes: dict[int, int]) -> str:
    """Write ``site{i}.csv`` with ``sizes[i]`` rows whose column ``a`` is ``100 * i + row``."""
    for index, size in sizes.items():
        lines = ["a,b", *(f"{100 * index + row},{row % 2}" for row in range(size))]
        (directory / f"site{index}.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(directory / "site{pid}.csv")


def test_one_party_lists_every_file_up_to_the_first_gap(tmp_path: Path) -> None:
    path = _sites(tmp_path, {0: 2, 1: 3, 2: 1, 4: 5})  # no site3.csv: site4.csv is not reached
    assert party_files(path, party=0, parties=1) == [path.format(pid=i) for i in range(3)]
    assert party_files(path, party=2, parties=3) == [path.format(pid=2)]  # several parties: one's own file
    assert party_files(str(tmp_path / "one.csv"), party=0, parties=1) == [str(tmp_path / "one.csv")]
    assert party_files(str(tmp_path / "none{pid}.csv"), party=0, parties=1) == [str(tmp_path / "none0.csv")]


def test_one_party_reads_all_rows_and_says_which_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _sites(tmp_path, {0: 2, 1: 3, 2: 1})
    values = read_columns(path, ["a"], party=0, parties=1)
    np.testing.assert_array_equal(values[:, 0], [0, 1, 100, 101, 102, 200])  # the old code read site0.csv only
    assert capsys.readouterr().err.splitlines() == ["one party: read site0.csv..site2.csv (3 files) as one party's rows"]
    own = party_rows(path, ["a"], party=1, parties=3)
    np.testing.assert_array_equal(own.values[:, 0], [100, 101, 102])  # with -M3 each party its own file, no line
    assert capsys.readouterr().err == ""


def test_one_party_with_no_file_zero_is_refused_as_before(tmp_path: Path) -> None:
    from secure.errors import InputError

    with pytest.raises(InputError, match="^cannot read its data file: no such file$"):
        read_columns(str(tmp_path / "site{pid}.csv"), ["a"], party=0, parties=1)


SCRIPT = textwrap.dedent('''
    import os
    import sys

    import secure


    async def job(party):
        rows = await party.read(os.environ["SITE_DATA"], ["a"])
        return lambda: print(f"rows {len(rows.values)} sum {int(rows.values.sum())}")


    sys.exit(secure.run(job))
''')


def test_a_script_without_m_reads_every_file(tmp_path: Path) -> None:
    """The scripting API (secure.run, Party.read) as one party: every site file, the line on stderr."""
    path = _sites(tmp_path, {0: 4, 1: 4, 2: 4})
    script = tmp_path / "script.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run([sys.executable, str(script), "--no-log"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), "SITE_DATA": path})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"rows 12 sum {sum(range(4)) * 3 + 400 + 800}"
    assert "one party: read site0.csv..site2.csv (3 files) as one party's rows" in done.stderr.splitlines()
