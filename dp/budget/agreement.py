"""The parties agree on a run's privacy spend before any data is shared; each party's ledger may refuse.
The one implementation of docs/design.md ("Noise", last bullet), used by every scenario and by
:func:`dp.umpc.scripting.release`.  Threat model: passive, static coalition of ``t < m/2`` parties; what
crosses parties is public by declaration (random bytes, the accountant, the spend, a refusing party's
generic line), never a dataset key, ledger path or budget figure.  Protocol: docs/budget.md."""
from __future__ import annotations

import contextvars
import hashlib
import os
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from dp.budget.accountants import Accountant, Budget, Spend, parse_budget
from dp.budget.ledger import (Ledger, LedgerError, account_filename, dataset_key_of_file, dataset_key_of_name,
                              dataset_key_of_rows, default_ledger_directory, ledger_disabled)
from secure.errors import InputError

__all__ = ["SpendRequest", "Reservation", "Settlement", "agree_spend", "active_reservation", "account_keys",
           "pure_budget", "refusal_texts", "with_command", "create_hint", "RUN_NONCE_BYTES"]

#: random bytes each party contributes to the run id
RUN_NONCE_BYTES = 16


@dataclass(frozen=True, kw_only=True)
class SpendRequest:
    """What this party's run spends, and from which account: a declared ``dataset_name`` or the parsed rows
    of ``data_file`` (``{pid}``: the party's index); ``ledger="off"`` keeps no budget.  The fields: docs/budget.md."""

    spend: Spend
    scenario: str
    data_file: str | None = None
    dataset_name: str | None = None
    budget: Budget | None = None
    ledger: str | os.PathLike[str] | None = None
    accountant: Accountant = "basic"
    exempt: str | None = None
    command: tuple[str, ...] | None = None
    in_script: bool = False


#: MPyC's options that name one party's own seat: dropped from the command a refusal prints
_OWN_SEAT = ("-I", "--index")


def with_command(request: SpendRequest | None, argv: Sequence[str]) -> SpendRequest | None:
    """``request`` with the job's command line (``python -m <its scenario> <argv>``, without this party's
    ``-I``), for the refusal of a missing account (:class:`SpendRequest` ``command``)."""
    if request is None or request.command is not None:
        return request
    words: list[str] = []
    skip = False
    for word in argv:
        if not skip and word not in _OWN_SEAT and not any(
                word.startswith(option) and word[len(option):].lstrip("=").isdigit() for option in _OWN_SEAT):
            words.append(word)
        skip = not skip and word in _OWN_SEAT
    return replace(request, command=("python", "-m", request.scenario, *words))


def create_hint(request: SpendRequest, party: int, parties: int) -> str:
    """How to create this party's missing account, exactly (this party's local note: it may name paths).
    Details: docs/budget.md."""
    ledger = [] if request.ledger is None else ["--ledger", os.fspath(request.ledger)]
    dataset = (["--dataset", request.dataset_name] if request.dataset_name is not None else
               ["--data", request.data_file] if request.data_file is not None else [])
    which = ",".join(str(index) for index in range(parties)) if request.data_file is None or \
        "{pid}" in request.data_file or request.dataset_name is not None else str(party)
    accountant = [] if request.accountant == "basic" else ["--accountant", request.accountant]
    made = shlex.join(["python", "-m", "scenarios.budget", *ledger, "create", *dataset, "--party", which, "--budget",
                       "EPS", *accountant])
    if request.in_script:
        return (f"create one by passing budget='EPS' (or budget='EPS:DELTA') to the release call, e.g. "
                f"dp.umpc.release(query, rows, budget='1', ...), or run {made}")
    if request.command is not None:
        command = shlex.join([*request.command, "--budget", "EPS"])
        return f"create one: add --budget EPS[:DELTA] to the command, {command} -- or run {made}"
    return f"create one with --budget EPS[:DELTA], or run {made}"


@dataclass(frozen=True)
class Settlement:
    """What a run spent, once its release is known (:meth:`Reservation.settle`): the release's ``delta``, the
    ``reserved`` one and the ``ledger_delta`` this party's entry now holds (docs/budget.md)."""

    delta: float
    reserved: float
    ledger_delta: float | None
    refused: str | None = None

    def record(self) -> dict[str, Any]:
        return {"delta_reserved": self.reserved, "ledger_delta": self.ledger_delta}


@dataclass
class Reservation:
    """The outcome of the agreement at this party: what it spent, from which account (docs/budget.md)."""

    run_id: str
    spend: Spend
    ledger: Ledger | None = None
    entry: Any = None
    note: str | None = None
    #: the delta reserved before the run, once :meth:`settle` lowered :attr:`spend` to the release's
    reserved_delta: float | None = None

    def mark_released(self) -> bool:
        """Mark this run's entry ``released`` (the job's body returned: the release was revealed); whether it now is
        (``False`` without a ledger).  Details: docs/budget.md."""
        if self.ledger is None or self.entry is None:
            return False
        try:
            self.ledger.mark_released(self.entry)
        except (LedgerError, OSError):
            return False
        return True

    def settle(self, delta: float) -> Settlement:
        """After the reveal: settle this run's entry to ``delta``, the delta its release states (at most the
        reserved one), and mark it ``released`` (:meth:`dp.budget.ledger.Ledger.settle`). Details: docs/budget.md."""
        reserved = self.spend.delta
        if self.ledger is None or self.entry is None:
            return Settlement(delta=delta, reserved=reserved, ledger_delta=None)
        try:
            self.entry = self.ledger.settle(self.entry, delta)
        except (LedgerError, OSError) as exc:
            if isinstance(exc, LedgerError):
                self.mark_released()
            return Settlement(delta=delta, reserved=reserved, ledger_delta=reserved, refused=_one_line(exc))
        self.spend = self.entry.spend
        self.reserved_delta = reserved
        return Settlement(delta=delta, reserved=reserved, ledger_delta=self.entry.delta)

    def describe(self) -> str:
        """One line for the output: the account, this run's spend, spent and left (or why none is kept)."""
        if self.ledger is None:
            return f"privacy budget: {self.note}"
        _g = "{:.6g}".format
        spent_eps, spent_delta = self.ledger.spent()
        left_eps, left_delta = self.ledger.left()
        budget = self.ledger.budget
        with_delta = bool(self.spend.delta or budget.delta)
        reserved = "" if self.reserved_delta in (None, self.spend.delta) else f", reserved {_g(self.reserved_delta)}"
        run = f"epsilon {_g(self.spend.epsilon)}" + (f" (delta {_g(self.spend.delta)}{reserved})" if with_delta else "")
        spent = f"epsilon {_g(spent_eps)} of {_g(budget.epsilon)}" + (
            f" (delta {_g(spent_delta)} of {_g(budget.delta)})" if with_delta else "")
        left = f"epsilon {_g(left_eps)}" + (f" (delta {_g(left_delta)})" if with_delta else "")
        return (f"privacy budget: account {self.ledger.path} ({self.ledger.accountant} accountant): this run "
                f"{run}; spent {spent}; left {left} (run {self.run_id[:12]})")


def account_keys(request: SpendRequest, party: int) -> tuple[str, tuple[str, ...]]:
    """``(key, earlier keys)`` of this party's account: the declared name, else the digest of its data file's parsed
    rows, and the first format's key of the same file, under which an old account is migrated (docs/budget.md).
    :raise dp.budget.ledger.LedgerError: no dataset to key the account by; an unreadable file."""
    from secure.reader import check_data_file

    if request.dataset_name is not None:
        return dataset_key_of_name(request.dataset_name), ()
    if request.data_file is None:
        raise LedgerError("no dataset to keep a privacy budget for: give dataset='NAME' to the release call"
                          if request.in_script else "no dataset to keep a privacy budget for: give --dataset NAME")
    path = request.data_file.replace("{pid}", str(party))
    try:
        check_data_file(path)  # a missing data file is the problem, not its budget: the reader's own line
    except InputError as exc:
        raise LedgerError(exc.detail or str(exc), shared=str(exc)) from None
    return dataset_key_of_rows(path), (dataset_key_of_file(path),)


def pure_budget(*, party: int, budget: Budget | str | None, ledger: str | os.PathLike[str] | None = None,
                dataset_name: str | None = None, data_file: str | None = None, exempt: str | None = None) -> bool:
    """Whether this party's run spends from a pure-DP budget (delta 0): the ``budget`` given for it (an invalid
    ``EPS[:DELTA]`` counts as none), else its existing account's, read without changing anything (docs/budget.md)."""
    directory: Any = ledger if ledger is not None else default_ledger_directory()
    if exempt is not None or ledger_disabled(directory):
        return False
    if isinstance(budget, str):
        try:
            budget = parse_budget(budget)
        except ValueError:
            budget = None
    if isinstance(budget, Budget):
        return budget.delta == 0
    request = SpendRequest(spend=Spend(1.0), scenario="pure_budget", data_file=data_file, dataset_name=dataset_name)
    try:
        key, earlier = account_keys(request, party)
        folder = Path(directory).expanduser()
        for path in [folder / account_filename(key, party), *(folder / account_filename(each, party, "json")
                                                              for each in (key, *earlier))]:
            if path.is_file():
                return Ledger.read(path).budget.delta == 0
        return False
    except (LedgerError, ValueError, OSError):
        return False


def refusal_texts(exc: BaseException) -> tuple[str, str | None]:
    """``(shared, local)``: the line a ledger error sends to the other parties, and this party's own note.
    Details: docs/budget.md."""
    local = _one_line(exc)
    shared = getattr(exc, "shared", None)
    if isinstance(exc, OSError):  # its message names a file
        shared = f"its privacy-budget ledger cannot be used: {exc.strerror or type(exc).__name__}; see its local note"
    shared = None if shared is None else " ".join(str(shared).split())
    if shared is None or shared == local:
        return local, None
    return shared, local


def _open(request: SpendRequest, party: int, parties: int = 1) -> tuple[Ledger | None, str | None]:
    """``(ledger, note)``: this party's open account, or the note saying why none is kept.
    :raise dp.budget.ledger.LedgerError: the account cannot be used (one plain line)."""
    from secure.session import set_phase

    if request.exempt is not None:
        return None, request.exempt
    directory: Any = request.ledger if request.ledger is not None else default_ledger_directory()
    if ledger_disabled(directory):
        how = "--ledger off" if request.ledger is not None else "PRIVATE_USTATS_LEDGER=off"
        return None, f"no privacy budget kept ({how})"
    set_phase("budget")  # only where a ledger is kept: the phase logs of runs without one stay as they were
    key, earlier = account_keys(request, party)
    return Ledger.open(Path(directory), party=party, dataset=key, budget=request.budget, accountant=request.accountant,
                       legacy=earlier, create_hint=create_hint(request, party, parties),
                       in_script=request.in_script), None


async def agree_spend(request: SpendRequest | None) -> Reservation | None:
    """Agree on this run's spend with every party and reserve it in this party's ledger (docs/budget.md): the
    reservation, or ``None`` for a run that spends nothing.  :raise secure.errors.InputError: at every party alike,
    when any party's ledger refuses (that party's one line), or the accountants or spends differ."""
    if request is None:
        _ACTIVE.set(None)
        return None
    from mpyc.runtime import mpc

    from secure.session import agree_verdict

    ledger: Ledger | None = None
    note: str | None = None
    error: str | None = None
    detail: str | None = None
    try:
        ledger, note = _open(request, int(mpc.pid), len(mpc.parties))
    except (LedgerError, ValueError, OSError) as exc:
        error, detail = refusal_texts(exc)
    await agree_verdict(error, detail=detail)
    spend = request.spend
    offer = (secrets.token_bytes(RUN_NONCE_BYTES), ledger.accountant if ledger is not None else None,
             [float(spend.epsilon), float(spend.delta), None if spend.rho is None else float(spend.rho)])
    offers = await mpc.transfer(offer)
    run_id = hashlib.sha256(b"".join(bytes(nonce) for nonce, _, _ in offers)).hexdigest()
    kinds = {pid: kind for pid, (_, kind, _) in enumerate(offers) if kind is not None}
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"party {pid}: {kind}" for pid, kind in kinds.items())
        raise InputError(f"all parties: the parties' ledgers use different accountants ({listed}); every party "
                         "must account the same way (--accountant)")
    spends = [list(amounts) for _, _, amounts in offers]
    if any(amounts != spends[0] for amounts in spends):
        raise InputError("all parties: the parties computed different privacy spends for this run; their "
                         "parameters differ")
    entry: Any = None
    if ledger is not None:
        try:
            entry = ledger.reserve(spend, run_id=run_id, scenario=request.scenario)
        except (LedgerError, ValueError, OSError) as exc:
            error, detail = refusal_texts(exc)
    try:
        await agree_verdict(error, detail=detail)
    except InputError:
        if ledger is not None and entry is not None:
            ledger.cancel(entry)  # another party refused: nothing was shared, this run spends nothing here
        raise
    reservation = Reservation(run_id=run_id, spend=spend, ledger=ledger, entry=entry, note=note)
    _ACTIVE.set(reservation)
    return reservation


#: the reservation of the job running in this context (set by :func:`agree_spend`), for the job's budget line
_ACTIVE: contextvars.ContextVar[Reservation | None] = contextvars.ContextVar("private_ustats_reservation",
                                                                             default=None)


def active_reservation() -> Reservation | None:
    """The reservation :func:`agree_spend` made last in this context (the running job's), or ``None``."""
    return _ACTIVE.get()


def _one_line(exc: BaseException) -> str:
    """The message of a ledger error as one line (an ``OSError`` names its file and reason)."""
    if isinstance(exc, OSError) and not str(exc).strip():
        return type(exc).__name__
    if isinstance(exc, OSError) and exc.filename:
        return f"ledger: {exc.filename}: {exc.strerror or exc}"
    return " ".join(str(exc).split())
