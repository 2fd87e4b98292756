"""A party's file counted on the grid of a kernel's columns block by block: the histogram path's intake without
the rows (docs/design.md, "Three ways to compute a U-statistic", way (c)).
Each block gets the checks of :mod:`secure.intake` and is counted into the histogram; a refusal is raised
once the file is read, with the same shared lines and local details.  Threat model: nothing leaves the
party here; the counts are secret-shared later.  Details: docs/secure_layer.md."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from secure.columns import ColumnSpec
from secure.intake import FixedPointRows, MissingPolicy, _fill_number, missing_error, outside_error
from secure.reader import read_into

__all__ = ["CountedRows", "count_file"]


@dataclass
class CountedRows(FixedPointRows):
    """A party's rows counted on the grid, not kept: ``integers`` has shape ``(rows, 0)`` (no memory; its length
    is the public row count), ``histogram`` the counts of shape ``(grid size per column)``, ``filled`` the cells
    filled by the missing-value policy (local, like ``clipped``)."""

    histogram: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    filled: int = 0


def _regular(spec: ColumnSpec) -> bool:
    """Whether a numeric grid runs from 0 to ``width`` strictly increasing (then :func:`_grid_cells` computes)."""
    return spec.categories is None and bool((grid := spec.grid_values())[0] == 0 and grid[-1] == spec.width
                                            and np.all(np.diff(grid) > 0))


def _grid_cells(spec: ColumnSpec, clipped: np.ndarray, regular: bool) -> np.ndarray:
    """Grid indices of a numeric column's values clipped to its domain: on a regular grid ``rint((x - lower) / step)``
    (or the fixed-point integer), bit-identical to the searched ``grid_index(clip(encode(x)))``."""
    if not regular:
        return spec.grid_index(np.clip(spec.encode(clipped), 0, spec.width))
    shifted = clipped - spec.lower
    index = np.rint(shifted * 2 ** spec.precision if spec.step is None else shifted / spec.step)
    return np.clip(index, 0, spec.grid_size - 1, out=index).astype(np.int64)


class _GridCounter:
    """The reader's sink (:class:`secure.reader.Sink`): checks and counts each block, keeps no row."""

    def __init__(self, specs: Sequence[ColumnSpec], missing: MissingPolicy) -> None:
        self.specs, self.policy = list(specs), missing
        self.shape = tuple(spec.grid_size for spec in self.specs)
        width = len(self.specs)
        self.regular = [_regular(spec) for spec in self.specs]
        # per column: missing cells, the first's row; values outside the list, the first's row and value; clipped
        self.state = {"histogram": np.zeros(math.prod(self.shape), dtype=np.int64), "rows": np.zeros(1, np.int64),
                      "missing": np.zeros(width, np.int64), "missing_row": np.zeros(width, np.int64),
                      "outside": np.zeros(width, np.int64), "outside_row": np.zeros(width, np.int64),
                      "outside_value": np.zeros(width), "clipped": np.zeros(width, np.int64)}

    def mark(self) -> dict[str, np.ndarray]:
        return {name: array.copy() for name, array in self.state.items()}

    def restore(self, mark: dict[str, np.ndarray]) -> None:
        self.state = mark

    def _first(self, kind: str, j: int, mask: np.ndarray, rows: int) -> None:
        if not self.state[kind][j]:
            self.state[kind + "_row"][j] = rows + int(np.argmax(mask))
        self.state[kind][j] += int(mask.sum())

    def add(self, block: np.ndarray) -> None:
        state, rows = self.state, int(self.state["rows"][0])
        usable = np.ones(len(block), dtype=bool)  # rows without a refused cell (a refused run counts nothing)
        missing = np.isnan(block)
        for j in map(int, np.flatnonzero(missing.any(axis=0))):  # per column with a missing cell, never per row
            self._first("missing", j, missing[:, j], rows)
            spec = self.specs[j]
            fill = self.policy.fill_value(spec.name) if self.policy.mode == "fill" else None
            if fill is not None:
                block[missing[:, j], j] = _fill_number(fill, spec)
            else:  # refused (raised once read): the row is not counted, its cell made harmless
                usable &= ~missing[:, j]
                block[missing[:, j], j] = spec.lower
        cells = np.empty(block.shape, dtype=np.int64)
        for j, spec in enumerate(self.specs):
            column = block[:, j]
            if spec.categories is not None:
                cells[:, j], bad = spec.value_codes(column)
                if bad.any():
                    if not state["outside"][j]:
                        state["outside_value"][j] = column[bad][0]
                    self._first("outside", j, bad, rows)
                    usable &= ~bad
                continue
            state["clipped"][j] += np.count_nonzero(column < spec.lower) + np.count_nonzero(column > spec.upper)
            cells[:, j] = _grid_cells(spec, np.clip(column, spec.lower, spec.upper), self.regular[j])
        # unbuffered in place: no grid-sized temporary per block (a bincount would allocate the whole grid each time)
        np.add.at(state["histogram"], np.ravel_multi_index(tuple((cells if usable.all() else cells[usable]).T),
                                                          self.shape), 1)
        state["rows"][0] += len(block)

    def result(self, source: str) -> CountedRows:
        """The counts, or the refusal :func:`secure.intake.apply_missing` / ``to_fixed_point`` would raise.
        :raise secure.errors.InputError: a refused missing value, a value outside a column's categories."""
        state = self.state
        for j, spec in enumerate(self.specs):
            if state["missing"][j] and (self.policy.mode != "fill" or self.policy.fill_value(spec.name) is None):
                raise missing_error(spec.name, source, int(state["missing"][j]), int(state["missing_row"][j]))
        for j, spec in enumerate(self.specs):
            if state["outside"][j]:
                raise outside_error(spec, int(state["outside"][j]), float(state["outside_value"][j]),
                                    int(state["outside_row"][j]))
        clipped = {spec.name: 0 if spec.categories is not None else int(state["clipped"][j])
                   for j, spec in enumerate(self.specs)}
        return CountedRows(integers=np.empty((int(state["rows"][0]), 0), dtype=np.int64), clipped=clipped,
                           histogram=state["histogram"].reshape(self.shape), filled=int(state["missing"].sum()))


def count_file(path: str, specs: Sequence[ColumnSpec], *, party: int, parties: int,
               missing: MissingPolicy = MissingPolicy()) -> CountedRows:
    """This party's rows of ``path`` (as :func:`secure.intake.party_rows` reads them) counted on the grid of
    ``specs`` (a kernel's columns in order, labels with their category lists), block by block.
    :return: the counts, equal to :func:`secure.histograms.local_histogram` of the rows' grid cells, the rows'
        number, and the local clipped and filled counts.
    :raise secure.errors.InputError: what :func:`secure.intake.party_rows` and
        :func:`secure.intake.to_fixed_point` refuse, with the same lines."""
    counter = _GridCounter(specs, missing)
    read_into(counter, path, [spec.name for spec in specs], party=party, parties=parties, specs=specs)
    return counter.result(path.replace("{pid}", str(party)) if parties > 1 else path)
