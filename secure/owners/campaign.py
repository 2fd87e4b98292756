"""The campaign: the public declaration owners and servers share before any upload (:class:`Campaign`,
docs/owners.md).  Threat model: everything here is public."""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import math
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from secure.columns import ColumnSpec
from secure.intake import to_fixed_point

__all__ = ["Campaign", "field_prime", "grid_bits"]

#: version of the campaign file
FORMAT = 1


def field_prime(bits: int, security: int) -> int:
    """The prime of MPyC's ``SecInt(bits)`` at security parameter ``security`` (``-L``, ``-K``), found as
    MPyC finds it (``mpyc.sectypes``: a Blum prime of ``bits + security + 2`` bits)."""
    from mpyc import finfields

    return int(finfields.find_prime_root(bits + security + 2, n=2)[0])


def grid_bits(columns: Sequence[ColumnSpec]) -> int:
    """Bits of the joint grid of ``columns`` (one cell per combination of grid points): a DPF's domain."""
    return max(1, math.ceil(math.log2(math.prod(spec.grid_size for spec in columns))))


def _utc(text: str) -> dt.datetime:
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        raise ValueError(f"deadline must be an ISO date and time in UTC (2030-01-31T00:00:00Z), got {text!r}") from None
    if moment.tzinfo is None or moment.utcoffset() != dt.timedelta(0):
        raise ValueError(f"deadline must be in UTC (end it with Z), got {text!r}")
    return moment


@dataclass(frozen=True, kw_only=True)
class Campaign:
    """A campaign's public parameters (keyword-only; ValueError, one line, on a bad one): ``id`` (128 random bits,
    hex), ``deadline`` (ISO, UTC), MPyC's ``threshold`` t, ``bits`` L and ``security`` K with the field's ``prime``
    (:func:`field_prime`), the servers' X25519 ``public_keys`` (base64, server ``i`` at ``i``), the declared
    ``columns`` in upload order, the most rows an owner uploads and, when owners add DPF keys for servers 0 and 1,
    ``dpf_bits``, the joint grid's bits (:func:`grid_bits`)."""

    id: str
    deadline: str
    threshold: int
    bits: int
    security: int
    prime: int
    public_keys: tuple[str, ...]
    columns: tuple[ColumnSpec, ...]
    rows_per_owner: int
    dpf_bits: int | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[0-9a-f]{32}", str(self.id)):
            raise ValueError(f"id must be 32 lower-case hex digits, got {self.id!r}")
        _utc(self.deadline)
        servers = len(self.public_keys)
        if servers < 3:
            raise ValueError(f"a campaign needs at least 3 servers, got {servers}")
        if not 1 <= self.threshold <= (servers - 1) // 2:
            raise ValueError(f"threshold t must lie in [1, {(servers - 1) // 2}] for {servers} servers "
                             f"(t < m/2; t = 0 hides nothing), got {self.threshold}")
        for key in self.public_keys:
            try:
                if len(base64.b64decode(key, validate=True)) != 32:
                    raise ValueError
            except ValueError:
                raise ValueError(f"a server's public key must be 32 bytes in base64, got {key!r}") from None
        if len(set(self.public_keys)) != servers:
            raise ValueError("the servers' public keys must be distinct")
        if not 2 <= self.bits <= 1024 or not 1 <= self.security <= 1024:
            raise ValueError(f"L and K must lie in [2, 1024] and [1, 1024], got L = {self.bits}, K = {self.security}")
        if self.prime != field_prime(self.bits, self.security):
            raise ValueError(f"prime {self.prime} is not the prime of MPyC's SecInt({self.bits}) at K = {self.security}")
        names = [spec.name for spec in self.columns]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"columns must be declared once each, at least one, got {names}")
        for spec in self.columns:
            if spec.width >= 2 ** (self.bits - 1):
                raise ValueError(f"column '{spec.name}' has {spec.width + 1} grid values: more than L = {self.bits} "
                                 "bits hold; give a larger L")
        if not 1 <= self.rows_per_owner <= 65535:
            raise ValueError(f"rows_per_owner must lie in [1, 65535], got {self.rows_per_owner}")
        if self.dpf_bits is not None:
            from secure.fss.dpf import MAX_BITS

            if self.dpf_bits != grid_bits(self.columns) or self.dpf_bits > MAX_BITS:
                raise ValueError(f"dpf_bits must be the joint grid's {grid_bits(self.columns)} bits, at most "
                                 f"{MAX_BITS} (a DPF's domain), got {self.dpf_bits}")

    @classmethod
    def create(cls, *, public_keys: Sequence[str], threshold: int, columns: Sequence[ColumnSpec], deadline: str,
               rows_per_owner: int = 1, bits: int = 32, security: int = 30, dpf: bool = False) -> Campaign:
        """A new campaign with a fresh random id and the prime of ``SecInt(bits)`` at ``security``."""
        return cls(id=secrets.token_hex(16), deadline=deadline, threshold=threshold, bits=bits, security=security,
                   prime=field_prime(bits, security), public_keys=tuple(public_keys), columns=tuple(columns),
                   rows_per_owner=rows_per_owner, dpf_bits=grid_bits(columns) if dpf else None)

    @property
    def servers(self) -> int:
        """``m``, the number of servers."""
        return len(self.public_keys)

    @property
    def share_bytes(self) -> int:
        """Bytes of one share (a field element, big-endian)."""
        return (self.prime.bit_length() + 7) // 8

    def closed(self, now: dt.datetime | None = None) -> bool:
        return (now or dt.datetime.now(dt.timezone.utc)) > _utc(self.deadline)

    def save(self, path: str | Path) -> None:
        record = {"format": FORMAT, **dataclasses.asdict(self)}
        record["columns"] = [{k: v for k, v in dataclasses.asdict(spec).items() if v is not None}
                             for spec in self.columns]
        Path(path).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> Campaign:
        """Read a campaign file; OSError, or ValueError (``campaign PATH: ...``, one line) on anything malformed."""
        try:
            record = json.loads(Path(path).read_text(encoding="utf-8"))
            if record.pop("format") != FORMAT:
                raise ValueError(f"campaign format {FORMAT} expected")
            record["public_keys"] = tuple(record["public_keys"])
            record["columns"] = tuple(ColumnSpec(**{**spec, "categories": tuple(spec["categories"])}
                                                 if "categories" in spec else spec) for spec in record["columns"])
            return cls(**record)
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"campaign {path}: not a campaign file ({type(exc).__name__}: {exc})") from None
        except ValueError as exc:
            raise ValueError(f"campaign {path}: {exc}") from None

    def grid_values(self, columns: Mapping[str, Any]) -> np.ndarray:
        """The rows' grid integers, ``(rows, columns)`` int64, as a party's intake encodes them
        (:func:`secure.intake.to_fixed_point`): a number clipped to its domain, a category as its code.
        :param columns: name -> values of every declared column.  :raise ValueError: a missing or unknown column,
            a value that is not a finite number, a category outside the list (no ``other`` declared)."""
        if unknown := sorted(set(columns) - {spec.name for spec in self.columns}):
            raise ValueError(f"column '{unknown[0]}' is not declared in the campaign")
        lengths = {len(np.atleast_1d(columns.get(spec.name, ()))) for spec in self.columns}
        out = np.empty((max(lengths), len(self.columns)), dtype=np.int64)
        for j, spec in enumerate(self.columns):
            if spec.name not in columns:
                raise ValueError(f"column '{spec.name}' is missing")
            raw = np.atleast_1d(np.asarray(columns[spec.name]))
            if len(raw) != len(out):
                raise ValueError("every column needs one value per row")
            if spec.textual:  # a missing or unlisted cell's code is nan: outside the list
                numbers = np.array([spec.cell_code(str(value)) for value in raw], dtype=float)
            else:
                try:
                    numbers = raw.astype(float)
                except ValueError:
                    raise ValueError(f"column '{spec.name}' holds a value that is not a number") from None
                if not np.isfinite(numbers).all():
                    raise ValueError(f"column '{spec.name}' holds a value that is not a finite number")
            out[:, j] = np.clip(to_fixed_point(numbers, [spec]).integers[:, 0], 0, spec.width)  # outside a list: refused
        return out

    def cells(self, values: np.ndarray) -> np.ndarray:
        """The joint grid cell of each row of grid integers (a DPF's point), int64."""
        indices = tuple(spec.grid_index(values[:, j]) for j, spec in enumerate(self.columns))
        return np.ravel_multi_index(indices, tuple(spec.grid_size for spec in self.columns)).astype(np.int64)
