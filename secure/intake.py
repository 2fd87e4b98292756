"""Party intake: a party reads its own rows, validates them, converts them to fixed point, shares them.

Who holds what (DESIGN): party ``i`` of ``m`` reads ``--data PATH``; if the path contains ``{pid}``
each party reads its own file ``PATH.format(pid=i)``, otherwise all parties are pointed at one file
and party ``i`` keeps rows ``i, i+m, i+2m, ...`` (a convenient local simulation of a partition).
Rows enter the computation only through ``mpc.input``; the number of rows of each party is public.

Validation, one line per problem, raised as :class:`secure.session.InputError` (exit 2 at every
party once the verdicts are shared):

- a missing or unreadable file, an unknown column, a cell that is not a number;
- a missing value (empty, ``NA``, ``NaN``, ``?``): :class:`MissingPolicy` -- refused by default,
  or filled with a declared public fill value; never dropped (n would depend on the data);
- a label outside its allowed set (AUC labels must be 0/1, VUS classes 0/1/2);
- a value outside the declared domain is *clipped* to it (locally by default; with secure clipping
  the party shares the raw value and :mod:`secure.clipping` clips inside MPC).  The count of clipped
  values stays at the party (:class:`FixedPointRows`), like every other count about its rows.

What is shared when a check fails is one line naming the column and the kind of problem; the line
number, the cell value and any count go into ``InputError.detail``, shown at the failing party only.

Fixed point: a column with declared domain ``[lower, upper]`` and ``precision`` fractional bits is
shared as the integer ``round((x - lower) * 2**precision)`` in ``[0, width]`` with
``width = round((upper - lower) * 2**precision)``; the offset makes every value non-negative and
the kernels only use differences, so nothing is lost.  Resolution is ``2**-precision``.
"""
from __future__ import annotations

import csv
import gzip
import math
import os
from dataclasses import dataclass, field
from typing import Any, Sequence, TextIO

import numpy as np

from secure.errors import InputError

__all__ = ["ColumnSpec", "PartyRows", "MissingPolicy", "read_table", "read_columns", "rows_from_table", "party_rows",
           "apply_missing", "to_fixed_point", "exchange_counts", "share_rows", "MISSING_TOKENS", "MISSING_POLICIES"]

MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})
MISSING_POLICIES = ("refuse", "fill")


@dataclass(frozen=True)
class ColumnSpec:
    """A column's declared public domain and fixed-point precision.

    :param name: column name in the CSV header.
    :param lower: smallest value of the declared domain (public, chosen without looking at data).
    :param upper: largest value of the declared domain.
    :param precision: number of fractional bits of the fixed-point representation.
    :param categories: if given, the only allowed values (a label column); they are not clipped.
    """

    name: str
    lower: float
    upper: float
    precision: int = 0
    categories: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)):
            raise ValueError(f"domain of column '{self.name}' must be finite, got [{self.lower}, {self.upper}]")
        if self.upper <= self.lower:
            raise ValueError(f"domain of column '{self.name}' must have lower < upper, "
                             f"got [{self.lower}, {self.upper}]")
        if not (0 <= self.precision <= 52):
            raise ValueError(f"precision must lie in [0, 52] bits, got {self.precision}")

    @property
    def unit(self) -> float:
        """Value of one fixed-point step, ``2**-precision``."""
        return 2.0 ** -self.precision

    @property
    def width(self) -> int:
        """Largest fixed-point integer of the domain (the smallest is 0)."""
        return int(round((self.upper - self.lower) * 2 ** self.precision))

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Fixed-point integers ``round((x - lower) * 2**precision)`` (no clipping)."""
        return np.rint((np.asarray(values, dtype=float) - self.lower) * 2 ** self.precision).astype(np.int64)

    def decode(self, integers: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`encode` up to rounding: ``lower + k * 2**-precision``."""
        return self.lower + np.asarray(integers, dtype=float) * self.unit


@dataclass
class PartyRows:
    """The rows one party holds, as floats, after the missing-value policy.

    ``filled`` counts the cells this party filled: it stays at this party (print it locally if at
    all), it is never shared or written to the record.
    """

    values: np.ndarray
    source: str
    filled: int = 0
    policy: str = "refuse"


@dataclass
class FixedPointRows:
    """A party's rows as fixed-point integers, with the count of values clipped per column.

    ``clipped`` is local to this party: never shared, never written to the record (DESIGN).
    """

    integers: np.ndarray
    clipped: dict[str, int] = field(default_factory=dict)


def _check_path(path: str) -> None:
    """Refuse a path that is not a readable regular file, with a one-line message."""
    if os.path.isdir(path):
        raise InputError(f"cannot read data file {path}: is a directory")
    if not os.path.isfile(path):
        raise InputError(f"cannot read data file {path}: no such file")


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
    _check_path(path)
    try:
        with _open_text(path) as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            rows = [row for row in reader if row]
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise InputError(f"cannot read data file {path}: {exc}") from None
    if header is None:
        raise InputError(f"data file {path} is empty (a header line is required)")
    return [name.strip() for name in header], rows


def _positions(header: Sequence[str], columns: Sequence[str], source: str) -> list[int]:
    """Index of every wanted column in the header (the header is the file's schema, not row data)."""
    names = list(header)
    for name in columns:
        if name not in names:
            raise InputError(f"unknown column '{name}' in {source}; columns are: {', '.join(names)}")
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


def _parse_records(lines: Sequence[str], positions: Sequence[int], columns: Sequence[str], *, party: int,
                   parties: int, record: int, first_line: int, source: str) -> tuple[np.ndarray, int]:
    """Reference path (the ``csv`` module, cell by cell) for lines the vectorized path cannot take.

    :param record: index of the first non-empty record in ``lines`` among all records of the file.
    :param first_line: physical line number of ``lines[0]``.
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
            where = f"{source} line {line}"
            kept.append([_parse_cell(row[p] if p < len(row) else "", name, where)
                         for p, name in zip(positions, columns)])
        record += 1
    return np.array(kept, dtype=float).reshape(len(kept), len(columns)), record


def _parse_chunk(lines: list[str], positions: Sequence[int], columns: Sequence[str], *, party: int, parties: int,
                 record: int, first_line: int, source: str) -> tuple[np.ndarray, int]:
    """This party's rows of one chunk of lines: vectorized (``np.loadtxt`` on the wanted columns of
    this party's lines only) when the chunk has no quote and every cell is a finite number; otherwise
    the reference path :func:`_parse_records`, which gives the same values and the exact messages."""
    if any('"' in line for line in lines):
        return _parse_records(lines, positions, columns, party=party, parties=parties, record=record,
                              first_line=first_line, source=source)
    records = [line for line in lines if line.rstrip("\r\n")]
    own = records[(party - record) % parties::parties]
    if not own:
        return np.empty((0, len(columns))), record + len(records)
    try:
        values = np.loadtxt(own, delimiter=",", usecols=list(positions), comments=None, dtype=float, ndmin=2)
    except ValueError:
        values = None
    if values is None or values.shape != (len(own), len(columns)) or not np.isfinite(values).all():
        return _parse_records(lines, positions, columns, party=party, parties=parties, record=record,
                              first_line=first_line, source=source)
    return values, record + len(records)


#: text read per chunk by :func:`read_columns` (bounds a party's memory beyond its own rows)
CHUNK_BYTES = 1 << 23


def read_columns(path: str, columns: Sequence[str], *, party: int = 0, parties: int = 1) -> np.ndarray:
    """Read only ``columns`` of this party's rows of a CSV (optionally ``.gz``) with a header line.

    Streams the file in chunks of :data:`CHUNK_BYTES`; of each chunk only this party's rows
    (``party, party + parties, ...`` counted over the non-empty records of the file) and only the
    wanted columns are parsed, vectorized.  Memory: this party's rows of the wanted columns (8 bytes
    per value) plus one chunk.  Quoted cells are read by the ``csv`` module (a quoted cell may span
    lines); a byte-order mark at the start is ignored.

    :return: ``(rows, len(columns))`` floats, ``nan`` where a cell is missing (:data:`MISSING_TOKENS`).
    :raise InputError: missing file, directory, unreadable or empty file, unknown column, a cell that
        is not a finite number (the shared message names the column only; see :func:`_parse_cell`).
    """
    _check_path(path)
    blocks: list[np.ndarray] = []
    try:
        with _open_text(path) as handle:
            header_line = handle.readline()
            if not header_line:
                raise InputError(f"data file {path} is empty (a header line is required)")
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
                                             record=record, first_line=line, source=path)
                line += len(lines)
                blocks.append(block)
    except (OSError, UnicodeDecodeError, csv.Error, EOFError) as exc:
        raise InputError(f"cannot read data file {path}: {exc}") from None
    if not blocks:
        return np.empty((0, len(columns)))
    return blocks[0] if len(blocks) == 1 else np.vstack(blocks)


@dataclass(frozen=True)
class MissingPolicy:
    """What a party does with a missing cell (DESIGN: the policy must keep the DP guarantee).

    - ``refuse`` (the default for a user's data): any missing cell stops the run (exit 2 at every
      party); the shared line names the column only, never a count, a line or a value.
    - ``fill``: a missing cell takes its column's declared public fill value (chosen without looking
      at the data, inside the declared domain).  n stays the number of rows, which is public, and a
      row with a missing cell is an ordinary row of the domain, so replace-one DP holds unchanged.

    Dropping rows is not offered: it makes n depend on the data, and the drop count would have to
    be noised and accounted for.

    :param mode: ``refuse`` or ``fill``.
    :param fills: column -> declared fill value (``fill`` only; every column read needs one).
    """

    mode: str = "refuse"
    fills: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MISSING_POLICIES:
            raise ValueError(f"missing-value policy must be one of {', '.join(MISSING_POLICIES)}, got '{self.mode}'")
        if self.mode == "refuse" and self.fills:
            raise ValueError("fill values are given but the missing-value policy is refuse (use fill)")

    def fill_value(self, column: str) -> float | None:
        """The declared fill value of ``column`` (``None`` if none)."""
        return dict(self.fills).get(column)

    def check(self, specs: Sequence[ColumnSpec]) -> None:
        """With ``fill``: every column has a fill value inside its declared domain (or category list).

        :raise ValueError: with a one-line message (public: it is about declarations, not data).
        """
        if self.mode != "fill":
            return
        declared = dict(self.fills)
        names = [spec.name for spec in specs]
        unknown = [name for name in declared if name not in names]
        if unknown:
            raise ValueError(f"fill value for column '{unknown[0]}', which is not one of the columns "
                             f"{', '.join(names)}")
        for spec in specs:
            if spec.name not in declared:
                raise ValueError(f"missing-value policy fill needs a declared fill value for column "
                                 f"'{spec.name}' (--fill {spec.name}=V)")
            value = declared[spec.name]
            if spec.categories is not None:
                if value not in spec.categories:
                    allowed = "/".join(str(c) for c in spec.categories)
                    raise ValueError(f"fill value {value:g} for column '{spec.name}' is not one of its labels {allowed}")
            elif not (math.isfinite(value) and spec.lower <= value <= spec.upper):
                raise ValueError(f"fill value {value:g} for column '{spec.name}' lies outside its declared domain "
                                 f"[{spec.lower:g}, {spec.upper:g}]")


def apply_missing(values: np.ndarray, columns: Sequence[str], policy: MissingPolicy, *, source: str) -> PartyRows:
    """Apply the missing-value policy to a party's raw rows (``nan`` = missing).

    :raise InputError: ``refuse`` and a missing cell; ``fill`` without a fill value for a column that
        has a missing cell.  The shared message names the column only; the count stays in ``detail``.
    """
    values = np.asarray(values, dtype=float).reshape(-1, len(columns))
    missing = np.isnan(values)
    filled = int(missing.sum())
    if filled:
        values = values.copy()
        for j, name in enumerate(columns):
            if not missing[:, j].any():
                continue
            fill = policy.fill_value(name) if policy.mode == "fill" else None
            if fill is None:
                first = int(np.argmax(missing[:, j]))
                raise InputError(f"column '{name}' has a missing value (use --missing fill with a declared "
                                 f"--fill, or clean the file)",
                                 detail=f"{source}: {int(missing[:, j].sum())} missing value(s) in column '{name}', "
                                        f"the first in this party's row {first + 1}")
            values[missing[:, j], j] = fill
    return PartyRows(values=values, source=source, filled=filled, policy=policy.mode)


def rows_from_table(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str], *,
                    source: str, party: int = 0, parties: int = 1, first_line: int = 2,
                    missing: MissingPolicy = MissingPolicy()) -> PartyRows:
    """Select this party's rows and the wanted columns of a table of strings, parse the numbers,
    apply the missing-value policy.

    :param header: column names.
    :param rows: all data rows of the table (strings, no empty rows).
    :param columns: the columns the statistic needs, in kernel order.
    :param source: name of the table for messages (a path).
    :param party: this party's index; it keeps rows ``party, party+parties, ...``.
    :param parties: the number of parties sharing this table (1 for a per-party file).
    :param first_line: line number of ``rows[0]`` in the file, for the local detail of a message.
    :param missing: the missing-value policy (default: refuse).
    :raise InputError: unknown column, a cell that is not a finite number, a missing value refused.
    """
    positions = _positions(header, columns, source)
    kept = [[_parse_cell(rows[offset][p] if p < len(rows[offset]) else "", name, f"{source} line {first_line + offset}")
             for p, name in zip(positions, columns)]
            for offset in range(party, len(rows), parties)]
    values = np.array(kept, dtype=float).reshape(len(kept), len(columns))
    return apply_missing(values, columns, missing, source=source)


def party_rows(path: str, columns: Sequence[str], *, party: int, parties: int,
               missing: MissingPolicy = MissingPolicy()) -> PartyRows:
    """Read this party's rows from ``path`` (``{pid}`` in the path: one file per party, all its rows)
    with :func:`read_columns`, and apply the missing-value policy.

    :raise InputError: see :func:`read_columns` and :func:`apply_missing`.
    """
    if "{pid}" in path:
        own = path.replace("{pid}", str(party))
        return apply_missing(read_columns(own, columns), columns, missing, source=own)
    return apply_missing(read_columns(path, columns, party=party, parties=parties), columns, missing, source=path)


def to_fixed_point(values: np.ndarray, specs: Sequence[ColumnSpec], *, clip: bool = True) -> FixedPointRows:
    """Convert a party's rows to fixed-point integers, clipping to the declared domains.

    :param values: ``(rows, columns)`` floats in the order of ``specs``.
    :param specs: declared domain and precision per column.
    :param clip: clip out-of-domain values here (local clipping); with ``False`` the raw values are
        encoded and must be clipped inside MPC (:func:`secure.clipping.clip_secure`).
    :raise InputError: a label column holding a value outside its allowed categories.
    """
    values = np.asarray(values, dtype=float).reshape(-1, len(specs))
    integers = np.empty(values.shape, dtype=np.int64)
    clipped: dict[str, int] = {}
    for j, spec in enumerate(specs):
        column = values[:, j]
        if spec.categories is not None:
            bad = ~np.isin(column, np.array(spec.categories, dtype=float))
            if bad.any():
                allowed = "/".join(str(c) for c in spec.categories)
                raise InputError(f"column '{spec.name}' must hold labels {allowed}, found another value",
                                 detail=f"column '{spec.name}': {int(bad.sum())} value(s) outside {allowed}, "
                                        f"the first {column[bad][0]:g}")
        outside = (column < spec.lower) | (column > spec.upper)
        clipped[spec.name] = int(outside.sum())
        if clip:
            column = np.clip(column, spec.lower, spec.upper)
        integers[:, j] = spec.encode(column)
    return FixedPointRows(integers=integers, clipped=clipped)


async def exchange_counts(local_rows: int) -> list[int]:
    """Make every party's row count public (DESIGN: counts per party are public)."""
    from mpyc.runtime import mpc

    return list(await mpc.transfer(int(local_rows)))


def share_rows(sectype: Any, local: np.ndarray, counts: Sequence[int]) -> Any:
    """Secret-share every party's fixed-point rows; return the stacked secure array.

    Each party's rows enter through ``mpc.input`` with that party as the only sender, in blocks of
    :data:`SHARE_ROWS` rows; row ``r`` of party ``i`` lands at position ``sum(counts[:i]) + r`` of
    the result.  Memory per party: the shares of all rows (one field element per value) plus one
    block's share vectors at the sender.

    :param sectype: the MPyC secure integer type (``mpc.SecInt(l)``).
    :param local: this party's ``(rows, columns)`` fixed-point integers.
    :param counts: every party's row count, from :func:`exchange_counts`.
    :return: secure array of shape ``(sum(counts), columns)``.
    """
    from mpyc.runtime import mpc

    width = int(local.shape[1])
    blocks = []
    for sender, count in enumerate(counts):
        for start in range(0, count, SHARE_ROWS):  # by blocks: the sender's shares of one block at a time
            stop = min(count, start + SHARE_ROWS)
            block = local[start:stop] if sender == mpc.pid else np.zeros((stop - start, width), dtype=np.int64)
            blocks.append(mpc.input(sectype.array(block), senders=sender))
    if not blocks:
        raise InputError("no rows at any party")
    return blocks[0] if len(blocks) == 1 else mpc.np_vstack(blocks)


#: rows secret-shared per ``mpc.input`` by :func:`share_rows` (bounds the sender's transient memory:
#: the ``m`` share vectors of one block, not of all its rows)
SHARE_ROWS = 1 << 16
