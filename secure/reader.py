"""Reading a party's CSV file: only the needed columns of only this party's rows, in blocks (pieces parsed by
several threads; Arrow's streaming reader for a file with quotes; the ``csv`` module as the exact path).  Errors are
:class:`secure.errors.InputError`: the shared line names the column and the kind of problem; the line number, cell
value, path and header stay in ``detail`` at this party.  Threat model: nothing here leaves the party; the shared
lines are what :func:`secure.session.agree_verdict` sends.  Details: docs/reader.md."""
from __future__ import annotations

import codecs
import csv
import ctypes
import gzip
import io
import itertools
import math
import os
import sys
import zlib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Protocol, Sequence, TextIO

import numpy as np

from secure.columns import MISSING_TOKENS, ColumnSpec
from secure.errors import InputError

__all__ = ["read_table", "read_columns", "read_into", "Sink", "table_values", "check_data_file", "party_files", "bounded_lines",
           "CHUNK_BYTES"]

#: the placeholder in ``--data`` that names one file per party (``site{pid}.csv``)
PID = "{pid}"


def check_data_file(path: str) -> None:
    """Refuse a path that is not a readable regular file, with the reading code's one-line message (docs/reader.md).
    :raise InputError: ``cannot read its data file: no such file`` (or ``: it is a directory``); the path, which
        may say what the data is, stays in ``detail`` (this party's own note)."""
    if os.path.isdir(path):
        raise InputError("cannot read its data file: it is a directory",
                         detail=f"cannot read data file {path}: is a directory")
    if not os.path.isfile(path):
        if os.path.exists(path):  # a fifo, a socket, a device: there, but not a file to read rows from
            raise InputError("cannot read its data file: not a regular file",
                             detail=f"cannot read data file {path}: not a regular file (a fifo, socket or device)")
        raise InputError("cannot read its data file: no such file", detail=f"cannot read data file {path}: no such file")


def party_files(path: str, *, party: int, parties: int) -> list[str]:
    """The files party ``party`` of ``parties`` reads for ``--data path`` (``{pid}`` rules: docs/reader.md).
    Threat model: with one party nothing is shared; the file list stays at that party."""
    if PID not in path:
        return [path]
    if parties > 1:
        return [path.replace(PID, str(party))]
    files = [path.replace(PID, "0")]
    while os.path.exists(candidate := path.replace(PID, str(len(files)))):
        files.append(candidate)
    return files


def _open_text(path: str) -> TextIO:
    """Open a CSV (``.gz``: gzip) as text; ``utf-8-sig`` drops a byte-order mark (Excel's "CSV UTF-8")."""
    if path.endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig")
    return open(path, "rt", newline="", encoding="utf-8-sig")


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """Read a whole small CSV file (optionally ``.gz``) with a header line, as strings (the embedded data).
    :raise InputError: if the file is missing, a directory, unreadable or empty."""
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
    elif isinstance(exc, (EOFError, zlib.error)) or type(exc).__name__ == "BadGzipFile":
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
    """One cell as a float, ``nan`` for a missing value (:data:`MISSING_TOKENS`); line and value only in ``detail``."""
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
        only, the line and the value go into ``detail`` (local to this party)."""
    code = spec.cell_code(cell)
    if code is None:
        raise InputError(spec.outside_message(),
                         detail=f"{where}, column '{spec.name}': {cell.strip()!r} is not one of its declared "
                                f"categories {spec.describe_categories()}")
    return code


def _parse_row(row: Sequence[str], positions: Sequence[int], columns: Sequence[str], textual: dict[int, ColumnSpec],
               where: str) -> list[float]:
    cells = [row[p] if p < len(row) else "" for p in positions]
    return [_category_cell(cell, textual[j], where) if j in textual else _parse_cell(cell, name, where)
            for j, (cell, name) in enumerate(zip(cells, columns))]


#: the longest line a data file may have, and the most bytes per Arrow block (why: docs/reader.md)
CHUNK_BYTES = 1 << 20
#: Arrow's block (``ReadOptions.block_size``) when smaller: Arrow reads up to 32 blocks ahead (memory)
_ARROW_BLOCK = 1 << 17
#: rows of the exact path gathered into one array (bounds its per-row Python objects)
_EXACT_ROWS = 1 << 14
#: a non-ASCII block is checked as UTF-8 in slices of this many bytes (bounds the transient text)
_DECODE_BYTES = 1 << 20
#: Arrow's null list: every case of every missing token (:data:`MISSING_TOKENS` is matched case-blind)
_NULL_CELLS = sorted({"".join(letters) for token in MISSING_TOKENS
                      for letters in itertools.product(*({c.lower(), c.upper()} for c in token))})


class _Irregular(Exception):
    """A file (or a block) the Arrow path does not take as it is: the exact path reads it."""


def _too_long(path: str, limit: int) -> InputError:
    """A line longer than a block: refused rather than held (issue: one 1 GiB line in an unused column)."""
    return InputError(f"its data file has a line longer than {limit} bytes; no line may be longer",
                      detail=f"{path}: a line (or a quoted cell with line breaks) longer than {limit} bytes; "
                             f"the reader holds at most a block of {limit} bytes of the file")


def bounded_lines(handle: TextIO, path: str) -> Iterator[str]:
    """The lines of ``handle``, refusing (before holding it) one longer than :data:`CHUNK_BYTES`
    (for any reading of a party's file line by line: ``csv.reader(bounded_lines(handle, path))``).
    :raise InputError: ``its data file has a line longer than N bytes; no line may be longer``."""
    limit = CHUNK_BYTES
    while line := handle.readline(limit + 1):
        if len(line) > limit:
            raise _too_long(path, limit)
        yield line


def _read_header(path: str, columns: Sequence[str]) -> tuple[list[str], list[int]]:
    with _open_text(path) as handle:
        header_line = next(bounded_lines(handle, path), "")
    if not header_line:
        raise _empty(path)
    header = [name.strip() for name in next(csv.reader([header_line]), [])]
    return header, _positions(header, columns, path)


class _CheckedBytes:
    """The bytes of a data file (``.gz``: decompressed) as Arrow reads them, checked as UTF-8 and for a line
    longer than ``limit`` bytes on the way (docs/reader.md)."""

    closed = False

    def __init__(self, path: str, limit: int) -> None:
        self._handle: BinaryIO | gzip.GzipFile = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._path, self._limit, self._run = path, limit, 0  # _run: bytes since the last line break
        self.failure: BaseException | None = None

    def _check_lines(self, chunk: bytes) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self._run += len(chunk)
        else:  # a line inside the chunk is at most the chunk (Arrow asks for a block at a time)
            if self._run + first + 1 > self._limit:
                raise _too_long(self._path, self._limit)
            self._run = len(chunk) - 1 - chunk.rfind(b"\n")
        if self._run > self._limit:
            raise _too_long(self._path, self._limit)

    def read(self, size: int = -1) -> bytes:
        try:
            chunk = self._handle.read(size)
            self._check_lines(chunk)
            if not chunk:
                self._decoder.decode(b"", final=True)  # a character cut by the end of the file
            elif not chunk.isascii() or self._decoder.getstate()[0]:
                view = memoryview(chunk)
                for start in range(0, len(chunk), _DECODE_BYTES):
                    self._decoder.decode(view[start:start + _DECODE_BYTES])
            return chunk
        except Exception as exc:  # Arrow re-raises it (an InputError too); kept in case it comes back wrapped
            self.failure = exc
            raise

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True
        self._handle.close()


def _numbers(column: Any) -> tuple[np.ndarray, np.ndarray]:
    """A ``float64`` column as an array (``nan`` where the cell was missing) and where it holds a number the exact
    path must judge (``inf``, or a ``nan`` that is no missing token)."""
    values = column.to_numpy(zero_copy_only=False)
    odd = ~np.isfinite(values)
    if column.null_count and odd.any():
        odd &= ~column.is_null().to_numpy(zero_copy_only=False)
    return values, odd


def _codes(column: Any, spec: ColumnSpec) -> tuple[np.ndarray, np.ndarray]:
    """A dictionary-encoded string column as codes (``nan`` = missing), each distinct string of the block looked up
    once (:meth:`ColumnSpec.cell_code`), and where it holds a string outside the declared categories (no ``other``).
    :raise _Irregular: an empty cell (the exact path decides what it means)."""
    if column.null_count:
        raise _Irregular
    found = [spec.cell_code(text) for text in column.dictionary.to_pylist()]
    codes = np.array([math.nan if code is None else code for code in found], dtype=float)
    outside = np.array([code is None for code in found], dtype=bool)
    indices = column.indices.to_numpy(zero_copy_only=False)
    return codes[indices], outside[indices] if outside.size else np.zeros(len(indices), dtype=bool)


def _converted(batch: Any, wanted: Sequence[str], textual: dict[int, ColumnSpec]) -> tuple[np.ndarray, np.ndarray]:
    """An Arrow batch's wanted columns as a ``(rows, columns)`` float array (codes for string categories) and the rows
    holding a cell the exact path must judge (:func:`_numbers`, :func:`_codes`)."""
    values, odd = np.empty((batch.num_rows, len(wanted))), np.zeros(batch.num_rows, dtype=bool)
    for j, name in enumerate(wanted):
        values[:, j], cells = _codes(batch.column(name), textual[j]) if j in textual else _numbers(batch.column(name))
        odd |= cells
    return values, odd


def _arrow_options(header: Sequence[str], positions: Sequence[int], textual: dict[int, ColumnSpec],
                   **read: int) -> tuple[Any, Any, list[str]]:
    """Arrow's read options (``read``, no thread, the columns named ``c<position>``: the header's own names may repeat
    or be blank), its convert options (only the wanted columns, their types, the missing tokens) and the wanted
    columns' names."""
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    wanted = [f"c{position}" for position in positions]
    types = {name: pa.dictionary(pa.int32(), pa.string()) if j in textual else pa.float64()
             for j, name in enumerate(wanted)}
    names = [f"c{index}" for index in range(len(header))]
    return (arrow_csv.ReadOptions(column_names=names, use_threads=False, **read),
            arrow_csv.ConvertOptions(include_columns=list(dict.fromkeys(wanted)), column_types=types,
                                     null_values=_NULL_CELLS, strings_can_be_null=False), wanted)


def _keep(values: np.ndarray, odd: np.ndarray, record: int, *, party: int, parties: int, sink: Sink) -> int:
    """Put this party's rows of a converted batch (:func:`_converted`; the file's records ``record, record + 1, ...``)
    into ``sink``; the number of the record after the batch.
    :raise _Irregular: one of this party's rows holds a cell the exact path must judge."""
    start = (party - record) % parties
    if start < len(values):
        if odd[start::parties].any():
            raise _Irregular
        sink.add(values if parties == 1 else np.ascontiguousarray(values[start::parties]))
    return record + len(values)


class _Quoted(Exception):
    """No cut at line feeds: a quote in the body (a quoted cell may hold a line break) or lines ended by lone CRs."""


def _pieces(handle: io.BufferedIOBase, path: str, limit: int) -> Iterator[tuple[bytearray, int]]:
    """The rest of ``handle`` as ``(buffer, end)``: ``buffer[:end]`` is about :data:`_PIECE_BYTES` bytes ending at a
    line end (the last piece: at the end of the file), read straight into a fresh buffer after the unfinished line of
    the piece before.  :raise InputError: a line longer than ``limit`` bytes."""
    carry, size = b"", min(limit, _PIECE_BYTES)
    while True:
        buffer = bytearray(len(carry) + size)
        buffer[:len(carry)] = carry
        filled = len(carry) + (handle.readinto(memoryview(buffer)[len(carry):]) or 0)
        if filled == len(carry):
            break
        cut = buffer.rfind(b"\n", 0, filled) + 1
        if cut == 0 and filled > limit or buffer.find(b"\n", 0, filled) + 1 > limit:  # later lines are in the read
            raise _too_long(path, limit)
        carry = bytes(buffer[cut:filled])
        if cut:
            yield buffer, cut
    if carry:
        yield bytearray(carry), len(carry)


def _checked(buffer: bytearray, end: int) -> memoryview:
    """``buffer[:end]`` (no copy) if it holds no quote and is UTF-8 (:class:`_Quoted`, ``UnicodeDecodeError``
    otherwise)."""
    if buffer.find(b'"', 0, end) >= 0:
        raise _Quoted
    piece = memoryview(buffer)[:end]
    if not buffer.isascii():
        str(piece, "utf-8")
    return piece


#: threads parsing a file's pieces at once (Arrow's parser releases the GIL)
_PARSERS = max(1, min(4, os.cpu_count() or 1))
#: bytes read per piece (a line may be longer, up to :data:`CHUNK_BYTES`): 128 KiB pieces raise a party's peak by
#: 8.6 MiB where 384 KiB pieces raised it by 14.5 MiB, at about 1.1x their CPU time (docs/reader.md)
_PIECE_BYTES = 1 << 17


def _in_order(pool: ThreadPoolExecutor, parse: Callable[[bytearray, int], list[Any]],
              pieces: Iterable[tuple[bytearray, int]]) -> Iterator[Any]:
    """``parse``'s results for ``pieces``, in their order, with at most :data:`_PARSERS` pieces in flight."""
    parsing: deque[Any] = deque()
    for buffer, end in pieces:
        parsing.append(pool.submit(parse, buffer, end))
        if len(parsing) >= _PARSERS:
            yield from parsing.popleft().result()
    while parsing:
        yield from parsing.popleft().result()


def _read_pieces(path: str, header: Sequence[str], positions: Sequence[int], *, party: int, parties: int,
                 textual: dict[int, ColumnSpec], sink: Sink) -> None:
    """This party's rows of the wanted columns into ``sink``: the file cut at line ends into pieces of
    :data:`_PIECE_BYTES` that :data:`_PARSERS` threads parse at once (``pyarrow.csv.read_csv`` on each), taken in
    order.  Raises ``_Quoted`` for a file with a quote after its header (the streaming path reads it),
    ``_Irregular`` when the file needs the exact path, :class:`InputError` for a line longer than :data:`CHUNK_BYTES`.
    """
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    limit = CHUNK_BYTES
    read, convert, wanted = _arrow_options(header, positions, textual, block_size=limit + _PIECE_BYTES)

    def parse(buffer: bytearray, end: int) -> list[tuple[np.ndarray, np.ndarray]]:  # in a parser thread
        # the system allocator: Arrow's default (mimalloc) keeps freed blocks, about 14 MB more of a party's peak
        table = arrow_csv.read_csv(pa.py_buffer(_checked(buffer, end)), read_options=read, convert_options=convert,
                                   memory_pool=pa.system_memory_pool())
        return [_converted(batch, wanted, textual) for batch in table.to_batches()]

    pool = ThreadPoolExecutor(_PARSERS)
    try:
        with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as handle:
            first = handle.readline(limit + 1)
            if len(first) > limit:
                raise _too_long(path, limit)
            if first.count(b'"') % 2 or b"\r" in first.rstrip(b"\r\n"):  # a quoted line break, or lone CRs end lines
                raise _Quoted
            record = 0
            for values, odd in _in_order(pool, parse, _pieces(handle, path, limit)):
                record = _keep(values, odd, record, party=party, parties=parties, sink=sink)
    except pa.ArrowException:
        raise _Irregular from None
    finally:
        pool.shutdown(cancel_futures=True)
        _trim_heap()


def _trim_heap() -> None:
    """Give the pieces' freed memory back to the system (glibc's ``malloc_trim``; elsewhere nothing): the parser
    threads' heaps would otherwise keep it, and a party's peak during the protocol would start from the reading's."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library by that call (Windows), or no malloc_trim (macOS)
        return
    trim(0)


def _read_arrow(path: str, header: Sequence[str], positions: Sequence[int], *,
                party: int, parties: int, textual: dict[int, ColumnSpec], sink: Sink) -> None:
    """This party's rows of the wanted columns, block by block, by Arrow's streaming reader, into ``sink``: for a file
    with quotes (a cell may hold a line break).  Raises ``_Irregular`` when the file needs the exact path,
    :class:`InputError` for a line longer than :data:`CHUNK_BYTES`."""
    import pyarrow as pa
    import pyarrow.csv as arrow_csv

    limit = CHUNK_BYTES
    block_size = min(limit, _ARROW_BLOCK)
    read, convert, wanted = _arrow_options(header, positions, textual, block_size=block_size, skip_rows=1)
    stream, batches = _CheckedBytes(path, limit), None
    try:
        # no read-ahead thread (``use_threads=False``): an Arrow thread still reading a Python file when a party exits
        # after an error aborts the process ("terminate called without an active exception", apache/arrow#34314)
        batches = arrow_csv.open_csv(pa.PythonFile(stream, mode="r"), read_options=read, convert_options=convert,
                                     parse_options=arrow_csv.ParseOptions(newlines_in_values=True),
                                     memory_pool=pa.system_memory_pool())
        record = 0
        for batch in batches:
            record = _keep(*_converted(batch, wanted, textual), record, party=party, parties=parties, sink=sink)
    except pa.ArrowException as exc:
        if stream.failure is not None:
            raise stream.failure from None
        if "straddl" in str(exc) and block_size == limit:  # Arrow's words for a row that does not fit in a block
            raise _too_long(path, limit) from None
        raise _Irregular from None
    finally:
        if batches is not None:
            batches.close()
        stream.close()


def _read_exact(path: str, positions: Sequence[int], columns: Sequence[str], *, party: int, parties: int,
                textual: dict[int, ColumnSpec], sink: Sink) -> None:
    """This party's rows of the wanted columns by the ``csv`` module, cell by cell, into ``sink``: the exact
    path (docs/reader.md), refusing a line longer than :data:`CHUNK_BYTES`."""
    kept: list[list[float]] = []
    with _open_text(path) as handle:
        lines = bounded_lines(handle, path)
        next(lines, None)  # the header
        reader = csv.reader(lines)
        record, start = 0, 2
        for row in reader:
            line, start = start, 2 + reader.line_num
            if not row:
                continue
            if (record - party) % parties == 0:
                kept.append(_parse_row(row, positions, columns, textual, f"{path} line {line}"))
                if len(kept) == _EXACT_ROWS:
                    sink.add(np.array(kept, dtype=float))
                    kept = []
            record += 1
    if kept:
        sink.add(np.array(kept, dtype=float))


class Sink(Protocol):
    """Where the reader puts this party's rows, block by block (``(rows, columns)`` floats, ``nan`` = missing):
    ``mark()`` before a file, ``restore(mark)`` when its Arrow reading is dropped for the exact path."""

    def add(self, block: np.ndarray) -> None: ...

    def mark(self) -> Any: ...

    def restore(self, mark: Any) -> None: ...


class _Rows:
    """The rows in one array grown in place (``ndarray.resize``: the allocator extends it, no second copy)."""

    def __init__(self, width: int) -> None:
        self.rows, self.count = np.empty((0, width)), 0

    def add(self, block: np.ndarray) -> None:
        end = self.count + len(block)
        if end > len(self.rows):  # grow by half (amortized), the new rows untouched until written
            self.rows.resize((max(end, len(self.rows) * 3 // 2), self.rows.shape[1]), refcheck=False)
        self.rows[self.count:end] = block
        self.count = end

    def mark(self) -> int:
        return self.count

    def restore(self, mark: int) -> None:
        self.count = mark


def read_columns(path: str, columns: Sequence[str], *, party: int = 0, parties: int = 1,
                 specs: Sequence[ColumnSpec] | None = None) -> np.ndarray:
    """Read only ``columns`` of this party's rows of a CSV (optionally ``.gz``) into an array (:func:`read_into`).
    :return: ``(rows, len(columns))`` floats, ``nan`` where a cell is missing (:data:`MISSING_TOKENS`).
    :raise InputError: see :func:`read_into`."""
    rows = _Rows(len(columns))
    read_into(rows, path, columns, party=party, parties=parties, specs=specs)
    rows.rows.resize((rows.count, len(columns)), refcheck=False)
    return rows.rows


def read_into(sink: Sink, path: str, columns: Sequence[str], *, party: int = 0, parties: int = 1,
              specs: Sequence[ColumnSpec] | None = None) -> None:
    """Read only ``columns`` of this party's rows of a CSV (optionally ``.gz``) into ``sink``, block by block.
    ``specs``: declared columns by name; string categories become codes (:meth:`ColumnSpec.cell_code`).
    :raise InputError: missing file, directory, unreadable or empty file, unknown column, a line longer
        than :data:`CHUNK_BYTES`, a cell that is not a finite number, a string outside its declared
        categories (the shared message names the column only).  Details: docs/reader.md."""
    if PID in path:
        files = party_files(path, party=party, parties=parties)
        for name in files:
            read_into(sink, name, columns, specs=specs)
        if parties == 1:  # one party holds every row: say which files that is (at the only party)
            names = [os.path.basename(name) for name in files]
            span = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]}"
            print(f"one party: read {span} ({len(names)} file{'s' if len(names) != 1 else ''}) as one party's rows",
                  file=sys.stderr, flush=True)
        return
    check_data_file(path)
    textual = _textual(columns, specs)
    try:
        header, positions = _read_header(path, columns)
        mark = sink.mark()
        try:
            try:
                return _read_pieces(path, header, positions, party=party, parties=parties, textual=textual, sink=sink)
            except _Quoted:
                sink.restore(mark)
            return _read_arrow(path, header, positions, party=party, parties=parties, textual=textual, sink=sink)
        except _Irregular:
            sink.restore(mark)
        _read_exact(path, positions, columns, party=party, parties=parties, textual=textual, sink=sink)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError, zlib.error) as exc:
        raise _unreadable(path, exc) from None


def table_values(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str], *, source: str,
                 party: int = 0, parties: int = 1, first_line: int = 2,
                 specs: Sequence[ColumnSpec] | None = None) -> np.ndarray:
    """This party's rows (``party, party + parties, ...``) and the wanted columns of a table of strings, parsed like
    :func:`read_columns`; InputError: unknown column, a cell not a finite number, a string outside its categories."""
    positions = _positions(header, columns, source)
    textual = _textual(columns, specs)
    kept = [_parse_row(rows[offset], positions, columns, textual, f"{source} line {first_line + offset}")
            for offset in range(party, len(rows), parties)]
    return np.array(kept, dtype=float).reshape(len(kept), len(columns))
