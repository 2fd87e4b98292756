"""Complete U-statistics on the histogram and sort paths (issue 13): grids, planner, exactness.

At epsilon = 1e9 each complete release equals the exact statistic (scikit-learn, scipy, brute force
over all pairs or triples) on data with many ties, in one process, with ``-M1`` and with ``-M3``; the
declared grids (recording resolution) hold the embedded data exactly; the planner chooses from public
parameters and refuses what cannot run with the modelled memory and time.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from conftest import read_record, run_command, scenario_command, small_table
from dp.umpc.complete import complete_bit_length, complete_max_degree, complete_plans, plan_for, simulate_complete
from dp.umpc.planner import HISTOGRAM_MEMORY_LIMIT, plan_path
from dp.umpc.protocol import UStatQuery
from secure.columns import ColumnSpec, numeric
from secure.kernels import get_kernel
from scenarios.kit.datasets import declared_specs, load_embedded
from scenarios.ustat import main
from test_exactness import ARGS as EXACTNESS_ARGS
from test_exactness import REFERENCE

#: kernel columns and declared domains (test_exactness's), Kendall's with the 0.5 mmHg recording resolution
#: (the small table is on that grid), so that its histogram is 441 x 241
ARGS = {**EXACTNESS_ARGS,
        "kendall": ["--columns", "sysBP,diaBP", "--domain", "sysBP=80:300:8:0.5,diaBP=40:160:8:0.5"]}
PATHS = [(stat, "histogram") for stat in sorted(ARGS)] + [("auc", "sort"), ("gini", "sort")]


def _exact(stat: str) -> float:
    header, values = small_table()
    return float(REFERENCE[stat]({name: values[:, j] for j, name in enumerate(header)}))


def _argv(stat: str, path: str, csv: Path, out: Path) -> list[str]:
    return ["--stat", stat, "--data", str(csv), *ARGS[stat], "--epsilon", "1e9", "--pairs", "all",
            "--path", path, "--json", str(out)]


# ------------------------------------------------------------------------------------------ grids


def test_a_declared_step_makes_the_grid_and_snaps_values() -> None:
    spec = numeric("sysBP", lower=80, upper=300, bits=8, step=0.5)
    assert spec.grid_size == 441 and spec.grid_values()[:3].tolist() == [0, 128, 256]
    encoded = spec.encode(np.array([80.0, 120.26, 120.24, 300.0]))
    assert encoded.tolist() == [0, 40 * 2 * 128 + 128, 40 * 2 * 128, 440 * 128]  # 120.26 -> 120.5
    assert spec.grid_index(encoded).tolist() == [0, 81, 80, 440]
    plain = numeric("age", lower=20, upper=90)
    assert plain.grid_size == 71 and plain.grid_values().tolist() == list(range(71))


@pytest.mark.parametrize("kwargs, message", [
    ({"step": 0.3}, "whole steps"),
    ({"step": -1.0}, "positive"),
    ({"step": 0.25, "bits": 1}, "finer than its 1 fractional bits"),
])
def test_a_bad_step_is_refused(kwargs: dict, message: str) -> None:
    arguments = {"lower": 0.0, "upper": 10.0, "bits": 4, **kwargs}
    with pytest.raises(ValueError, match=message):
        numeric("x", **arguments)


def test_off_grid_values_are_refused_by_grid_index() -> None:
    spec = ColumnSpec("x", 0.0, 10.0, 4, step=0.5)
    with pytest.raises(ValueError, match="off its declared grid"):
        spec.grid_index(np.array([3]))


@pytest.mark.parametrize("dataset", ["framingham", "heart_disease_uci"])
def test_the_embedded_data_lie_on_their_declared_grids(dataset: str) -> None:
    """Declaring the recording resolution changes no embedded value: each is a grid point."""
    table = load_embedded(dataset)
    specs = declared_specs(dataset, [c for c in table.header])
    stepped = {name: spec for name, spec in specs.items() if spec.step is not None}
    assert stepped  # sysBP, diaBP, BMI / oldpeak
    for name, spec in stepped.items():
        position = table.header.index(name)
        values = np.array([float(row[position]) for row in table.rows if row[position] not in ("NA", "", "?")])
        inside = values[(values >= spec.lower) & (values <= spec.upper)]
        plain = np.rint((inside - spec.lower) * 2 ** spec.precision).astype(np.int64)
        assert np.array_equal(spec.encode(inside), plain), name


def test_the_demo_kendall_runs_on_a_441_by_241_grid() -> None:
    specs = declared_specs("framingham", ["sysBP", "diaBP"])
    assert (specs["sysBP"].grid_size, specs["diaBP"].grid_size) == (441, 241)


def test_domain_option_takes_a_step() -> None:
    from scenarios.kit.cli import UsageError
    from scenarios.kit.options import parse_domains, parse_steps

    text = "sysBP=80:300:8:0.5,age=20:90,bmi=15:60::0.01"
    assert parse_domains(text) == {"sysBP": (80.0, 300.0, 8), "age": (20.0, 90.0, None), "bmi": (15.0, 60.0, None)}
    assert parse_steps(text) == {"sysBP": 0.5, "bmi": 0.01}
    with pytest.raises(UsageError, match="step of column 'x' must be positive"):
        parse_steps("x=0:1:2:0")


# ---------------------------------------------------------------------------------------- planner


def _kendall_query(step: float | None, **kwargs: object) -> UStatQuery:
    specs = (ColumnSpec("sysBP", 80, 300, 8, step=step), ColumnSpec("diaBP", 40, 160, 8, step=step))
    return UStatQuery(kernel=get_kernel("kendall"), specs=specs, epsilon=1.0, **kwargs)  # type: ignore[arg-type]


def test_the_planner_picks_the_histogram_for_the_demo_kendall_and_says_why() -> None:
    plan = plan_for(_kendall_query(0.5, tuples=8476), rows=4238, parties=3, pairs="auto")
    assert plan.path == "histogram"
    assert set(plan.costs) == {"histogram", "sort", "tuples"} and "modelled" in plan.describe()
    assert plan.costs["histogram"].seconds < plan.costs["tuples"].seconds
    assert not plan.costs["sort"].available  # no rank-sum form for Kendall


def test_at_eight_fractional_bits_the_grid_is_too_large_and_sampling_wins() -> None:
    plan = plan_for(_kendall_query(None, tuples=8476), rows=4238, parties=3, pairs="auto")
    assert plan.path == "tuples" and plan.tuples == 8476
    assert plan.costs["histogram"].memory > HISTOGRAM_MEMORY_LIMIT


def test_a_forced_histogram_on_a_huge_grid_is_refused_with_the_modelled_cost() -> None:
    with pytest.raises(ValueError, match=r"56321 x 30721 grid is too large \(modelled .* GiB per party and .* s"):
        plan_for(_kendall_query(None, path="histogram"), rows=4238, parties=3, pairs="all")


def test_a_forced_sort_needs_a_rank_sum_form() -> None:
    with pytest.raises(ValueError, match="no rank-sum form for 'kendall'"):
        plan_for(_kendall_query(0.5, path="sort"), rows=4238, parties=3, pairs="all")


def test_complete_path_and_sampled_tuples_contradict() -> None:
    with pytest.raises(ValueError, match="contradicts"):
        plan_for(_kendall_query(0.5, path="histogram", tuples=100), rows=4238, parties=3, pairs="count")


def test_the_sort_wins_only_on_grids_too_fine_for_a_histogram() -> None:
    kernel = get_kernel("gini", precision=30)
    fine = (ColumnSpec("x", 0.0, 1.0, 30),)
    assert plan_path(kernel, fine, rows=2000, parties=3, choice="auto").path == "sort"
    coarse = (ColumnSpec("x", 0.0, 1.0, 8),)
    assert plan_path(get_kernel("gini", precision=8), coarse, rows=2000, parties=3).path == "histogram"


def test_the_complete_sensitivity_is_the_tuples_one_row_is_in() -> None:
    """C(n-1, k-1) Delta_f per released sum; for VUS floor((n-1)^2/4) Delta_f (only triples of three classes
    count).  tests/test_audit_complete.py drives these plans on worst-case neighbours and mutates them."""
    vus = UStatQuery(kernel=get_kernel("vus"), specs=(ColumnSpec("s", 0, 1, 4), ColumnSpec("c", 0, 2, 0)),
                     epsilon=1.0, noise="parties")
    assert complete_max_degree(50, 3) == math.comb(49, 2)
    assert complete_max_degree(50, 3, vus.kernel) == 49 ** 2 // 4 == 600
    assert [plan.sensitivity for plan in complete_plans(vus, 50, 3, 1)] == [600 * 12, 600]
    kendall = _kendall_query(0.5, noise="parties")
    assert [plan.sensitivity for plan in complete_plans(kendall, 50, 3, 1)] == [49 * 2]


def test_the_bit_length_grows_with_n() -> None:
    query = _kendall_query(0.5)
    small = complete_bit_length(query, 4238, "histogram", complete_plans(query, 4238, 3, 1))
    large = complete_bit_length(query, 10 ** 6, "histogram", complete_plans(query, 10 ** 6, 3, 1))
    assert small < large and 2 ** (small - 2) > math.comb(4238, 2) and 2 ** (large - 2) > math.comb(10 ** 6, 2)


# ------------------------------------------------------------------------------------- exactness


@pytest.mark.parametrize("stat", sorted(ARGS))
def test_the_simulated_complete_release_equals_the_exact_statistic(stat: str) -> None:
    from scenarios.ustat import parse_options

    header, values = small_table()
    columns = ARGS[stat][1].split(",")
    table = values[:, [header.index(c) for c in columns]]
    base = parse_options(["--stat", stat, *ARGS[stat], "--data", "x.csv", "--pairs", "all",
                          "--path", "histogram", "--epsilon", "1e9"]).query
    simulated = simulate_complete(base, [table[0::3], table[1::3], table[2::3]], threshold=1,
                                  noise_rng=np.random.default_rng(3))
    assert simulated.exact_on_tuples == pytest.approx(_exact(stat), abs=1e-12)
    assert simulated.estimates[0] == pytest.approx(_exact(stat), abs=1e-6)


@pytest.mark.parametrize("stat, path", PATHS)
def test_no_flags_complete_release_equals_exact_statistic(stat: str, path: str, small_csv: Path,
                                                          tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    assert main(_argv(stat, path, small_csv, out)) == 0
    record = read_record(out)
    assert record["path"] == path and record["sampling"] == "all"
    assert record["n"] == 40 and record["pairs"] == (780 if stat != "vus" else 9880)
    assert record["max_degree"] == (39 if stat != "vus" else 39 ** 2 // 4)
    assert record["estimate"] == pytest.approx(_exact(stat), abs=1e-12)


@pytest.mark.parametrize("stat, path", PATHS)
def test_async_single_party_complete_release_equals_exact_statistic(stat: str, path: str, small_csv: Path,
                                                                    tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = run_command(scenario_command("ustat", "-M1", "--no-log", *_argv(stat, path, small_csv, out)))
    assert run.code == 0, run.stderr
    assert read_record(out)["estimate"] == pytest.approx(_exact(stat), abs=1e-12)


@pytest.mark.multiparty
@pytest.mark.parametrize("stat, path", PATHS)
def test_three_party_complete_release_equals_exact_statistic(stat: str, path: str, small_csv: Path,
                                                             tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    run = run_command(scenario_command("ustat", "-M3", "--no-log", *_argv(stat, path, small_csv, out)))
    assert run.code == 0, run.stderr
    record = read_record(out)
    assert record["parties"] == 3 and record["n"] == 40 and record["path"] == path
    assert record["estimate"] == pytest.approx(_exact(stat), abs=1e-12)
    assert f"path {path}" in run.stdout and "modelled" in run.stdout


def test_a_bit_length_too_short_for_the_sums_is_refused_before_sharing(small_csv: Path, tmp_path: Path) -> None:
    run = run_command(scenario_command("ustat", "-M1", "--no-log", "-L", "12",
                                       *_argv("gini", "histogram", small_csv, tmp_path / "r.json")))
    assert run.code == 2
    assert "needs" in run.stderr and "-L 12" in run.stderr and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_forced_histogram_on_a_huge_grid_exits_2_with_one_line(small_csv: Path, tmp_path: Path) -> None:
    argv = ["--stat", "kendall", "--data", str(small_csv), "--columns", "sysBP,diaBP", "--domain",
            "sysBP=80:300:8,diaBP=40:160:8", "--path", "histogram", "--pairs", "all"]
    run = run_command(scenario_command("ustat", "-M1", "--no-log", *argv))
    assert run.code == 2 and "GiB per party" in run.stderr and "Traceback" not in run.stderr


def test_sampled_pairs_with_a_complete_path_is_a_usage_error(small_csv: Path) -> None:
    assert main(["--stat", "gini", "--data", str(small_csv), "--columns", "totChol", "--domain",
                 "totChol=100:700:0", "--path", "histogram", "--pairs", "2n"]) == 2


# -------------------------------------------------------------------------------- a user's kernel


def test_a_users_degree_2_kernel_takes_the_generic_histogram_path() -> None:
    """A kernel the suite does not know (any symmetric degree-2 kernel): the planner offers the generic
    histogram form on small grids, and the complete release equals brute force over all pairs."""
    from test_histograms import WithinBand

    specs = (ColumnSpec("x", 0, 20, 0), ColumnSpec("y", 0, 3, 0))
    query = UStatQuery(kernel=WithinBand(), specs=specs, epsilon=1e9, noise="parties", path="histogram")
    plan = plan_for(query, rows=60, parties=3, pairs="all")
    assert plan.path == "histogram" and not plan.costs["sort"].available
    generator = np.random.default_rng(5)
    table = np.column_stack([generator.integers(0, 21, 60), generator.integers(0, 4, 60)]).astype(float)
    simulated = simulate_complete(query, [table[0::3], table[1::3], table[2::3]], threshold=1,
                                  noise_rng=np.random.default_rng(1))
    first, second = np.triu_indices(60, 1)
    weight, pairs = WithinBand().plaintext([table[first].astype(np.int64), table[second].astype(np.int64)])
    assert simulated.exact_on_tuples == pytest.approx(weight.sum() / pairs.sum(), abs=1e-12)
    too_fine = (ColumnSpec("x", 0, 2000, 0), ColumnSpec("y", 0, 3, 0))
    with pytest.raises(ValueError, match="at most 4096 cells"):
        plan_for(UStatQuery(kernel=WithinBand(), specs=too_fine, epsilon=1.0, path="histogram"), rows=60,
                 parties=3, pairs="all")
