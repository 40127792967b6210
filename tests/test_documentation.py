"""The README stays a front door, and the documentation's links and settings table stay true to the tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from osgym.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    body = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)  # a "# comment" in a code block is no heading
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", body, flags=re.M)}


def test_the_readme_is_a_front_door() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 150, len(lines)
    for page in ("architecture", "operations", "osworld", "tasks", "serving", "dataset", "security"):
        assert f"(docs/{page}.md)" in "\n".join(lines), page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        assert resolved.exists(), f"{page.name}: {target} does not exist"
        if anchor and resolved.suffix == ".md":
            assert anchor in _anchors(resolved), f"{page.name}: {target} names no heading of {resolved.name}"


def test_the_settings_table_lists_every_setting() -> None:
    table = (ROOT / "docs" / "operations.md").read_text()
    for name, field in Settings.model_fields.items():
        variable = field.validation_alias if isinstance(field.validation_alias, str) else f"OSGYM_{name.upper()}"
        assert f"| `{variable}` |" in table, variable
