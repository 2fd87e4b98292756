"""A private ROC curve across parties with private labels: class sizes are never released exactly.

Barczewski, Mawass & Ramon §5.1, self-normalised (docs/roc.md): every party holds its own ``(score, label)``
rows; the private ECDFs of the scores of class 1 and of class 0 are released by the tree mechanism through secure
sums, each divided by its own last noisy count, smoothed (eq. 3) and turned into a ROC curve and its AUC (a higher
score means positive).  The AUC comes with a 95 % parametric-bootstrap interval (public seed), is printed to the
digits its noise std supports, and a "warning:" line says when the noise dominates; the record has them as
interval and warning.  The job prints and writes what dp.ecdf.release of a dp.ecdf.RocQuery returns.

Run it with three local parties::

    python -m scenarios.roc_private -M3                       # Framingham logistic-regression scores
    python -m scenarios.roc_private -M3 --epsilon 0.5 --split disjoint --curve roc.csv --json roc.json --plot roc.png
    python -m scenarios.roc_private -M3 --data 'site{pid}.csv' --columns score,label --domain score=0:1 --budget 5

Every option is explained by ``-h``; the columns of ``--curve``: docs/command_line.md.

Threat model: passive, static coalition of at most t < m/2 parties; it learns the two noisy count vectors
and the parties' row counts, nothing else (no class size, no count of clipped scores or of filled cells)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.ecdf_options import EcdfOptions

__all__ = ["main", "parse_options"]


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options.  :raise UsageError: one line."""
    from dp.ecdf.roc import SPLITS, RocQuery
    from dp.validation import check_seed
    from scenarios.kit.ecdf_options import scored_options
    from scenarios.kit.options import add_data_arguments, domain_of, owner_intake, parse_columns, parse_domains
    from secure.intake import ColumnSpec

    parser = ScenarioParser(prog="python -m scenarios.roc_private", description=__doc__)
    parser.add_argument("--data", metavar="PATH", help="CSV; '{pid}' in PATH gives each party its own file "
                        "(default: Framingham logistic-regression scores)")
    parser.add_argument("--columns", default="score,TenYearCHD", metavar="SCORE,LABEL", help="labels 0 or 1")
    parser.add_argument("--domain", metavar="[SCORE=]LO:HI", help="the declared score range (default 0:1); "
                        "scores outside are clipped locally")
    parser.add_argument("--points", type=int, default=256, metavar="N", help="grid of N thresholds on the domain")
    parser.add_argument("--epsilon", type=float, default=1.0, help="of the whole curve")
    parser.add_argument("--split", choices=SPLITS, default="half", help="half: epsilon/2 per class ECDF as the "
                        "paper; disjoint: per class epsilon (L+1)/(2 ceil((L+1)/2)), the classes being disjoint rows")
    parser.add_argument("--smooth", choices=("none", "1", "2"), default="2", help="the norm of the smoothing (eq. 3)")
    parser.add_argument("--seed", type=int, default=0, help="public split that trains the embedded model")
    parser.add_argument("--curve", metavar="PATH", help="party 0 writes one row per threshold (docs/command_line.md)")
    parser.add_argument("--plot", metavar="PATH.png", help="party 0 draws the self-normalised ROC curve, raw and "
                        "smoothed, with the diagonal and each AUC")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the record")
    add_data_arguments(parser)
    args = parser.parse_args(list(argv))
    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    owners, campaign = owner_intake(args, columns)  # the campaign's servers: its score domain by default
    declared = domain_of(parse_domains(args.domain, single=columns[0]), columns[0], [columns[0]])
    lower, upper = (declared[0], declared[1]) if declared is not None else \
        (campaign[0].lower, campaign[0].upper) if owners else (0.0, 1.0)
    if declared is not None and declared[2] is not None:
        raise UsageError(f"--domain {columns[0]}=LOW:HIGH takes no BITS here: the scores are compared with a "
                         "public grid, at each party, in the clear")
    try:
        check_seed(args.seed, "--seed")
        query = RocQuery(epsilon=args.epsilon, lower=float(lower), upper=float(upper), points=args.points,
                         split=args.split, smooth=None if args.smooth == "none" else (1 if args.smooth == "1" else 2),
                         columns=(columns[0], columns[1]))
        specs = [ColumnSpec(columns[0], lower, upper), ColumnSpec(columns[1], 0, 1, 0, (0, 1))]
    except (TypeError, ValueError) as exc:  # the query's words for its options: points, domain
        message = str(exc).replace(" with points ", " with --points ")
        raise UsageError(f"--{message}" if message.startswith(("points ", "domain ")) else message) from None
    return scored_options(args, query, specs, owners=owners, curve=args.curve, outputs=("curve", "json", "plot"),
                          score_role="give --domain LO:HI")


async def _release(options: EcdfOptions, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: spend, read its ``(score, label)`` rows (scores clipped to the domain;
    :func:`scenarios.kit.ecdf_options.agreed_rows`: no count of filled or clipped cells is sent), run the two secure
    class ECDFs (:func:`dp.ecdf.release`); party 0's delivery."""
    from mpyc.runtime import mpc

    from dp.ecdf import release
    from scenarios.kit.ecdf_options import agreed_rows, party_table
    from secure.session import InputError

    query = options.query

    def read() -> tuple[np.ndarray, int, int]:
        rows = party_table(options.data, query.columns, missing=query.missing, scores_seed=options.seed)
        raw, labels = rows.values[:, 0], rows.values[:, 1]
        if not np.all((labels == 0) | (labels == 1)):
            # shared with every party: no path (this party's file), in the detail only
            source = "embedded framingham" if options.data is None else options.data.replace("{pid}", str(mpc.pid))
            raise InputError(f"label column '{query.columns[1]}' must hold 0 or 1, found another value",
                             detail=f"{source}: label column '{query.columns[1]}' holds a value other than 0 or 1")
        scores = np.clip(raw, query.lower, query.upper)
        return np.column_stack([scores, labels]), rows.filled, int(np.count_nonzero(scores != raw))

    result = await release(query, options.owners or (lambda: agreed_rows(read)), receivers=[0],
                           job=job, **options.budget.account(options.data))
    return None if result is None else _report(options, result)


def _report(options: EcdfOptions, release: Any) -> Callable[[], None]:
    """Party 0's delivery: the table, and ``--curve``, ``--json``, ``--plot``."""
    from scenarios.kit.ecdf_options import deliver, draw_roc, write_roc_curve
    from scenarios.kit.records import write_record

    smooth, title = options.query.smooth, " for ".join(options.query.columns)
    return deliver(release, [(options.curve, lambda path: write_roc_curve(path, release, smooth)),
                             (options.json, lambda path: write_record(path, release.record())),
                             (options.plot, lambda path: draw_roc(path, release, smooth=smooth, label=title))])


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(parse_options, _release, EcdfOptions.public, argv, job="scenarios.roc_private")


if __name__ == "__main__":
    sys.exit(main())
