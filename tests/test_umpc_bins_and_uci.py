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
    assert {row["method"] for row in rows} == set(umpc_bins_and_uci.METHODS)
    assert all(math.isfinite(float(row["mse_mean"])) and int(row["runs"]) > 0 for row in rows)  # GhaziSM included
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


def test_ghazi_shuffled_rows_match_their_exact_mse(run: tuple[str, Path]) -> None:
    """GhaziSM's simulated MSE is its exact MSE given the bins (dp.baselines.ghazi_shuffled.variance plus the squared
    bias of expected_estimate) within 4 standard errors of the runs, at every t and epsilon (bins) or every n and
    statistic (UCI): the rows measure the shuffled protocol on the figure's own quantizer and data."""
    from dp.baselines import ghazi_shuffled

    figure, directory = run
    _, rows = _read(directory / f"umpc_{figure}.csv")
    options = umpc_bins_and_uci.parse_options(["--figure", figure, "--quick", "--seed", "5"])
    settings = {(s.stat.name, s.values.shape[0], s.epsilon): s for s in umpc_bins_and_uci._settings(options, 5)}
    checked = 0
    for row in (r for r in rows if r["method"] == "GhaziSM"):
        setting = settings[(row["statistic"], int(row["n"]), float(row["epsilon"]))]
        stat, values = setting.stat, setting.values
        exact = umpc_bins_and_uci.exact_ustat(stat.shape(values), stat.ldp_kernel())
        assert exact == pytest.approx(float(row["exact"]))
        t = int(row["t"]) if figure == "bins" else umpc_bins_and_uci.UCI_BINS
        quantizer, _, _ = stat.quantizer(t)
        params = ghazi_shuffled.prepare(stat.ldp_kernel(), quantizer, kind="average")
        bins = quantizer.quantize(stat.shape(values))
        variance = ghazi_shuffled.variance(bins, params, epsilon=float(row["epsilon"]))
        bias = ghazi_shuffled.expected_estimate(bins, params) - float(row["exact"])
        assert abs(float(row["mse_mean"]) - (variance + bias ** 2)) <= 4 * float(row["mse_se"]) + 1e-12, row
        checked += 1
    assert checked > 0


def test_shuffling_removes_the_local_noise() -> None:
    """Sinh & Ramon's central/local gap at fixed quantization: at t = 64 on Framingham, GhaziSM's exact noise
    variance is below Ghazi's local noise variance by at least a factor n / 10 (Table 1: ``n^2`` against ``n``
    in the denominator; the factorization constants differ by less than 10)."""
    from dp.baselines import ghazi, ghazi_shuffled
    from dp.bell.quantize import kernel_matrix

    stat = umpc_bins_and_uci._Statistic("kendall", "framingham", ("sysBP", "diaBP"))
    values = umpc_bins_and_uci._complete("framingham", stat.columns)
    quantizer, _, _ = stat.quantizer(64)
    kernel = stat.ldp_kernel()
    bins = quantizer.quantize(values)
    shuffled = ghazi_shuffled.variance(bins, ghazi_shuffled.prepare(kernel, quantizer, kind="average"), epsilon=1.0)
    local = ghazi.variance(bins, ghazi.factorize(kernel_matrix(kernel, quantizer, kind="average")), epsilon=1.0)
    assert local / shuffled >= values.shape[0] / 10, (local, shuffled)


def _visible_legend_entries(axes: object) -> list[tuple[str, str, str, str]]:
    """``(label, colour, marker, marker fill)`` of every legend entry of ``axes``: what tells the entries apart in
    the legend (an errorbar's handle hardly shows its line style)."""
    from matplotlib.colors import to_hex
    from matplotlib.container import ErrorbarContainer

    handles, labels = axes.get_legend_handles_labels()  # type: ignore[attr-defined]
    entries = []
    for handle, label in zip(handles, labels):
        line = handle.lines[0] if isinstance(handle, ErrorbarContainer) else handle
        entries.append((label, to_hex(line.get_color()), str(line.get_marker()), line.get_fillstyle()))
    return entries


def test_legend_entries_differ_beyond_the_line_style(run: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """Review D1: in every panel, no two legend entries share colour, marker and fill (epsilon = 0.1 and 1 of one
    method, U-MPC's M_HF and M_Dis, Kendall and the duplicate ratio), and the handles are long enough to show a
    dashed line."""
    figure_name, directory = run
    _, text_rows = _read(directory / f"umpc_{figure_name}.csv")
    rows = [{k: (v if k in ("figure", "statistic", "grid", "method") else float(v)) for k, v in row.items()}
            for row in text_rows]
    captured: list[object] = []
    monkeypatch.setattr(umpc_bins_and_uci, "save_figure", lambda figure, path: captured.append(figure))
    options = umpc_bins_and_uci.parse_options(["--figure", figure_name, "--quick"])
    plot = umpc_bins_and_uci._plot_bins if figure_name == "bins" else umpc_bins_and_uci._plot_uci
    plot(options, rows, str(directory / "unused.png"))
    (figure,) = captured
    for axes in figure.axes:  # type: ignore[attr-defined]
        entries = _visible_legend_entries(axes)
        looks = [entry[1:] for entry in entries]
        assert len(entries) >= 4 and len(set(looks)) == len(looks), entries
        assert axes.get_legend().handlelength >= 3
    epsilons = {row["epsilon"] for row in rows}
    assert figure_name == "uci" or len(epsilons) == 2


def test_grid_refuses_a_t_that_is_not_a_power_of_two(capsys: pytest.CaptureFixture[str]) -> None:
    """Review D2: ``--grid 5,9`` would run 2x3 and 2x5 grids (t = 6 and 10): refused, exit 2, one error line."""
    assert umpc_bins_and_uci.main(["--grid", "4,5,9", "--quick", "--seed", "5"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: party 0: --grid") and "powers of two" in lines[0]
    assert lines[0].endswith("got 5")
    assert umpc_bins_and_uci.parse_options(["--grid", "4,8,16,32,64,128"]).grid == (4, 8, 16, 32, 64, 128)


def test_summary_lines_say_which_side_of_umpc() -> None:
    """Review D2: a baseline whose MSE is below U-MPC's in some settings gets a signed log10 ratio and the count of
    those settings, not "-0.73 orders of magnitude below"."""
    rows = ([{"method": "GhaziSM", "orders_of_magnitude": value} for value in (-0.73, 2.75, 1.0)]
            + [{"method": "Bell LDP", "orders_of_magnitude": value} for value in (3.26, 7.25)]
            + [{"method": "U-MPC", "orders_of_magnitude": math.nan}])
    lines = umpc_bins_and_uci.orders_lines(rows)
    assert lines == ["Bell LDP: log10(MSE / U-MPC's MSE) from 3.26 to 7.25 (median 5.25); above U-MPC's in all 2 "
                     "settings",
                     "GhaziSM: log10(MSE / U-MPC's MSE) from -0.73 to 2.75 (median 1.00); below U-MPC's (negative) "
                     "in 1 of 3 settings"]
    assert not any("orders of magnitude below" in line for line in lines)
