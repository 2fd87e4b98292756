"""Usage errors of the job scenarios: exit 2 and one line ``error: party 0: ...``, never a traceback.

Issue 11, items 1 and 6: values that used to end in "internal error" (exit 1) or a traceback -- an
epsilon too small or too large for the integer noise, ``--pairs infn``, a negative ``--seed``, an
infinite ``--domain``, an output file in a missing directory (found only after the reveal), an ECDF of
no rows (a ZeroDivisionError after the reveal).  Each case runs one party in this process (the job's ``main``);
two run through ``python -m``; a few ``-M3`` runs show the same line at every party and that one party without
rows is fine.

A problem found in the options is ``error: party 0: ...``; one found once the public row counts are
known (no row at any party, too many tuples for n, a noise that ``-L`` cannot hold) is the verdict
every party reaches from public values alone, ``error: all parties: ...``; both before any reveal.
"""
from __future__ import annotations

import importlib
import math
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_command, run_parties, scenario_command

EMPTY_ECDF = "v\n"
EMPTY_PAIRS = "score,label\n"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Header-only CSVs and per-party ECDF files (party 1 holds no rows)."""
    folder = tmp_path_factory.mktemp("usage")
    (folder / "empty_v.csv").write_text(EMPTY_ECDF)
    (folder / "empty_pairs.csv").write_text(EMPTY_PAIRS)
    (folder / "part0.csv").write_text("v\n1\n2\n3\n4\n")
    (folder / "part1.csv").write_text(EMPTY_ECDF)
    (folder / "part2.csv").write_text("v\n5\n6\n")
    for index in range(3):
        (folder / f"none{index}.csv").write_text(EMPTY_ECDF)
    return folder


PARTY = "error: party 0: "
ALL = "error: all parties: "

#: (module, argv, prefix of the one stderr line, words it must contain); ``{tmp}`` is the files folder
CASES = [
    # ustat: epsilon, delta, pairs, seed, precision, output
    ("ustat", ["--noise", "parties", "--epsilon", "1e-300"], PARTY, ["epsilon 1e-300 is too small", "at least 1.82e-12"]),
    ("ustat", ["--noise", "parties", "--epsilon", "1e-12"], PARTY, ["epsilon 1e-12 is too small", "at least 1.82e-12"]),
    ("ustat", ["--noise", "mpc", "--epsilon", "1e-300"], PARTY, ["in-MPC", "binary digits", "larger epsilon"]),
    ("ustat", ["--noise", "mpc", "--epsilon", "1e-12", "--pairs", "2n"], ALL, ["noise sampled in MPC", "-L 32", "give -L"]),
    ("ustat", ["--noise", "mpc", "--epsilon", "1e-12", "--pairs", "all", "--path", "histogram"], ALL,
     ["in-MPC discrete Laplace sampler cannot reach", "larger epsilon"]),
    ("ustat", ["--path", "sort"], PARTY, ["--path sort runs only auc and gini", "not 'kendall'"]),
    ("ustat", ["--path", "histogram", "--pairs", "8n"], PARTY, ["--path histogram", "--pairs 8n", "--pairs all"]),
    ("ustat", ["--mpc-noise", "--epsilon", "300"], PARTY, ["epsilon = 300", "too large", "at most 148.33"]),
    ("ustat", ["--noise", "mpc", "--delta", "1e-300"], PARTY, ["cannot reach delta <= 1e-300", "any epsilon"]),
    ("ustat", ["--epsilon", "nan"], PARTY, ["epsilon must be finite", "nan"]),
    ("ustat", ["--epsilon", "inf"], PARTY, ["epsilon must be finite", "inf"]),
    ("ustat", ["--delta", "1"], PARTY, ["delta must lie in [0, 1)"]),
    ("ustat", ["--delta=-1"], PARTY, ["delta must lie in [0, 1)"]),
    ("ustat", ["--delta", "nan"], PARTY, ["delta must lie in [0, 1)", "nan"]),
    ("ustat", ["--precision", "60"], PARTY, ["precision must lie in [0, 52]", "60"]),
    ("ustat", ["--pairs", "infn"], PARTY, ["--pairs", "positive finite multiple of n", "'infn'"]),
    ("ustat", ["--pairs", "1e400n"], PARTY, ["--pairs", "positive finite multiple of n", "'1e400n'"]),
    ("ustat", ["--pairs=-2n"], PARTY, ["--pairs", "'-2n'"]),
    ("ustat", ["--pairs", "0n"], PARTY, ["--pairs", "'0n'"]),
    ("ustat", ["--pairs", "1e300n"], ALL, ["--pairs 1e300n", "C(4238, 2)", "--pairs all"]),
    ("ustat", ["--seed=-5"], PARTY, ["--seed must be an integer in [0, 2^63)", "-5"]),
    ("ustat", ["--seed", str(1 << 64)], PARTY, ["--seed must be an integer in [0, 2^63)"]),
    ("ustat", ["--json", "/nonexistent/x.json"], PARTY, ["cannot write --json /nonexistent/x.json: no such directory"]),
    ("ustat", ["--json", "{tmp}"], PARTY, ["cannot write --json", "is a directory"]),
    ("ustat", ["--data", "{tmp}/empty_pairs.csv", "--stat", "auc", "--columns", "score,label", "--domain",
               "score=0:1"], PARTY, ["its data has no rows (a header line only)"]),
    # ecdf: domain, epsilon, points, release, quantiles, outputs, no rows
    ("ecdf", ["--domain", "0:inf"], PARTY, ["--domain must be finite", "0:inf"]),
    ("ecdf", ["--domain=-1e308:1e308"], PARTY, ["--domain must be finite"]),
    ("ecdf", ["--epsilon", "1e-300"], PARTY, ["epsilon 1e-300 is too small", "at least 1.01e-11"]),
    ("ecdf", ["--epsilon", "1e-12"], PARTY, ["epsilon 1e-12 is too small", "at least 1.01e-11"]),
    ("ecdf", ["--points", "1"], PARTY, ["--points must lie in [2, 2^20]"]),
    ("ecdf", ["--release", "1"], PARTY, ["--release must lie in [2, --points = 1024]"]),
    ("ecdf", ["--quantiles", "0.5,inf"], PARTY, ["--quantiles must lie strictly between 0 and 1"]),
    ("ecdf", ["--curve", "/nonexistent/x.csv"], PARTY, ["cannot write --curve /nonexistent/x.csv: no such directory"]),
    ("ecdf", ["--json", "/nonexistent/x.json"], PARTY, ["cannot write --json /nonexistent/x.json: no such directory"]),
    ("ecdf", ["--data", "{tmp}/empty_v.csv", "--columns", "v", "--domain", "v=0:10"], PARTY,
     ["its data has no rows"]),
    # rank_auc: seed, epsilon, domain, rows, output
    ("rank_auc", ["--seed=-5"], PARTY, ["--seed must be an integer in [0, 2^63)", "-5"]),
    ("rank_auc", ["--noise", "parties", "--epsilon", "1e-300"], PARTY, ["too small", "at least 1.82e-12"]),
    ("rank_auc", ["--noise", "mpc", "--epsilon", "700"], PARTY, ["epsilon = 350", "too large", "at most"]),
    ("rank_auc", ["--domain", "0:inf"], PARTY, ["must be finite"]),
    ("rank_auc", ["--domain", "0:1:60"], PARTY, ["precision must lie in [0, 52]"]),
    ("rank_auc", ["--rows", "1"], PARTY, ["--rows must be at least 2"]),
    ("rank_auc", ["--json", "/nonexistent/x.json"], PARTY, ["cannot write --json /nonexistent/x.json"]),
    # bench_kendall: output
    ("bench_kendall", ["--rows", "50", "--json", "/nonexistent/x.json"], PARTY,
     ["cannot write --json /nonexistent/x.json: no such directory"]),
]


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize("module, argv, prefix, words", CASES,
                         ids=[f"{module} {' '.join(argv)}" for module, argv, _, _ in CASES])
def test_usage_error_is_one_line_exit_2(files: Path, module: str, argv: list[str], prefix: str,
                                        words: list[str], capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """One party, in this process (the job's ``main``, what ``python -m`` runs): exit 2, exactly one stderr line
    with the prefix and the key words, no traceback (an exception would fail the test)."""
    args = [word.replace("{tmp}", str(files)) for word in argv]
    monkeypatch.chdir(ROOT)
    code = importlib.import_module(f"scenarios.{module}").main([*args, "--no-log"])
    stderr = capsys.readouterr().err
    line = _one_error_line(stderr)
    assert code == 2, (code, stderr)
    assert line.startswith(prefix), line
    for word in words:
        assert word in line, (word, line)


@pytest.mark.parametrize("case", [0, 3], ids=["options", "public row counts"])
def test_a_usage_error_process_exits_2_with_the_one_line(files: Path, case: int) -> None:
    """The same through ``python -m``: a problem in the options, and one found from the public row counts."""
    module, argv, prefix, words = CASES[case]
    run = run_command(scenario_command(module, *argv, "--no-log"), timeout=120)
    line = _one_error_line(run.stderr)
    assert run.code == 2, (run.code, run.stderr)
    assert line.startswith(prefix) and all(word in line for word in words), line


def test_bad_output_path_stops_every_party_with_the_same_line() -> None:
    """-M3: party 0 checks its --json before anything is shared; every party exits 2 with its line."""
    runs = run_parties([["--json", "/nonexistent/x.json", "--points", "16"]] * 3, module="ecdf", timeout=60)
    lines = [_one_error_line(run.stderr) for run in runs]
    assert [run.code for run in runs] == [2, 2, 2], [run.stderr for run in runs]
    assert lines == ["error: party 0: cannot write --json /nonexistent/x.json: no such directory"] * 3


def test_ecdf_with_no_rows_at_any_party_stops_every_party(files: Path) -> None:
    """-M3, every file header-only: the same refusal at every party (n = 0 is public), no reveal."""
    argv = ["--data", str(files / "none{pid}.csv"), "--columns", "v", "--domain", "v=0:10", "--points", "16"]
    runs = run_parties([argv] * 3, module="ecdf", timeout=60)
    assert [run.code for run in runs] == [2, 2, 2], [run.stderr for run in runs]
    assert {_one_error_line(run.stderr) for run in runs} == \
        {"error: party 0 (also parties 1, 2): its data has no rows (a header line only); no party holds a row"}


def test_ecdf_with_one_party_holding_no_rows_runs(files: Path, tmp_path: Path) -> None:
    """-M3, party 1 holds no rows: the counts are still summed over all parties and n = 6 is released."""
    record = tmp_path / "ecdf.json"
    argv = ["--data", str(files / "part{pid}.csv"), "--columns", "v", "--domain", "v=0:10", "--points", "16",
            "--smooth", "none"]
    runs = run_parties([argv + ["--json", str(record)], argv, argv], module="ecdf", timeout=60)
    assert [run.code for run in runs] == [0, 0, 0], [run.stderr for run in runs]
    import json

    released = json.loads(record.read_text())
    assert released["n"] == 6 and released["parties"] == 3


# ------------------------------------------------------------------------------ the bounds themselves


def test_noise_scale_bound_is_where_the_polya_sampler_stops() -> None:
    """At the smallest epsilon a draw works (mean 2^40); just below it the check refuses."""
    from dp.validation import check_noise_scale, smallest_noise_epsilon
    from secure.noise.party import MAX_POLYA_MEAN, polya_difference

    for sensitivity in (1, 2, 11):
        smallest = smallest_noise_epsilon(sensitivity)
        assert 1 / math.expm1(smallest / sensitivity) <= MAX_POLYA_MEAN
        check_noise_scale(smallest, sensitivity)
        polya_difference(1.0, log_alpha=-smallest / sensitivity)
        with pytest.raises(ValueError, match="too small"):
            check_noise_scale(smallest * (1 - 1e-9), sensitivity)
        with pytest.raises(ValueError):
            polya_difference(1.0, log_alpha=-smallest * (1 - 1e-6) / sensitivity)


def test_largest_sampler_epsilon_is_the_edge_of_the_in_mpc_plans() -> None:
    """plan_secret_laplace serves the bound it reports and refuses a little above it."""
    from dp.secret_noise import largest_sampler_epsilon, plan_secret_laplace

    for sensitivity in (1, 8):
        largest = largest_sampler_epsilon(sensitivity=sensitivity)
        assert largest <= largest_sampler_epsilon() < 150
        plan_secret_laplace(epsilon=largest, sensitivity=sensitivity)
        with pytest.raises(ValueError, match="too large"):
            plan_secret_laplace(epsilon=largest * (1 + 1e-5), sensitivity=sensitivity)


def test_seed_range() -> None:
    from dp.validation import check_seed

    assert check_seed(0) == 0 and check_seed((1 << 63) - 1) == (1 << 63) - 1
    for bad in (-1, 1 << 63):
        with pytest.raises(ValueError, match=r"\[0, 2\^63\)"):
            check_seed(bad)


def test_binomial_calibration_takes_a_tiny_epsilon() -> None:
    """Binomial noise at epsilon -> 0 is bounded by delta alone (total variation): no overflow."""
    from dp.calibration import binomial_delta, binomial_trials

    trials = binomial_trials(1e-300, 1e-6, 8)
    assert trials == binomial_trials(1e-160, 1e-6, 8)
    assert binomial_delta(trials, 8, 1e-300) <= 1e-6 < binomial_delta(trials - 2, 8, 1e-300)


def test_output_path_is_tried_not_guessed_from_permission_bits(tmp_path: Path) -> None:
    """check_output_path opens the file: a path that permission bits call writable but that cannot be created
    (under /proc, as root included) is refused at parse time; a path that can be written is left as it was (a
    new file made by the probe is removed, an existing one keeps its content)."""
    from scenarios.kit.cli import UsageError
    from scenarios.kit.outputs import check_output_path

    with pytest.raises(UsageError, match=r"^cannot write --plot /proc/x\.png: "):
        check_output_path("/proc/x.png", "--plot")
    fresh = tmp_path / "new.png"
    check_output_path(str(fresh), "--plot")
    assert not fresh.exists()
    kept = tmp_path / "old.csv"
    kept.write_text("a,b\n1,2\n")
    check_output_path(str(kept), "--table")
    assert kept.read_text() == "a,b\n1,2\n"


def test_a_result_file_that_fails_after_the_release_is_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A write that fails after the release (the directory removed meanwhile, a full disk) is one line, exit 2,
    saying the release was made -- not an internal error."""
    from scenarios.kit.cli import output_errors_stop_party
    from secure.errors import InputError

    with pytest.raises(InputError, match=r"^party 0: cannot write /gone/x\.csv: no such file or directory "
                                         r"\(the release above was made\)$"):
        with output_errors_stop_party():
            open("/gone/x.csv", "w", encoding="utf-8")
