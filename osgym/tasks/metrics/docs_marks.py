"""Marks on text, after OSWorld's document metrics: highlighting (Word and OpenDocument) and font colours.

As in :mod:`.docs`, a missing or unreadable result scores 0.0 and an unreadable expected document is
the task's fault (``ValueError``).
"""

from __future__ import annotations

import re
import zipfile
from typing import Any
from xml.etree import ElementTree

from pydantic import BaseModel, ConfigDict, Field

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._colour import delta_e_2000
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics._odt import odt_paragraph, odt_parts
from osgym.tasks.metrics.docs import DocxOptions, compare_docx_files
from osgym.tasks.metrics.docs import _result as open_docx  # the agent's document, size-checked, or None

_W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"
_STYLE = "urn:oasis:names:tc:opendocument:xmlns:style:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"
_FO = "urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"
_UNREADABLE = (OSError, zipfile.BadZipFile, KeyError, ValueError, ElementTree.ParseError)


def _highlighted(path: str) -> set[str | None]:
    """The first text of each highlighted run in the document body."""
    with zipfile.ZipFile(path) as z, z.open("word/document.xml") as f:
        root = ElementTree.parse(f).getroot()
    out = set()
    for run in root.iter(f"{{{_W}}}r"):
        mark = run.find(f".//{{{_W}}}highlight")
        if mark is not None and mark.get(f"{{{_W}}}val") != "none":
            text = run.find(f".//{{{_W}}}t")
            if text is not None:
                out.add(text.text)
    return out


@metric("compare_highlighted_text", files=True)
def compare_highlighted_text(result: str | None, expected: str | None) -> float:
    """1.0 if the same texts are highlighted in both documents (as sets).

    Raises:
        ValueError: if the expected document cannot be read.
    """
    if not result or not expected:
        return 0.0
    try:
        want = _highlighted(expected)
    except _UNREADABLE as exc:
        raise ValueError(f"expected document {expected} cannot be read: {exc}") from exc
    if too_big(result):
        return 0.0
    try:
        return 1.0 if _highlighted(result) == want else 0.0
    except _UNREADABLE:
        return 0.0


def _odt_text(parts: list[ElementTree.Element]) -> str:
    """All paragraphs (body first, then headers and footers), joined, whitespace runs as one space."""
    paragraphs = [odt_paragraph(p) for root in parts for p in root.iter(f"{{{_TEXT}}}p")]
    return re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()


_YELLOW = "#ffff00"  # LibreOffice's highlighting colour, as OSWorld matches it (exactly, lower case)


def _has_yellow_span(parts: list[ElementTree.Element]) -> bool:
    """Whether a span uses an automatic style with a yellow background in any of its properties."""
    yellow = {style.get(f"{{{_STYLE}}}name")
              for root in parts for styles in root.iter(f"{{{_OFFICE}}}automatic-styles") for style in styles
              if any(prop.get(f"{{{_FO}}}background-color") == _YELLOW for prop in style)}
    yellow.discard(None)
    return any(span.get(f"{{{_TEXT}}}style-name") in yellow
               for root in parts for span in root.iter(f"{{{_TEXT}}}span"))


@metric("check_highlighted_words", files=True)
def check_highlighted_words(result: str | None, expected: str | None) -> float:
    """1.0 if the result OpenDocument text (``.odt``) has the expected one's text and no yellow-highlighted span.

    Only yellow (``#ffff00``) counts as highlighting, set through an automatic (per-document) text
    style, which is how LibreOffice writes it.

    Raises:
        ValueError: if the expected document is not an ``.odt`` file or cannot be read.
    """
    if not expected or not expected.endswith(".odt"):
        raise ValueError(f"check_highlighted_words needs an expected .odt document, actual {expected!r}")
    try:
        want = _odt_text(odt_parts(expected))
    except _UNREADABLE as exc:
        raise ValueError(f"expected document {expected} cannot be read: {exc}") from exc
    if not result or not result.endswith(".odt") or too_big(result):
        return 0.0
    try:
        got = odt_parts(result)
    except _UNREADABLE:
        return 0.0
    return 1.0 if _odt_text(got) == want and not _has_yellow_span(got) else 0.0


class ColouredWordsOptions(BaseModel):
    """``threshold``: the largest CIEDE2000 difference from pure red or blue that still counts as that colour."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    threshold: float = Field(3.5, ge=0)


_RED, _BLUE = (255, 0, 0), (0, 0, 255)


def _run_colour_ok(run: Any, threshold: float) -> bool:
    """A run starting with a vowel is red, any other blue (within ``threshold``); a run without a colour fails."""
    rgb = run.font.color.rgb
    if rgb is None:
        return False
    want = _RED if run.text[0].lower() in "aeiou" else _BLUE
    return delta_e_2000((rgb[0], rgb[1], rgb[2]), want) <= threshold


@metric("evaluate_colored_words_in_tables", ColouredWordsOptions, files=True)
def evaluate_colored_words_in_tables(result: str | None, expected: str | None, options: ColouredWordsOptions) -> float:
    """1.0 if the texts match (``compare_docx_files``) and, in the result's tables, every run starting with a
    vowel is red and every other run blue.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    if not compare_docx_files(result, expected, DocxOptions()):
        return 0.0
    got = open_docx(result)
    if got is None:
        return 0.0
    runs = (r for t in got.tables for row in t.rows for c in row.cells for p in c.paragraphs for r in p.runs if r.text)
    return 1.0 if all(_run_colour_ok(r, options.threshold) for r in runs) else 0.0
