"""One vocabulary across the jobs (issue 22, item 7): --domain C=LO:HI in every job with a numeric column,
--points for grid points everywhere (the old --grid-points a deprecated alias), --plot in ecdf."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from scenarios.kit.cli import UsageError


@pytest.mark.parametrize("module, argv, check", [
    ("scenarios.ustat", ["--stat", "gini", "--columns", "totChol", "--domain", "totChol=100:600:2"],
     lambda o: (o.query.specs[0].lower, o.query.specs[0].upper, o.query.specs[0].precision) == (100, 600, 2)),
    ("scenarios.rank_auc", ["--domain", "score=0:1:12"], lambda o: o.domain == (0.0, 1.0, 12)),
    ("scenarios.ecdf", ["--columns", "totChol", "--domain", "totChol=100:600"],
     lambda o: (o.query.lower, o.query.upper) == (100, 600)),
    ("scenarios.ecdf_fss", ["--columns", "totChol", "--domain", "totChol=100:600"],
     lambda o: (o.query.lower, o.query.upper) == (100, 600)),
    ("scenarios.roc_private", ["--domain", "score=0:1"], lambda o: (o.query.lower, o.query.upper) == (0, 1)),
    ("scenarios.hosmer_lemeshow", ["--domain", "score=0:1:12"], lambda o: o.query.precision == 12),
])
def test_every_job_with_a_numeric_column_takes_domain_column_equals(module: str, argv: list[str], check) -> None:
    assert check(importlib.import_module(module).parse_options(argv))


@pytest.mark.parametrize("module", ["scenarios.ecdf", "scenarios.ecdf_fss", "scenarios.roc_private",
                                    "scenarios.hosmer_lemeshow"])
def test_grid_points_are_points_in_every_job(module: str) -> None:
    options = importlib.import_module(module).parse_options(["--points", "64"])
    options = getattr(options, "query", options)
    assert getattr(options, "points", getattr(options, "grid_points", None)) == 64


def test_the_old_grid_points_name_still_works_with_one_warning_line(capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.hosmer_lemeshow import parse_options

    old = parse_options(["--grid-points", "512"])
    assert capsys.readouterr().err.splitlines() == [
        "warning: --grid-points is deprecated: use --points (the same option in every job)"]
    assert old.public() == parse_options(["--points", "512"]).public()
    assert capsys.readouterr().err == ""


def test_hosmer_lemeshow_domain_is_the_probabilities_range() -> None:
    from scenarios.hosmer_lemeshow import parse_options

    with pytest.raises(UsageError, match="predicted probabilities, on 0:1"):
        parse_options(["--domain", "score=0:100"])
    with pytest.raises(UsageError, match="--domain names column 'TenYearCHD'"):
        parse_options(["--domain", "TenYearCHD=0:1"])


@pytest.mark.parametrize("module", ["scenarios.ecdf", "scenarios.ecdf_fss"])
def test_both_ecdf_jobs_draw_their_plot(module: str, tmp_path: Path) -> None:
    """``--plot`` means the same in both ECDF jobs: party 0 draws the released curve as a PNG."""
    main = importlib.import_module(module).main
    figure = tmp_path / "ecdf.png"
    assert main(["--points", "64", "--plot", str(figure), "--no-log"]) == 0
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
