"""Option formats shared by the jobs: ``--domain C=LO:HI[:BITS],...`` and ``--columns A,B,...``.

One spelling everywhere (DESIGN, "Command-line contract"): ``scenarios.ustat``, ``scenarios.ecdf``
and ``scenarios.rank_auc`` take ``--domain C=LO:HI[:BITS]`` per column; a job with a single
numeric column also takes the bare ``LO:HI[:BITS]`` for it.

Threat model: none (public, declared parameters only).
"""
from __future__ import annotations

from collections.abc import Sequence

from scenarios.kit.cli import UsageError

__all__ = ["parse_columns", "parse_domains"]

Domain = tuple[float, float, "int | None"]


def parse_columns(text: str, *, expected: int | None = None, names: str = "COLUMN,...") -> list[str]:
    """``"a, b"`` -> ``["a", "b"]``.

    :param expected: the number of columns the job needs, if fixed.
    :param names: what the columns are, for the message (``SCORE,LABEL``).
    :raise UsageError: an empty name or the wrong number of columns.
    """
    columns = [column.strip() for column in text.split(",")]
    if any(not column for column in columns) or (expected is not None and len(columns) != expected):
        raise UsageError(f"--columns expects {names}, got '{text}'")
    return columns


def parse_domains(text: str | None, *, single: str | None = None) -> dict[str, tuple[float, float, int | None]]:
    """``C=LO:HI[:BITS],...`` -> ``{C: (LO, HI, BITS or None)}``.

    :param single: the one column a bare ``LO:HI[:BITS]`` (no ``C=``) declares; ``None``: the bare
        form is refused.
    :raise UsageError: a malformed item (one line, naming the expected format).
    """
    domains: dict[str, tuple[float, float, int | None]] = {}
    if not text:
        return domains
    expected = "COLUMN=LOW:HIGH[:BITS]" + (" (or LOW:HIGH[:BITS] for the one column)" if single else "")
    for item in text.split(","):
        name, equals, bounds = item.partition("=")
        if not equals:
            name, bounds = single or "", item
        parts = bounds.split(":")
        if not name.strip() or len(parts) not in (2, 3):
            raise UsageError(f"--domain expects {expected}, got '{item}'")
        try:
            low, high = float(parts[0]), float(parts[1])
            bits = int(parts[2]) if len(parts) == 3 else None
        except ValueError:
            raise UsageError(f"--domain expects numbers in {expected}, got '{item}'") from None
        domains[name.strip()] = (low, high, bits)
    return domains


def domain_of(domains: dict[str, tuple[float, float, int | None]], column: str,
              allowed: Sequence[str]) -> tuple[float, float, int | None] | None:
    """The declared domain of ``column``; a domain for a column not in ``allowed`` is refused."""
    for name in domains:
        if name not in allowed:
            raise UsageError(f"--domain names column '{name}', which takes no domain here "
                             f"(the domain is of: {', '.join(allowed)})")
    return domains.get(column)
