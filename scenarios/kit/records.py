"""Writing a job's result record (``--json PATH``) as strict JSON: every non-finite float becomes ``null``.

Threat model: none of its own; the record holds the DP release and public parameters only."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["finite_or_null", "write_record"]


def finite_or_null(value: Any) -> Any:
    """``value`` with every NaN or infinite float (also inside dicts, lists, tuples) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(item) for item in value]
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # numpy scalars and arrays
        return finite_or_null(value.tolist())
    return value


def write_record(path: str, record: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
    """Write ``record`` (or a list of records) to ``path`` as strict JSON (indent 2; non-finite numbers as ``null``).
    :raise OSError: the file cannot be written (the caller turns it into one line)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(finite_or_null(record), handle, indent=2, allow_nan=False)
