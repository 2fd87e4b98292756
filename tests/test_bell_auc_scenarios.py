"""The Bell et al. AUC scenarios (Fig. 3; Fig. 5-6) run in --quick mode and write sound CSV and PNG files.

Run: ``pytest tests/test_bell_auc_scenarios.py`` (a few seconds, single process).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from scenarios.papers import bell_auc_domain, bell_auc_synthetic


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def test_domain_quick_run_writes_csv_png_and_targets_the_exact_auc(tmp_path: Path) -> None:
    from sklearn.metrics import roc_auc_score

    assert bell_auc_domain.main(["--quick", "--seed", "3", "--results-dir", str(tmp_path)]) == 0
    header, rows = _read(tmp_path / "bell_auc_domain.csv")
    assert header == list(bell_auc_domain.CSV_COLUMNS)
    assert len(rows) == len(bell_auc_domain.QUICK_ALPHAS) * len(bell_auc_domain.QUICK_EPSILONS)
    assert (tmp_path / "bell_auc_domain.png").stat().st_size > 0
    # Certain: the target is the exact AUC of the unquantized scores of the seeded data split, and
    # the quantized AUC is the exact AUC of fp(s, d).
    scores, labels = bell_auc_domain.load_scores(3)
    exact = roc_auc_score(labels, scores)
    for row in rows:
        assert float(row["exact_auc"]) == pytest.approx(exact, abs=1e-12)
        assert int(row["positives"]) == int(labels.sum()) and int(row["negatives"]) == int((labels == 0).sum())
        size = int(row["domain_size"])
        assert size == 2 ** int(row["alpha"])
        assert float(row["quantized_auc"]) == pytest.approx(
            roc_auc_score(labels, bell_auc_domain.quantize_scores(scores, size)), abs=1e-12)
        # Certain (Jensen): the mean squared error over the runs is at least the squared mean error.
        bias = float(row["estimate_mean"]) - exact
        assert float(row["squared_error_mean"]) >= bias**2 * (1 - 1e-9)
        assert float(row["absolute_error_mean"]) ** 2 <= float(row["squared_error_mean"]) * (1 + 1e-9)


def test_synthetic_quick_run_writes_csv_png_and_auc_one_targets(tmp_path: Path) -> None:
    assert bell_auc_synthetic.main(["--quick", "--seed", "5", "--results-dir", str(tmp_path)]) == 0
    header, rows = _read(tmp_path / "bell_auc_synthetic.csv")
    assert header == list(bell_auc_synthetic.CSV_COLUMNS)
    settings = (len(bell_auc_synthetic.DATASETS) * len(bell_auc_synthetic.QUICK_ALPHAS)
                * len(bell_auc_synthetic.QUICK_EPSILONS))
    assert len(rows) == 2 * settings  # every quick alpha is within the generic protocol's cap
    assert {row["protocol"] for row in rows} == set(bell_auc_synthetic.PROTOCOLS)
    assert (tmp_path / "bell_auc_synthetic.png").stat().st_size > 0
    for row in rows:
        assert int(row["per_class"]) == bell_auc_synthetic.QUICK_PER_CLASS
        assert int(row["bins"]) == int(row["domain_size"]) * (2 if row["protocol"] == "generic" else 1)
        if row["dataset"] == "auc_one":  # certain: positives all above negatives at every d >= 2
            assert float(row["exact_auc"]) == 1.0 and float(row["quantized_auc"]) == 1.0
        # clipping to [0, 1] is post-processing that can only move an estimate closer to a truth in [0, 1]
        assert float(row["squared_error_clipped_mean"]) <= float(row["squared_error_mean"]) * (1 + 1e-9)


def test_generic_estimates_are_unbiased_within_their_standard_errors() -> None:
    """The generic AUC numerator and denominator are unbiased; at a small domain and large epsilon the
    ratio's bias is negligible, so the mean of the runs lies within 5 standard errors of the quantized AUC
    (a confidence bound from the runs' own standard error; fixed seed)."""
    generator = np.random.default_rng(11)
    positives, negatives = generator.random(3000) ** 0.5, generator.random(3000)
    size = 4
    estimates = bell_auc_synthetic._generic_estimates(positives, negatives, size, 2.0, 200,
                                                      np.random.default_rng(12))
    target = bell_auc_synthetic._exact_auc(bell_auc_synthetic._quantize(positives, size),
                                           bell_auc_synthetic._quantize(negatives, size))
    error = float(np.std(estimates, ddof=1) / math.sqrt(estimates.size))
    assert abs(float(np.mean(estimates)) - target) <= 5 * error


def test_bad_options_exit_with_code_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bell_auc_synthetic.main(["--datasets", "ithdigit", "--results-dir", str(tmp_path)]) == 2
    assert "ithdigit" in capsys.readouterr().err
    assert bell_auc_domain.main(["--alphas", "0", "--results-dir", str(tmp_path)]) == 2


def _captured_figure(module: object, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> object:
    """Run ``module.main(argv)`` and return the figure it would save (drawn, so text extents are final)."""
    captured: list[object] = []
    monkeypatch.setattr(module, "save_figure", lambda figure, path: captured.append(figure))
    assert module.main(argv) == 0  # type: ignore[attr-defined]
    (figure,) = captured
    figure.canvas.draw()  # type: ignore[attr-defined]
    return figure


def _legend_looks(axes: object) -> list[tuple[str, str, str]]:
    """``(colour, marker, fill)`` of every legend entry: what tells errorbar entries apart (their legend handle
    hardly shows the line style)."""
    from matplotlib.colors import to_hex
    from matplotlib.container import ErrorbarContainer

    handles, _ = axes.get_legend_handles_labels()  # type: ignore[attr-defined]
    lines = [handle.lines[0] if isinstance(handle, ErrorbarContainer) else handle for handle in handles]
    return [(to_hex(line.get_color()), str(line.get_marker()), line.get_fillstyle()) for line in lines]


@pytest.mark.parametrize("dataset", ["synthetic", "framingham"])
def test_domain_title_fits_in_the_figure(dataset: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review D3: the title of bell_auc_domain's PNG ("... the paper's class sizes") is not cut off at either side,
    and the users / budget splits look different in the legend."""
    figure = _captured_figure(bell_auc_domain, ["--quick", "--seed", "3", "--dataset", dataset, "--split", "both",
                                                "--results-dir", str(tmp_path)], monkeypatch)
    (axes,) = figure.axes  # type: ignore[attr-defined]
    box = figure.bbox  # type: ignore[attr-defined]
    title = axes.title.get_window_extent()
    assert box.x0 <= title.x0 and title.x1 <= box.x1 and title.y1 <= box.y1, (title, box)
    looks = _legend_looks(axes)
    assert len(looks) == 2 * len(bell_auc_domain.QUICK_EPSILONS) and len(set(looks)) == len(looks), looks


def test_synthetic_legend_tells_the_protocols_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Review D1: at one epsilon (one colour), the AUC-specific and the generic protocol's legend entries differ in
    marker and fill, not only in a line style the errorbar handle does not show."""
    figure = _captured_figure(bell_auc_synthetic, ["--quick", "--seed", "5", "--results-dir", str(tmp_path)],
                              monkeypatch)
    for axes in figure.axes:  # type: ignore[attr-defined]
        looks = _legend_looks(axes)
        assert len(looks) == 2 * len(bell_auc_synthetic.QUICK_EPSILONS) and len(set(looks)) == len(looks), looks
        assert axes.get_legend().handlelength >= 3
