"""Word-document metrics on documents generated here: ``compare_docx_files``, then the metrics whose cases each
make their own pair of files (tab stops, images, highlighting, default font, spacing, first lines, case
conversion, references). A match scores 1, each kind of mismatch 0, as OSWorld; the formatting metrics scored
on one styled letter are in test_docs_formatting.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docx import Document
from docx.enum.text import WD_COLOR_INDEX, WD_TAB_ALIGNMENT
from docx.shared import Inches
from PIL import Image

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.spec import load_task
from tests.metrics.conftest import Call, OSWorld

TEXT = ["Dear committee,", "Please find the report attached.", "Kind regards,", "Ada"]


def document(path: Path, paragraphs: list[str]) -> str:
    doc = Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    doc.save(str(path))
    return str(path)


DOCX_CASES: list[tuple[str, list[str], dict[str, Any], float | str]] = [
    ("same", TEXT, {}, 1.0),
    ("word-differs", [*TEXT[:3], "Bob"], {}, 0.0),
    ("paragraph-missing", TEXT[:3], {}, 0.0),
    ("extra-spaces", ["Dear  committee, ", *TEXT[1:]], {}, 1.0),
    ("extra-spaces-strict", ["Dear  committee, ", *TEXT[1:]], {"ignore_blanks": False}, 0.0),
    ("case", [t.upper() for t in TEXT], {}, 0.0),
    ("case-ignored", [t.upper() for t in TEXT], {"ignore_case": True}, 1.0),
    ("case-ignored-strict", [t.upper() for t in TEXT], {"ignore_case": True, "ignore_blanks": False}, 1.0),
    ("order", list(reversed(TEXT)), {}, 0.0),
    ("order-ignored", list(reversed(TEXT)), {"ignore_order": True}, 1.0),
    ("blank-paragraph", [TEXT[0], "", *TEXT[1:]], {}, 1.0),
    ("blank-paragraph-strict", [TEXT[0], "", *TEXT[1:]], {"ignore_blanks": False}, 0.0),
    ("blank-paragraph-deleted", [TEXT[0], "", *TEXT[1:]], {"ignore_blanks": False, "delete_empty_lines": True}, 1.0),
    ("fuzzy-close", [*TEXT[:3], "Adam"], {"fuzzy_match": True}, "between"),
    ("fuzzy-per-paragraph", [*TEXT[:3], "Adam"], {"fuzzy_match": True, "ignore_blanks": False}, "between"),
    ("content-only", [*TEXT[:3], "Adam"], {"content_only": True}, "between"),
    ("content-only-same", TEXT, {"content_only": True}, 1.0),
]


def _files(tmp: Path, name: str, paragraphs: list[str]) -> tuple[str, str]:
    folder = tmp / name
    folder.mkdir()
    return document(folder / "result.docx", paragraphs), document(folder / "expected.docx", TEXT)


@pytest.mark.parametrize("name, paragraphs, options, want", DOCX_CASES, ids=[c[0] for c in DOCX_CASES])
def test_compare_docx_files(name: str, paragraphs: list[str], options: dict[str, Any], want: float | str,
                            tmp_path: Path) -> None:
    got = metrics.score("compare_docx_files", *_files(tmp_path, name, paragraphs), options)
    if want == "between":  # a similarity: close text scores high, but not a match
        assert 0.8 < got < 1.0
    else:
        assert got == want


def test_compare_docx_files_missing_broken_or_other_format_scores_0(tmp_path: Path) -> None:
    expected = document(tmp_path / "expected.docx", TEXT)
    (tmp_path / "broken.docx").write_text("not a document")
    (tmp_path / "notes.txt").write_text("\n".join(TEXT))
    for result in (None, str(tmp_path / "broken.docx"), str(tmp_path / "notes.txt")):
        assert metrics.score("compare_docx_files", result, expected, {}) == 0.0


def test_compare_docx_files_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, paragraphs, options, _ in DOCX_CASES:
        result, expected = _files(tmp_path, name, paragraphs)
        ours.append(metrics.score("compare_docx_files", result, expected, options))
        calls.append(Call("docs", "compare_docx_files", result, expected, options))
    theirs = osworld.scores(calls)
    differ = [(c[0], o, t) for c, o, t in zip(DOCX_CASES, ours, theirs, strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def test_bad_docx_option_fails_at_load() -> None:
    with pytest.raises(TaskLoadError, match="'compare_docx_files': option ignore_spaces"):
        load_task({"id": "t-docx", "instruction": "x",
                   "evaluator": {"func": "compare_docx_files", "options": {"ignore_spaces": True}}})


def tabbed(path: Path, at: float = 3.0, align: WD_TAB_ALIGNMENT = WD_TAB_ALIGNMENT.RIGHT,
           first: str = "Total due\t12") -> str:
    doc = Document()
    for text in (first, "Paid\t5"):
        p = doc.add_paragraph(text)
        p.paragraph_format.tab_stops.add_tab_stop(Inches(at), align)
    doc.save(str(path))
    return str(path)


def with_image(path: Path, colour: tuple[int, int, int] | None = (200, 30, 30), blank_lines: int = 0,
               highlight: str | None = None, text: str = "A caption") -> str:
    doc = Document()
    para = doc.add_paragraph()
    para.add_run(text)
    marked = para.add_run(" marked")
    if highlight is not None:
        marked.font.highlight_color = getattr(WD_COLOR_INDEX, highlight)
    for _ in range(blank_lines):
        doc.add_paragraph("")
    doc.add_paragraph("Second line")
    holder = doc.paragraphs[0].add_run()  # the run that holds the picture, or stays empty
    if colour is not None:
        img = path.with_suffix(".png")
        Image.new("RGB", (40, 30), colour).save(img)
        holder.add_picture(str(img), width=Inches(1))
    doc.save(str(path))
    return str(path)


def settings(path: Path, font: str | None) -> str:
    item = ("" if font is None else
            '<item oor:path="/org.openoffice.Office.Writer/DefaultFont"><prop oor:name="Standard" oor:op="fuse">'
            f"<value>{font}</value></prop></item>")
    path.write_text('<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry"'
                    f' xmlns:xs="http://www.w3.org/2001/XMLSchema">{item}</oor:items>')
    return str(path)


def spaced(path: Path, spacing: tuple[float, ...]) -> str:
    doc = Document()
    for i, s in enumerate(spacing):
        doc.add_paragraph(f"Part {i}").paragraph_format.line_spacing = s
    doc.save(str(path))
    return str(path)


REFS = [*TEXT, "References", "Smith, A. (2020). Paper one. Journal of Tests.", "",
        "Doe, B. (2021). Paper two. Journal of Tests."]


def cased(path: Path, body: str, cell: str) -> str:
    doc = Document()
    doc.add_paragraph(body)
    doc.add_table(rows=1, cols=1).rows[0].cells[0].text = cell
    doc.save(str(path))
    return str(path)


Maker = Any  # (folder) -> (result, expected)
MORE_CASES: list[tuple[str, str, Maker, dict[str, Any], float | str]] = [
    ("check_tabstops", "same", lambda d: (tabbed(d / "r.docx"), tabbed(d / "e.docx")), {}, 1.0),
    ("check_tabstops", "moved", lambda d: (tabbed(d / "r.docx", at=3.5), tabbed(d / "e.docx")), {}, "between"),
    ("check_tabstops", "aligned-otherwise", lambda d: (tabbed(d / "r.docx", align=WD_TAB_ALIGNMENT.LEFT),
                                                       tabbed(d / "e.docx")), {}, 0.0),
    ("check_tabstops", "words", lambda d: (tabbed(d / "r.docx"), tabbed(d / "e.docx")),
     {"word_number_split_by_tabstop": 2, "index": 0}, 0.0),
    ("check_tabstops", "words-right", lambda d: (tabbed(d / "r.docx", first="Due\t12"), tabbed(d / "e.docx")),
     {"word_number_split_by_tabstop": 1, "index": 0}, 1.0),
    ("compare_contains_image", "both", lambda d: (with_image(d / "r.docx"), with_image(d / "e.docx")), {}, 1.0),
    ("compare_contains_image", "missing", lambda d: (with_image(d / "r.docx", colour=None), with_image(d / "e.docx")),
     {}, 0.0),
    ("compare_docx_images", "same", lambda d: (with_image(d / "r.docx"), with_image(d / "e.docx")), {}, 1.0),
    ("compare_docx_images", "other-pixels", lambda d: (with_image(d / "r.docx", colour=(0, 0, 255)),
                                                       with_image(d / "e.docx")), {}, 0.0),
    ("compare_docx_images", "missing", lambda d: (with_image(d / "r.docx", colour=None), with_image(d / "e.docx")),
     {}, 0.0),
    ("compare_docx_files_and_ignore_new_lines", "blank-lines",
     lambda d: (with_image(d / "r.docx", blank_lines=3), with_image(d / "e.docx")), {}, 1.0),
    ("compare_docx_files_and_ignore_new_lines", "text",
     lambda d: (with_image(d / "r.docx", text="A title"), with_image(d / "e.docx")), {}, 0.0),
    ("compare_docx_files_and_ignore_new_lines", "blank-lines-strict",
     lambda d: (with_image(d / "r.docx", blank_lines=2), with_image(d / "e.docx")), {"ignore_blanks": False}, 1.0),
    ("compare_docx_files_and_ignore_new_lines", "spaces-strict",
     lambda d: (with_image(d / "r.docx", text="A  caption"), with_image(d / "e.docx")), {"ignore_blanks": False}, 0.0),
    ("compare_highlighted_text", "same", lambda d: (with_image(d / "r.docx", highlight="YELLOW"),
                                                    with_image(d / "e.docx", highlight="BRIGHT_GREEN")), {}, 1.0),
    ("compare_highlighted_text", "missing", lambda d: (with_image(d / "r.docx"),
                                                       with_image(d / "e.docx", highlight="YELLOW")), {}, 0.0),
    ("find_default_font", "set", lambda d: (settings(d / "r.xcu", "Liberation Sans"), {"font_name": "Liberation Sans"}),
     {}, 1.0),
    ("find_default_font", "other", lambda d: (settings(d / "r.xcu", "DejaVu Sans"), {"font_name": "Liberation Sans"}),
     {}, 0.0),
    ("find_default_font", "unset", lambda d: (settings(d / "r.xcu", None), {"font_name": "Liberation Sans"}), {}, 0.0),
    ("evaluate_spacing", "right", lambda d: (spaced(d / "r.docx", (1.0, 2.0, 1.5)), None), {}, 1.0),
    ("evaluate_spacing", "wrong", lambda d: (spaced(d / "r.docx", (1.0, 1.5, 1.5)), None), {}, 0.0),
    ("evaluate_spacing", "too-short", lambda d: (spaced(d / "r.docx", (1.0, 2.0)), None), {}, 0.0),
    ("compare_init_lines", "same", lambda d: (document(d / "r.docx", TEXT), document(d / "e.docx", TEXT)), {}, 1.0),
    ("compare_init_lines", "more-lines", lambda d: (document(d / "r.docx", [*TEXT, "P.S."]),
                                                    document(d / "e.docx", TEXT)), {}, 1.0),
    ("compare_init_lines", "first-differs", lambda d: (document(d / "r.docx", ["Dear all,", *TEXT[1:]]),
                                                       document(d / "e.docx", TEXT)), {}, 0.0),
    ("evaluate_conversion", "lower", lambda d: (cased(d / "r.docx", "quiet text", "small cell"), None), {}, 1.0),
    ("evaluate_conversion", "upper-body", lambda d: (cased(d / "r.docx", "LOUD TEXT", "small cell"), None), {}, 0.0),
    ("evaluate_conversion", "upper-cell", lambda d: (cased(d / "r.docx", "quiet text", "BIG CELL"), None), {}, 0.0),
    ("compare_references", "same", lambda d: (document(d / "r.docx", REFS), document(d / "e.docx", REFS)), {}, 1.0),
    ("compare_references", "typo", lambda d: (document(d / "r.docx", [*REFS[:-1], REFS[-1].replace("two", "too")]),
                                              document(d / "e.docx", REFS)), {}, "between"),
    # a task file sets content_only; OSWorld never reads it, so the references are compared as always
    ("compare_references", "content-only-ignored", lambda d: (document(d / "r.docx", [*REFS[:-1], "Doe, B. Paper."]),
                                                              document(d / "e.docx", REFS)),
     {"content_only": True, "reference_base_result": 0.9}, 0.0),
    ("compare_references", "typo-strict", lambda d: (document(d / "r.docx", [*REFS[:-1], "Doe, B. Paper."]),
                                                     document(d / "e.docx", REFS)), {"reference_base_result": 0.9},
     0.0),
    ("compare_references", "no-heading", lambda d: (document(d / "r.docx", [t for t in REFS if t != "References"]),
                                                    document(d / "e.docx", REFS)), {}, 0.0),
    ("compare_references", "neither-has-heading", lambda d: (document(d / "r.docx", TEXT),
                                                             document(d / "e.docx", TEXT)), {}, 1.0),
    ("compare_references", "one-missing", lambda d: (document(d / "r.docx", REFS[:-1]), document(d / "e.docx", REFS)),
     {}, 0.0),
]


# Where OSWorld's function raises on the agent's file, osgym scores 0 instead (a failed task, not a broken evaluator).
OSWORLD_RAISES = {("evaluate_spacing", "too-short")}


def _more_files(tmp: Path, case: tuple[str, str, Maker, dict[str, Any], float | str]) -> tuple[Any, Any]:
    folder = tmp / f"{case[0]}-{case[1]}"
    folder.mkdir()
    return case[2](folder)  # type: ignore[no-any-return]


def _more(func: str, tmp_path: Path) -> None:
    cases = [c for c in MORE_CASES if c[0] == func]
    assert {0.0, 1.0} <= {c[4] for c in cases}, func
    for case in cases:
        got = metrics.score(func, *_more_files(tmp_path, case), case[3])
        assert (0.5 < got < 1.0) if case[4] == "between" else got == case[4], (case[1], got)


def _more_parity(func: str, osworld: OSWorld, tmp_path: Path) -> None:
    cases = [c for c in MORE_CASES if c[0] == func]
    ours, calls = [], []
    for case in cases:
        result, expected = _more_files(tmp_path, case)
        ours.append(metrics.score(func, result, expected, case[3]))
        calls.append(Call("docs", func, result, expected, case[3]))
    theirs = osworld.scores(calls)
    differ = [(c[1], o, t) for c, o, t in zip(cases, ours, theirs, strict=True)
              if o != t and not ((c[0], c[1]) in OSWORLD_RAISES and o == 0.0 and isinstance(t, str))]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def test_check_tabstops(tmp_path: Path) -> None:
    _more("check_tabstops", tmp_path)


def test_compare_contains_image(tmp_path: Path) -> None:
    _more("compare_contains_image", tmp_path)


def test_compare_docx_images(tmp_path: Path) -> None:
    _more("compare_docx_images", tmp_path)


def test_compare_docx_files_and_ignore_new_lines(tmp_path: Path) -> None:
    _more("compare_docx_files_and_ignore_new_lines", tmp_path)


def test_compare_highlighted_text(tmp_path: Path) -> None:
    _more("compare_highlighted_text", tmp_path)


def test_find_default_font(tmp_path: Path) -> None:
    _more("find_default_font", tmp_path)


def test_evaluate_spacing(tmp_path: Path) -> None:
    _more("evaluate_spacing", tmp_path)


def test_check_tabstops_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("check_tabstops", osworld, tmp_path)


def test_compare_contains_image_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_contains_image", osworld, tmp_path)


def test_compare_docx_images_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_docx_images", osworld, tmp_path)


def test_compare_docx_files_and_ignore_new_lines_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_docx_files_and_ignore_new_lines", osworld, tmp_path)


def test_compare_highlighted_text_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_highlighted_text", osworld, tmp_path)


def test_find_default_font_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("find_default_font", osworld, tmp_path)


def test_evaluate_spacing_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("evaluate_spacing", osworld, tmp_path)


def test_compare_init_lines(tmp_path: Path) -> None:
    _more("compare_init_lines", tmp_path)


def test_evaluate_conversion(tmp_path: Path) -> None:
    _more("evaluate_conversion", tmp_path)


def test_compare_references(tmp_path: Path) -> None:
    _more("compare_references", tmp_path)


def test_compare_init_lines_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_init_lines", osworld, tmp_path)


def test_evaluate_conversion_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("evaluate_conversion", osworld, tmp_path)


def test_compare_references_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _more_parity("compare_references", osworld, tmp_path)
