"""Every released number carries its uncertainty: the Hosmer-Lemeshow noise band and warnings, the ROC AUC's
bootstrap interval (its coverage measured), the ECDF quantiles' intervals, and no quantile from a few points."""
from __future__ import annotations

import csv
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from conftest import read_record
from dp.ecdf.roc import auc_interval, plan_roc_noise, private_roc
from dp.ecdf.grid import grid_of_points, true_counts
from dp.ecdf.analysis import QUANTILE_Z, quantile_interval
from dp.ecdf.tree import noisy_counts, plan_tree_noise


def _hl_rows(path: Path, rows: int = 900, seed: int = 5) -> Path:
    """900 rows ``p,y``: scores on [0.05, 0.95], labels Bernoulli(score) (a calibrated model)."""
    generator = np.random.default_rng(seed)
    scores = generator.integers(51, 974, rows) / 1024
    labels = (generator.random(rows) < scores).astype(int)
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["p", "y"])
        writer.writerows([repr(float(s)), int(y)] for s, y in zip(scores, labels))
    return path


def test_hosmer_lemeshow_prints_a_band_and_a_warning_at_epsilon_1_and_none_at_1e9(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In one process (no flag): at epsilon 1 on 900 rows the noise std of a count (about 27) exceeds the
    smaller expected counts, so the band is wide and a warning line is printed; at 1e9 the noise is 0: the band
    is the single released value and no warning."""
    from scenarios.hosmer_lemeshow import main

    data = _hl_rows(tmp_path / "rows.csv")
    out = tmp_path / "hl.json"
    assert main(["--data", str(data), "--columns", "p,y", "--epsilon", "1", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "noise band 95%" in printed and "  band: central 95% of H and p recomputed" in printed
    assert any(line.startswith("  warning: ") for line in printed.splitlines())
    record = read_record(out)
    low, high = record["interval"]["statistic"]
    assert low < high and record["interval"]["draws"] == 2000
    assert record["warning"] and "noise" in record["warning"]

    assert main(["--data", str(data), "--columns", "p,y", "--epsilon", "1e9", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "noise band 95%" in printed
    assert not any(line.startswith("  warning: ") for line in printed.splitlines())
    record = read_record(out)
    assert record["interval"]["statistic"] == [record["estimate"], record["estimate"]]
    assert record["interval"]["p_value"] == [record["p_value"], record["p_value"]]
    assert record["interval"]["noise_part"] == pytest.approx(0.0, abs=1e-12)
    assert record["warning"] is None


def test_hosmer_lemeshow_band_is_reproducible_and_does_not_touch_the_release() -> None:
    """The band is post-processing with a public seed: the same release gives the same band."""
    from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, private_hosmer_lemeshow
    from dp.ecdf.hosmer_lemeshow_release import noise_band

    generator = np.random.default_rng(3)
    scores = generator.random(900)
    labels = (generator.random(900) < scores).astype(int)
    query = HosmerLemeshowQuery(epsilon=5.0)
    release = private_hosmer_lemeshow(scores, labels, query, rng=np.random.default_rng(4))
    first, second = noise_band(release), noise_band(release)
    assert first == second
    assert first.statistic[0] <= first.statistic[1]
    with pytest.raises(ValueError, match="draws must be at least 100, got 10"):
        noise_band(release, draws=10)


def _roc_rows(rows: int = 600, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    generator = np.random.default_rng(seed)
    labels = (generator.random(rows) < 0.3).astype(float)
    scores = np.clip(generator.normal(0.4 + 0.25 * labels, 0.2), 0.0, 1.0)
    return scores, labels


def test_auc_interval_covers_the_noiseless_auc_at_its_rate() -> None:
    """Simulated path, 600 rows (about 180 positives), 32 grid points, epsilon 4, raw curve, 500 bootstrap draws.

    Over K = 200 releases (noise seeds 10000..10199) the number X of intervals holding the noiseless grid AUC is
    Binomial(200, c); at the stated c = 0.95 it has mean 190 and std sqrt(200 * 0.95 * 0.05) = 3.08, so 3 std
    either side accepts 181 <= X <= 199 (a false alarm below 0.3 %).  An interval too narrow by a third (level
    0.8 instead of 0.95: c about 0.80) or the reflected "basic" interval (measured 85 % at higher noise) fails
    the lower end; an interval covering always (too wide) fails the upper one.
    """
    scores, labels = _roc_rows()
    grid = grid_of_points(0.0, 1.0, 32)
    plan = plan_roc_noise(epsilon=4.0, points=32)
    zero = np.zeros(plan.node_count, dtype=np.int64)
    truth = private_roc(scores, labels, grid, epsilon=4.0, positive_noise=zero, negative_noise=zero).curve(None).auc
    covered = 0
    for k in range(200):
        release = private_roc(scores, labels, grid, epsilon=4.0, rng=np.random.default_rng(10_000 + k))
        interval = auc_interval(release, smooth=None, draws=500)
        assert interval.low <= interval.estimate <= interval.high or interval.high - interval.low > 0.2
        covered += interval.low <= truth <= interval.high
    assert 181 <= covered <= 199


def test_auc_interval_is_degenerate_without_noise_and_warns_under_heavy_noise() -> None:
    scores, labels = _roc_rows()
    grid = grid_of_points(0.0, 1.0, 32)
    calm = private_roc(scores, labels, grid, epsilon=1e9, rng=np.random.default_rng(1))
    interval = auc_interval(calm, smooth=None)
    assert interval.low == interval.high == interval.estimate and interval.noise_std == 0.0
    assert interval.warnings == ()
    noisy = private_roc(scores, labels, grid, epsilon=0.2, rng=np.random.default_rng(1))
    interval = auc_interval(noisy, smooth=None)
    assert interval.high - interval.low > 0.2 and any("noise dominates" in w for w in interval.warnings)


def test_roc_job_prints_the_interval_to_sensible_digits(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from dp.ecdf.roc import auc_digits
    from scenarios.roc_private import main

    out = tmp_path / "roc.json"
    assert main(["--epsilon", "1", "--smooth", "none", "--json", str(out)]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("AUC"))
    estimate = line.split()[1]
    assert len(estimate.split(".")[1]) == 3  # noise std about 0.1: three decimals, not six
    assert "95% interval" in line and "noise std" in line
    record = read_record(out)
    assert record["interval"]["low"] <= record["interval"]["high"] and record["interval"]["draws"] == 2000
    assert auc_digits(0.054) == 3 and auc_digits(0.0004) == 5 and auc_digits(0.0) == 6


def test_quantile_intervals_cover_the_noiseless_quantiles() -> None:
    """Tree noise at epsilon 1 on 2000 rows, 256 grid points (point std about 0.04 in ECDF units): over 200
    releases each level's interval holds the noiseless grid quantile ``min{tau : F(tau) >= q}`` in X of 200.

    The docstring of :func:`quantile_interval` claims at least about 95 % (two one-sided failures of about 2.5 %
    each, normal approximation); X ~ Binomial(200, c >= 0.95) has std <= 3.08, so X >= 190 - 3 * 3.08 = 181
    accepts (false alarm below 0.3 % per level).  With margin 0 (no interval) X drops far below.
    """
    generator = np.random.default_rng(2)
    values = generator.gamma(4.0, 50.0, 2000)
    grid = grid_of_points(0.0, 800.0, 256)
    counts = true_counts(values, grid)
    exact = counts / values.size
    plan = plan_tree_noise(epsilon=1.0, points=256)
    margin = QUANTILE_Z * math.sqrt(plan.point_variance) / values.size
    levels = (0.1, 0.5, 0.9)
    targets = {q: grid[np.flatnonzero(exact >= q)[0]] for q in levels}
    hits = {q: 0 for q in levels}
    bare = 0
    noise_source = np.random.default_rng(8)
    for _ in range(200):
        released = noisy_counts(counts, plan.draw_total(noise_source)) / values.size
        for q in levels:
            low, high = quantile_interval(grid, released, q, margin)
            hits[q] += low <= targets[q] <= high
        low, high = quantile_interval(grid, released, 0.5, 0.0)
        bare += low <= targets[0.5] <= high
    assert all(count >= 181 for count in hits.values()), hits
    assert bare < 181
    assert quantile_interval(grid, exact, 0.5, 0.0) == (targets[0.5], targets[0.5])


def _release_on(grid: np.ndarray, subset: np.ndarray, values: np.ndarray, std: float) -> SimpleNamespace:
    return SimpleNamespace(grid=grid, subset=subset, values=values, point_std=std)


def test_no_quantile_from_three_queried_points(capsys: pytest.CaptureFixture[str]) -> None:
    """``ecdf_fss --queries 10,200,512``: three of 1024 grid points answered, so no quantile, one line why."""
    from dp.ecdf.grid import prefix_incidence
    from dp.ecdf.analysis import smooth_release

    grid = grid_of_points(107.0, 696.0, 1024)
    subset = np.array([10, 200, 512])
    release = _release_on(grid, subset, np.array([-0.02, 0.34, 0.98]), 0.02)
    result = smooth_release(release, prefix_incidence(1024), smooth=2, quantiles=[0.5], lower=107.0, upper=696.0)
    assert result.quantiles == {} and result.intervals == {}
    assert result.note is not None and result.note.startswith("quantiles not computed: only 3 of 1024 grid points")
    printed = "\n".join(result.lines())
    assert "private quantiles" not in printed and printed.count("\n") == 0
    assert result.record()["quantiles"] == {} and result.record()["quantiles_note"] == result.note


def test_ecdf_job_records_quantile_intervals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One process: at epsilon 1e9 each interval is the quantile itself and there is no warning; at 0.02 the
    noise margin (1.96 std, about 0.9) exceeds 0.1 and the warning says so."""
    from scenarios.ecdf import main

    out = tmp_path / "ecdf.json"
    assert main(["--epsilon", "1e9", "--points", "256", "--json", str(out)]) == 0
    record = read_record(out)
    for level, value in record["quantiles"].items():
        assert record["interval"]["quantiles"][level] == [value, value]
    assert record["warning"] is None and record["quantiles_note"] is None
    assert "private quantiles (95 % interval)" in capsys.readouterr().out
    assert main(["--epsilon", "0.02", "--points", "256", "--json", str(out)]) == 0
    record = read_record(out)
    assert record["warning"] and "noise dominates" in record["warning"]
    assert any(line.startswith("  warning: ") for line in capsys.readouterr().out.splitlines())
