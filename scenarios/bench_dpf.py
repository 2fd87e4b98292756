"""Benchmark: the distributed point function of :mod:`secure.fss.dpf` (issue 24, part 4).

Per (N keys, G = 2^bits cells): gen seconds and bytes per key, one server's full-domain sum CPU seconds, without
and with the one-hot sketch (target <= 10 s CPU at N = 10^4, G = 2^14), leaves per second beside the AES-128-ECB
floor measured in the same run, and the peak memory (docs/fss.md#dpf).  One process, BLAS on one thread (under
``-M m`` only party 0 measures)::

    python -m scenarios.bench_dpf
    python -m scenarios.bench_dpf --quick --json dpf.json
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Sequence

from scenarios.kit.cli import ScenarioParser, format_bytes
from scenarios.kit.measure import bench_main, deliver_tables, integer_list, peak_rss_bytes, timed

__all__ = ["main"]

PROTOTYPE_LEAVES_PER_SECOND = (6.6e6, 7.8e6)


def parse_options(argv: Sequence[str]) -> argparse.Namespace:
    """Parse the options of the module docstring (``keys``, ``bits``: tuples); :raise UsageError: on a bad value."""
    from secure.fss.dpf import MAX_BITS

    parser = ScenarioParser(prog="python -m scenarios.bench_dpf", description=__doc__)
    parser.add_argument("--keys", default=None, help="comma-separated numbers of keys N (default 1000,10000)")
    parser.add_argument("--bits", default=None, help="comma-separated widths, G = 2^bits cells (default 10,14)")
    parser.add_argument("--quick", action="store_true", help="N = 200 keys at widths 6 and 10")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args(list(argv))
    args.keys = integer_list(args.keys, "--keys", 1, 10**7, lambda word: int(float(word))) if args.keys else \
        ((200,) if args.quick else (1000, 10000))
    args.bits = integer_list(args.bits, "--bits", 1, MAX_BITS, lambda word: int(float(word))) if args.bits else \
        ((6, 10) if args.quick else (10, 14))
    return args


def aes_floor() -> float:
    """AES-128-ECB blocks per CPU second on a 16 MB buffer (``cryptography``), best of three."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    data, out = os.urandom(1 << 24), bytearray((1 << 24) + 16)
    encryptor = Cipher(algorithms.AES(os.urandom(16)), modes.ECB()).encryptor()
    best = 0.0
    for _ in range(3):
        start = time.process_time()
        for _ in range(8):
            encryptor.update_into(data, out)
        best = max(best, 8 * (len(data) >> 4) / max(time.process_time() - start, 1e-9))
    return best


def measure(keys: int, bits: int) -> dict[str, Any]:
    """Time gen, full_domain_sum and evaluate (with the sketch) of ``keys`` random keys at width ``bits``: the
    numbers of one (N, G)."""
    import numpy as np

    from secure.fss import dpf

    alphas = np.random.default_rng(20240624 + bits).integers(0, 1 << bits, keys)  # public benchmark data
    (server0, _), gen_seconds = timed(lambda: dpf.gen(alphas, bits=bits), time.process_time)
    sum_seconds = timed(lambda: dpf.full_domain_sum(server0), time.process_time)[1]
    sketch_seconds = timed(lambda: dpf.evaluate(server0, seed=os.urandom(32)), time.process_time)[1]
    leaves = keys << bits
    return {"keys": keys, "bits": bits, "gen_seconds_per_key": gen_seconds / keys, "key_bytes": dpf.key_bytes(bits),
            "sum_seconds": sum_seconds, "sketch_seconds": sketch_seconds,
            "leaves_per_second": leaves / max(sum_seconds, 1e-9),
            "sketch_leaves_per_second": leaves / max(sketch_seconds, 1e-9), "peak_rss_bytes": peak_rss_bytes()}


async def _bench(options: argparse.Namespace) -> Any:
    from threadpoolctl import threadpool_limits

    from secure.fss.dpf import NU
    from secure.session import party_id

    if party_id() != 0:
        return None
    with threadpool_limits(limits=1):
        floor = aes_floor()
        results = [measure(keys, bits) for keys in options.keys for bits in options.bits]
    low, high = (rate / 1e6 for rate in PROTOTYPE_LEAVES_PER_SECOND)
    tables = []
    for r in results:
        # AES blocks per leaf: two per inner node (2^d - 1 of them, d = bits - nu) and one per leaf
        per_leaf = 1 + 2 * ((1 << max(0, r["bits"] - NU)) - 1) / (1 << r["bits"])
        tables.append(([
            ("gen", f"{1e6 * r['gen_seconds_per_key']:.1f} us per key (both servers); {r['key_bytes']} bytes per key"),
            ("full-domain sum", f"{r['sum_seconds']:.3f} s CPU, {r['leaves_per_second'] / 1e6:.1f} M leaves/s"),
            ("with sketch", f"{r['sketch_seconds']:.3f} s CPU, {r['sketch_leaves_per_second'] / 1e6:.1f} M "
                            f"leaves/s (prototype {low:.1f}-{high:.1f} M leaves/s)"),
            ("AES floor", f"{floor / 1e6:.0f} M blocks/s; {per_leaf:.3f} blocks per leaf, so AES alone "
                          f"allows {floor / per_leaf / 1e6:.0f} M leaves/s: the sum reaches "
                          f"{100 * r['leaves_per_second'] * per_leaf / floor:.0f} %, with sketch "
                          f"{100 * r['sketch_leaves_per_second'] * per_leaf / floor:.0f} %"),
            ("peak memory", format_bytes(r["peak_rss_bytes"])),
        ], f"DPF at N = {r['keys']} keys, G = 2^{r['bits']} cells ({r['keys'] << r['bits']} leaves), one server"))
    return deliver_tables(tables, options.json, {"aes_blocks_per_second": floor, "results": results})


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
