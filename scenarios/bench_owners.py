"""Benchmark: many data owners upload once, then the servers release each statistic from the uploads (issue 24).

Per N (``--owners``) and statistic: N simulated owners upload to a fresh campaign (vectorized,
:func:`secure.owners.simulate_owners`; owner CPU per owner and bytes per server per row), then the ``-M`` servers
run :func:`dp.umpc.release` with the :class:`dp.umpc.owners.Owners` intake: close (decrypt, checks, agree), DPF
evaluation with the one-hot check, MPC, bytes, peak memory per server, the released value beside the exact one
(at ``--epsilon 1e9`` they agree) and the noise std.  Run it with three local servers::

    python -m scenarios.bench_owners -M3                              # N = 10^4: Kendall, duplicate, AUC
    python -m scenarios.bench_owners -M3 --owners 100000 --stats auc --silence-limit 300
    python -m scenarios.bench_owners -M3 --quick --epsilon 1e9

Statistics, grids, targets and columns: docs/benchmarks.md.  Threat model: docs/owners.md (the owners' rows are
public synthetic benchmark data; timings stay at server 0, which prints them)."""
from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from dp.umpc.owners import Owners
from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table
from scenarios.kit.measure import bench_main, integer_list, peak_rss_bytes
from scenarios.kit.records import write_record

__all__ = ["main", "STATISTICS"]

#: statistic -> (campaign, its columns): x, y on 0:127 (2^14 cells), x alone (2^7), score 0:1023 and a label (2^11)
STATISTICS = {"kendall": ("xy", ("x", "y")), "duplicate": ("x", ("x",)), "auc": ("auc", ("score", "label"))}
#: the issue's targets, printed beside the measurements
TARGETS = {"kendall": "N = 10^4: DPF with check <= 10 s CPU per DPF server, end to end < 30 s",
           "auc": "N = 10^5: < 30 s per server end to end", "owner": "<= 5 ms CPU and 2 kB per server per row"}
CHUNK = 5000  # owners simulated per step; the event loop runs between steps (heartbeats, docs/session.md)


@dataclass
class BenchOptions:
    """Parsed options."""

    owners: tuple[int, ...]
    stats: tuple[str, ...]
    epsilon: float
    quick: bool
    json: str | None


def parse_options(argv: Sequence[str]) -> BenchOptions:
    """Parse the options of the module docstring; :raise UsageError: on a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_owners", description=__doc__)
    parser.add_argument("--owners", default=None, help="comma-separated numbers of owners N (default 10000)")
    parser.add_argument("--stats", default=",".join(STATISTICS), help="comma-separated statistics (default all)")
    parser.add_argument("--epsilon", type=float, default=1.0, help="epsilon of each release (1e9: exact)")
    parser.add_argument("--quick", action="store_true", help="N = 300 owners (for the tests)")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(list(argv))
    owners = integer_list(args.owners, "--owners", 3, 10**6, lambda w: int(float(w))) if args.owners else \
        ((300,) if args.quick else (10000,))
    stats = tuple(args.stats.split(","))
    if unknown := [s for s in stats if s not in STATISTICS]:
        raise UsageError(f"--stats: unknown statistic {unknown[0]!r}; choose from {', '.join(STATISTICS)}")
    if not args.epsilon > 0:
        raise UsageError(f"--epsilon must be positive, got {args.epsilon:g}")
    return BenchOptions(owners, stats, args.epsilon, args.quick, args.json)


@dataclass(kw_only=True)
class TimedOwners(Owners):
    """The :class:`Owners` intake, timed at this server: close and the DPF histogram (CPU and wall seconds)."""

    seconds: dict[str, float] = field(default_factory=dict)

    async def open(self, specs: Any) -> int:
        cpu, wall = time.process_time(), time.perf_counter()
        rows = await super().open(specs)
        self.seconds |= {"close_cpu": time.process_time() - cpu, "close_wall": time.perf_counter() - wall}
        return rows

    async def histogram(self, sectype: Any, shape: Any) -> Any:
        cpu, wall = time.process_time(), time.perf_counter()
        counts = await super().histogram(sectype, shape)
        self.seconds |= {"dpf_cpu": time.process_time() - cpu, "dpf_wall": time.perf_counter() - wall}
        return counts


def owner_rows(name: str, owners: int) -> dict[str, Any]:
    """Public synthetic rows of campaign ``name`` (a fixed seed): correlated x, y; a score higher for label 1."""
    import numpy as np

    generator = np.random.default_rng(24)
    x = generator.integers(0, 128, owners)
    if name == "x":
        return {"x": x}
    if name == "xy":
        return {"x": x, "y": np.clip(x + generator.integers(-20, 21, owners), 0, 127)}
    label = (generator.random(owners) < 0.4).astype(np.int64)
    return {"score": np.clip(np.rint(generator.normal(400 + 200 * label, 180)), 0, 1023), "label": label}


def campaign_columns(name: str) -> list[Any]:
    """The declared columns of campaign ``name``."""
    from secure import categorical, numeric

    if name == "auc":
        return [numeric("score", lower=0, upper=1023, step=1), categorical("label", categories=[0, 1])]
    return [numeric(c, lower=0, upper=127, step=1) for c in ("x", "y")[:len(name)]]


class Memory:
    """A transport that keeps the records (owner CPU is measured without the disk)."""

    def __init__(self, servers: int) -> None:
        self.records: list[list[bytes]] = [[] for _ in range(servers)]

    def post(self, server: int, record: bytes) -> None:
        self.records[server].append(record)


async def upload(campaign: Any, rows: dict[str, Any], inbox: str) -> dict[str, Any]:
    """Simulate the owners of ``rows`` in steps of :data:`CHUNK` (CPU of :func:`simulate_owners` only), then write
    their records into ``inbox``; owner CPU per owner, bytes per server per row and the seconds of writing."""
    from secure.owners import FolderTransport, simulate_owners

    owners, cpu, write, sent = len(next(iter(rows.values()))), 0.0, 0.0, [0] * campaign.servers
    disk = FolderTransport(inbox)
    for start in range(0, owners, CHUNK):
        memory, begin = Memory(campaign.servers), time.process_time()
        _, posted = simulate_owners(campaign, {k: v[start:start + CHUNK] for k, v in rows.items()}, memory)
        cpu, sent, begin = cpu + time.process_time() - begin, [a + b for a, b in zip(sent, posted)], time.perf_counter()
        for server, records in enumerate(memory.records):
            for record in records:
                disk.post(server, record)
        write += time.perf_counter() - begin
        await asyncio.sleep(0)  # let the event loop send heartbeats
    return {"owner_cpu_ms": 1e3 * cpu / owners, "bytes_per_row": [b / owners for b in sent], "write_seconds": write}


async def measure(statistic: str, owners: int, epsilon: float, root: str, public: list[str]) -> dict[str, Any]:
    """Every server: one campaign of ``owners`` simulated owners (by server 0), then the release; server 0's
    numbers (seconds its own; bytes of all servers; peak memory of each)."""
    from mpyc.runtime import mpc

    import dp.umpc
    from dp.umpc.complete import simulate_complete
    from secure.owners import Campaign

    name, names = STATISTICS[statistic]
    folder = f"{root}/{statistic}{owners}"
    out: dict[str, Any] = {"statistic": statistic, "owners": owners}
    if mpc.pid == 0:
        campaign = Campaign.create(public_keys=public, threshold=int(mpc.threshold), columns=campaign_columns(name),
                                   deadline="2100-01-01T00:00:00Z", bits=64, security=60, dpf=True)
        campaign.save(f"{folder}.json")
        out |= await upload(campaign, owner_rows(name, owners), f"{folder}/server{{pid}}")
    await mpc.transfer(None, senders=0)  # the campaign and inbox are written
    intake = TimedOwners(campaign=f"{folder}.json", inbox=f"{folder}/server{{pid}}", key=f"{root}/keys/server{{pid}}.key")
    specs = {spec.name: spec for spec in intake.plan.columns}
    query = dp.umpc.Query(statistic=statistic, columns=[specs[c] for c in names], epsilon=epsilon, tuples="all",  # type: ignore[arg-type]
                          path="histogram")
    start = time.perf_counter()
    release = await dp.umpc.release(query, intake, ledger=f"{root}/ledger", budget="1e15:1e-3")
    end_to_end = time.perf_counter() - start
    peaks = await mpc.transfer(peak_rss_bytes())
    if mpc.pid == 0:
        rows = owner_rows(name, owners)
        import numpy as np

        exact = simulate_complete(query.base, [np.column_stack([rows[c] for c in names]).astype(float)],
                                  threshold=0).exact_on_tuples
        mpc_seconds = sum(cost["seconds"] for phase, cost in release.phases.items() if phase != "histogram")
        out |= intake.seconds | {"mpc_seconds": mpc_seconds, "end_to_end": end_to_end, "bytes": release.bytes_sent,
                                 "peak_bytes": peaks, "released": release.estimate, "exact": float(exact),
                                 "noise_std": release.estimate_std, "rejected": intake.rejected,
                                 "cells": intake.plan.dpf_bits}
    return out


def table(r: dict[str, Any], epsilon: float) -> None:
    """Print one statistic's numbers beside the issue's targets."""
    sent = " / ".join(f"{b:.0f}" for b in r["bytes_per_row"])
    print_table([
        ("owner", f"{r['owner_cpu_ms']:.2f} ms CPU per owner; {sent} bytes per row at servers 0 / 1 / 2 (target "
                  f"{TARGETS['owner']}); writing the files {r['write_seconds']:.1f} s"),
        ("close (decrypt + agree)", f"{r['close_cpu']:.2f} s CPU, {r['close_wall']:.2f} s wall"),
        ("DPF evaluate + check", f"{r['dpf_cpu']:.2f} s CPU, {r['dpf_wall']:.2f} s wall (histogram phase, with the "
                                 "joint seed and the input of the sums)"),
        ("MPC (sums, noise, reveal)", f"{r['mpc_seconds']:.2f} s wall"),
        ("end to end (close + release)", f"{r['end_to_end']:.2f} s wall"
                                         + (f"; target {TARGETS[r['statistic']]}" if r["statistic"] in TARGETS else "")),
        ("bytes (all servers)", format_bytes(r["bytes"])),
        ("peak memory per server", " / ".join(format_bytes(b) for b in r["peak_bytes"])),
        ("released / exact", f"{r['released']:.10g} / {r['exact']:.10g} (epsilon {epsilon:g}; "
                             f"{r['rejected']} owner(s) rejected)"),
        ("difference released - exact", f"{r['released'] - r['exact']:.3g}"),
        ("noise std", f"{r['noise_std']:.3g}"),
    ], title=f"{r['statistic']}: N = {r['owners']} owners, G = 2^{r['cells']} cells, at server 0 (seconds its own)")


async def _bench(options: BenchOptions) -> Any:
    from mpyc.runtime import mpc
    from threadpoolctl import threadpool_limits

    from secure.owners import generate_server_key

    holder = tempfile.TemporaryDirectory(prefix="bench_owners_") if mpc.pid == 0 else None
    root = await mpc.transfer(holder.name if holder else None, senders=0)
    public = await mpc.transfer(generate_server_key(int(mpc.pid), f"{root}/keys")[1].read_text().strip())
    results = []
    with threadpool_limits(limits=1):
        for owners in options.owners:
            for statistic in options.stats:
                results.append(await measure(statistic, owners, options.epsilon, root, public))
    await mpc.transfer(None, senders=0)  # every server is done with the folder

    def deliver() -> None:
        for result in results:
            table(result, options.epsilon)
        if options.json:
            write_record(options.json, {"epsilon": options.epsilon, "results": results})
        if holder is not None:
            holder.cleanup()

    return deliver if mpc.pid == 0 else None


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
