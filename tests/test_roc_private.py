"""The ROC curve with private labels (Barczewski et al. §5.1, self-normalised): dp.ecdf.roc and scenarios.roc_private.

The secure path equals the simulated one for the same node draws (-M3); with epsilon = 1e9 the node noise
is 0 and the job's curve and AUC are scikit-learn's on the grid-rounded scores; the budget split composes;
the experiment (scenarios.papers.roc_curve) runs both variants in quick mode and writes its CSV and PNGs.
"""
from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from conftest import ROOT, free_base_port, read_record, run_command, scenario_command, write_csv
from dp.ecdf.roc import RocQuery, RocRelease, class_epsilon, private_roc, self_normalise
from dp.ecdf.grid import node_count, tree_depth, uniform_grid
from dp.ecdf.analysis import interval_nodes, suffix_nodes


def _scored_rows(rows: int = 60, seed: int = 11) -> np.ndarray:
    """Scores on multiples of 1/32 (ties, some exactly on grid points) and 0/1 labels."""
    generator = np.random.default_rng(seed)
    labels = (generator.random(rows) < 0.3).astype(float)
    scores = np.clip(np.round((0.35 + 0.25 * labels + 0.2 * generator.standard_normal(rows)) * 32) / 32, 0, 1)
    return np.column_stack([scores, labels])


def _on_grid(scores: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """Each score moved up to the first grid point at or above it (what the grid's counts see)."""
    return grid[np.searchsorted(grid, scores, side="left")]


@pytest.mark.multiparty
@pytest.mark.parametrize("split", ["half", "disjoint"])
def test_three_party_roc_equals_simulated_with_the_same_node_draws(split: str, tmp_path: Path) -> None:
    table = _scored_rows()
    path = write_csv(tmp_path / "scored.csv", ["score", "label"], table)
    program = ROOT / "tests" / "programs" / "fixed_noise_roc.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(path),
                       "100", "0.8", split])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    grid = uniform_grid(0.0, 1.0, 1.0 / 99)
    nodes = np.arange(node_count(len(grid)))
    # party i's draw for class c at node p is (p % 5) - 2 + i - c; the simulated path takes their sum
    total = {label: sum((nodes % 5) - 2 + party - label for party in range(3)) for label in (1, 0)}
    simulated = private_roc(table[:, 0], table[:, 1], grid, epsilon=0.8, split=split, parties=3, threshold=1,
                            positive_noise=total[1], negative_noise=total[0])
    assert record["positive"] == simulated.positive_counts.tolist()
    assert record["negative"] == simulated.negative_counts.tolist()
    assert record["n"] == simulated.n == len(table)
    assert record["class_epsilon"] == pytest.approx(simulated.class_epsilon)
    # the noise is really there: the released totals are not the class sizes
    assert simulated.positive_total != int(table[:, 1].sum())


@pytest.mark.multiparty
def test_job_with_huge_epsilon_is_the_exact_roc_on_the_grid(tmp_path: Path) -> None:
    from scenarios.kit.datasets import framingham_with_scores
    from secure.public_randomness import public_generator

    out, curve_path, plot = tmp_path / "roc.json", tmp_path / "roc.csv", tmp_path / "roc.png"
    run = run_command(scenario_command("roc_private", "-M3", "--no-log", "--epsilon", "1e9", "--points", "128",
                                       "--smooth", "none", "--json", str(out), "--curve", str(curve_path),
                                       "--plot", str(plot)))
    assert run.code == 0, run.stderr
    assert "class sizes not released" in run.stdout
    record = read_record(out)
    table = framingham_with_scores(public_generator(0))
    scores = np.array([float(row[table.header.index("score")]) for row in table.rows])
    labels = np.array([int(float(row[table.header.index("TenYearCHD")])) for row in table.rows])
    grid = uniform_grid(0.0, 1.0, 1.0 / 127)
    rounded = _on_grid(scores, grid)
    assert record["n"] == len(scores)
    assert record["positive_counts"][-1] == int(labels.sum())
    assert record["estimate"] == pytest.approx(roc_auc_score(labels, rounded), abs=1e-12)
    fpr, tpr, _ = roc_curve(labels, rounded, drop_intermediate=False)
    expected = {(round(x, 12), round(y, 12)) for x, y in zip(fpr, tpr)}
    released = {(round(x, 12), round(y, 12)) for x, y in zip(record["false_positive_rate"],
                                                              record["true_positive_rate"])}
    assert released == expected
    with open(curve_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 128 and float(rows[-1]["threshold"]) == 1.0
    assert float(rows[0]["fpr_raw"]) == pytest.approx(float(np.mean(rounded[labels == 0] > 0)))
    assert_png(plot)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    """A non-trivial PNG file: the magic bytes and more than a header."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000


def test_job_plot_with_smoothing_in_one_process(tmp_path: Path) -> None:
    """The raw and the smoothed (p = 2) self-normalised curves in one figure, next to --json of the same run."""
    from scenarios.roc_private import main

    out, plot = tmp_path / "roc.json", tmp_path / "roc.png"
    assert main(["--epsilon", "2", "--points", "64", "--json", str(out), "--plot", str(plot)]) == 0
    assert read_record(out)["smooth"] == 2
    assert_png(plot)


@pytest.mark.multiparty
def test_job_refuses_an_unwritable_plot_path_at_every_party(tmp_path: Path) -> None:
    """-M3: party 0's verdict on --plot (a missing directory) stops all three parties, exit 2, one line,
    before any row is read or shared."""
    path = tmp_path / "missing" / "roc.png"
    run = run_command(scenario_command("roc_private", "-M3", "--no-log", "--plot", str(path)))
    assert run.code == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines == [f"error: party 0: cannot write --plot {path}: no such directory"]
    assert "AUC" not in run.stdout and not path.parent.exists()


@pytest.mark.multiparty
def test_job_stops_every_party_on_a_bad_label(tmp_path: Path) -> None:
    table = _scored_rows(30)
    table[5, 1] = 2.0  # row 5: party 2 of 3
    path = write_csv(tmp_path / "bad.csv", ["score", "label"], table)
    run = run_command(scenario_command("roc_private", "-M3", "--no-log", "--data", str(path), "--columns",
                                       "score,label", "--ledger", "off"))
    assert run.code == 2
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("error: party 2: label column 'label'") and "must hold 0 or 1" in lines[-1]


@pytest.mark.parametrize("argv, message", [
    (["--split", "thirds"], "--split"),
    (["--points", "1"], "--points must lie in [2, 2^20]"),
    (["--domain", "1:0"], "LOW < HIGH"),
    (["--epsilon", "-1"], "epsilon must be positive"),
    (["--plot", "/nonexistent-directory-of-the-test/roc.png"], "cannot write --plot"),
])
def test_job_rejects_bad_options(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.roc_private import main

    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("points", [2, 3, 64, 100, 256, 1000])
def test_disjoint_split_composes_to_epsilon(points: int) -> None:
    """A label change shifts one suffix of each class's counts, a score change one interval of one class."""
    levels = tree_depth(points) + 1
    each = class_epsilon(1.0, points, "disjoint")
    suffix = max(len(suffix_nodes(a, points)) for a in range(1, points + 1))
    interval = max(len(interval_nodes(a, b, points)) for a in range(1, points + 1) for b in range(a, points + 1)) \
        if points <= 256 else levels
    assert suffix <= math.ceil(levels / 2) and interval <= levels
    loss = max(interval, 2 * suffix) * each / levels  # node scale levels / each, sensitivity 1 per node
    assert loss <= 1.0 + 1e-12
    assert each >= 0.5 and class_epsilon(1.0, points, "half") == 0.5
    if levels % 2 == 0:
        assert each == 1.0


def test_self_normalise_divides_by_the_last_noisy_count() -> None:
    rates, total = self_normalise(np.array([3, 5, 10]))
    assert total == 10 and rates.tolist() == [0.3, 0.5, 1.0]
    rates, total = self_normalise(np.array([3, -1, -4]))  # a noise-driven non-positive total counts as 1
    assert total == 1 and rates.tolist() == [3.0, -1.0, -4.0]
    with pytest.raises(ValueError, match="labels must be 0 or 1"):
        private_roc([0.1, 0.2], [0, 3], uniform_grid(0, 1, 0.5), epsilon=1.0)


def _release_with_unruly_noise() -> RocRelease:
    """A release as small epsilon gives one: class 1's noisy counts leave [0, its total 4] (the raw rates
    would run from -0.75 to 3), class 0's noisy total is -1 (its rates mean nothing)."""
    return RocRelease(query=RocQuery(epsilon=0.005, points=4, smooth=None, columns=("score", "TenYearCHD")),
                      grid=uniform_grid(0.0, 1.0, 1.0 / 3), positive_counts=np.array([12, -3, 9, 4]),
                      negative_counts=np.array([-2, 7, 3, -1]), n=20)


def test_raw_rates_are_clipped_and_an_unusable_class_is_named() -> None:
    release = _release_with_unruly_noise()
    positive, negative = release.rates()
    assert positive.tolist() == [1.0, 0.0, 1.0, 1.0] and negative.tolist() == [0.0, 1.0, 1.0, 0.0]
    raw = release.curve(None)
    assert 0.0 <= raw.auc <= 1.0
    assert np.all((raw.true_positive_rate >= 0) & (raw.true_positive_rate <= 1))
    assert release.unusable_classes() == ["negative"]
    smoothed = release.curve(2)
    assert -1e-6 <= smoothed.auc <= 1 + 1e-6
    # a release whose noisy counts lie in [0, total]: clipping changes nothing
    calm = RocRelease(query=RocQuery(epsilon=1.0, points=4), grid=release.grid, positive_counts=np.array([1, 2, 2, 4]),
                      negative_counts=np.array([0, 5, 6, 8]), n=12)
    assert calm.rates()[0].tolist() == self_normalise(calm.positive_counts)[0].tolist()
    assert calm.rates()[1].tolist() == self_normalise(calm.negative_counts)[0].tolist()
    assert calm.unusable_classes() == []


def test_report_names_columns_and_says_when_a_class_total_is_not_positive(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Party 0's report of :func:`_release_with_unruly_noise`: a bounded raw AUC, one line about the class whose
    noisy total is not positive, --curve columns named as cumulative counts, the plot title "ROC of X for Y"."""
    import scenarios.kit.ecdf_options as ecdf_options
    from scenarios.roc_private import _report, parse_options

    titles: list[str] = []
    monkeypatch.setattr(ecdf_options, "save_figure", lambda figure, path: titles.append(figure.axes[0].get_title()))
    curve_path = tmp_path / "roc.csv"
    options = parse_options(["--points", "4", "--smooth", "none", "--curve", str(curve_path),
                             "--plot", str(tmp_path / "roc.png")])
    _report(options, _release_with_unruly_noise())()
    printed = capsys.readouterr().out
    auc = float(printed.split("AUC", 1)[1].split()[0])
    assert 0.0 <= auc <= 1.0
    notes = [line for line in printed.splitlines() if "noisy total" in line and "0 or below" in line]
    assert notes == ["  the noisy total of the negative class is 0 or below: that class's rates (and the curve and "
                     "AUC) mean nothing at this epsilon; raise --epsilon or use more rows"]
    with open(curve_path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["threshold", "positive_cumulative", "negative_cumulative", "tpr_raw", "fpr_raw", "tpr", "fpr"]
    assert [int(row[1]) for row in rows[1:]] == [12, -3, 9, 4]
    assert all(0.0 <= float(value) <= 1.0 for row in rows[1:] for value in row[3:])
    assert titles and titles[0].startswith("Private ROC of score for TenYearCHD\n")


def test_experiment_quick_mode_writes_both_variants(tmp_path: Path) -> None:
    from scenarios.papers import roc_curve

    assert roc_curve.main(["--quick", "--epsilon-grid", "1,1e9", "--seed", "3", "--results-dir", str(tmp_path)]) == 0
    for name in ("roc_curve_l1.png", "roc_curve_example.png", "roc_curve_auc_error.png"):
        data = (tmp_path / name).read_bytes()
        assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"
    with open(tmp_path / "roc_curve_l1.csv", newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = {float(row["epsilon"]): row for row in reader}
        assert list(reader.fieldnames or []) == list(roc_curve.CSV_COLUMNS)
    exact, noisy = rows[1e9], rows[1.0]
    # no noise: the self-normalised curve is the true one (up to the p = 2 solver, as the public variant)
    assert float(exact["l1_self_p2_mean"]) <= 1e-4 and float(exact["auc_err_self_p2_mean"]) <= 1e-4
    assert abs(float(exact["auc_self_p2_mean"]) - float(exact["true_auc"])) <= 1e-4
    assert float(noisy["l1_self_p2_mean"]) > float(exact["l1_self_p2_mean"])
