"""Party intake: a party reads its own rows (``--data PATH``, ``{pid}``: one file per party, else rows
``i, i+m, ...``), validates them, converts them to fixed point, shares them through ``mpc.input``.  Threat
model: the row counts are public; a failed check shares one line naming the column and the problem
(:class:`secure.errors.InputError`), counts, lines and values stay at the party.  Details: docs/reader.md."""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np

from secure.columns import MAX_CATEGORIES, MISSING_TOKENS, Category, ColumnSpec
from secure.errors import InputError
from secure.reader import read_columns, read_table, table_values

# ColumnSpec, Category, MAX_CATEGORIES, MISSING_TOKENS (secure.columns) and read_table, read_columns
# (secure.reader) are re-exported here: the intake is where a party's rows come in.
__all__ = ["ColumnSpec", "Category", "MAX_CATEGORIES", "PartyRows", "MissingPolicy", "read_table", "read_columns", "rows_from_table", "party_rows",
           "apply_missing", "Party", "to_fixed_point", "exchange_counts", "share_rows", "MISSING_TOKENS", "MISSING_POLICIES",
           "MissingMode", "read_rows"]

MISSING_POLICIES = ("refuse", "fill")
#: the missing-value policies by name (:class:`MissingPolicy`); a typo fails the type checker too
MissingMode = Literal["refuse", "fill"]


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

    async def counts(self) -> list[int]:
        """Every party's row count, public (:func:`exchange_counts`; the owners' intake: the servers' one)."""
        return await exchange_counts(self.integers.shape[0])


@dataclass(frozen=True)
class MissingPolicy:
    """What a party does with a missing cell: ``mode`` ``refuse`` (stop the run) or ``fill`` (the column's declared
    public value from ``fills``, column -> number or string category); rows are never dropped (docs/reader.md)."""

    mode: str = "refuse"
    fills: tuple[tuple[str, float | str], ...] = ()

    def __post_init__(self) -> None:
        if self.mode not in MISSING_POLICIES:
            raise ValueError(f"missing-value policy must be one of {', '.join(MISSING_POLICIES)}, got '{self.mode}'")
        if self.mode == "refuse" and self.fills:
            raise ValueError("fill values are given but the missing-value policy is refuse (use fill)")

    def fill_value(self, column: str) -> float | str | None:
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
    """This party's rows (``party``, ``party + parties``, ...) of ``columns`` of a table of strings, parsed (string
    categories as codes), with the missing-value policy applied; the parameters: docs/reader.md.
    :raise InputError: unknown column, a cell that is not a finite number, a string outside its declared categories,
        a missing value refused."""
    values = table_values(header, rows, columns, source=source, party=party, parties=parties,
                          first_line=first_line, specs=specs)
    return apply_missing(values, columns, missing, source=source, specs=specs)


def party_rows(path: str, columns: Sequence[str], *, party: int, parties: int,
               missing: MissingPolicy = MissingPolicy(), specs: Sequence[ColumnSpec] | None = None) -> PartyRows:
    """Read this party's rows from ``path`` (``{pid}`` in the path: one file per party, all its rows;
    one party alone reads every file, :func:`secure.reader.party_files`) with :func:`read_columns`, and
    apply the missing-value policy; ``specs`` needed when a column has string categories (cells become codes).
    :raise InputError: see :func:`read_columns` and :func:`apply_missing`."""
    own = path.replace("{pid}", str(party)) if "{pid}" in path and parties > 1 else path
    return apply_missing(read_columns(path, columns, party=party, parties=parties, specs=specs), columns, missing,
                         source=own, specs=specs)


def read_rows(path: str, columns: Sequence[ColumnSpec | str], *, party: int = 0, parties: int = 1,
              missing: MissingPolicy | MissingMode = "refuse") -> PartyRows:
    """Party ``party``'s rows of ``columns`` (declarations or names) from ``path``, also outside a run.
    ``{pid}`` in ``path``: party ``party``'s own file; otherwise rows ``party, party + parties, ...``.
    :raise InputError: a missing or bad file, an unknown column, a missing value refused.
    :raise ValueError: ``parties`` not a positive integer, ``party`` outside ``[0, parties - 1]``."""
    if isinstance(parties, bool) or not isinstance(parties, numbers.Integral) or parties < 1:
        raise ValueError(f"parties must be a positive integer, got {parties!r}")
    if isinstance(party, bool) or not isinstance(party, numbers.Integral) or not 0 <= party < parties:
        raise ValueError(f"party must be an integer in [0, {parties - 1}] (parties are numbered from 0), got {party!r}")
    names = [column if isinstance(column, str) else column.name for column in columns]
    policy = missing if isinstance(missing, MissingPolicy) else MissingPolicy(missing)
    specs = [column for column in columns if isinstance(column, ColumnSpec)]  # all declared: string categories as codes
    return party_rows(path, names, party=party, parties=parties, missing=policy,
                      specs=specs if len(specs) == len(names) else None)


@dataclass(frozen=True)
class Party:
    """This party, as a script's job sees it (handed to the job by :func:`secure.launcher.run`): its ``index`` ``i``
    (MPyC's ``-I``), the ``count`` ``m`` of parties, the Shamir ``threshold`` ``t`` (at most ``t`` may collude)."""

    index: int
    count: int
    threshold: int

    async def read(self, path: str, columns: Sequence[ColumnSpec | str], *,
                   missing: MissingPolicy | MissingMode = "refuse") -> PartyRows:
        """Read this party's own rows of ``columns`` (declarations or names; ``missing``: ``refuse`` or a
        :class:`MissingPolicy`) -- every party calls it at the same point; the verdict is shared, the local detail
        printed at the failing party only (docs/reader.md).
        :raise InputError: at every party alike, when any party's input is bad."""
        from secure.session import agree_verdict

        try:
            rows = read_rows(path, columns, party=self.index, parties=self.count, missing=missing)
        except InputError as exc:
            await agree_verdict(str(exc), detail=exc.detail)
            raise  # not reached: the shared verdict raises at every party
        await agree_verdict(None)  # raises if another party's input is bad
        return rows


def to_fixed_point(values: np.ndarray, specs: Sequence[ColumnSpec], *, clip: bool = True) -> FixedPointRows:
    """Convert a party's ``(rows, columns)`` floats to fixed-point integers, clipping to the declared domains
    (``clip=False``: encoded raw, clipped inside MPC by :func:`secure.clipping.clip_secure`).  A categorical column
    becomes its codes (:meth:`ColumnSpec.value_codes`), never clipped: outside the list, ``other`` or refused.
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
    """Secret-share every party's fixed-point rows (``local``; ``counts`` from :func:`exchange_counts`) as
    ``sectype`` through ``mpc.input``, in blocks of :data:`SHARE_ROWS` rows; row ``r`` of party ``i`` lands at
    ``sum(counts[:i]) + r`` of the returned ``(sum(counts), columns)`` secure array (memory: docs/reader.md)."""
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
