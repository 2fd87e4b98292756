"""The public API (issue 12): the README's Scripting blocks run, and the traps of the lower level are gone.

- The README's first ``python`` block is a complete script: run with ``-M3`` (party 0 launches the
  others on free ports and waits) and as one party, it exits 0 and prints the release; a party
  whose file is missing stops every party with exit 2 and one line.  The second block (Monte Carlo
  on the simulated path) runs as printed.
- ``import dp, secure, smoothing`` leaves ``mpyc.runtime`` unimported.
- Precision follows the column declaration (the Gini mean difference of an 8-bit column is in the
  column's units), ``tuples="2n"`` is resolved from n, labels and classes are declared by role, and
  a misuse raises at the call with a plain message.
"""
from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import ROOT, free_base_port

import dp
import secure
from dp.umpc import Query
from secure.errors import InputError
from secure.intake import ColumnSpec

PYTHON_BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
SCRIPT, OWN_OPTIONS, MONTE_CARLO = PYTHON_BLOCKS[0], PYTHON_BLOCKS[1], PYTHON_BLOCKS[2]
RELEASE_LINE = re.compile(r"party 0: private AUC of sysBP for TenYearCHD (\d\.\d{3}) .*n = 4238, 8476 pairs")
AUC_COLUMNS = [dp.numeric("sysBP", lower=80, upper=300, bits=8), dp.label("TenYearCHD")]


def _run(path: Path, *argv: str, timeout: float = 300.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(path), *argv], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout)


def _framingham(columns: list[str]) -> np.ndarray:
    """The embedded rows of ``columns`` where none is missing (read independently of the API)."""
    from scenarios.kit.datasets import load_embedded

    table = load_embedded("framingham")
    positions = [table.header.index(name) for name in columns]
    return np.array([[float(row[p]) for p in positions] for row in table.rows
                     if all(row[p].strip() not in ("", "NA") for p in positions)])


def _mann_whitney_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    positive, negative = scores[labels == 1], scores[labels == 0]
    greater = (positive[:, None] > negative[None, :]).sum()
    ties = (positive[:, None] == negative[None, :]).sum()
    return float((greater + ties / 2) / (len(positive) * len(negative)))


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("readme") / "script.py"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def test_importing_the_packages_does_not_start_mpyc() -> None:
    code = ("import sys, dp, secure, smoothing, dp.umpc, dp.ecdf, dp.umpc.planner, secure.kernels; "
            "dp.umpc.Query; dp.umpc.simulate; secure.run; secure.Party; dp.numeric; "
            "dp.umpc.planner.path_rounds('histogram', secure.kernels.get_kernel('kendall'), rows=10 ** 7, bits=0, "
            "shape=(601, 401)); "  # planning costs the sharing without MPyC's runtime (simulations plan too)
            "assert 'mpyc.runtime' not in sys.modules, 'mpyc.runtime imported'; print('clean')")
    run = subprocess.run([sys.executable, "-c", code, "-M3"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "clean", run.stderr


@pytest.mark.multiparty
def test_readme_script_runs_with_three_parties(script: Path) -> None:
    run = _run(script, "-M3", "--no-log")
    assert run.returncode == 0, run.stderr
    match = RELEASE_LINE.search(run.stdout)
    assert match, run.stdout
    assert 0.0 <= float(match.group(1)) <= 1.0
    assert run.stderr == ""


def test_readme_script_runs_as_one_party(script: Path) -> None:
    run = _run(script, "--no-log")
    assert run.returncode == 0, run.stderr
    assert RELEASE_LINE.search(run.stdout), run.stdout


def test_script_refuses_an_unknown_option(script: Path) -> None:
    run = _run(script, "--epsilon", "2", "--no-log")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == ["error: party 0: unknown option --epsilon (a script takes MPyC's "
                                               "options such as -M, -I, -T and --silence-limit, --allow-t0)"]


def _script_on(tmp_path: Path, data: str) -> Path:
    text, count = re.subn(r'^DATA = ".*?"', f"DATA = {data!r}", SCRIPT, count=1, flags=re.MULTILINE)
    assert count == 1, "the README script names its data in one DATA = \"...\" line"
    path = tmp_path / "script.py"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.multiparty
def test_a_missing_file_at_party_1_stops_every_party(tmp_path: Path) -> None:
    lines = _framingham_lines()
    for pid in (0, 2):
        (tmp_path / f"site{pid}.csv").write_text("\n".join([lines[0], *lines[1 + pid:40:3]]) + "\n")
    path = _script_on(tmp_path, str(tmp_path / "site{pid}.csv"))
    expected = "error: party 1: cannot read its data file: no such file"  # the path stays at party 1
    launched = _run(path, "-M3", "--no-log", timeout=120)
    assert launched.returncode == 2
    assert launched.stderr.strip().splitlines() == [expected]
    port = str(free_base_port())
    processes = [subprocess.Popen([sys.executable, str(path), "-M3", "-I", str(i), "-B", port, "--no-log"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
                 for i in range(3)]
    outcomes = [process.communicate(timeout=120) for process in processes]
    assert [process.returncode for process in processes] == [2, 2, 2]
    assert [err.strip().splitlines() for _, err in outcomes] == [[expected]] * 3


def _framingham_lines() -> list[str]:
    import gzip

    with gzip.open(ROOT / "scenarios" / "data" / "framingham.csv.gz", "rt", encoding="utf-8") as handle:
        return handle.read().splitlines()


def test_readme_own_options_block_reaches_every_party(tmp_path: Path) -> None:
    """The README's script with an option of its own: under -M3 every party runs with --eps 0.5 (secure.run's
    script_args give it back to the launched parties; the parameter check would stop them otherwise)."""
    path = tmp_path / "own_options.py"
    path.write_text(OWN_OPTIONS, encoding="utf-8")
    run = _run(path, "-M3", "--eps", "0.5", "--no-log")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "party 0 of 3: eps 0.5"


def test_readme_monte_carlo_block_runs(tmp_path: Path) -> None:
    path = tmp_path / "monte_carlo.py"
    path.write_text(MONTE_CARLO, encoding="utf-8")
    run = _run(path)
    assert run.returncode == 0, run.stderr
    match = re.fullmatch(r"AUC (\d\.\d{4}): RMSE (\d\.\d{4}) over 200 runs, of which noise alone (\d\.\d{4})",
                         run.stdout.strip())
    assert match, run.stdout
    rows = _framingham(["sysBP", "TenYearCHD"])
    assert float(match.group(1)) == round(_mann_whitney_auc(rows[:, 0], rows[:, 1]), 4)
    assert 0 < float(match.group(3)) and 0 < float(match.group(2)) < 0.05


# ------------------------------------------------------------------------------------------ traps


def test_gini_precision_follows_the_column_declaration() -> None:
    """At 8 bits the Gini mean difference is in the column's units (the old trap: 256 times larger)."""
    values = _framingham(["BMI"])[:300]
    parties = [values[i::3] for i in range(3)]
    query = Query(statistic="gini", columns=[dp.numeric("BMI", lower=15, upper=60, bits=8)], epsilon=1.0,
                  tuples="all")
    assert query.base.kernel.precision == 8
    flat = values[:, 0]
    plain = float(np.abs(flat[:, None] - flat[None, :]).sum() / (len(flat) * (len(flat) - 1)))
    # fixed point at 8 bits moves each value by at most 2^-9, a difference by at most 2^-8
    assert abs(dp.umpc.exact(query, parties) - plain) <= 2.0 ** -8
    assert abs(dp.umpc.simulate(query, parties, seed=3).exact_on_tuples - plain) <= 2.0 ** -8


def test_the_lower_level_refuses_a_gini_kernel_at_the_wrong_precision() -> None:
    from dp.umpc.protocol import UStatQuery
    from secure.kernels import get_kernel

    with pytest.raises(ValueError, match="statistic 'gini' is reported in its column's units: give precision="):
        get_kernel("gini")
    with pytest.raises(ValueError, match="built for 0 fractional bits but its column is declared with 8"):
        UStatQuery(kernel=get_kernel("gini", precision=0), specs=(ColumnSpec("BMI", 15, 60, 8),), epsilon=1.0)


def test_tuples_as_a_multiple_of_n() -> None:
    query = Query(statistic="kendall", epsilon=1.0, tuples="2n",
                  columns=[dp.numeric("x", lower=0, upper=15), dp.numeric("y", lower=0, upper=15)])
    assert query.at(100).tuples == 200
    assert dp.umpc.Query(statistic="kendall", epsilon=1.0, tuples="0.5n", columns=query.columns).at(101).tuples == 50
    assert dp.umpc.Query(statistic="kendall", epsilon=1.0, tuples="all", columns=query.columns).at(50).tuples is None
    assert dp.umpc.Query(statistic="kendall", epsilon=1.0, tuples=77, columns=query.columns).at(50).tuples == 77
    generator = np.random.default_rng(5)
    parties = [generator.integers(0, 16, size=(n, 2)).astype(float) for n in (20, 17, 23)]
    assert len(dp.umpc.simulate(query, parties, seed=1).tuples) == 120
    with pytest.raises(ValueError, match=r"asks for 30 tuples, more than the C\(5, 2\) = 10 distinct ones"):
        Query(statistic="kendall", epsilon=1.0, tuples="6n", columns=query.columns).at(5)


def test_labels_and_classes_are_declared_by_role() -> None:
    score = dp.numeric("score", lower=0, upper=1, bits=4)
    auc = Query(statistic="auc", columns=[score, dp.label("y")], epsilon=1.0)
    assert auc.columns[1] == ColumnSpec("y", 0.0, 1.0, 0, (0, 1))
    vus = Query(statistic="vus", columns=[score, dp.classes("grade", 3)], epsilon=1.0)
    assert vus.columns[1].categories == (0, 1, 2)
    with pytest.raises(ValueError, match=r"takes column 2 \('y'\) as labels 0/1: declare it with label\(name\)"):
        Query(statistic="auc", columns=[score, dp.numeric("y", lower=0, upper=1)], epsilon=1.0)
    with pytest.raises(ValueError, match=r"as labels 0/1/2: declare it with classes\(name, 3\)"):
        Query(statistic="vus", columns=[score, dp.label("grade")], epsilon=1.0)
    with pytest.raises(ValueError, match=r"takes column 1 \('s'\) as a score"):
        Query(statistic="auc", columns=[dp.label("s"), dp.label("y")], epsilon=1.0)
    # a label outside 0/1 is refused at the party that holds it (a shared verdict in a run)
    rows = np.array([[0.5, 1.0], [0.25, 2.0], [0.75, 0.0]])
    with pytest.raises(InputError, match="column 'y' must hold labels 0/1, found another value"):
        dp.umpc.simulate(Query(statistic="auc", columns=auc.columns, epsilon=1.0, tuples="all"), [rows], seed=1)


def test_categorical_columns_refuse_values_outside_their_list() -> None:
    education = dp.categorical("education", categories=[1, 2, 3, 4])
    assert education.categories == (1, 2, 3, 4)
    query = Query(statistic="duplicate", columns=[education], epsilon=1.0, tuples="all")
    assert dp.umpc.exact(query, [np.array([[1.0], [1.0], [2.0], [4.0]])]) == pytest.approx(1 / 6)
    with pytest.raises(InputError, match="column 'education'"):
        dp.umpc.exact(query, [np.array([[1.0], [5.0], [2.0]])])


def test_string_categories_are_read_as_declared(tmp_path: Path) -> None:
    region = dp.categorical("region", categories=["north", "south", "east"])
    query = Query(statistic="duplicate", columns=[region], epsilon=1.0, tuples="all")
    (tmp_path / "sites.csv").write_text("region,x\nnorth,1\nsouth,2\nnorth,3\neast,4\n")
    (tmp_path / "other.csv").write_text("region,x\nnorth,1\nwest,2\n")
    rows = secure.read_rows(str(tmp_path / "sites.csv"), query.columns)
    assert dp.umpc.exact(query, [rows]) == pytest.approx(1 / 6)  # one equal pair (north, north) of six
    with pytest.raises(InputError, match="column 'region' has a value outside its declared categories"):
        secure.read_rows(str(tmp_path / "other.csv"), query.columns)


@pytest.mark.parametrize("make, error, message", [
    (lambda: Query(statistic="auc", columns=AUC_COLUMNS, epsilon=-1), ValueError, "epsilon must be positive, got -1"),
    (lambda: Query(statistic="auc", columns=AUC_COLUMNS, epsilon=1, delta=2), ValueError, "delta"),
    (lambda: Query(statistic="auc", columns=AUC_COLUMNS, epsilon=1, tuples="2x"), ValueError,
     "tuples must be an int, 'all' or a positive multiple of n like '2n', got '2x'"),
    (lambda: Query(statistic="auc", columns=AUC_COLUMNS, epsilon=1, tuples=0), ValueError,
     "tuples must be at least 1, got 0"),
    (lambda: Query(statistic="auc", columns=AUC_COLUMNS, epsilon=1, sampling="random"), ValueError,
     "unknown sampling 'random'"),
    (lambda: Query(statistic="median", columns=AUC_COLUMNS, epsilon=1), ValueError, "unknown statistic 'median'"),
    (lambda: Query(statistic="auc", columns=["sysBP", "TenYearCHD"], epsilon=1), TypeError,
     "columns must be declarations such as numeric('sysBP', lower=..., upper=...)"),
    (lambda: Query(statistic="kendall", columns=AUC_COLUMNS[:1], epsilon=1), ValueError,
     "statistic 'kendall' needs 2 columns (x, y), got 1"),
    (lambda: Query("auc", AUC_COLUMNS, 1.0), TypeError, "positional argument"),  # type: ignore[misc]
    (lambda: dp.numeric("x", lower=5, upper=1), ValueError, "upper must be greater than lower, got lower=5, upper=1"),
    (lambda: dp.numeric("x", lower=0, upper=math.inf), ValueError, "upper must be finite, got inf"),
    (lambda: dp.numeric("x", lower=0, upper=1, bits=2.5), TypeError, "bits must be an integer, got 2.5"),
    (lambda: dp.numeric("x", lower=0, upper=1, bits=60), ValueError, "bits must lie in [0, 52], got 60"),
    (lambda: dp.classes("grade", 1), ValueError, "k (the number of classes) must be at least 2, got 1"),
    (lambda: dp.categorical("c", categories="abc"), TypeError, "categories must be a list, got 'abc'"),
    (lambda: dp.categorical("c", categories=[1, 2, 1]), ValueError, "category 1 is given twice"),
    (lambda: dp.label(""), TypeError, "a column name must be a non-empty string"),
])
def test_a_misuse_raises_at_the_call_with_a_plain_message(make: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as caught:
        make()  # type: ignore[operator]
    assert message in str(caught.value)


def test_simulate_checks_its_arguments() -> None:
    query = Query(statistic="auc", columns=AUC_COLUMNS, epsilon=1.0)
    rows = np.array([[120.0, 1.0], [130.0, 0.0], [110.0, 0.0], [140.0, 1.0]])
    with pytest.raises(ValueError, match=r"threshold must be an integer in \[0, 1\], got 2"):
        dp.umpc.simulate(query, [rows, rows], seed=1, threshold=2)
    with pytest.raises(TypeError, match="one table of rows per party"):
        dp.umpc.simulate(query, rows, seed=1)  # type: ignore[arg-type]


# ------------------------------------------------------------------ review findings I1-I8 (scripting API)

KENDALL = Query(statistic="kendall", epsilon=1.0, tuples="all",
                columns=[dp.numeric("x", lower=0, upper=1, bits=4), dp.numeric("y", lower=0, upper=1, bits=4)])
SCRIPT_CHECKS = ROOT / "tests" / "programs" / "script_checks.py"


def test_rows_with_the_wrong_number_of_columns_are_refused_not_reshaped() -> None:
    rows = np.zeros((30, 3))  # reshaped, these were 45 rows of (x, y)
    message = re.escape("rows must have 2 columns (x, y) per row, got shape (30, 3)")
    with pytest.raises(ValueError, match=message):
        dp.umpc.exact(KENDALL, [rows])
    with pytest.raises(ValueError, match=message):
        dp.umpc.simulate(KENDALL, [rows], seed=1)
    with pytest.raises(ValueError, match=re.escape("rows must have 2 columns (x, y) per row, got shape (61,)")):
        dp.umpc.exact(KENDALL, [np.zeros(61)])
    gini = Query(statistic="gini", epsilon=1.0, tuples="all", columns=[dp.numeric("x", lower=0, upper=8, bits=0)])
    values = np.array([0.0, 2.0, 5.0, 8.0])  # one column: a 1-D array is its rows
    pairs = [abs(a - b) for i, a in enumerate(values) for b in values[i + 1:]]
    assert dp.umpc.exact(gini, [values]) == pytest.approx(sum(pairs) / len(pairs))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_missing_value_in_array_rows_is_refused(bad: float) -> None:
    query = Query(statistic="auc", epsilon=1.0, tuples="all",
                  columns=[dp.numeric("score", lower=0, upper=1, bits=4), dp.label("y")])
    rows = np.column_stack([np.linspace(0, 1, 20), np.arange(20) % 2])
    rows[3, 0] = bad
    for call in (lambda: dp.umpc.exact(query, [rows]), lambda: dp.umpc.simulate(query, [rows], seed=1)):
        with pytest.raises(InputError) as caught:
            call()
        assert str(caught.value) == ("column 'score' has a missing value (NaN or infinite) in the rows given: "
                                     "fill it with a declared value, or read the rows with a missing-value policy")


def test_input_error_is_a_value_error() -> None:
    assert issubclass(InputError, ValueError)
    with pytest.raises(ValueError, match="a bad file"):
        raise InputError("a bad file", detail="line 3")


def test_import_dp_gives_dp_budget() -> None:
    code = "import dp; print(dp.budget.Budget.__name__, 'budget' in dp.__all__)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["Budget", "True"]


def test_typos_in_names_and_options_fail_the_type_checker(tmp_path: Path) -> None:
    from mypy import api

    script = tmp_path / "typos.py"
    script.write_text("import dp\nimport secure\nfrom dp.umpc import Query\n\n"
                      "dp.umpc.Qurey\n"  # line 5
                      "secure.rnu\n"  # 6
                      "dp.umpcc\n"  # 7
                      "Query(statistic='kendal', columns=[dp.numeric('x', lower=0, upper=1)], epsilon=1.0)\n"  # 8
                      "Query(statistic='gini', columns=[dp.numeric('x', lower=0, upper=1)], epsilon=1.0, "
                      "path='sorted', sampling='balance', clipping='locally', noise='party')\n"  # 9
                      "secure.read_rows('a.csv', ['x'], missing='fil')\n"  # 10
                      "dp.umpc.Query(statistic='gini', columns=[dp.numeric('x', lower=0, upper=1)], epsilon=1.0)\n"
                      "dp.budget.Budget\n", encoding="utf-8")
    out, _, _ = api.run(["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(script)])
    mine = [line for line in out.splitlines() if line.startswith(str(script))]
    flagged = {int(line.split(":")[1]) for line in mine}
    assert flagged == {5, 6, 7, 8, 9, 10}, out
    for option in ("'sorted'", "'balance'", "'locally'", "'party'"):
        assert any(option in line for line in mine), out


def test_misuse_of_path_seed_and_party_raises_at_the_call(tmp_path: Path) -> None:
    for statistic, columns in (("kendall", KENDALL.columns),
                               ("vus", [dp.numeric("s", lower=0, upper=1), dp.classes("c", 3)])):
        with pytest.raises(ValueError, match=f"path='sort' runs only auc and gini .*not '{statistic}'"):
            Query(statistic=statistic, columns=columns, epsilon=1.0, path="sort")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="path='histogram' counts each party's rows at the party"):
        Query(statistic="kendall", columns=KENDALL.columns, epsilon=1.0, path="histogram", clipping="secure")
    with pytest.raises(ValueError, match="unknown path 'sorted'"):
        Query(statistic="kendall", columns=KENDALL.columns, epsilon=1.0, path="sorted")  # type: ignore[arg-type]
    rows = np.column_stack([np.linspace(0, 1, 8), np.linspace(1, 0, 8)])
    with pytest.raises(TypeError, match="seed must be an integer .* got 'a'"):
        dp.umpc.simulate(KENDALL, [rows], seed="a")  # type: ignore[arg-type]
    path = tmp_path / "rows.csv"
    path.write_text("x\n1\n2\n3\n", encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape("party must be an integer in [0, 2] (parties are numbered from 0), "
                                                   "got 3")):
        secure.read_rows(str(path), ["x"], party=3, parties=3)
    with pytest.raises(ValueError, match="parties must be a positive integer, got 0"):
        secure.read_rows(str(path), ["x"], party=0, parties=0)
    assert secure.read_rows(str(path), ["x"], party=2, parties=3).values[:, 0].tolist() == [3.0]


def _script_checks(case: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return _run(SCRIPT_CHECKS, "--case", case, "--eps", "5", *argv, "--no-log", timeout=180)


@pytest.mark.multiparty
def test_a_script_s_own_options_reach_the_launched_parties() -> None:
    run = _script_checks("echo", "-M3")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["eps 5.0 agreed by 3 parties"] and run.stderr == ""


def test_release_returns_the_budget_line_and_prints_nothing() -> None:
    run = _script_checks("release")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()  # only what the script prints: the budget line it took from the release, the AUC
    assert len(lines) == 2 and lines[0] == "privacy budget: no privacy budget kept (--ledger off)", run.stdout
    assert re.fullmatch(r"AUC -?\d+\.\d{3}", lines[1]), run.stdout  # 12 rows at epsilon 1: the noisy AUC may leave [0, 1]


@pytest.mark.multiparty
@pytest.mark.parametrize("case, line", [
    ("release-nan", "error: party 1: column 'score' has a missing value (NaN or infinite) in the rows given: fill it "
                    "with a declared value, or read the rows with a missing-value policy"),
    ("release-shape", "error: party 1: rows must have 2 columns (score, label) per row, got shape (12, 3)"),
])
def test_bad_array_rows_at_one_party_stop_every_party_with_one_line(case: str, line: str) -> None:
    run = _script_checks(case, "-M3")
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [line]
    assert "nan" not in run.stdout.lower()
