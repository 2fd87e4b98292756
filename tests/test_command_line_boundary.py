"""Only the launcher reads the command line (issue 23, item 3).

Below ``scenarios/`` (which parses argv), ``secure/launcher.py`` alone touches ``sys.argv`` and MPyC's private
``_get_arg_parser``; protocols get the run's settings from :func:`secure.session.run_settings`.  Read from the
code (``ast``), not from prose: a docstring may still say ``sys.argv``.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LAUNCHER = Path("secure/launcher.py")


def _uses(package: str, root: Path = ROOT) -> dict[Path, set[str]]:
    """Per module under ``package``: which of ``sys.argv``, ``_get_arg_parser``, ``_COMMAND_LINE`` and the
    launcher (an import from it) its code names."""
    found: dict[Path, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "argv" and isinstance(node.value, ast.Name) \
                    and node.value.id == "sys":
                names.add("sys.argv")
            elif isinstance(node, ast.alias) and node.name == "argv":  # from sys import argv
                names.add("sys.argv")
            elif isinstance(node, ast.ImportFrom) and node.module in ("secure.launcher", "secure.parties"):
                names.add("the launcher")  # where the command line is read: protocols ask secure.session instead
            attribute = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
            if attribute in ("_get_arg_parser", "_COMMAND_LINE"):
                names.add(attribute)
        if names:
            found[path.relative_to(root)] = names
    return found


def test_dp_and_smoothing_never_read_the_command_line() -> None:
    """Not directly, nor through the launcher (before: ``explicit_bit_length`` of ``secure.parties``)."""
    assert _uses("dp") == {}
    assert _uses("smoothing") == {}


def test_in_secure_only_the_launcher_reads_the_command_line() -> None:
    assert {path: names - {"the launcher"} for path, names in _uses("secure").items() if names - {"the launcher"}} \
        == {LAUNCHER: {"sys.argv", "_get_arg_parser"}}


def test_scenarios_leave_mpyc_parser_to_the_launcher() -> None:
    """``scenarios/`` may read ``sys.argv`` (it parses argv) and call the launcher, never MPyC's private parser nor
    a command-line global."""
    assert {path: names for path, names in _uses("scenarios").items() if names - {"sys.argv", "the launcher"}} == {}


def test_no_command_line_global_anywhere() -> None:
    assert not [path for package in ("dp", "secure", "scenarios", "smoothing", "tests")
                for path, names in _uses(package).items() if "_COMMAND_LINE" in names]


def test_the_checker_sees_what_it_looks_for(tmp_path: Path) -> None:
    """The checker itself: code is found, a docstring is not."""
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "code.py").write_text('"""reads sys.argv and _COMMAND_LINE in prose"""\nimport sys, mpyc\n'
                                                "words = sys.argv\nparser = mpyc._get_arg_parser()\n", encoding="utf-8")
    (tmp_path / "probe" / "state.py").write_text("from sys import argv\nfrom secure.launcher import run\n"
                                                 "_COMMAND_LINE = None\n", encoding="utf-8")
    (tmp_path / "probe" / "prose.py").write_text('"""reads sys.argv and _get_arg_parser in prose"""\n', encoding="utf-8")
    assert _uses("probe", tmp_path) == {Path("probe/code.py"): {"sys.argv", "_get_arg_parser"},
                                        Path("probe/state.py"): {"sys.argv", "the launcher", "_COMMAND_LINE"}}
