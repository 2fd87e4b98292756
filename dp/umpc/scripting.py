"""Pi_U-MPC for scripts: a query by statistic name and declared columns, run across parties or simulated.

:class:`Query`, :func:`release` (on parties), :func:`simulate` (one process), :func:`exact` (non-private
reference).  Threat model of :func:`release`: passive, static, ``t < m/2``; the parties learn the noisy
sums, the public row counts and the agreed parameters.  Sinh & Ramon, Protocol 3.1
(:mod:`dp.umpc.protocol`); details: docs/umpc_analysis.md."""
from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dp.budget.accountants import Budget, Spend
from dp.budget.agreement import pure_budget
from dp.budget.spending import MPC_TRUNCATION_DELTA, reserve, spend_request
from dp.comparison_leakage import comparison_allowance
from dp.noise_defaults import DELEGATED_NOISE, default_noise, pure_budget_line, switched_by_pure_budget
from dp.sampling import all_tuples, tuple_count
from dp.umpc.complete import histogram_possible, plan_for, run_complete, simulate_complete
from dp.umpc.delegation import delegate_size
from dp.umpc.owners import Owners
from dp.umpc.planner import PATH_CHOICES, SORT_KERNELS, PathChoice, pure_account_path
from dp.umpc.protocol import (Simulation, UStatQuery, UStatRelease, _clip_encoded, _plaintext_sums, check_rows,
                              kernel_specs, prepare_rows, run_secure)
from dp.umpc.report import local_note, public_categories
from dp.umpc.protocol import simulate as simulate_protocol
from dp.validation import check_delta, check_epsilon
from secure.counting import count_file
from secure.errors import InputError
from secure.intake import ColumnSpec, MissingPolicy, PartyRows, party_rows
from secure.kernels import KERNELS, get_kernel
from secure.public_randomness import joint_seed

if TYPE_CHECKING:
    from dp.budget.agreement import SpendRequest

__all__ = ["Query", "release", "simulate", "exact", "parse_tuples", "Statistic", "Sampling", "Clipping",
           "NoiseSource", "PathChoice", "AccountantName"]

#: the option names of the public API as types, so that a typo fails the type checker (``mypy``) as
#: well as the call (the runtime checks stay: a script need not be type-checked)
Statistic = Literal["kendall", "gini", "auc", "duplicate", "rand", "vus"]
Sampling = Literal["balanced", "uniform", "bernoulli"]
Clipping = Literal["local", "secure"]
NoiseSource = Literal["mpc", "parties"]
AccountantName = Literal["basic", "zcdp"]


def parse_tuples(tuples: Any) -> tuple[str, float]:
    """``"auto"`` -> (auto, 2.0); ``"all"`` -> (all, 0); ``"2n"`` -> (per-row, 2.0); ``5000`` -> (count, 5000)."""
    if isinstance(tuples, bool):
        raise TypeError(f"tuples must be an int, 'all' or a multiple of n like '2n', got {tuples!r}")
    if isinstance(tuples, numbers.Integral):
        if tuples < 1:
            raise ValueError(f"tuples must be at least 1, got {tuples}")
        return "count", float(tuples)
    if isinstance(tuples, str):
        text = tuples.strip().lower()
        if text in ("all", "auto"):
            return text, 2.0 if text == "auto" else 0.0
        if text.endswith("n"):
            try:
                factor = float(text[:-1] or 1)
            except ValueError:
                factor = math.nan
            if math.isfinite(factor) and factor > 0:
                return "per-row", factor
        raise ValueError(f"tuples must be an int, 'all' or a positive multiple of n like '2n', got {tuples!r}")
    raise TypeError(f"tuples must be an int, 'all' or a multiple of n like '2n', got {tuples!r}")


@dataclass(frozen=True, kw_only=True)
class Query:
    """A private U-statistic to release (Pi_U-MPC), declared with keywords and checked on entry (ValueError,
    TypeError); ``delegation``: M_HF's ``(failure, honest fraction)``.  Every parameter: docs/umpc_analysis.md."""

    statistic: Statistic
    columns: Sequence[ColumnSpec]
    epsilon: float
    delta: float = 0.0
    tuples: int | str = "auto"
    sampling: Sampling = "balanced"
    clipping: Clipping = "local"
    noise: NoiseSource | None = None
    path: PathChoice = "auto"
    delegation: tuple[float, float] | None = None
    rtt: float = 0.0
    base: UStatQuery = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.statistic, str) or self.statistic not in KERNELS:
            raise ValueError(f"unknown statistic {self.statistic!r}; choose one of: {', '.join(KERNELS)}")
        if isinstance(self.columns, (str, ColumnSpec)) or not isinstance(self.columns, Sequence):
            raise TypeError(f"columns must be a list of column declarations, got {self.columns!r}")
        columns = tuple(self.columns)
        for column in columns:
            if not isinstance(column, ColumnSpec):
                raise TypeError(f"columns must be declarations such as numeric({column!r}, lower=..., upper=...) "
                                f"or label({column!r}), got {column!r}")
        kernel_class = KERNELS[self.statistic]
        if len(columns) != len(kernel_class.columns):
            raise ValueError(f"statistic '{self.statistic}' needs {len(kernel_class.columns)} columns "
                             f"({', '.join(kernel_class.columns)}), got {len(columns)}")
        _check_roles(self.statistic, kernel_class.categories, columns)
        mode, _ = parse_tuples(self.tuples)
        if self.path in ("histogram", "sort") and mode in ("count", "per-row"):
            raise ValueError(f"path={self.path!r} computes the complete statistic over all tuples, but "
                             f"tuples={self.tuples!r} asks for sampled ones: give tuples='all' or 'auto'")
        if self.path not in PATH_CHOICES:
            raise ValueError(f"unknown path {self.path!r}; choose one of: {', '.join(PATH_CHOICES)}")
        if self.path == "sort" and self.statistic not in SORT_KERNELS:
            raise ValueError(f"path='sort' runs only {' and '.join(SORT_KERNELS)} (a rank-sum form after one secure "
                             f"sort), not '{self.statistic}': use path='histogram', path='tuples' or path='auto'")
        if self.path == "histogram" and self.clipping == "secure":
            raise ValueError("path='histogram' counts each party's rows at the party, so its clipping is local, "
                             "but clipping='secure' clips inside MPC: use path='sort', path='tuples' or path='auto'")
        if not (isinstance(self.rtt, numbers.Real) and 0 <= self.rtt <= 60000):
            raise ValueError(f"rtt must be a round-trip time in milliseconds in [0, 60000], got {self.rtt!r}")
        noise: str | None = self.noise
        if self.delegation is not None:
            delegate_size(*self.delegation)  # ValueError: a bad failure probability or honest fraction
            if self.path in ("histogram", "sort") or noise == "mpc":
                raise ValueError("delegation= chooses which parties draw the noise of sampled tuples: it takes "
                                 "path='tuples' or 'auto' and noise='parties'")
            noise = "parties"
        kernel = get_kernel(self.statistic, precision=columns[0].precision)
        object.__setattr__(self, "columns", columns)
        if noise is None:
            outputs = len(kernel.outputs([spec.width for spec in columns]))
            noise = default_noise("ustat", check_epsilon(self.epsilon) / outputs, check_delta(self.delta) / outputs)
        base = UStatQuery(kernel=kernel, specs=columns, epsilon=self.epsilon, delta=self.delta, tuples=None,
                          sampling=self.sampling, clipping=self.clipping, noise=noise, path=self.path)
        object.__setattr__(self, "base", base)

    def at(self, rows: int) -> UStatQuery:
        """The protocol's query for ``rows`` rows over all parties (``rows`` is public).
        :raise ValueError: more tuples than the ``C(n, k)`` distinct ones, or too few rows."""
        mode, amount = parse_tuples(self.tuples)
        degree = self.base.kernel.degree
        check_rows(degree, rows)
        if mode == "all":
            return self.base
        count = int(amount) if mode == "count" else max(1, int(round(amount * rows)))
        available = tuple_count(rows, degree)
        if mode == "auto":
            count = min(count, available)
        if count > available:
            raise ValueError(f"tuples={self.tuples!r} asks for {count} tuples, more than the C({rows}, {degree}) = "
                             f"{available} distinct ones; use tuples='all' or fewer")
        return replace(self.base, tuples=count)

    def public(self) -> dict[str, Any]:
        """The query's public parameters (compared across parties before any data is shared)."""
        return {"statistic": self.statistic, "epsilon": self.base.epsilon, "delta": self.base.delta,
                "tuples": str(self.tuples), "sampling": self.sampling, "clipping": self.clipping,
                "noise": self.base.noise, "path": self.path, "delegation": self.delegation, "rtt": self.rtt,
                "columns": [[spec.name, spec.lower, spec.upper, spec.precision, spec.step,
                             None if spec.categories is None else list(spec.categories)] for spec in self.columns]}


def _check_roles(statistic: str, labels: dict[int, tuple[int, ...]], columns: Sequence[ColumnSpec]) -> None:
    """A label position takes exactly its labels (``label`` / ``classes(k)``); a score is numeric."""
    for position, spec in enumerate(columns):
        allowed = labels.get(position)
        if allowed is None:
            continue
        if spec.categories is None or spec.codes != len(allowed):  # named labels: their codes are the roles
            role = "label(name)" if allowed == (0, 1) else f"classes(name, {len(allowed)})"
            raise ValueError(f"statistic '{statistic}' takes column {position + 1} ('{spec.name}') as labels "
                             f"{'/'.join(map(str, allowed))}: declare it with {role}")
    for position, spec in enumerate(columns):
        if position not in labels and labels and spec.categories is not None:
            raise ValueError(f"statistic '{statistic}' takes column {position + 1} ('{spec.name}') as a score: "
                             f"declare it with numeric(name, lower=..., upper=..., bits=...)")


def _values(query: Query, rows: Any) -> np.ndarray:
    """This party's rows as a ``(rows, columns)`` float array, checked, never reshaped (a 1-D array is one column
    only for a one-column query); InputError on a wrong shape or a missing (NaN, infinite) value, naming the column
    only, never a count, a position or a value (it may be shared as the party's verdict)."""
    names = KERNELS[query.statistic].columns
    values = rows.values if isinstance(rows, PartyRows) else rows
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"rows must be numbers, {len(names)} column(s) ({', '.join(names)}) per row") from None
    if array.ndim == 1 and len(names) == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2 or array.shape[1] != len(names):
        raise InputError(f"rows must have {len(names)} column{'s' if len(names) > 1 else ''} ({', '.join(names)}) "
                         f"per row, got shape {tuple(array.shape)}")
    bad = ~np.isfinite(array)
    if bad.any():
        column = query.columns[int(np.argmax(bad.any(axis=0)))].name
        raise InputError(f"column '{column}' has a missing value (NaN or infinite) in the rows given: fill it with a "
                         "declared value, or read the rows with a missing-value policy")
    return array


async def release(query: Query, rows: str | PartyRows | np.ndarray | Callable[[int], PartyRows] | Owners, *,
                  seed: int | None = None, ledger: str | os.PathLike[str] | None = None,
                  budget: Budget | str | None = None, dataset_name: str | None = None,
                  accountant: AccountantName = "basic",
                  dataset: str | None = None, missing: MissingPolicy | None = None, data_file: str | None = None,
                  job: tuple[str, Sequence[str]] | None = None) -> UStatRelease:
    """Release the query's private U-statistic across parties, every party with its own rows (or, an
    :class:`~dp.umpc.owners.Owners`, a campaign's servers with the owners' uploads: docs/owners.md); nothing printed.
    Steps, parameters and errors (InputError, ProtocolFailure): docs/umpc_analysis.md."""
    from mpyc.runtime import mpc

    from secure.session import agree_parameters, agree_verdict

    dataset_name = dataset if dataset_name is None else dataset_name  # both given and different: spend_request says
    data_file = getattr(rows, "source", rows if isinstance(rows, str) else None) if data_file is None else data_file
    owners = rows if isinstance(rows, Owners) else None
    if owners is not None and dataset_name not in (None, owners.plan.id):
        raise InputError(f"all servers: owners' releases spend from the campaign's account {owners.plan.id}, "
                         f"not {dataset_name!r}")
    dataset_name, data_file = (owners.plan.id, None) if owners is not None else (dataset_name, data_file)

    def account(query: Query) -> SpendRequest:
        return spend_request(_spend(query), release="dp.umpc.release", ledger=ledger, budget=budget,
                             dataset_name=dataset_name, dataset=dataset, accountant=accountant, data_file=data_file,
                             job=job)

    try:
        asked: SpendRequest | None = account(query)
    except (ValueError, TypeError):
        asked = None  # a bad budget= or accountant=: named by the budget verdict below
    notes: list[str] = []  # lines printed above the result (release.notes)
    pure_problem: str | None = None
    if asked is not None and query.delegation is None and pure_budget(  # (delegated: the ledger names what helps)
            party=int(mpc.pid), budget=asked.budget, ledger=asked.ledger, dataset_name=asked.dataset_name,
            data_file=asked.data_file, exempt=asked.exempt):
        query, note, pure_problem = pure_account_query(query, parties=len(mpc.parties), threshold=int(mpc.threshold),
                                                       budget_given=asked.budget is not None, to_options=bool(job))
        notes += [note] if note else []
    await agree_parameters({**query.public(), **(owners.public() if owners is not None else {})})
    # a bad budget= or accountant=, or a pure account's comparisons, at one party: every party stops
    reservation = await reserve(lambda: account(query), job=job, problem=pure_problem)
    async def own_rows(count: bool) -> Any:
        """This party's rows in fixed point, or (``count``) its data file counted on the grid; the verdict shared."""
        nonlocal rows, seed
        error, detail, fixed = None, None, None
        own: dict[str, Any] = dict(party=int(mpc.pid), parties=len(mpc.parties), missing=missing or MissingPolicy())
        try:
            if callable(rows):
                seed = seed if seed is not None else await joint_seed()
                rows = rows(seed)
            if not count:
                rows = party_rows(rows, [spec.name for spec in query.columns], specs=query.columns, **own) \
                    if isinstance(rows, str) else rows
                fixed = prepare_rows(query.base, _values(query, rows))
            else:
                fixed = count_file(str(rows), kernel_specs(query.base), **own)
        except InputError as exc:
            error, detail = str(exc), exc.detail
        await agree_verdict(error, detail=detail)
        return fixed

    mode = parse_tuples(query.tuples)[0]
    counted = isinstance(rows, str) and histogram_possible(query.base, parties=len(mpc.parties), pairs=mode,
                                                           delegated=query.delegation is not None)
    if owners is not None:  # the servers: the uploads opened and closed; one owner's rows are the unit of privacy
        await owners.open(query.columns)
    fixed = owners if owners is not None else await own_rows(counted)
    total = sum(await fixed.counts())  # parties: no row at any party is one line naming them
    try:
        resolved = replace(query.at(total), unit_rows=owners.plan.rows_per_owner if owners is not None else 1)
        plan = plan_for(resolved, rows=total, parties=len(mpc.parties), pairs=mode, owners=owners,
                        delegated=query.delegation is not None, rtt=float(query.rtt) / 1000)
    except ValueError as exc:
        raise InputError(f"all parties: {option_words(str(exc), query.tuples, to_options=job is not None)}") from None
    if counted and plan.path != "histogram":  # public: every party reads its rows alike
        fixed = await own_rows(False)
    policy = missing if missing is not None else MissingPolicy(getattr(rows, "policy", "refuse"))
    if plan.path != "tuples":
        result = await run_complete(resolved, fixed, plan, missing=policy.mode)
    else:
        fail = query.delegation[0] if query.delegation is not None else 0.0  # Z: fresh joint randomness, not seed
        delegates = None if query.delegation is None else delegate_size(*query.delegation, parties=len(mpc.parties))
        result = await run_secure(replace(resolved, tuples=plan.tuples), fixed,
                                  seed=seed if seed is not None else await joint_seed(), missing=policy.mode,
                                  noise_delegates=delegates, delegation_failure=fail)
        if result is not None:
            result.plan = plan.describe()
    assert result is not None  # every party receives the release
    result.notes, result.columns, result.delegation = notes, [spec.name for spec in query.columns], query.delegation
    result.fill, result.categories = dict(policy.fills), public_categories(query.columns)
    result = await owners.finish(result) if owners is not None else result  # the intake's phases too
    result.local = "" if isinstance(fixed, Owners) else local_note(  # counted: its own
        filled=getattr(fixed, "filled", getattr(rows, "filled", 0)), clipped=sum(fixed.clipped.values()))
    if reservation is not None:  # revealed: the entry settled from the reserved bound to the release's delta
        result.budget_record = reservation.settle(result.delta).record()
        result.budget = reservation.describe()
    return result


def pure_account_query(query: Query, *, parties: int, threshold: int, budget_given: bool,
                       to_options: bool = False) -> tuple[Query, str | None, str | None]:
    """``(query, note, problem)``: ``query`` as a pure-DP account (delta 0) can pay it: party noise (``note``,
    :func:`dp.noise_defaults.pure_budget_line`) and the histogram path, or ``problem`` says why none can run
    (:func:`dp.umpc.planner.pure_account_path`); in a script's words, or a job's options' (``to_options``)."""
    note: str | None = None
    problem: str | None = None
    if query.noise is None:
        sums = len(query.base.outputs)
        per_sum = (query.base.epsilon / sums, query.base.delta / sums)
        chosen = default_noise("ustat", *per_sum, pure_budget=True)
        query = replace(query, noise="parties" if chosen == "parties" else "mpc")
        if switched_by_pure_budget("ustat", *per_sum, pure_budget=True):
            note = option_words(pure_budget_line(source="budget" if budget_given else "account", parties=parties,
                                                 threshold=threshold), query.tuples, to_options=to_options)
    sampled = parse_tuples(query.tuples)[0] in ("count", "per-row")
    try:
        query = replace(query, path=pure_account_path(query.base.kernel, query.columns, parties=parties,
                                                      choice=query.path, clipping=query.clipping,
                                                      sampled=f"tuples={query.tuples!r}" if sampled else None))
    except ValueError as exc:
        problem = option_words(str(exc), query.tuples, to_options=to_options)
    return query, note, problem


#: a script's words for a job's options, and back (a refusal is worded for whoever called)
_OPTION_WORDS = (("--path histogram", "path='histogram'"), ("--pairs all", "tuples='all'"),
                 ("--clip local", "clipping='local'"), ("--clip secure", "clipping='secure'"),
                 ("--path sort", "path='sort'"), ("--path tuples", "path='tuples'"), ("--path auto", "path='auto'"),
                 ("--budget has no delta", "budget= has no delta"),
                 ("give --budget EPS:DELTA (e.g. 5:1e-9)", "give budget='EPS:DELTA' (e.g. '5:1e-9')"))


def option_words(line: str, tuples: Any, *, to_options: bool) -> str:
    """``line`` in a script's words (``path='histogram'``) or, ``to_options``, in a job's (``--path histogram``)."""
    pairs = [*_OPTION_WORDS, (f"--pairs {tuples}", f"tuples={tuples!r}")]
    for option, argument in pairs:
        line = line.replace(argument, option) if to_options else line.replace(option, argument)
    return line


def _spend(query: Query) -> Spend:
    """The spend of one release, an upper bound settled after the reveal: epsilon; the delta (or the in-MPC
    sampler's truncation bound), the delegation's failure probability and the comparisons' allowance."""
    base = query.base
    sums = len(base.outputs)
    delta = float(base.delta) if base.delta > 0 or base.noise != "mpc" else sums * MPC_TRUNCATION_DELTA
    delta += (query.delegation[0] if query.delegation is not None else 0.0) + comparison_allowance(base.path)
    mechanism = ("discrete Laplace sampled in MPC" if base.noise == "mpc"
                 else "distributed discrete Laplace" if base.delta == 0 else "distributed binomial")
    return Spend(epsilon=float(base.epsilon), delta=delta,
                 mechanism=mechanism + (f" {DELEGATED_NOISE}" if query.delegation is not None else ""),
                 what=f"{base.kernel.description} of {', '.join(spec.name for spec in query.columns)}, "
                      f"{sums} noisy sum(s)")


def _parts(query: Query, rows_by_party: Sequence[PartyRows | np.ndarray]) -> list[np.ndarray]:
    if isinstance(rows_by_party, (np.ndarray, PartyRows)) or not isinstance(rows_by_party, Sequence):
        raise TypeError("rows_by_party must be a list with one table of rows per party")
    if not rows_by_party:
        raise ValueError("rows_by_party must hold at least one party's rows")
    return [_values(query, rows) for rows in rows_by_party]


def simulate(query: Query, rows_by_party: Sequence[PartyRows | np.ndarray], *, seed: int,
             threshold: int | None = None, runs: int = 1,
             noise_rng: np.random.Generator | None = None) -> Simulation:
    """Run the query's protocol in one process (NumPy), same path, seed, tuples and noise as :func:`release`: ``runs``
    estimates on one tuple set; ValueError on too few rows or too many tuples for n, a bad threshold."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an integer (the public seed of the tuples), got {seed!r}")
    parts = _parts(query, rows_by_party)
    parties = len(parts)
    threshold = (parties - 1) // 2 if threshold is None else threshold
    if isinstance(threshold, bool) or not isinstance(threshold, numbers.Integral) or not 0 <= threshold < parties:
        raise ValueError(f"threshold must be an integer in [0, {parties - 1}], got {threshold!r}")
    if isinstance(runs, bool) or not isinstance(runs, numbers.Integral) or runs < 1:
        raise ValueError(f"runs must be a positive integer, got {runs!r}")
    rows = sum(part.shape[0] for part in parts)
    resolved = query.at(rows)
    plan = plan_for(resolved, rows=rows, parties=parties, pairs=parse_tuples(query.tuples)[0])
    if plan.path != "tuples":
        return simulate_complete(resolved, parts, threshold=int(threshold), runs=int(runs), noise_rng=noise_rng)
    return simulate_protocol(replace(resolved, tuples=plan.tuples), parts, threshold=int(threshold), seed=seed,
                             runs=int(runs), noise_rng=noise_rng)


#: pairs per batch in :func:`exact`
PAIRS_PER_BATCH = 1 << 18


def exact(query: Query, rows_by_party: Sequence[PartyRows | np.ndarray]) -> float:
    """The non-private U-statistic over all ``C(n, k)`` tuples of the parties' rows, in the clear on the protocol's
    fixed-point rows (what the release estimates); ValueError on too few rows or (degree 3) over 2e7 triples."""
    parts = _parts(query, rows_by_party)
    base = query.base
    fixed = np.vstack([prepare_rows(base, part).integers for part in parts])
    if base.clipping == "secure":
        fixed = _clip_encoded(base, fixed)
    rows, degree = fixed.shape[0], base.kernel.degree
    query.at(rows)  # too few rows
    count = tuple_count(rows, degree)
    totals = np.zeros(len(base.outputs), dtype=object)
    if degree == 2:
        step = max(1, PAIRS_PER_BATCH // rows)  # left rows first..first+step-1, each with every later row
        for first in range(0, rows - 1, step):
            left, right = np.nonzero(np.arange(rows) > np.arange(first, min(first + step, rows))[:, None])
            outputs = base.kernel.plaintext([fixed[left + first], fixed[right]])
            totals += np.array([int(np.sum(out, dtype=np.int64)) for out in outputs], dtype=object)
    else:
        if count > 20_000_000:
            raise ValueError(f"exact over C({rows}, {degree}) = {count} tuples is too large; sample tuples instead")
        totals = _plaintext_sums(base, fixed, all_tuples(rows, degree))
    return float(base.kernel.estimate(list(totals), count, base.widths))
