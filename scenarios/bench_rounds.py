"""Benchmark "rounds": communication rounds of each path, measured through a delay proxy, beside the planner's model.

Each configuration runs ``scenarios.ustat`` as three local parties twice, directly and with every message delayed
by ``--delay-ms`` one way (:class:`scenarios.kit.delay_proxy.DelayProxies`); the difference of party 0's protocol
seconds over the delay is the rounds on the critical path, printed per phase beside
:func:`dp.umpc.planner.path_costs` (docs/benchmarks.md).  This process only launches parties::

    python -m scenarios.bench_rounds                       # 50 ms one way (100 ms RTT), every configuration
    python -m scenarios.bench_rounds --delay-ms 10 --only histogram,sampler

Threat model: none (public data, loopback)."""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
from typing import Any, Sequence

from dp.validation import check_int_at_least, check_int_range, check_interval
from scenarios.kit.cli import ScenarioParser, UsageError, usage_errors

__all__ = ["main", "CONFIGURATIONS", "measure"]

_KENDALL = ("--stat", "kendall", "--columns", "x,y", "--domain", "x=0:100:0,y=0:100:0")
_AUC = ("--stat", "auc", "--columns", "score,label", "--domain", "score=0:1:12")
#: name -> (ustat arguments, path)
CONFIGURATIONS: dict[str, tuple[tuple[str, ...], str]] = {
    "histogram": ((*_KENDALL, "--path", "histogram", "--noise", "parties"), "histogram"),
    "sampler": ((*_KENDALL, "--path", "histogram", "--noise", "mpc"), "histogram"),
    "sort": ((*_AUC, "--path", "sort", "--noise", "parties"), "sort"),
    "tuples": ((*_KENDALL, "--path", "tuples", "--noise", "parties"), "tuples"),
}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RoundsOptions(argparse.Namespace):
    delay_ms: float
    only: str
    pairs: int
    rows: int
    json: str | None
    names: tuple[str, ...]
    delay: float


def parse_options(argv: Sequence[str]) -> RoundsOptions:
    """The options (``delay`` in seconds, ``names``: ``only`` as a tuple); :raise UsageError: on a bad value."""
    parser = ScenarioParser(prog="python -m scenarios.bench_rounds", description=__doc__, runs_as="launcher")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="one-way delay per message (default 50 ms)")
    parser.add_argument("--only", default=",".join(CONFIGURATIONS), help="configurations (default all)")
    parser.add_argument("--pairs", type=int, default=2000, help="sampled pairs of the tuples run (default 2000)")
    parser.add_argument("--rows", type=int, default=120, help="rows of the synthetic data (default 120)")
    parser.add_argument("--json", default=None, help="write the rows there")
    args = parser.parse_args(list(argv), namespace=RoundsOptions())
    with usage_errors():
        check_interval(args.delay_ms, "--delay-ms", low=0, high=1000, closed_low=False, closed_high=True)
    args.names = tuple(name.strip() for name in args.only.split(",") if name.strip())
    if not args.names or not set(args.names) <= set(CONFIGURATIONS):
        raise UsageError(f"--only takes some of {', '.join(CONFIGURATIONS)}, got '{args.only}'")
    with usage_errors():
        check_int_at_least(args.pairs, "--pairs", 10)
        check_int_range(args.rows, "--rows", low=30, high=10 ** 5)
    args.delay = args.delay_ms / 1000
    return args


def write_data(path: str, rows: int) -> None:
    """``rows`` public synthetic rows ``x, y`` (integers on ``0:100``, correlated) and ``score, label`` (12-bit
    scores, labels that follow them): every party keeps rows ``i, i + 3, ...`` of the one file."""
    import numpy as np

    generator = np.random.Generator(np.random.PCG64(0x20D5))
    x = np.clip(np.round(50 + 15 * generator.standard_normal(rows)), 0, 100)
    y = np.clip(np.round(0.6 * x + 20 + 10 * generator.standard_normal(rows)), 0, 100)
    score = np.round(generator.random(rows) * 4096) / 4096
    label = (generator.random(rows) < score).astype(int)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("x,y,score,label\n")
        handle.writelines(f"{a:g},{b:g},{s:.6f},{c}\n" for a, b, s, c in zip(x, y, score, label))


def run_parties(arguments: Sequence[str], *, delay: float, timeout: float = 900.0) -> dict[str, Any]:
    """Three ``scenarios.ustat`` parties on loopback (through delay proxies if ``delay > 0``); party 0's record."""
    from scenarios.kit.delay_proxy import DelayProxies, free_ports

    listen = free_ports(6)
    real, proxied = listen[:3], listen[3:]
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "record.json")
        proxy = DelayProxies(listen=proxied, target=real, delay=delay) if delay > 0 else None
        with proxy or contextlib.nullcontext() as proxies:
            processes = []
            for party in range(3):
                # a party listens on its own entry; the others reach it through its proxy
                ports = [real[j] if j == party or proxies is None else proxied[j] for j in range(3)]
                peers = [word for port in ports for word in ("-P", f"127.0.0.1:{port}")]
                command = [sys.executable, "-m", "scenarios.ustat", *arguments, *peers, "-I", str(party), "--no-log",
                           *(("--json", target) if party == 0 else ())]
                processes.append(subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                  text=True))
            failed = []
            for process in processes:
                try:
                    _, err = process.communicate(timeout=timeout)
                except subprocess.TimeoutExpired:
                    process.kill()
                    _, err = process.communicate()
                if process.returncode != 0:
                    failed.append((err.strip().splitlines() or ["no output"])[-1])
            if failed:
                raise RuntimeError(f"a party failed: {failed[0]}")
        with open(target, encoding="utf-8") as handle:
            record: dict[str, Any] = json.load(handle)
    return record


def measure(name: str, options: RoundsOptions, data: str) -> dict[str, Any]:
    """One configuration: phases without and with the delay, rounds per phase, the planner's rounds (all and of the
    noise) at the run's ``n``."""
    from dp.umpc.planner import path_costs
    from scenarios.ustat import parse_options as ustat_options

    extra, path = CONFIGURATIONS[name]
    arguments = [*extra, "--pairs", str(options.pairs) if name == "tuples" else "all", "--ledger", "off",
                 "--seed", "7", "--data", data]
    direct = run_parties(arguments, delay=0.0)
    delayed = run_parties(arguments, delay=options.delay)
    phases = {phase: (delayed["phases"][phase]["seconds"] - direct["phases"][phase]["seconds"]) / options.delay
              for phase in direct["phases"]}
    query = ustat_options(arguments).query
    model = path_costs(query.kernel, query.specs, rows=int(direct["n"]), parties=3, epsilon=query.epsilon,
                       tuples=options.pairs if path == "tuples" else None, noise=query.noise)[path]
    measured = sum(phases.values())
    return {"configuration": name, "path": path, "n": direct["n"], "seconds": direct["seconds"],
            "seconds_delayed": delayed["seconds"], "rounds": measured, "model_rounds": model.rounds,
            "rounds_at_most": delayed["seconds"] / options.delay,
            "noise_rounds": phases.get("noise", math.nan), "model_noise_rounds": model.noise_rounds,
            "phases": phases, "ratio": model.rounds / measured if measured > 0 else math.nan}


def main(argv: Sequence[str] | None = None) -> int:
    """Measure the configurations and print the table; the exit code (2: bad usage, 1: a run failed)."""
    try:
        options = parse_options(sys.argv[1:] if argv is None else argv)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        data = os.path.join(folder, "data.csv")
        write_data(data, options.rows)
        for name in options.names:
            try:
                rows.append(measure(name, options, data))
            except (RuntimeError, OSError, KeyError) as exc:
                print(f"error: {name}: {exc}", file=sys.stderr)
                return 1
    print(f"Rounds through a delay proxy, {options.delay * 1e3:g} ms one way (RTT {2 * options.delay * 1e3:g} ms), "
          f"3 parties on loopback, {options.rows} synthetic rows, tuples: --pairs {options.pairs}")
    print(f"{'configuration':<12} {'path':<10} {'n':>6} {'s direct':>9} {'s delayed':>10} {'rounds':>7} "
          f"{'model':>6} {'model/meas':>10} {'<= rounds':>9} {'noise r':>8} {'model':>6}  per phase")
    for row in rows:
        phases = ", ".join(f"{phase} {value:.0f}" for phase, value in row["phases"].items())
        print(f"{row['configuration']:<12} {row['path']:<10} {row['n']:>6} {row['seconds']:>9.2f} "
              f"{row['seconds_delayed']:>10.2f} {row['rounds']:>7.0f} {row['model_rounds']:>6.0f} "
              f"{row['ratio']:>10.2f} {row['rounds_at_most']:>9.0f} {row['noise_rounds']:>8.0f} "
              f"{row['model_noise_rounds']:>6.0f}  {phases}")
    print("rounds: (delayed - direct) / delay, exact when the computation is small beside the delay (few rows); under "
          "load the parties compute while others wait and it undercounts: '<= rounds' (delayed / delay) bounds it "
          "from above")
    if options.json is not None:
        with open(options.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
