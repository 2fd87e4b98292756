"""The shared ``--missing``/``--fill`` options (scenarios.kit.missing_values), in one process.

A repeated ``--fill`` accumulates in every job that takes it; a column given two different values is one
line; a fill value the embedded data declares that does not fit the job's column says what is wrong with
the column (not "fill value 55" the user never gave); the printed policy reads as a policy.
"""
from __future__ import annotations

import importlib
from typing import Any

import pytest

from scenarios.kit.cli import UsageError
from dp.report_text import policy_text
from scenarios.kit.missing_values import missing_policy, parse_fills
from secure.intake import ColumnSpec, MissingPolicy

#: every job that takes --missing/--fill: its module and the options that read a CSV with columns a, b
JOBS: list[tuple[str, list[str], list[str]]] = [
    ("hosmer_lemeshow", ["--columns", "a,b"], ["a=0.5", "b=0"]),
    ("roc_private", ["--columns", "a,b"], ["a=0.5", "b=0"]),
    ("rank_auc", ["--columns", "a,b"], ["a=0.5", "b=0"]),
    ("ustat", ["--stat", "kendall", "--columns", "a,b", "--domain", "a=0:1,b=0:1"], ["a=0.5", "b=0"]),
    ("ecdf", ["--columns", "a", "--domain", "a=0:1"], ["a=0.5"]),
    ("ecdf_fss", ["--columns", "a", "--domain", "a=0:1"], ["a=0.5"]),
]


def _parse(job: str, argv: list[str]) -> Any:
    return importlib.import_module(f"scenarios.{job}").parse_options(argv)


def test_parse_fills_accumulates_repeated_options() -> None:
    assert parse_fills(["p_hat=0.5", "outcome=0"]) == {"p_hat": 0.5, "outcome": 0.0}
    assert parse_fills(["p_hat=0.5,outcome=0", "region=north"]) == {"p_hat": 0.5, "outcome": 0.0,
                                                                    "region": "north"}
    assert parse_fills("p_hat=0.5,outcome=0") == {"p_hat": 0.5, "outcome": 0.0}
    assert parse_fills(["p_hat=0.5", "p_hat=0.50"]) == {"p_hat": 0.5}  # the same value twice is that value
    assert parse_fills(None) == {} and parse_fills([]) == {}


@pytest.mark.parametrize("fills", [["p_hat=0.5", "p_hat=0.6"], ["p_hat=0.5,p_hat=0.6"], ["r=north", "r=south"]])
def test_a_column_filled_twice_with_different_values_is_one_line(fills: list[str]) -> None:
    with pytest.raises(UsageError) as raised:
        parse_fills(fills)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("--fill gives column ") and "two values" in message


@pytest.mark.parametrize("job, argv, fills", JOBS, ids=[job for job, _, _ in JOBS])
def test_every_job_keeps_every_repeated_fill(job: str, argv: list[str], fills: list[str]) -> None:
    """``--fill a=0.5 --fill b=0`` is ``--fill a=0.5,b=0`` in every job (before: only the last was kept,
    so the job refused for want of a fill value for ``a``)."""
    repeated = [word for fill in fills for word in ("--fill", fill)]
    options = _parse(job, ["--data", "rows{pid}.csv", *argv, "--missing", "fill", *repeated])
    joined = _parse(job, ["--data", "rows{pid}.csv", *argv, "--missing", "fill", "--fill", ",".join(fills)])
    expected = tuple(sorted((name, float(value)) for name, value in (fill.split("=") for fill in fills)))
    def policy(parsed: object) -> object:  # the ECDF jobs keep it in their query
        return getattr(getattr(parsed, "query", None), "missing", None) or getattr(parsed, "missing")

    assert policy(options) == policy(joined) == MissingPolicy("fill", expected)


def test_a_job_refuses_two_values_for_one_column(capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.hosmer_lemeshow import main

    assert main(["--data", "rows{pid}.csv", "--columns", "a,b", "--missing", "fill", "--fill", "a=0.5",
                 "--fill", "b=0", "--fill", "a=0.25"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: party 0: --fill gives column 'a' two values, 0.5 and 0.25: give one"]


@pytest.mark.parametrize("job, argv, message", [
    ("roc_private", ["--columns", "age,sysBP"],
     "score column 'age' is declared numeric on [20, 90] in the embedded data framingham, outside the score "
     "domain [0, 1]: give --domain LO:HI"),
    ("roc_private", ["--columns", "age,sysBP", "--domain", "0:100"],
     "column 'sysBP' is not a 0/1 label column (embedded data framingham declares it numeric on [80, 300]): "
     "choose a column of 0/1 labels"),
    ("hosmer_lemeshow", ["--columns", "age,sysBP"],
     "score column 'age' is declared numeric on [20, 90] in the embedded data framingham, outside the score "
     "domain [0, 1]: choose a column of predicted probabilities"),
    ("hosmer_lemeshow", ["--columns", "score,sysBP"],
     "column 'sysBP' is not a 0/1 label column (embedded data framingham declares it numeric on [80, 300]): "
     "choose a column of 0/1 labels"),
])
def test_an_embedded_column_that_does_not_fit_is_named(job: str, argv: list[str], message: str) -> None:
    """No --fill given: the line is about the column's declaration, not about a fill value."""
    with pytest.raises(UsageError) as raised:
        _parse(job, argv)
    assert str(raised.value) == message


def test_a_users_fill_outside_the_domain_is_still_about_the_fill() -> None:
    specs = [ColumnSpec("score", 0.0, 1.0), ColumnSpec.categorical("TenYearCHD", (0, 1))]
    with pytest.raises(UsageError, match=r"^fill value 2 for column 'score' lies outside its declared domain"):
        missing_policy(None, ["score=2"], specs, dataset="framingham")
    # the embedded data's own declaration of an unfit column, without roles: generic words and remedies
    with pytest.raises(UsageError) as raised:
        missing_policy(None, None, [ColumnSpec("age", 0.0, 10.0)], dataset="framingham")
    assert str(raised.value) == ("column 'age' is declared numeric on [20, 90] in the embedded data framingham, "
                                 "outside the declared domain [0, 10]: give --domain age=LO:HI or --fill age=V")
    # a user's --fill for the unfit column replaces the declared one: then it is checked as the user's
    assert missing_policy(None, ["age=5"], [ColumnSpec("age", 0.0, 10.0)], dataset="framingham").fills == \
        (("age", 5.0),)


def test_the_policy_line_reads_as_a_policy() -> None:
    """Nothing says a cell was filled (that count stays at its party): the line states the rule."""
    fill = MissingPolicy("fill", (("TenYearCHD", 0.0), ("score", 0.5)))
    assert policy_text(fill) == "fill a missing cell with the declared value: TenYearCHD=0, score=0.5"
    assert policy_text(MissingPolicy()) == "refuse: a missing cell stops the run (none found)"
