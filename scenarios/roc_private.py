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

import csv
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, run_scenario
from scenarios.kit.records import write_record

__all__ = ["main", "parse_options", "RocPrivateOptions", "draw_roc"]


@dataclass
class RocPrivateOptions:
    """Parsed options: the query, and where the rows come from and the outputs go."""

    query: Any
    data: str | None
    seed: int
    curve: str | None
    json: str | None
    plot: str | None
    budget: Any = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        query = self.query
        return {"columns": list(query.columns), "domain": [query.lower, query.upper], "points": query.points,
                "epsilon": query.epsilon, "split": query.split, "seed": self.seed, "embedded": self.data is None,
                "missing": query.missing.mode, "fill": [list(item) for item in query.missing.fills]}


def parse_options(argv: Sequence[str]) -> RocPrivateOptions:
    """Parse and validate the options.  :raise UsageError: one line."""
    from dataclasses import replace

    from dp.ecdf.roc import SPLITS, RocQuery
    from dp.validation import check_seed
    from scenarios.kit.budget_run import add_budget_arguments, budget_options
    from scenarios.kit.missing_values import add_missing_arguments, missing_policy
    from scenarios.kit.options import domain_of, parse_columns, parse_domains
    from scenarios.kit.outputs import check_output_path
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
    add_missing_arguments(parser)
    add_budget_arguments(parser)
    args = parser.parse_args(list(argv))
    columns = parse_columns(args.columns, expected=2, names="SCORE,LABEL")
    declared = domain_of(parse_domains(args.domain, single=columns[0]), columns[0], [columns[0]])
    lower, upper = (declared[0], declared[1]) if declared is not None else (0.0, 1.0)
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
    for name in ("curve", "json", "plot"):
        check_output_path(getattr(args, name), f"--{name}")
    missing = missing_policy(args.missing, args.fill, specs, dataset=None if args.data is not None else "framingham",
                             roles={columns[0]: ("score", "give --domain LO:HI"),
                                    columns[1]: ("label", "choose a column of 0/1 labels")})
    return RocPrivateOptions(replace(query, missing=missing), args.data, args.seed, args.curve, args.json, args.plot,
                             budget_options(args))


async def _read_rows(options: RocPrivateOptions) -> np.ndarray:
    """Every party: its ``(score, label)`` rows (scores clipped to the domain), its verdict shared with all parties;
    its counts of filled and clipped cells printed here (never sent)."""
    from mpyc.runtime import mpc

    from scenarios.kit.datasets import framingham_with_scores
    from scenarios.kit.missing_values import local_note
    from secure.intake import party_rows, rows_from_table
    from secure.public_randomness import public_generator
    from secure.session import InputError, agree_verdict

    query = options.query
    error, detail = None, None
    scores, labels, filled, clipped = np.empty(0), np.empty(0), 0, 0
    try:
        if options.data is not None:
            rows = party_rows(options.data, list(query.columns), party=mpc.pid, parties=len(mpc.parties),
                              missing=query.missing)
            source = options.data.replace("{pid}", str(mpc.pid))
        else:
            table = framingham_with_scores(public_generator(options.seed))
            rows = rows_from_table(table.header, table.rows, list(query.columns), source="embedded framingham",
                                   party=mpc.pid, parties=len(mpc.parties), missing=query.missing)
            source = "embedded framingham"
        raw, labels, filled = rows.values[:, 0], rows.values[:, 1], rows.filled
        if not np.all((labels == 0) | (labels == 1)):
            # shared with every party: no path (``source`` is this party's file), in the detail only
            raise InputError(f"label column '{query.columns[1]}' must hold 0 or 1, found another value",
                             detail=f"{source}: label column '{query.columns[1]}' holds a value other than 0 or 1")
        scores = np.clip(raw, query.lower, query.upper)
        clipped = int(np.count_nonzero(scores != raw))
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    print(local_note(filled=filled, clipped=clipped))
    return np.column_stack([scores, labels])


async def _release(options: RocPrivateOptions, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: spend, read its rows, run the two secure class ECDFs (:func:`dp.ecdf.release`); party 0's
    delivery."""
    from dp.ecdf import release

    result = await release(options.query, lambda: _read_rows(options), receivers=[0],
                           job=job, **options.budget.account(options.data))
    if result is None:
        return None
    return lambda: _report(options, result)


def _report(options: RocPrivateOptions, release: Any) -> None:
    """Party 0: the table, and ``--curve``, ``--json``, ``--plot``."""
    print(release.table())
    if options.curve:
        positive, negative = release.rates()
        smoothed_positive, smoothed_negative = release.smoothed_rates(options.query.smooth)
        with open(options.curve, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["threshold", "positive_cumulative", "negative_cumulative", "tpr_raw", "fpr_raw", "tpr",
                             "fpr"])
            for i, tau in enumerate(release.grid):
                writer.writerow([f"{tau:.10g}", int(release.positive_counts[i]), int(release.negative_counts[i]),
                                 f"{1 - positive[i]:.10g}", f"{1 - negative[i]:.10g}",
                                 f"{1 - smoothed_positive[i]:.10g}", f"{1 - smoothed_negative[i]:.10g}"])
    if options.json:
        write_record(options.json, release.record())
    if options.plot:
        score, label = options.query.columns
        draw_roc(options.plot, release, smooth=options.query.smooth, label=f"{score} for {label}")


def draw_roc(path: str, release: Any, *, smooth: int | None, label: str = "") -> None:
    """``--plot``: the self-normalised ROC curve of a release (PNG, Agg canvas).

    The raw curve (each class's noisy counts over their own noisy total) and, unless ``smooth`` is ``None``,
    the curve of the smoothed rates (eq. 3 with that norm), each with its AUC in the legend, and the diagonal
    (a random score).  Only released values and their post-processing are drawn.  ``release``: a
    :class:`dp.ecdf.roc.RocRelease`; ``label``: what the curve is of (score and label column), for the title."""
    from scenarios.kit.experiments import new_figure, save_figure

    figure, axes = new_figure(6.0, 5.6)
    raw = release.curve(None)
    axes.plot(raw.false_positive_rate, raw.true_positive_rate, linewidth=0.8, alpha=0.8,
              label=f"raw self-normalised, AUC {raw.auc:.4f}")
    if smooth is not None:
        smoothed = release.curve(smooth)
        axes.plot(smoothed.false_positive_rate, smoothed.true_positive_rate, linewidth=1.6,
                  label=f"smoothed (p = {smooth}), AUC {smoothed.auc:.4f}")
    axes.plot([0.0, 1.0], [0.0, 1.0], color="grey", linestyle="--", linewidth=0.8, label="diagonal (AUC 0.5)")
    axes.set_xlabel("false positive rate")
    axes.set_ylabel("true positive rate")
    axes.set_title(f"Private ROC of {label}\nepsilon {release.epsilon:g} ({release.split} split, "
                   f"{release.class_epsilon:.4g} per class), class sizes private", fontsize=10)
    axes.legend(loc="lower right")
    save_figure(figure, path)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the private-label ROC curve; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.public(), argv,
                        job="scenarios.roc_private")


if __name__ == "__main__":
    sys.exit(main())
