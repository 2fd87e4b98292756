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
    assert spec.width == 80 and spec.decode(np.array([1]))[0] - spec.lower == 1 / 16
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


def test_unknown_column_shares_no_path_or_header_and_lists_the_known_ones_locally() -> None:
    with pytest.raises(InputError, match=r"^its data file has no column 'c'$") as refused:
        rows_from_table(HEADER, [], ["c"], source="t.csv")
    assert refused.value.detail == "unknown column 'c' in t.csv; columns are: a, b, label"


def test_file_reader_lines_share_neither_path_nor_header(tmp_path: Path) -> None:
    """An unknown column, an empty file, a file that is not UTF-8 (the decoder's message quotes a byte):
    the shared line names no path, no header and no byte; the local detail has them."""
    data = tmp_path / "hospital-secret.csv"
    data.write_text("age,sbp,label\n40,120,1\n")
    with pytest.raises(InputError) as unknown:
        party_rows(str(data), ["age", "x"], party=0, parties=1)
    assert str(unknown.value) == "its data file has no column 'x'"
    assert unknown.value.detail == f"unknown column 'x' in {data}; columns are: age, sbp, label"
    empty = tmp_path / "empty-secret.csv"
    empty.write_text("")
    for read in (lambda: party_rows(str(empty), ["age"], party=0, parties=1), lambda: read_table(str(empty))):
        with pytest.raises(InputError) as refused:
            read()
        assert str(refused.value) == "its data file is empty (a header line is required)"
        assert refused.value.detail is not None and str(empty) in refused.value.detail
    binary = tmp_path / "binary-secret.csv"
    binary.write_bytes(b"age,sbp,label\n40,\xff\xfe120,1\n")
    with pytest.raises(InputError) as undecodable:
        party_rows(str(binary), ["age"], party=0, parties=1)
    assert str(undecodable.value) == "cannot read its data file: it is not UTF-8 text"
    assert undecodable.value.detail is not None and str(binary) in undecodable.value.detail
    for refused_line in (unknown.value, undecodable.value):
        assert "secret" not in str(refused_line) and "sbp" not in str(refused_line) and "0xff" not in str(refused_line)


def test_missing_file_and_per_party_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="^cannot read its data file: no such file$") as missing:
        read_table(str(tmp_path / "nope.csv"))
    assert missing.value.detail is not None and "nope.csv: no such file" in missing.value.detail  # local only
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
