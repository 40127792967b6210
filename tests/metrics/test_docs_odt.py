"""``compare_docx_files`` on OpenDocument texts, as OSWorld reads them (odfpy): the body's paragraphs, then
the page styles' headers and footers; scored against OSWorld's own function on the same files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from osgym.suites.apps_documents.pages import odt_bytes
from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld

BODY = ["Minutes for Ada", "The team meets on Monday in Oslo. Bring a notebook."]
LINE = "Owl Society minutes for May 2024"
GOLD = odt_bytes(BODY, header=LINE)

CASES: list[tuple[str, bytes, dict[str, Any], float]] = [
    ("same", GOLD, {}, 1.0),
    ("same-strict", GOLD, {"ignore_blanks": False}, 1.0),
    ("no-header", odt_bytes(BODY), {}, 0.0),
    ("header-text-differs", odt_bytes(BODY, header="Owl Society minutes for June 2024"), {}, 0.0),
    ("body-changed", odt_bytes([BODY[0], "The team meets on Friday in Oslo."], header=LINE), {}, 0.0),
    # odfpy reads text, not where it sits: the same line as a footer, or as the body's last paragraph, passes
    # (so the header template also checks the page style with exact_match)
    ("footer-instead", odt_bytes(BODY, footer=LINE), {}, 1.0),
    ("last-paragraph-instead", odt_bytes([*BODY, LINE]), {}, 1.0),
    ("case-ignored", odt_bytes([b.upper() for b in BODY], header=LINE.upper()), {"ignore_case": True}, 1.0),
]


def _files(tmp: Path, name: str, result: bytes) -> tuple[str, str]:
    (tmp / name).mkdir()
    got, want = tmp / name / "result.odt", tmp / name / "expected.odt"
    got.write_bytes(result)
    want.write_bytes(GOLD)
    return str(got), str(want)


@pytest.mark.parametrize("name, result, options, want", CASES, ids=[c[0] for c in CASES])
def test_compare_docx_files_on_odt(name: str, result: bytes, options: dict[str, Any], want: float,
                                   tmp_path: Path) -> None:
    assert metrics.score("compare_docx_files", *_files(tmp_path, name, result), options) == want


def test_compare_docx_files_odt_against_other_kinds_or_broken_scores_0(tmp_path: Path) -> None:
    got, want = _files(tmp_path, "x", GOLD)
    docx = tmp_path / "result.docx"
    docx.write_bytes(b"PK not really")
    broken = tmp_path / "broken.odt"
    broken.write_text("not a document")
    for result in (str(docx), str(broken), str(tmp_path / "missing.odt")):
        assert metrics.score("compare_docx_files", result, want, {}) == 0.0
    assert metrics.score("compare_docx_files", got, str(docx), {}) == 0.0


def test_compare_docx_files_on_odt_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, result, options, _ in CASES:
        got, want = _files(tmp_path, name, result)
        ours.append(metrics.score("compare_docx_files", got, want, options))
        calls.append(Call("docs", "compare_docx_files", got, want, options))
    assert ours == osworld.scores(calls)
