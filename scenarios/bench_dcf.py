"""Benchmark: the distributed comparison function of :mod:`secure.fss.dcf` (issue 14).

Per width ``bits`` and ``n`` keys: gen seconds per key (target 5 ms), serialized key bytes beside the paper's
``O(L (lambda + log n))`` (target within 2x), evaluate seconds per point, one server's full-domain seconds
(target 2 s at bits 10, n 4238) and the peak memory (docs/benchmarks.md).  One process (the keys never leave
it; under ``-M m`` only party 0 measures)::

    python -m scenarios.bench_dcf
    python -m scenarios.bench_dcf --quick --json dcf.json

Options: ``--bits LIST`` (8,10,12,16), ``--rows N`` (4238), ``--repeats R`` (median of 3), ``--full-domain-leaves
M`` (2^23; above, the time is scaled from the first keys), ``--quick`` (widths 4 and 6, 300 keys, one repeat),
``--json PATH``."""
from __future__ import annotations

import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

from scenarios.kit.records import write_record
from scenarios.kit.cli import ScenarioParser, UsageError, format_bytes, print_table
from scenarios.kit.measure import bench_main, integer_list, peak_rss_bytes

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
    for option, value in (("--rows", rows), ("--repeats", repeats), ("--full-domain-leaves", args.full_domain_leaves)):
        if value < 1:
            raise UsageError(f"{option} must be at least 1, got {value}")
    return BenchOptions(bits, rows, repeats, args.full_domain_leaves, args.quick, args.json)


@dataclass
class WidthResult:
    """The numbers of one width."""

    bits: int
    rows: int
    gen_seconds_per_row: float
    key_bytes: int
    key_bits: int
    paper_key_bits: int
    key_ratio: float
    evaluate_seconds_per_point: float
    full_domain_seconds: float
    full_domain_keys_expanded: int
    full_domain_repeats: list[float]
    peak_rss_bytes: int


def measure_width(bits: int, rows: int, repeats: int, leaf_budget: int) -> WidthResult:
    """Time gen, evaluate and full-domain evaluation of ``rows`` random keys at width ``bits``."""
    import numpy as np

    from secure.fss import dcf

    generator = np.random.default_rng(20240614 + bits)  # the alphas only (public benchmark data)
    alphas = generator.integers(0, (1 << bits) + 1, size=rows)
    start = time.perf_counter()
    keys, _ = dcf.gen(alphas, bits)
    gen_seconds = time.perf_counter() - start
    points = generator.integers(0, 1 << bits, size=EVALUATE_POINTS)
    start = time.perf_counter()
    dcf.evaluate(keys, points)
    evaluate_seconds = time.perf_counter() - start
    expanded = min(rows, max(1, leaf_budget >> bits))
    subset = keys[:expanded]
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        dcf.full_domain_sum(subset)
        runs.append((time.perf_counter() - start) * rows / expanded)
    info_bits, paper_bits = dcf.key_bits(bits), dcf.paper_key_bits(bits, rows)
    return WidthResult(bits, rows, gen_seconds / rows, keys.nbytes_per_key, info_bits, paper_bits,
                       info_bits / paper_bits, evaluate_seconds / EVALUATE_POINTS, statistics.median(runs),
                       expanded, runs, peak_rss_bytes())


async def _bench(options: BenchOptions) -> Any:
    from secure.session import party_id

    if party_id() != 0:
        return None
    results = [measure_width(bits, options.rows, options.repeats, options.full_domain_leaves)
               for bits in options.bits]

    def deliver() -> None:
        for result in results:
            scaled = (f" (scaled from {result.full_domain_keys_expanded} keys)"
                      if result.full_domain_keys_expanded < result.rows else "")
            print_table([
                ("gen", f"{1e3 * result.gen_seconds_per_row:.4f} ms per row (both servers' keys; target <= 5 ms)"),
                ("key", f"{result.key_bytes} bytes serialized; {result.key_bits} bits = 194 L + 192 vs paper "
                        f"L (128 + ceil(log2 (n + 1))) = {result.paper_key_bits} bits: ratio "
                        f"{result.key_ratio:.2f} (target <= 2)"),
                ("evaluate", f"{1e3 * result.evaluate_seconds_per_point:.2f} ms per point over {result.rows} keys "
                             f"({1e6 * result.evaluate_seconds_per_point / result.rows:.2f} us per key and point)"),
                ("full domain", f"{result.full_domain_seconds:.3f} s per server over {1 << result.bits} points, "
                                f"median of {len(result.full_domain_repeats)}{scaled}"
                                + ("; target <= 2 s" if result.bits == 10 else "")),
                ("peak memory", format_bytes(result.peak_rss_bytes)),
            ], title=f"DCF at bits = {result.bits} (L = {result.bits}, N = {1 << result.bits}), n = {result.rows}")
        if options.json:
            write_record(options.json, {"lambda": 128, "rows": options.rows, "widths": [asdict(r) for r in results]})

    return deliver


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
