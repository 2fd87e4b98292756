"""Declared category lists on the command line: ``--categories 'C=A|B|...,D=...'`` and ``--other C=NAME``.

A list of numbers is numeric, else strings matched exactly; the order is the code (for a label column, the role);
which columns are categorical and where their lists come from: docs/command_line.md.  Threat model: a category
list is public, agreed before any data is shared; nothing about the values outside a list leaves its party."""
from __future__ import annotations

import math
from typing import Any, Sequence

from scenarios.kit.cli import UsageError, usage_errors
from scenarios.kit.datasets import declared_categories, declared_domains
from secure.intake import MAX_CATEGORIES, Category, ColumnSpec
from secure.kernels import Kernel

__all__ = ["add_category_arguments", "parse_categories", "parse_others", "category_specs"]

def add_category_arguments(parser: Any) -> None:
    """Add ``--categories C=A|B|...[,D=...]`` and ``--other C=NAME[,D=NAME]`` (no MPyC prefix)."""
    parser.add_argument("--categories", metavar="'C=A|B|...[,D=...]'",
                        help="declared public category list of a categorical column (quote it: '|' is a shell pipe); "
                             "a value outside it stops the run at that party, never clipped (docs/command_line.md)")
    parser.add_argument("--other", metavar="C=NAME[,D=NAME]", help="a declared bucket NAME for values outside C's list")


def _item(text: str) -> Category:
    """A category from the command line: a number if it reads as a finite one, else the string."""
    try:
        value = float(text)
    except ValueError:
        return text
    if not math.isfinite(value):
        return text
    return int(value) if value == int(value) and "." not in text and "e" not in text.lower() else value


def _pairs(text: str | None, option: str, form: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in text.split(",") if text else []:
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise UsageError(f"{option} expects {form}, got '{item}'")
        if name.strip() in dict(pairs):
            raise UsageError(f"{option} declares column '{name.strip()}' twice")
        pairs.append((name.strip(), value))
    return pairs


def parse_categories(text: str | None) -> dict[str, tuple[Category, ...]]:
    """``'region=north|south,size=1|2'`` -> ``{"region": ("north", "south"), "size": (1, 2)}`` (all items numbers:
    a numeric list); :raise UsageError: with a one-line message."""
    lists: dict[str, tuple[Category, ...]] = {}
    for name, value in _pairs(text, "--categories", "COLUMN=A|B|...[,COLUMN=A|B|...]"):
        items = [part.strip() for part in value.split("|")]
        if any(not part for part in items):
            raise UsageError(f"--categories {name}=...: an empty category in '{value}'")
        parsed = [_item(part) for part in items]
        lists[name] = tuple(parsed) if all(not isinstance(p, str) for p in parsed) else tuple(items)
    return lists


def parse_others(text: str | None) -> dict[str, str]:
    """``'region=elsewhere'`` -> ``{"region": "elsewhere"}``; :raise UsageError: with a one-line message."""
    return {name: value.strip() for name, value in _pairs(text, "--other", "COLUMN=NAME[,COLUMN=NAME]")}


def _spec(name: str, categories: Sequence[Category], other: str | None, bounds: tuple[float, float] | None = None
          ) -> ColumnSpec:
    """A categorical spec; ``other`` becomes a number for a numeric list when it reads as one."""
    chosen: Category | None = other
    if other is not None and categories and not isinstance(categories[0], str):
        chosen = _item(other)
    with usage_errors():
        if bounds is not None:
            return ColumnSpec(name, bounds[0], bounds[1], 0, tuple(categories), chosen)
        return ColumnSpec.categorical(name, categories, other=chosen)


def _integer_range(name: str, low: float, high: float, bits: int | None, stat: str, where: str) -> list[int]:
    """The integer codes ``low..high`` of a domain, as categories (refused if not integer codes)."""
    if bits not in (None, 0) or low != int(low) or high != int(high):
        raise UsageError(f"--stat {stat} compares column '{name}' for equality: its {where} must be integer "
                         f"codes LO:HI (no fractional bits), or declare --categories {name}=A|B|...")
    if high - low + 1 > MAX_CATEGORIES:
        raise UsageError(f"column '{name}': the domain {low:g}:{high:g} declares {int(high - low + 1)} categories; "
                         f"at most {MAX_CATEGORIES}")
    return list(range(int(low), int(high) + 1))


def category_specs(kernel: Kernel, columns: Sequence[str], *, categories: str | None, other: str | None,
                   domains: dict[str, tuple[float, float, int | None]], dataset: str | None) -> dict[int, ColumnSpec]:
    """Position -> spec of every categorical or label column of ``kernel`` from ``--categories``, ``--other``,
    the parsed ``--domain`` and the embedded ``dataset``'s declarations (docs/command_line.md); :raise UsageError:."""
    lists, others = parse_categories(categories), parse_others(other)
    equality, labels = set(kernel.categorical), dict(kernel.categories)
    for option, given in (("--categories", lists), ("--other", others)):
        for name in given:
            if name not in columns:
                raise UsageError(f"{option} declares column '{name}', which is not one of the columns "
                                 f"{','.join(columns)}")
            if columns.index(name) not in equality and columns.index(name) not in labels:
                raise UsageError(f"{option} declares column '{name}', but --stat {kernel.name} reads it as a number "
                                 "(give its --domain instead)")
    for name in others:
        if name not in lists and columns.index(name) in labels:
            raise UsageError(f"--other {name}=... needs the label names: give --categories {name}=A|B")
    known = declared_categories(dataset) if dataset else {}
    declared = declared_domains(dataset) if dataset else {}
    specs: dict[int, ColumnSpec] = {}
    for position, name in enumerate(columns):
        if position in labels:
            allowed = labels[position]
            if name not in lists:
                specs[position] = ColumnSpec(name, min(allowed), max(allowed), 0, tuple(allowed))
                continue
            spec = _spec(name, lists[name], others.get(name))
            if spec.codes != len(allowed):
                raise UsageError(f"--categories {name}=...: --stat {kernel.name} needs exactly {len(allowed)} "
                                 f"{kernel.columns[position]} names in the order of {'|'.join(map(str, allowed))} "
                                 f"(--other counted), got {spec.codes}")
            specs[position] = spec
        elif position in equality:
            if name in lists:
                specs[position] = _spec(name, lists[name], others.get(name))
            elif name in domains:
                low, high, bits = domains[name]
                specs[position] = _spec(name, _integer_range(name, low, high, bits, kernel.name, "--domain"),
                                        others.get(name), (low, high) if low < high else None)
            elif name in known:
                bounds = (float(declared[name][0]), float(declared[name][1])) if name in declared else None
                specs[position] = _spec(name, known[name], others.get(name), bounds)
            elif name in declared:
                low, high, bits = float(declared[name][0]), float(declared[name][1]), int(declared[name][2])
                specs[position] = _spec(name, _integer_range(name, low, high, bits, kernel.name, "declared domain"),
                                        others.get(name), (low, high))
            else:
                raise UsageError(f"--stat {kernel.name} compares column '{name}' for equality: declare its categories "
                                 f"(--categories {name}=A|B|...) or an integer domain (--domain {name}=LO:HI)")
    return specs
