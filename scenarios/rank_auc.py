"""Private AUC with scores and labels both secret: the complete AUC on MPyC, distributed noise.

The deployment beyond Sun et al.: parties keep their (score, label) rows secret, the rank sum 2U and
the number of positives come from the complete AUC of dp.umpc.complete on the path the planner picks
(--path auto): the histogram path (each party counts its rows on the score grid; secure sums and
products, no comparison) or one secure sort (O(n log^2 n) comparisons at the keys' bit length); only
the noisy 2U and the noisy number of positives are opened (epsilon/2 each); the AUC is their ratio.
Measured with -M3 on the 2559 default rows at 16 bits: 1.1 s by the histogram, 17 s by the sort.
Default data: Framingham logistic-regression scores (the rows not used to fit the model).

Noise (``--noise``, :mod:`dp.noise_defaults`): by default ``mpc``, one discrete Laplace per sum
sampled inside MPC, known to no party ((epsilon, delta_s)-DP, delta_s <= 2^-40 per sum from the
sampler's truncation; about 0.6 s and 1 MB per release with -M3); ``--noise parties``: each party
adds coalition-calibrated Polya shares (epsilon-DP, x m/(m-t) variance).  Every output says which
ran.  Above about epsilon 148 per sum the sampler cannot reach its delta, and the default is then
party noise.

Budget.  ``--epsilon`` is the total of the invocation.  ``--rows N1,N2,...`` releases one AUC per
size from the first N rows of the same table, so a row takes part in several releases: the budget
is split evenly, epsilon/k per run for k runs (basic composition), and the table and the record give
both (``epsilon`` of the run, ``epsilon_total``; likewise ``delta`` and ``delta_total``).

No estimate.  The AUC is ``(2U/2) / (P (n - P))`` with the noisy ``P``; when the noisy number of pairs
``P (n - P)`` is not positive (small n, a small class, a small epsilon) there is no AUC at that epsilon: the
output says so in those terms (the labels are secret: it never claims that a class is empty) and the
record has ``"estimate": null``.

Run it with three local parties::

    python -m scenarios.rank_auc -M3                        # all 2559 evaluation rows
    python -m scenarios.rank_auc -M3 --path sort            # by one secure sort
    python -m scenarios.rank_auc -M3 --rows 500,1000,2000   # cost at several sizes (scaling)
    python -m scenarios.rank_auc -M3 --data 'site{pid}.csv' --columns score,label --epsilon 0.5

Options: --data (with '{pid}': one file per party, then no --rows), --columns SCORE,LABEL,
--domain SCORE=LO:HI[:BITS] of the score column (the bare LO:HI[:BITS] declares it too; default 0:1:16, BITS
default 16; the secure integers' bit length follows from the domain, n and the noise; an explicit -L
too short for the sort keys or the sums exits 2 before any row is shared), --path {auto,histogram,sort}
(default auto: the planner's choice, printed with the modelled cost of each), --rtt MS (the network's declared
round-trip time in milliseconds, default 0: the planner adds each path's rounds times MS / 2, so a slow network
favours the histogram path's few rounds over the sort's many; public, the same at every party), --epsilon (the total,
default 1), --rows N[,N...] (first N rows of the table, one run each, epsilon split evenly; an N above the
table's number of rows stops the run), --noise
{mpc,parties} (default mpc), --seed (public data split for the default data), --json PATH (a list of
records), --missing refuse|fill and --fill C=V,... (a missing cell stops the run, the default with
--data, or takes the declared value V; no count of missing values leaves a party).
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario
from scenarios.kit.records import write_record
from scenarios.kit.missing_values import add_missing_arguments, describe_policy, local_note, missing_policy

__all__ = ["main", "parse_options"]


@dataclass
class Options:
    """Parsed options."""

    data: str | None
    columns: list[str]
    domain: tuple[float, float, int]
    epsilon: float
    rows: list[int | None]
    seed: int
    json: str | None
    missing: Any = None
    noise: str = "mpc"
    path: str = "auto"
    budget: Any = None
    #: a pure budget turned the default in-MPC noise into party shares: ``budget`` or ``account`` (said above the table)
    noise_switch: str | None = None
    #: declared round-trip time in milliseconds (``--rtt``), for the planner's latency term
    rtt: float = 0.0

    @property
    def run_epsilon(self) -> float:
        """Budget of each run: ``--epsilon`` split evenly over the runs on the same rows."""
        return self.epsilon / len(self.rows)

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {"columns": self.columns, "domain": list(self.domain), "epsilon": self.epsilon, "rows": self.rows,
                "seed": self.seed, "embedded": self.data is None, "noise": self.noise, "path": self.path,
                "missing": self.missing.mode,
                "fill": [list(item) for item in self.missing.fills], "rtt": self.rtt}


def parse_options(argv: Sequence[str]) -> Options:
    """Parse and validate the options.

    :raise UsageError: with a one-line message.
    """
    from dp.noise_defaults import NOISE_CHOICES, default_noise, switched_by_pure_budget
    from dp.validation import check_epsilon
    from scenarios.kit.budget_run import add_budget_arguments, budget_options, pure_budget_of

    parser = ScenarioParser(prog="python -m scenarios.rank_auc", description=__doc__)
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default="score,TenYearCHD")
    parser.add_argument("--domain", default=None)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--rows", default=None)
    parser.add_argument("--noise", choices=NOISE_CHOICES, default=None)
    parser.add_argument("--path", choices=("auto", "histogram", "sort"), default="auto")
    parser.add_argument("--rtt", type=float, default=0.0, metavar="MS")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    add_missing_arguments(parser)
    add_budget_arguments(parser)
    args = parser.parse_args(list(argv))
    try:
        check_epsilon(args.epsilon)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if not (0 <= args.rtt <= 60000):  # NaN fails too
        raise UsageError(f"--rtt must be a round-trip time in milliseconds in [0, 60000], got {args.rtt:g}")
    from scenarios.kit.options import domain_of, parse_columns, parse_domains

    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    declared = domain_of(parse_domains(args.domain, single=columns[0]), columns[0], [columns[0]])
    low, high, bits = declared if declared is not None else (0.0, 1.0, 16)
    domain = (low, high, bits if bits is not None else 16)
    rows: list[int | None] = [None]
    if args.rows:
        try:
            sizes = [int(r) for r in args.rows.split(",")]
        except ValueError:
            raise UsageError(f"--rows expects numbers like 500,1000, got '{args.rows}'") from None
        if any(r < 2 for r in sizes):
            raise UsageError(f"--rows must be at least 2, got '{args.rows}'")
        rows = list(sizes)
        if args.data is not None and "{pid}" in args.data:
            raise UsageError("--rows takes the first N rows of one table; with '{pid}' in --data every party "
                             "has its own file: put the rows to use in those files instead")
    from secure.intake import ColumnSpec

    try:
        specs = [ColumnSpec(columns[0], *domain), ColumnSpec(columns[1], 0, 1, 0, (0, 1))]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    missing = missing_policy(args.missing, args.fill, specs, dataset=None if args.data is not None else "framingham")
    budget = budget_options(args)
    pure = pure_budget_of(budget, data=args.data, embedded="framingham")
    path = args.path
    if pure:  # the sort's comparisons leak up to 2^-40 of delta, which a pure account cannot pay
        from mpyc.runtime import mpc

        from dp.umpc.planner import pure_account_path
        from secure.kernels import get_kernel

        try:
            path = pure_account_path(get_kernel("auc"), specs, parties=len(mpc.parties), choice=args.path)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    noise = args.noise or default_noise("rank_auc", args.epsilon / len(rows) / 2, pure_budget=pure)
    noise_switch = (("budget" if budget.budget is not None else "account") if args.noise is None and
                    switched_by_pure_budget("rank_auc", args.epsilon / len(rows) / 2, pure_budget=pure) else None)
    options = Options(args.data, columns, domain, args.epsilon, rows, args.seed, args.json, missing, noise, path,
                      budget, noise_switch, rtt=args.rtt)
    from dp.rank_auc import RankAucQuery, plans_for_rows
    from dp.validation import check_seed
    from scenarios.kit.outputs import check_output_path

    try:
        check_seed(args.seed, "--seed")
        # the noise of 2U and P at the smallest n (2 rows: the smallest sensitivities), one party: a
        # budget refused here is refused at every n; the exact n is checked again once it is known
        plans_for_rows(RankAucQuery(specs[0], options.run_epsilon, noise), 2, 1, 0)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    check_output_path(args.json, "--json")
    return options


async def _run(options: Options) -> Callable[[], None] | None:
    """Every party: read its rows, share its verdict, run the secure rank AUC once per ``--rows`` size.

    :return: party 0's delivery (the tables, ``--json``), which :func:`scenarios.kit.cli.run_scenario` runs
        only after the orderly shutdown, so that a party lost in the shutdown phase releases nothing.
    """
    from mpyc.runtime import mpc

    from dp.rank_auc import RankAucQuery, check_bit_length, run_secure_rank_auc
    from scenarios.kit.datasets import framingham_with_scores
    from secure.intake import ColumnSpec, apply_missing, party_rows, read_columns, rows_from_table
    from secure.public_randomness import public_generator
    from secure.session import InputError, agree_verdict, run_settings

    try:
        query = RankAucQuery(ColumnSpec(options.columns[0], *options.domain), options.run_epsilon, options.noise,
                             options.path, rtt=options.rtt / 1000)
        given = run_settings().bit_length
        if given is not None:
            check_bit_length(query, given)  # before any row is read or shared
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    releases = []
    deltas: list[float] = []  # each run's delta, at every party (the ledger entry is settled to their sum)
    for limit in options.rows:
        error, detail, fixed, filled = None, None, None, 0
        try:
            if options.data is not None and limit is not None:  # the first `limit` records of the one file
                parties = len(mpc.parties)
                raw = read_columns(options.data, options.columns, party=mpc.pid, parties=parties)
                share = max(0, -(-(limit - mpc.pid) // parties))
                if len(raw) < share:  # row `total` (0-based) is the first missing one: its party fails here
                    raise InputError(f"--rows {limit} asks for more rows than the --data table holds")
                rows = apply_missing(raw[:share], options.columns, options.missing, source=options.data)
            elif options.data is not None:
                rows = party_rows(options.data, options.columns, party=mpc.pid, parties=len(mpc.parties),
                                  missing=options.missing)
            else:
                table = framingham_with_scores(public_generator(options.seed))
                if limit is not None and limit > len(table.rows):  # the embedded table's size is public
                    raise InputError(f"--rows {limit} asks for more rows than the {len(table.rows)} of the embedded "
                                     f"evaluation table")
                body = table.rows if limit is None else table.rows[:limit]
                rows = rows_from_table(table.header, body, options.columns, source="embedded framingham",
                                       party=mpc.pid, parties=len(mpc.parties), missing=options.missing)
            fixed, filled = query.encode(rows.values), rows.filled
        except InputError as exc:
            error, detail = str(exc), exc.detail
        await agree_verdict(error, detail=detail)
        assert fixed is not None  # every party's verdict was agreed above
        release = await run_secure_rank_auc(query, fixed, receivers=[0], deltas=deltas)
        if release is not None:
            releases.append((release, filled))
    import math

    from scenarios.kit.budget_run import settle_spend

    total = math.fsum(deltas)  # basic composition over the runs; the record's delta_total
    settled = {"delta_total": total, **settle_spend(total)}  # the entry: from the reserved bound to this total
    return (lambda: _deliver(options, releases, settled)) if releases else None


def _deliver(options: Options, releases: Sequence[tuple[Any, int]], settled: dict[str, Any] | None = None) -> None:
    """Print one table per release (with this party's own count of filled values); write ``--json``."""
    from secure.meter import seconds_label

    records = []
    for release, filled in releases:
        runs = len(options.rows)
        records.append({"statistic": "auc", "estimate": release.released_estimate, "epsilon": release.epsilon,
                        "delta": release.delta, "n": release.n, "parties": release.parties,
                        "seconds": release.seconds, "bytes_sent": release.bytes_sent,
                        "epsilon_total": options.epsilon, "delta_total": release.delta * runs, "runs": runs,
                        **(settled or {}),
                        "threshold": release.threshold, "noise_source": release.noise_source,
                        "mechanism": release.mechanism, "guarantee": release.guarantee,
                        "phases": release.phases, "noisy_2u": release.twice_u, "noisy_positives": release.positives,
                        "path": release.path, "plan": release.plan, **release.comparison_leak,
                        "missing": options.missing.mode, "fill": dict(options.missing.fills),
                        **release.honest_keys()})
        if options.noise_switch is not None and release.noise_source != "mpc":
            from dp.noise_defaults import pure_budget_line

            print(pure_budget_line(source="account" if options.noise_switch == "account" else "budget",
                                   parties=release.parties, threshold=release.threshold))
        print_table([
            ("statistic", f"AUC of {options.columns[0]} for {options.columns[1]} (scores and labels secret)"),
            ("private estimate", f"{release.estimate:.6g}" if release.no_estimate is None else release.no_estimate),
            ("uncertainty", f"noise std {release.noise_std:.2g} (all pairs, no sampling error)"
             if release.no_estimate is None else "none (no estimate)"),
            ("epsilon", _spent(options.epsilon, release.epsilon, release.delta, runs)),
            ("n", f"{release.n} rows"),
            ("missing values", describe_policy(options.missing)),
            ("parties", f"{release.parties} (threshold t = {release.threshold})"),
            (seconds_label(), f"{release.seconds:.2f}"),
            ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
        ], title=f"Private AUC, scores and labels secret ({release.path} path)")
        print(f"  {release.plan}")
        print(f"  noise: {release.guarantee}")
        print(local_note(filled=filled))
        print("  phases: " + ", ".join(f"{k} {v['seconds']:.2f} s / {format_bytes(v['bytes_sent'])}"
                                       for k, v in release.phases.items()))
    if records and options.json:
        write_record(options.json, records)


def _spent(total: float, epsilon: float, delta: float, runs: int) -> str:
    """The epsilon line: this run's budget and, over several runs on the same rows, the total."""
    if runs == 1:
        text = f"{epsilon:g} (2U and P, epsilon/2 each)"
    else:
        text = f"{total:g} in total: {epsilon:.3g} per run x {runs} runs on the same rows (2U and P, half each)"
    if delta:
        text += f"; delta {delta:.2g}" + (f" per run, {delta * runs:.2g} in total" if runs > 1 else "")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party; returns the exit code."""
    return run_scenario(parse_options, _run, lambda options: options.public(), argv, spend=spend_of)


def spend_of(options: Options) -> Any:
    """What one invocation spends (:mod:`scenarios.kit.budget_run`): its total ``--epsilon`` (over every
    ``--rows`` run on the same rows, basic composition) and, with noise sampled inside MPC, the sampler's
    truncation bound ``2^-40`` per released sum (2U and P: two per run), plus ``2^-40`` per run for the sort's
    comparisons unless the path is the histogram path; an upper bound, settled after the runs to the sum of
    their deltas (the record's ``delta_total``); embedded data exempt unless ``--ledger``/``--budget`` is given."""
    from dp.budget.accountants import Spend
    from dp.comparison_leakage import comparison_allowance
    from scenarios.kit.budget_run import MPC_TRUNCATION_DELTA, spend_request

    runs = len(options.rows)
    delta = 2 * runs * MPC_TRUNCATION_DELTA if options.noise == "mpc" else 0.0
    delta += runs * comparison_allowance(options.path)  # a pure account runs the histogram path only (parse_options)
    mechanism = "discrete Laplace sampled in MPC" if options.noise == "mpc" else "distributed discrete Laplace"
    spend = Spend(epsilon=float(options.epsilon), delta=delta, mechanism=mechanism,
                  what=f"AUC of {','.join(options.columns)} by rank, {runs} run(s), 2 noisy sums each")
    return spend_request(options.budget, spend, scenario="scenarios.rank_auc", data=options.data,
                         embedded=None if options.data is not None else "framingham")


if __name__ == "__main__":
    sys.exit(main())
