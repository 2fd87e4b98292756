"""Sun et al. (FedAUC): the figures scenario (Fig. 1a-c, 4, 5, 6, 8, Tables 4-6, Gaussian rows) and the
"Orthogonal" baseline (one shared beta), closed forms against Monte Carlo.

Statistical thresholds come from the sampling distribution of the sample standard deviation (99.9 %
two-sided, z = 3.29, kurtosis estimated from the runs), with fixed seeds.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from dp.fedauc.montecarlo import predict_fedauc, simulate_fedauc
from dp.fedauc.ranks import average_ranks, client_layout, local_statistics
from scenarios.papers import fedauc_figures
from scenarios.papers.fedauc_figures import FILES, QUICK_EPSILONS, QUICK_FRACTIONS, load_scores
from tests.statistics_checks import Z999



def synthetic(samples: int, base_rate: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores separating the classes moderately (AUC about 0.7), rounded to 1/8 for ties."""
    generator = np.random.default_rng(seed)
    labels = (generator.random(samples) < base_rate).astype(np.int64)
    labels[0], labels[1] = 1, 0
    return np.round(generator.normal(0.8 * labels, 1.0) * 8) / 8, labels


def assert_std_matches(result_std: float, closed_form: float, estimates: np.ndarray, tolerance: float = 0.10) -> None:
    """``|std / closed - 1| <= tolerance``, after checking that the runs make the check informative.

    The sample std has relative standard error ``sqrt((kurtosis - 1)/(4 R))``; its 99.9 % interval must
    lie within half the tolerance (the other half covers the closed form's first-order error).
    """
    kurtosis = stats.kurtosis(estimates, fisher=False)
    half_width = Z999 * math.sqrt((kurtosis - 1.0) / (4.0 * estimates.size))
    assert half_width <= tolerance / 2, f"too few runs ({estimates.size}): CI +-{half_width:.1%}"
    assert abs(result_std / closed_form - 1.0) <= tolerance, (result_std, closed_form)


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


# --------------------------------------------------------------------------------------------------
# the scenario, quick mode

def test_quick_mode_writes_a_csv_and_a_png_per_figure_with_the_expected_rows(tmp_path: Path) -> None:
    assert fedauc_figures.main(["--quick", "--seed", "3", "--results-dir", str(tmp_path)]) == 0
    tables = {}
    for names in FILES.values():
        for name in names:
            assert (tmp_path / f"{name}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            tables[name] = _read(tmp_path / f"{name}.csv")
    sweep = {(float(e), a) for e in QUICK_EPSILONS for a in QUICK_FRACTIONS}
    for name, layout in (("fedauc_fig1b_alpha_iid", "iid"), ("fedauc_fig4_alpha_non_iid", "non_iid")):
        rows = tables[name]
        assert {row["layout"] for row in rows} == {layout} and {row["method"] for row in rows} == {"local_laplace"}
        assert {(float(row["epsilon"]), float(row["fraction"])) for row in rows} == sweep and len(rows) == len(sweep)
        assert all(float(row["std"]) > 0 and float(row["predicted_std"]) > 0 for row in rows)
    fig5 = tables["fedauc_fig5_alpha_eps4"]
    assert {float(row["epsilon"]) for row in fig5} == {4.0} and len(fig5) == 2 * len(QUICK_FRACTIONS)
    assert {row["layout"] for row in fig5} == {"iid", "non_iid"}
    for name, layout in (("fedauc_fig1c_allocation_non_iid", "non_iid"), ("fedauc_fig6_allocation_iid", "iid")):
        rows = tables[name]
        assert {row["layout"] for row in rows} == {layout} and {float(row["epsilon"]) for row in rows} == {1.0}
        by = {kind: [row for row in rows if row["allocation"] == kind] for kind in ("naive", "orthogonal", "adaptive")}
        assert sorted(float(row["fraction"]) for row in by["naive"]) == list(QUICK_FRACTIONS)
        assert sorted(float(row["fraction"]) for row in by["orthogonal"]) == list(QUICK_FRACTIONS)
        assert {row["method"] for row in by["orthogonal"]} == {"orthogonal_laplace"}
        assert len(by["adaptive"]) == 1 and len(rows) == 2 * len(QUICK_FRACTIONS) + 1
    beta = tables["fedauc_fig8_beta"]
    for layout in ("iid", "non_iid"):
        chosen = [row for row in beta if row["layout"] == layout]
        assert len(chosen) == 100 and sum(int(row["size"]) for row in chosen) == int(tables["fedauc_tables4_6"][0]["samples"])
        assert all(0.0 < float(row["beta_laplace"]) <= 1.0 for row in chosen)
    rr = tables["fedauc_tables4_6"]
    small = [row for row in rr if row["set"] == "small"]
    large = [row for row in rr if row["set"] == "large"]
    assert len(small) == len(large) == len(fedauc_figures.QUICK_RR_EPSILONS) and {row["table"] for row in small} == {"5"}
    assert int(large[0]["samples"]) == 10 * int(small[0]["samples"])
    for row in rr:  # both sets have the same AUC; with no privacy every run returns it
        assert float(row["exact_auc"]) == pytest.approx(float(small[0]["exact_auc"]), abs=1e-12)
        assert float(row["sklearn_auc"]) == pytest.approx(float(row["exact_auc"]), abs=1e-12)
        if row["epsilon"] == "inf":
            assert float(row["mean"]) == float(row["exact_auc"]) and float(row["std"]) == 0.0
    gaussian = tables["fedauc_gaussian_rows"]
    methods = {row["method"] for row in gaussian}
    assert {"global_gaussian", "local_gaussian", "adaptive_gaussian"} <= methods
    assert {"global_laplace", "local_laplace", "adaptive_laplace"} <= methods
    assert {row["counts"] for row in gaussian} == {"noisy", "exact"}
    assert all(float(row["delta"]) == 1e-5 for row in gaussian if row["method"].endswith("_gaussian"))


def test_rr_report_prints_no_rounding_spread_and_the_actual_run_count(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Review D4: epsilon = inf (every run exact) prints "± 0", not "± 1.14e-16"; the caveat of an epsilon with
    fewer than one flip per run names the runs actually made, not 100."""
    assert fedauc_figures.main(["--quick", "--figures", "rr_sizes", "--seed", "3", "--results-dir",
                                str(tmp_path)]) == 0
    out = capsys.readouterr().out
    infinite = [line for line in out.splitlines() if line.split()[1:2] == ["inf"]]
    assert len(infinite) == 2 and all(" ± 0 " in line for line in infinite), infinite
    assert "e-16" not in out and "e-17" not in out and "100 runs" not in out
    assert fedauc_figures.format_spread(0.0) == "0"
    assert fedauc_figures.format_spread(4.23e-2) == "4.23e-02"
    assert fedauc_figures.format_spread(1e-16) == "1.00e-16"  # a real spread is printed, however small
    from dp.fedauc.mechanisms import flip_probability

    small = [{"samples": 2559, "flip_probability": flip_probability(epsilon), "epsilon": epsilon, "runs": 20}
             for epsilon in (1.0, 10.0, math.inf)]
    caveats = fedauc_figures._rr_caveats(small)
    assert len(caveats) == 2 and caveats[1].startswith("epsilon = 10: M rho = 0.12 < 1") and "of 20 runs" in caveats[1]


def test_gaussian_png_draws_every_csv_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review D4: every row of fedauc_gaussian_rows.csv, the exact-count (Table 2) rows included, is a point of the
    PNG, on a line whose label names its method, layout, noise and counts; exact and noisy counts look different."""
    from matplotlib.colors import to_hex

    captured: list[object] = []
    monkeypatch.setattr(fedauc_figures, "save_figure", lambda figure, path: captured.append(figure))
    assert fedauc_figures.main(["--quick", "--figures", "gaussian", "--seed", "3", "--results-dir",
                                str(tmp_path)]) == 0
    (figure,) = captured
    rows = _read(tmp_path / "fedauc_gaussian_rows.csv")
    assert {row["counts"] for row in rows} == {"noisy", "exact"}
    lines = [line for axis in figure.axes for line in axis.get_lines()]  # type: ignore[attr-defined]
    for row in rows:
        family, noise = row["method"].split("_")
        layouts = ("iid", "non-iid") if row["layout"] == "one_per_client" else (row["layout"].replace("_", "-"),)
        matches = [line for line in lines
                   if any(line.get_label() == f"{family} {layout} {noise}, {row['counts']}" for layout in layouts)
                   and any(x == int(row["clients"]) and y == float(row["std"])
                           for x, y in zip(line.get_xdata(), line.get_ydata()))]
        assert matches, row
    looks = [(to_hex(line.get_color()), line.get_marker(), line.get_fillstyle()) for line in lines]
    assert len(set(looks)) == len(looks)


@pytest.mark.parametrize(("argv", "message"), [
    (["--figures", "alpha,bogus"], "--figures must list some of"),
    (["--fraction-grid", "0.5,1.5"], "--fraction-grid values must lie in (0, 1), got 1.5"),
    (["--clients", "1"], "--clients must be at least 2, got 1"),
    (["--delta", "2"], "--delta must lie in (0, 1), got 2"),
])
def test_bad_usage_is_one_line_and_exit_2(argv: list[str], message: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert fedauc_figures.main([*argv, "--results-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


# --------------------------------------------------------------------------------------------------
# closed forms against Monte Carlo

@pytest.mark.parametrize("layout", ["iid", "non_iid"])
def test_orthogonal_shared_beta_matches_its_closed_form(layout: str) -> None:
    scores, labels = synthetic(3000, 0.3, seed=41)
    for beta in (0.2, 0.7):
        result = simulate_fedauc(scores, labels, method="orthogonal_laplace", epsilon=1.0, clients=5, layout=layout,
                                 sum_fraction=1.0 - beta, runs=6000, rng=np.random.default_rng(0),
                                 noise_rng=np.random.default_rng(42))
        assert result.undefined_runs == 0
        assert abs(result.mean - result.exact_auc) <= Z999 * result.std / math.sqrt(result.runs) + 1e-3
        assert_std_matches(result.std, result.predicted_std, result.estimates)


def test_orthogonal_with_the_clients_common_adaptive_beta_is_the_adaptive_release() -> None:
    """Every client holding the same ranks (ties) gets the same adaptive beta; Orthogonal sharing that beta
    is then the adaptive release itself: same closed form, same estimates from the same noise stream."""
    from dp.fedauc.mechanisms import adaptive_count_fraction

    scores = np.repeat(np.arange(50, dtype=np.float64), 4)          # every score 4 times
    layout = np.tile(np.arange(4), 50)                               # one of each tie group per client
    labels = (np.random.default_rng(46).random(200) < 0.3).astype(np.int64)
    stats_ = local_statistics(average_ranks(scores), labels, layout)
    betas = adaptive_count_fraction(stats_.mean_rank, stats_.spread)
    assert np.ptp(betas) == 0.0
    shared = float(betas[0])
    adaptive = simulate_fedauc(scores, labels, method="adaptive_laplace", epsilon=1.0, layout=layout, runs=200,
                               rng=np.random.default_rng(0), noise_rng=np.random.default_rng(47))
    orthogonal = simulate_fedauc(scores, labels, method="orthogonal_laplace", epsilon=1.0, layout=layout, runs=200,
                                 sum_fraction=1.0 - shared, rng=np.random.default_rng(0),
                                 noise_rng=np.random.default_rng(47))
    assert orthogonal.predicted_std == pytest.approx(adaptive.predicted_std, rel=1e-9)
    np.testing.assert_allclose(orthogonal.estimates, adaptive.estimates, rtol=0, atol=1e-12, equal_nan=True)


def test_alpha_sweep_closed_form_matches_monte_carlo_and_its_optimum_is_the_analytic_one() -> None:
    """Fig. 1b on the scenario's data: LocalLaplace against alpha, IID, K = 5 (about 512 rows each).

    To first order the AUC error is ``sum_k (e_k - c d_k) / (P N)`` with ``Var e_k ~ 2 (2 Delta_k / (alpha eps))^2 / 4``
    and ``Var d_k ~ 2 / ((1 - alpha) eps)^2``, so the best alpha is ``A^(1/3) / (A^(1/3) + B^(1/3))`` with
    ``A = sum_k Delta_k^2``, ``B = K c^2``; the closed form's argmin over a fine grid must sit there.
    """
    scores, labels = load_scores(3)
    grid = np.linspace(0.05, 0.95, 181)
    predicted = [predict_fedauc(scores, labels, method="local_laplace", epsilon=4.0, clients=5, layout="iid",
                                sum_fraction=float(a), rng=fedauc_figures._layout_rng(3)).predicted_std for a in grid]
    client_of = client_layout(scores, clients=5, layout="iid", rng=fedauc_figures._layout_rng(3))
    ranks = average_ranks(scores)
    stats_ = local_statistics(ranks, labels, client_of)
    p, n = int(labels.sum()), int(labels.size - labels.sum())
    auc = float(predict_fedauc(scores, labels, method="rr", epsilon=1.0, rng=np.random.default_rng(0)).exact_auc)
    c = p - 0.5 + auc * (n - p)
    a_term, b_term = float(np.sum(stats_.max_rank**2)), 5 * c * c
    optimum = a_term ** (1 / 3) / (a_term ** (1 / 3) + b_term ** (1 / 3))
    assert abs(grid[int(np.argmin(predicted))] - optimum) <= 0.01
    assert 0.5 <= optimum <= 0.6  # the paper's finding (alpha in [0.5, 0.6]) holds on this data
    for alpha in (0.2, 0.8):
        result = simulate_fedauc(scores, labels, method="local_laplace", epsilon=4.0, clients=5, layout="iid",
                                 sum_fraction=alpha, runs=4000, rng=fedauc_figures._layout_rng(3),
                                 noise_rng=np.random.default_rng(43))
        assert_std_matches(result.std, result.predicted_std, result.estimates)


def test_rr_on_the_repeated_large_set_matches_its_closed_form() -> None:
    """Tables 5-6: the large set (every row 10 times) has the same AUC and its RR std follows the delta method."""
    scores, labels = synthetic(600, 0.3, seed=44)
    big_scores, big_labels = np.tile(scores, 10), np.tile(labels, 10)
    small = predict_fedauc(scores, labels, method="rr", epsilon=1.0, rng=np.random.default_rng(0))
    result = simulate_fedauc(big_scores, big_labels, method="rr", epsilon=1.0, runs=3000,
                             rng=np.random.default_rng(0), noise_rng=np.random.default_rng(45))
    assert result.exact_auc == pytest.approx(small.exact_auc, abs=1e-12)
    assert result.undefined_runs == 0
    assert_std_matches(result.std, result.predicted_std, result.estimates)
    # to first order Var ~ sum_i (r_i - c)^2 / (P N)^2 scales as 1/M: about 1/sqrt(10) of the small set's std
    assert result.predicted_std / small.predicted_std == pytest.approx(1 / math.sqrt(10), rel=0.02)


@pytest.mark.parametrize("figure_name", ["rr_sizes", "gaussian"])
def test_quick_figures_draw_lines_not_single_points(figure_name: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A quick run's figure is still a figure: every Monte Carlo series spans at least two x values."""
    captured: list[object] = []
    monkeypatch.setattr(fedauc_figures, "save_figure", lambda figure, path: captured.append(figure))
    assert fedauc_figures.main(["--quick", "--figures", figure_name, "--seed", "3", "--results-dir",
                                str(tmp_path)]) == 0
    (figure,) = captured
    series = [line for axis in figure.axes for line in axis.get_lines()  # type: ignore[attr-defined]
              if line.get_marker() not in (None, "None", "", " ") and not line.get_label().startswith("_")]
    assert series
    assert all(len(set(line.get_xdata())) >= 2 for line in series), [line.get_label() for line in series]
