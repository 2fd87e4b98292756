"""The embedded datasets (``scenarios/data``, provenance in ``DATA.md``) and their declared domains.

``framingham`` (4238 rows, the default) and ``heart_disease_uci`` (920 rows); two derived columns are added in
the clear from public choices: ``score`` (a logistic regression fitted on a held-out 30 %, then removed) and
``severity`` (``min(num, 2)``)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from secure.intake import MISSING_TOKENS, ColumnSpec, read_table

__all__ = ["EmbeddedTable", "load_embedded", "declared_specs", "declared_categories", "declared_fills",
           "numeric_columns", "framingham_with_scores", "uci_with_severity", "HELD_OUT_FRACTION"]

HELD_OUT_FRACTION = 0.3


@dataclass
class EmbeddedTable:
    """A table as strings (like a CSV read by a party), with its name for messages and domains."""

    name: str
    header: list[str]
    rows: list[list[str]]


def _data_path(filename: str) -> str:
    # next to this file (not importlib.resources: run as a file from inside the package directory,
    # an editable install makes ``scenarios`` a namespace package without a resource reader)
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", filename)


def load_embedded(name: str) -> EmbeddedTable:
    """Read an embedded dataset (``framingham`` or ``heart_disease_uci``)."""
    header, rows = read_table(_data_path(f"{name}.csv.gz"))
    return EmbeddedTable(name, header, rows)


def declared_domains(name: str) -> dict[str, list[float]]:
    """The declared ``[lower, upper, precision]`` of every column of an embedded dataset."""
    with open(_data_path("domains.json"), encoding="utf-8") as handle:
        return dict(json.load(handle)[name])


def declared_fills(name: str) -> dict[str, float]:
    """The declared fill value of every column of an embedded dataset (``fill`` in ``domains.json``: the
    domain's midpoint on the column's grid, chosen without looking at the data; ``DATA.md``)."""
    with open(_data_path("domains.json"), encoding="utf-8") as handle:
        return {column: float(value) for column, value in json.load(handle)["fill"][name].items()}


def declared_categories(name: str) -> dict[str, tuple[float | str, ...]]:
    """The declared category list of every categorical column of an embedded dataset
    (``categories`` in ``domains.json``; duplicate and Rand compare these columns for equality)."""
    with open(_data_path("domains.json"), encoding="utf-8") as handle:
        return {column: tuple(values) for column, values in json.load(handle)["categories"][name].items()}


def declared_specs(name: str, columns: Sequence[str]) -> dict[str, ColumnSpec]:
    """Column specs for the columns of an embedded dataset that have a declared domain; a fourth entry
    ``step`` declares the recording resolution (``DATA.md``)."""
    domains = declared_domains(name)
    return {column: ColumnSpec(column, float(domains[column][0]), float(domains[column][1]), int(domains[column][2]),
                               step=float(domains[column][3]) if len(domains[column]) > 3 else None)
            for column in columns if column in domains}


def numeric_columns(table: EmbeddedTable, columns: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Float matrix of ``columns`` and a mask of rows without missing values."""
    positions = [table.header.index(c) for c in columns]
    complete = np.array([all(row[p].strip().lower() not in MISSING_TOKENS for p in positions) for row in table.rows])
    values = np.full((len(table.rows), len(columns)), np.nan)
    for r, row in enumerate(table.rows):
        if complete[r]:
            values[r] = [float(row[p]) for p in positions]
    return values, complete


def framingham_with_scores(generator: np.random.Generator) -> EmbeddedTable:
    """Framingham with a ``score`` column from a logistic regression fitted on a public random 30 % of the
    complete rows (from ``generator``), which are then removed."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    table = load_embedded("framingham")
    features = [c for c in table.header if c != "TenYearCHD"]
    values, complete = numeric_columns(table, features + ["TenYearCHD"])
    usable = np.flatnonzero(complete)
    held_out = np.zeros(len(table.rows), dtype=bool)
    held_out[generator.choice(usable, size=int(round(HELD_OUT_FRACTION * len(usable))), replace=False)] = True
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
    model.fit(values[held_out, :-1], values[held_out, -1].astype(int))
    evaluated = complete & ~held_out
    scores = np.full(len(table.rows), np.nan)
    scores[evaluated] = model.predict_proba(values[evaluated, :-1])[:, 1]
    rows = [row + [repr(float(scores[r]))] for r, row in enumerate(table.rows) if evaluated[r]]
    return EmbeddedTable("framingham", table.header + ["score"], rows)


def uci_with_severity() -> EmbeddedTable:
    """UCI Heart Disease with ``severity = min(num, 2)``."""
    table = load_embedded("heart_disease_uci")
    position = table.header.index("num")
    rows = [row + [str(min(int(float(row[position])), 2))] for row in table.rows]
    return EmbeddedTable("heart_disease_uci", table.header + ["severity"], rows)
