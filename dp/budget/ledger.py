"""A privacy-budget ledger that lasts across runs: one account per party and dataset, on disk.

What it is.  A ledger is a directory.  It holds one account *file* per (party, dataset),
``f"{dataset_key}.p{party}.json"``, so local parties sharing one directory keep separate accounts.
The dataset key is stable: ``"sha256-<first 16 hex>"`` of the party's data file contents (or of the
embedded table's file) -- :func:`dataset_key_of_file` -- or ``"name-<NAME>"`` for a name the party
declares -- :func:`dataset_key_of_name`.  An account holds the budget granted on that dataset, the
accountant that composes its spends (:mod:`dp.budget.accountants`: basic composition or zCDP), the
history of the budget (created, raised) and every spend: time (UTC, ISO 8601), the run id agreed by all
parties, the scenario or API call, epsilon, delta, rho, the mechanism, what was released, and a status:
``"reserved"`` (counted: agreed and on disk before any data is shared; a run that crashed or stopped
after that point stays so), ``"released"`` (counted: the run finished and revealed its release,
:meth:`Ledger.mark_released`) or ``"cancelled"`` (not counted: the run stopped before any data was shared).

How it is written.  :meth:`Ledger.reserve` runs under an exclusive lock (``fcntl.flock`` on the
sibling file ``<account>.lock``, held across read-check-write): it re-reads the account, checks the
new spend against the budget (:func:`dp.budget.accountants.would_exceed`), appends it and writes
ahead -- a temporary file in the same directory, flushed and ``os.fsync``-ed, ``os.replace``-d over the
account, then the directory ``fsync``-ed -- *before* the caller shares any data.  So two runs at once
cannot both pass the check, and a crash after :meth:`~Ledger.reserve` leaves the spend counted (the
run may have revealed); a crash during the write leaves the previous account whole.

Integrity.  The file carries a ``"checksum"``: sha256 over the canonical JSON of the rest (sorted
keys, no spaces).  A truncated, corrupt or hand-edited account is refused with one line and is never
reset: silently starting a fresh account would hand out the budget again.  The checksum catches
accidents and naive edits; it is not a signature (anyone who can write the file can recompute it).

Threat model.  A ledger protects a data holder against its *own* over-spending: the same rows
answered again and again until the average of the noisy answers gives them away.  It is local to each
party, and each party refuses on its own (the scenarios share the verdict so every party stops with
the refusing party's line before any data is shared).  It does not stop a party that deletes,
restores or rewrites its own ledger, or that runs with ``--ledger off``: such a party gives up its own
protection, and its data's, never another party's (each party's account covers only its own rows).
Spends are public parameters (epsilon, delta, the run id); the ledger records nothing about the rows.

Models.  OpenDP's odometers and privacy filters, Tumult Analytics' sessions with a total budget and
diffprivlib's ``BudgetAccountant`` keep this account inside one process; composition as in Dwork &
Roth 2014 (Thm 3.16) and Bun & Steinke 2016 (zCDP), see :mod:`dp.budget.accountants`.
"""
from __future__ import annotations

import datetime as _dt
import errno
import fcntl
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from dp.budget.accountants import (PURE_ONLY, Accountant, Budget, Spend, check_accountant, total_spent,
                                   would_exceed)

__all__ = ["LedgerError", "BudgetExceeded", "refusal_lines", "Entry", "Ledger", "default_ledger_directory",
           "ledger_disabled",
           "dataset_key_of_file", "dataset_key_of_name", "account_filename", "list_accounts", "ENVIRONMENT_VARIABLE",
           "FORMAT", "LOCK_TIMEOUT"]

#: The environment variable naming the ledger directory (``off`` disables the ledger).
ENVIRONMENT_VARIABLE = "PRIVATE_USTATS_LEDGER"
#: The format tag of an account file.
FORMAT = "private-ustats ledger 1"
#: How long (seconds) :meth:`Ledger.reserve` waits for another run holding the account's lock.
LOCK_TIMEOUT = 60.0

_STATUSES = ("reserved", "released", "cancelled")
_KEY = re.compile(r"^(sha256-[0-9a-f]{16}|name-[A-Za-z0-9_][A-Za-z0-9._-]{0,63})$")
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_ACCOUNT = re.compile(r"^(?P<dataset>.+)\.p(?P<party>[0-9]+)\.json$")


class LedgerError(ValueError):
    """A ledger that cannot be used as asked (one plain line).

    The message is for this party (it may name the ledger file, the dataset key, the budget figures);
    ``shared`` is the line the other parties may see (:func:`dp.budget.agreement.agree_spend`), without
    a path, a key (the hash of the data file) or a figure of the account; ``None`` when the message
    itself carries nothing of the kind.
    """

    def __init__(self, message: str, *, shared: str | None = None) -> None:
        super().__init__(message)
        self.shared = shared


class BudgetExceeded(LedgerError):
    """The spend of this run does not fit the budget left (one plain line: the reason; ``shared``: the
    line the other parties see, :func:`refusal_lines`)."""


def refusal_lines(reason: str, spend: Spend, budget: Budget, dataset: str, path: Path | str) -> tuple[str, str]:
    """``(shared, local)``: the two texts of a refused spend.

    ``shared`` is what the other parties see (``its privacy budget for this data does not cover this
    run (epsilon 1); see its local note``): the run's own spend, which is public, and nothing of the
    account -- not its key (the unsalted hash of the data file: a party that knows all but one cell
    could test guesses), its file or its figures.  An account of delta 0 asked for a delta (the in-MPC
    sampler's truncation) says so and names the way out, pure-DP party noise: a budget's delta of 0 is
    a policy, not row data.  ``local`` is this party's own note: ``reason`` (spent, needed, budget),
    the dataset key and the ledger file.
    """
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
    """One spend recorded in an account (what :meth:`Ledger.reserve` returns).

    ``number`` is its position in the account (1, 2, ...), which :meth:`Ledger.cancel` uses to find it.
    """

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
        """The spend as the accountants see it."""
        return Spend(self.epsilon, self.delta, self.rho, self.mechanism, self.what)

    @property
    def counted(self) -> bool:
        """Whether it counts against the budget (every status but ``"cancelled"``)."""
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
    """``"sha256-<first 16 hex>"`` of the contents of the data file ``path``.

    :raise LedgerError: the file cannot be read.
    """
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as exc:
        raise LedgerError(f"cannot read data file {path} to key its ledger account: {exc.strerror or exc}",
                          shared=f"cannot read its data file to key its privacy budget: {exc.strerror or exc}"
                          ) from None
    return f"sha256-{digest.hexdigest()[:16]}"


def dataset_key_of_name(name: str) -> str:
    """``"name-<NAME>"`` for a declared dataset name (letters, digits, ``.``, ``_``, ``-``; at most 64).

    :raise LedgerError: a name that is empty, too long or would not make a plain file name.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise LedgerError(f"dataset name must be 1 to 64 letters, digits, '.', '_' or '-' (not starting with "
                          f"'.' or '-'), got {name!r}")
    return f"name-{name}"


def account_filename(dataset: str, party: int) -> str:
    """``f"{dataset}.p{party}.json"``, after checking both."""
    _check_key(dataset)
    _check_party(party)
    return f"{dataset}.p{party}.json"


def list_accounts(directory: Path | str) -> list[Path]:
    """The account files in ``directory`` (sorted; none if it does not exist)."""
    folder = Path(directory)
    if not folder.is_dir():
        return []
    found = []
    for path in folder.iterdir():
        match = _ACCOUNT.match(path.name)
        if match and _KEY.match(match.group("dataset")) and path.is_file():
            found.append(path)
    return sorted(found)


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


def _canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def _checksum(document: dict[str, Any]) -> str:
    body = {key: value for key, value in document.items() if key != "checksum"}
    return "sha256:" + hashlib.sha256(_canonical(body)).hexdigest()


def _refused(path: Path) -> LedgerError:
    return LedgerError(f"ledger file {path} fails its checksum: refusing to use it; it is never reset silently: "
                       f"restore it or remove it on purpose", shared=_UNUSABLE)


#: the shared line of an account file that cannot be used (its path stays in the local note)
_UNUSABLE = "its ledger account for this data cannot be used (corrupt, edited or moved); see its local note"


def _fsync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def _write_atomically(path: Path, document: dict[str, Any]) -> None:
    """Write-ahead: a temporary file beside ``path``, flushed and fsync-ed, replaced over ``path``, then the
    directory fsync-ed (so the rename itself survives a power loss)."""
    document = {**document, "checksum": _checksum(document)}
    data = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=True, allow_nan=False).encode("ascii") + b"\n"
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            os.fchmod(stream.fileno(), 0o600)
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(path.parent)


def _entry_of(record: Any, number: int) -> Entry:
    if not isinstance(record, dict):
        raise TypeError("entry")
    rho = record["rho"]
    entry = Entry(time=str(record["time"]), run_id=str(record["run_id"]), scenario=str(record["scenario"]),
                  epsilon=float(record["epsilon"]), delta=float(record["delta"]),
                  rho=None if rho is None else float(rho), mechanism=str(record["mechanism"]),
                  what=str(record["what"]), status=str(record["status"]), number=number)
    if entry.status not in _STATUSES:
        raise ValueError("status")
    _ = entry.spend  # validates the numbers
    return entry


def _change_of(item: Any) -> dict[str, Any]:
    """One change of the budget, checked: ``{"time", "event", "epsilon", "delta"}``."""
    if not isinstance(item, dict) or item["event"] not in ("created", "raised"):
        raise ValueError("history")
    Budget(item["epsilon"], item["delta"])
    return {"time": str(item["time"]), "event": item["event"], "epsilon": float(item["epsilon"]),
            "delta": float(item["delta"])}


def _record_of(entry: Entry) -> dict[str, Any]:
    record = asdict(entry)
    del record["number"]
    return record


@dataclass(frozen=True)
class _Account:
    """The parsed content of an account file."""

    dataset: str
    party: int
    accountant: Accountant
    budget: Budget
    created: str
    history: tuple[dict[str, Any], ...]
    entries: tuple[Entry, ...]

    def document(self) -> dict[str, Any]:
        return {"format": FORMAT, "dataset": self.dataset, "party": self.party, "accountant": self.accountant,
                "budget": {"epsilon": self.budget.epsilon, "delta": self.budget.delta}, "created": self.created,
                "history": list(self.history), "entries": [_record_of(entry) for entry in self.entries]}


def _read(path: Path) -> _Account:
    """Read and verify ``path``; one-line :class:`LedgerError` if it is unreadable, corrupt or edited."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise LedgerError(f"cannot read ledger file {path}: {exc.strerror or exc}",
                          shared=f"cannot read its ledger account: {exc.strerror or exc}") from None
    try:
        document = json.loads(data.decode("ascii"))
        if not isinstance(document, dict) or document.get("checksum") != _checksum(document):
            raise _refused(path)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise _refused(path) from None
    try:
        if document["format"] != FORMAT:
            raise ValueError("format")
        budget = document["budget"]
        account = _Account(dataset=_check_key(document["dataset"]), party=_check_party(document["party"]),
                           accountant=check_accountant(document["accountant"]),
                           budget=Budget(budget["epsilon"], budget["delta"]), created=str(document["created"]),
                           history=tuple(_change_of(item) for item in document["history"]),
                           entries=tuple(_entry_of(record, number)
                                         for number, record in enumerate(document["entries"], start=1)))
    except (KeyError, TypeError, ValueError):
        raise LedgerError(f"ledger file {path} is not an account this version reads ({FORMAT}): refusing to use "
                          f"it; it is never reset silently: restore it or remove it on purpose",
                          shared=_UNUSABLE) from None
    if path.name != f"{account.dataset}.p{account.party}.json":
        raise LedgerError(f"ledger file {path} holds the account of {account.dataset} at party {account.party}: "
                          f"refusing a file moved or copied under another name", shared=_UNUSABLE)
    return account


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


@contextmanager
def _locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``<path>.lock`` (created if missing, never removed: removing it would
    let two runs lock two different files)."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        handle = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise LedgerError(f"cannot open the lock file {lock_path} of the ledger: {exc.strerror or exc}",
                          shared=f"cannot lock its ledger account: {exc.strerror or exc}") from None
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise LedgerError(f"cannot lock ledger file {path}: {exc.strerror or exc}",
                                      shared=f"cannot lock its ledger account: {exc.strerror or exc}") from None
                if time.monotonic() >= deadline:
                    raise LedgerError(f"ledger file {path} stayed locked by another run for {timeout:g} s",
                                      shared=f"its ledger account stayed locked by another run for {timeout:g} s"
                                      ) from None
                time.sleep(0.02)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        os.close(handle)


def _write(path: Path, account: _Account) -> None:
    try:
        _write_atomically(path, account.document())
    except OSError as exc:
        raise LedgerError(f"cannot write ledger file {path}: {exc.strerror or exc}",
                          shared=f"cannot write its ledger account: {exc.strerror or exc}") from None


class Ledger:
    """An open account: one party's budget and spends on one dataset (see the module's docstring).

    Open it with :meth:`open` (creates the account with a budget, or keeps the existing one),
    :meth:`create` (only a new one) or :meth:`read` (an existing file, for showing it).  Every mistake
    is a :class:`LedgerError` (a ``ValueError``) with one plain line.  The properties show the account
    as last read or written by this object; :meth:`reserve` and :meth:`cancel` re-read it under the lock.
    """

    def __init__(self, *, path: Path, account: _Account, lock_timeout: float = LOCK_TIMEOUT) -> None:
        self.path = path
        self._account = account
        self.lock_timeout = lock_timeout

    # -- opening -----------------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path | str, *, party: int, dataset: str, budget: Budget | None,
             accountant: Accountant, lock_timeout: float = LOCK_TIMEOUT) -> Ledger:
        """Open the account of ``party`` on ``dataset`` in ``directory``, creating it with ``budget`` if new.

        An existing account keeps its budget: a ``budget`` that differs is refused (raising is done on
        purpose with ``python -m scenarios.budget raise``, never silently); so is another accountant.

        :param directory: the ledger directory (created if missing); not ``off``.
        :param party: this party's index.
        :param dataset: the dataset key (:func:`dataset_key_of_file`, :func:`dataset_key_of_name`).
        :param budget: the budget for a new account (``--budget``), or ``None``.
        :param accountant: ``"basic"`` or ``"zcdp"`` (the latter needs a budget delta > 0).
        :raise LedgerError: no budget for a new account, a different budget or accountant, a corrupt
            file, a directory that is not writable.
        """
        folder, path = cls._place(directory, party, dataset)
        accountant = check_accountant(accountant)
        _prepare_directory(folder)
        with _locked(path, lock_timeout):
            if path.exists():
                account = _read(path)
                cls._same_terms(path, account, budget, accountant)
            else:
                if budget is None:
                    # no party here: every caller's line already names it ("error: party 0: ...")
                    raise LedgerError(f"no privacy budget for dataset {dataset}: create one with "
                                      f"--budget EPS[:DELTA] (or python -m scenarios.budget)",
                                      shared="it has no privacy budget for this data: create one with --budget "
                                             "EPS[:DELTA] (or python -m scenarios.budget create); see its local note")
                account = cls._new_account(party, dataset, budget, accountant)
                _write(path, account)
        return cls(path=path, account=account, lock_timeout=lock_timeout)

    @classmethod
    def create(cls, directory: Path | str, *, party: int, dataset: str, budget: Budget, accountant: Accountant,
               lock_timeout: float = LOCK_TIMEOUT) -> Ledger:
        """Create a new account; refuse if it exists (``python -m scenarios.budget create``)."""
        folder, path = cls._place(directory, party, dataset)
        accountant = check_accountant(accountant)
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        _prepare_directory(folder)
        with _locked(path, lock_timeout):
            if path.exists():
                existing = _read(path)
                raise LedgerError(f"account {path} exists already (budget {existing.budget}, accountant "
                                  f"{existing.accountant}): raise it with python -m scenarios.budget raise")
            account = cls._new_account(party, dataset, budget, accountant)
            _write(path, account)
        return cls(path=path, account=account, lock_timeout=lock_timeout)

    @classmethod
    def read(cls, path: Path | str) -> Ledger:
        """An existing account file, verified, whatever its accountant (for showing it)."""
        path = Path(path)
        if not path.exists():
            raise LedgerError(f"no ledger account {path}")
        return cls(path=path, account=_read(path))

    @staticmethod
    def _place(directory: Path | str, party: int, dataset: str) -> tuple[Path, Path]:
        if ledger_disabled(directory):
            raise LedgerError("the ledger is off (--ledger off or PRIVATE_USTATS_LEDGER=off): no account to open")
        folder = Path(directory).expanduser()
        return folder, folder / account_filename(dataset, party)

    @staticmethod
    def _new_account(party: int, dataset: str, budget: Budget, accountant: Accountant) -> _Account:
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        if accountant == "zcdp" and budget.delta <= 0:
            raise LedgerError("the zcdp accountant needs a budget delta > 0 to state its total in epsilon "
                              "(Bun & Steinke 2016, Prop. 1.3): give --budget EPS:DELTA")
        now = _now()
        return _Account(dataset=dataset, party=party, accountant=accountant, budget=budget, created=now,
                        history=({"time": now, "event": "created", "epsilon": budget.epsilon,
                                  "delta": budget.delta},), entries=())

    @staticmethod
    def _same_terms(path: Path, account: _Account, budget: Budget | None, accountant: Accountant) -> None:
        if account.accountant != accountant:
            raise LedgerError(f"ledger account {path} uses the {account.accountant} accountant, this run asks for "
                              f"{accountant}: one account keeps one accountant",
                              shared=f"its ledger account for this data uses the {account.accountant} accountant, "
                                     f"this run asks for {accountant}: one account keeps one accountant")
        if budget is not None and budget != account.budget:
            raise LedgerError(f"ledger account {path} has the budget {account.budget}; --budget {budget} differs: "
                              f"raise it on purpose with python -m scenarios.budget raise, never silently",
                              shared="its ledger account for this data has another budget than --budget: an "
                                     "existing account keeps its own (drop --budget, or raise it on purpose with "
                                     "python -m scenarios.budget raise); see its local note")

    # -- what it holds -----------------------------------------------------------------------------

    @property
    def directory(self) -> Path:
        return self.path.parent

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
    def created(self) -> str:
        return self._account.created

    @property
    def history(self) -> tuple[dict[str, Any], ...]:
        """The budget's changes: ``{"time", "event": "created" | "raised", "epsilon", "delta"}``."""
        return self._account.history

    @property
    def spends(self) -> tuple[Entry, ...]:
        """Every entry, counted or cancelled, in order."""
        return self._account.entries

    def counted(self) -> list[Spend]:
        """The spends that count against the budget."""
        return [entry.spend for entry in self._account.entries if entry.counted]

    def spent(self) -> tuple[float, float]:
        """``(epsilon, delta)`` spent, composed by the account's accountant (zCDP: at the budget's delta)."""
        return total_spent(self.accountant, self.counted(), self.budget.delta)

    def left(self) -> tuple[float, float]:
        """``(epsilon, delta)`` left: the budget minus :meth:`spent`, at least 0.  Under zCDP the delta is
        the budget's once any zCDP spend exists, and the epsilon left is what matters."""
        epsilon, delta = self.spent()
        return max(0.0, self.budget.epsilon - epsilon), max(0.0, self.budget.delta - delta)

    def summary(self) -> str:
        """One line: the account, its budget, spent and left."""
        spent, left = self.spent(), self.left()
        return (f"privacy budget of {self.dataset} at party {self.party} ({self.path}, {self.accountant} "
                f"accountant): budget {self.budget}; spent epsilon {spent[0]:g}, delta {spent[1]:g}; "
                f"left epsilon {left[0]:g}, delta {left[1]:g}")

    def reload(self) -> None:
        """Re-read the account from disk (verifying it)."""
        self._account = _read(self.path)

    # -- changing it ---------------------------------------------------------------------------------

    def reserve(self, spend: Spend, *, run_id: str, scenario: str) -> Entry:
        """Record ``spend`` for run ``run_id`` of ``scenario`` if it fits, *before* any data is shared.

        Under the account's lock: re-read and verify the file, check the spend against the budget,
        append it with status ``"reserved"`` and write ahead (temporary file, fsync, atomic replace,
        fsync of the directory).  A crash after this returns leaves the spend counted.

        :raise BudgetExceeded: the spend does not fit (its message: the reason, the dataset, the file).
        :raise LedgerError: a corrupt file, a directory that is not writable, bad arguments.
        """
        if not isinstance(spend, Spend):
            raise LedgerError(f"spend must be a Spend, got {spend!r}")
        run_id = _check_label(run_id, "run id")
        scenario = _check_label(scenario, "scenario")
        with _locked(self.path, self.lock_timeout):
            account = self._reread()
            reason = would_exceed(account.accountant, account.budget,
                                  [entry.spend for entry in account.entries if entry.counted], spend)
            if reason is not None:
                self._account = account
                shared, local = refusal_lines(reason, spend, account.budget, account.dataset, self.path)
                raise BudgetExceeded(local, shared=shared)
            entry = Entry(time=_now(), run_id=run_id, scenario=scenario, epsilon=spend.epsilon, delta=spend.delta,
                          rho=spend.rho, mechanism=spend.mechanism, what=spend.what, status="reserved",
                          number=len(account.entries) + 1)
            account = replace(account, entries=account.entries + (entry,))
            _write(self.path, account)
            self._account = account
        return entry

    def cancel(self, entry: Entry) -> None:
        """Mark ``entry`` ``"cancelled"`` (no longer counted), under the same lock and write discipline.

        Only for a run stopped before any data was shared (another party refused): a run that shared
        anything has spent its budget, finished or not.
        """
        self._set_status(entry, "cancelled")

    def mark_released(self, entry: Entry) -> None:
        """Mark the ``"reserved"`` ``entry`` ``"released"`` (still counted) once its run has revealed its release.

        Called at each party after the job's body returned (:meth:`dp.budget.agreement.Reservation.mark_released`).
        Only the label changes: a reserved entry counts the same, so a run that crashes before this
        point -- perhaps after its reveal -- stays ``"reserved"`` and counted, and the ledger never
        under-counts.  A cancelled entry is never marked released.
        """
        self._set_status(entry, "released", only_from="reserved")

    def _set_status(self, entry: Entry, status: str, *, only_from: str | None = None) -> None:
        """Set the status of ``entry`` under the lock (re-read, write ahead); unchanged unless it is ``only_from``."""
        if not isinstance(entry, Entry):
            raise LedgerError(f"entry must be an Entry, got {entry!r}")
        with _locked(self.path, self.lock_timeout):
            account = self._reread()
            position = entry.number - 1
            if not (0 <= position < len(account.entries)) or account.entries[position].run_id != entry.run_id \
                    or account.entries[position].time != entry.time:
                raise LedgerError(f"ledger file {self.path} holds no entry {entry.number} of run {entry.run_id}")
            current = account.entries[position].status
            if current != status and (only_from is None or current == only_from):
                entries = list(account.entries)
                entries[position] = replace(entries[position], status=status)
                account = replace(account, entries=tuple(entries))
                _write(self.path, account)
            self._account = account

    def raise_budget(self, budget: Budget) -> Budget:
        """Raise the budget on purpose (``python -m scenarios.budget raise``); return the old one.

        :raise LedgerError: a budget that is not larger (epsilon and delta may only grow, one of them
            must), or a zCDP account's delta 0.
        """
        if not isinstance(budget, Budget):
            raise LedgerError(f"budget must be a Budget, got {budget!r}")
        with _locked(self.path, self.lock_timeout):
            account = self._reread()
            old = account.budget
            if budget.epsilon < old.epsilon or budget.delta < old.delta or budget == old:
                raise LedgerError(f"a budget is only raised: {budget} is not above the budget {old} of {self.path}")
            account = replace(account, budget=budget, history=account.history + (
                {"time": _now(), "event": "raised", "epsilon": budget.epsilon, "delta": budget.delta},))
            _write(self.path, account)
            self._account = account
        return old

    def _reread(self) -> _Account:
        if not self.path.exists():
            raise LedgerError(f"ledger file {self.path} has disappeared: refusing to start a fresh account "
                              f"silently; restore it or create it again on purpose",
                              shared="its ledger account for this data has disappeared during the run; see its "
                                     "local note")
        account = _read(self.path)
        if (account.dataset, account.party) != (self._account.dataset, self._account.party):
            raise LedgerError(f"ledger file {self.path} now holds another account", shared=_UNUSABLE)
        return account
