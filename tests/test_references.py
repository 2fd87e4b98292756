"""What the code cites is in the repository: every ``docs/<page>.md`` a module names exists, and no module
names the team's working notes (``DESIGN``), which users do not have."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("secure", "dp", "smoothing", "scenarios", "tests")


def _sources() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def test_every_cited_docs_page_exists() -> None:
    cited = {match for path in _sources() for match in re.findall(r"docs/[\w.-]+\.md", path.read_text("utf-8"))}
    assert cited, "no module cites a docs/ page"
    assert sorted(page for page in cited if not (ROOT / page).is_file()) == []


def test_no_module_cites_a_file_the_repository_lacks() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{number}" for path in _sources() if path.name != "test_references.py"
                 for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1)
                 if re.search(r"\bDESIGN\b", line)]
    assert offenders == []
