"""The party reader on Arrow's streaming CSV reader, and counting on the grid without per-row Python
(issue 25, items 1 and 2; issue 26, item 3).

- :func:`secure.reader.read_columns` gives, block by block through ``pyarrow.csv``, the values of the
  cell-by-cell reading of the whole table (quoted cells with line breaks across blocks, CRLF, blank
  lines, a byte-order mark, missing tokens in any case, a party's rows ``i, i + m, ...``), and takes
  these files without its exact path; irregular files (short rows, padded tokens, a cell only Python
  reads) go through the exact path with the same values;
- a line longer than a block is refused in one line naming no path (exit 2), on both paths, and
  reading such a file holds about a block, not the line;
- the counting of every kernel (label and class columns included) runs as many Python lines for
  20,000 rows as for 2,000: no per-row Python object from the file to the histogram.
"""
from __future__ import annotations

import csv
import gzip
import io
import math
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from conftest import ROOT, run_command, scenario_command
from secure import reader
from secure.columns import MISSING_TOKENS, ColumnSpec
from secure.errors import InputError
from secure.reader import read_columns

LONG_LINE = "its data file has a line longer than {limit} bytes; no line may be longer"


def _reference(text: str, columns: list[str], party: int, parties: int) -> np.ndarray:
    """The whole table by the csv module, then this party's non-empty records, cell by cell."""
    rows = [row for row in csv.reader(io.StringIO(text.lstrip("\ufeff"), newline="")) if row]
    header = [name.strip() for name in rows[0]]
    positions = [header.index(name) for name in columns]
    own = rows[1:][party::parties]

    def cell(row: list[str], p: int) -> float:
        value = (row[p] if p < len(row) else "").strip()
        return math.nan if value.lower() in MISSING_TOKENS else float(value)

    return np.array([[cell(row, p) for p in positions] for row in own], dtype=float).reshape(len(own), len(columns))


def _spy_exact(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count the calls of the exact path."""
    calls: list[int] = []
    original = reader._read_exact

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(reader, "_read_exact", spy)
    return calls


def _random_table(generator: np.random.Generator, rows: int, *, quotes: bool = True) -> str:
    """A regular table: numbers (some quoted), missing tokens in random cases, a text column with quoted
    commas and line breaks, blank lines, LF or CRLF, sometimes a byte-order mark (``quotes=False``: no quote
    after the header, no quoted cell)."""
    newline = "\r\n" if generator.random() < 0.5 else "\n"
    tokens = sorted(MISSING_TOKENS)
    lines = ["note,x,y"]
    for i in range(rows):
        cells = []
        for _ in range(2):
            draw = generator.random()
            if draw < 0.15:
                token = tokens[int(generator.integers(len(tokens)))]
                cells.append("".join(c.upper() if generator.random() < 0.5 else c for c in token))
            else:
                value = f"{generator.normal(0, 1e3):.6g}"
                cells.append(f'"{value}"' if draw > 0.9 and quotes else value)
        note = f'"line one{newline}line two, with a comma"' if generator.random() < 0.1 and quotes else f"n{i}"
        lines.append(",".join([note, *cells]))
        if generator.random() < 0.05:
            lines.append("")
    text = newline.join(lines) + newline
    return ("\ufeff" + text) if generator.random() < 0.3 else text


@pytest.mark.parametrize("seed", range(8))
def test_arrow_blocks_equal_the_cell_by_cell_reading(seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generator = np.random.default_rng(seed)
    text = _random_table(generator, 300)
    suffix = ".csv.gz" if seed % 2 else ".csv"
    path = tmp_path / f"t{suffix}"
    data = text.encode("utf-8")
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    monkeypatch.setattr(reader, "CHUNK_BYTES", 256)  # about 30 blocks: quoted line breaks cross blocks
    exact = _spy_exact(monkeypatch)
    for party, parties in ((0, 1), (0, 3), (1, 3), (2, 3), (3, 4)):
        got = read_columns(str(path), ["y", "x"], party=party, parties=parties)
        np.testing.assert_array_equal(got, _reference(text, ["y", "x"], party, parties))
    assert exact == []  # every feature above is read by Arrow, not by the slow path


def _spy(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of ``reader.<name>``."""
    calls: list[int] = []
    original = getattr(reader, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(reader, name, spy)
    return calls


@pytest.mark.parametrize("seed", range(4))
def test_a_file_without_quotes_is_parsed_in_pieces_by_threads(seed: int, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut at line ends into pieces of ``CHUNK_BYTES`` parsed by several threads, the values are those of the
    cell-by-cell reading, in the file's order (a party's rows ``i, i + m, ...`` across pieces); a quote in the
    body, even after some pieces were taken, sends the whole file to the streaming reader, which keeps no row
    twice."""
    generator = np.random.default_rng(100 + seed)
    text = _random_table(generator, 400, quotes=False)
    header = '"note","x","y"' if seed % 2 else "note,x,y"  # a quoted header is no quote in the body
    text = text.replace("note,x,y", header, 1)
    suffix = ".csv.gz" if seed >= 2 else ".csv"
    late = text + '"n",1,2\n'  # the first quote after many pieces
    monkeypatch.setattr(reader, "CHUNK_BYTES", 256)
    monkeypatch.setattr(reader, "_PARSERS", 3)
    exact, streamed = _spy(monkeypatch, "_read_exact"), _spy(monkeypatch, "_read_arrow")
    for body, streams in ((text, 0), (late, 1)):
        path = tmp_path / f"t{suffix}"
        data = body.encode("utf-8")
        path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
        for party, parties in ((0, 1), (1, 3), (3, 4)):
            got = read_columns(str(path), ["y", "x"], party=party, parties=parties)
            np.testing.assert_array_equal(got, _reference(body, ["y", "x"], party, parties))
        assert (len(exact), len(streamed)) == (0, 3 * streams)


@pytest.mark.parametrize("text", ["a,b\r1,2\r3,4\r", "a,b\r1,2\n3,4\n"])
def test_lines_ended_by_lone_carriage_returns_are_all_read(text: str, tmp_path: Path) -> None:
    """A header ended by a lone CR (no line feed before the data): the pieces' cut at line feeds would take the
    whole file, or its first record, for the header and keep no row of it; the streaming reader reads every row."""
    path = tmp_path / "t.csv"
    path.write_bytes(text.encode())
    for party, parties in ((0, 1), (1, 2)):
        got = read_columns(str(path), ["b", "a"], party=party, parties=parties)
        np.testing.assert_array_equal(got, _reference(text, ["b", "a"], party, parties))


def test_a_byte_that_is_not_utf8_in_a_later_piece_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 256)
    path = tmp_path / "t.csv"
    rows = b"".join(b"%d,%d,n\n" % (i, i % 7) for i in range(3000))  # beyond the header's text buffer
    path.write_bytes(b"a,b,note\n" + rows + b"1,2,caf\xe9\n")  # Latin-1 in a column no one reads
    with pytest.raises(InputError, match=r"^cannot read its data file: it is not UTF-8 text$"):
        read_columns(str(path), ["a", "b"], party=2, parties=3)


def test_irregular_files_take_the_exact_path_with_the_same_values(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    cases = {
        "short rows": "a,b,c\n1,2,3\n4\n5,6\n7,8,9,10\n",
        "padded tokens": "a,b\n NA ,2\n3, nUlL \n5,6\n",
        "a cell only Python reads": "a,b\n1_000,2\n3,4\n",
        "another party's bad cell": "a,b\n1,2\n3,oops\n5,6\n7,inf\n",
    }
    exact = _spy_exact(monkeypatch)
    for name, text in cases.items():
        path = tmp_path / "t.csv"
        path.write_text(text)
        parties = 2 if name == "another party's bad cell" else 1
        got = read_columns(str(path), ["a", "b"], party=0, parties=parties)
        np.testing.assert_array_equal(got, _reference(text, ["a", "b"], 0, parties), err_msg=name)
    assert len(exact) == len(cases)
    with pytest.raises(InputError, match=r"^column 'b' has a value that is not a number$") as refused:
        read_columns(str(path), ["a", "b"], party=1, parties=2)  # the owner of the bad cell: the exact line
    assert refused.value.detail == f"{path} line 3, column 'b': 'oops' is not a number"


def test_string_categories_by_block_codes_and_only_own_rows_refused(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    spec = ColumnSpec.categorical("region", ["north", "south", "NA"])
    regions = ["north", "south", "NA", "", '"south"', "north"] * 40
    regions[7] = "west"  # party 1's row (7 = 1 + 3 * 2): outside the list
    path = tmp_path / "r.csv"
    path.write_text("region,v\n" + "".join(f"{r},{i}\n" for i, r in enumerate(regions)))
    monkeypatch.setattr(reader, "CHUNK_BYTES", 128)
    exact = _spy_exact(monkeypatch)
    code = {"north": 0.0, "south": 1.0, "NA": 2.0, "": math.nan, '"south"': 1.0}
    for party in (0, 2):
        got = read_columns(str(path), ["region", "v"], party=party, parties=3, specs=[spec])
        expected = [[code[r], float(i)] for i, r in enumerate(regions) if i % 3 == party]
        np.testing.assert_array_equal(got, np.array(expected))
    assert exact == []
    with pytest.raises(InputError, match=r"^column 'region' has a value outside its declared categories$") as refused:
        read_columns(str(path), ["region", "v"], party=1, parties=3, specs=[spec])
    assert refused.value.detail is not None and "line 9" in refused.value.detail and "'west'" in refused.value.detail


def _long_line_file(path: Path, length: int) -> Path:
    """Rows ``a, b, note`` with one note of ``length`` bytes in the middle (the unused column)."""
    rows = [f"{i},{i % 7},n" for i in range(200)]
    rows[100] = "100,2," + "x" * length
    data = ("a,b,note\n" + "\n".join(rows) + "\n").encode()
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize("name", ["long.csv", "long.csv.gz"])
@pytest.mark.parametrize("length", [4_200, 5_000, 10_000])  # Arrow alone reads some rows up to two blocks
def test_a_line_longer_than_a_block_is_refused_in_one_line(name: str, length: int, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reader, "CHUNK_BYTES", 4096)
    path = _long_line_file(tmp_path / name, length)
    with pytest.raises(InputError) as arrow:
        read_columns(str(path), ["a", "b"], party=1, parties=3)
    with pytest.raises(InputError) as exact:  # the exact path refuses it too, before holding it
        reader._read_exact(str(path), [0, 1], ["a", "b"], party=1, parties=3, textual={}, sink=reader._Rows(2))
    for refused in (arrow.value, exact.value):
        assert str(refused) == LONG_LINE.format(limit=4096)
        assert refused.detail is not None and str(path) in refused.detail
    short = _long_line_file(tmp_path / ("short" + name), 4000)  # a line under the limit is read
    assert read_columns(str(short), ["a", "b"], party=1, parties=3).shape == (67, 2)


@pytest.mark.parametrize("length", [300, 1_000, 3_000])
def test_a_line_longer_than_arrows_block_but_within_the_limit_is_read(length: int, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow's block (``_ARROW_BLOCK``, smaller than ``CHUNK_BYTES`` to bound its read-ahead) is no line limit:
    a longer row that Arrow cannot take goes to the exact path, with the values of the whole table."""
    monkeypatch.setattr(reader, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(reader, "_ARROW_BLOCK", 256)
    path = _long_line_file(tmp_path / "long.csv", length)
    expected = _reference(path.read_text(), ["a", "b"], 1, 3)
    np.testing.assert_array_equal(read_columns(str(path), ["a", "b"], party=1, parties=3), expected)


def test_one_long_line_holds_about_a_block_not_the_line(tmp_path: Path) -> None:
    """A 64 MiB line in an unused column: the peak resident memory grows by a few blocks of 1 MiB (Arrow
    holds the partial row and the blocks in flight, the UTF-8 check nothing for ASCII), far below the
    line -- the former reader held the line as text (>= 64 MiB) and read it."""
    path = _long_line_file(tmp_path / "long.csv", 64 << 20)
    script = textwrap.dedent(f"""
        import resource
        from secure.errors import InputError
        from secure.reader import read_columns
        read_columns({str(tmp_path / 'warm.csv')!r}, ["a"])  # imports and Arrow's pools, before the baseline
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            read_columns({str(path)!r}, ["a", "b"], party=0, parties=3)
        except InputError as exc:
            print(exc)
        print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024)
    """)
    (tmp_path / "warm.csv").write_text("a\n1\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    line, growth = done.stdout.splitlines()
    assert line == LONG_LINE.format(limit=reader.CHUNK_BYTES)
    assert int(growth) < 32 << 20  # a few blocks of 1 MiB; the line alone is 64 MiB


def test_long_line_at_a_party_is_exit_2_and_one_line(tmp_path: Path) -> None:
    rows = [f"{120 + i % 40},{80 + i % 20},n" for i in range(30)]
    rows[10] = "130,85," + "x" * (reader.CHUNK_BYTES + 1000)
    path = tmp_path / "data.csv"
    path.write_text("sysBP,diaBP,note\n" + "\n".join(rows) + "\n")
    run = run_command(scenario_command("ustat", "--no-log", "--data", str(path), "--stat", "kendall", "--columns",
                                       "sysBP,diaBP", "--epsilon", "1e9", "--pairs", "all", "--seed", "3",
                                       "--domain", "sysBP=80:300:8,diaBP=40:160:8"))
    assert run.code == 2
    assert [line for line in run.stderr.splitlines() if line.strip()] == \
        ["error: party 0: " + LONG_LINE.format(limit=reader.CHUNK_BYTES)]


# ------------------------------------------------------------------------------- counting on the grid

REGIONS = ["north", "south", "east", "west"]


def _counting_cases() -> dict[str, tuple[list[ColumnSpec], Callable[[np.random.Generator, int], list[list[str]]]]]:
    def numbers(values: np.ndarray) -> list[str]:
        return [f"{v:g}" for v in values]

    return {
        "kendall": ([ColumnSpec("x", 0, 300, 1, step=0.5), ColumnSpec("y", 0, 200, 1, step=0.5)],
                    lambda g, n: [numbers(np.round(g.uniform(0, 300, n) * 2) / 2),
                                  numbers(np.round(g.uniform(-10, 210, n) * 2) / 2)]),
        "gini": ([ColumnSpec("x", 0, 300, 1, step=0.5)], lambda g, n: [numbers(np.round(g.uniform(0, 300, n)))]),
        "auc": ([ColumnSpec("s", 0, 100, 0), ColumnSpec("label", 0, 1, 0, (0, 1))],
                lambda g, n: [numbers(g.integers(0, 101, n)), numbers(g.integers(0, 2, n))]),
        "vus": ([ColumnSpec("s", 0, 100, 0), ColumnSpec("cls", 0, 2, 0, (0, 1, 2))],
                lambda g, n: [numbers(g.integers(0, 101, n)), numbers(g.integers(0, 3, n))]),
        "duplicate": ([ColumnSpec.categorical("r", REGIONS)],
                      lambda g, n: [[REGIONS[i] for i in g.integers(0, 4, n)]]),
        "rand": ([ColumnSpec.categorical("r", REGIONS), ColumnSpec.categorical("c", [1, 2, 3])],
                 lambda g, n: [[REGIONS[i] for i in g.integers(0, 4, n)], numbers(g.integers(1, 4, n))]),
    }


@pytest.mark.parametrize("statistic", sorted(_counting_cases()))
def test_counting_makes_no_per_row_python_calls(statistic: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """From the file to the local histogram (read, missing-value policy, fixed point, kernel encoding,
    grid cells, counts): the Python calls and lines run (``sys.settrace``) for 20,000 rows and for 2,000
    differ by fewer than 100, so no step runs Python per row -- a loop over rows would add at least
    18,000 (one line event per iteration).  Both files are read as one piece (1 MiB pieces: these files are
    under 0.5 MB), since the reader's Python work grows per piece, not per row."""
    import secure.reader

    monkeypatch.setattr(secure.reader, "_PIECE_BYTES", 1 << 20)
    from dp.umpc.complete import histogram_grid, local_cells
    from dp.umpc.protocol import UStatQuery, prepare_rows
    from secure.histograms import local_histogram
    from secure.intake import MissingPolicy, apply_missing
    from secure.kernels import get_kernel

    specs, make = _counting_cases()[statistic]
    names = [spec.name for spec in specs]
    kernel = get_kernel(statistic, precision=1) if statistic == "gini" else get_kernel(statistic)
    query = UStatQuery(kernel=kernel, specs=tuple(specs), epsilon=1.0, path="histogram")
    calls = []
    for rows in (2_000, 20_000, 2_000):  # the first run warms imports and caches
        path = tmp_path / f"{rows}.csv"
        columns = make(np.random.default_rng(rows), rows)
        path.write_text(",".join(names) + "\n" + "".join(",".join(row) + "\n" for row in zip(*columns)))
        events = [0]

        def trace(frame: Any, event: str, arg: Any) -> Any:
            events[0] += 1  # every call, and every line run (a loop's lines once per iteration)
            return trace

        sys.settrace(trace)
        try:
            values = read_columns(str(path), names, party=0, parties=1, specs=specs)
            rows_read = apply_missing(values, names, MissingPolicy(), source=str(path), specs=specs)
            fixed = prepare_rows(query, rows_read.values)
            counts = local_histogram(local_cells(query, fixed), histogram_grid(kernel, query.specs))
        finally:
            sys.settrace(None)
        assert int(counts.sum()) == rows
        calls.append(events[0])
    assert abs(calls[1] - calls[2]) < 100, calls


@pytest.mark.parametrize("name", ["long.csv", "long.csv.gz"])
def test_pieces_smaller_than_the_line_limit_carry_a_long_line(name: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than a piece but within ``CHUNK_BYTES`` is carried into the next pieces and read there; a
    longer one is refused in the same line as by the other paths."""
    monkeypatch.setattr(reader, "CHUNK_BYTES", 4096)
    monkeypatch.setattr(reader, "_PIECE_BYTES", 1000)
    exact, streamed = _spy(monkeypatch, "_read_exact"), _spy(monkeypatch, "_read_arrow")
    path = _long_line_file(tmp_path / name, 3000)
    expected = _reference(gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else path.read_text(),
                          ["a", "b"], 1, 3)
    np.testing.assert_array_equal(read_columns(str(path), ["a", "b"], party=1, parties=3), expected)
    assert (exact, streamed) == ([], [])
    with pytest.raises(InputError, match=f"^{LONG_LINE.format(limit=4096)}$"):
        read_columns(str(_long_line_file(tmp_path / ("too" + name), 5000)), ["a", "b"], party=1, parties=3)
