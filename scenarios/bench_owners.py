"""Benchmark: many data owners upload once, then the servers release each statistic from the uploads (issue 24).

Per N (``--owners``) and statistic: N simulated owners upload to a fresh campaign (owner CPU and bytes), then the
``-M`` servers release it with the :class:`dp.umpc.owners.Owners` intake: close, DPF evaluation with the one-hot
check, the rest of the release, bytes, peak memory, the released value beside the exact one (at ``--epsilon 1e9``
they agree) and the noise std.  Run it with three local servers::

    python -m scenarios.bench_owners -M3                              # N = 10^4: every statistic
    python -m scenarios.bench_owners -M3 --owners 100000 --stats auc --silence-limit 300
    python -m scenarios.bench_owners -M3 --quick --epsilon 1e9

Statistics, grids, targets and columns: docs/benchmarks.md.  Threat model: docs/owners.md (the owners' rows are
public synthetic benchmark data; timings stay at server 0, which prints them)."""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

import dp.ecdf
import dp.umpc
from dp.ecdf import EcdfQuery, HosmerLemeshowQuery
from dp.umpc.owners import Owners
from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes
from scenarios.kit.measure import bench_main, deliver_tables, integer_list, peak_rss_bytes
from secure import categorical, numeric
from secure.owners import Campaign, FolderTransport, generate_server_key, simulate_owners

__all__ = ["main", "STATISTICS"]

#: the issue's targets, printed beside the measurements
TARGETS = {"kendall": "N = 10^4: DPF with check <= 10 s CPU per DPF server, end to end < 30 s",
           "auc": "N = 10^5: < 30 s per server end to end", "owner": "<= 5 ms CPU and 2 kB per server per row"}
CHUNK = 5000  # owners simulated per step; the event loop runs between steps (heartbeats, docs/session.md)


#: statistic -> (campaign, its columns, its query at epsilon; None: the complete U-statistic on the histogram path);
#: the campaigns' columns and grids: docs/benchmarks.md
STATISTICS: dict[str, tuple[str, tuple[str, ...], Callable[[float], Any] | None]] = {
    "kendall": ("xy", ("x", "y"), None), "duplicate": ("x", ("x",), None), "auc": ("auc", ("score", "label"), None),
    "ecdf": ("v", ("v",), lambda epsilon: EcdfQuery(column="v", lower=0.0, upper=1023.0, points=1024,
                                                    epsilon=epsilon, smooth=None)),
    "hosmer_lemeshow": ("hl", ("score", "label"), lambda epsilon: HosmerLemeshowQuery(epsilon=epsilon, precision=10))}


def parse_options(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the options of the module docstring (``owners``, ``stats``: tuples); :raise UsageError: a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_owners", description=__doc__)
    parser.add_argument("--owners", default=None, help="comma-separated numbers of owners N (default 10000)")
    parser.add_argument("--stats", default=",".join(STATISTICS), help="comma-separated statistics (default all)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of each release (1e9: exact)")
    parser.add_argument("--quick", action="store_true", help="N = 300 owners (for the tests)")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(list(argv))
    args.owners = integer_list(args.owners, "--owners", 3, 10**6, lambda w: int(float(w))) if args.owners else \
        ((300,) if args.quick else (10000,))
    args.stats = tuple(args.stats.split(","))
    if unknown := [s for s in args.stats if s not in STATISTICS]:
        raise UsageError(f"--stats: unknown statistic {unknown[0]!r}; choose from {', '.join(STATISTICS)}")
    if not args.epsilon > 0:
        raise UsageError(f"--epsilon must be positive, got {args.epsilon:g}")
    return args


@dataclass(kw_only=True)
class TimedOwners(Owners):
    """The :class:`Owners` intake, timed at this server: close and the DPF histogram (CPU and wall seconds)."""

    seconds: dict[str, float] = field(default_factory=dict)

    async def _timed(self, phase: str, step: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        out = await step
        self.seconds |= {f"{phase}_cpu": time.process_time() - cpu, f"{phase}_wall": time.perf_counter() - wall}
        return out

    async def open(self, specs: Any) -> int:
        return int(await self._timed("close", super().open(specs)))

    async def histogram(self, sectype: Any, shape: Any) -> Any:
        return await self._timed("dpf", super().histogram(sectype, shape))


def campaign_data(name: str, owners: int) -> tuple[list[Any], dict[str, Any]]:
    """The declared columns of campaign ``name`` and its public synthetic rows (a fixed seed): correlated x, y; a
    score higher for label 1; v around the middle; a probability and a label drawn with it (a calibrated model)."""
    generator, label = np.random.default_rng(24), categorical("label", categories=[0, 1])
    x = generator.integers(0, 128, owners)
    if name in ("x", "xy"):
        y = np.clip(x + generator.integers(-20, 21, owners), 0, 127)
        return [numeric(c, lower=0, upper=127, step=1) for c in name], {c: {"x": x, "y": y}[c] for c in name}
    if name == "v":
        v = np.clip(np.rint(generator.normal(512, 200, owners)), 0, 1023)
        return [numeric("v", lower=0, upper=1023, step=1)], {"v": v}
    if name == "hl":
        score = np.rint(1024 * generator.beta(2, 5, owners)) / 1024
        return [numeric("score", lower=0, upper=1, bits=10), label], {
            "score": score, "label": (generator.random(owners) < score).astype(np.int64)}
    labels = (generator.random(owners) < 0.4).astype(np.int64)
    return [numeric("score", lower=0, upper=1023, step=1), label], {
        "score": np.clip(np.rint(generator.normal(400 + 200 * labels, 180)), 0, 1023), "label": labels}


def outcome(query: Any, release: Any, rows: Any) -> dict[str, Any]:
    """Released, exact, their difference and the noise std: the ECDF at its middle point (the largest difference
    over all points), Hosmer-Lemeshow's H (the 95 % noise band of H as its spread)."""
    if isinstance(query, EcdfQuery):
        exact = dp.ecdf.exact(query, [rows[:, 0]])
        return {"released": release.values[512], "exact": exact[512], "noise_std": f"{release.point_std:.3g} per point",
                "difference": float(np.max(np.abs(release.values - exact))), "of": "F(512); difference: max of 1024"}
    if isinstance(query, HosmerLemeshowQuery):
        low, high = release.band.statistic
        return {"released": release.statistic, "exact": dp.ecdf.exact(query, [rows]).statistic,
                "noise_std": f"95 % noise band of H {low:.4g} .. {high:.4g}", "of": "H"}
    return {"released": release.estimate, "exact": float(dp.umpc.exact(query, [rows])), "of": query.statistic,
            "noise_std": f"{release.estimate_std:.3g}"}


async def upload(campaign: Any, rows: dict[str, Any], inbox: str) -> dict[str, Any]:
    """Simulate the owners of ``rows`` in steps of :data:`CHUNK` (CPU of :func:`simulate_owners` only), then write
    their records into ``inbox``; owner CPU per owner, bytes per server per row and the seconds of writing."""
    owners, cpu, write, sent = len(next(iter(rows.values()))), 0.0, 0.0, [0] * campaign.servers
    disk = FolderTransport(inbox)
    for start in range(0, owners, CHUNK):
        kept: list[tuple[int, bytes]] = []  # the records in memory: owner CPU is measured without the disk
        begin = time.process_time()
        _, posted = simulate_owners(campaign, {k: v[start:start + CHUNK] for k, v in rows.items()},
                                    SimpleNamespace(post=lambda *record: kept.append(record)))
        cpu, sent, begin = cpu + time.process_time() - begin, [a + b for a, b in zip(sent, posted)], time.perf_counter()
        for server, record in kept:
            disk.post(server, record)
        write += time.perf_counter() - begin
        await asyncio.sleep(0)  # let the event loop send heartbeats
    return {"owner_cpu_ms": 1e3 * cpu / owners, "bytes_per_row": [b / owners for b in sent], "write_seconds": write}


async def measure(statistic: str, owners: int, epsilon: float, root: str, public: list[str]) -> dict[str, Any]:
    """Every server: one campaign of ``owners`` simulated owners (by server 0), then the release; server 0's
    numbers (seconds its own; bytes of all servers; peak memory of each)."""
    from mpyc.runtime import mpc

    name, names, make = STATISTICS[statistic]
    folder = f"{root}/{statistic}{owners}"
    out: dict[str, Any] = {"statistic": statistic, "owners": owners}
    columns, rows = campaign_data(name, owners)
    if mpc.pid == 0:
        campaign = Campaign.create(public_keys=public, threshold=int(mpc.threshold), columns=columns,
                                   deadline="2100-01-01T00:00:00Z", bits=64, security=60, dpf=True)
        campaign.save(f"{folder}.json")
        out |= await upload(campaign, rows, f"{folder}/server{{pid}}")
    await mpc.transfer(None, senders=0)  # the campaign and inbox are written
    intake = TimedOwners(campaign=f"{folder}.json", inbox=f"{folder}/server{{pid}}", key=f"{root}/keys/server{{pid}}.key")
    specs = {spec.name: spec for spec in intake.plan.columns}
    query = make(epsilon) if make else dp.umpc.Query(
        statistic=statistic, columns=[specs[c] for c in names], epsilon=epsilon, tuples="all", path="histogram")  # type: ignore[arg-type]
    family = dp.umpc if isinstance(query, dp.umpc.Query) else dp.ecdf
    start = time.perf_counter()
    release = await family.release(query, intake, ledger=f"{root}/ledger", budget="1e15:1e-3")  # type: ignore[attr-defined]
    end_to_end = time.perf_counter() - start
    peaks = await mpc.transfer(peak_rss_bytes())
    if mpc.pid == 0:
        seconds = intake.seconds
        out |= seconds | outcome(query, release, np.column_stack([rows[c] for c in names]).astype(float)) | {
            "mpc_seconds": end_to_end - seconds["close_wall"] - seconds["dpf_wall"], "end_to_end": end_to_end,
            "bytes": release.bytes_sent, "peak_bytes": peaks, "rejected": intake.rejected, "cells": intake.plan.dpf_bits}
    return out


def table(r: dict[str, Any], epsilon: float) -> tuple[list[tuple[str, str]], str]:
    """One statistic's numbers beside the issue's targets: its rows and title."""
    sent = " / ".join(f"{b:.0f}" for b in r["bytes_per_row"])
    return [
        ("owner", f"{r['owner_cpu_ms']:.2f} ms CPU per owner; {sent} bytes per row at servers 0 / 1 / 2 (target "
                  f"{TARGETS['owner']}); writing the files {r['write_seconds']:.1f} s"),
        ("close (decrypt + agree)", f"{r['close_cpu']:.2f} s CPU, {r['close_wall']:.2f} s wall"),
        ("DPF evaluate + check", f"{r['dpf_cpu']:.2f} s CPU, {r['dpf_wall']:.2f} s wall (histogram phase, with the "
                                 "joint seed and the input of the sums)"),
        ("rest: MPC (noise, reveal)", f"{r['mpc_seconds']:.2f} s wall"),
        ("end to end (close + release)", f"{r['end_to_end']:.2f} s wall"
                                         + (f"; target {TARGETS[r['statistic']]}" if r["statistic"] in TARGETS else "")),
        ("bytes (all servers)", format_bytes(r["bytes"])),
        ("peak memory per server", " / ".join(format_bytes(b) for b in r["peak_bytes"])),
        ("released / exact", f"{r['released']:.10g} / {r['exact']:.10g} ({r['of']}; epsilon {epsilon:g}; "
                             f"{r['rejected']} owner(s) rejected)"),
        ("difference released - exact", f"{r.get('difference', r['released'] - r['exact']):.3g}"),
        ("noise std", r["noise_std"]),
    ], f"{r['statistic']}: N = {r['owners']} owners, G = 2^{r['cells']} cells, at server 0 (seconds its own)"


async def _bench(options: argparse.Namespace) -> Any:
    from mpyc.runtime import mpc
    from threadpoolctl import threadpool_limits

    holder = tempfile.TemporaryDirectory(prefix="bench_owners_") if mpc.pid == 0 else None
    root = await mpc.transfer(holder.name if holder else None, senders=0)
    public = await mpc.transfer(generate_server_key(int(mpc.pid), f"{root}/keys")[1].read_text().strip())
    results = []
    with threadpool_limits(limits=1):
        for owners in options.owners:
            for statistic in options.stats:
                results.append(await measure(statistic, owners, options.epsilon, root, public))
    await mpc.transfer(None, senders=0)  # every server is done with the folder
    if holder is None:
        return None
    return deliver_tables([table(r, options.epsilon) for r in results], options.json,
                          {"epsilon": options.epsilon, "results": results}, then=holder.cleanup)


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
