r"""Costs of the private ECDF by function secret sharing beside the paper (§4.2) and beside §4.1.

Run: ``python -m scenarios.papers.ecdf_fss_costs -M3 [--quick]`` (three local parties).  Party 0 writes
``ecdf_fss_keys.csv``, ``ecdf_fss_costs.csv`` and ``ecdf_fss_costs.png``.  Findings beside ours:
``docs/papers/barczewski.md``."""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes
from scenarios.kit.experiments import CommonOptions, new_figure, print_rows, save_figure, style_axes
from scenarios.kit.sweep import Output, Sweep

__all__ = ["main", "parse_options", "KEY_CSV", "COST_CSV", "PNG_NAME", "KEY_BITS", "batch_sizes",
           "batch_queries"]

KEY_CSV = "ecdf_fss_keys.csv"
COST_CSV = "ecdf_fss_costs.csv"
PNG_NAME = "ecdf_fss_costs.png"
#: DCF widths of the key-size table
KEY_BITS = (6, 8, 10, 12, 14, 16)
QUICK_KEY_BITS = (6, 8)
DEFAULT_POINTS = 1024
QUICK_POINTS = 64
EPSILON = 1.0
COLUMN = "sysBP"
KEY_COLUMNS = ("bits", "n", "bytes_per_key", "key_bits", "paper_bits", "measured_over_paper", "gen_ms_per_row")
COST_COLUMNS = ("protocol", "setting", "kind", "batch", "upload_bytes", "batch_bytes", "batch_seconds",
                "total_bytes_one_batch")


@dataclass(frozen=True)
class CostOptions:
    """Parsed options; ``measured``: what :func:`_measure` measured (party 0 keeps it)."""

    points: int
    common: CommonOptions
    measured: dict[str, Any] | None = None


def _declare(parser: ScenarioParser) -> None:
    parser.add_argument("--points", type=int, help="grid size, a power of two from 4 to 4096 (default 1024)")
    parser.add_argument("--results-dir", default="results", help="where party 0 writes its files (default results)")
    parser.add_argument("--quick", action="store_true", help="a tiny run, for tests")


def _resolve(args: Any, common: CommonOptions) -> CostOptions:
    points = args.points if args.points is not None else (QUICK_POINTS if args.quick else DEFAULT_POINTS)
    if not 4 <= points <= 4096 or points & (points - 1):
        raise UsageError(f"--points must be a power of two in [4, 4096], got {points}")
    return CostOptions(points, common)


def batch_sizes(points: int) -> list[int]:
    """``|B| = 1, 16, 256, N`` (those below ``N``, then ``N``)."""
    return sorted({b for b in (1, 16, 256) if b < points} | {points})


def batch_queries(points: int, batch: int) -> np.ndarray:
    """``batch <= points`` distinct grid indices spread evenly over ``0 .. N - 1`` (steps of at least 1 round apart)."""
    return np.rint(np.linspace(0, points - 1, batch)).astype(np.int64)


def key_table(bits_list: Sequence[int], n: int, rng_rows: np.ndarray) -> list[dict[str, Any]]:
    """The key-size table (one process): measured bytes per key, formulas, ratio, generation time per row."""
    from secure.fss import dcf

    rows = []
    for bits in bits_list:
        alphas = np.asarray(rng_rows, dtype=np.int64) % (1 << bits)
        started = time.perf_counter()
        first, _ = dcf.gen(alphas, bits)
        seconds = time.perf_counter() - started
        paper = dcf.paper_key_bits(bits, n)
        measured = first.nbytes_per_key
        rows.append({"bits": bits, "n": n, "bytes_per_key": measured, "key_bits": dcf.key_bits(bits),
                     "paper_bits": paper, "measured_over_paper": round(8 * measured / paper, 4),
                     "gen_ms_per_row": round(1000 * seconds / max(1, alphas.size), 5)})
    return rows


async def _measure(options: CostOptions, seed: int) -> CostOptions:
    """Both protocols on the same data and grid at every party (collective); the options with what party 0
    measured."""
    from mpyc.runtime import mpc

    from dp.ecdf import fss_release as fss
    from dp.ecdf.secure_release import run_secure_ecdf
    from dp.ecdf.grid import grid_of_points, node_count
    from dp.ecdf.tree import plan_tree_noise
    from scenarios.kit.datasets import declared_specs, load_embedded
    from secure.intake import rows_from_table
    from secure.meter import CostMeter

    table = load_embedded("framingham")
    spec = declared_specs("framingham", [COLUMN])[COLUMN]
    parties = len(mpc.parties)
    rows = rows_from_table(table.header, table.rows, [COLUMN], source="embedded framingham", party=mpc.pid,
                           parties=parties)
    values = rows.values[:, 0]
    points = options.points
    grid = grid_of_points(spec.lower, spec.upper, points)
    bits = fss.check_bits(points)
    n = int(sum(await mpc.transfer(int(values.size))))

    # FSS: one upload, then one query round per batch; beside each round §4.1 on the same data, grid and batch
    plan = fss.fss_noise_plan(epsilon=EPSILON, points=points, owners=parties, threshold=int(mpc.threshold))
    meter = CostMeter()
    states, _ = await fss.upload(values, grid, plan, bits=bits, meter=meter, extra={"column": COLUMN})
    upload = (await meter.totals_over_parties())["upload"]
    servers = {fss.server_party(0, parties), fss.server_party(1, parties)}
    tree_plan = plan_tree_noise(epsilon=EPSILON, points=points, parties=parties, threshold=int(mpc.threshold))
    records: list[dict[str, Any]] = []
    answers: dict[int, dict[str, float]] = {}
    section41: dict[int, dict[str, dict[str, float]]] = {}
    for batch in batch_sizes(points):
        queries = batch_queries(points, batch)
        release = await fss.answer(states, queries if mpc.pid in servers else queries[:1], receivers=[0],
                                   meter=CostMeter())
        release41 = await run_secure_ecdf(values, grid, tree_plan, subset=queries.tolist(), receivers=[0])
        if release is not None and release41 is not None:  # party 0, the receiver, keeps its own seconds
            answers[batch], section41[batch] = release.phases["answer"], release41.phases
    if mpc.pid != 0:
        return options
    key_bytes = int(states[0].public["key_bytes"]) if states else 0
    noise_upload = 2 * 8 * node_count(points) * parties  # every owner: one share to each server
    key_rows = key_table(QUICK_KEY_BITS if options.common.quick else KEY_BITS, n, np.arange(n) * 7919)
    sizes = batch_sizes(points)
    # bytes one party sends to share one count: each party shares its histogram of N + 2 cells whatever the
    # batch (:func:`dp.ecdf.secure_release.own_histogram`), its validity check included
    per_point = section41[sizes[0]]["intake"]["bytes_sent"] / (parties * (points + 2))
    for batch in sizes:
        fss_bytes, fss_seconds = int(answers[batch]["bytes_sent"]), float(answers[batch]["seconds"])
        phases = section41[batch]
        total41 = int(sum(p["bytes_sent"] for p in phases.values()))
        seconds41 = float(sum(p["seconds"] for p in phases.values()))
        paper41 = n * batch * per_point + phases["noise"]["bytes_sent"] + phases["reveal"]["bytes_sent"]
        paper_upload = 2 * n * key_bytes + noise_upload
        for protocol, setting, kind, upload_bytes, batch_bytes, seconds in (
                ("fss", f"m={parties} owners", "measured", int(upload.bytes_sent), fss_bytes, fss_seconds),
                ("fss", f"n={n} owners of one row", "modelled upload, measured batch", paper_upload, fss_bytes,
                 fss_seconds),
                ("sec4.1", f"m={parties} owners", "measured", 0, total41, seconds41),
                ("sec4.1", f"n={n} owners of one row",
                 f"modelled: n|B| x {per_point:.1f} B per count share + measured noise, reveal", 0,
                 int(round(paper41)), float("nan"))):
            records.append({"protocol": protocol, "setting": setting, "kind": kind, "batch": batch,
                            "upload_bytes": upload_bytes, "batch_bytes": batch_bytes,
                            "batch_seconds": round(seconds, 4), "total_bytes_one_batch": upload_bytes + batch_bytes})
    return replace(options, measured={"key_rows": key_rows, "records": records, "n": n, "bits": bits,
                                      "key_bytes": key_bytes, "upload_seconds": float(upload.seconds),
                                      "parties": parties})


def _outputs(options: CostOptions, seed: int) -> list[Output]:
    key_rows = (options.measured or {})["key_rows"]
    return [Output(KEY_CSV[:-4], KEY_COLUMNS, key_rows),
            Output(COST_CSV[:-4], COST_COLUMNS, (options.measured or {})["records"],
                   lambda records, path: _plot(key_rows, records, path))]


def _report(options: CostOptions, outputs: Sequence[Output]) -> None:
    measured, points = options.measured or {}, options.points
    key_rows, records, n, bits = measured["key_rows"], measured["records"], measured["n"], measured["bits"]
    key_bytes, upload_seconds, parties = measured["key_bytes"], measured["upload_seconds"], measured["parties"]
    print_rows(f"DCF key size per owner row against L (sysBP, n = {n}; measured in one process)",
               ["L", "bytes/key", "our bits", "paper bits", "meas/paper", "gen ms/row"],
               [[str(r["bits"]), str(r["bytes_per_key"]), str(r["key_bits"]), str(r["paper_bits"]),
                 f"{r['measured_over_paper']:.2f}", f"{r['gen_ms_per_row']:.4f}"] for r in key_rows],
               notes=["paper: L (lambda + ceil(log2(n + 1))), lambda = 128, constant 1 (secure.fss.dcf.paper_key_bits);"
                      " ours: 194 L + 192 bits of information, serialized 16 + 24 L + ceil(L/4) + 8 bytes"])
    print_rows(f"Query batches on a grid of N = {points} (bits = {bits}), epsilon = {EPSILON:g}, -M{parties}",
               ["protocol", "setting", "|B|", "upload", "batch bytes", "batch s", "kind"],
               [[r["protocol"], r["setting"], str(r["batch"]), format_bytes(r["upload_bytes"]),
                 format_bytes(r["batch_bytes"]),
                 "-" if math.isnan(r["batch_seconds"]) else f"{r['batch_seconds']:.3f}", r["kind"]]
                for r in records],
               notes=[f"FSS upload measured: {upload_seconds:.2f} s; keys of {key_bytes} B per row; measured bytes are "
                      "network bytes (a server's own keys stay local), the n-owner model sends every key",
                      "batch seconds: party 0's own (FSS: the servers' key expansion and opening)"])


def _plot(key_rows: list[dict[str, Any]], records: list[dict[str, Any]], path: str) -> None:
    figure, (left, right) = new_figure(11.0, 4.4, panels=(1, 2))
    styles = [("o-", "-"), ("s-", "--"), ("^-", "-"), ("v-", "--")]
    for index, (protocol, setting) in enumerate(dict.fromkeys((r["protocol"], r["setting"]) for r in records)):
        style = styles[index % len(styles)]
        chosen = [r for r in records if r["protocol"] == protocol and r["setting"] == setting]
        batches = [r["batch"] for r in chosen]
        left.plot(batches, [r["total_bytes_one_batch"] for r in chosen], style[0], label=f"{protocol}, {setting}"
                  + (" (upload + batch)" if protocol == "fss" else " (per batch)"), linestyle=style[1])
        if protocol == "fss" and "measured" == chosen[0]["kind"]:
            left.plot(batches, [r["batch_bytes"] for r in chosen], "o:", label="fss, query round only")
    style_axes(left, xlabel="query batch |B|", ylabel="bytes", title="Bytes against |B|", fontsize=12, legend=7)
    bits = [r["bits"] for r in key_rows]
    right.plot(bits, [8 * r["bytes_per_key"] for r in key_rows], "o-", label="measured (serialized bits per key)")
    right.plot(bits, [r["key_bits"] for r in key_rows], "s--", label="ours: 194 L + 192")
    right.plot(bits, [r["paper_bits"] for r in key_rows], "^:", label="paper: L (lambda + log2 n)")
    style_axes(right, xlabel="L (DCF bits)", ylabel="bits per key", title="Key size per owner row", fontsize=12,
               log="", legend=7)
    save_figure(figure, path)


SWEEP = Sweep(module="ecdf_fss_costs", doc=__doc__ or "", page="docs/papers/barczewski.md", declare=_declare,
              resolve=_resolve, run=_outputs, report=_report, runs=1, quick_runs=1, own_options=True,
              footer=lambda options, seed, files, seconds: print(f"  files: {', '.join(files)}"), collect=_measure)

parse_options, main = SWEEP.parse, SWEEP.main

if __name__ == "__main__":
    raise SystemExit(main())
