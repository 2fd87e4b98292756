"""One CLI convention (issue 12, item 3): help everywhere, one option format, optional packages, progress.

- ``-h`` and ``--help`` of every runnable scenario (found by walking ``scenarios/``): exit 0, the usage
  and the pointer to ``-H`` printed, every option with its ``help=``, MPyC never started, no party
  launched (``-M3 --output-file`` would leave ``party3_i.log`` files behind);
- ``--domain C=LO:HI`` in ``ecdf`` and ``rank_auc`` means what the bare ``LO:HI`` meant; the old
  ``--column`` is refused with a hint;
- a missing optional package stops the run with one line saying what to install (exit 2);
- the secure sort reports its progress stage by stage and sorts exactly as ``mpc.np_sort``.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


def runnable_scenarios() -> list[str]:
    """Every module under scenarios/ with an ``if __name__ == "__main__"`` block (a ``def main`` or a sweep's ``main``)."""
    found = []
    for path in sorted((ROOT / "scenarios").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if 'if __name__ == "__main__"' in text:
            found.append(".".join(path.relative_to(ROOT).with_suffix("").parts))
    return found


def test_walk_finds_the_known_scenarios() -> None:
    found = runnable_scenarios()
    for name in ("scenarios.ustat", "scenarios.ecdf", "scenarios.rank_auc", "scenarios.certificates",
                 "scenarios.bench_kendall", "scenarios.drills.faults", "scenarios.papers.ecdf_smoothing"):
        assert name in found
    assert len(found) >= 20


def _run(module: str, flags: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *flags], cwd=cwd, capture_output=True, text=True,
                          timeout=60, env=env)


def options_without_help(text: str) -> list[str]:
    """The options a ``-h`` text lists with no explanation: an option line (``  --x X``) with no text after
    it and no indented text on the next line."""
    lines = text.splitlines()
    bare = []
    for i, line in enumerate(lines):
        if line.startswith("  -"):
            parts = re.split(r"\s{2,}", line.strip(), maxsplit=1)
            follows = lines[i + 1] if i + 1 < len(lines) else ""
            if len(parts) == 1 and not re.match(r" {6,}\S", follows):
                bare.append(parts[0])
    return bare


_SHORT_HELP_OF_EACH = textwrap.dedent("""
    import contextlib, io, json, runpy, sys, warnings
    # a module another one imported already runs again as __main__: what runpy warns about is what is wanted
    warnings.filterwarnings("ignore", message=".* found in sys.modules after import of package",
                            category=RuntimeWarning)
    out = {}
    for module in sys.argv[1:]:
        sys.argv = [module, "-h"]
        stdout, stderr = io.StringIO(), io.StringIO()
        code = None
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            except SystemExit as stop:
                code = stop.code
        out[module] = [0 if code is None else code, stdout.getvalue(), stderr.getvalue()]
    print(json.dumps(out))
""")


def test_help_of_every_runnable_scenario(tmp_path: Path) -> None:
    """Exit 0 before MPyC starts, the usage and -H pointer printed, and every option with its ``help=``.

    ``-M3 --help --output-file`` runs each module in a fresh process (MPyC's runtime parses the command line
    when it is imported, so only a fresh process shows it never started); ``-h`` runs every module in turn in
    one more process (the same parser, the short flag)."""
    modules = runnable_scenarios()
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda module: (module, _run(module, ["-M3", "--help", "--output-file"], tmp_path)),
                             modules))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    short = subprocess.run([sys.executable, "-c", _SHORT_HELP_OF_EACH, *modules], cwd=tmp_path, capture_output=True,
                           text=True, timeout=120, env=env)
    assert short.returncode == 0, short.stderr[-2000:]
    outputs = [((module, "-h"), subprocess.CompletedProcess([module, "-h"], code, out, err))
               for module, (code, out, err) in json.loads(short.stdout).items()]
    assert [module for (module, _), _ in outputs] == modules
    for (module, flags), run in [((module, "-M3 --help --output-file"), run) for module, run in runs] + outputs:
        where = f"{module} {flags}"
        assert run.returncode == 0, f"{where}: exit {run.returncode}: {run.stderr[-300:]}"
        assert run.stdout.startswith("usage: "), where
        assert "-H" in run.stdout, where
        assert "Start MPyC runtime" not in run.stdout + run.stderr, where
        assert "Showing help message" not in run.stdout, where  # MPyC's runtime never parsed argv
        assert run.stderr == "", f"{where}: {run.stderr[-300:]}"
        assert not options_without_help(run.stdout), f"{where}: no help= on {options_without_help(run.stdout)}"
    assert not list(tmp_path.glob("party*.log")), "a party was launched"


def test_an_option_without_help_is_found() -> None:
    """The check above can fail: an option added with no ``help=`` is named; the description is the docstring's
    head (through its example block), not the option prose after it."""
    from scenarios.kit.cli import ScenarioParser

    parser = ScenarioParser(prog="x", description="Does x.\n\nRun it::\n\n    x -M3\n\nOptions: --a is ...\n")
    parser.add_argument("--explained", help="what it does")
    parser.add_argument("--bare", metavar="N")
    text = parser.format_help()
    assert options_without_help(text) == ["--bare N"]
    assert "x -M3" in text and "Options: --a" not in text


def test_domain_with_column_name_means_the_same_in_ecdf() -> None:
    from scenarios.ecdf import parse_options

    named = parse_options(["--columns", "sysBP", "--domain", "sysBP=80:300"])
    bare = parse_options(["--columns", "sysBP", "--domain", "80:300"])
    assert (named.query.lower, named.query.upper) == (80.0, 300.0)
    assert named.public() == bare.public()


def test_domain_with_column_name_means_the_same_in_rank_auc() -> None:
    from scenarios.rank_auc import parse_options

    named = parse_options(["--domain", "score=0:1:12"])
    bare = parse_options(["--domain", "0:1:12"])
    default = parse_options([])
    assert named.domain == bare.domain == (0.0, 1.0, 12)
    assert named.public() == bare.public()
    assert parse_options(["--domain", "score=0:1"]).domain == default.domain == (0.0, 1.0, 16)


@pytest.mark.parametrize("module, flags, message", [
    ("scenarios.rank_auc", ["--domain", "TenYearCHD=0:1"], "--domain names column 'TenYearCHD'"),
    ("scenarios.ecdf", ["--domain", "sysBP=80:300"], "--domain names column 'sysBP'"),
    ("scenarios.ecdf", ["--columns", "sysBP,diaBP"], "--columns expects one COLUMN"),
    ("scenarios.ecdf", ["--columns", "sysBP", "--domain", "sysBP=80"], "--domain expects COLUMN=LOW:HIGH"),
])
def test_domain_and_columns_mistakes_are_named(module: str, flags: list[str], message: str) -> None:
    import importlib

    from scenarios.kit.cli import UsageError

    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        importlib.import_module(module).parse_options(flags)


def test_old_column_spelling_is_refused_with_a_hint(capsys: pytest.CaptureFixture[str]) -> None:
    from scenarios.ecdf import main

    assert main(["--column", "sysBP"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: party 0: unknown option --column")
    assert "did you mean --columns?" in lines[0]


HIDE_TQDM = textwrap.dedent("""
    import sys
    from importlib.abc import MetaPathFinder

    class Refuse(MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "tqdm" or name.startswith("tqdm."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Refuse())
    sys.argv = ["ecdf_inverse", "--quick", "--no-log", "--results-dir", sys.argv[1]]
    from scenarios.papers.ecdf_inverse import main
    sys.exit(main())
""")


def test_missing_optional_package_is_one_line(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-c", HIDE_TQDM, str(tmp_path)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert lines[0].startswith("error: party 0: ")
    assert "needs the 'tqdm' package: pip install 'private-ustats[plot]'" in lines[0]
    assert not list(tmp_path.iterdir())  # stopped before running anything


def test_missing_package_met_while_running_is_named() -> None:
    from scenarios.kit.packages import missing_package_message

    assert missing_package_message(ModuleNotFoundError("x", name="matplotlib.figure")) == (
        "this scenario needs the 'matplotlib' package: pip install 'private-ustats[plot]'")
    assert missing_package_message(ModuleNotFoundError("x", name="numpy")) is None


def test_secure_sort_reports_progress_and_sorts_like_np_sort() -> None:
    from mpyc.runtime import mpc

    from secure.meter import set_progress_reporter
    from secure.ranking import sort_by_stages, sorting_stages

    reports: list[tuple[str, int, int]] = []
    values = np.random.default_rng(12).integers(0, 50, size=(2, 2, 37))

    async def sort_both() -> tuple[np.ndarray, np.ndarray]:
        secure = mpc.SecInt(16).array(values)
        key = lambda block: block[:, 0:1, :]  # noqa: E731
        staged = await sort_by_stages(secure, key, task="test sort", ahead=3)
        reference = mpc.np_sort(secure, axis=-1, key=key)
        return await mpc.output(staged), await mpc.output(reference)

    set_progress_reporter(lambda task, done, total: reports.append((task, done, total)))
    try:
        staged, reference = mpc.run(sort_both())
    finally:
        set_progress_reporter(None)
    stages = len(sorting_stages(37))
    assert stages == 6 * 7 // 2  # t = ceil(log2 37) = 6: t (t + 1) / 2 stages
    assert np.array_equal(staged, reference)
    assert [done for _, done, _ in reports] == list(range(stages + 1))
    assert {(task, total) for task, _, total in reports} == {("test sort", stages)}
