"""The private Hosmer-Lemeshow job across parties (Barczewski et al. Alg. 2): the secure path equals the
simulated one for the same draws, and the exact statistic at epsilon = 1e9 (no flag, -M1, -M3)."""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, free_base_port, read_record, run_command, scenario_command
from dp.budget.spending import spend_request
from dp.ecdf.hosmer_lemeshow import HosmerLemeshowQuery, private_hosmer_lemeshow
from dp.ecdf.hosmer_lemeshow_statistic import exact_hosmer_lemeshow, hosmer_lemeshow_terms, hosmer_lemeshow_test
from dp.ecdf.hosmer_lemeshow import party_group_noise
from dp.ecdf.grid import node_count
from scenarios.hosmer_lemeshow import main, parse_options

GROUPS = 10
POINTS = 1024


def grid_scores(rows: int = 300, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    """Scores on the grid i/1024 (so the private quantiles can equal the exact ones) and Bernoulli labels."""
    generator = np.random.default_rng(seed)
    scores = generator.integers(51, 974, rows) / POINTS
    labels = (generator.random(rows) < scores).astype(np.int64)
    return scores, labels


def write_rows(path: Path, scores: np.ndarray, labels: np.ndarray) -> Path:
    """CSV ``p,y`` with the scores written exactly (repr)."""
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["p", "y"])
        for score, label in zip(scores, labels):
            writer.writerow([repr(float(score)), int(label)])
    return path


@pytest.fixture(scope="module")
def grid_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    scores, labels = grid_scores()
    return write_rows(tmp_path_factory.mktemp("hl") / "scores.csv", scores, labels)


def test_grid_data_has_no_empty_cell() -> None:
    """Precondition of the equality with the exact statistic: every exact E >= 1 (no floor applies)."""
    exact = exact_hosmer_lemeshow(*grid_scores(), GROUPS)
    assert exact.expected.min() >= 1.0
    assert np.isfinite(exact.statistic) and exact.statistic > 0


@pytest.mark.multiparty
@pytest.mark.parametrize("accounting, smoothed", [("paper", False), ("joint", True)])
def test_three_party_release_equals_simulated_with_the_same_draws(accounting: str, smoothed: bool,
                                                                   grid_csv: Path) -> None:
    program = ROOT / "tests" / "programs" / "fixed_noise_hosmer_lemeshow.py"
    run = run_command([sys.executable, str(program), "-M3", "-B", str(free_base_port()), "--no-log", str(grid_csv),
                       "p", "y", "2.0", str(GROUPS), str(POINTS), accounting, "1" if smoothed else "0"])
    assert run.code == 0, run.stderr
    record = json.loads(run.stdout.strip().splitlines()[-1])
    scores, labels = grid_scores()
    # the program's draws (its docstring), summed over the three parties
    nodes = sum((np.arange(node_count(POINTS)) % 7) - 3 + party for party in range(3))
    k = np.arange(2 * GROUPS)
    expected_noise = sum(((k % 5) - 2 + party) * 700 for party in range(3)).reshape(2, GROUPS)
    observed_noise = sum((k % 3) - 1 + party for party in range(3)).reshape(2, GROUPS)
    query = HosmerLemeshowQuery(epsilon=2.0, groups=GROUPS, grid_points=POINTS, accounting=accounting, smoothed=smoothed)
    simulated = private_hosmer_lemeshow(scores, labels, query, parties=3, threshold=1, node_noise=nodes,
                                        expected_noise=expected_noise, observed_noise=observed_noise)
    assert record["n"] == scores.size
    assert record["ecdf"] == simulated.ecdf.tolist()
    assert record["boundaries"] == simulated.boundaries.tolist()
    assert record["expected"] == simulated.expected.tolist()
    assert record["observed"] == simulated.observed.tolist()
    assert record["floored"] == simulated.floored
    assert record["statistic"] == simulated.statistic
    assert record["p_value"] == simulated.p_value


def _assert_exact(record: dict, scores: np.ndarray, labels: np.ndarray, parties: int) -> None:
    exact = exact_hosmer_lemeshow(scores, labels, GROUPS)
    assert record["parties"] == parties and record["n"] == scores.size
    assert record["boundaries"] == exact.boundaries.tolist()
    assert record["observed"] == exact.observed.tolist()
    np.testing.assert_allclose(record["expected"], exact.expected, rtol=0, atol=1e-9)
    assert record["estimate"] == pytest.approx(exact.statistic, rel=1e-12)
    assert record["p_value"] == pytest.approx(exact.p_value, rel=1e-9)
    assert record["floored"] == 0


def test_huge_epsilon_equals_exact_in_one_process(grid_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "hl.json"
    assert main(["--data", str(grid_csv), "--columns", "p,y", "--epsilon", "1e9", "--json", str(out)]) == 0
    record = read_record(out)
    _assert_exact(record, *grid_scores(), parties=1)
    split = record["budget_split"]
    assert split["epsilon_prime"] == pytest.approx(1e9 / 19)
    assert split["ecdf"] + split["statistics"] == pytest.approx(1e9)


@pytest.mark.multiparty
def test_huge_epsilon_equals_exact_with_one_mpyc_party(grid_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "hl.json"
    run = run_command(scenario_command("hosmer_lemeshow", "-M1", "--no-log", "--data", str(grid_csv),
                                       "--columns", "p,y", "--epsilon", "1e9", "--json", str(out)))
    assert run.code == 0, run.stderr
    _assert_exact(read_record(out), *grid_scores(), parties=1)


@pytest.mark.multiparty
def test_huge_epsilon_equals_exact_with_three_parties_own_files(tmp_path: Path) -> None:
    scores, labels = grid_scores()
    for party in range(3):  # each party its own file: rows party, party + 3, ...
        write_rows(tmp_path / f"site{party}.csv", scores[party::3], labels[party::3])
    out, table, plot = tmp_path / "hl.json", tmp_path / "groups.csv", tmp_path / "calibration.png"
    run = run_command(scenario_command("hosmer_lemeshow", "-M3", "--no-log", "--data", str(tmp_path / "site{pid}.csv"),
                                       "--columns", "p,y", "--epsilon", "1e9", "--json", str(out),
                                       "--table", str(table), "--plot", str(plot)))
    assert run.code == 0, run.stderr
    record = read_record(out)
    _assert_exact(record, scores, labels, parties=3)
    assert record["threshold"] == 1 and record["bytes_sent"] > 0
    _assert_table_matches_record(table, record)
    assert_png(plot)


PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    """A non-trivial PNG file: the magic bytes and more than a header."""
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > 1000


def _assert_table_matches_record(path: Path, record: dict) -> list[dict[str, str]]:
    """--table against the --json record of the same run: Q rows, the released boundaries and counts, the
    contributions summing to H, and the raised cells those the record's counts imply (E < floor 1, O < 0)."""
    from scenarios.kit.ecdf_options import TABLE_COLUMNS

    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        rows = list(reader)
        assert tuple(reader.fieldnames or ()) == TABLE_COLUMNS
    groups = record["groups"]
    assert len(rows) == groups and [int(row["group"]) for row in rows] == list(range(1, groups + 1))
    assert [float(row["lower"]) for row in rows] == record["boundaries"][:-1]
    assert [float(row["upper"]) for row in rows] == record["boundaries"][1:]
    for s, name in ((1, "positive"), (0, "negative")):
        assert [float(row[f"expected_{name}"]) for row in rows] == record["expected"][s]
        assert [int(row[f"observed_{name}"]) for row in rows] == record["observed"][s]
    assert sum(float(row["contribution"]) for row in rows) == pytest.approx(record["estimate"], rel=1e-9)
    assert [q for q, row in enumerate(rows, start=1) if row["left_out"] == "True"] == record["left_out_groups"]
    for q, row in enumerate(rows):
        raised = {f"{kind}_{name}" for s, name in ((1, "positive"), (0, "negative"))
                  for kind, low in (("expected", record["expected"][s][q] < 1.0),
                                    ("observed", record["observed"][s][q] < 0)) if low}
        assert set(row["raised"].split()) == (set() if row["left_out"] == "True" else raised)
        if row["left_out"] == "True":
            assert float(row["contribution"]) == 0.0
    assert sum(row["raised"].count("expected_") for row in rows) == record["floored"]
    return rows


def test_noisy_table_and_plot_in_one_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """At epsilon 0.3 on the embedded rows the noise is large (E noise std ~ 30 rows against E_1 of the lowest
    groups ~ 20): whatever cells get raised, the table says which, and its contributions still sum to H.
    The printed table names the columns by role and states the missing-value rule (nothing was filled)."""
    out, table, plot = tmp_path / "hl.json", tmp_path / "groups.csv", tmp_path / "calibration.png"
    assert main(["--epsilon", "0.3", "--smoothed", "--json", str(out), "--table", str(table),
                 "--plot", str(plot)]) == 0
    printed = capsys.readouterr().out
    assert "score column score, label column TenYearCHD; 10 groups" in printed
    assert "fill a missing cell with the declared value: TenYearCHD=0, score=0.5" in printed
    record = read_record(out)
    rows = _assert_table_matches_record(table, record)
    assert len(rows) == GROUPS
    assert_png(plot)


def test_group_contributions_are_the_cells_of_the_statistic() -> None:
    """hosmer_lemeshow_terms: its cells sum to hosmer_lemeshow_test's H in both modes, group by group
    as eq. (5) by hand on a small table, and an exact E = 0 < O gives an infinite contribution."""
    expected = np.array([[8.0, 0.5, 3.0], [2.0, -1.0, 6.0]])
    observed = np.array([[10.0, 1.0, 2.0], [-2.0, 0.0, 7.0]])
    terms = hosmer_lemeshow_terms(expected, observed, floor=1.0)
    test = hosmer_lemeshow_test(expected, observed, np.zeros(3, dtype=bool), floor=1.0)
    assert terms.statistic == test.statistic and test.floored == 2
    # by hand: E raised to 1 in (0, 1) and (1, 1); O raised to 0 in (1, 0)
    by_hand = [(10 - 8) ** 2 / 8 + (0 - 2) ** 2 / 2, (1 - 1) ** 2 / 1 + (0 - 1) ** 2 / 1, (2 - 3) ** 2 / 3 + 1 / 6]
    np.testing.assert_allclose(terms.per_group, by_hand, rtol=1e-15)
    assert terms.expected_raised.tolist() == [[False, True, False], [False, True, False]]
    assert terms.observed_raised.tolist() == [[False, False, False], [True, False, False]]
    empty_expected, observed_there = np.array([[1.0, 0.0], [3.0, 0.0]]), np.array([[2.0, 1.0], [3.0, 0.0]])
    exact = hosmer_lemeshow_terms(empty_expected, observed_there)
    assert exact.per_group[0] == 1.0 and exact.per_group[1] == np.inf
    assert hosmer_lemeshow_test(empty_expected, observed_there, np.zeros(2, dtype=bool)).statistic == np.inf


@pytest.mark.parametrize("option", ["--table", "--plot"])
def test_an_unwritable_output_path_stops_before_the_data(option: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "missing" / ("out.csv" if option == "--table" else "out.png")
    assert main([option, str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: party 0: cannot write {option} {path}: no such directory"]


@pytest.mark.multiparty
def test_embedded_data_with_three_parties_equals_the_noiseless_simulated_path(tmp_path: Path) -> None:
    """The embedded scored Framingham rows (those of scenarios.papers.hosmer_lemeshow): -M3 at epsilon = 1e9
    releases what the simulated path releases with zero noise (the exact H differs by the grid's discretisation)."""
    from scenarios.papers.hosmer_lemeshow import load_scores

    out = tmp_path / "hl.json"
    run = run_command(scenario_command("hosmer_lemeshow", "-M3", "--no-log", "--epsilon", "1e9", "--json", str(out)),
                      timeout=180)
    assert run.code == 0, run.stderr
    record = read_record(out)
    scores, labels = load_scores(1)
    zeros = np.zeros((2, GROUPS), dtype=np.int64)
    simulated = private_hosmer_lemeshow(scores, labels, HosmerLemeshowQuery(epsilon=1e9),
                                        node_noise=np.zeros(node_count(POINTS), dtype=np.int64),
                                        expected_noise=zeros, observed_noise=zeros)
    assert record["n"] == scores.size
    assert record["boundaries"] == simulated.boundaries.tolist()
    assert record["observed"] == simulated.observed.tolist()
    assert record["estimate"] == simulated.statistic
    assert "Hosmer-Lemeshow H" in run.stdout


def test_party_draws_have_the_simulated_noise_variance() -> None:
    """Three parties' draws (shape 1/2 each, t = 1) sum to noise of the variance the simulated path states.

    Variance estimate from 60000 observed-count draws: its relative sd is about sqrt((kurtosis - 1)/N) with
    kurtosis near 6 for (discrete) Laplace-like noise, i.e. 0.009; the bound 0.05 is over 5 sd."""
    query = HosmerLemeshowQuery(epsilon=1.0, accounting="joint")
    generator = np.random.default_rng(5)
    runs = 3000
    observed = np.zeros((runs, 2 * GROUPS), dtype=np.int64)
    expected = np.zeros((runs, 2 * GROUPS), dtype=np.int64)
    for run in range(runs):
        for _ in range(3):
            e, o = party_group_noise(query, 3, 1, rng=generator)
            expected[run] += e.ravel()
            observed[run] += o.ravel()
    assert observed.var() == pytest.approx(query.observed_noise_variance(parties=3, threshold=1), rel=0.05)
    assert expected.var() / query.scale**2 == pytest.approx(query.expected_noise_variance(parties=3, threshold=1),
                                                            rel=0.05)


def test_spend_is_the_whole_epsilon(grid_csv: Path) -> None:
    options = parse_options(["--data", str(grid_csv), "--columns", "p,y", "--epsilon", "0.7", "--budget", "5"])
    spend, exempt = options.query._spend()
    assert spend.epsilon == 0.7 and exempt is None
    assert spend_request(spend, release="x", **parse_options([]).budget.account(None)).exempt  # embedded data


@pytest.mark.parametrize("flags, message", [
    (["--epsilon", "0"], "epsilon must be positive"),
    (["--groups", "2"], "--groups must be at least 3 (the test has Q - 2 degrees of freedom), got 2"),
    (["--groups", "0"], "--groups must be at least 3 (the test has Q - 2 degrees of freedom), got 0"),
    (["--groups", "-4"], "--groups must be at least 3 (the test has Q - 2 degrees of freedom), got -4"),
    (["--points", "1000"], "grid_points must be a power of two"),
    (["--columns", "score"], "SCORE,LABEL"),
])
def test_bad_options_stop_with_one_line(flags: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(flags) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_a_label_outside_zero_one_stops_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores, labels = grid_scores(30)
    labels[4] = 2
    path = write_rows(tmp_path / "bad.csv", scores, labels)
    assert main(["--data", str(path), "--columns", "p,y", "--epsilon", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: party 0: column 'y'") and "labels 0/1" in err[0]
    assert "2" not in err[0].split("'y'")[1]  # neither the value nor a count leaves the party


def test_groups_left_empty_by_equal_boundaries_are_left_out(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """A reviewer's case: Q = N = 16 grid points at epsilon 1e9 on the embedded rows (scores mostly below 0.3)
    releases equal boundaries; those groups hold no row whatever the data, so they are left out of H and of the
    degrees of freedom, said in the output and marked in --table; more groups than grid points is a usage error."""
    out, table = tmp_path / "hl.json", tmp_path / "groups.csv"
    assert main(["--epsilon", "1e9", "--groups", "16", "--points", "16", "--json", str(out),
                 "--table", str(table)]) == 0
    printed = capsys.readouterr().out
    record = read_record(out)
    left_out = record["left_out_groups"]
    assert len(left_out) >= 3 and record["degrees_of_freedom"] == 16 - len(left_out) - 2
    assert "empty by construction (equal released boundaries): left out of H" in printed
    rows = _assert_table_matches_record(table, record)
    boundaries = record["boundaries"]
    assert all(boundaries[q - 1] == boundaries[q] or q == 16 for q in left_out)
    assert main(["--groups", "20", "--points", "16"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "groups must be at most grid_points = 16" in err[0]
    assert len(rows) == 16
