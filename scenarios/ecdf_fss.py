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

Options as scenarios.ecdf: --data, --columns COLUMN, --domain COLUMN=LO:HI, --points N, --grid
uniform|geometric, --epsilon (of the whole curve, spent once at upload), --smooth none|1|2, --quantiles,
--curve PATH, --json PATH, --plot PATH.png, --missing refuse|fill, --fill.  Values outside the declared domain are clipped
to it at their owner (the number stays there).  Own options: --bits B (DCF bit width, at least
ceil(log2 N); default that), --queries all | I,I,... (0-based grid indices) | at:V,V,... (values in the
declared domain: each is answered at the largest grid point <= V, as the ECDF is released on the grid, and
the output names that point); the answers are printed (all: --curve or --json writes them); --quantiles only
with --queries all (a quantile from a few queried points is refused with one line; each comes with a 95 %
interval of grid points, as in scenarios.ecdf),
--store DIR (each server keeps its keys, noise shares and public parameters in DIR/server0 or
DIR/server1, mode 0700/0600, tagged by HMAC-SHA256 with a key only that server holds, outside DIR:
$PRIVATE_USTATS_FSS_KEYS/server{b}.key, by default under ~/.config/private-ustats/fss-store-keys, created on
first use; a modified store is refused at every party, its path printed only at its server), --answer DIR (a later run of the two servers alone, -M2, answering
--queries from the stored keys: no owner, no new noise, no new epsilon; it refuses the options the
upload fixed: --epsilon, --columns, --domain, --points, --grid, --bits, --missing, --fill).
Threshold t = 0 (-M2) is accepted: privacy here rests on FSS with two non-colluding servers, not on
Shamir secret sharing (the run says so).
"""
from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table, run_scenario
from scenarios.kit.records import write_record
from scenarios.kit.missing_values import describe_policy, missing_policy

__all__ = ["main", "parse_options", "resolve_queries", "query_notes", "T0_PRIVACY"]

#: what the two-server run rests on when MPyC's threshold is 0 (the documented exception of secure.parties)
T0_PRIVACY = ("privacy rests on function secret sharing with two non-colluding servers (parties 0 and 1), "
              "not on Shamir; the tree noise is calibrated as stated below")

#: the options an ``--answer`` run refuses: the upload fixed what they set (no silent ignoring)
UPLOAD_ONLY = ("--epsilon", "--columns", "--domain", "--points", "--grid", "--bits", "--missing", "--fill")


@dataclass
class FssOptions:
    """Parsed options."""

    data: str | None
    column: str
    lower: float
    upper: float
    points: int
    grid: str
    epsilon: float
    bits: int | None
    queries: tuple[str, list[float]]
    smooth: int | None
    quantiles: list[float]
    curve: str | None
    json: str | None
    store: str | None
    answer: str | None
    missing: Any = None
    budget: Any = None
    plot: str | None = None

    def public(self) -> dict[str, Any]:
        """The parameters every party must share."""
        common = {"queries": [self.queries[0], self.queries[1]], "smooth": self.smooth, "quantiles": self.quantiles,
                  "mode": "answer" if self.answer else "upload", "store": self.store is not None}
        if self.answer:
            return common
        return {**common, "column": self.column, "domain": [self.lower, self.upper], "points": self.points,
                "grid": self.grid, "epsilon": self.epsilon, "bits": self.bits, "embedded": self.data is None,
                "missing": self.missing.mode, "fill": [list(item) for item in self.missing.fills]}


def _parse_queries(text: str) -> tuple[str, list[float]]:
    words = text.strip()
    if words == "all":
        return "all", []
    kind, body = ("value", words[3:]) if words.startswith("at:") else ("index", words)
    items = [item.strip() for item in body.split(",") if item.strip()]
    if not items:
        raise UsageError(f"--queries expects all, I,I,... (grid indices) or at:V,V,... (grid values), got '{text}'")
    try:
        if kind == "index":
            return kind, [float(int(item)) for item in items]
        values = [float(item) for item in items]
    except ValueError:
        raise UsageError(f"--queries expects all, I,I,... (0-based grid indices) or at:V,V,... (grid values), "
                         f"got '{text}'") from None
    if not all(math.isfinite(v) for v in values):
        raise UsageError(f"--queries values must be finite, got '{text}'")
    return kind, values


def _value_positions(values: list[float], grid: np.ndarray) -> list[int]:
    """The 0-based index of the largest grid point ``<= v`` for each value (a value within ``1e-9`` of the grid's
    scale of a grid point is that point).

    :raise ValueError: a value outside the grid's domain ``[tau_1, tau_N]``.
    """
    scale = max(1.0, float(np.max(np.abs(grid))))
    tolerance = 1e-9 * scale
    found = []
    for value in values:
        if not grid[0] - tolerance <= value <= grid[-1] + tolerance:
            raise ValueError(f"query at:{value:g} is outside the grid's domain [{grid[0]:g}, {grid[-1]:g}]")
        position = int(np.searchsorted(grid, value + tolerance, side="right")) - 1
        found.append(min(max(position, 0), len(grid) - 1))
    return found


def resolve_queries(queries: tuple[str, list[float]], grid: np.ndarray) -> np.ndarray:
    """The sorted distinct 0-based grid indices of ``--queries`` on ``grid``.

    ``at:V`` is answered at the largest grid point ``tau_i <= V``: the ECDF is released on the grid, as the step
    function ``F(V) = F(tau_i)`` for ``tau_i <= V < tau_(i+1)`` (the empirical CDF of the data rounded down to the
    grid); :func:`query_notes` says which point answered an off-grid value.

    :raise ValueError: a query outside the grid (an index beyond it, a value outside its domain).
    """
    kind, items = queries
    points = len(grid)
    if kind == "all":
        return np.arange(points, dtype=np.int64)
    if kind == "index":
        for item in items:
            if not 0 <= item < points:
                raise ValueError(f"query {int(item)} is outside the grid: indices run from 0 to {points - 1}")
        return np.unique(np.asarray(items, dtype=np.int64))
    return np.unique(np.asarray(_value_positions(items, grid), dtype=np.int64))


def query_notes(queries: tuple[str, list[float]], grid: np.ndarray) -> list[str]:
    """One line per ``at:V`` that is no grid point, naming the grid point that answers it (public: the query and
    the grid are declared)."""
    kind, items = queries
    if kind != "value":
        return []
    scale = max(1.0, float(np.max(np.abs(grid))))
    return [f"at:{value:g} answered at the grid point {grid[position]:.10g} (the ECDF is released on the grid: "
            f"F({value:g}) = F({grid[position]:.10g}), its step value there)"
            for value, position in zip(items, _value_positions(items, grid))
            if abs(grid[position] - value) > 1e-9 * scale]


def parse_options(argv: Sequence[str]) -> FssOptions:
    """Parse and validate the options.

    :raise UsageError: with a one-line message.
    """
    from dp.validation import check_epsilon
    from scenarios.kit.budget_run import budget_options
    from scenarios.kit.ecdf_options import add_ecdf_arguments, ecdf_domain, parse_quantiles

    parser = ScenarioParser(prog="python -m scenarios.ecdf_fss", description=__doc__)
    add_ecdf_arguments(parser)
    parser.add_argument("--bits", type=int, default=None)
    parser.add_argument("--queries", default="all")
    parser.add_argument("--store", default=None, metavar="DIR")
    parser.add_argument("--answer", default=None, metavar="DIR")
    args = parser.parse_args(list(argv))
    from scenarios.kit.outputs import check_output_path

    queries = _parse_queries(args.queries)
    quantiles = parse_quantiles(args.quantiles)
    check_output_path(args.curve, "--curve")
    check_output_path(args.json, "--json")
    check_output_path(args.plot, "--plot")
    smooth = None if args.smooth == "none" else int(args.smooth)
    if args.answer is not None:
        if args.store is not None or args.data is not None:
            raise UsageError("--answer DIR answers from stored keys: it takes no --store and no --data "
                             "(the owners are gone)")
        unused = [name for name in UPLOAD_ONLY if any(word == name or word.startswith(name + "=") for word in argv)]
        if unused:
            raise UsageError(f"--answer DIR answers from stored keys, whose column, grid, bits, missing-value policy "
                             f"and epsilon were fixed at the upload: it takes no {', '.join(unused)}")
        return FssOptions(None, "", 0.0, 0.0, 0, "uniform", 0.0, None, queries, smooth, quantiles, args.curve,
                          args.json, None, args.answer, None, budget_options(args), args.plot)
    try:
        check_epsilon(args.epsilon)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    column, lower, upper = ecdf_domain(args, bits_refusal="the grid fixes the DCF width (use --bits)")
    from scenarios.kit.ecdf_options import checked_grid
    from dp.ecdf.fss_release import check_bits
    from dp.ecdf.tree import plan_tree_noise
    from secure.intake import ColumnSpec

    try:
        plan_tree_noise(epsilon=args.epsilon, points=args.points)
        spec = ColumnSpec(column, lower, upper)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc)) from None
    missing = missing_policy(args.missing, args.fill, [spec], dataset=None if args.data is not None else "framingham")
    options = FssOptions(args.data, column, lower, upper, args.points, args.grid, args.epsilon, args.bits, queries,
                         smooth, quantiles, args.curve, args.json, args.store, None, missing, budget_options(args),
                         args.plot)
    grid = checked_grid(lower, upper, args.points, args.grid)
    try:
        options.bits = check_bits(len(grid), args.bits)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"--bits: {exc}") from None
    try:
        resolve_queries(queries, grid)
    except ValueError as exc:
        raise UsageError(f"--queries: {exc}") from None
    return options


def _grid(options: FssOptions) -> np.ndarray:
    from scenarios.kit.ecdf_options import ecdf_grid

    return ecdf_grid(options.lower, options.upper, options.points, options.grid)


async def _release(options: FssOptions) -> Callable[[], None] | None:
    """Every party: upload (and store) or load the stored keys, then one query round.

    :return: party 0's delivery (smoothing, the table, ``--curve``, ``--json``), run after the orderly
        shutdown.
    """
    from mpyc.runtime import mpc

    from dp.ecdf import fss_release as fss
    from secure.meter import CostMeter
    from secure.session import InputError, agree_verdict

    meter = CostMeter()
    parties = len(mpc.parties)
    servers = sorted({fss.server_party(0, parties), fss.server_party(1, parties)})
    if options.answer is not None:
        await agree_verdict(f"--answer runs with the two servers only (-M2), got {parties} parties"
                            if parties > 2 else None)
        error, detail, states = None, None, []
        try:
            states = [fss.load_state(options.answer, server) for server in (0, 1)
                      if fss.server_party(server, parties) == mpc.pid]
        except InputError as exc:  # shared without the store's path; the path is in the local detail
            error, detail = str(exc), exc.detail
        await agree_verdict(error, detail=detail)
        await fss.check_same_run(states)
        grid = states[0].grid
        mode = "answer"
        upload_line = f"keys of run {states[0].run_id} loaded from {options.answer}: no owner online, no new noise"
    else:
        from scenarios.kit.ecdf_options import read_column

        values = await read_column(options)
        grid = _grid(options)
        plan = fss.fss_noise_plan(epsilon=options.epsilon, points=len(grid), owners=parties,
                                  threshold=int(mpc.threshold))
        assert options.bits is not None
        # read_column clipped the values to the domain and printed this party's local note (filled, clipped)
        states, _ = await fss.upload(values, grid, plan, bits=options.bits, meter=meter,
                                     extra={"column": options.column, "domain": [options.lower, options.upper],
                                            "grid_kind": options.grid, "missing": options.missing.mode,
                                            "fill": dict(options.missing.fills)})
        mode = "upload"
        upload_line = "uploaded by every owner once"
        if options.store is not None:
            error = detail = None
            try:
                for state in states:
                    fss.store_state(state, options.store)
            except OSError as exc:  # the path stays at this party (printed locally by agree_verdict)
                error = f"cannot store its FSS keys: {exc.strerror or type(exc).__name__}"
                detail = f"storing in {options.store}: {exc}"
            await agree_verdict(error, detail=detail)
            upload_line += f"; stored by the servers in {options.store}/server0 and /server1"
    error = None
    chosen = np.zeros(0, dtype=np.int64)
    if mpc.pid in servers:
        try:
            chosen = resolve_queries(options.queries, grid)
        except ValueError as exc:
            error = f"--queries: {exc}"
    await agree_verdict(error)
    release = await fss.answer(states, chosen if mpc.pid in servers else np.zeros(1, dtype=np.int64),
                               receivers=servers, meter=meter, mode=mode)
    if release is None or mpc.pid != 0:
        return None
    from dp.ecdf.grid import prefix_incidence

    incidence = prefix_incidence(len(grid))
    public = states[0].public
    notes = query_notes(options.queries, grid)
    return lambda: _report(options, release, incidence, public, upload_line, notes)


def _answers(options: FssOptions, result: Any) -> list[str]:
    """The lines that print the answers to ``--queries``: the released (and smoothed) ECDF at each queried grid
    point; with ``--queries all`` one line saying where the whole curve goes."""
    if options.queries[0] == "all":
        return [f"  answers: all {len(result.points)} grid points (--curve PATH or --json PATH writes them)"]
    lines = ["  answers (private ECDF at the queried grid points" + (", smoothed" if result.smoothed is not None
                                                                    else "") + "):"]
    for i, point in enumerate(result.points):
        smoothed = "" if result.smoothed is None else f"  (smoothed {result.smoothed[i]:.4f})"
        lines.append(f"    F({point:.10g}) = {result.raw[i]:.4f}{smoothed}")
    return lines


def _report(options: FssOptions, release: Any, incidence: Any, public: dict[str, Any], upload_line: str,
            notes: Sequence[str] = ()) -> None:
    from scenarios.kit.ecdf_options import smooth_release, write_curve
    from secure.meter import seconds_label

    lower, upper = public["domain"]
    result = smooth_release(release, incidence, smooth=options.smooth, quantiles=options.quantiles,
                            lower=lower, upper=upper)
    points, smoothed, solver = result.points, result.smoothed, result.solver
    upload = release.phases.get("upload", {"seconds": 0.0, "bytes_sent": 0})
    query = release.phases.get("answer", {"seconds": 0.0, "bytes_sent": 0})
    rows = [("column", f"{public['column']}, grid of {len(release.grid)} points on [{lower:g}, {upper:g}]"
                       f" ({public['grid_kind']}), {len(points)} queried"),
            ("epsilon", f"{release.epsilon:g} for the whole curve, spent once at upload (tree of {release.levels} "
                        f"levels, noise std {release.point_std:.3g} per point; exact counts, no sampling error)"),
            ("n", f"{release.n} rows"),
            ("missing values", "as at upload: " + str(public.get("missing"))
             if options.answer else describe_policy(options.missing)),
            ("owners", f"{release.parties} (servers: parties 0 and 1; noise calibrated for coalitions of "
                       f"{release.coalition} owner(s), a server's own role included)"),
            ("keys", f"DCF of {release.bits} bits, {release.key_bytes} bytes per row; {upload_line}"),
            ("run", release.run_id),
            ("upload", f"{upload['seconds']:.2f} {seconds_label()}, {format_bytes(upload['bytes_sent'])} sent" if options.answer is None
             else "earlier run"),
            ("query round", f"{query['seconds']:.2f} {seconds_label()}, {format_bytes(query['bytes_sent'])} sent by the servers"),
            ("smoothing", "none" if smoothed is None else f"p = {options.smooth} ({solver})")]
    print_table(rows, title="Private ECDF by function secret sharing (two servers; Barczewski, Mawass & Ramon §4.2)")
    print(f"  noise: {release.guarantee}")
    from scenarios.kit.ecdf_options import print_quantiles

    print_quantiles(result)
    for line in _answers(options, result):
        print(line)
    for note in notes:
        print(f"  {note}")
    if options.curve:
        write_curve(options.curve, result)
    if options.plot:
        from scenarios.kit.ecdf_options import draw_ecdf

        draw_ecdf(options.plot, result, title=f"Private ECDF of {public['column']} by FSS (two servers)\n"
                                              f"epsilon {release.epsilon:g}, n = {release.n}, {release.parties} owners")
    if options.json:
        record = {"statistic": "ecdf", "protocol": "fss", "mode": release.mode, "run_id": release.run_id,
                  "column": public["column"], "epsilon": release.epsilon, "delta": 0.0,
                  "n": release.n, "points": len(release.grid), "released": len(points),
                  "queries": release.subset.tolist(), "missing": public.get("missing"),
                  "fill": public.get("fill", {}), "parties": release.parties, "threshold": release.threshold,
                  "coalition": release.coalition, "bits": release.bits, "key_bytes_per_row": release.key_bytes,
                  "seconds": release.seconds, "bytes_sent": release.bytes_sent, "phases": release.phases,
                  "noise_source": release.noise_source, "guarantee": release.guarantee,
                  **result.record(),
                  "counts": release.counts.tolist(), "point_std": release.point_std, **release.honest_keys()}
        write_record(options.json, record)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one party (owner, and server for parties 0 and 1) of the FSS ECDF; returns the exit code."""
    return run_scenario(parse_options, _release, lambda options: options.public(), argv, t0_privacy=T0_PRIVACY,
                        spend=spend_of)


#: the budget line of an ``--answer`` run
ANSWER_NOTE = ("nothing spent: --answer answers from the stored keys, whose node noise was fixed at the upload "
               "(that run spent its epsilon); answering more queries is post-processing")


def spend_of(options: FssOptions) -> Any:
    """What one run spends (:mod:`scenarios.kit.budget_run`): the upload run spends epsilon (pure DP: the
    tree's discrete Laplace node noise, fixed once in the keys); an ``--answer`` run spends nothing (the
    noise is fixed, every answer is post-processing of the upload's release) and says so."""
    from dp.budget.accountants import Spend
    from scenarios.kit.budget_run import spend_request

    if options.answer is not None:
        return spend_request(options.budget, Spend(epsilon=0.0, what="ECDF answers from stored keys"),
                             scenario="scenarios.ecdf_fss --answer", data=None, exempt=ANSWER_NOTE)
    spend = Spend(epsilon=float(options.epsilon), mechanism="distributed discrete Laplace tree noise (FSS keys)",
                  what=f"ECDF of {options.column} on {options.points} grid points, keys uploaded")
    return spend_request(options.budget, spend, scenario="scenarios.ecdf_fss", data=options.data,
                         embedded=None if options.data is not None else "framingham")


if __name__ == "__main__":
    sys.exit(main())
