"""Kendall vs bins and UCI Heart Disease (Sinh & Ramon Fig. 3-6): quick runs in process, CSV, PNG, one check."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest

from scenarios.papers import umpc_bins_and_uci


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _is_png(path: Path) -> bool:
    return path.stat().st_size > 0 and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module", params=["bins", "uci"])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    directory = tmp_path_factory.mktemp(f"umpc_{request.param}")
    argv = ["--figure", request.param, "--quick", "--seed", "5", "--results-dir", str(directory)]
    if request.param == "uci":
        argv += ["--runs", "100"]  # Bell's Kendall errors are heavy-tailed: 20 runs cannot separate them
    assert umpc_bins_and_uci.main(argv) == 0
    return request.param, directory


def test_quick_writes_csv_and_png(run: tuple[str, Path]) -> None:
    figure, directory = run
    header, rows = _read(directory / f"umpc_{figure}.csv")
    assert tuple(header) == umpc_bins_and_uci.CSV_COLUMNS
    assert {row["method"] for row in rows} == set(umpc_bins_and_uci.METHODS + umpc_bins_and_uci.COST_ONLY_METHODS)
    simulated = [row for row in rows if row["method"] in umpc_bins_and_uci.METHODS]
    assert all(math.isfinite(float(row["mse_mean"])) for row in simulated)
    assert all(math.isnan(float(row["mse_mean"])) for row in rows if row not in simulated)  # GhaziSM: costs only
    assert all(float(row[c]) > 0 for row in rows for c in ("comm_bits", "party_ops", "server_ops", "compute_ops"))
    assert _is_png(directory / f"umpc_{figure}.png")


def test_cost_columns_follow_table1(run: tuple[str, Path]) -> None:
    """Fig. 3 right's total computation is server + n x per-party; U-MPC's costs do not depend on t or epsilon,
    and are dp.umpc.costs.protocol_costs' (Kendall / duplicate, l = 40, |E| = 2n)."""
    from dp.umpc.costs import protocol_costs

    figure, directory = run
    _, rows = _read(directory / f"umpc_{figure}.csv")
    for row in rows:
        n = int(row["n"])
        assert float(row["compute_ops"]) == pytest.approx(float(row["server_ops"]) + n * float(row["party_ops"]))
        table = protocol_costs(n, 2 * n, epsilon=float(row["epsilon"]), t=int(row["t"]), kernel=row["statistic"],
                               counts="paper")
        expected = table[umpc_bins_and_uci.COST_PROTOCOL[row["method"]]]
        assert (float(row["comm_bits"]), float(row["party_ops"]), float(row["server_ops"])) == pytest.approx(
            (expected.comm_bits, expected.party_ops, expected.server_ops))
    if figure == "bins":
        umpc = {(row["comm_bits"], row["compute_ops"]) for row in rows if row["method"] == "U-MPC"}
        assert len(umpc) == 1


def test_umpc_beats_bell_by_more_than_three_standard_errors(run: tuple[str, Path]) -> None:
    """Bell's MSE exceeds U-MPC's by more than 3 s.e. of the difference, where Bell's s.e. is small enough
    for the runs to tell: bins figure at t = 4, epsilon = 1 (20 runs); UCI figure, Kendall at the smallest
    n (100 runs)."""
    figure, directory = run
    _, rows = _read(directory / f"umpc_{figure}.csv")
    if figure == "bins":
        at = [row for row in rows if row["t"] == "4" and float(row["epsilon"]) == 1.0]
    else:
        kendall = [row for row in rows if row["statistic"] == "kendall"]
        smallest = min(int(row["n"]) for row in kendall)
        at = [row for row in kendall if int(row["n"]) == smallest]
    by_method = {row["method"]: row for row in at}
    umpc, bell = by_method["U-MPC"], by_method["Bell LDP"]
    gap = float(bell["mse_mean"]) - float(umpc["mse_mean"])
    se = math.hypot(float(bell["mse_se"]), float(umpc["mse_se"]))
    assert gap > 3 * se, (gap, se)


def test_grid_shape_has_t_cells() -> None:
    assert [umpc_bins_and_uci.grid_shape(t) for t in (4, 8, 16, 32, 64)] == [(2, 2), (2, 4), (4, 4), (4, 8), (8, 8)]
