"""The experiments kit (scenarios.kit.experiments) in one process: what --results-dir refuses, in one line."""
from __future__ import annotations

from pathlib import Path

import pytest


def test_results_dir_that_is_a_file_is_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An existing file as --results-dir: "not a directory" (os.makedirs alone said "File exists")."""
    from scenarios.papers import bell_auc_domain

    path = tmp_path / "x.csv"
    path.write_text("kept\n")
    assert bell_auc_domain.main(["--quick", "--seed", "3", "--results-dir", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: party 0: --results-dir {path}: not a directory"]
    assert path.read_text() == "kept\n"


def test_results_dir_under_a_file_is_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.papers import bell_auc_domain

    path = tmp_path / "x.csv"
    path.write_text("kept\n")
    assert bell_auc_domain.main(["--quick", "--seed", "3", "--results-dir", str(path / "sub")]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: party 0: --results-dir {path / 'sub'}: not a directory"]
