"""Highlighting in OpenDocument text and font colours in Word tables, on documents generated here."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from docx import Document
from docx.shared import RGBColor

from osgym.suites.office import ODF_NAMESPACES, odt_package
from osgym.tasks import metrics
from osgym.tasks.metrics._colour import delta_e_2000
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

_FO = 'xmlns:fo="urn:oasis:names:tc:opendocument:xmlns:xsl-fo-compatible:1.0"'
_NS = ODF_NAMESPACES.replace(" office:version", f" {_FO} office:version")


def _text_style(name: str, background: str | None) -> str:
    props = "" if background is None else f'fo:background-color="{background}"'
    return (f'<style:style style:name="{name}" style:family="text">'
            f'<style:text-properties fo:font-weight="bold" {props}/></style:style>')


def odt(background: str | None = None, marked: str = "highlighted words", header_background: str | None = None,
        lead: str = "Call the candidate and read the") -> bytes:
    """A recruitment script as LibreOffice writes one: ``marked`` in a span whose automatic style has
    ``background``, and a header (in styles.xml) whose span has ``header_background``."""
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_NS}>'
               f'<office:automatic-styles>{_text_style("T1", background)}</office:automatic-styles>'
               '<office:body><office:text>'
               f'<text:p>{lead} <text:span text:style-name="T1">{marked}</text:span> aloud.</text:p>'
               '<text:p>Thank them for their time.</text:p>'
               '</office:text></office:body></office:document-content>')
    styles = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {_NS}>'
              f'<office:automatic-styles>{_text_style("MT1", header_background)}</office:automatic-styles>'
              '<office:master-styles><style:master-page style:name="Standard"><style:header>'
              '<text:p><text:span text:style-name="MT1">Phone script</text:span></text:p>'
              '</style:header></style:master-page></office:master-styles></office:document-styles>')
    return odt_package(content, styles)


GOLD = File(odt(), "gold.odt")
HIGHLIGHT_CASES = [
    Case("highlight-removed", File(odt(), "script.odt"), GOLD, 1.0),
    Case("highlight-made-transparent", File(odt("transparent"), "script.odt"), GOLD, 1.0),
    Case("still-yellow", File(odt("#ffff00"), "script.odt"), GOLD, 0.0),
    Case("header-still-yellow", File(odt(header_background="#ffff00"), "script.odt"), GOLD, 0.0),
    Case("text-changed", File(odt(marked="new words"), "script.odt"), GOLD, 0.0),
    Case("spaces-differ", File(odt(lead="Call  the candidate and read the"), "script.odt"), GOLD, 1.0),
    # only yellow counts as highlighting, as in OSWorld
    Case("green-highlight-kept", File(odt("#00ff00"), "script.odt"), GOLD, 1.0),
    Case("not-an-odt", File(odt(), "script.docx"), GOLD, 0.0),
    Case("broken", File(b"not a document", "script.odt"), GOLD, 0.0),
]


@pytest.mark.parametrize("case", HIGHLIGHT_CASES, ids=ids(HIGHLIGHT_CASES))
def test_check_highlighted_words(case: Case, tmp_path: Path) -> None:
    check("check_highlighted_words", case, tmp_path)


def test_check_highlighted_words_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "docs", "check_highlighted_words", HIGHLIGHT_CASES, tmp_path)


def test_check_highlighted_words_needs_an_odt_to_compare_with(tmp_path: Path) -> None:
    result = tmp_path / "script.odt"
    result.write_bytes(odt())
    (tmp_path / "gold.docx").write_bytes(b"not a document")
    for expected in (None, str(tmp_path / "gold.docx"), str(tmp_path / "missing.odt")):
        with pytest.raises(ValueError, match="expected"):
            metrics.score("check_highlighted_words", str(result), expected, {})


WORDS = ["apple", "ball", "egg", "Umbrella", "cat"]
RED, BLUE = "FF0000", "0000FF"


def word_table(colours: dict[str, str | None] | None = None, intro: str = "Sight words") -> bytes:
    """A paragraph and a table of WORDS, each a run coloured red if it starts with a vowel, else blue;
    ``colours`` overrides a word's colour (None: no colour)."""
    doc = Document()
    doc.add_paragraph(intro)
    cells = doc.add_table(rows=1, cols=len(WORDS)).rows[0].cells
    for cell, word in zip(cells, WORDS, strict=True):
        colour = (colours or {}).get(word, RED if word[0].lower() in "aeiou" else BLUE)
        run = cell.paragraphs[0].add_run(word)
        if colour is not None:
            run.font.color.rgb = RGBColor.from_string(colour)
    out = io.BytesIO()
    doc.save(out)
    return out.getvalue()


PRIMER = File(word_table({w: None for w in WORDS}), "primer.docx")
COLOUR_CASES = [
    Case("all-right", File(word_table(), "r.docx"), PRIMER, 1.0),
    Case("nearly-red", File(word_table({"apple": "FE0202"}), "r.docx"), PRIMER, 1.0),
    Case("dark-red", File(word_table({"egg": "C00000"}), "r.docx"), PRIMER, 0.0),
    Case("dark-red-within-threshold", File(word_table({"egg": "C00000"}), "r.docx"), PRIMER, 1.0,
         {"threshold": 20.0}),
    Case("vowel-blue", File(word_table({"Umbrella": BLUE}), "r.docx"), PRIMER, 0.0),
    Case("consonant-red", File(word_table({"cat": RED}), "r.docx"), PRIMER, 0.0),
    Case("text-changed", File(word_table(intro="Sight words list"), "r.docx"), PRIMER, 0.0),
    # a word left without a colour: OSWorld reads its missing RGB value and raises
    Case("word-uncoloured", File(word_table({"ball": None}), "r.docx"), PRIMER, 0.0, osworld="TypeError"),
    Case("broken", File(b"not a document", "r.docx"), PRIMER, 0.0),
]


@pytest.mark.parametrize("case", COLOUR_CASES, ids=ids(COLOUR_CASES))
def test_evaluate_colored_words_in_tables(case: Case, tmp_path: Path) -> None:
    check("evaluate_colored_words_in_tables", case, tmp_path)


def test_evaluate_colored_words_in_tables_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "docs", "evaluate_colored_words_in_tables", COLOUR_CASES, tmp_path)


def test_delta_e_2000_gives_scikit_images_values() -> None:
    # values from scikit-image 0.26's deltaE_ciede2000(rgb2lab(...)), which OSWorld's metric calls
    assert delta_e_2000((0, 0, 255), (10, 10, 250)) == pytest.approx(0.5479237759334425, abs=1e-9)
    assert delta_e_2000((255, 0, 0), (0, 0, 255)) == pytest.approx(52.88139970455688, abs=1e-9)
    assert delta_e_2000((255, 0, 0), (0, 0, 255)) == pytest.approx(delta_e_2000((0, 0, 255), (255, 0, 0)))
    assert delta_e_2000((40, 80, 120), (40, 80, 120)) == 0.0
