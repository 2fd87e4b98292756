"""A private ECDF of one column across parties, smoothed, with private quantiles.

Barczewski, Mawass & Ramon: each party counts its own rows <= tau_i on a public grid, the counts
are summed securely, tree noise (eq. 2) is drawn jointly (every party secret-shares its own node
draws, coalition-calibrated) and added before the only reveal.  The released curve is then smoothed
(eq. 3, CVXPY) and inverted (Algorithm 1) for quantiles; both are post-processing.

Run it with three local parties::

    python -m scenarios.ecdf -M3                                  # totChol on the embedded Framingham data
    python -m scenarios.ecdf -M3 --columns sysBP --points 4096 --epsilon 0.5 --smooth 1
    python -m scenarios.ecdf -M3 --data 'site{pid}.csv' --columns income --domain income=0:200000 --release 64
    python -m scenarios.ecdf -M3 --curve curve.csv --json ecdf.json

Options: --data, --columns COLUMN (the one column), --domain COLUMN=LO:HI (declared public grid range; the
bare LO:HI also declares it, as there is one column), --points N (grid size,
default 1024), --grid uniform|geometric, --epsilon, --release all|K (K evenly spaced grid points: the
subset B), --smooth none|1|2 (norm of eq. 3, default 2), --quantiles P,P,... , --curve PATH (party 0
writes grid, private and smoothed values), --json PATH, --missing refuse|fill and --fill COLUMN=V (a
missing cell stops the run, the default with --data, or takes the declared value V inside the domain;
the embedded data fills with scenarios/data/domains.json).  No count of missing values leaves a
party (each prints its own, locally).
"""
from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario
from scenarios.kit.missing_values import add_missing_arguments, describe_policy, local_note, missing_policy

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

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        return {"column": self.column, "domain": [self.lower, self.upper], "points": self.points, "grid": self.grid,
                "epsilon": self.epsilon, "release": self.release, "embedded": self.data is None,
                "missing": self.missing.mode, "fill": [list(item) for item in self.missing.fills]}


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options.

    :raise UsageError: with a one-line message.
    """
    from dp.validation import check_epsilon
    from scenarios.kit.datasets import declared_specs

    parser = ScenarioParser(prog="python -m scenarios.ecdf", description=__doc__)
    parser.add_argument("--data", default=None)
    parser.add_argument("--columns", default="totChol", metavar="COLUMN")
    parser.add_argument("--domain", default=None)
    parser.add_argument("--points", type=int, default=1024)
    parser.add_argument("--grid", choices=("uniform", "geometric"), default="uniform")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--release", default="all")
    parser.add_argument("--smooth", choices=("none", "1", "2"), default="2")
    parser.add_argument("--quantiles", default="0.1,0.25,0.5,0.75,0.9")
    parser.add_argument("--curve", default=None)
    parser.add_argument("--json", default=None)
    add_missing_arguments(parser)
    args = parser.parse_args(list(argv))
    try:
        check_epsilon(args.epsilon)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    from scenarios.kit.options import domain_of, parse_columns, parse_domains

    args.column = parse_columns(args.columns, expected=1, names="one COLUMN (the ECDF is of one column)")[0]
    declared = domain_of(parse_domains(args.domain, single=args.column), args.column, [args.column])
    if declared is not None:
        lower, upper = declared[0], declared[1]
        if declared[2] is not None:
            raise UsageError(f"--domain {args.column}=LOW:HIGH takes no BITS here: the ECDF compares values "
                             "with a public grid, at each party, in the clear")
    elif args.data is None and args.column in declared_specs("framingham", [args.column]):
        spec = declared_specs("framingham", [args.column])[args.column]
        lower, upper = spec.lower, spec.upper
    else:
        raise UsageError(f"no declared domain for column '{args.column}': give --domain {args.column}=LOW:HIGH")
    if not (math.isfinite(lower) and math.isfinite(upper) and math.isfinite(upper - lower)):
        raise UsageError(f"--domain must be finite (LOW:HIGH with HIGH - LOW below 1.8e308), got {lower:g}:{upper:g}")
    if not lower < upper:
        raise UsageError(f"--domain must have LOW < HIGH, got {lower}:{upper}")
    if args.grid == "geometric" and lower <= 0:
        raise UsageError(f"a geometric grid needs a positive lower bound, got {lower}")
    if not 2 <= args.points <= 1 << 20:
        raise UsageError(f"--points must lie in [2, 2^20], got {args.points}")
    release: int | None = None
    if args.release != "all":
        try:
            release = int(args.release)
        except ValueError:
            raise UsageError(f"--release expects 'all' or a number of points, got '{args.release}'") from None
        if not 2 <= release <= args.points:
            raise UsageError(f"--release must lie in [2, --points = {args.points}], got {release}")
    try:
        quantiles = [float(q) for q in args.quantiles.split(",") if q.strip()]
    except ValueError:
        raise UsageError(f"--quantiles expects numbers like 0.25,0.5, got '{args.quantiles}'") from None
    if any(not 0 < q < 1 for q in quantiles):
        raise UsageError(f"--quantiles must lie strictly between 0 and 1, got '{args.quantiles}'")
    from dp.ecdf.tree import plan_tree_noise
    from scenarios.kit.outputs import check_output_path
    from secure.intake import ColumnSpec

    try:  # the node noise DLap((L + 1) / epsilon) must be drawable (one-process plan: the strictest)
        plan_tree_noise(epsilon=args.epsilon, points=args.points)
        spec = ColumnSpec(args.column, lower, upper)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    check_output_path(args.curve, "--curve")
    check_output_path(args.json, "--json")
    missing = missing_policy(args.missing, args.fill, [spec], dataset=None if args.data is not None else "framingham")
    options = EcdfOptions(args.data, args.column, lower, upper, args.points, args.grid, args.epsilon, release,
                          None if args.smooth == "none" else int(args.smooth), quantiles, args.curve, args.json,
                          missing)
    try:
        _grid(options)
    except ValueError as exc:
        raise UsageError(f"--domain {lower:g}:{upper:g} with --points {args.points} gives no {args.grid} grid: {exc}") from None
    return options


def _grid(options: EcdfOptions) -> np.ndarray:
    from dp.ecdf.tree import geometric_grid, uniform_grid

    if options.grid == "uniform":
        return uniform_grid(options.lower, options.upper, (options.upper - options.lower) / (options.points - 1))
    ratio = np.log(options.upper / options.lower) / (options.points - 1)
    return geometric_grid(options.lower, options.upper, ratio)


async def _release(options: EcdfOptions) -> Callable[[], None] | None:
    """Every party: read its column, share its verdict, run the secure tree mechanism.

    :return: party 0's delivery (smoothing, the table, ``--curve``, ``--json``), which
        :func:`scenarios.kit.cli.run_scenario` runs only after the orderly shutdown, so that a party lost
        in the shutdown phase releases nothing (and the smoothing keeps no peer waiting).
    """
    from mpyc.runtime import mpc

    from dp.ecdf.tree import plan_tree_noise, prefix_incidence
    from dp.ecdf.secure_release import run_secure_ecdf
    from scenarios.kit.datasets import load_embedded
    from secure.intake import party_rows, rows_from_table
    from secure.session import InputError, agree_verdict

    error, detail, values, filled = None, None, np.empty(0), 0
    try:
        if options.data is not None:
            rows = party_rows(options.data, [options.column], party=mpc.pid, parties=len(mpc.parties),
                              missing=options.missing)
        else:
            table = load_embedded("framingham")
            rows = rows_from_table(table.header, table.rows, [options.column], source="embedded framingham",
                                   party=mpc.pid, parties=len(mpc.parties), missing=options.missing)
        values, filled = rows.values[:, 0], rows.filled
    except InputError as exc:
        error, detail = str(exc), exc.detail
    await agree_verdict(error, detail=detail)
    print(local_note(filled=filled))
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
    from smoothing import inverse_ecdf, smooth_ecdf

    points = release.grid[release.subset]
    raw = release.values
    smoothed = None
    solver = "-"
    if options.smooth is not None:
        result = smooth_ecdf(raw, incidence, subset=release.subset, norm=options.smooth)
        smoothed, solver = result.values, f"{result.solver}, {result.seconds:.2f} s"
    rows = [("column", f"{options.column}, grid of {len(release.grid)} points on [{options.lower:g}, {options.upper:g}]"
                       f" ({options.grid}), {len(points)} released"),
            ("epsilon", f"{release.epsilon:g} (tree of {release.levels} levels, noise std {release.point_std:.3g} per point; exact counts, no sampling error)"),
            ("n", f"{release.n} rows"),
            ("missing values", describe_policy(options.missing)),
            ("parties", f"{release.parties} (threshold t = {release.threshold})"),
            ("seconds", f"{release.seconds:.2f}"),
            ("bytes", f"{format_bytes(release.bytes_sent)} sent by all parties"),
            ("smoothing", "none" if smoothed is None else f"p = {options.smooth} ({solver})")]
    print_table(rows, title="Private ECDF (tree mechanism, Barczewski, Mawass & Ramon)")
    print(f"  noise: {release.guarantee}")
    curve = smoothed if smoothed is not None else raw
    quantiles = {q: inverse_ecdf((points, curve), q, precision=(options.upper - options.lower) / 1e6)
                 for q in options.quantiles}
    print("  private quantiles: " + ", ".join(f"{q:g}: {v:.4g}" for q, v in quantiles.items()))
    if options.curve:
        with open(options.curve, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["threshold", "private", "smoothed"])
            for i, point in enumerate(points):
                writer.writerow([f"{point:.10g}", f"{raw[i]:.10g}", "" if smoothed is None else f"{smoothed[i]:.10g}"])
    if options.json:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump({"statistic": "ecdf", "column": options.column, "epsilon": release.epsilon, "delta": 0.0,
                       "n": release.n, "points": len(release.grid), "released": len(points),
                       "missing": options.missing.mode, "fill": dict(options.missing.fills),
                       "parties": release.parties, "threshold": release.threshold, "seconds": release.seconds,
                       "bytes_sent": release.bytes_sent, "phases": release.phases,
                       "noise_source": release.noise_source, "guarantee": release.guarantee,
                       "quantiles": {str(q): v for q, v in quantiles.items()},
                       "counts": release.counts.tolist(), "point_std": release.point_std, **release.honest_keys()},
                      handle, indent=2)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party of the private ECDF; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.public(), argv)


if __name__ == "__main__":
    sys.exit(main())
