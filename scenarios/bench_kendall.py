"""Benchmark: the whole Pi_U-MPC protocol against the bare MPyC work it cannot avoid.

Kendall's tau of ``sysBP`` vs ``diaBP`` on all Framingham rows, ``|E| = 2n`` (BalancedSamp), epsilon 1; in the
same run the bare baseline does ``2|E|`` secure signs and ``|E|`` products only.  The ratio is the overhead of
everything else (aim: 1.5x at most; docs/benchmarks.md).  Run it with three local parties::

    python -m scenarios.bench_kendall -M3
    python -m scenarios.bench_kendall -M3 --repeats 3 --json bench.json"""
from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any, Sequence

from dp.report_text import phases_text
from scenarios.kit.cli import ScenarioParser, format_bytes
from scenarios.kit.measure import at_least, bench_main, deliver_tables, measure_step
from secure.security_parameter import restores_security_parameter, secure_integers, set_security_parameter

__all__ = ["main"]


class KendallOptions(argparse.Namespace):
    repeats: int
    rows: int | None
    json: str | None


def parse_options(argv: Sequence[str]) -> KendallOptions:
    """Parse ``--repeats``, ``--rows``, ``--json``; :raise UsageError: on a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_kendall", description=__doc__)
    parser.add_argument("--repeats", type=int, default=1, metavar="R", help="repeat, print medians")
    parser.add_argument("--rows", type=int, metavar="N", help="first N rows only")
    parser.add_argument("--json", metavar="PATH", help="party 0 writes the record")
    args = parser.parse_args(list(argv), namespace=KendallOptions())
    at_least(args.repeats, "--repeats", 1)
    if args.rows is not None:
        at_least(args.rows, "--rows", 2)
    return args


@restores_security_parameter
async def _bare_work(tuples: int, bits: int, sec_param: int) -> tuple[float, int]:
    """Seconds (this party's own) and bytes (all parties) of 2|E| secure signs and |E| products, summed and opened,
    at the security parameter the protocol ran at (it raises ``-K`` so that its comparisons' leak fits its delta:
    :mod:`dp.comparison_leakage`), so the ratio measures the protocol's own overhead."""
    import numpy as np
    from mpyc.runtime import mpc

    set_security_parameter(sec_param)
    secint = secure_integers(mpc.SecInt().bit_length)
    generator = np.random.default_rng(12345)  # public, identical at every party: no input phase needed
    differences = secint.array(generator.integers(-(1 << (bits - 2)), 1 << (bits - 2), size=2 * tuples))

    async def work() -> list[Any]:
        signs = mpc.np_sgn(differences, l=bits)
        await mpc.output(mpc.np_sum(signs[:tuples] * signs[tuples:]))
        return []

    cost, _ = await measure_step("bare", work)
    return cost.seconds, cost.bytes_sent


async def _bench(options: KendallOptions) -> Any:
    from mpyc.runtime import mpc

    from dp.umpc.protocol import UStatQuery, prepare_rows, run_secure
    from scenarios.kit.datasets import declared_specs, load_embedded
    from secure.intake import rows_from_table
    from secure.kernels import get_kernel

    table = load_embedded("framingham")
    if options.rows is not None:
        table.rows = table.rows[:options.rows]
    specs = declared_specs("framingham", ["sysBP", "diaBP"])
    rows = rows_from_table(table.header, table.rows, ["sysBP", "diaBP"], source="embedded framingham",
                           party=mpc.pid, parties=len(mpc.parties))
    n = sum(await mpc.transfer(int(rows.values.shape[0])))
    query = UStatQuery(kernel=get_kernel("kendall"), specs=(specs["sysBP"], specs["diaBP"]), epsilon=1.0,
                       tuples=2 * n, sampling="balanced")
    fixed = prepare_rows(query, rows.values)
    bits = query.kernel.comparison_bits(query.widths)
    protocol: list[Any] = []
    bare: list[tuple[float, int]] = []
    for repeat in range(options.repeats):
        protocol.append(await run_secure(query, fixed, seed=1000 + repeat))
        raised = int(protocol[-1].comparison_leak.get("security_parameter", mpc.options.sec_param))
        bare.append(await _bare_work(2 * n, bits, raised))
    if mpc.pid != 0:
        return None
    protocol_seconds = statistics.median(r.seconds for r in protocol)
    bare_seconds = statistics.median(s for s, _ in bare)
    last = protocol[-1]
    return deliver_tables([([
        ("workload", f"Kendall's tau-a of sysBP, diaBP; n = {n}, |E| = {2 * n} (BalancedSamp), epsilon = 1"),
        ("parties", f"{last.parties} (threshold t = {last.threshold}), -L {mpc.SecInt().bit_length}, "
                    f"comparisons at {bits} bits, -K {raised} for both (raised from {mpc.options.sec_param} so that "
                    f"the comparisons' leak fits delta)"),
        ("protocol", f"{protocol_seconds:.2f} s, {format_bytes(last.bytes_sent)} (median of {options.repeats})"),
        ("bare MPyC", f"{bare_seconds:.2f} s, {format_bytes(bare[-1][1])}: {4 * n} np_sgn + {2 * n} products"),
        ("ratio", f"{protocol_seconds / bare_seconds:.3f} (aim: at most 1.5)"),
    ], "Benchmark: Pi_U-MPC vs bare MPyC work")], options.json, {
        "n": n, "pairs": 2 * n, "parties": last.parties, "threshold": last.threshold, "bits": bits,
        "protocol_seconds": protocol_seconds, "protocol_bytes": last.bytes_sent, "bare_seconds": bare_seconds,
        "bare_bytes": bare[-1][1], "ratio": protocol_seconds / bare_seconds, "phases": last.phases,
        "repeats": options.repeats, "security_parameter": raised},
        then=lambda: print(phases_text(last.phases, "per phase (last run)")))


main = bench_main(parse_options, _bench)


if __name__ == "__main__":
    sys.exit(main())
