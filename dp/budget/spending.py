"""The one path of every family's ``release`` to the ledger: its spend and account (:func:`spend_request`), reserved
at every party before any data is shared (:func:`reserve`), settled after the reveal (``Reservation.settle``).
Threat model: as :mod:`dp.budget.agreement`; protocol and exemptions: docs/budget.md."""
from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from dp.budget.accountants import Budget, Spend, check_accountant, parse_budget
from dp.budget.agreement import Reservation, SpendRequest, agree_spend, with_command

__all__ = ["spend_request", "reserve", "MPC_TRUNCATION_DELTA", "EMBEDDED_DATA"]

#: the in-MPC discrete Laplace sampler's truncation bound per released sum (``delta_s``, :mod:`dp.secret_noise`)
MPC_TRUNCATION_DELTA = 2.0 ** -40

#: the embedded public datasets' directory: exempt unless a ledger, budget or name is given (docs/budget.md)
EMBEDDED_DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "scenarios", "data")


def spend_request(spend: Spend, *, release: str, ledger: str | os.PathLike[str] | None = None,
                  budget: Budget | str | None = None, dataset_name: str | None = None, dataset: str | None = None,
                  accountant: str = "basic", data_file: str | None = None,
                  job: tuple[str, Sequence[str]] | None = None, exempt: str | None = None) -> SpendRequest:
    """This party's request: ``spend`` from the account of ``data_file`` (``{pid}`` kept) or ``dataset_name``
    (``dataset``: its other name); ``release`` or ``job`` (module, command line) names the entry; ``exempt``: why
    nothing is spent.  :raise ValueError: a bad ``budget`` or ``accountant`` (``TypeError``: of the wrong type)."""
    if dataset is not None and dataset_name is not None and dataset != dataset_name:
        raise ValueError(f"dataset and dataset_name name the same thing: give one, got {dataset!r} and "
                         f"{dataset_name!r}")
    dataset_name = dataset if dataset is not None else dataset_name

    chosen = parse_budget(budget) if isinstance(budget, str) else budget
    if chosen is not None and not isinstance(chosen, Budget):
        raise TypeError(f"budget must be a Budget or 'EPS[:DELTA]', got {budget!r}")
    kind = check_accountant(accountant)
    asked = (ledger is not None and os.fspath(ledger).strip().lower() != "off") or budget is not None \
        or dataset_name is not None
    if exempt is None and not asked and data_file is not None \
            and os.path.dirname(os.path.abspath(data_file)) == EMBEDDED_DATA:
        exempt = f"embedded public data: no budget kept; give {'--ledger/--budget' if job else 'ledger=/budget='} " \
                 "to keep one"
    return SpendRequest(spend=spend, scenario=job[0] if job is not None else release, data_file=data_file,
                        dataset_name=dataset_name, budget=chosen, ledger=ledger, accountant=kind,
                        exempt=exempt, in_script=job is None)


async def reserve(request: Callable[[], SpendRequest], *, job: tuple[str, Sequence[str]] | None = None,
                  problem: str | None = None) -> Reservation | None:
    """Every party: ``request()`` (a bad budget or accountant at one party, or ``problem``, stops every party with
    its one line), agreed and reserved in this party's ledger; a job's refusal of a missing account prints its
    command with ``--budget EPS`` added.  :raise secure.errors.InputError: at every party alike."""
    from secure.session import agree_verdict

    made = None
    try:
        made = request()
    except (ValueError, TypeError) as exc:
        problem = problem or f"budget: {exc}"
    await agree_verdict(problem)
    assert made is not None
    return await agree_spend(with_command(made, job[1]) if job is not None else made)
