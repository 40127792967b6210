"""Word-document metrics, after OSWorld's: text, tables, formatting and layout of ``.docx`` files
(``compare_docx_files`` reads ``.odt`` too); highlighting and coloured text are checked in :mod:`.docs_marks`.

A result document that is missing or unreadable scores 0.0; an unreadable expected document is the
task's fault and raises ``ValueError`` (reported as an evaluator error).
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from docx import Document
from docx.document import Document as DocumentObject
from docx.enum.text import WD_PARAGRAPH_ALIGNMENT, WD_TAB_ALIGNMENT
from docx.opc.exceptions import PackageNotFoundError
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, StrictBool
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics._odt import odt_paragraphs

__all__ = ["DocxOptions", "compare_docx_files"]

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"

_UNREADABLE = (OSError, zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError)


class DocxOptions(BaseModel):
    """How ``compare_docx_files`` compares the paragraphs' text (OSWorld's options and defaults).

    ``ignore_blanks`` (default true): join the paragraphs and compare with every run of whitespace as
    one space; ``ignore_case``; ``ignore_order``: sort the paragraphs first; ``delete_empty_lines``:
    drop blank paragraphs; ``content_only``: score the similarity of the joined texts (0 to 1);
    ``fuzzy_match``: score similarity instead of equality (of the joined texts with ``ignore_blanks``,
    else the mean over paragraphs).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    ignore_blanks: StrictBool = True
    ignore_case: StrictBool = False
    ignore_order: StrictBool = False
    content_only: StrictBool = False
    fuzzy_match: StrictBool = False
    delete_empty_lines: StrictBool = False


def _paragraphs(path: str) -> list[str]:
    return odt_paragraphs(path) if path.endswith(".odt") else [p.text for p in Document(path).paragraphs]


def _joined(paragraphs: list[str], lower: bool) -> str:
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if lower else text


@metric("compare_docx_files", DocxOptions, files=True)
def compare_docx_files(result: str | None, expected: str | None, options: DocxOptions) -> float:
    """How closely the result document's text matches the expected one's: 1.0 equal, 0.0 different or unreadable.

    Both ``.docx`` (body paragraphs) or both ``.odt`` (body, then headers and footers), as in OSWorld; else 0.0.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    kinds = {p.rsplit(".", 1)[-1] for p in (result, expected) if p}
    if not result or not expected or len(kinds) != 1 or not kinds <= {"docx", "odt"}:
        return 0.0
    if too_big(result):
        return 0.0
    try:
        got = _paragraphs(result)
    except _UNREADABLE:
        return 0.0
    try:
        want = _paragraphs(expected)
    except _UNREADABLE as exc:
        raise ValueError(f"expected document {expected} cannot be read: {exc}") from exc
    if options.ignore_order:
        got, want = sorted(got), sorted(want)
    if options.delete_empty_lines:
        got, want = [p for p in got if p.strip()], [p for p in want if p.strip()]
    if options.content_only or options.ignore_blanks:
        a, b = _joined(got, options.ignore_case), _joined(want, options.ignore_case)
        if options.content_only or options.fuzzy_match:
            return fuzz.ratio(a, b) / 100.0
        return 1.0 if a == b else 0.0
    if len(got) != len(want):
        return 0.0
    pairs: list[tuple[str, Any]] = list(zip(got, want, strict=True))
    if options.ignore_case:
        pairs = [(a.lower(), b.lower()) for a, b in pairs]
    if options.fuzzy_match:
        return sum(fuzz.ratio(a, b) / 100.0 for a, b in pairs) / len(pairs) if pairs else 1.0
    return 1.0 if all(a == b for a, b in pairs) else 0.0


class FontRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    font_name: str


class PageBreakRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    page_break_count: int | None = Field(None, ge=0)


def _result(path: str | None) -> DocumentObject | None:
    """The agent's document, or None if it is missing, unreadable or too big unpacked (which scores 0)."""
    if not path or too_big(path):
        return None
    try:
        return Document(path)
    except _UNREADABLE:
        return None


def _expected(path: str | None) -> DocumentObject:
    if not path:
        raise ValueError("this metric needs an expected document")
    try:
        return Document(path)
    except _UNREADABLE as exc:
        raise ValueError(f"expected document {path} cannot be read: {exc}") from exc


def _same_text(result: str | None, expected: str | None, got: DocumentObject, want: DocumentObject) -> bool:
    """``compare_docx_files`` with its default options (both ``.docx``, equal paragraph texts), on the
    documents the caller has already read instead of parsing both files a second time."""
    docx = bool(result and expected and result.endswith(".docx") and expected.endswith(".docx"))
    return docx and [p.text for p in got.paragraphs] == [p.text for p in want.paragraphs]


@metric("compare_docx_tables", files=True)
def compare_docx_tables(result: str | None, expected: str | None) -> float:
    """1.0 if both documents have the same number of tables, of the same shape, with the same cell texts (trimmed).

    Raises:
        ValueError: if the expected document cannot be read.
    """
    got, want = _result(result), _expected(expected)
    if got is None or len(got.tables) != len(want.tables):
        return 0.0
    for t1, t2 in zip(got.tables, want.tables, strict=True):
        if len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns):
            return 0.0
        for i in range(len(t1.rows)):
            for j in range(len(t1.columns)):
                if t1.cell(i, j).text.strip() != t2.cell(i, j).text.strip():
                    return 0.0
    return 1.0


@metric("compare_line_spacing", files=True)
def compare_line_spacing(result: str | None, expected: str | None) -> float:
    """1.0 if the texts match (``compare_docx_files``) and every paragraph has the expected line spacing.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None or not _same_text(result, expected, got, want) or len(got.paragraphs) != len(want.paragraphs):
        return 0.0
    ok = all(p1.paragraph_format.line_spacing == p2.paragraph_format.line_spacing
             for p1, p2 in zip(got.paragraphs, want.paragraphs, strict=True))
    return 1.0 if ok else 0.0


@metric("compare_font_names", rules=FontRules, files=True)
def compare_font_names(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if every run of the document names the font ``rules["font_name"]`` (an unset font fails)."""
    got = _result(result)
    if got is None:
        return 0.0
    font = rules["font_name"]
    return 1.0 if all(r.font.name == font for p in got.paragraphs for r in p.runs) else 0.0


@metric("compare_insert_equation", files=True)
def compare_insert_equation(result: str | None, expected: str | None) -> float:
    """1.0 if the texts match and some run holds an embedded object (an equation) where the expected one does.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None or not _same_text(result, expected, got, want):
        return 0.0
    for p1, p2 in zip(got.paragraphs, want.paragraphs, strict=False):
        for r1, r2 in zip(p1.runs, p2.runs, strict=False):
            if r1.element.xpath(".//w:object") and r2.element.xpath(".//w:object"):
                return 1.0
    return 0.0


@metric("compare_subscript_contains", files=True)
def compare_subscript_contains(result: str | None, expected: str | None) -> float:
    """1.0 if some run is subscript in both documents at the same paragraph and run position.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    return 1.0 if any(r1.font.subscript and r2.font.subscript
                      for p1, p2 in zip(got.paragraphs, want.paragraphs, strict=False)
                      for r1, r2 in zip(p1.runs, p2.runs, strict=False)) else 0.0


@metric("has_page_numbers_in_footers", files=True)
def has_page_numbers_in_footers(result: str | None, expected: Any = None) -> float:
    """1.0 if the first footer paragraph of every section holds a digit (a page number)."""
    got = _result(result)
    if got is None:
        return 0.0
    for section in got.sections:
        paragraphs = section.footer.paragraphs
        if not any(ch.isdigit() for ch in (paragraphs[0].text if paragraphs else "")):
            return 0.0
    return 1.0


@metric("is_first_line_centered", files=True)
def is_first_line_centered(result: str | None, expected: Any = None) -> float:
    """1.0 if the document's first paragraph is centred."""
    got = _result(result)
    if got is None or not got.paragraphs:
        return 0.0
    return 1.0 if got.paragraphs[0].paragraph_format.alignment == WD_PARAGRAPH_ALIGNMENT.CENTER else 0.0


@metric("contains_page_break", rules=PageBreakRules, files=True)
def contains_page_break(result: str | None, rules: dict[str, Any] | None = None) -> float:
    """1.0 if the text holds a page break, and exactly ``rules["page_break_count"]`` of them when given."""
    got = _result(result)
    if got is None:
        return 0.0
    count = sum(1 for p in got.paragraphs for r in p.runs for br in r.element.iter(f"{{{_W}}}br")
                if br.get(f"{{{_W}}}type") == "page")
    want = (rules or {}).get("page_break_count")
    if want is not None and count != want:
        return 0.0
    return 1.0 if count > 0 else 0.0


@metric("compare_docx_lines", files=True)
def compare_docx_lines(result: str | None, expected: str | None) -> float:
    """1.0 if both documents have the same set of non-blank paragraphs (trimmed; order and repeats ignored).

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    lines = [{p.text.strip() for p in d.paragraphs if p.text.strip()} for d in (got, want)]
    return 1.0 if lines[0] == lines[1] else 0.0


@metric("check_italic_font_size_14", files=True)
def check_italic_font_size_14(result: str | None, expected: str | None) -> float:
    """1.0 if the texts match and every italic run is set in 14 pt.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None or not _same_text(result, expected, got, want):
        return 0.0
    ok = all(r.font.size is not None and r.font.size.pt == 14
             for p in got.paragraphs for r in p.runs if r.italic)
    return 1.0 if ok else 0.0


@metric("evaluate_strike_through_last_paragraph", files=True)
def evaluate_strike_through_last_paragraph(result: str | None, expected: str | None) -> float:
    """1.0 if the texts match and every run of the last paragraph is struck through.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None or not got.paragraphs or not _same_text(result, expected, got, want):
        return 0.0
    return 1.0 if all(r.font.strike for r in got.paragraphs[-1].runs) else 0.0


class TabstopOptions(BaseModel):
    """``word_number_split_by_tabstop``: each paragraph's ``index``-th tab-separated part has that many words."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    word_number_split_by_tabstop: int | None = None
    index: int = 0


@metric("check_tabstops", TabstopOptions, files=True)
def check_tabstops(result: str | None, expected: str | None, options: TabstopOptions) -> float:
    """How closely, 0 to 1, the non-blank paragraphs' tab stops sit where the expected document's do.

    Tab stops must agree in number and alignment (else 0); the score falls with their distance, as a
    share of the text width.

    Raises:
        ValueError: if the expected document cannot be read or sets no page width.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    p1s = [p for p in got.paragraphs if p.text.strip()]
    p2s = [p for p in want.paragraphs if p.text.strip()]
    if len(p1s) != len(p2s) or not p1s:
        return 0.0
    if options.word_number_split_by_tabstop is not None:
        for p in p1s:
            parts = p.text.split("\t")
            if options.index >= len(parts) or len(parts[options.index].split()) != options.word_number_split_by_tabstop:
                return 0.0
    section = want.sections[0]
    width = (section.page_width or 0) - (section.left_margin or 0) - (section.right_margin or 0)
    if width <= 0:
        raise ValueError(f"expected document {expected} sets no page width to measure tab stops against")

    def kept(p: Any) -> list[Any]:  # a cleared tab stop, or the default left one at 0, is no tab stop
        return [t for t in p.paragraph_format.tab_stops if not (
            t.alignment == WD_TAB_ALIGNMENT.CLEAR or (t.alignment == WD_TAB_ALIGNMENT.LEFT and t.position == 0))]

    off = 0.0
    for p1, p2 in zip(p1s, p2s, strict=True):
        t1s, t2s = kept(p1), kept(p2)
        if len(t1s) != len(t2s) or any(a.alignment != b.alignment for a, b in zip(t1s, t2s, strict=True)):
            return 0.0
        off += sum(abs(a.position - b.position) for a, b in zip(t1s, t2s, strict=True)) / width
    return 1.0 - off / len(p1s)


def _has_graphic(run: Any) -> bool:
    return any(el.tag.endswith("}graphicData") for el in run._element.iter())


@metric("compare_contains_image", files=True)
def compare_contains_image(result: str | None, expected: str | None) -> float:
    """1.0 if, run by run, the result holds an image exactly where the expected document does.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    return 0.0 if any(_has_graphic(r1) != _has_graphic(r2)
                      for p1, p2 in zip(got.paragraphs, want.paragraphs, strict=False)
                      for r1, r2 in zip(p1.runs, p2.runs, strict=False)) else 1.0


def _images(doc: DocumentObject) -> list[bytes]:
    """The pixels of each image the document body refers to, in the order of its relationships."""
    out = []
    for rel in doc.part.rels.values():
        if "image" in rel.reltype:
            with Image.open(io.BytesIO(rel.target_part.blob)) as img:
                out.append(img.tobytes())
    return out


@metric("compare_docx_images", files=True)
def compare_docx_images(result: str | None, expected: str | None) -> float:
    """1.0 if both documents hold the same images (same pixels) in the same order.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    try:
        mine = _images(got)
    except (OSError, ValueError):
        return 0.0  # an image the agent's file holds cannot be decoded
    return 1.0 if mine == _images(want) else 0.0


class IgnoreNewLinesOptions(BaseModel):
    """``ignore_blanks`` (default true): compare the joined text with whitespace runs as one space."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ignore_blanks: StrictBool = True


@metric("compare_docx_files_and_ignore_new_lines", IgnoreNewLinesOptions, files=True)
def compare_docx_files_and_ignore_new_lines(result: str | None, expected: str | None,
                                            options: IgnoreNewLinesOptions) -> float:
    """1.0 if the documents' non-empty paragraphs hold the same text (``.docx`` only).

    Raises:
        ValueError: if the expected document cannot be read.
    """
    if not result or not expected or not (result.endswith(".docx") and expected.endswith(".docx")):
        return 0.0
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    a, b = ([p.text for p in d.paragraphs if p.text != ""] for d in (got, want))
    if options.ignore_blanks:
        return 1.0 if _joined(a, False) == _joined(b, False) else 0.0
    return 1.0 if a == b else 0.0


@metric("evaluate_spacing", files=True)
def evaluate_spacing(result: str | None, expected: Any = None) -> float:
    """1.0 if the first three paragraphs (introduction, body, conclusion) are spaced 1, 2 and 1.5 lines."""
    got = _result(result)
    if got is None or len(got.paragraphs) < 3:
        return 0.0
    spacing = [p.paragraph_format.line_spacing for p in got.paragraphs[:3]]
    return 1.0 if spacing == [1.0, 2.0, 1.5] else 0.0


@metric("compare_init_lines", files=True)
def compare_init_lines(result: str | None, expected: str | None) -> float:
    """1.0 if the paragraphs both documents have agree, from the first on (extra ones at the end are ignored).

    Raises:
        ValueError: if the expected document cannot be read.
    """
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    same = all(a.text == b.text for a, b in zip(got.paragraphs, want.paragraphs, strict=False))
    return 1.0 if same else 0.0


@metric("evaluate_conversion", files=True)
def evaluate_conversion(result: str | None, expected: Any = None) -> float:
    """1.0 if no run of the document, in its tables or its body, is all upper-case."""
    got = _result(result)
    if got is None:
        return 0.0
    in_tables = (r for t in got.tables for row in t.rows for c in row.cells for p in c.paragraphs for r in p.runs)
    in_body = (r for p in got.paragraphs for r in p.runs)
    return 0.0 if any(r.text.isupper() for r in (*in_tables, *in_body)) else 1.0


class ReferencesOptions(BaseModel):
    """``reference_indicator``: the heading paragraph the references follow; ``reference_base_result``:
    the mean similarity that scores 0 (scores rise linearly from it to 1). ``content_only`` is accepted and
    ignored: a task file sets it, but OSWorld's function never reads it (it always compares the texts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    reference_indicator: str = "References"
    reference_base_result: float = Field(0.5, ge=0, lt=1)
    content_only: StrictBool = False


@metric("compare_references", ReferencesOptions, files=True)
def compare_references(result: str | None, expected: str | None, options: ReferencesOptions) -> float:
    """How closely, 0 to 1, the non-blank paragraphs after the references heading match the expected ones.

    Both without the heading scores 1.0, one without it 0.0; different counts of references score 0.0.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    if not result or not expected or not (result.endswith(".docx") and expected.endswith(".docx")):
        return 0.0
    want = _expected(expected)
    got = _result(result)
    if got is None:
        return 0.0
    texts = [[p.text for p in d.paragraphs] for d in (got, want)]
    heading = options.reference_indicator
    found = [t.index(heading) if heading in t else -1 for t in texts]
    if found == [-1, -1]:
        return 1.0
    if -1 in found:
        return 0.0
    refs = [[p for p in t[i + 1:] if p.strip()] for t, i in zip(texts, found, strict=True)]
    if len(refs[0]) != len(refs[1]):
        return 0.0
    if not refs[0]:
        return 1.0  # two empty reference sections (OSWorld divides by zero here)
    mean = sum(fuzz.ratio(a, b) / 100.0 for a, b in zip(*refs, strict=True)) / len(refs[0])
    base = options.reference_base_result
    return (mean - base) / (1 - base) if mean >= base + 0.01 else 0.0
