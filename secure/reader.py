"""Reading a party's CSV file: only the needed columns of only this party's rows, in chunks.

A party reads ``--data PATH`` (optionally gzip-compressed, optionally starting with a UTF-8 byte-order
mark, Excel's "CSV UTF-8"); it needs a header line.  :func:`read_columns` streams the file in chunks
of :data:`CHUNK_BYTES`, keeps rows ``party, party + parties, ...`` (all rows for a per-party file) and
parses the wanted columns with ``np.loadtxt`` -- falling back to a cell-by-cell parse with the exact
messages for quoted cells, missing or bad values -- so memory follows the party's share of the file,
not the whole file.  String categories (:class:`secure.columns.ColumnSpec` ``categories``) are turned
into their codes while reading.  Missing cells become ``nan``; :mod:`secure.intake` applies the
missing-value policy.

Errors are :class:`secure.errors.InputError` with a shared one-line message naming the column and
the kind of problem; the line number and the cell value go into ``detail``, shown at this party only.
So do the file's path and header: an unknown column is shared as ``its data file has no column 'x'``,
an empty or unreadable file as ``its data file is empty`` / ``cannot read its data file: ...``, and the
path, the header's column names and the reader's own message are the local note (a party's path and
its file's schema are its own; a decoder's message may quote a byte of a cell).  The one exception is
a path that is not a readable file at all (:func:`check_data_file`): that line names the path the user
typed, which is the whole of what there is to say.
Threat model: nothing here leaves the party; the shared lines are what :func:`secure.session.agree_verdict`
sends.
"""
from __future__ import annotations

import csv
import gzip
import math
import os
import sys
from typing import Sequence, TextIO

import numpy as np

from secure.columns import MISSING_TOKENS, ColumnSpec
from secure.errors import InputError

__all__ = ["read_table", "read_columns", "table_values", "check_data_file", "party_files", "one_party_line", "CHUNK_BYTES"]

#: the placeholder in ``--data`` that names one file per party (``site{pid}.csv``)
PID = "{pid}"


def check_data_file(path: str) -> None:
    """Refuse a path that is not a readable regular file, with the one-line message of the reading code
    (:func:`read_table`, :func:`read_columns`; :func:`dp.budget.agreement.account_key` checks the data
    file with it before keying its budget, so a missing file gets the same line with or without a ledger).

    :raise InputError: ``cannot read its data file: no such file`` (or ``: it is a directory``); the path, which
        may say what the data is, stays in ``detail`` (this party's own note).
    """
    if os.path.isdir(path):
        raise InputError("cannot read its data file: it is a directory",
                         detail=f"cannot read data file {path}: is a directory")
    if not os.path.isfile(path):
        if os.path.exists(path):  # a fifo, a socket, a device: there, but not a file to read rows from
            raise InputError("cannot read its data file: not a regular file",
                             detail=f"cannot read data file {path}: not a regular file (a fifo, socket or device)")
        raise InputError("cannot read its data file: no such file", detail=f"cannot read data file {path}: no such file")


def party_files(path: str, *, party: int, parties: int) -> list[str]:
    """The files party ``party`` of ``parties`` reads for ``--data path``.

    No ``{pid}`` in ``path``: the one file (the party keeps its share of the rows).  With ``{pid}`` and
    several parties: the party's own file, ``{pid}`` replaced by its index.  With ``{pid}`` and one
    party, that party holds every row (README, "one party holding every row"): the files of index
    0, 1, 2, ... up to the first index with no file (at least index 0, whose absence
    :func:`check_data_file` then names).

    Threat model: with one party nothing is shared; the file list stays at that party.
    """
    if PID not in path:
        return [path]
    if parties > 1:
        return [path.replace(PID, str(party))]
    files = [path.replace(PID, "0")]
    while os.path.exists(candidate := path.replace(PID, str(len(files)))):
        files.append(candidate)
    return files


def one_party_line(path: str, files: Sequence[str]) -> str:
    """The line that says which files one party read for a ``{pid}`` path (:func:`party_files`)."""
    names = [os.path.basename(name) for name in files]
    span = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
    return f"one party: read {span} ({len(names)} file{'s' if len(names) != 1 else ''}) as one party's rows"


def _open_text(path: str) -> TextIO:
    """Open a CSV (``.gz``: gzip) as text; ``utf-8-sig`` drops a byte-order mark (Excel's "CSV UTF-8")."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, "rt", newline="", encoding="utf-8-sig")


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """Read a whole CSV file (optionally ``.gz``) with a header line, as strings.

    For small tables (the embedded data); a party's own data goes through :func:`read_columns`,
    which keeps only the needed columns of its own rows.

    :raise InputError: if the file is missing, a directory, unreadable or empty.
    """
    check_data_file(path)
    try:
        with _open_text(path) as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            rows = [row for row in reader if row]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise _unreadable(path, exc) from None
    if header is None:
        raise _empty(path)
    return [name.strip() for name in header], rows


def _empty(path: str) -> InputError:
    """A file without a header line: the shared line without the path (kept in ``detail``)."""
    return InputError("its data file is empty (a header line is required)",
                      detail=f"data file {path} is empty (a header line is required)")


def _unreadable(path: str, exc: BaseException) -> InputError:
    """A file that fails while reading: the kind of failure shared, the path and the reader's message
    (which may quote a byte of a cell) kept in ``detail``."""
    if isinstance(exc, UnicodeDecodeError):
        kind = "it is not UTF-8 text"
    elif isinstance(exc, csv.Error):
        kind = "it is not well-formed CSV"
    elif isinstance(exc, EOFError) or type(exc).__name__ == "BadGzipFile":
        kind = "it is a truncated or corrupt gzip file"
    elif isinstance(exc, OSError):
        kind = exc.strerror or type(exc).__name__
    else:
        kind = type(exc).__name__
    return InputError(f"cannot read its data file: {kind}", detail=f"cannot read data file {path}: {exc}")


def _positions(header: Sequence[str], columns: Sequence[str], source: str) -> list[int]:
    """Index of every wanted column in the header (the header is the file's schema, not row data)."""
    names = list(header)
    for name in columns:
        if name not in names:  # the path and the header are this party's own: the local note
            raise InputError(f"its data file has no column '{name}'",
                             detail=f"unknown column '{name}' in {source}; columns are: {', '.join(names)}")
        if names.count(name) > 1:  # which one is meant? refused rather than the first taken
            raise InputError(f"its data file has {names.count(name)} columns named '{name}': rename all but one",
                             detail=f"column '{name}' occurs {names.count(name)} times in the header of {source}")
    return [names.index(name) for name in columns]


def _parse_cell(cell: str, column: str, where: str) -> float:
    """One cell as a float, ``nan`` for a missing value (:data:`MISSING_TOKENS`).

    The shared message names the column and the kind of problem only; the line and the cell value
    go into ``detail``, which stays at this party (DESIGN: nothing about a row leaves its party).
    """
    cell = cell.strip()
    if cell.lower() in MISSING_TOKENS:
        return math.nan
    try:
        value = float(cell)
    except ValueError:
        raise InputError(f"column '{column}' has a value that is not a number",
                         detail=f"{where}, column '{column}': {cell!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(f"column '{column}' has a value that is not a finite number",
                         detail=f"{where}, column '{column}': {cell!r} is not a finite number")
    return value


def _textual(columns: Sequence[str], specs: Sequence[ColumnSpec] | None) -> dict[int, ColumnSpec]:
    """Position (in ``columns``) -> spec of every wanted column whose declared categories are strings."""
    by_name = {spec.name: spec for spec in specs or () if spec.textual}
    return {j: by_name[name] for j, name in enumerate(columns) if name in by_name}


def _category_cell(cell: str, spec: ColumnSpec, where: str) -> float:
    """One cell of a string-category column as its code (``nan`` = missing), see :meth:`ColumnSpec.cell_code`.

    :raise InputError: a value outside the list and no ``other``; the shared line names the column
        only, the line and the value go into ``detail`` (local to this party).
    """
    code = spec.cell_code(cell)
    if code is None:
        raise InputError(spec.outside_message(),
                         detail=f"{where}, column '{spec.name}': {cell.strip()!r} is not one of its declared "
                                f"categories {spec.describe_categories()}")
    return code


def _parse_row(row: Sequence[str], positions: Sequence[int], columns: Sequence[str], textual: dict[int, ColumnSpec],
               where: str) -> list[float]:
    """The wanted cells of one record: numbers, or codes for string-category columns."""
    cells = [row[p] if p < len(row) else "" for p in positions]
    return [_category_cell(cell, textual[j], where) if j in textual else _parse_cell(cell, name, where)
            for j, (cell, name) in enumerate(zip(cells, columns))]


def _parse_records(lines: Sequence[str], positions: Sequence[int], columns: Sequence[str], *, party: int,
                   parties: int, record: int, first_line: int, source: str,
                   textual: dict[int, ColumnSpec] | None = None) -> tuple[np.ndarray, int]:
    """Reference path (the ``csv`` module, cell by cell) for lines the vectorized path cannot take.

    :param record: index of the first non-empty record in ``lines`` among all records of the file.
    :param first_line: physical line number of ``lines[0]``.
    :param textual: position -> spec of the string-category columns (their cells become codes).
    :return: this party's rows of the wanted columns (``nan`` = missing) and the next record index.
    """
    kept: list[list[float]] = []
    reader = csv.reader(lines)
    start = first_line
    for row in reader:
        line, start = start, first_line + reader.line_num
        if not row:
            continue
        if (record - party) % parties == 0:
            kept.append(_parse_row(row, positions, columns, textual or {}, f"{source} line {line}"))
        record += 1
    return np.array(kept, dtype=float).reshape(len(kept), len(columns)), record


def _vectorized(own: list[str], positions: Sequence[int], columns: Sequence[str],
                textual: dict[int, ColumnSpec]) -> np.ndarray | None:
    """The wanted cells of ``own`` (no quotes) by ``np.loadtxt``: numbers as floats, string-category
    cells as codes (each distinct cell looked up once); ``None`` if any cell needs the reference path
    (not a finite number, a missing number, a value outside a list, a short line)."""
    numeric = [j for j in range(len(columns)) if j not in textual]
    try:
        if not textual:
            values = np.loadtxt(own, delimiter=",", usecols=list(positions), comments=None, dtype=float, ndmin=2)
        else:
            values = np.empty((len(own), len(columns)))
            if numeric:
                values[:, numeric] = np.loadtxt(own, delimiter=",", usecols=[positions[j] for j in numeric],
                                                comments=None, dtype=float, ndmin=2)
            cells = np.loadtxt(own, delimiter=",", usecols=[positions[j] for j in textual], comments=None,
                               dtype=str, ndmin=2)
            for k, (j, spec) in enumerate(textual.items()):
                distinct, inverse = np.unique(cells[:, k], return_inverse=True)
                codes = [spec.cell_code(str(cell)) for cell in distinct]
                if any(code is None for code in codes):
                    return None
                values[:, j] = np.array(codes, dtype=float)[inverse.reshape(-1)]
    except ValueError:
        return None
    if values.shape != (len(own), len(columns)) or not np.isfinite(values[:, numeric]).all():
        return None
    return values


def _parse_chunk(lines: list[str], positions: Sequence[int], columns: Sequence[str], *, party: int, parties: int,
                 record: int, first_line: int, source: str,
                 textual: dict[int, ColumnSpec] | None = None) -> tuple[np.ndarray, int]:
    """This party's rows of one chunk of lines: vectorized (``np.loadtxt`` on the wanted columns of
    this party's lines only) when the chunk has no quote and every cell is a finite number (or, in a
    string-category column, a category, a missing token or ``other``); otherwise the reference path
    :func:`_parse_records`, which gives the same values and the exact messages."""
    textual = textual or {}
    if any('"' in line for line in lines):
        return _parse_records(lines, positions, columns, party=party, parties=parties, record=record,
                              first_line=first_line, source=source, textual=textual)
    records = [line for line in lines if line.rstrip("\r\n")]
    own = records[(party - record) % parties::parties]
    if not own:
        return np.empty((0, len(columns))), record + len(records)
    values = _vectorized(own, positions, columns, textual)
    if values is None:
        return _parse_records(lines, positions, columns, party=party, parties=parties, record=record,
                              first_line=first_line, source=source, textual=textual)
    return values, record + len(records)


#: text read per chunk by :func:`read_columns` (bounds a party's memory beyond its own rows)
CHUNK_BYTES = 1 << 23


def read_columns(path: str, columns: Sequence[str], *, party: int = 0, parties: int = 1,
                 specs: Sequence[ColumnSpec] | None = None) -> np.ndarray:
    """Read only ``columns`` of this party's rows of a CSV (optionally ``.gz``) with a header line.

    Streams the file in chunks of :data:`CHUNK_BYTES`; of each chunk only this party's rows
    (``party, party + parties, ...`` counted over the non-empty records of the file) and only the
    wanted columns are parsed, vectorized.  Memory: this party's rows of the wanted columns (8 bytes
    per value) plus one chunk.  Quoted cells are read by the ``csv`` module (a quoted cell may span
    lines); a byte-order mark at the start is ignored.

    :param specs: declared columns (matched by name); a column whose categories are strings is read
        as text and each cell becomes its code (:meth:`ColumnSpec.cell_code`); the others are numbers.
    ``{pid}`` in ``path``: the files of :func:`party_files`, all their rows; with one party that is every
    file ``{pid} = 0, 1, ...``, read as one party's rows, and a line on stderr says which.

    :return: ``(rows, len(columns))`` floats, ``nan`` where a cell is missing (:data:`MISSING_TOKENS`).
    :raise InputError: missing file, directory, unreadable or empty file, unknown column, a cell that
        is not a finite number, a string outside its declared categories (the shared message names the
        column only; see :func:`_parse_cell`, :func:`_category_cell`).
    """
    if PID in path:
        files = party_files(path, party=party, parties=parties)
        parts = [read_columns(name, columns, specs=specs) for name in files]
        if parties == 1:  # one party holds every row: say which files that is (at the only party)
            print(one_party_line(path, files), file=sys.stderr, flush=True)
        return parts[0] if len(parts) == 1 else np.vstack(parts)
    check_data_file(path)
    textual = _textual(columns, specs)
    blocks: list[np.ndarray] = []
    try:
        with _open_text(path) as handle:
            header_line = handle.readline()
            if not header_line:
                raise _empty(path)
            header = [name.strip() for name in next(csv.reader([header_line]))]
            positions = _positions(header, columns, path)
            record, line = 0, 2
            while True:
                lines = handle.readlines(CHUNK_BYTES)
                if not lines:
                    break
                quotes = sum(text.count('"') for text in lines)
                while quotes % 2:  # a quoted cell goes on past the chunk: read on to its end
                    more = handle.readline()
                    if not more:
                        break
                    lines.append(more)
                    quotes += more.count('"')
                block, record = _parse_chunk(lines, positions, columns, party=party, parties=parties,
                                             record=record, first_line=line, source=path, textual=textual)
                line += len(lines)
                blocks.append(block)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise _unreadable(path, exc) from None
    if not blocks:
        return np.empty((0, len(columns)))
    return blocks[0] if len(blocks) == 1 else np.vstack(blocks)


def table_values(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str], *, source: str,
                 party: int = 0, parties: int = 1, first_line: int = 2,
                 specs: Sequence[ColumnSpec] | None = None) -> np.ndarray:
    """This party's rows (``party, party + parties, ...``) and the wanted columns of a table of strings,
    parsed like :func:`read_columns` does (``nan`` for a missing cell, string categories as codes).

    :raise InputError: unknown column, a cell that is not a finite number, a string outside its
        declared categories.
    """
    positions = _positions(header, columns, source)
    textual = _textual(columns, specs)
    kept = [_parse_row(rows[offset], positions, columns, textual, f"{source} line {first_line + offset}")
            for offset in range(party, len(rows), parties)]
    return np.array(kept, dtype=float).reshape(len(kept), len(columns))
