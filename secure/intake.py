"""Party intake: a party reads its own rows, validates them, converts them to fixed point, shares them.
Who holds what (docs/design.md): party ``i`` of ``m`` reads ``--data PATH``; if the path contains ``{pid}``
each party reads its own file ``PATH.format(pid=i)``, otherwise all parties are pointed at one file
and party ``i`` keeps rows ``i, i+m, i+2m, ...`` (a convenient local simulation of a partition).
Rows enter the computation only through ``mpc.input``; the number of rows of each party is public.
Validation, one line per problem, raised as :class:`secure.errors.InputError` (exit 2 at every
party once the verdicts are shared):
- a missing or unreadable file, an unknown column, a cell that is not a number;
- a missing value (empty, ``NA``, ``NaN``, ``?``): :class:`MissingPolicy` -- refused by default,
  or filled with a declared public fill value; never dropped (n would depend on the data);
- a value outside a column's declared category list (:class:`ColumnSpec` ``categories``: strings
  or numbers, shared as their codes ``0..k-1``; AUC labels 0/1 and VUS classes 0/1/2 by default):
  refused, or mapped to the declared ``other`` bucket (code ``k``) -- never clipped, never merged;
- a value outside the declared domain is *clipped* to it (locally by default; with secure clipping
  the party shares the raw value and :mod:`secure.clipping` clips inside MPC).  The count of clipped
  values stays at the party (:class:`FixedPointRows`), like every other count about its rows.
What is shared when a check fails is one line naming the column and the kind of problem; the line
number, the cell value and any count go into ``InputError.detail``, shown at the failing party only.
Fixed point: a column with declared domain ``[lower, upper]`` and ``precision`` fractional bits is
shared as the integer ``round((x - lower) * 2**precision)`` in ``[0, width]`` with
``width = round((upper - lower) * 2**precision)``; the offset makes every value non-negative and
the kernels only use differences, so nothing is lost.  Resolution is ``2**-precision``."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from secure.columns import MAX_CATEGORIES, MISSING_TOKENS, Category, ColumnSpec
from secure.errors import InputError
from secure.reader import read_columns, read_table, table_values

# ColumnSpec, Category, MAX_CATEGORIES, MISSING_TOKENS (secure.columns) and read_table, read_columns
# (secure.reader) are re-exported here: the intake is where a party's rows come in.
__all__ = ["ColumnSpec", "Category", "MAX_CATEGORIES", "PartyRows", "MissingPolicy", "read_table", "read_columns", "rows_from_table", "party_rows",
           "apply_missing", "Party", "to_fixed_point", "exchange_counts", "share_rows", "MISSING_TOKENS", "MISSING_POLICIES"]

MISSING_POLICIES = ("refuse", "fill")


@dataclass
class PartyRows:
    """The rows one party holds, as floats, after the missing-value policy.
    ``filled`` counts the cells this party filled: it stays at this party (print it locally if at
    all), it is never shared or written to the record."""

    values: np.ndarray
    source: str
    filled: int = 0
    policy: str = "refuse"


@dataclass
class FixedPointRows:
    """A party's rows as fixed-point integers, with the count of values clipped per column.
    ``clipped`` is local to this party: never shared, never written to the record (docs/design.md)."""

    integers: np.ndarray
    clipped: dict[str, int] = field(default_factory=dict)
    #: the fixed-point columns before a kernel's local re-encoding (``Kernel.encode``; one column per
    #: declared column), kept for the histogram path, which counts grid cells of the declared columns
    columns: np.ndarray | None = None


@dataclass(frozen=True)
class MissingPolicy:
    """What a party does with a missing cell (docs/design.md: the policy must keep the DP guarantee).
    - ``refuse`` (the default for a user's data): any missing cell stops the run (exit 2 at every
      party); the shared line names the column only, never a count, a line or a value.
    - ``fill``: a missing cell takes its column's declared public fill value (chosen without looking
      at the data, inside the declared domain; for a categorical column one of its declared
      categories -- not the ``other`` bucket).  n stays the number of rows, which is public, and a
      row with a missing cell is an ordinary row of the domain, so replace-one DP holds unchanged.
    Dropping rows is not offered: it makes n depend on the data, and the drop count would have to
    be noised and accounted for.
    :param mode: ``refuse`` or ``fill``.
    :param fills: column -> declared fill value (``fill`` only; every column read needs one); a
        number, or a string for a column of string categories."""

    mode: str = "refuse"
    fills: tuple[tuple[str, float | str], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MISSING_POLICIES:
            raise ValueError(f"missing-value policy must be one of {', '.join(MISSING_POLICIES)}, got '{self.mode}'")
        if self.mode == "refuse" and self.fills:
            raise ValueError("fill values are given but the missing-value policy is refuse (use fill)")

    def fill_value(self, column: str) -> float | str | None:
        """The declared fill value of ``column`` (``None`` if none)."""
        return dict(self.fills).get(column)

    def check(self, specs: Sequence[ColumnSpec]) -> None:
        """With ``fill``: every column has a fill value inside its declared domain (or category list).
        :raise ValueError: with a one-line message (public: it is about declarations, not data)."""
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
                if spec.category_code(value) is None:
                    raise ValueError(f"fill value {_shown(value)} for column '{spec.name}' is not one of its declared "
                                     f"categories {spec.describe_categories()}")
            elif isinstance(value, str):
                raise ValueError(f"fill value {value!r} for column '{spec.name}' must be a number (the column has "
                                 f"a numeric domain, no category list)")
            elif not (math.isfinite(value) and spec.lower <= value <= spec.upper):
                raise ValueError(f"fill value {value:g} for column '{spec.name}' lies outside its declared domain "
                                 f"[{spec.lower:g}, {spec.upper:g}]")


def _shown(value: float | str) -> str:
    return repr(value) if isinstance(value, str) else f"{value:g}"


def _fill_number(fill: float | str, spec: ColumnSpec | None) -> float:
    """The float a fill value stands for in a party's rows: a string category's code, else the number."""
    if spec is not None and spec.textual:
        code = spec.category_code(fill)
        if code is None:
            raise InputError(f"fill value {_shown(fill)} for column '{spec.name}' is not one of its declared categories")
        return float(code)
    try:
        return float(fill)
    except ValueError:
        raise InputError(f"fill value {_shown(fill)} for column '{spec.name if spec else '?'}' "
                         "is not a number") from None


def apply_missing(values: np.ndarray, columns: Sequence[str], policy: MissingPolicy, *, source: str,
                  specs: Sequence[ColumnSpec] | None = None) -> PartyRows:
    """Apply the missing-value policy to a party's raw rows (``nan`` = missing).
    :param specs: declared columns (by name); a fill value of a string-category column becomes its code.
    :raise InputError: ``refuse`` and a missing cell; ``fill`` without a fill value for a column that
        has a missing cell.  The shared message names the column only; the count stays in ``detail``."""
    by_name = {spec.name: spec for spec in specs or ()}
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
                raise missing_error(name, source, int(missing[:, j].sum()), int(np.argmax(missing[:, j])))
            values[missing[:, j], j] = _fill_number(fill, by_name.get(name))
    return PartyRows(values=values, source=source, filled=filled, policy=policy.mode)


def missing_error(name: str, source: str, count: int, first: int) -> InputError:
    """A refused missing value: the shared line names the column; the count and the first row stay local."""
    return InputError(f"column '{name}' has a missing value (use --missing fill with a declared --fill, or clean the "
                      f"file)", detail=f"{source}: {count} missing value(s) in column '{name}', the first in this "
                                   f"party's row {first + 1}")


def outside_error(spec: ColumnSpec, count: int, value: float, first: int) -> InputError:
    """A value outside a column's declared categories: the shared line names the column; the rest stays local."""
    return InputError(spec.outside_message(), detail=f"column '{spec.name}': {count} value(s) outside "
                      f"{spec.describe_categories()}, the first {value:g} in this party's row {first + 1}")


def rows_from_table(header: Sequence[str], rows: Sequence[Sequence[str]], columns: Sequence[str], *,
                    source: str, party: int = 0, parties: int = 1, first_line: int = 2,
                    missing: MissingPolicy = MissingPolicy(),
                    specs: Sequence[ColumnSpec] | None = None) -> PartyRows:
    """Select this party's rows and the wanted columns of a table of strings, parse the numbers
    (the cells of a string-category column become codes), apply the missing-value policy.
    :param header: column names.
    :param rows: all data rows of the table (strings, no empty rows).
    :param columns: the columns the statistic needs, in kernel order.
    :param source: name of the table for messages (a path).
    :param party: this party's index; it keeps rows ``party, party+parties, ...``.
    :param parties: the number of parties sharing this table (1 for a per-party file).
    :param first_line: line number of ``rows[0]`` in the file, for the local detail of a message.
    :param missing: the missing-value policy (default: refuse).
    :param specs: declared columns (see :func:`read_columns`).
    :raise InputError: unknown column, a cell that is not a finite number, a string outside its
        declared categories, a missing value refused."""
    values = table_values(header, rows, columns, source=source, party=party, parties=parties,
                          first_line=first_line, specs=specs)
    return apply_missing(values, columns, missing, source=source, specs=specs)


def party_rows(path: str, columns: Sequence[str], *, party: int, parties: int,
               missing: MissingPolicy = MissingPolicy(), specs: Sequence[ColumnSpec] | None = None) -> PartyRows:
    """Read this party's rows from ``path`` (``{pid}`` in the path: one file per party, all its rows;
    one party alone reads every file, :func:`secure.reader.party_files`) with :func:`read_columns`, and
    apply the missing-value policy.
    :param specs: declared columns: give them when a column has string categories (its cells become
        codes); numeric columns and numeric category lists are read as numbers either way.
    :raise InputError: see :func:`read_columns` and :func:`apply_missing`."""
    if "{pid}" in path:
        own = path.replace("{pid}", str(party)) if parties > 1 else path
        return apply_missing(read_columns(path, columns, party=party, parties=parties, specs=specs), columns, missing,
                             source=own, specs=specs)
    return apply_missing(read_columns(path, columns, party=party, parties=parties, specs=specs), columns, missing,
                         source=path, specs=specs)


@dataclass(frozen=True)
class Party:
    """This party, as a script's job sees it (handed to the job by :func:`secure.launcher.run`).
    :param index: this party's index ``i`` (MPyC's ``-I``).
    :param count: the number of parties ``m``.
    :param threshold: the Shamir threshold ``t`` (at most ``t`` parties may collude)."""

    index: int
    count: int
    threshold: int

    async def read(self, path: str, columns: Sequence[ColumnSpec | str], *,
                   missing: MissingPolicy | str = "refuse") -> PartyRows:
        """Read this party's own rows of ``columns`` -- every party calls it at the same point.
        ``{pid}`` in ``path`` gives each party its own file (all its rows); otherwise party ``i``
        keeps rows ``i, i+m, i+2m, ...`` of the one file (a local simulation of a partition).  The
        party's verdict is shared: if any party's file is missing or bad, every party raises the
        same :class:`secure.errors.InputError` (exit 2, one line naming that party), and the local
        detail (a line number, a value) is printed at the failing party only.
        :param columns: column declarations (:func:`secure.columns.numeric`, ...) or names.
        :param missing: ``refuse`` (default), or a :class:`MissingPolicy` with fills.
        :raise InputError: at every party alike, when any party's input is bad."""
        names = [column if isinstance(column, str) else column.name for column in columns]
        specs = [column for column in columns if isinstance(column, ColumnSpec)]
        try:  # string categories are read as codes when every column is declared
            rows = party_rows(path, names, party=self.index, parties=self.count,
                              missing=missing if isinstance(missing, MissingPolicy) else MissingPolicy(missing),
                              specs=specs if len(specs) == len(columns) else None)
        except InputError as exc:
            await self.verdict(str(exc), detail=exc.detail)
            raise  # not reached: the shared verdict raises at every party
        await self.verdict(None)  # raises if another party's input is bad
        return rows

    async def verdict(self, error: str | None, *, detail: str | None = None) -> None:
        """Share this party's verdict on its own input (``None``: fine); every party calls it.
        :raise InputError: at every party alike if any party gave an error (the message must not
            carry row data: no value, no line number, no count; ``detail`` stays here)."""
        from secure.session import agree_verdict

        await agree_verdict(error, detail=detail)


def to_fixed_point(values: np.ndarray, specs: Sequence[ColumnSpec], *, clip: bool = True) -> FixedPointRows:
    """Convert a party's rows to fixed-point integers, clipping to the declared domains.
    A categorical column becomes its codes (:meth:`ColumnSpec.value_codes`; numbers mapped by value,
    a string list's codes checked) and is never clipped: a value outside the list takes the
    ``other`` code, or, without ``other``, is refused.
    :param values: ``(rows, columns)`` floats in the order of ``specs``.
    :param specs: declared domain and precision (or category list) per column.
    :param clip: clip out-of-domain values here (local clipping); with ``False`` the raw values are
        encoded and must be clipped inside MPC (:func:`secure.clipping.clip_secure`).
    :raise InputError: a categorical column holding a value outside its declared categories (the
        shared line names the column; the count and the first value stay in ``detail``)."""
    values = np.asarray(values, dtype=float).reshape(-1, len(specs))
    integers = np.empty(values.shape, dtype=np.int64)
    clipped: dict[str, int] = {}
    for j, spec in enumerate(specs):
        column = values[:, j]
        if spec.categories is not None:
            codes, bad = spec.value_codes(column)
            if bad.any():
                raise outside_error(spec, int(bad.sum()), float(column[bad][0]), int(np.argmax(bad)))
            integers[:, j] = codes
            clipped[spec.name] = 0
            continue
        outside = (column < spec.lower) | (column > spec.upper)
        clipped[spec.name] = int(outside.sum())
        if clip:
            column = np.clip(column, spec.lower, spec.upper)
        integers[:, j] = spec.encode(column)
    return FixedPointRows(integers=integers, clipped=clipped)


async def exchange_counts(local_rows: int) -> list[int]:
    """Make every party's row count public (counts per party are public by declaration).
    :raise InputError: at every party alike when no party holds a row (header-only files): the line
        names the parties, whose inputs these are (``party 0 (also parties 1, 2): ...``)."""
    from mpyc.runtime import mpc

    counts = [int(count) for count in await mpc.transfer(int(local_rows))]
    if counts and sum(counts) == 0:
        others = list(range(1, len(counts)))
        also = f" (also part{'y' if len(others) == 1 else 'ies'} {', '.join(map(str, others))})" if others else ""
        raise InputError(f"party 0{also}: its data has no rows (a header line only)"
                         + ("; no party holds a row" if others else ""))
    return counts


def share_rows(sectype: Any, local: np.ndarray, counts: Sequence[int]) -> Any:
    """Secret-share every party's fixed-point rows; return the stacked secure array.
    Each party's rows enter through ``mpc.input`` with that party as the only sender, in blocks of
    :data:`SHARE_ROWS` rows; row ``r`` of party ``i`` lands at position ``sum(counts[:i]) + r`` of
    the result.  Memory per party: the shares of all rows (one field element per value) plus one
    block's share vectors at the sender.
    :param sectype: the MPyC secure integer type (``mpc.SecInt(l)``).
    :param local: this party's ``(rows, columns)`` fixed-point integers.
    :param counts: every party's row count, from :func:`exchange_counts`.
    :return: secure array of shape ``(sum(counts), columns)``."""
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
