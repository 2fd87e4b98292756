"""A party's file counted on the grid block by block (:func:`secure.counting.count_file`) gives what reading
all its rows and counting them gives (:func:`secure.intake.party_rows`, :func:`dp.umpc.protocol.prepare_rows`,
:func:`secure.histograms.local_histogram`): the histogram, the row count, the local clipped and filled counts,
and the same refusals (line and local detail), for every kernel, with blocks of a few rows."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dp.umpc.complete import histogram_grid, local_cells
from dp.umpc.protocol import UStatQuery, kernel_specs, prepare_rows
from secure import reader
from secure.columns import ColumnSpec
from secure.counting import count_file
from secure.errors import InputError
from secure.histograms import local_histogram
from secure.intake import MissingPolicy, party_rows
from secure.kernels import get_kernel

REGIONS = ["north", "south", "east", "west"]

#: per kernel: the declared columns, a fill value per column, and one row's cells from a random draw
CASES: dict[str, tuple[list[ColumnSpec], dict[str, Any]]] = {
    "kendall": ([ColumnSpec("x", 0, 300, 1, step=0.5), ColumnSpec("y", 0, 200, 1, step=0.5)], {"x": 10, "y": 20}),
    "gini": ([ColumnSpec("x", 0, 300, 1, step=0.5)], {"x": 7}),
    "auc": ([ColumnSpec("s", 0, 100, 0), ColumnSpec("label", 0, 1, 0)], {"s": 50, "label": 1}),
    "vus": ([ColumnSpec("s", 0, 100, 0), ColumnSpec("cls", 0, 2, 0, (0, 1, 2))], {"s": 3, "cls": 2}),
    "duplicate": ([ColumnSpec.categorical("r", REGIONS)], {"r": "east"}),
    "rand": ([ColumnSpec.categorical("r", REGIONS), ColumnSpec.categorical("c", [1, 2, 3])], {"r": "west", "c": 2}),
}


def _cell(spec: ColumnSpec, generator: np.random.Generator) -> str:
    """A cell of ``spec``: sometimes missing (any token), numbers sometimes outside the domain (clipped)."""
    if generator.random() < 0.08:
        return str(generator.choice(["", "NA", "nan", "?"]))
    if spec.categories is not None or spec.name in ("label",):
        labels = spec.categories if spec.categories is not None else (0, 1)
        return str(labels[int(generator.integers(len(labels)))])
    return f"{np.round(generator.uniform(spec.lower - 20, spec.upper + 20) * 2) / 2:g}"


def _write(path: Path, specs: list[ColumnSpec], rows: int, seed: int) -> None:
    generator = np.random.default_rng(seed)
    lines = ["note," + ",".join(spec.name for spec in specs)]
    lines += [f"n{i}," + ",".join(_cell(spec, generator) for spec in specs) for i in range(rows)]
    path.write_text("\n".join(lines) + "\n")


def _query(statistic: str, specs: list[ColumnSpec]) -> UStatQuery:
    kernel = get_kernel(statistic, precision=specs[0].precision)
    return UStatQuery(kernel=kernel, specs=tuple(specs), epsilon=1.0, path="histogram")


def _outcome(function: Any) -> Any:
    try:
        return function()
    except InputError as exc:
        return ("refused", str(exc), exc.detail)


def _both(query: UStatQuery, path: Path, policy: MissingPolicy, party: int, parties: int) -> tuple[Any, Any]:
    """(streamed, from all rows): the histogram, rows, clipped and filled counts, or the refusal."""
    def streamed() -> Any:
        counted = count_file(str(path), kernel_specs(query), party=party, parties=parties, missing=policy)
        return counted.histogram.tolist(), counted.integers.shape, counted.clipped, counted.filled

    def whole() -> Any:
        rows = party_rows(str(path), [spec.name for spec in query.specs], party=party, parties=parties,
                          missing=policy, specs=query.specs)
        fixed = prepare_rows(query, rows.values)
        counts = local_histogram(local_cells(query, fixed), histogram_grid(query.kernel, query.specs))
        return counts.tolist(), (len(rows.values), 0), fixed.clipped, rows.filled

    return _outcome(streamed), _outcome(whole)


@pytest.mark.parametrize("statistic", sorted(CASES))
def test_streamed_histogram_equals_the_histogram_of_all_rows(statistic: str, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    specs, fills = CASES[statistic]
    query = _query(statistic, specs)
    path = tmp_path / "data.csv"
    _write(path, specs, 400, seed=len(statistic))
    monkeypatch.setattr(reader, "CHUNK_BYTES", 96)  # blocks of a few rows
    fill = MissingPolicy("fill", tuple(fills.items()))
    for party, parties in ((0, 1), (1, 3)):
        streamed, whole = _both(query, path, fill, party, parties)
        assert streamed == whole
        assert sum(np.ravel(streamed[0])) == streamed[1][0] > 100 and streamed[3] > 0
        refused, expected = _both(query, path, MissingPolicy(), party, parties)  # missing cells refused
        assert refused == expected and refused[0] == "refused"


def test_refusals_over_blocks_are_those_of_all_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The refusal named is the one of all rows, not of the first block that has one: a missing score late in
    the file before a label 2 early; then the label alone (its count and first row over all blocks)."""
    specs, _ = CASES["auc"]
    query = _query("auc", specs)
    rows = [f"{i % 101},{i % 2}" for i in range(300)]
    rows[20], rows[250], rows[280] = "5,2", ",1", "7,3"
    path = tmp_path / "data.csv"
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64)
    for text in (rows, rows[:250] + rows[251:]):
        path.write_text("s,label\n" + "\n".join(text) + "\n")
        streamed, whole = _both(query, path, MissingPolicy(), 0, 1)
        assert streamed == whole and streamed[0] == "refused", streamed
    assert streamed[1] == "column 'label' must hold labels 0/1, found another value"
    assert "2 value(s)" in streamed[2] and "row 21" in streamed[2]


def test_a_block_arrow_refuses_late_restarts_the_counts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A padded missing token deep in the file sends it to the exact path after Arrow's first blocks were
    counted: the counts start again (nothing counted twice)."""
    specs, fills = CASES["kendall"]
    query = _query("kendall", specs)
    rows = [f"{i % 300},{i % 200}" for i in range(300)]
    rows[290] = " NA ,4"
    path = tmp_path / "data.csv"
    path.write_text("x,y\n" + "\n".join(rows) + "\n")
    monkeypatch.setattr(reader, "CHUNK_BYTES", 64)
    streamed, whole = _both(query, path, MissingPolicy("fill", tuple(fills.items())), 0, 1)
    assert streamed == whole and streamed[1] == (300, 0) and streamed[3] == 1


@pytest.mark.parametrize("spec", [ColumnSpec("x", 0, 300, 1, step=0.5), ColumnSpec("s", 0, 1, 16),
                                  ColumnSpec("s", -2.5, 7, 3), ColumnSpec("z", 0, 3, 0, step=1.5),
                                  ColumnSpec("w", -1, 1, 4, step=0.125), ColumnSpec("v", 0.1, 0.7, 10, step=0.2)],
                         ids=lambda spec: f"{spec.lower:g}:{spec.upper:g}/{spec.precision}/{spec.step}")
def test_the_arithmetic_grid_index_is_the_searched_one(spec: ColumnSpec) -> None:
    """On a regular grid the index is computed, not searched: bit-identical to ``grid_index(clip(encode(x)))``
    on random values, grid points, midpoints (ties of the rounding), the domain's ends and clipped values."""
    from secure.counting import _grid_cells, _regular

    grid = spec.grid_values()
    assert _regular(spec)
    points = spec.lower + grid / 2 ** spec.precision
    generator = np.random.default_rng(25)
    values = np.concatenate([generator.uniform(spec.lower - 1, spec.upper + 1, 20000), points,
                             (points[1:] + points[:-1]) / 2, np.nextafter(points, np.inf),
                             np.nextafter(points, -np.inf), [spec.lower, spec.upper, spec.lower - 1e9, spec.upper + 7]])
    clipped = np.clip(values, spec.lower, spec.upper)
    searched = spec.grid_index(np.clip(spec.encode(clipped), 0, spec.width))
    assert np.array_equal(_grid_cells(spec, clipped, True), searched)
    assert np.array_equal(_grid_cells(spec, clipped, False), searched)
