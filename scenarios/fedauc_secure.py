"""Private AUC with scores and labels both secret: secure sorting on MPyC, distributed noise.

The deployment beyond Sun et al.: parties secret-share their (score, label) rows, ranks come from a
secure sort (O(n log^2 n) comparisons), and only the noisy rank sum 2U and the noisy number of
positives are opened (epsilon/2 each); the AUC is their ratio.  Default data: Framingham
logistic-regression scores (the rows not used to fit the model).

Run it with three local parties::

    python -m scenarios.fedauc_secure -M3                        # all 2564 evaluation rows
    python -m scenarios.fedauc_secure -M3 --rows 500,1000,2000   # cost at several sizes (scaling)
    python -m scenarios.fedauc_secure -M3 --data 'site{pid}.csv' --columns score,label --epsilon 0.5

Options: --data, --columns SCORE,LABEL, --domain LO:HI[:BITS] of the score (default 0:1:16),
--epsilon (default 1), --rows N[,N...] (first N rows of the table, one run each), --seed (public data
split for the default data), --json PATH.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from scenarios.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario

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

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {"columns": self.columns, "domain": list(self.domain), "epsilon": self.epsilon, "rows": self.rows,
                "seed": self.seed, "embedded": self.data is None}


def parse_options(argv: Sequence[str]) -> Options:
    """Parse and validate the options.

    :raise UsageError: with a one-line message.
    """
    from dp.validation import check_epsilon

    parser = ScenarioParser(prog="python -m scenarios.fedauc_secure", add_help=False)
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default="score,TenYearCHD")
    parser.add_argument("--domain", default="0:1:16")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--rows", default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(list(argv))
    try:
        check_epsilon(args.epsilon)
    except (TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    columns = [c.strip() for c in args.columns.split(",")]
    if len(columns) != 2:
        raise UsageError(f"--columns expects SCORE,LABEL, got '{args.columns}'")
    try:
        parts = args.domain.split(":")
        domain = (float(parts[0]), float(parts[1]), int(parts[2]) if len(parts) > 2 else 16)
    except (ValueError, IndexError):
        raise UsageError(f"--domain expects LOW:HIGH[:BITS], got '{args.domain}'") from None
    rows: list[int | None] = [None]
    if args.rows:
        try:
            sizes = [int(r) for r in args.rows.split(",")]
        except ValueError:
            raise UsageError(f"--rows expects numbers like 500,1000, got '{args.rows}'") from None
        if any(r < 2 for r in sizes):
            raise UsageError(f"--rows must be at least 2, got '{args.rows}'")
        rows = list(sizes)
    return Options(args.data, columns, domain, args.epsilon, rows, args.seed, args.json)


async def _run(options: Options) -> None:
    from mpyc.runtime import mpc

    from dp.fedauc_secure import RankAucQuery, run_secure_rank_auc
    from scenarios.datasets import framingham_with_scores
    from secure.intake import ColumnSpec, party_rows, rows_from_table
    from secure.public_randomness import public_generator
    from secure.runtime import InputError, agree_verdict

    try:
        query = RankAucQuery(ColumnSpec(options.columns[0], *options.domain), options.epsilon)
    except ValueError as exc:
        raise InputError(f"all parties: {exc}") from None
    records = []
    for limit in options.rows:
        error, fixed = None, None
        try:
            if options.data is not None:
                rows = party_rows(options.data, options.columns, party=mpc.pid, parties=len(mpc.parties))
            else:
                table = framingham_with_scores(public_generator(options.seed))
                body = table.rows if limit is None else table.rows[:limit]
                rows = rows_from_table(table.header, body, options.columns, source="embedded framingham",
                                       party=mpc.pid, parties=len(mpc.parties))
            fixed = query.encode(rows.values)
        except InputError as exc:
            error = str(exc)
        await agree_verdict(error)
        assert fixed is not None  # every party's verdict was agreed above
        release = await run_secure_rank_auc(query, fixed, receivers=[0])
        if release is None:
            continue
        records.append({"n": release.n, "estimate": release.estimate, "epsilon": release.epsilon,
                        "parties": release.parties, "seconds": release.seconds, "bytes_sent": release.bytes_sent,
                        "phases": release.phases, "noisy_2u": release.twice_u, "noisy_positives": release.positives})
        print_table([
            ("statistic", f"AUC of {options.columns[0]} for {options.columns[1]} (scores and labels secret)"),
            ("private estimate", f"{release.estimate:.6g}"),
            ("epsilon", f"{release.epsilon:g} (2U and P, epsilon/2 each)"),
            ("n", f"{release.n} rows"),
            ("parties", f"{release.parties} (threshold t = {release.threshold})"),
            ("seconds", f"{release.seconds:.2f}"),
            ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
        ], title="Private AUC by secure sorting")
        print("  phases: " + ", ".join(f"{k} {v['seconds']:.2f} s / {format_bytes(v['bytes_sent'])}"
                                       for k, v in release.phases.items()))
    if records and options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(records, handle, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party; returns the exit code."""
    return run_scenario(parse_options, _run, lambda options: options.public(), argv)


if __name__ == "__main__":
    sys.exit(main())
