"""Party intake in one process: reading, validation, missing-value policy, clipping, fixed point."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from secure.intake import ColumnSpec, MissingPolicy, party_rows, read_table, rows_from_table, to_fixed_point
from secure.session import InputError

HEADER = ["a", "b", "label"]


def test_fixed_point_encoding_offsets_and_scales() -> None:
    spec = ColumnSpec("x", -2.0, 3.0, 4)
    assert spec.width == 80 and spec.unit == 1 / 16
    np.testing.assert_array_equal(spec.encode(np.array([-2.0, 0.0, 3.0, 1.0625, 1.06])), [0, 32, 80, 49, 49])
    np.testing.assert_allclose(spec.decode(spec.encode(np.array([0.5, 2.25]))), [0.5, 2.25])


@pytest.mark.parametrize("args, message", [
    (("x", 1.0, 1.0), "must have lower < upper"),
    (("x", 0.0, float("inf")), "must be finite"),
    (("x", 0.0, 1.0, 60), r"precision must lie in \[0, 52\] bits, got 60"),
])
def test_column_spec_is_validated(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ColumnSpec(*args)


def test_party_keeps_every_mth_row_and_refuses_or_fills_missing_values() -> None:
    rows = [["1", "2", "0"], ["3", "NA", "1"], ["5", "6", "1"], ["", "8", "0"], ["9", "10", "1"]]
    with pytest.raises(InputError, match=r"^column 'b' has a missing value") as refused:
        rows_from_table(HEADER, rows, ["b", "a"], source="t.csv", party=1, parties=2)
    assert str(refused.value.detail).startswith("t.csv: 1 missing value(s) in column 'b'")  # local only
    policy = MissingPolicy("fill", (("a", 4.0), ("b", 0.5)))
    mine = rows_from_table(HEADER, rows, ["b", "a"], source="t.csv", party=1, parties=2, missing=policy)
    np.testing.assert_array_equal(mine.values, [[0.5, 3], [8, 4]])  # rows 1 and 3 (0-based): party 1's
    assert mine.filled == 2 and mine.policy == "fill"
    first = rows_from_table(HEADER, rows, ["b", "a"], source="t.csv", party=0, parties=2)
    np.testing.assert_array_equal(first.values, [[2, 1], [6, 5], [10, 9]])


def test_non_numeric_cell_shares_the_column_and_keeps_line_and_value_local() -> None:
    rows = [["1", "2", "0"], ["3", "x7", "1"]]
    with pytest.raises(InputError, match=r"^column 'b' has a value that is not a number$") as refused:
        rows_from_table(HEADER, rows, ["a", "b"], source="t.csv")
    assert refused.value.detail == "t.csv line 3, column 'b': 'x7' is not a number"


def test_unknown_column_lists_the_known_ones() -> None:
    with pytest.raises(InputError, match="unknown column 'c' in t.csv; columns are: a, b, label"):
        rows_from_table(HEADER, [], ["c"], source="t.csv")


def test_missing_file_and_per_party_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read data file .*nope.csv: no such file"):
        read_table(str(tmp_path / "nope.csv"))
    (tmp_path / "site1.csv").write_text("a,b,label\n1,2,0\n3,4,1\n")
    own = party_rows(str(tmp_path / "site{pid}.csv"), ["a"], party=1, parties=3)
    np.testing.assert_array_equal(own.values[:, 0], [1, 3])  # a per-party file: all its rows


def test_values_outside_the_domain_are_clipped_and_counted_locally() -> None:
    specs = [ColumnSpec("a", 0, 10, 0)]
    fixed = to_fixed_point(np.array([[-3.0], [4.0], [12.0], [10.0]]), specs)
    np.testing.assert_array_equal(fixed.integers[:, 0], [0, 4, 10, 10])
    assert fixed.clipped == {"a": 2}
    raw = to_fixed_point(np.array([[-3.0], [12.0]]), specs, clip=False)  # secure clipping: shared raw
    np.testing.assert_array_equal(raw.integers[:, 0], [-3, 12])
    assert raw.clipped == {"a": 2}


def test_labels_outside_their_set_are_refused() -> None:
    specs = [ColumnSpec("s", 0, 1, 4), ColumnSpec("label", 0, 1, 0, (0, 1))]
    with pytest.raises(InputError, match="column 'label' must hold labels 0/1, found another value$") as refused:
        to_fixed_point(np.array([[0.5, 1.0], [0.25, 2.0]]), specs)
    assert "the first 2" in str(refused.value.detail)
