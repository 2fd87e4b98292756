"""Benchmark: the distributed comparison function of :mod:`secure.fss.dcf` (issue 14).

Per width ``bits`` and ``n`` keys: gen seconds per key (target 5 ms), serialized key bytes beside the paper's
``O(L (lambda + log n))`` (target within 2x), evaluate seconds per point, one server's full-domain seconds
(target 2 s at bits 10, n 4238) and the peak memory (docs/benchmarks.md).  One process (the keys never leave
it; under ``-M m`` only party 0 measures)::

    python -m scenarios.bench_dcf
    python -m scenarios.bench_dcf --quick --json dcf.json

Options: docs/benchmarks.md."""
from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from scenarios.kit.cli import ScenarioParser, format_bytes
from scenarios.kit.measure import at_least, bench_main, deliver_tables, integer_list, peak_rss_bytes, timed

__all__ = ["main", "DEFAULT_BITS", "DEFAULT_ROWS", "QUICK_BITS", "QUICK_ROWS"]

DEFAULT_BITS = (8, 10, 12, 16)
DEFAULT_ROWS = 4238
QUICK_BITS = (4, 6)
QUICK_ROWS = 300
EVALUATE_POINTS = 64


@dataclass
class BenchOptions:
    """Parsed options."""

    bits: tuple[int, ...]
    rows: int
    repeats: int
    full_domain_leaves: int
    quick: bool
    json: str | None


def parse_options(argv: Sequence[str]) -> BenchOptions:
    """Parse the options of the module docstring; :raise UsageError: on a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_dcf", description=__doc__)
    parser.add_argument("--bits", default=None, help="comma-separated widths (default 8,10,12,16)")
    parser.add_argument("--rows", type=int, default=None, help="keys per width (default 4238)")
    parser.add_argument("--repeats", type=int, default=None, help="full-domain runs per width (median)")
    parser.add_argument("--full-domain-leaves", type=int, default=1 << 23,
                        help="expand at most this many leaves (keys * 2^bits) and scale the time to all keys")
    parser.add_argument("--quick", action="store_true", help="widths 4 and 6, 300 keys, one repeat")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(list(argv))
    from secure.fss.dcf import MAX_FULL_DOMAIN_BITS

    bits = (integer_list(args.bits, "--bits", 1, MAX_FULL_DOMAIN_BITS) if args.bits is not None
            else (QUICK_BITS if args.quick else DEFAULT_BITS))
    rows = args.rows if args.rows is not None else (QUICK_ROWS if args.quick else DEFAULT_ROWS)
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    return BenchOptions(bits, at_least(rows, "--rows", 1), at_least(repeats, "--repeats", 1),
                        at_least(args.full_domain_leaves, "--full-domain-leaves", 1), args.quick, args.json)


def measure_width(bits: int, rows: int, repeats: int, leaf_budget: int) -> dict[str, Any]:
    """Time gen, evaluate and full-domain evaluation of ``rows`` random keys at width ``bits``: its numbers."""
    import numpy as np

    from secure.fss import dcf

    generator = np.random.default_rng(20240614 + bits)  # the alphas only (public benchmark data)
    alphas = generator.integers(0, (1 << bits) + 1, size=rows)
    (keys, _), gen_seconds = timed(lambda: dcf.gen(alphas, bits))
    points = generator.integers(0, 1 << bits, size=EVALUATE_POINTS)
    evaluate_seconds = timed(lambda: dcf.evaluate(keys, points))[1]
    expanded = min(rows, max(1, leaf_budget >> bits))
    subset = keys[:expanded]
    runs = [timed(lambda: dcf.full_domain_sum(subset))[1] * rows / expanded for _ in range(repeats)]
    info_bits, paper_bits = dcf.key_bits(bits), dcf.paper_key_bits(bits, rows)
    return {"bits": bits, "rows": rows, "gen_seconds_per_row": gen_seconds / rows, "key_bytes": keys.nbytes_per_key,
            "key_bits": info_bits, "paper_key_bits": paper_bits, "key_ratio": info_bits / paper_bits,
            "evaluate_seconds_per_point": evaluate_seconds / EVALUATE_POINTS,
            "full_domain_seconds": statistics.median(runs), "full_domain_keys_expanded": expanded,
            "full_domain_repeats": runs, "peak_rss_bytes": peak_rss_bytes()}


def table(r: dict[str, Any]) -> tuple[list[tuple[str, str]], str]:
    """One width's rows and title."""
    expanded = r["full_domain_keys_expanded"]
    scaled = f" (scaled from {expanded} keys)" if expanded < r["rows"] else ""
    return [
        ("gen", f"{1e3 * r['gen_seconds_per_row']:.4f} ms per row (both servers' keys; target <= 5 ms)"),
        ("key", f"{r['key_bytes']} bytes serialized; {r['key_bits']} bits = 194 L + 192 vs paper "
                f"L (128 + ceil(log2 (n + 1))) = {r['paper_key_bits']} bits: ratio {r['key_ratio']:.2f} (target <= 2)"),
        ("evaluate", f"{1e3 * r['evaluate_seconds_per_point']:.2f} ms per point over {r['rows']} keys "
                     f"({1e6 * r['evaluate_seconds_per_point'] / r['rows']:.2f} us per key and point)"),
        ("full domain", f"{r['full_domain_seconds']:.3f} s per server over {1 << r['bits']} points, "
                        f"median of {len(r['full_domain_repeats'])}{scaled}"
                        + ("; target <= 2 s" if r["bits"] == 10 else "")),
        ("peak memory", format_bytes(r["peak_rss_bytes"])),
    ], f"DCF at bits = {r['bits']} (L = {r['bits']}, N = {1 << r['bits']}), n = {r['rows']}"


async def _bench(options: BenchOptions) -> Any:
    from secure.session import party_id

    if party_id() != 0:
        return None
    results = [measure_width(bits, options.rows, options.repeats, options.full_domain_leaves) for bits in options.bits]
    return deliver_tables([table(r) for r in results], options.json,
                          {"lambda": 128, "rows": options.rows, "widths": results})


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
