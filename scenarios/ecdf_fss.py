"""A private ECDF of one column answered by two servers from DCF keys: the data owners upload once.

Barczewski, Mawass & Ramon §4.2 (function secret sharing) with the tree mechanism of §3.1 eq. (2);
the DCF of Boyle, Gilboa & Ishai (2015) / Boyle et al. (2021) (:mod:`secure.fss.dcf`).  Every party is
a data owner (its rows, read as :mod:`scenarios.ecdf` reads them); parties 0 and 1 are also the two
servers.  Each owner sends one DCF key per row and its secret-shared tree-node noise to the servers,
once; the servers then answer ECDF queries alone.  The protocol, its threat model and what the stored
keys guarantee are in :mod:`dp.ecdf.fss_release`.

Run it::

    python -m scenarios.ecdf_fss -M3                          # upload + one round of all grid points
    python -m scenarios.ecdf_fss -M3 --columns sysBP --queries 0,100,512 --json fss.json
    python -m scenarios.ecdf_fss -M3 --columns sysBP --store keys --queries 10,20     # upload, keep the keys
    python -m scenarios.ecdf_fss -M2 --answer keys --queries at:120,140,160           # later: the servers only

Every option is explained by ``-h``; the key store (``--store``, ``--answer``): docs/command_line.md.
Threshold t = 0 (-M2) is accepted: privacy here rests on FSS with two non-colluding servers, not on
Shamir secret sharing (the run says so)."""
from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import UsageError, run_scenario
from scenarios.kit.ecdf_options import EcdfOptions

__all__ = ["main", "parse_options", "T0_PRIVACY"]

#: what the two-server run rests on when MPyC's threshold is 0 (the documented exception of secure.launcher)
T0_PRIVACY = ("privacy rests on function secret sharing with two non-colluding servers (parties 0 and 1), "
              "not on Shamir; the tree noise is calibrated as stated below")

#: the options an ``--answer`` run refuses: the upload fixed what they set (no silent ignoring)
UPLOAD_ONLY = ("--epsilon", "--columns", "--domain", "--points", "--grid", "--bits", "--missing", "--fill")


def _parse_queries(text: str) -> dict[str, Any]:
    """``all`` -> {}; ``I,I,...`` -> ``queries`` (0-based grid indices); ``at:V,V,...`` -> ``at`` (values)."""
    words = text.strip()
    if words == "all":
        return {}
    kind, body = ("at", words[3:]) if words.startswith("at:") else ("queries", words)
    items = [item.strip() for item in body.split(",") if item.strip()]
    if not items:
        raise UsageError(f"--queries expects all, I,I,... (grid indices) or at:V,V,... (grid values), got '{text}'")
    try:
        if kind == "queries":
            return {"queries": tuple(int(item) for item in items)}
        values = tuple(float(item) for item in items)
    except ValueError:
        raise UsageError(f"--queries expects all, I,I,... (0-based grid indices) or at:V,V,... (grid values), "
                         f"got '{text}'") from None
    if not all(math.isfinite(v) for v in values):
        raise UsageError(f"--queries values must be finite, got '{text}'")
    return {"at": values}


def parse_options(argv: Sequence[str]) -> EcdfOptions:
    """Parse and validate the options into a :class:`dp.ecdf.EcdfQuery` with ``protocol="fss"``.  :raise UsageError: one line."""
    from dp.ecdf.fss_release import check_bits, resolve_queries
    from scenarios.kit.ecdf_options import check_outputs, common_query, ecdf_parser, job_options, parse_quantiles

    parser = ecdf_parser("python -m scenarios.ecdf_fss", __doc__, owners=False)
    parser.add_argument("--bits", type=int, metavar="B", help="DCF bit width, at least ceil(log2 N) (default: that)")
    parser.add_argument("--queries", default="all", metavar="all|I,I,...|at:V,V,...",
                        help="0-based grid indices, or values each answered at the largest grid point <= V (named); "
                             "--quantiles only with all")
    parser.add_argument("--store", metavar="DIR", help="each server keeps its keys, noise shares and public "
                        "parameters in DIR/server{b}, HMAC-tagged with a key only it holds")
    parser.add_argument("--answer", metavar="DIR", help="a later run of the two servers alone (-M2) answering "
                        "--queries from the stored keys: no owner, no new noise or epsilon; refuses " +
                        ", ".join(UPLOAD_ONLY))
    args = parser.parse_args(list(argv))
    queries = _parse_queries(args.queries)
    if args.answer is not None:
        check_outputs(args, "curve", "json", "plot")
        if args.store is not None or args.data is not None:
            raise UsageError("--answer DIR answers from stored keys: it takes no --store and no --data "
                             "(the owners are gone)")
        unused = [name for name in UPLOAD_ONLY if any(word == name or word.startswith(name + "=") for word in argv)]
        if unused:
            raise UsageError(f"--answer DIR answers from stored keys, whose column, grid, bits, missing-value policy "
                             f"and epsilon were fixed at the upload: it takes no {', '.join(unused)}")
        return job_options(args, protocol="fss", answer=args.answer, smooth=None if args.smooth == "none"
                           else int(args.smooth), quantiles=tuple(parse_quantiles(args.quantiles)), **queries)
    common = common_query(args, bits_refusal="the grid fixes the DCF width (use --bits)")
    try:
        bits = check_bits(args.points, args.bits)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--bits: {exc}") from None
    options = job_options(args, protocol="fss", bits=bits, store=args.store, **queries, **common)
    try:
        resolve_queries(options.query, options.query.grid_points())
    except ValueError as exc:
        raise UsageError(f"--queries: {exc}") from None
    return options


async def _release(options: EcdfOptions, job: tuple[str, Sequence[str]]) -> Callable[[], None] | None:
    """Every party: spend, upload (and store) or load the stored keys, then one query round (:func:`dp.ecdf.release`).

    :return: party 0's delivery (the table, ``--curve``, ``--plot``, ``--json``), run after the orderly shutdown."""
    from mpyc.runtime import mpc

    from dp.ecdf import release
    from scenarios.kit.ecdf_options import deliver_ecdf, read_column

    values = np.empty(0) if options.query.answer is not None else (lambda: read_column(options))  # owners gone
    result = await release(options.query, values, job=job, **options.budget.account(options.data))
    if result is None or mpc.pid != 0:
        return None
    return deliver_ecdf(options, result, lambda r: f"Private ECDF of {r['column']} by FSS (two servers)\n"
                                                   f"epsilon {r['epsilon']:g}, n = {r['n']}, {r['parties']} owners")


def main(argv: Sequence[str] | None = None) -> int:
    return run_scenario(parse_options, _release, EcdfOptions.public, argv, t0_privacy=T0_PRIVACY,
                        job="scenarios.ecdf_fss")


if __name__ == "__main__":
    sys.exit(main())
