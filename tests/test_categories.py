"""Categorical columns (issue 12, item 5): a declared public category list per column, string values
accepted, a value outside the list refused at its party or mapped to a declared "other" -- never
clipped into the list (which merged categories: a duplicate ratio of 0.250 read as 0.5 below).

Releases use epsilon = 1e9 and --pairs all, so they equal the exact U-statistic (as in
test_exactness); the references are scikit-learn / brute force on the codes mapped by hand.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import rand_score, roc_auc_score

import references
from conftest import read_record, run_parties
from dp.umpc.protocol import prepare_rows
from scenarios.ustat import main, parse_options, load_rows
from secure.errors import InputError
from secure.intake import ColumnSpec, MissingPolicy, party_rows, read_columns, to_fixed_point

REGIONS = ["north", "south", "east"]
#: 12 rows: region (strings, one quoted, one with spaces), two string clusterings, a score and a no/yes outcome
TABLE = [
    ("north", "a", "x", 0.10, "no"), ("south", "a", "x", 0.40, "yes"), ('"east"', "b", "y", 0.35, "no"),
    (" north ", "b", "y", 0.80, "yes"), ("south", "c", "y", 0.20, "no"), ("north", "c", "z", 0.70, "yes"),
    ("east", "a", "x", 0.35, "yes"), ("south", "b", "z", 0.05, "no"), ("north", "c", "z", 0.90, "yes"),
    ("east", "a", "y", 0.50, "no"), ("south", "b", "x", 0.60, "no"), ("north", "a", "z", 0.35, "yes"),
]
HEADER = "region,first,second,score,outcome"


def _write(path: Path, rows: list[tuple]) -> Path:
    path.write_text(HEADER + "\n" + "\n".join(",".join(str(cell) for cell in row) for row in rows) + "\n")
    return path


def _column(rows: list[tuple], j: int) -> list[str]:
    return [str(row[j]).strip().strip('"') for row in rows]


def _codes(values: list[str], listed: list[str]) -> np.ndarray:
    return np.array([listed.index(v) for v in values])


def _release(argv: list[str], out: Path) -> dict:
    assert main([*argv, "--epsilon", "1e9", "--pairs", "all", "--seed", "5", "--json", str(out)]) == 0
    return read_record(out)


def test_string_categories_give_the_plaintext_duplicate_ratio_and_sklearn_rand_index(tmp_path: Path) -> None:
    data = _write(tmp_path / "t.csv", TABLE)
    codes = _codes(_column(TABLE, 0), REGIONS)
    record = _release(["--stat", "duplicate", "--data", str(data), "--columns", "region",
                       "--categories", "region=north|south|east"], tmp_path / "d.json")
    assert record["estimate"] == pytest.approx(references.duplicate_ratio(codes), abs=1e-12)
    assert record["categories"] == [{"categories": REGIONS, "other": None}]
    first, second = _codes(_column(TABLE, 1), ["a", "b", "c"]), _codes(_column(TABLE, 2), ["x", "y", "z"])
    record = _release(["--stat", "rand", "--data", str(data), "--columns", "first,second",
                       "--categories", "first=a|b|c,second=x|y|z"], tmp_path / "r.json")
    assert record["estimate"] == pytest.approx(rand_score(first, second), abs=1e-12)


def test_codes_outside_the_old_domain_are_refused_not_merged(tmp_path: Path) -> None:
    """The issue's case: codes 5 and 6 under a declared domain 1..4 were clipped to 4, so three
    categories became one (ratio 0.5 instead of 0.25).  Now the domain's codes are categories: a code
    outside is refused, and a list that holds them gives the plaintext ratio."""
    values = [1, 1, 1, 5, 5, 5, 6, 6, 6]
    data = tmp_path / "codes.csv"
    data.write_text("c\n" + "\n".join(map(str, values)) + "\n")
    exact = references.duplicate_ratio(np.array(values))
    merged = references.duplicate_ratio(np.clip(values, 1, 4))
    assert exact == pytest.approx(0.25) and merged == pytest.approx(0.5)  # what clipping used to release
    argv = ["--stat", "duplicate", "--data", str(data), "--columns", "c"]
    assert main([*argv, "--domain", "c=1:4"]) == 2
    assert _release([*argv, "--domain", "c=1:6"], tmp_path / "a.json")["estimate"] == pytest.approx(exact, abs=1e-12)
    listed = _release([*argv, "--categories", "c=1|5|6"], tmp_path / "b.json")
    assert listed["estimate"] == pytest.approx(exact, abs=1e-12)


def test_codes_outside_the_domain_refused_in_the_protocol_layer() -> None:
    spec = ColumnSpec("c", 1, 4, 0, (1, 2, 3, 4))
    with pytest.raises(InputError, match="^column 'c' has a value outside its declared categories$") as refused:
        to_fixed_point(np.array([[1.0], [5.0]]), [spec])
    assert "the first 5" in str(refused.value.detail)
    fixed = to_fixed_point(np.array([[1.0], [4.0], [2.0]]), [spec])
    np.testing.assert_array_equal(fixed.integers[:, 0], [0, 3, 1])  # codes = index in the list, as value - 1
    assert fixed.clipped == {"c": 0}


@pytest.mark.multiparty
def test_a_value_outside_the_list_stops_every_party_with_one_redacted_line(tmp_path: Path) -> None:
    for party in range(3):
        rows = TABLE[party::3]
        if party == 1:
            rows = rows[:2] + [("west",) + rows[2][1:]] + rows[3:]
        _write(tmp_path / f"p{party}.csv", rows)
    argv = ["--stat", "duplicate", "--data", str(tmp_path / "p{pid}.csv"), "--columns", "region",
            "--categories", "region=north|south|east", "--epsilon", "1e9", "--pairs", "all", "--seed", "5"]
    runs = run_parties([argv] * 3)
    lines = []
    for run in runs:
        assert run.code == 2, run.stderr
        assert "Traceback" not in run.stderr and "private estimate" not in run.stdout
        errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1, run.stderr
        lines.append(errors[0])
    assert set(lines) == {"error: party 1: column 'region' has a value outside its declared categories"}
    assert "'west'" in runs[1].stdout + runs[1].stderr  # the value and the line: local detail only
    for other in (runs[0], runs[2]):
        assert "west" not in other.stdout + other.stderr and "line" not in other.stdout + other.stderr


def test_the_other_bucket_counts_as_one_category(tmp_path: Path) -> None:
    rows = TABLE[:6] + [("west",) + TABLE[6][1:], ("central",) + TABLE[7][1:]] + TABLE[8:]
    data = _write(tmp_path / "t.csv", rows)
    bucketed = [v if v in REGIONS[:2] else "elsewhere" for v in _column(rows, 0)]  # east, west, central: one
    expected = references.duplicate_ratio(_codes(bucketed, REGIONS[:2] + ["elsewhere"]))
    distinct = references.duplicate_ratio(_codes(_column(rows, 0), REGIONS + ["west", "central"]))
    assert expected != pytest.approx(distinct)  # so the test tells one bucket from distinct values
    record = _release(["--stat", "duplicate", "--data", str(data), "--columns", "region",
                       "--categories", "region=north|south", "--other", "region=elsewhere"], tmp_path / "o.json")
    assert record["estimate"] == pytest.approx(expected, abs=1e-12)
    spec = ColumnSpec.categorical("region", ["north", "south"], other="elsewhere")
    assert (spec.codes, spec.width, spec.labels) == (3, 2, ("north", "south", "elsewhere"))


def test_auc_label_declared_as_no_yes_by_role(tmp_path: Path) -> None:
    data = _write(tmp_path / "t.csv", TABLE)
    scores = np.array([row[3] for row in TABLE])
    positive = np.array([v == "yes" for v in _column(TABLE, 4)])
    argv = ["--stat", "auc", "--data", str(data), "--columns", "score,outcome", "--domain", "score=0:1:8"]
    record = _release([*argv, "--categories", "outcome=no|yes"], tmp_path / "a.json")
    assert record["estimate"] == pytest.approx(roc_auc_score(positive, scores), abs=1e-12)
    reversed_roles = _release([*argv, "--categories", "outcome=yes|no"], tmp_path / "b.json")  # first = negative
    assert reversed_roles["estimate"] == pytest.approx(1 - roc_auc_score(positive, scores), abs=1e-12)
    assert main([*argv, "--categories", "outcome=no|yes|maybe"]) == 2  # auc has two roles
    assert main(argv) == 2  # the default labels are 0/1: 'no' is not a number


def test_fill_value_must_be_a_category_and_fills_as_one(tmp_path: Path) -> None:
    rows = TABLE[:4] + [("NA",) + TABLE[4][1:]] + TABLE[5:]
    data = _write(tmp_path / "t.csv", rows)
    argv = ["--stat", "duplicate", "--data", str(data), "--columns", "region", "--categories", "region=north|south|east",
            "--missing", "fill"]
    assert main([*argv, "--fill", "region=west"]) == 2
    assert main([*argv, "--fill", "region=North"]) == 2  # exact, case-sensitive
    filled = [v if v != "NA" else "south" for v in _column(rows, 0)]
    record = _release([*argv, "--fill", "region=south"], tmp_path / "f.json")
    assert record["estimate"] == pytest.approx(references.duplicate_ratio(_codes(filled, REGIONS)), abs=1e-12)
    spec = ColumnSpec.categorical("region", REGIONS)
    with pytest.raises(ValueError, match="fill value 'west' for column 'region' is not one of its declared categories"):
        MissingPolicy("fill", (("region", "west"),)).check([spec])


def test_reader_matches_strings_exactly_and_numbers_by_value(tmp_path: Path) -> None:
    spec = ColumnSpec.categorical("region", ["north", "south", "NA"])
    plain = tmp_path / "plain.csv"
    plain.write_text("region,v\nnorth,1\n south ,2\nNA,3\n,4\n")
    quoted = tmp_path / "quoted.csv"
    quoted.write_text('region,v\n"north",1\n" south ",2\n"NA",3\n"",4\n')
    for path in (plain, quoted):  # vectorized path and the csv module's path agree
        values = read_columns(str(path), ["region", "v"], specs=[spec])
        np.testing.assert_array_equal(values[:3], [[0, 1], [1, 2], [2, 3]])  # 'NA' declared: a category
        assert np.isnan(values[3, 0]) and values[3, 1] == 4  # an empty cell is missing
    (tmp_path / "case.csv").write_text("region\nnorth\nNorth\n")
    with pytest.raises(InputError, match="outside its declared categories") as refused:
        read_columns(str(tmp_path / "case.csv"), ["region"], specs=[spec])
    assert "line 3" in str(refused.value.detail) and "'North'" in str(refused.value.detail)
    numbers = ColumnSpec.categorical("size", [1, 2, 3])
    (tmp_path / "n.csv").write_text("size\n1\n2.0\n3e0\n")
    rows = party_rows(str(tmp_path / "n.csv"), ["size"], party=0, parties=1, specs=[numbers])
    np.testing.assert_array_equal(to_fixed_point(rows.values, [numbers]).integers[:, 0], [0, 1, 2])


def test_declarations_are_checked_on_entry() -> None:
    for categories, other, message in [
        (["a", 1], None, "all strings or all numbers"), (["a", "a"], None, "distinct"),
        (["a"], None, "at least two categories"), (["a", "b"], "a", "also in its list"),
        ([" a", "b"], None, "without surrounding spaces"), ([1.0, float("nan")], None, "finite"),
    ]:
        with pytest.raises(ValueError, match=message):
            ColumnSpec.categorical("c", categories, other=other)
    with pytest.raises(ValueError, match="precision 0"):
        ColumnSpec("c", 0, 1, 4, (0, 1))
    assert ColumnSpec("label", 0, 1, 0, (0, 1)) == ColumnSpec.categorical("label", [0, 1])  # the old form


@pytest.mark.parametrize("argv, fragment", [
    (["--stat", "duplicate", "--columns", "region"], "declare its categories (--categories region=A|B|...) or an "
                                                     "integer domain (--domain region=LO:HI)"),
    (["--stat", "duplicate", "--columns", "c", "--domain", "c=0:10:2"], "must be integer codes"),
    (["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:1,b=0:1", "--categories", "a=x|y"], "reads it as a number"),
    (["--stat", "duplicate", "--columns", "c", "--categories", "d=x|y"], "not one of the columns"),
    (["--stat", "duplicate", "--columns", "c", "--categories", "c=x||y"], "an empty category"),
    (["--stat", "duplicate", "--columns", "c", "--categories", "c"], "COLUMN=A|B|"),
])
def test_category_options_refuse_bad_usage(argv: list[str], fragment: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "t.csv"
    data.write_text("region,c,a,b\nnorth,1,0,0\n")
    assert main([*argv, "--data", str(data)]) == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and fragment in errors[0], errors


def test_embedded_defaults_declare_their_categories_and_keep_their_codes() -> None:
    """Framingham's education and the 0/1 columns are declared lists; the codes shared are the
    integers of the old numeric encoding (value - lower), so the same seed gives the same numbers."""
    for stat, lists in [("duplicate", [(1, 2, 3, 4)]), ("rand", [(0, 1), (0, 1)])]:
        options = parse_options(["--stat", stat, "--seed", "3"])
        assert [spec.categories for spec in options.query.specs] == lists
        rows = load_rows(options, 3, 0, 1)
        codes = prepare_rows(options.query, rows.values).integers
        lowers = np.array([spec.lower for spec in options.query.specs])
        np.testing.assert_array_equal(codes, np.rint(rows.values - lowers).astype(np.int64))
        assert json.dumps(options.raw["categories"])  # agreed and recorded as plain data
