"""Benchmark: the sort path (AUC and Gini by one secure sort) against MPyC's bare ``np_sort``.

On public synthetic rows, in the same run: the AUC by one sort, by the earlier two sorts, the Gini sum by one sort
and MPyC's bare ``np_sort`` of the same keys; seconds, bytes, peak memory, every sum checked, and the ratios to the
bare sort (aim: 1.2; docs/benchmarks.md).  Run it with three local parties::

    python -m scenarios.bench_sort -M3
    python -m scenarios.bench_sort -M3 --repeats 3 --json sort.json
    python -m scenarios.bench_sort -M3 --rows 1000 --bits 12"""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes
from scenarios.kit.measure import at_least, bench_main, deliver_tables, measure_step, peak_rss_bytes

__all__ = ["main"]

QUICK_ROWS = 64


@dataclass
class BenchOptions:
    """Parsed options."""

    rows: int
    bits: int
    quick: bool
    repeats: int
    json: str | None


def parse_options(argv: Sequence[str]) -> BenchOptions:
    """Parse ``--rows``, ``--bits``, ``--quick``, ``--repeats``, ``--json``; :raise UsageError: on a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_sort", description=__doc__)
    parser.add_argument("--rows", type=int, metavar="N", help="rows (default: 2559)")
    parser.add_argument("--bits", type=int, default=16, metavar="B", help="fractional bits of the scores")
    parser.add_argument("--quick", action="store_true", help="64 rows")
    parser.add_argument("--repeats", type=int, default=1, metavar="R",
                        help="the one-sort steps R times, interleaved, medians")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the record")
    args = parser.parse_args(list(argv))
    rows = at_least(args.rows if args.rows is not None else (QUICK_ROWS if args.quick else 2559), "--rows", 2)
    at_least(args.repeats, "--repeats", 1)
    if not 1 <= args.bits <= 40:
        raise UsageError(f"--bits must lie in [1, 40], got {args.bits}")
    return BenchOptions(rows, args.bits, args.quick, args.repeats, args.json)


def synthetic_rows(rows: int, bits: int) -> tuple[Any, Any]:
    """Public synthetic ``(scores, labels)``: scores on [0, 1] at ``bits`` fractional bits as integers
    in ``[0, 2^bits]`` (ties at the clipped ends and between close scores), labels 0/1 (about 30 % ones)."""
    import numpy as np

    generator = np.random.default_rng(2559)
    labels = (generator.random(rows) < 0.3).astype(np.int64)
    scores = np.clip(0.35 + 0.3 * labels + generator.normal(0.0, 0.25, rows), 0.0, 1.0)
    return np.rint(scores * (1 << bits)).astype(np.int64), labels


async def _bench(options: BenchOptions) -> Any:
    import numpy as np
    from mpyc.runtime import mpc

    from secure.ranking import (sorted_auc_sums, sorted_auc_sums_plain, sorted_gini_sum, sorted_gini_sum_plain,
                                twice_mann_whitney)

    n = options.rows
    scores, labels = synthetic_rows(n, options.bits)
    width = 1 << options.bits
    key_bits = (2 * width + 1).bit_length() + 1    # keys 2 score + label in [0, 2 width + 1], signed
    value_bits = width.bit_length() + 1            # scores in [0, width], signed differences
    pairs_max = (n // 2) * (n - n // 2)
    auc_type = mpc.SecInt(max(mpc.options.bit_length, (2 * pairs_max).bit_length() + 1, key_bits))
    gini_type = mpc.SecInt(max(mpc.options.bit_length, (pairs_max * width).bit_length() + 1, value_bits))
    auc_sort_bits = min(max(key_bits, (2 * n).bit_length() + 1), auc_type.bit_length)  # as sorted_auc_sums
    expected_auc = sorted_auc_sums_plain(scores.tolist(), labels.tolist())
    expected_gini = sorted_gini_sum_plain(scores.tolist())

    peaks: dict[str, int] = {}
    opened: dict[str, list[int]] = {}
    seconds: dict[str, list[float]] = {}
    sent: dict[str, int] = {}

    async def measure(name: str, work: Any) -> None:
        cost, values = await measure_step(name, work)
        seconds.setdefault(name, []).append(cost.seconds)
        sent[name] = cost.bytes_sent
        opened[name] = [int(v) for v in await mpc.output(list(values))]
        peaks[name] = peak_rss_bytes()

    async def bare() -> list[Any]:
        keys = mpc.SecInt(key_bits).array(2 * scores + labels)
        ordered = mpc.np_sort(keys)
        return [mpc.np_sum(ordered * (np.arange(n) + 1))]

    async def one_sort() -> list[Any]:
        return list(await sorted_auc_sums(auc_type.array(scores), auc_type.array(labels), bits=key_bits,
                                          task="AUC one sort"))

    async def gini() -> list[Any]:
        return [await sorted_gini_sum(gini_type.array(scores), bits=value_bits, task="Gini one sort")]

    async def two_sorts() -> list[Any]:
        return list(await twice_mann_whitney(auc_type.array(scores), auc_type.array(labels)))

    for _ in range(options.repeats):  # interleaved, so that a change of load hits all alike
        await measure("bare np_sort", bare)
        await measure("AUC one sort", one_sort)
        await measure("Gini one sort", gini)
    await measure("AUC two sorts", two_sorts)
    peak_by_party = await mpc.transfer(peaks)
    exact = {"bare np_sort": True, "AUC one sort": tuple(opened["AUC one sort"]) == expected_auc,
             "Gini one sort": opened["Gini one sort"] == [expected_gini],
             "AUC two sorts": tuple(opened["AUC two sorts"]) == expected_auc}
    # each step: seconds (at this party), bytes (all parties), peak memory (largest party), exact
    steps = {name: {"seconds": statistics.median(seconds[name]), "bytes_sent": sent[name],
                    "peak_bytes": max(theirs[name] for theirs in peak_by_party), "exact": exact[name]}
             for name in peaks}
    if mpc.pid != 0:
        return None
    bare_seconds = steps["bare np_sort"]["seconds"]
    ratio = {name: steps[name]["seconds"] / bare_seconds if bare_seconds > 0 else float("nan")
             for name in ("AUC one sort", "AUC two sorts", "Gini one sort")}
    return deliver_tables([([
        ("workload", f"n = {n} rows, scores on [0, 1] at {options.bits} fractional bits, "
                     f"{int(labels.sum())} positives, {len(set(scores.tolist()))} distinct scores"),
        ("parties", f"{len(mpc.parties)} (threshold t = {mpc.threshold}), -L {mpc.options.bit_length}"),
        ("bit lengths", f"comparisons at {key_bits} bits (AUC keys; sorted on SecInt({auc_sort_bits})), "
                        f"{value_bits} bits (Gini; SecInt({value_bits})); sums on SecInt({auc_type.bit_length}) (AUC, two sorts "
                        f"compare at this length) and SecInt({gini_type.bit_length}) (Gini)"),
        *[(name, f"{step['seconds']:.2f} s, {format_bytes(step['bytes_sent'])}, peak {format_bytes(step['peak_bytes'])}"
                 f"{'' if name == 'bare np_sort' else ', exact' if step['exact'] else ', NOT EXACT'}")
          for name, step in steps.items()],
        ("ratio", f"AUC one sort / bare np_sort {ratio['AUC one sort']:.3f} (aim: at most 1.2); "
                  f"Gini / bare {ratio['Gini one sort']:.3f}; AUC two sorts / bare {ratio['AUC two sorts']:.3f}"),
    ], "Benchmark: sort path vs MPyC's bare np_sort")], options.json, {
        "n": n, "bits": options.bits, "key_bits": key_bits, "value_bits": value_bits, "repeats": options.repeats,
        "parties": len(mpc.parties), "threshold": mpc.threshold, "steps": steps, "ratios": ratio})


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
