"""Only public-by-declaration data and the DP release leave a party (issue 11, items 4, 6, 8).

- no exact count of clipped or missing values reaches another party, the record or the printed
  release; each party prints its own counts, marked local;
- a missing value is refused by default (exit 2, one line naming party and column, no value, no
  line number, no count); ``--missing fill`` with declared values gives exactly the plaintext
  statistic of the filled data;
- the vectorized reader (:func:`secure.intake.read_columns`) gives the same values in the same
  order as the cell-by-cell reading of the whole table; a byte-order mark is ignored; a directory
  as ``--data`` exits 2 with one line.
"""
from __future__ import annotations

import gzip
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import references
from conftest import read_record, record_transfers, run_command, run_parties, scenario_command, small_table, write_csv
from scenarios.ustat import main
from secure import intake, reader
from secure.intake import MISSING_TOKENS, MissingPolicy, party_rows, read_columns, read_table
from secure.session import InputError

KENDALL = ["--stat", "kendall", "--columns", "sysBP,diaBP", "--epsilon", "1e9", "--pairs", "all", "--seed", "3"]
LOCAL_LINE = re.compile(r"at this party, not shared: (\d+) missing value\(s\) filled, (\d+) value\(s\) clipped")


def _reference_rows(path: str, columns: list[str], party: int, parties: int) -> np.ndarray:
    """The old reading: the whole table as strings, then this party's rows cell by cell (nan = missing)."""
    header, rows = read_table(path)
    positions = [header.index(name) for name in columns]
    own = rows[party::parties]
    return np.array([[math.nan if (cell := (row[p] if p < len(row) else "").strip()).lower() in MISSING_TOKENS
                      else float(cell) for p in positions] for row in own], dtype=float).reshape(len(own), len(columns))


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip()]


# ----------------------------------------------------------------------------------------- counts


def test_no_count_is_transferred_recorded_or_printed_as_a_total(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """One process (m = 1): every payload that goes through ``mpc.transfer`` is recorded; the clip
    and fill counts appear in none of them and not in the record; the party prints them as local."""
    header, values = small_table(40)
    values[[3, 8], header.index("diaBP")] = np.nan  # two missing cells, filled below
    path = tmp_path / "t.csv"
    write_csv(path, header, values)
    text = path.read_text().replace("nan", "NA")
    path.write_text(text)
    clipped = int(np.sum(values[:, header.index("sysBP")] > 131))
    assert clipped not in (0, 2, 40)  # distinguishable from the fill count and the row count
    sent = record_transfers(monkeypatch)
    out = tmp_path / "r.json"
    argv = ["--data", str(path), *KENDALL, "--domain", "sysBP=80:131:8,diaBP=40:160:8", "--missing", "fill",
            "--fill", "sysBP=100,diaBP=80", "--json", str(out)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert LOCAL_LINE.search(printed) is not None
    assert LOCAL_LINE.search(printed).groups() == ("2", str(clipped))  # type: ignore[union-attr]
    record = read_record(out)
    assert record["n"] == 40 and record["missing"] == "fill" and record["clipping"] == "local"
    assert not {"clipped", "dropped_missing", "filled"} & set(record)

    def scalars(obj: Any) -> list[Any]:
        if isinstance(obj, dict):
            return [k for k in obj] + [x for v in obj.values() for x in scalars(v)]
        if isinstance(obj, (list, tuple)):
            return [x for v in obj for x in scalars(v)]
        return [obj]

    transferred = [x for payload in sent for x in scalars(payload)]
    assert sent and 40 in transferred  # the spy saw the (public) row count
    assert clipped not in transferred and "clipped" not in transferred


@pytest.mark.multiparty
def test_three_parties_each_print_only_their_own_clip_count(tmp_path: Path) -> None:
    header, values = small_table(45)
    path = write_csv(tmp_path / "all.csv", header, values)
    out = tmp_path / "r.json"
    argv = ["--data", str(path), *KENDALL, "--domain", "sysBP=80:134:8,diaBP=40:160:8", "--json", str(out)]
    runs = run_parties([argv] * 3)
    assert [run.code for run in runs] == [0, 0, 0], runs[0].stderr
    own = [int(np.sum(values[party::3, header.index("sysBP")] > 134)) for party in range(3)]
    assert len(set(own)) == 3  # three different counts: a shared one would show at the wrong party
    for party, run in enumerate(runs):
        found = LOCAL_LINE.findall(run.stdout)
        assert found == [("0", str(own[party]))], run.stdout
        assert "values clipped" not in run.stdout and str(sum(own)) + " value" not in run.stdout
    record = read_record(out)
    assert record["missing"] == "refuse" and "clipped" not in record and "dropped_missing" not in record


# ---------------------------------------------------------------------------------- missing values


def test_missing_value_is_refused_with_one_line_without_row_data(tmp_path: Path) -> None:
    header, values = small_table(40)
    path = write_csv(tmp_path / "t.csv", header, values)
    lines = path.read_text().splitlines()
    cells = lines[7].split(",")
    cells[header.index("diaBP")] = "?"
    lines[7] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n")
    run = run_command(scenario_command("ustat", "--no-log", "--data", str(path), *KENDALL,
                                       "--domain", "sysBP=80:300:8,diaBP=40:160:8"))
    assert run.code == 2
    assert _error_lines(run.stderr) == ["error: party 0: column 'diaBP' has a missing value (use --missing fill "
                                        "with a declared --fill, or clean the file)"]
    assert "private estimate" not in run.stdout
    assert "note (at this party, not shared)" in run.stdout  # the detail stays at the party that failed


@pytest.mark.parametrize("fill", ["sysBP=400,diaBP=100", "sysBP=190"])
def test_fill_values_are_declared_inside_the_domain(fill: str, tmp_path: Path) -> None:
    header, values = small_table(20)
    path = write_csv(tmp_path / "t.csv", header, values)
    run = run_command(scenario_command("ustat", "--no-log", "--data", str(path), *KENDALL,
                                       "--domain", "sysBP=80:300:8,diaBP=40:160:8", "--missing", "fill",
                                       "--fill", fill))
    assert run.code == 2 and len(_error_lines(run.stderr)) == 1, run.stderr
    assert ("outside its declared domain" if "400" in fill else "needs a declared fill value for column 'diaBP'") \
        in run.stderr


def test_fill_gives_the_plaintext_statistic_of_the_filled_data(tmp_path: Path) -> None:
    header, values = small_table(40)
    sys_bp, dia_bp = header.index("sysBP"), header.index("diaBP")
    holes = values.copy()
    holes[[1, 5, 9], sys_bp] = np.nan
    holes[[5, 30], dia_bp] = np.nan
    path = write_csv(tmp_path / "t.csv", header, holes)
    path.write_text(path.read_text().replace("nan", ""))
    out = tmp_path / "r.json"
    argv = ["--data", str(path), *KENDALL, "--domain", "sysBP=80:300:8,diaBP=40:160:8", "--missing", "fill",
            "--fill", "sysBP=120.5,diaBP=80", "--json", str(out)]
    assert main(argv) == 0
    filled = values.copy()
    filled[[1, 5, 9], sys_bp] = 120.5
    filled[[5, 30], dia_bp] = 80.0
    record = read_record(out)
    assert record["n"] == 40 and record["fill"] == {"diaBP": 80.0, "sysBP": 120.5}
    expected = references.kendall_tau_a(filled[:, sys_bp], filled[:, dia_bp])
    assert expected != pytest.approx(references.kendall_tau_a(values[:, sys_bp], values[:, dia_bp]), abs=1e-9)
    assert record["estimate"] == pytest.approx(expected, abs=1e-12)


def test_rows_shared_in_blocks_give_the_exact_statistic(small_csv: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """``share_rows`` inputs rows by blocks (memory); with blocks of 7 rows every row stays whole
    (all pairs: the exact statistic) and in its place (60 seed-sampled pairs: the same sums as one block)."""
    argv = ["--data", str(small_csv), *KENDALL, "--domain", "sysBP=80:300:8,diaBP=40:160:8"]
    sampled, default = {}, intake.SHARE_ROWS
    assert default > 40  # the small table fits one block by default
    for block in (default, 7):
        monkeypatch.setattr(intake, "SHARE_ROWS", block)
        out = tmp_path / f"sampled{block}.json"
        sixty = [*argv[:argv.index("--pairs") + 1], "60", *argv[argv.index("--pairs") + 2:]]  # given once
        assert main([*sixty, "--json", str(out)]) == 0
        sampled[block] = read_record(out)["noisy_sums"]
    assert sampled[7] == sampled[default]
    out = tmp_path / "all.json"
    assert main([*argv, "--json", str(out)]) == 0
    header, values = small_table()
    expected = references.kendall_tau_a(values[:, header.index("sysBP")], values[:, header.index("diaBP")])
    assert read_record(out)["estimate"] == pytest.approx(expected, abs=1e-12)


def test_embedded_data_fills_with_the_declared_values_by_default(tmp_path: Path) -> None:
    """The no-flag job on a column with missing cells (Framingham totChol) runs: it fills with the
    values declared in domains.json (all inside their declared domains)."""
    from scenarios.kit.datasets import declared_fills, declared_specs, load_embedded
    from scenarios.ustat import load_rows, parse_options

    for name in ("framingham", "heart_disease_uci"):
        specs = declared_specs(name, list(declared_fills(name)))
        MissingPolicy("fill", tuple(declared_fills(name).items())).check(list(specs.values()))
    table = load_embedded("framingham")
    column = table.header.index("totChol")
    cells = [row[column] for row in table.rows]
    assert sum(c.strip().lower() in MISSING_TOKENS for c in cells) > 0
    filled = np.array([400.0 if c.strip().lower() in MISSING_TOKENS else float(c) for c in cells])
    options = parse_options(["--stat", "gini"])
    for party in range(3):
        np.testing.assert_array_equal(load_rows(options, 1, party, 3).values[:, 0], filled[party::3])
    out = tmp_path / "r.json"
    assert main(["--stat", "gini", "--pairs", "200", "--seed", "1", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["n"] == len(table.rows) and record["missing"] == "fill" and record["fill"] == {"totChol": 400.0}


# ------------------------------------------------------------------------------------------ reader


@pytest.mark.parametrize("name", ["framingham", "heart_disease_uci"])
def test_vectorized_reader_equals_the_table_reading_on_the_embedded_data(name: str) -> None:
    from scenarios.kit.datasets import declared_domains

    path = str(Path(intake.__file__).parents[1] / "scenarios" / "data" / f"{name}.csv.gz")
    header, _ = read_table(path)
    columns = [c for c in declared_domains(name) if c in header]
    for party, parties in ((0, 1), (0, 3), (1, 3), (2, 3), (3, 4)):
        expected = _reference_rows(path, columns, party, parties)
        got = read_columns(path, columns, party=party, parties=parties)
        np.testing.assert_array_equal(got, expected)
        assert got.shape[0] == len(range(party, len(_), parties))
        assert np.isnan(got).any() == np.isnan(expected).any()


def test_reader_chunks_quotes_blank_lines_and_crlf_match_the_reference(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny chunks: a quoted cell with a line break crosses a chunk boundary; blank lines do not count."""
    lines = ["id,x,y"]
    for i in range(200):
        x = "NA" if i % 17 == 3 else f"{i * 0.25:g}"
        y = f"\"{i}\"" if i % 13 == 0 else str(-i)
        note = "\"two\r\nlines, and a comma\"" if i % 29 == 5 else "plain"
        lines.append(f"{note},{x},{y}")
        if i % 31 == 7:
            lines.append("")
    path = tmp_path / "q.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64)
    for party, parties in ((0, 1), (1, 3), (2, 3)):
        expected = _reference_rows(str(path), ["y", "x"], party, parties)
        np.testing.assert_array_equal(read_columns(str(path), ["y", "x"], party=party, parties=parties), expected)


def test_reader_error_shares_the_column_only(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n5,oops\n")
    with pytest.raises(InputError, match=r"^column 'b' has a value that is not a number$") as refused:
        read_columns(str(path), ["a", "b"])
    assert refused.value.detail == f"{path} line 4, column 'b': 'oops' is not a number"
    np.testing.assert_array_equal(read_columns(str(path), ["a"], party=1, parties=2), [[3.0]])


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz"])
def test_byte_order_mark_is_ignored(suffix: str, tmp_path: Path) -> None:
    header, values = small_table(12)
    plain = write_csv(tmp_path / "plain.csv", header, values)
    data = "\ufeff" + plain.read_text()
    marked = tmp_path / f"bom{suffix}"
    if suffix.endswith(".gz"):
        with gzip.open(marked, "wt", encoding="utf-8", newline="") as handle:
            handle.write(data)
    else:
        marked.write_text(data, encoding="utf-8")
    assert marked.read_bytes()[:3] == b"\xef\xbb\xbf" or suffix.endswith(".gz")
    first = header[0]
    got = party_rows(str(marked), [first, "diaBP"], party=0, parties=1)
    np.testing.assert_array_equal(got.values, values[:, [0, header.index("diaBP")]])
    assert read_table(str(marked))[0] == header


def test_directory_as_data_exits_2_with_one_line(tmp_path: Path) -> None:
    run = run_command(scenario_command("ustat", "--no-log", "--data", str(tmp_path), *KENDALL,
                                       "--domain", "sysBP=80:300:8,diaBP=40:160:8"))
    assert run.code == 2
    assert _error_lines(run.stderr) == ["error: party 0: cannot read its data file: it is a directory"]
