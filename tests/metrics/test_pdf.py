"""``check_pdf_pages`` on PDFs generated here: the right page count scores 1, a wrong one 0, as OSWorld."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfWriter

from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld


def pdf(path: Path, pages: int) -> str:
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    with open(path, "wb") as f:
        writer.write(f)
    return str(path)


CASES: list[tuple[str, int, dict[str, Any], float]] = [
    ("three-eq", 3, {"relation": "eq", "ref_value": 3}, 1.0),
    ("two-eq", 2, {"relation": "eq", "ref_value": 3}, 0.0),
    ("four-ge", 4, {"relation": "ge", "ref_value": 3}, 1.0),
    ("two-ge", 2, {"relation": "ge", "ref_value": 3}, 0.0),
    ("one-lt", 1, {"relation": "lt", "ref_value": 2}, 1.0),
]


@pytest.mark.parametrize("name, pages, rules, want", CASES, ids=[c[0] for c in CASES])
def test_check_pdf_pages(name: str, pages: int, rules: dict[str, Any], want: float, tmp_path: Path) -> None:
    assert metrics.score("check_pdf_pages", pdf(tmp_path / f"{name}.pdf", pages), rules, {}) == want


def test_check_pdf_pages_missing_or_broken_result_scores_0(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_text("not a pdf")
    for result in (None, str(tmp_path / "broken.pdf")):
        assert metrics.score("check_pdf_pages", result, {"relation": "eq", "ref_value": 1}, {}) == 0.0


def test_check_pdf_pages_rejects_an_unknown_relation(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="relation: expected one of eq, ne, lt, le, gt, ge, actual '__class__'"):
        metrics.score("check_pdf_pages", pdf(tmp_path / "a.pdf", 1), {"relation": "__class__", "ref_value": 1}, {})


def test_check_pdf_pages_parity(osworld: OSWorld, tmp_path: Path) -> None:
    paths = [pdf(tmp_path / f"{name}.pdf", pages) for name, pages, _, _ in CASES]
    ours = [metrics.score("check_pdf_pages", p, c[2], {}) for p, c in zip(paths, CASES, strict=True)]
    theirs = osworld.scores([Call("pdf", "check_pdf_pages", p, c[2], {}) for p, c in zip(paths, CASES, strict=True)])
    assert theirs == ours
