"""A privacy-budget ledger that lasts across runs: one account per party and dataset, on disk.
One SQLite file (WAL) per (party, dataset) in a ledger directory; each spend committed before any data is
shared; corrupt or edited files are refused, never reset.  Threat model: protects a data holder against
its own over-spending (the averaging attack); local to each party, which refuses on its own; the rows
key (an unsalted digest) never leaves this party.  Layout, key and transactions: docs/budget.md."""
from __future__ import annotations

import csv
import datetime as _dt
import gzip
import hashlib
import json
import math
import os
import re
import sqlite3
import tempfile
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from dp.budget.accountants import (PURE_ONLY, Accountant, Budget, Spend, Totals, check_accountant,
                                   would_exceed_totals)

__all__ = ["LedgerError", "BudgetExceeded", "refusal_lines", "Entry", "Ledger", "default_ledger_directory",
           "ledger_disabled", "dataset_key_of_file", "dataset_key_of_rows", "dataset_key_of_name", "account_filename",
           "list_accounts", "ENVIRONMENT_VARIABLE", "FORMAT",
           "LEGACY_FORMAT", "LOCK_TIMEOUT"]

_T = TypeVar("_T")

#: The environment variable naming the ledger directory (``off`` disables the ledger).
ENVIRONMENT_VARIABLE = "PRIVATE_USTATS_LEDGER"
#: The format tag of an account (in its ``account`` row).
FORMAT = "private-ustats ledger 2"
#: The format tag of a first-format account file (one JSON document), migrated on use.
LEGACY_FORMAT = "private-ustats ledger 1"
#: How long (seconds) a transaction waits for another run holding the account's write lock.
LOCK_TIMEOUT = 60.0

_STATUSES = ("reserved", "released", "cancelled")
_EVENTS = ("created", "raised", "migrated")
_KEY = re.compile(r"^((sha256|rows)-[0-9a-f]{16}|name-[A-Za-z0-9_][A-Za-z0-9._-]{0,63})$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_ACCOUNT = re.compile(r"^(?P<dataset>.+)\.p(?P<party>[0-9]+)\.sqlite3$")
_LEGACY = re.compile(r"^(?P<dataset>.+)\.p(?P<party>[0-9]+)\.json$")
#: the cells read as missing (as :data:`secure.columns.MISSING_TOKENS`, lower case)
_MISSING = frozenset({"", "na", "nan", "n/a", "null", "none", "?"})


class LedgerError(ValueError):
    """A ledger that cannot be used as asked (one plain line). Details: docs/budget.md."""

    def __init__(self, message: str, *, shared: str | None = None) -> None:
        super().__init__(message)
        self.shared = shared


class BudgetExceeded(LedgerError):
    """The spend of this run does not fit the budget left (one plain line: the reason; ``shared``: the
    line the other parties see, :func:`refusal_lines`)."""


def refusal_lines(reason: str, spend: Spend, budget: Budget, dataset: str, path: Path | str) -> tuple[str, str]:
    """``(shared, local)``: the two texts of a refused spend. Details: docs/budget.md."""
    run = f"epsilon {spend.epsilon:g}" + (f", delta {spend.delta:.3g}" if spend.delta > 0 else "")
    if reason.startswith(PURE_ONLY):
        from dp.noise_defaults import DELEGATED_NOISE  # --delegate-noise: party noise already, F charged to delta

        advice = ("run with pure-DP party-drawn noise: --noise parties (noise='parties' in a script)"
                  if DELEGATED_NOISE not in spend.mechanism else
                  "--delegate-noise charges its failure probability to delta: leave --delegate-noise out (every "
                  "party then draws pure-DP noise), or raise the account's delta to cover it "
                  "(python -m scenarios.budget raise --budget EPS:DELTA)")
        shared = (f"its privacy budget for this data allows pure DP only (no delta) and this run needs a delta "
                  f"({run}): {advice}; see its local note")
        local = f"{reason}, on dataset {dataset} (ledger {path}): {advice}"
    else:
        shared = f"its privacy budget for this data does not cover this run ({run}); see its local note"
        local = (f"{reason}, on dataset {dataset} (ledger {path}); a larger budget is set on purpose with "
                 f"python -m scenarios.budget raise")
    return shared, local


@dataclass(frozen=True)
class Entry:
    """One spend recorded in an account (what :meth:`Ledger.reserve` returns); ``number`` is its position in the
    account (1, 2, ...), which :meth:`Ledger.cancel` uses to find it."""

    time: str
    run_id: str
    scenario: str
    epsilon: float
    delta: float
    rho: float | None
    mechanism: str
    what: str
    status: str
    number: int = 0

    @property
    def spend(self) -> Spend:
        return Spend(self.epsilon, self.delta, self.rho, self.mechanism, self.what)

    @property
    def counted(self) -> bool:
        return self.status != "cancelled"


def default_ledger_directory() -> Path:
    """``$PRIVATE_USTATS_LEDGER`` if set (``off`` disables, see :func:`ledger_disabled`), else
    ``$XDG_DATA_HOME/private-ustats/ledger``, else ``~/.local/share/private-ustats/ledger``."""
    chosen = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if chosen:
        return Path(chosen).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME", "").strip()
    base = Path(data_home).expanduser() if data_home else Path.home() / ".local" / "share"
    return base / "private-ustats" / "ledger"


def ledger_disabled(directory: Path | str | None) -> bool:
    """Whether ``directory`` is the word ``off`` (``--ledger off`` or ``PRIVATE_USTATS_LEDGER=off``): no
    budget is kept.  A directory really named ``off`` is written ``./off``."""
    return directory is not None and str(directory).strip().lower() == "off"


def dataset_key_of_file(path: Path | str) -> str:
    """``"sha256-<first 16 hex>"`` of the bytes of the data file ``path`` (the first format's key: it changes with a
    trailing newline or CRLF line ends; kept to find and migrate such accounts).  :raise LedgerError: unreadable
    file."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise _unreadable(path, exc) from None
    return f"sha256-{digest.hexdigest()[:16]}"


def _unreadable(path: Path | str, exc: BaseException) -> LedgerError:
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return LedgerError(f"cannot read data file {path} to key its ledger account: {reason}",
                       shared=f"cannot read its data file to key its privacy budget: {reason}")


def _canonical_cell(cell: str) -> str:
    """A cell after parsing: stripped; a number as its double's shortest repr (``1``, ``1.0``, ``1e0`` alike);
    a missing token (``NA``, ``nan``, empty, ...) as the empty string; other text as it stands."""
    text = cell.strip()
    if text.lower() in _MISSING:
        return ""
    try:
        value = float(text)
    except ValueError:
        return text
    return repr(value) if math.isfinite(value) else text.lower()


def dataset_key_of_rows(path: Path | str) -> str:
    """``"rows-<first 16 hex>"``: what the data file ``path`` holds, not how it is written (docs/budget.md).
    :raise LedgerError: the file cannot be read or decoded."""
    from secure.errors import InputError
    from secure.reader import CHUNK_BYTES, bounded_lines

    name = str(path)
    csv.field_size_limit(max(csv.field_size_limit(), CHUNK_BYTES + 1))  # a cell may fill a line the reader takes
    try:
        opened = (gzip.open(name, "rt", newline="", encoding="utf-8-sig") if name.endswith(".gz")
                  else open(name, "rt", newline="", encoding="utf-8-sig"))
        with opened as handle:
            reader = csv.reader(bounded_lines(handle, name))  # a line too long is refused before it is held
            header = [cell.strip() for cell in next(reader, [])]
            order = sorted(range(len(header)), key=lambda index: (header[index], index))
            digests = []
            for row in reader:
                if not any(cell.strip() for cell in row) and len(row) <= 1:
                    continue  # a blank line (a trailing newline, a line of spaces)
                cells = [_canonical_cell(row[index]) if index < len(row) else "" for index in order]
                cells += [_canonical_cell(cell) for cell in row[len(header):]]
                while len(cells) > len(header) and not cells[-1]:
                    cells.pop()  # trailing empty cells beyond the header (a trailing comma)
                digests.append(hashlib.sha256(_json(cells)).digest())
    except (OSError, UnicodeDecodeError, csv.Error, EOFError, InputError) as exc:
        raise _unreadable(path, exc) from None
    digests.sort()
    total = hashlib.sha256(_json([header[index] for index in order]))
    for digest in digests:
        total.update(digest)
    return f"rows-{total.hexdigest()[:16]}"


def dataset_key_of_name(name: str) -> str:
    """``"name-<NAME>"`` for a declared dataset name (letters, digits, ``.``, ``_``, ``-``; at most 64).
    :raise LedgerError: a name that is empty, too long or would not make a plain file name."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise LedgerError(f"dataset name must be 1 to 64 letters, digits, '.', '_' or '-' (not starting with "
                          f"'.' or '-'), got {name!r}")
    return f"name-{name}"


def account_filename(dataset: str, party: int, suffix: str = "sqlite3") -> str:
    """``f"{dataset}.p{party}.sqlite3"`` (``suffix`` ``json``: a first-format account's file), after checking both."""
    return f"{_check_key(dataset)}.p{_check_party(party)}.{suffix}"


def list_accounts(directory: Path | str, *, legacy: bool = False) -> list[Path]:
    """The account files in ``directory`` (sorted; none if it does not exist); ``legacy``: the first-format
    ones not yet migrated instead."""
    folder, pattern = Path(directory), _LEGACY if legacy else _ACCOUNT
    return sorted(path for path in folder.iterdir() if (match := pattern.match(path.name))
                  and _KEY.match(match.group("dataset")) and path.is_file()) if folder.is_dir() else []


def _check_key(dataset: object) -> str:
    if not isinstance(dataset, str) or not _KEY.match(dataset):
        raise LedgerError(f"dataset key must be 'sha256-<16 hex>' or 'name-<NAME>' (dataset_key_of_file, "
                          f"dataset_key_of_name), got {dataset!r}")
    return dataset


def _check_party(party: object) -> int:
    if isinstance(party, bool) or not isinstance(party, int) or party < 0:
        raise LedgerError(f"party must be an index 0, 1, ..., got {party!r}")
    return party


def _check_label(value: object, name: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 200 or not value.isprintable():
        raise LedgerError(f"{name} must be 1 to 200 printable characters, got {value!r}")
    return value


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds")


def _json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False).encode("ascii")


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(_json(value)).hexdigest()


def _refused(path: Path, foreign: str | None = None) -> LedgerError:
    """A file that fails its checksum, or (``foreign``: the format expected) is not an account this version reads."""
    why = "fails its checksum" if foreign is None else f"is not an account this version reads ({foreign})"
    return LedgerError(f"ledger file {path} {why}: refusing to use it; it is never reset silently: restore it or "
                       f"remove it on purpose", shared=_UNUSABLE)


#: the shared line of an account file that cannot be used (its path stays in the local note)
_UNUSABLE = "its ledger account for this data cannot be used (corrupt, edited or moved); see its local note"


def _entry_of(record: Any, number: int) -> Entry:
    """One stored entry, checked (a record that is not a mapping raises ``TypeError`` on its first field)."""
    rho = record["rho"]
    texts = {name: str(record[name]) for name in ("time", "run_id", "scenario", "mechanism", "what", "status")}
    entry = Entry(**texts, epsilon=float(record["epsilon"]), delta=float(record["delta"]),
                  rho=None if rho is None else float(rho), number=number)
    if entry.status not in _STATUSES:
        raise ValueError("status")
    _ = entry.spend  # validates the numbers
    return entry


def _change_of(item: Any) -> dict[str, Any]:
    """One change of the budget, checked: ``{"time", "event", "epsilon", "delta"}``."""
    if item["event"] not in _EVENTS:
        raise ValueError("history")
    Budget(item["epsilon"], item["delta"])
    return {"time": str(item["time"]), "event": item["event"], "epsilon": float(item["epsilon"]),
            "delta": float(item["delta"])}


@dataclass
class _Account:
    """The verified content of an account (what a :class:`Ledger` shows between transactions)."""

    dataset: str
    party: int
    accountant: Accountant
    budget: Budget
    created: str
    history: list[dict[str, Any]] = field(default_factory=list)
    entries: list[Entry] = field(default_factory=list)
    totals: Totals = field(init=False)

    def __post_init__(self) -> None:
        self.totals = Totals.of([entry.spend for entry in self.entries if entry.counted])

    def row(self) -> dict[str, Any]:
        """The ``account`` row (without its checksum)."""
        return {"id": 1, "format": FORMAT, "dataset": self.dataset, "party": self.party, "accountant": self.accountant,
                "budget_epsilon": self.budget.epsilon, "budget_delta": self.budget.delta, "created": self.created,
                "totals": self.totals.to_text(), "entries": len(self.entries), "changes": len(self.history)}


_SCHEMA = """
CREATE TABLE account (id INTEGER PRIMARY KEY CHECK (id = 1), format TEXT NOT NULL, dataset TEXT NOT NULL,
    party INTEGER NOT NULL, accountant TEXT NOT NULL, budget_epsilon REAL NOT NULL, budget_delta REAL NOT NULL,
    created TEXT NOT NULL, totals TEXT NOT NULL, entries INTEGER NOT NULL, changes INTEGER NOT NULL,
    checksum TEXT NOT NULL);
CREATE TABLE history (number INTEGER PRIMARY KEY, time TEXT NOT NULL, event TEXT NOT NULL, epsilon REAL NOT NULL,
    delta REAL NOT NULL, checksum TEXT NOT NULL);
CREATE TABLE entries (number INTEGER PRIMARY KEY, time TEXT NOT NULL, run_id TEXT NOT NULL, scenario TEXT NOT NULL,
    epsilon REAL NOT NULL, delta REAL NOT NULL, rho REAL, mechanism TEXT NOT NULL, what TEXT NOT NULL,
    status TEXT NOT NULL, checksum TEXT NOT NULL);"""
#: the checksummed columns of each table (each row also has its ``checksum``)
_COLUMNS = {"account": ("id", "format", "dataset", "party", "accountant", "budget_epsilon", "budget_delta", "created",
                        "totals", "entries", "changes"),
            "history": ("number", "time", "event", "epsilon", "delta"),
            "entries": ("number", "time", "run_id", "scenario", "epsilon", "delta", "rho", "mechanism", "what",
                        "status")}


def _insert(connection: sqlite3.Connection, account: _Account, table: str, row: dict[str, Any],
            verb: str = "INSERT") -> None:
    """Write ``row`` of ``table`` with its checksum (over the table, the account's dataset and party, the fields)."""
    sealed = {**row, "checksum": _digest([table, [account.dataset, account.party], row])}
    connection.execute(f"{verb} INTO {table} ({', '.join(sealed)}) VALUES ({', '.join('?' for _ in sealed)})",
                       tuple(sealed.values()))


def _store_account(connection: sqlite3.Connection, account: _Account) -> None:
    _insert(connection, account, "account", account.row(), "INSERT OR REPLACE")


def _append_entry(connection: sqlite3.Connection, account: _Account, entry: Entry) -> None:
    """Insert ``entry`` (a hook point: the tests slow it down, or stop the process here)."""
    _insert(connection, account, "entries", asdict(entry))


def _rows(connection: sqlite3.Connection, table: str) -> list[dict[str, Any]]:
    columns = (*_COLUMNS[table], "checksum")
    return [dict(zip(columns, values)) for values in
            connection.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY rowid")]


def _verified(path: Path, table: str, owner: list[Any], rows: list[dict[str, Any]],
              parse: Callable[[dict[str, Any], int], _T]) -> list[_T]:
    """The rows of ``table`` parsed; each must be numbered 1, 2, ... and match its checksum before it is parsed (a
    row that fails either, or does not parse, refuses the file)."""
    columns = _COLUMNS[table]
    parsed = []
    for number, record in enumerate(rows, start=1):
        if record["number"] != number or record["checksum"] != _digest([table, owner, {name: record[name]
                                                                                       for name in columns}]):
            raise _refused(path)
        try:
            parsed.append(parse(record, number))
        except (KeyError, TypeError, ValueError):
            raise _refused(path) from None
    return parsed


def _load(connection: sqlite3.Connection, path: Path) -> _Account:
    """Read and verify the whole account (every checksum, the counts, the exact totals); one-line
    :class:`LedgerError` if it is corrupt, edited, of another format or moved."""
    try:
        found, history_rows, entry_rows = (_rows(connection, table) for table in _COLUMNS)
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        raise _refused(path) from None
    if len(found) != 1:
        raise _refused(path)
    row = found[0]
    body = {name: row[name] for name in _COLUMNS["account"]}
    owner = [row["dataset"], row["party"]]
    if row["checksum"] != _digest(["account", owner, body]):
        raise _refused(path)
    if row["format"] != FORMAT:
        raise _refused(path, FORMAT)
    try:
        header = _Account(dataset=_check_key(row["dataset"]), party=_check_party(row["party"]),
                          accountant=check_accountant(row["accountant"]),
                          budget=Budget(row["budget_epsilon"], row["budget_delta"]), created=str(row["created"]))
        stored_totals = Totals.from_text(row["totals"])
    except (KeyError, TypeError, ValueError):
        raise _refused(path, FORMAT) from None
    account = replace(header, history=_verified(path, "history", owner, history_rows,
                                                lambda change, _: _change_of(change)),
                      entries=_verified(path, "entries", owner, entry_rows, _entry_of))  # the totals of its entries
    if (len(account.history), len(account.entries)) != (row["changes"], row["entries"]) \
            or account.totals != stored_totals:
        raise _refused(path)
    return _in_place(path, account)


def _in_place(path: Path, account: _Account, suffix: str = "sqlite3") -> _Account:
    """``account``, if ``path`` has its file name (not a file moved or copied under another name)."""
    if path.name != account_filename(account.dataset, account.party, suffix):
        raise LedgerError(f"ledger file {path} holds the account of {account.dataset} at party {account.party}: "
                          f"refusing a file moved or copied under another name", shared=_UNUSABLE)
    return account


def _read_legacy(path: Path) -> _Account:
    """Read and verify a first-format account file (one JSON document with a checksum)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerError(f"cannot read ledger file {path}: {exc.strerror or exc}",
                          shared=f"cannot read its ledger account: {exc.strerror or exc}") from None
    try:
        document = json.loads(data.decode("ascii"))
        if not isinstance(document, dict) or document.get("checksum") != _digest(
                {key: value for key, value in document.items() if key != "checksum"}):
            raise _refused(path)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _refused(path) from None
    try:
        if document["format"] != LEGACY_FORMAT:
            raise ValueError("format")
        budget = document["budget"]
        account = _Account(dataset=_check_key(document["dataset"]), party=_check_party(document["party"]),
                           accountant=check_accountant(document["accountant"]),
                           budget=Budget(budget["epsilon"], budget["delta"]), created=str(document["created"]),
                           history=[_change_of(item) for item in document["history"]],
                           entries=[_entry_of(record, number)
                                    for number, record in enumerate(document["entries"], start=1)])
    except (KeyError, TypeError, ValueError):
        raise _refused(path, LEGACY_FORMAT) from None
    return _in_place(path, account, "json")


def _write_error(path: Path, exc: BaseException, timeout: float) -> LedgerError:
    """One line for an SQLite or OS error while using the account ``path``."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return LedgerError(f"ledger file {path} stayed locked by another run for {timeout:g} s",
                           shared=f"its ledger account stayed locked by another run for {timeout:g} s")
    return LedgerError(f"cannot write ledger file {path}: {text}", shared=f"cannot write its ledger account: {text}")


@contextmanager
def _writing(path: Path, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """An SQLite or OS error in the block as :func:`_write_error`'s one line."""
    try:
        yield
    except (OSError, sqlite3.Error) as exc:
        raise _write_error(path, exc, timeout) from None


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the existing account ``path`` (never creates it): WAL, ``synchronous=FULL``, a busy
    timeout of ``timeout`` seconds for the write lock."""
    uri = "file:" + urllib.parse.quote(str(path.resolve())) + "?mode=rw"
    connection = sqlite3.connect(uri, uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("PRAGMA journal_mode=WAL")
    except sqlite3.Error:
        connection.close()
        raise
    return connection


def _create_file(path: Path, account: _Account) -> bool:
    """Build the account in a temporary file beside ``path`` and link it into place; ``False`` if ``path``
    exists already (another run created it first: nothing is overwritten)."""
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    temporary = Path(name)
    try:
        os.chmod(temporary, 0o600)
        connection = sqlite3.connect(str(temporary), isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=FULL")
            connection.executescript(_SCHEMA)
            connection.execute("BEGIN IMMEDIATE")
            _insert(connection, account, "account", account.row())
            for number, change in enumerate(account.history, start=1):
                _insert(connection, account, "history", {"number": number, **change})
            for entry in account.entries:
                _append_entry(connection, account, entry)
            connection.execute("COMMIT")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            connection.close()
        with open(temporary, "rb") as stream:
            os.fsync(stream.fileno())
        try:
            os.link(temporary, path)
        except FileExistsError:
            return False
        _fsync_directory(path.parent)
        return True
    finally:
        for leftover in (temporary, Path(f"{temporary}-wal"), Path(f"{temporary}-shm")):
            leftover.unlink(missing_ok=True)


def _fsync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _prepare_directory(directory: Path) -> None:
    """Create ``directory`` if missing (mode 0700); one line if it cannot be created or is not writable."""
    if directory.exists() and not directory.is_dir():
        raise LedgerError(f"ledger directory {directory} is not a directory",
                          shared="its ledger directory is not a directory (choose another with --ledger DIR)")
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise LedgerError(f"cannot create ledger directory {directory}: {exc.strerror or exc}",
                          shared=f"cannot create its ledger directory: {exc.strerror or exc}") from None
    if not os.access(directory, os.W_OK | os.X_OK):
        raise LedgerError(f"ledger directory {directory} is not writable: no spend could be recorded "
                          f"(choose another with --ledger DIR)",
                          shared="its ledger directory is not writable: no spend could be recorded (choose "
                                 "another with --ledger DIR)")


class Ledger:
    """An open account: one party's budget and spends on one dataset (docs/budget.md)."""

    def __init__(self, *, path: Path, account: _Account, lock_timeout: float = LOCK_TIMEOUT,
                 legacy: bool = False) -> None:
        self.path = path
        self._account = account
        self.lock_timeout = lock_timeout
        self._connection: sqlite3.Connection | None = None
        self._version: int | None = None
        self._inode: int | None = None
        self.legacy = legacy  # a first-format file read for showing (migrated when next used)

    def close(self) -> None:
        """Close the database connection (reopened when needed)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __del__(self) -> None:
        with suppress(Exception):  # at interpreter exit nothing is left to report to
            self.close()

    @classmethod
    def open(cls, directory: Path | str, *, party: int, dataset: str, budget: Budget | None,
             accountant: Accountant, lock_timeout: float = LOCK_TIMEOUT, legacy: Sequence[str] = (),
             create_hint: str | None = None, in_script: bool = False) -> Ledger:
        """Open the account of ``party`` on ``dataset`` in ``directory``, creating it with ``budget`` if new; a
        first-format account under a ``legacy`` key is migrated (the parameters and refusals: docs/budget.md)."""
        folder, path = cls._place(directory, party, dataset)
        accountant = check_accountant(accountant)
        _prepare_directory(folder)
        _adopt_legacy(folder, path, party, dataset, legacy)
        if not path.exists():
            if budget is None:
                # no party here: every caller's line already names it ("error: party 0: ...")
                how = create_hint or "create one with --budget EPS[:DELTA] (or python -m scenarios.budget)"
                given = "budget='EPS' (or 'EPS:DELTA') in the release call" if in_script else "--budget EPS[:DELTA]"
                raise LedgerError(f"no privacy budget for dataset {dataset}: {how}",
                                  shared=f"it has no privacy budget for this data: create one with {given} (or python "
                                         f"-m scenarios.budget create); see its local note")
            cls._create_new(path, party, dataset, budget, accountant)
        ledger = cls._attach(path, lock_timeout)
        if ledger.accountant != accountant:
            raise LedgerError(f"ledger account {path} uses the {ledger.accountant} accountant, this run asks for "
                              f"{accountant}: one account keeps one accountant",
                              shared=f"its ledger account for this data uses the {ledger.accountant} accountant, "
                                     f"this run asks for {accountant}: one account keeps one accountant")
        if budget is not None and budget != ledger.budget:
            raise LedgerError(f"ledger account {path} has the budget {ledger.budget}; --budget {budget} differs: "
                              f"raise it on purpose with python -m scenarios.budget raise, never silently",
                              shared="its ledger account for this data has another budget than --budget: an "
                                     "existing account keeps its own (drop --budget, or raise it on purpose with "
                                     "python -m scenarios.budget raise); see its local note")
        return ledger

    @classmethod
    def create(cls, directory: Path | str, *, party: int, dataset: str, budget: Budget, accountant: Accountant,
               lock_timeout: float = LOCK_TIMEOUT, legacy: Sequence[str] = ()) -> Ledger:
        """Create a new account; refuse if it exists (``python -m scenarios.budget create``)."""
        folder, path = cls._place(directory, party, dataset)
        accountant = check_accountant(accountant)
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        _prepare_directory(folder)
        _adopt_legacy(folder, path, party, dataset, legacy)
        if path.exists() or not cls._create_new(path, party, dataset, budget, accountant):
            existing = cls._attach(path, lock_timeout)
            raise LedgerError(f"account {path} exists already (budget {existing.budget}, accountant "
                              f"{existing.accountant}): raise it with python -m scenarios.budget raise")
        return cls._attach(path, lock_timeout)

    @classmethod
    def existing(cls, directory: Path | str, *, party: int, dataset: str, legacy: Sequence[str] = (),
                 lock_timeout: float = LOCK_TIMEOUT) -> Ledger | None:
        """The existing account of ``party`` on ``dataset`` (a first-format one migrated), or ``None``."""
        folder, path = cls._place(directory, party, dataset)
        if not folder.is_dir():
            return None
        _adopt_legacy(folder, path, party, dataset, legacy)
        return cls._attach(path, lock_timeout) if path.exists() else None

    @classmethod
    def read(cls, path: Path | str) -> Ledger:
        """An existing account file, verified, whatever its accountant (for showing it).  A first-format
        file (``.json``) is read as it is, for showing only: it is migrated when next used."""
        path = Path(path)
        if not path.exists():
            raise LedgerError(f"no ledger account {path}")
        if path.name.endswith(".json"):
            return cls(path=path, account=_read_legacy(path), legacy=True)
        return cls._attach(path, LOCK_TIMEOUT)

    @classmethod
    def _attach(cls, path: Path, lock_timeout: float) -> Ledger:
        ledger = cls(path=path, account=_Account(dataset="", party=0, accountant="basic", budget=Budget(1.0),
                                                 created=""), lock_timeout=lock_timeout)
        with ledger._transaction(write=False):  # reads and verifies the whole account
            pass
        return ledger

    @staticmethod
    def _place(directory: Path | str, party: int, dataset: str) -> tuple[Path, Path]:
        if ledger_disabled(directory):
            raise LedgerError("the ledger is off (--ledger off or PRIVATE_USTATS_LEDGER=off): no account to open")
        folder = Path(directory).expanduser()
        return folder, folder / account_filename(dataset, party)

    @staticmethod
    def _create_new(path: Path, party: int, dataset: str, budget: Budget, accountant: Accountant) -> bool:
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        if accountant == "zcdp" and budget.delta <= 0:
            example = f"{budget.epsilon:g}:1e-6"
            raise LedgerError(f"the zcdp accountant needs a budget delta > 0: with delta 0 its total in epsilon is "
                              f"infinite (Bun & Steinke 2016, Prop. 1.3) and it would refuse every spend; give the "
                              f"delta it converts at, --budget {example} (budget='{example}' in a script), or keep "
                              f"delta 0 with the basic accountant")
        now = _now()
        account = _Account(dataset=dataset, party=party, accountant=accountant, budget=budget, created=now,
                           history=[{"time": now, "event": "created", "epsilon": budget.epsilon,
                                     "delta": budget.delta}])
        with _writing(path):
            return _create_file(path, account)

    @property
    def party(self) -> int:
        return self._account.party

    @property
    def dataset(self) -> str:
        return self._account.dataset

    @property
    def budget(self) -> Budget:
        return self._account.budget

    @property
    def accountant(self) -> Accountant:
        return self._account.accountant

    @property
    def history(self) -> tuple[dict[str, Any], ...]:
        """The budget's changes: ``{"time", "event": "created" | "raised" | "migrated", "epsilon", "delta"}``."""
        return tuple(self._account.history)

    @property
    def spends(self) -> tuple[Entry, ...]:
        """Every entry, counted or cancelled, in order."""
        return tuple(self._account.entries)

    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent, composed by the account's accountant (zCDP: at the budget's delta)."""
        return self._account.totals.composed(self.accountant, self.budget.delta)

    def left(self) -> tuple[float, float]:
        """``(epsilon, delta)`` left: the budget minus :meth:`spent`, at least 0.  Under zCDP the delta is
        the budget's once any zCDP spend exists, and the epsilon left is what matters."""
        epsilon, delta = self.spent()
        return max(0.0, self.budget.epsilon - epsilon), max(0.0, self.budget.delta - delta)

    def _open_connection(self) -> sqlite3.Connection:
        """This object's connection, reopened if the file was replaced (then verified again)."""
        try:
            inode = os.stat(self.path).st_ino
        except FileNotFoundError:
            raise LedgerError(f"ledger file {self.path} has disappeared: refusing to start a fresh account "
                              f"silently; restore it or create it again on purpose",
                              shared="its ledger account for this data has disappeared during the run; see its "
                                     "local note") from None
        except OSError as exc:
            raise _write_error(self.path, exc, self.lock_timeout) from None
        if self._connection is not None and inode != self._inode:
            self.close()
        if self._connection is None:
            try:
                self._connection = _connect(self.path, self.lock_timeout)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "not a database" not in str(exc):
                    raise _write_error(self.path, exc, self.lock_timeout) from None
                raise _refused(self.path) from None
            self._inode, self._version = inode, None
        return self._connection

    @contextmanager
    def _transaction(self, *, write: bool = True) -> Iterator[tuple[sqlite3.Connection, _Account]]:
        """One transaction on the account (the write lock for a change, a read snapshot otherwise), verified whole when
        another connection wrote it since this object last looked; committed on leaving (docs/budget.md)."""
        if self.legacy:
            raise LedgerError(f"ledger file {self.path} is of the first format: open it with Ledger.open to migrate it")
        connection = self._open_connection()
        try:
            with _writing(self.path, self.lock_timeout):
                connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                version = connection.execute("PRAGMA data_version").fetchone()[0]
                if version != self._version:
                    account = _load(connection, self.path)
                    if self._version is not None and (account.dataset, account.party) != (
                            self._account.dataset, self._account.party):
                        raise LedgerError(f"ledger file {self.path} now holds another account", shared=_UNUSABLE)
                    self._account, self._version = account, version
            yield connection, self._account
            with _writing(self.path, self.lock_timeout):
                connection.execute("COMMIT")
        except BaseException:
            try:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
            except sqlite3.Error:
                self.close()
            self._version = None  # whatever happened, look again next time
            raise

    @contextmanager
    def _changing(self, connection: sqlite3.Connection, account: _Account, replacing: int = -1) -> Iterator[None]:
        """The block changes ``account`` in memory (appends a row, or replaces the entry at position ``replacing``) and
        writes its row; then the ``account`` row is rewritten.  A failure restores the memory (in constant time); an
        SQLite or OS error (a full disk) is :func:`_write_error`'s one line."""
        budget, totals, changes, count = account.budget, account.totals, len(account.history), len(account.entries)
        replaced = account.entries[replacing] if replacing >= 0 else None
        try:
            with _writing(self.path, self.lock_timeout):
                yield
                _store_account(connection, account)
        except BaseException:
            account.budget, account.totals = budget, totals
            del account.history[changes:], account.entries[count:]
            if replaced is not None:
                account.entries[replacing] = replaced
            raise

    def reserve(self, spend: Spend, *, run_id: str, scenario: str) -> Entry:
        """Record ``spend`` for run ``run_id`` of ``scenario`` if it fits, *before* any data is shared (docs/budget.md).
        :raise BudgetExceeded: the spend does not fit (its message: the reason, the dataset, the file).
        :raise LedgerError: a corrupt file, a directory that is not writable, bad arguments."""
        if not isinstance(spend, Spend):
            raise LedgerError(f"spend must be a Spend, got {spend!r}")
        run_id = _check_label(run_id, "run id")
        scenario = _check_label(scenario, "scenario")
        with self._transaction() as (connection, account):
            reason = would_exceed_totals(account.accountant, account.budget, account.totals, spend)
            if reason is not None:
                shared, local = refusal_lines(reason, spend, account.budget, account.dataset, self.path)
                raise BudgetExceeded(local, shared=shared)
            entry = Entry(time=_now(), run_id=run_id, scenario=scenario, **asdict(spend), status="reserved",
                          number=len(account.entries) + 1)
            with self._changing(connection, account):
                account.entries.append(entry)
                account.totals = account.totals.plus(spend)
                _append_entry(connection, account, entry)
        return entry

    def cancel(self, entry: Entry) -> None:
        """Mark ``entry`` ``"cancelled"`` (no longer counted), in one locked transaction. Details: docs/budget.md."""
        self._rewrite(entry, lambda old, _: None if old.status == "cancelled" else replace(old, status="cancelled"))

    def mark_released(self, entry: Entry) -> None:
        """Mark the ``"reserved"`` ``entry`` ``"released"`` (still counted) once its run has revealed its release.
        Details: docs/budget.md."""
        self._rewrite(entry, lambda old, _: replace(old, status="released") if old.status == "reserved" else None)

    def settle(self, entry: Entry, delta: float) -> Entry:
        """Mark the ``"reserved"`` ``entry`` ``"released"`` with the delta its release states, at most the reserved one;
        return the settled entry.  What it refuses (the entry then unchanged): docs/budget.md."""
        if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 <= float(delta) < 1.0:
            raise LedgerError(f"a settled delta must be a number in [0, 1), got {delta!r}")
        delta = float(delta)

        def lowered(old: Entry, account: _Account) -> Entry:
            if old.status != "reserved":
                raise LedgerError(f"ledger file {self.path}: entry {old.number} of run {old.run_id} is {old.status}, "
                                  f"only a reserved entry is settled")
            if delta > old.delta:
                raise LedgerError(f"ledger file {self.path}: settling entry {old.number} of run {old.run_id} to delta "
                                  f"{delta!r} would raise its reserved delta {old.delta!r}: a settlement only lowers "
                                  f"the charge agreed before the run")
            what = old.what if delta == old.delta else f"{old.what}; reserved delta {old.delta!r}"
            new = replace(old, delta=delta, status="released", what=what)
            charged = account.totals.composed(account.accountant, account.budget.delta)
            settled = account.totals.plus(old.spend, sign=-1).plus(new.spend).composed(account.accountant,
                                                                                        account.budget.delta)
            if settled[0] > charged[0] or settled[1] > charged[1]:
                raise LedgerError(f"ledger file {self.path}: settling entry {old.number} of run {old.run_id} to delta "
                                  f"{delta!r} would raise the account's {account.accountant} charge from epsilon "
                                  f"{charged[0]:g}, delta {charged[1]:g} to epsilon {settled[0]:g}, delta "
                                  f"{settled[1]:g}: the reserved charge stays")
            return new

        return self._rewrite(entry, lowered)

    def _rewrite(self, entry: Entry, change: Callable[[Entry, _Account], Entry | None]) -> Entry:
        """Replace ``entry`` (number, run id and time as stored) by ``change(stored, account)`` unless ``None``, the
        totals adjusted, in one transaction (memory restored if writing fails); return the entry now stored."""
        if not isinstance(entry, Entry):
            raise LedgerError(f"entry must be an Entry, got {entry!r}")
        with self._transaction() as (connection, account):
            position = entry.number - 1
            if not (0 <= position < len(account.entries)) or account.entries[position].run_id != entry.run_id \
                    or account.entries[position].time != entry.time:
                raise LedgerError(f"ledger file {self.path} holds no entry {entry.number} of run {entry.run_id}")
            old = account.entries[position]
            new = change(old, account)
            if new is None:
                return old
            with self._changing(connection, account, replacing=position):
                totals = account.totals.plus(old.spend, sign=-1) if old.counted else account.totals
                account.entries[position] = new
                account.totals = totals.plus(new.spend) if new.counted else totals
                _insert(connection, account, "entries", asdict(new), "INSERT OR REPLACE")
        return new

    def raise_budget(self, budget: Budget) -> Budget:
        """Raise the budget on purpose (``python -m scenarios.budget raise``); return the old one.
        :raise LedgerError: a budget that is not larger (epsilon and delta may only grow, one of them must)."""
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        with self._transaction() as (connection, account):
            old = account.budget
            if budget.epsilon < old.epsilon or budget.delta < old.delta or budget == old:
                raise LedgerError(f"a budget is only raised: {budget} is not above the budget {old} of {self.path}")
            change = {"time": _now(), "event": "raised", "epsilon": budget.epsilon, "delta": budget.delta}
            with self._changing(connection, account):
                account.budget = budget
                account.history.append(change)
                _insert(connection, account, "history", {"number": len(account.history), **change})
        return old


def _adopt_legacy(folder: Path, path: Path, party: int, dataset: str, legacy: Sequence[str]) -> None:
    """Migrate a first-format account of this data (under ``dataset`` or an earlier key in ``legacy``) to
    ``path``; refuse, with one line, when a new account and an unmigrated old one both exist."""
    keys = [dataset, *(key for key in legacy if key != dataset)]
    olds = [folder / account_filename(key, party, "json") for key in keys]
    olds = [old for old in olds if old.is_file()]
    if not olds:
        return
    if path.exists() or len(olds) > 1:
        named = ", ".join(str(each) for each in ([path] if path.exists() else []) + olds)
        raise LedgerError(f"two accounts for this dataset at party {party}: {named}; keep one on purpose (move the "
                          f"other away): their budgets are not merged silently",
                          shared="its ledger holds two accounts for this data (an old and a new one); see its "
                                 "local note")
    old = olds[0]
    account = _read_legacy(old)
    account.dataset = dataset
    account.history.append({"time": _now(), "event": "migrated", "epsilon": account.budget.epsilon,
                            "delta": account.budget.delta})
    with _writing(path):
        if _create_file(path, account):
            os.replace(old, old.with_name(old.name + ".migrated"))
            _fsync_directory(folder)
