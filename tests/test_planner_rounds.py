"""The planner's rounds and latency term (issue 25, item 3): rounds per path in closed form, ``--rtt`` declared and
agreed, the choice following the network, and the loopback delay proxy that ``scenarios.bench_rounds`` measures
rounds through (its measurements are in the note; no timing is asserted here)."""
from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import threading

import pytest

from conftest import ROOT
from dp.umpc import planner
from dp.umpc.planner import NOISE_ROUNDS, comparison_rounds, path_costs, path_rounds, plan_path
from secure.columns import ColumnSpec
from secure.kernels import get_kernel
from secure.ranking import sorting_network_size

AUC16 = get_kernel("auc", precision=16)
AUC16_SPECS = (ColumnSpec("score", 0.0, 1.0, 16), ColumnSpec("label", 0, 1, 0))


def test_comparison_rounds_follow_toft_in_mpyc() -> None:
    """Opening (1) + product tree of l + 1 factors (ceil log2) + zero test (1) [+ reshare for a sign];
    equality: opening + product tree of l factors."""
    assert comparison_rounds(15, "lt") == 2 + 4
    assert comparison_rounds(16, "lt") == 2 + 5
    assert comparison_rounds(15, "sign") == 3 + 4
    assert comparison_rounds(15, "eq") == 1 + 4
    assert comparison_rounds(17, "eq") == 1 + 5


def test_sort_rounds_grow_with_the_networks_depth() -> None:
    """Per stage one less-than and one swap product; the scan adds ceil(log2 n) (AUC).  Between n = 300 and 5000
    the difference is exactly the stages' and the scan's."""
    bits = 19
    small, large = (path_rounds("sort", AUC16, rows=n, bits=bits) for n in (300, 5000))
    stages = sorting_network_size(5000)[1] - sorting_network_size(300)[1]
    assert large - small == stages * (comparison_rounds(bits, "lt") + 1) + (4999).bit_length() - (299).bit_length()


def test_histogram_rounds_count_the_grids_slices_not_the_rows_and_the_sampler() -> None:
    """The counts are shared with the bit proof (cells * width <= 2^19: the bits, the joint seed, the proof's product),
    else one slice of INPUT_CELLS cells after another (Kendall, AUC: one block of FOLD_CELLS cells of whole grid rows,
    its product overlapping the next block); beyond that the rounds do not grow with n."""
    auc = (65537, 2)
    rounds = {n: path_rounds("histogram", AUC16, rows=n, bits=0, shape=auc) for n in (3, 10 ** 6, 10 ** 7)}
    # 131 074 cells: 1 bit each proved at n = 3 (3 rounds, then the product), else 33 blocks of 2048 score rows
    assert rounds[10 ** 6] == rounds[10 ** 7] == rounds[3] - 3 - 1 + 33
    assert planner.sharing_blocks(AUC16, auc, rows=10 ** 7, parties=3) == 33
    assert planner.sharing_blocks(AUC16, auc, rows=3, parties=3) == 0
    assert planner.sharing_blocks(get_kernel("gini", precision=0), (70000,), rows=10 ** 7, parties=3) == 3  # 2^15 cells
    kendall = get_kernel("kendall")
    assert planner.sharing_blocks(kendall, (601, 401), rows=10 ** 7, parties=3) == 61  # 10 rows of 401 per block
    # public counts, sharing, the check, (the product: overlapped when streamed), noise, reveal
    assert path_rounds("histogram", kendall, rows=10 ** 7, bits=0, shape=(601, 401), noise="parties") == 1 + 61 + 3
    assert path_rounds("histogram", kendall, rows=120, bits=0, shape=(101, 101), noise="parties") == 1 + 3 + 4
    assert (path_rounds("histogram", AUC16, rows=10, bits=0, noise="mpc")
            - path_rounds("histogram", AUC16, rows=10, bits=0, noise="parties")) == NOISE_ROUNDS["mpc"] - 1


def test_the_latency_term_is_rounds_times_half_the_rtt() -> None:
    at_zero = path_costs(AUC16, AUC16_SPECS, rows=200, parties=3, tuples=None)
    at_50ms = path_costs(AUC16, AUC16_SPECS, rows=200, parties=3, tuples=None, rtt=0.05)
    for name in ("histogram", "sort", "tuples"):
        assert at_50ms[name].seconds - at_zero[name].seconds == pytest.approx(at_zero[name].rounds * 0.025)
        assert at_50ms[name].rounds == at_zero[name].rounds > 0


def test_the_choice_follows_the_network() -> None:
    """200 rows of 16-bit scores: locally the sort (~1.2 s) beats the 131 074-cell histogram (~1.5 s); at 50 ms
    RTT its ~300 rounds wait ~8 s and the histogram's 12 rounds 0.3 s, so auto takes the histogram."""
    local = plan_path(AUC16, AUC16_SPECS, rows=200, parties=3)
    remote = plan_path(AUC16, AUC16_SPECS, rows=200, parties=3, rtt=0.05)
    assert (local.path, remote.path) == ("sort", "histogram")
    assert "rtt 0 ms" in local.describe() and "rtt 50 ms" in remote.describe()
    assert f"{remote.costs['sort'].rounds} rounds" in remote.describe()


def test_a_negative_rtt_is_refused() -> None:
    with pytest.raises(ValueError, match="rtt must be a non-negative number of seconds, got -1"):
        plan_path(AUC16, AUC16_SPECS, rows=200, parties=3, rtt=-1)


def test_ustat_declares_the_rtt_as_a_public_parameter() -> None:
    """``--rtt`` is among the options every party compares at connection (a different rtt could change the path)."""
    from scenarios.ustat import parse_options

    assert parse_options(["--rtt", "50"]).raw["rtt"] == 50
    assert parse_options([]).raw["rtt"] == 0
    run = subprocess.run([sys.executable, "-m", "scenarios.ustat", "--rtt", "-5", "--no-log"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "error: party 0: --rtt must be a round-trip time in milliseconds in [0, 60000], got -5"]


def test_rank_auc_declares_the_rtt_too() -> None:
    from scenarios.rank_auc import parse_options

    options = parse_options(["--rtt", "20"])
    assert options.query.rtt == 20


def test_the_delay_proxy_carries_both_directions_in_order() -> None:
    """An echo server behind the proxy: every byte comes back, in order, through two delayed hops."""
    from scenarios.kit.delay_proxy import DelayProxies, free_ports

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    target = server.getsockname()[1]

    def echo() -> None:
        connection, _ = server.accept()
        with connection:
            while data := connection.recv(1 << 16):
                connection.sendall(data)

    threading.Thread(target=echo, daemon=True).start()
    payload = bytes(range(256)) * 2000  # 512 kB: several chunks in flight
    (listen,) = free_ports(1)
    with DelayProxies(listen=[listen], target=[target], delay=0.01):
        async def exchange() -> bytes:
            reader, writer = await asyncio.open_connection("127.0.0.1", listen)
            writer.write(payload)
            await writer.drain()
            received = await reader.readexactly(len(payload))
            writer.close()
            return received

        assert asyncio.run(asyncio.wait_for(exchange(), 60)) == payload
    server.close()
    with pytest.raises(ValueError, match="delay must lie in"):
        DelayProxies(listen=[1], target=[2], delay=-1)
