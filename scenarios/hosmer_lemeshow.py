"""The private Hosmer-Lemeshow calibration test across parties (Barczewski, Mawass & Ramon §5.2, Alg. 2).

Every party holds its own rows: a model's predicted probability and the true label.  With one epsilon split
as Theorem 2 states (eps' = eps / (L + 9), L = log2 N) the parties release the private ECDF of the scores
((L + 1) eps'), the Q - 1 group boundaries found on it by the inverse ECDF (post-processing at party 0), and the
4Q noisy expected and observed counts per group (8 eps'); H (eq. 5) and its p-value against chi2(Q - 2) follow.
Party 0 adds the noise band of H and p (the released counts re-noised 2000 times with the public noise law, a
public seed: the noise's spread, not a confidence interval) and a "warning:" line when the noise dominates; the
record has them as interval and warning.  The job prints and writes what dp.ecdf.release of a
dp.ecdf.HosmerLemeshowQuery returns (docs/hosmer_lemeshow.md).

Threat model: passive, static adversary corrupting at most t < m/2 parties (MPyC -T); the coalition
learns the row counts, the boundaries and (with party 0) the released ECDF and statistics, all
epsilon-DP against it because the honest parties' draws alone are calibrated (variance x m/(m - t)).

Run it with three local parties::

    python -m scenarios.hosmer_lemeshow -M3                      # embedded Framingham, logistic-regression scores
    python -m scenarios.hosmer_lemeshow -M3 --epsilon 5 --groups 10 --json hl.json --table hl.csv --plot hl.png
    python -m scenarios.hosmer_lemeshow -M3 --data 'site{pid}.csv' --columns p_hat,outcome --budget 10

Every option is explained by ``-h``; the columns of ``--table`` and the figure of ``--plot``: docs/command_line.md."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.ecdf_options import EcdfOptions

__all__ = ["main", "parse_options", "SPLIT_SALT"]

#: xor-ed into --seed for the embedded data's model split: the same rows as scenarios.papers.hosmer_lemeshow
SPLIT_SALT = 0x5C0E


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options (no data is read here).  :raise UsageError: one line."""
    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery
    from dp.validation import check_noise_scale, check_seed
    from scenarios.kit.ecdf_options import scored_options
    from scenarios.kit.options import (add_data_arguments, add_renamed_option, domain_of, owner_intake,
                                       parse_columns, parse_domains, parse_steps)

    parser = ScenarioParser(prog="python -m scenarios.hosmer_lemeshow", description=__doc__)
    parser.add_argument("--data", metavar="PATH", help="CSV; '{pid}' in PATH gives each party its own file, otherwise "
                        "party i keeps rows i, i+m, ... (default: the embedded Framingham rows not used to fit the "
                        "public logistic regression of TenYearCHD, its predicted probability as column score)")
    parser.add_argument("--columns", default="score,TenYearCHD", metavar="SCORE,LABEL",
                        help="scores are clipped to [0, 1] at each party, labels must be 0 or 1")
    parser.add_argument("--epsilon", type=float, default=1.0, help="total budget")
    parser.add_argument("--groups", type=int, default=10, metavar="Q", help="the number of groups")
    add_renamed_option(parser, "--points", "--grid-points", type=int, default=1024, metavar="N",
                       help="ECDF grid i/N, a power of two (1024: L = 10, eps' = eps/19); --grid-points still works")
    parser.add_argument("--domain", metavar="SCORE=0:1[:BITS]",
                        help="the scores' declared domain, always 0:1 (probabilities); BITS as --precision")
    parser.add_argument("--precision", type=int, default=16, metavar="B", help="fractional bits of the scores")
    parser.add_argument("--smoothed", action="store_true",
                        help="boundaries on the monotone-smoothed ECDF (eq. 3) instead of the raw one")
    parser.add_argument("--accounting", choices=("paper", "joint"), default="paper",
                        help="paper: Theorem 2 as proved; joint: the same 8 eps' on the statistics' joint "
                             "sensitivity, half the noise scale")
    parser.add_argument("--seed", type=int, default=1, help="public seed of the split that fits the embedded data's "
                        "model (1: the data of scenarios.papers.hosmer_lemeshow)")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the record")
    parser.add_argument("--table", metavar="PATH.csv", help="party 0 writes one row per group (docs/command_line.md)")
    parser.add_argument("--plot", metavar="PATH.png", help="party 0 draws the calibration figure and the released "
                        "ECDF with the boundaries (docs/command_line.md)")
    add_data_arguments(parser)
    args = parser.parse_args(list(argv))
    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    owners = owner_intake(args, columns)[0]  # the campaign's servers
    if args.groups < 3:  # one line for every Q below 3, 0 and negative included
        raise UsageError(f"--groups must be at least 3 (the test has Q - 2 degrees of freedom), got {args.groups}")
    declared = domain_of(parse_domains(args.domain, single=columns[0]), columns[0], [columns[0]]) or (0.0, 1.0, None)
    try:
        check_seed(args.seed, "--seed")
        query = HosmerLemeshowQuery(epsilon=args.epsilon, groups=args.groups, grid_points=args.points,
                                    precision=args.precision if declared[2] is None else declared[2],
                                    smoothed=args.smoothed, accounting=args.accounting,
                                    columns=(columns[0], columns[1]), domain=(declared[0], declared[1]))
        query.tree_plan()  # the node noise must be drawable
        check_noise_scale(query.statistics_rate, query.scale, name="epsilon of the group statistics")
    except (TypeError, ValueError) as exc:  # the query's words for its option: domain
        raise UsageError(f"--{exc}" if str(exc).startswith("domain ") else str(exc)) from None
    if parse_steps(args.domain, single=columns[0]):
        raise UsageError(f"--domain {columns[0]}=0:1 takes no STEP here: the grid is i/N (--points)")
    return scored_options(args, query, query.specs(), owners=owners, curve=args.table,
                          outputs=("json", "table", "plot"), score_role="choose a column of predicted probabilities")


async def _release(options: EcdfOptions, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: spend, read its ``(probability, label)`` rows (scores clipped to [0, 1] on the fixed-point grid,
    labels 0/1; :func:`scenarios.kit.ecdf_options.agreed_rows`), run the secure Algorithm 2 (:func:`dp.ecdf.release`);
    returns party 0's delivery (the table, ``--json``, ``--table``, ``--plot``), run after the orderly shutdown."""
    from dp.ecdf import release
    from scenarios.kit.ecdf_options import agreed_rows, deliver, draw_calibration, party_table, write_group_table
    from scenarios.kit.records import write_record
    from secure.intake import to_fixed_point

    query, specs = options.query, options.query.specs()

    def read() -> tuple[np.ndarray, int, int]:  # labels checked and scores counted as clipped here, encoded by dp
        rows = party_table(options.data, query.columns, missing=query.missing, specs=specs,
                           scores_seed=int(options.seed or 0) ^ SPLIT_SALT)
        return rows.values, rows.filled, sum(to_fixed_point(rows.values, specs).clipped.values())

    result = await release(query, options.owners or (lambda: agreed_rows(read)), receivers=[0],
                           seed=options.seed if options.data is None and not options.owners else None, job=job,
                           **options.budget.account(options.data))
    if result is None:
        return None
    return deliver(result, [(options.json, lambda path: write_record(path, result.record())),
                            (options.curve, lambda path: write_group_table(path, result, floor=query.expected_floor)),
                            (options.plot, lambda path: draw_calibration(path, result))])


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(parse_options, _release, EcdfOptions.public, argv, job="scenarios.hosmer_lemeshow")


if __name__ == "__main__":
    sys.exit(main())
