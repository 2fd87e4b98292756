"""Private AUC with scores and labels both secret: the complete AUC on MPyC, distributed noise.

The deployment beyond Sun et al. (docs/rank_auc.md): parties keep their (score, label) rows secret; the
rank sum 2U and the number of positives P come from the complete AUC on the planner's path (histogram:
counts on the score grid, no comparison; or one secure sort), and only the noisy 2U and P are opened
(epsilon/2 each); the AUC is (2U/2) / (P (n - P)).  With -M3 on the 2559 default rows at 16 bits: 1.1 s
by the histogram, 17 s by the sort.  Default data: Framingham logistic-regression scores (the rows not
used to fit the model).  Noise: by default sampled inside MPC ((epsilon, delta_s)-DP, delta_s <= 2^-40
per sum; party noise above about epsilon 148 per sum), or party shares (epsilon-DP); the output says
which ran.  --epsilon is the invocation's total: --rows N1,N2,... runs on the same rows split it evenly
(the record gives epsilon and epsilon_total, delta and delta_total).  When the noisy P (n - P) is not
positive there is no AUC at that epsilon: said in those terms, "estimate": null in the record.

Run it with three local parties::

    python -m scenarios.rank_auc -M3                        # all 2559 evaluation rows
    python -m scenarios.rank_auc -M3 --path sort            # by one secure sort
    python -m scenarios.rank_auc -M3 --rows 500,1000,2000   # cost at several sizes (scaling)
    python -m scenarios.rank_auc -M3 --data 'site{pid}.csv' --columns score,label --epsilon 0.5

Every option is explained by ``-h``."""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Sequence

from dp.noise_defaults import NOISE_CHOICES
from dp.rank_auc import Query, account_query, plans_for_rows, release_runs
from dp.validation import check_epsilon, check_seed
from scenarios.kit.budget_run import budget_options, pure_budget_of
from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario, usage_errors
from scenarios.kit.datasets import framingham_with_scores
from scenarios.kit.missing_values import missing_policy
from scenarios.kit.options import add_data_arguments, check_rtt, domain_of, owner_intake, parse_columns, parse_domains
from scenarios.kit.outputs import check_output_path
from scenarios.kit.records import write_record
from secure.errors import InputError
from secure.intake import ColumnSpec, apply_missing, party_rows, read_columns, rows_from_table
from secure.public_randomness import public_generator

__all__ = ["main", "parse_options"]


@dataclass
class Options:
    """Parsed options: the query of each run (``--epsilon`` split evenly over the ``--rows`` runs) and the data."""

    data: str | None
    columns: list[str]
    domain: tuple[float, float, int]
    epsilon: float
    rows: list[int | None]
    seed: int
    json: str | None
    query: Query
    budget: Any = None
    #: said above the table: a pure budget turned the default in-MPC noise into party shares
    note: str | None = None
    #: the campaign's servers' intake of owners' uploads (``--owners``, :func:`scenarios.kit.options.owner_intake`)
    owners: Any = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        query = self.query
        return {"columns": self.columns, "domain": list(self.domain), "epsilon": self.epsilon, "rows": self.rows,
                "seed": self.seed, "embedded": self.data is None, "noise": query.noise, "path": query.path,
                "missing": query.missing.mode, "fill": [list(item) for item in query.missing.fills], "rtt": query.rtt}


def parse_options(argv: Sequence[str]) -> Options:
    """Parse and validate the options into a :class:`dp.rank_auc.Query`.  :raise UsageError: one line."""
    parser = ScenarioParser(prog="python -m scenarios.rank_auc", description=__doc__)
    parser.add_argument("--data", metavar="PATH", help="CSV; with '{pid}' one file per party (then no --rows)")
    parser.add_argument("--columns", default="score,TenYearCHD", metavar="SCORE,LABEL", help="the two columns")
    parser.add_argument("--domain", metavar="[SCORE=]LO:HI[:BITS]", help="of the score column (default 0:1:16); -L "
                        "follows from it, n and the noise (a too short explicit -L exits 2 before any row is shared)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="the total, split evenly over the --rows runs")
    parser.add_argument("--rows", metavar="N[,N...]", help="first N rows of the table, one run each (an N above the "
                        "table's rows stops the run)")
    parser.add_argument("--noise", choices=NOISE_CHOICES, help="sampled inside MPC (mpc, the default) or party shares")
    parser.add_argument("--path", choices=("auto", "histogram", "sort"), default="auto",
                        help="auto: the planner's choice, printed with the modelled cost of each")
    parser.add_argument("--rtt", type=float, default=0.0, metavar="MS",
                        help="declared network round-trip time in ms; the planner adds each path's rounds times MS / 2")
    parser.add_argument("--seed", type=int, default=0, help="public data split for the default data")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes a list of records")
    add_data_arguments(parser)
    args = parser.parse_args(list(argv))
    with usage_errors():
        check_epsilon(args.epsilon)
    check_rtt(args.rtt)
    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    owners, campaign = owner_intake(args, columns)  # the campaign's servers: its declarations
    declared = domain_of(parse_domains(args.domain, single=columns[0]), columns[0], [columns[0]])
    low, high, bits = declared if declared is not None else \
        (campaign[0].lower, campaign[0].upper, campaign[0].precision) if owners else (0.0, 1.0, 16)
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
    with usage_errors():
        specs = campaign or [ColumnSpec(columns[0], *domain), ColumnSpec(columns[1], 0, 1, 0, (0, 1))]
    missing = missing_policy(args.missing, args.fill, specs, dataset=None if args.data or owners else "framingham")
    budget = budget_options(args)
    if owners and budget.dataset_name is None:  # the campaign's account (another --dataset is refused)
        budget = replace(budget, dataset_name=owners.plan.id)
    pure = pure_budget_of(budget, data=args.data, embedded="framingham")
    from mpyc.runtime import mpc  # after the options are parsed: MPyC answers -h itself

    with usage_errors():  # a pure account: party noise and the histogram path (no comparison leaks delta)
        query, note = account_query(Query(score=specs[0], label=columns[1], epsilon=args.epsilon / len(rows),
                                          path=args.path, rtt=args.rtt, missing=missing), noise=args.noise, pure=pure,
                                    budget_given=budget.budget is not None, parties=len(mpc.parties),
                                    threshold=int(mpc.threshold))
        check_seed(args.seed, "--seed")
        # the noise of 2U and P at the smallest n (2 rows: the smallest sensitivities), one party: a
        # budget refused here is refused at every n; the exact n is checked again once it is known
        plans_for_rows(query, 2, 1, 0)
    check_output_path(args.json, "--json")
    return Options(args.data, columns, domain, args.epsilon, rows, args.seed, args.json, query, budget, note, owners)


def _reader(options: Options, limit: int | None) -> Callable[[], Any]:
    """This party's rows of one run (the first ``limit`` rows of the table), read when the release asks."""
    def read() -> Any:
        from mpyc.runtime import mpc

        missing, parties = options.query.missing, len(mpc.parties)
        if options.data is None:
            table = framingham_with_scores(public_generator(options.seed))
            if limit is not None and limit > len(table.rows):  # the embedded table's size is public
                raise InputError(f"--rows {limit} asks for more rows than the {len(table.rows)} of the embedded "
                                 f"evaluation table")
            return rows_from_table(table.header, table.rows[:limit], options.columns, source="embedded framingham",
                                   party=mpc.pid, parties=parties, missing=missing)
        if limit is None:
            return party_rows(options.data, options.columns, party=mpc.pid, parties=parties, missing=missing)
        raw = read_columns(options.data, options.columns, party=mpc.pid, parties=parties)
        share = max(0, -(-(limit - mpc.pid) // parties))  # the first `limit` records of the one file
        if len(raw) < share:  # row `limit - 1` (0-based) is the first missing one: its party fails here
            raise InputError(f"--rows {limit} asks for more rows than the --data table holds")
        return apply_missing(raw[:share], options.columns, missing, source=options.data)
    return read


async def _run(options: Options, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: one :func:`dp.rank_auc.release` per ``--rows`` size, ``--epsilon`` split over them, one spend
    (:func:`dp.rank_auc.release_runs`); party 0's delivery (the tables, ``--json``), run after the orderly shutdown."""
    runs = [options.owners] if options.owners else [_reader(options, limit) for limit in options.rows]
    releases = [result for result in await release_runs(
        replace(options.query, epsilon=options.epsilon), runs, receivers=[0], job=job,
        **options.budget.account(options.data)) if result is not None]
    for result in releases:
        result.notes = [options.note] if options.note else []

    def deliver() -> None:  # each release's table; --json: the list of their records
        print("\n".join(result.table() for result in releases))
        if options.json:
            write_record(options.json, [result.record() for result in releases])

    return deliver if releases else None


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(parse_options, _run, Options.public, argv, job="scenarios.rank_auc")


if __name__ == "__main__":
    sys.exit(main())
