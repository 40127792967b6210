"""Word-document metrics on one letter generated here (``styled``), each case changing one thing in it: its
table, line spacing, fonts, equation, subscript, footer, centring, page breaks, lines, italics and strike-through.
A match scores 1, each kind of mismatch 0, as OSWorld."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docx import Document
from docx.enum.text import WD_BREAK, WD_PARAGRAPH_ALIGNMENT
from docx.oxml.ns import qn
from docx.shared import Pt

from osgym.tasks import metrics
from tests.metrics.conftest import Call, OSWorld


def styled(path: Path, **t: Any) -> str:
    """A short letter; each keyword changes one thing (see the cases below)."""
    doc = Document()
    first = doc.add_paragraph(t.get("first", "Dear committee,"))
    if t.get("centred"):
        first.alignment = WD_PARAGRAPH_ALIGNMENT.CENTER
    body = doc.add_paragraph()
    body.paragraph_format.line_spacing = t.get("spacing", 1.0)
    run = body.add_run("H")
    plain = body.add_run("2")
    plain.font.subscript = t.get("subscript", False)
    body.add_run("O is water.")
    note = doc.add_paragraph()
    emph = note.add_run("Note well")
    emph.italic = True
    emph.font.size = Pt(t.get("italic_size", 14))
    if t.get("equation"):
        run._r.append(run._r.makeelement(qn("w:object"), {}))
    for _ in range(t.get("page_breaks", 0)):
        note.add_run().add_break(WD_BREAK.PAGE)
    last = doc.add_paragraph()
    last.add_run("Old item").font.strike = t.get("strike", True)
    last.add_run(" removed").font.strike = t.get("strike_all", True)
    table = doc.add_table(rows=t.get("rows", 2), cols=2)
    for i, row in enumerate(table.rows):
        for j, c in enumerate(row.cells):
            c.text = t.get("cell", {}).get((i, j), f"{i}-{j}")
    if "footer" in t:
        doc.sections[0].footer.paragraphs[0].text = t["footer"]
    for p in doc.paragraphs:
        for r in p.runs:
            r.font.name = "Liberation Serif"
    run.font.name = t.get("font", "Liberation Serif")
    doc.save(str(path))
    return str(path)


RULES = object()  # the case's expected value is the rules dict given, not a document
FORMAT_CASES: list[tuple[str, str, dict[str, Any], Any, float]] = [
    ("compare_docx_tables", "same", {}, None, 1.0),
    ("compare_docx_tables", "cell-text", {"cell": {(1, 1): "changed"}}, None, 0.0),
    ("compare_docx_tables", "cell-spaces", {"cell": {(1, 1): " 1-1 "}}, None, 1.0),
    ("compare_docx_tables", "rows", {"rows": 3}, None, 0.0),
    ("compare_line_spacing", "same", {}, None, 1.0),
    ("compare_line_spacing", "spacing", {"spacing": 1.5}, None, 0.0),
    ("compare_line_spacing", "text", {"first": "Dear board,"}, None, 0.0),
    ("compare_font_names", "right-font", {}, {"font_name": "Liberation Serif"}, 1.0),
    ("compare_font_names", "wrong-font", {"font": "Arial"}, {"font_name": "Liberation Serif"}, 0.0),
    ("compare_insert_equation", "both", {"equation": True}, {"equation": True}, 1.0),
    ("compare_insert_equation", "missing", {}, {"equation": True}, 0.0),
    ("compare_insert_equation", "text", {"equation": True, "first": "Hi,"}, {"equation": True}, 0.0),
    ("compare_subscript_contains", "both", {"subscript": True}, {"subscript": True}, 1.0),
    ("compare_subscript_contains", "missing", {}, {"subscript": True}, 0.0),
    ("has_page_numbers_in_footers", "number", {"footer": "Page 1"}, RULES, 1.0),
    ("has_page_numbers_in_footers", "no-number", {"footer": "Page"}, RULES, 0.0),
    ("has_page_numbers_in_footers", "no-footer", {}, RULES, 0.0),
    ("is_first_line_centered", "centred", {"centred": True}, RULES, 1.0),
    ("is_first_line_centered", "left", {}, RULES, 0.0),
    ("contains_page_break", "one", {"page_breaks": 1}, {}, 1.0),
    ("contains_page_break", "none", {}, {}, 0.0),
    ("contains_page_break", "count", {"page_breaks": 2}, {"page_break_count": 2}, 1.0),
    ("contains_page_break", "wrong-count", {"page_breaks": 1}, {"page_break_count": 2}, 0.0),
    ("compare_docx_lines", "same", {}, None, 1.0),
    ("compare_docx_lines", "text", {"first": "Dear board,"}, None, 0.0),
    ("check_italic_font_size_14", "14pt", {}, None, 1.0),
    ("check_italic_font_size_14", "12pt", {"italic_size": 12}, None, 0.0),
    ("check_italic_font_size_14", "text", {"first": "Dear board,"}, None, 0.0),
    ("evaluate_strike_through_last_paragraph", "struck", {}, None, 1.0),
    ("evaluate_strike_through_last_paragraph", "partly", {"strike_all": False}, None, 0.0),
    ("evaluate_strike_through_last_paragraph", "text", {"first": "Dear board,"}, None, 0.0),
]


def _format_files(tmp: Path, case: tuple[str, str, dict[str, Any], Any, float]) -> tuple[str, Any]:
    func, name, tweaks, expected, _ = case
    folder = tmp / f"{func}-{name}"
    folder.mkdir()
    result = styled(folder / "result.docx", **tweaks)
    if expected is RULES:
        return result, None
    if expected is None or "font_name" in expected or "page_break_count" in expected or expected == {}:
        if expected is None:
            return result, styled(folder / "expected.docx")
        return result, expected
    return result, styled(folder / "expected.docx", **expected)


def _format_cases(func: str) -> list[tuple[str, str, dict[str, Any], Any, float]]:
    return [c for c in FORMAT_CASES if c[0] == func]


@pytest.mark.parametrize("case", FORMAT_CASES, ids=[f"{c[0]}-{c[1]}" for c in FORMAT_CASES])
def test_docx_formatting_metrics(case: tuple[str, str, dict[str, Any], Any, float], tmp_path: Path) -> None:
    assert metrics.score(case[0], *_format_files(tmp_path, case), {}) == case[4]


def _format_parity(func: str, osworld: OSWorld, tmp_path: Path) -> None:
    cases = _format_cases(func)
    assert cases, func
    ours, calls = [], []
    for case in cases:
        result, expected = _format_files(tmp_path, case)
        ours.append(metrics.score(func, result, expected, {}))
        calls.append(Call("docs", func, result, expected, {}))
    differ = [(c[1], o, t) for c, o, t in zip(cases, ours, osworld.scores(calls), strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def test_docx_formatting_metrics_score_0_for_a_missing_or_broken_result(tmp_path: Path) -> None:
    (tmp_path / "broken.docx").write_text("not a document")
    expected = styled(tmp_path / "expected.docx")
    for func in sorted({c[0] for c in FORMAT_CASES}):
        rules = {"font_name": "Arial"} if func == "compare_font_names" else expected
        for result in (None, str(tmp_path / "broken.docx")):
            assert metrics.score(func, result, rules, {}) == 0.0, func


# One test of each name, so the registry walk (test_metric_registry.py) finds each metric's own tests.
def test_compare_docx_tables(tmp_path: Path) -> None:
    _own("compare_docx_tables", tmp_path)


def test_compare_line_spacing(tmp_path: Path) -> None:
    _own("compare_line_spacing", tmp_path)


def test_compare_font_names(tmp_path: Path) -> None:
    _own("compare_font_names", tmp_path)


def test_compare_insert_equation(tmp_path: Path) -> None:
    _own("compare_insert_equation", tmp_path)


def test_compare_subscript_contains(tmp_path: Path) -> None:
    _own("compare_subscript_contains", tmp_path)


def test_has_page_numbers_in_footers(tmp_path: Path) -> None:
    _own("has_page_numbers_in_footers", tmp_path)


def test_is_first_line_centered(tmp_path: Path) -> None:
    _own("is_first_line_centered", tmp_path)


def test_contains_page_break(tmp_path: Path) -> None:
    _own("contains_page_break", tmp_path)


def test_compare_docx_lines(tmp_path: Path) -> None:
    _own("compare_docx_lines", tmp_path)


def test_check_italic_font_size_14(tmp_path: Path) -> None:
    _own("check_italic_font_size_14", tmp_path)


def test_evaluate_strike_through_last_paragraph(tmp_path: Path) -> None:
    _own("evaluate_strike_through_last_paragraph", tmp_path)


def _own(func: str, tmp_path: Path) -> None:
    cases = _format_cases(func)
    assert {c[4] for c in cases} == {0.0, 1.0}, f"{func} needs a matching and a mismatching case"
    got = [metrics.score(func, *_format_files(tmp_path, c), {}) for c in cases]
    assert got == [c[4] for c in cases], list(zip([c[1] for c in cases], got, strict=True))


def test_compare_docx_tables_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_docx_tables", osworld, tmp_path)


def test_compare_line_spacing_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_line_spacing", osworld, tmp_path)


def test_compare_font_names_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_font_names", osworld, tmp_path)


def test_compare_insert_equation_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_insert_equation", osworld, tmp_path)


def test_compare_subscript_contains_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_subscript_contains", osworld, tmp_path)


def test_has_page_numbers_in_footers_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("has_page_numbers_in_footers", osworld, tmp_path)


def test_is_first_line_centered_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("is_first_line_centered", osworld, tmp_path)


def test_contains_page_break_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("contains_page_break", osworld, tmp_path)


def test_compare_docx_lines_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("compare_docx_lines", osworld, tmp_path)


def test_check_italic_font_size_14_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("check_italic_font_size_14", osworld, tmp_path)


def test_evaluate_strike_through_last_paragraph_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _format_parity("evaluate_strike_through_last_paragraph", osworld, tmp_path)
