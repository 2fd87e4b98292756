"""The jobs' result record writer (scenarios.kit.records): strict JSON, never NaN/Infinity (G4)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scenarios.kit.records import finite_or_null, write_record


def test_non_finite_numbers_are_written_as_null(tmp_path: Path) -> None:
    """Before: ``json.dump`` wrote a bare ``NaN`` for an AUC whose noisy denominator was not positive."""
    path = tmp_path / "r.json"
    write_record(str(path), {"estimate": float("nan"), "std": float("inf"), "sums": [1, -float("inf"), 2.5],
                             "nested": {"x": np.float64("nan"), "y": (np.int64(3), 0.25)}})
    text = path.read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text
    record = json.loads(text, parse_constant=lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert record == {"estimate": None, "std": None, "sums": [1, None, 2.5], "nested": {"x": None, "y": [3, 0.25]}}


def test_finite_values_are_unchanged() -> None:
    record = {"estimate": 0.75, "n": 40, "statistic": "auc", "seed": None, "pairs": [[0, 1]]}
    assert finite_or_null(record) == record
