"""Party intake: a party reads its own rows, validates them, converts them to fixed point, shares them.

Who holds what (DESIGN): party ``i`` of ``m`` reads ``--data PATH``; if the path contains ``{pid}``
each party reads its own file ``PATH.format(pid=i)``, otherwise all parties are pointed at one file
and party ``i`` keeps rows ``i, i+m, i+2m, ...`` (a convenient local simulation of a partition).
Rows enter the computation only through ``mpc.input``; the number of rows of each party is public.

Validation, one line per problem, raised as :class:`secure.runtime.InputError` (exit 2 at every
party once the verdicts are shared):

- a missing or unreadable file, an unknown column, a cell that is not a number;
- a missing value (empty, ``NA``, ``NaN``, ``?``): **policy: the row is dropped and the count is
  reported** (the number of dropped rows is public, like the row counts);
- a label outside its allowed set (AUC labels must be 0/1, VUS classes 0/1/2);
- a value outside the declared domain is *clipped* to it and counted (locally by default; with
  secure clipping the party shares the raw value and :mod:`secure.clipping` clips inside MPC).

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
from typing import Any, Sequence

import numpy as np

from secure.runtime import InputError

__all__ = ["ColumnSpec", "PartyRows", "read_table", "rows_from_table", "party_rows", "to_fixed_point",
           "exchange_counts", "share_rows", "MISSING_TOKENS"]

MISSING_TOKENS = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})


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
    """The rows one party holds, as floats, after dropping rows with missing values."""

    values: np.ndarray
    dropped_missing: int
    source: str


@dataclass
class FixedPointRows:
    """A party's rows as fixed-point integers, with the count of values clipped per column."""

    integers: np.ndarray
    clipped: dict[str, int] = field(default_factory=dict)


def read_table(path: str) -> tuple[list[str], list[list[str]]]:
    """Read a CSV file (optionally ``.gz``) with a header line.

    :raise InputError: if the file is missing, unreadable or empty.
    """
    if not os.path.isfile(path):
        raise InputError(f"cannot read data file {path}: no such file")
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", newline="", encoding="utf-8") as handle:  # type: ignore[operator]
            reader = csv.reader(handle)
            header = next(reader, None)
            rows = [row for row in reader if row]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read data file {path}: {exc}") from None
    if header is None:
        raise InputError(f"data file {path} is empty (a header line is required)")
    return [name.strip() for name in header], rows


def rows_from_table(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str], *,
                    source: str, party: int = 0, parties: int = 1, first_line: int = 2) -> PartyRows:
    """Select this party's rows and the wanted columns, parse numbers, drop rows with missing values.

    :param header: column names.
    :param rows: all data rows of the table (strings).
    :param columns: the columns the statistic needs, in kernel order.
    :param source: name of the table for messages (a path).
    :param party: this party's index; it keeps rows ``party, party+parties, ...``.
    :param parties: the number of parties sharing this table (1 for a per-party file).
    :param first_line: line number of ``rows[0]`` in the file, for messages.
    :raise InputError: unknown column, or a cell that is not a number.
    """
    positions = []
    for name in columns:
        if name not in header:
            raise InputError(f"unknown column '{name}' in {source}; columns are: {', '.join(header)}")
        positions.append(list(header).index(name))
    kept: list[list[float]] = []
    dropped = 0
    for offset in range(party, len(rows), parties):
        row = rows[offset]
        cells = [row[p].strip() if p < len(row) else "" for p in positions]
        if any(cell.lower() in MISSING_TOKENS for cell in cells):
            dropped += 1
            continue
        parsed = []
        for name, cell in zip(columns, cells):
            try:
                value = float(cell)
            except ValueError:
                raise InputError(f"{source} line {first_line + offset}, column '{name}': "
                                 f"{cell!r} is not a number") from None
            if not math.isfinite(value):
                raise InputError(f"{source} line {first_line + offset}, column '{name}': "
                                 f"{cell!r} is not a finite number")
            parsed.append(value)
        kept.append(parsed)
    values = np.array(kept, dtype=float).reshape(len(kept), len(columns))
    return PartyRows(values=values, dropped_missing=dropped, source=source)


def party_rows(path: str, columns: Sequence[str], *, party: int, parties: int) -> PartyRows:
    """Read this party's rows from ``path`` (``{pid}`` in the path: one file per party).

    :raise InputError: see :func:`read_table` and :func:`rows_from_table`.
    """
    if "{pid}" in path:
        own = path.replace("{pid}", str(party))
        header, rows = read_table(own)
        return rows_from_table(header, rows, columns, source=own)
    header, rows = read_table(path)
    return rows_from_table(header, rows, columns, source=path, party=party, parties=parties)


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
                raise InputError(f"column '{spec.name}' must hold labels {allowed}, found {column[bad][0]:g}")
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

    Each party's rows enter through ``mpc.input`` with that party as the only sender; row ``r`` of
    party ``i`` lands at position ``sum(counts[:i]) + r`` of the result.

    :param sectype: the MPyC secure integer type (``mpc.SecInt(l)``).
    :param local: this party's ``(rows, columns)`` fixed-point integers.
    :param counts: every party's row count, from :func:`exchange_counts`.
    :return: secure array of shape ``(sum(counts), columns)``.
    """
    from mpyc.runtime import mpc

    width = int(local.shape[1])
    blocks = []
    for sender, count in enumerate(counts):
        if count == 0:
            continue
        block = local if sender == mpc.pid else np.zeros((count, width), dtype=np.int64)
        blocks.append(mpc.input(sectype.array(block), senders=sender))
    if not blocks:
        raise InputError("no rows at any party")
    return blocks[0] if len(blocks) == 1 else mpc.np_vstack(blocks)
