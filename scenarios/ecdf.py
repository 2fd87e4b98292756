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
    python -m scenarios.ecdf -M3 --owners 'inbox/server{pid}' --campaign c.json --server-key 'keys/server{pid}.key' \
        --columns x                                               # a campaign's servers (docs/owners.md)

Every option is explained by ``-h``.  No count of missing or clipped values leaves a party (each prints
its own, locally: "at this party, not shared: ...")."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Sequence

from scenarios.kit.cli import UsageError, run_scenario
from scenarios.kit.ecdf_options import EcdfOptions

__all__ = ["main", "parse_options"]


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options into a :class:`dp.ecdf.EcdfQuery` (:mod:`scenarios.kit.ecdf_options`
    holds the ones shared with ``scenarios.ecdf_fss``).  :raise UsageError: one line."""
    from scenarios.kit.ecdf_options import common_query, ecdf_parser, job_options

    parser = ecdf_parser("python -m scenarios.ecdf", __doc__, owners=True)
    parser.add_argument("--release", default="all", metavar="all|K",
                        help="K evenly spaced grid points (the subset B): no quantile then, one line says why")
    args = parser.parse_args(list(argv))
    common = common_query(args, bits_refusal="the ECDF compares values with a public grid, at each party, in the clear")
    release: int | None = None
    if args.release != "all":
        try:
            release = int(args.release)
        except ValueError:
            raise UsageError(f"--release expects 'all' or a number of points, got '{args.release}'") from None
        if not 2 <= release <= args.points:
            raise UsageError(f"--release must lie in [2, --points = {args.points}], got {release}")
    return job_options(args, protocol="tree", release=release, **common)


async def _release(options: EcdfOptions, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: spend, read its column, share its verdict, run the secure tree mechanism (:func:`dp.ecdf.release`);
    party 0's delivery (the table, ``--curve``, ``--plot``, ``--json``), run after the orderly shutdown
    (:func:`scenarios.kit.cli.run_scenario`; the smoothing keeps no peer waiting)."""
    from dp.ecdf import release
    from scenarios.kit.ecdf_options import deliver_ecdf, read_column

    result = await release(options.query, options.owners or (lambda: read_column(options)), receivers=[0],
                           job=job, **options.budget.account(options.data))
    if result is None:
        return None
    return deliver_ecdf(options, result, lambda r: f"Private ECDF of {r['column']}\nepsilon {r['epsilon']:g}, "
                        f"n = {r['n']}, {r['parties']} part{'y' if r['parties'] == 1 else 'ies'}")


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(parse_options, _release, EcdfOptions.public, argv, job="scenarios.ecdf")


if __name__ == "__main__":
    sys.exit(main())
