"""A private ECDF of one column across parties, smoothed, with private quantiles.

Barczewski, Mawass & Ramon: each party counts its own rows <= tau_i on a public grid, the counts
are summed securely, tree noise (eq. 2) is drawn jointly (every party secret-shares its own node
draws, coalition-calibrated) and added before the only reveal.  The released curve is then smoothed
(eq. 3, CVXPY) and inverted (Algorithm 1) for quantiles; both are post-processing.

Run it with three local parties::

    python -m scenarios.ecdf -M3                                  # totChol on the embedded Framingham data
    python -m scenarios.ecdf -M3 --columns sysBP --points 4096 --epsilon 0.5 --smooth 1
    python -m scenarios.ecdf -M3 --data 'site{pid}.csv' --columns income --domain income=0:200000 --release 64 --budget 3
    python -m scenarios.ecdf -M3 --curve curve.csv --json ecdf.json --plot ecdf.png

Options: --data, --columns COLUMN (the one column), --domain COLUMN=LO:HI (declared public grid range; the
bare LO:HI also declares it, as there is one column), --points N (grid size,
default 1024), --grid uniform|geometric, --epsilon, --release all|K (K evenly spaced grid points: the
subset B), --smooth none|1|2 (norm of eq. 3, default 2), --quantiles P,P,... , --curve PATH (party 0
writes grid, private and smoothed values), --plot PATH.png (party 0 draws the released ECDF, raw and smoothed,
with the quantiles and their intervals), --json PATH, --missing refuse|fill and --fill COLUMN=V (a
missing cell stops the run, the default with --data, or takes the declared value V inside the domain;
the embedded data fills with scenarios/data/domains.json).  Values outside the declared domain are
clipped to it at their owner.  No count of missing or clipped values leaves a party (each prints its
own, locally: "at this party, not shared: ...").  --points N gives exactly N grid points, both kinds.
Each quantile comes with a 95 % interval of grid points (dp.ecdf.tree.quantile_interval, from the released
values and their noise std) and a "warning:" line when the noise dominates; with --release K (a subset of the
grid) no quantile is computed and one line says why.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario
from scenarios.kit.records import write_record
from scenarios.kit.missing_values import describe_policy, missing_policy

__all__ = ["main", "parse_options"]


@dataclass
class EcdfOptions:
    """Parsed options."""

    data: str | None
    column: str
    lower: float
    upper: float
    points: int
    grid: str
    epsilon: float
    release: int | None
    smooth: int | None
    quantiles: list[float]
    curve: str | None
    json: str | None
    missing: Any = None
    budget: Any = None
    plot: str | None = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {"column": self.column, "domain": [self.lower, self.upper], "points": self.points, "grid": self.grid,
                "epsilon": self.epsilon, "release": self.release, "embedded": self.data is None,
                "missing": self.missing.mode, "fill": [list(item) for item in self.missing.fills]}


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options (:mod:`scenarios.kit.ecdf_options` holds the ones shared with
    ``scenarios.ecdf_fss``).

    :raise UsageError: with a one-line message.
    """
    from dp.validation import check_epsilon
    from scenarios.kit.budget_run import budget_options
    from scenarios.kit.ecdf_options import add_ecdf_arguments, checked_grid, ecdf_domain, parse_quantiles

    parser = ScenarioParser(prog="python -m scenarios.ecdf", description=__doc__)
    add_ecdf_arguments(parser)
    parser.add_argument("--release", default="all")
    args = parser.parse_args(list(argv))
    try:
        check_epsilon(args.epsilon)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    column, lower, upper = ecdf_domain(args, bits_refusal="the ECDF compares values with a public grid, at each "
                                                          "party, in the clear")
    release: int | None = None
    if args.release != "all":
        try:
            release = int(args.release)
        except ValueError:
            raise UsageError(f"--release expects 'all' or a number of points, got '{args.release}'") from None
        if not 2 <= release <= args.points:
            raise UsageError(f"--release must lie in [2, --points = {args.points}], got {release}")
    quantiles = parse_quantiles(args.quantiles)
    from dp.ecdf.tree import plan_tree_noise
    from scenarios.kit.outputs import check_output_path
    from secure.intake import ColumnSpec

    try:  # the node noise DLap((L + 1) / epsilon) must be drawable (one-process plan: the strictest)
        plan_tree_noise(epsilon=args.epsilon, points=args.points)
        spec = ColumnSpec(column, lower, upper)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    check_output_path(args.curve, "--curve")
    check_output_path(args.json, "--json")
    check_output_path(args.plot, "--plot")
    missing = missing_policy(args.missing, args.fill, [spec], dataset=None if args.data is not None else "framingham")
    options = EcdfOptions(args.data, column, lower, upper, args.points, args.grid, args.epsilon, release,
                          None if args.smooth == "none" else int(args.smooth), quantiles, args.curve, args.json,
                          missing, budget_options(args), args.plot)
    checked_grid(lower, upper, args.points, args.grid)
    return options


def _grid(options: EcdfOptions) -> np.ndarray:
    from scenarios.kit.ecdf_options import ecdf_grid

    return ecdf_grid(options.lower, options.upper, options.points, options.grid)


async def _release(options: EcdfOptions) -> Callable[[], None] | None:
    """Every party: read its column, share its verdict, run the secure tree mechanism.

    :return: party 0's delivery (smoothing, the table, ``--curve``, ``--json``), which
        :func:`scenarios.kit.cli.run_scenario` runs only after the orderly shutdown, so that a party lost
        in the shutdown phase releases nothing (and the smoothing keeps no peer waiting).
    """
    from mpyc.runtime import mpc

    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.tree import plan_tree_noise
    from dp.ecdf.secure_release import run_secure_ecdf
    from scenarios.kit.ecdf_options import read_column

    values = await read_column(options)
    grid = _grid(options)
    plan = plan_tree_noise(epsilon=options.epsilon, points=len(grid), parties=len(mpc.parties),
                           threshold=int(mpc.threshold))
    subset = None if options.release is None else np.unique(np.linspace(0, len(grid) - 1, options.release).round()
                                                             .astype(np.int64))
    release = await run_secure_ecdf(values, grid, plan, subset=None if subset is None else subset.tolist(),
                                    receivers=[0])
    if release is None:
        return None
    incidence = prefix_incidence(len(grid))
    return lambda: _report(options, release, incidence)


def _report(options: EcdfOptions, release: Any, incidence: Any) -> None:
    from scenarios.kit.ecdf_options import smooth_release, write_curve
    from secure.meter import seconds_label

    result = smooth_release(release, incidence, smooth=options.smooth, quantiles=options.quantiles,
                            lower=options.lower, upper=options.upper)
    points, smoothed, solver = result.points, result.smoothed, result.solver
    rows = [("column", f"{options.column}, grid of {len(release.grid)} points on [{options.lower:g}, {options.upper:g}]"
                       f" ({options.grid}), {len(points)} released"),
            ("epsilon", f"{release.epsilon:g} (tree of {release.levels} levels, noise std {release.point_std:.3g} per point; exact counts, no sampling error)"),
            ("n", f"{release.n} rows"),
            ("missing values", describe_policy(options.missing)),
            ("parties", f"{release.parties} (threshold t = {release.threshold})"),
            (seconds_label(), f"{release.seconds:.2f}"),
            ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
            ("smoothing", "none" if smoothed is None else f"p = {options.smooth} ({solver})")]
    print_table(rows, title="Private ECDF (tree mechanism, Barczewski, Mawass & Ramon)")
    print(f"  noise: {release.guarantee}")
    from scenarios.kit.ecdf_options import print_quantiles

    print_quantiles(result)
    if options.curve:
        write_curve(options.curve, result)
    if options.plot:
        from scenarios.kit.ecdf_options import draw_ecdf

        draw_ecdf(options.plot, result, title=f"Private ECDF of {options.column}\nepsilon {release.epsilon:g}, "
                                              f"n = {release.n}, {release.parties} part{'y' if release.parties == 1 else 'ies'}")
    if options.json:
        record = {"statistic": "ecdf", "column": options.column, "epsilon": release.epsilon, "delta": 0.0,
                  "n": release.n, "points": len(release.grid), "released": len(points),
                  "missing": options.missing.mode, "fill": dict(options.missing.fills),
                  "parties": release.parties, "threshold": release.threshold, "seconds": release.seconds,
                  "bytes_sent": release.bytes_sent, "phases": release.phases,
                  "noise_source": release.noise_source, "guarantee": release.guarantee,
                  **result.record(),
                  "counts": release.counts.tolist(), "point_std": release.point_std, **release.honest_keys()}
        write_record(options.json, record)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the private ECDF; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.public(), argv, spend=spend_of)


def spend_of(options: EcdfOptions) -> Any:
    """What one run spends (:mod:`scenarios.kit.budget_run`): epsilon, pure DP (the tree's discrete Laplace
    node noise, Barczewski et al. eq. 2, split over its levels); embedded data exempt unless
    ``--ledger``/``--budget`` is given."""
    from dp.budget.accountants import Spend
    from scenarios.kit.budget_run import spend_request

    spend = Spend(epsilon=float(options.epsilon), mechanism="distributed discrete Laplace tree noise",
                  what=f"ECDF of {options.column} on {options.points} grid points")
    return spend_request(options.budget, spend, scenario="scenarios.ecdf", data=options.data,
                         embedded=None if options.data is not None else "framingham")


if __name__ == "__main__":
    sys.exit(main())
