"""compare_epub on generated e-books: the same book scores 1 however its lines are wrapped and whatever its
identifiers; changed, missing or extra chapters score their share less; no book scores 0. OSWorld's
function agrees except where docs/osworld-coverage.md says."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from osgym.tasks import metrics
from osgym.tasks.metrics import epub as epub_metric
from tests.metrics.cases import Case, File, check, ids, materialize, parity
from tests.metrics.conftest import OSWorld

CHAPTERS = {"chapter1.html": "<html><head><title>One</title></head><body><h1>Chapter 1</h1>"
                             "<p>It was a dark night.</p><p>Rain fell.</p></body></html>",
            "chapter2.html": "<html><head><title>Two</title></head><body><h1>Chapter 2</h1>"
                             "<p>Morning came.</p></body></html>"}


def _toc(nav: str, chapters: dict[str, str]) -> str:
    points = "".join(f'<navPoint id="{nav}{i}"><navLabel><text>{n}</text></navLabel><content src="{n}"/></navPoint>\n'
                     for i, n in enumerate(chapters))
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<ncx xmlns="http://www.daisy.org/z3986/2005/ncx/">\n'
            f'<head><meta name="dtb:depth" content="1"/></head>\n<docTitle><text>Pass Through</text></docTitle>\n'
            f"<navMap>\n{points}</navMap>\n</ncx>\n")


def _opf(uid: str, chapters: dict[str, str], title: str = "Pass Through") -> str:
    items = "".join(f'<item id="c{i}" href="{n}" media-type="application/xhtml+xml"/>\n'
                    for i, n in enumerate(chapters))
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<package xmlns="http://www.idpf.org/2007/opf">\n'
            f'<metadata xmlns:dc="http://purl.org/dc/elements/1.1/">\n<dc:title>{title}</dc:title>\n'
            f'<dc:identifier id="BookId">urn:uuid:{uid}</dc:identifier>\n</metadata>\n<manifest>\n{items}</manifest>\n'
            "</package>\n")


def epub(chapters: dict[str, str] = CHAPTERS, uid: str = "1111", nav: str = "p", *, title: str = "Pass Through",
         toc: bool = True, extra: dict[str, bytes] | None = None) -> File:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        if toc:
            z.writestr("toc.ncx", _toc(nav, chapters))
        z.writestr("content.opf", _opf(uid, chapters, title))
        for name, html in chapters.items():
            z.writestr(name, html)
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return File(buf.getvalue(), "book.epub")


# line breaks between tags count for nothing (OSWorld removes them before parsing; indentation would count)
WRAPPED = {n: h.replace("><", ">\n<").replace("<p>Rain", "\r\n<p>Rain") for n, h in CHAPTERS.items()}
# chapter 2 pretty-prints to 7 lines (html, head, body, h1, p, /body, /html); one differs: 2 * 6 / 14
ONE_LINE = 12 / 14
CASES = [
    Case("same", epub(), epub(), 1.0),
    Case("other-identifiers-and-wrapping", epub(WRAPPED, uid="2222", nav="nav"), epub(), 1.0),
    Case("chapter-text-changed", epub({**CHAPTERS, "chapter2.html": CHAPTERS["chapter2.html"].replace(
        "Morning", "Evening")}), epub(), (3 + ONE_LINE) / 4),
    # content.opf keeps 10 lines, one differs: 2 * 9 / 20
    Case("title-changed", epub(title="Passing Through"), epub(), (3 + 18 / 20) / 4),
    # paired in name order: chapter1 with chapter1, content.opf with chapter2, toc.ncx with content.opf
    Case("chapter-missing", epub({"chapter1.html": CHAPTERS["chapter1.html"]}), epub(), 0.37254901960784315),
    # each of the result's members matches its partner: a missing toc.ncx goes unnoticed, in OSWorld too
    Case("no-toc", epub(toc=False), epub(), 1.0),
    Case("not-a-zip", File(b"Pass Through\n\nChapter 1\n", "book.epub"), epub(), 0.0),
    Case("empty-zip", File(b"PK\x05\x06" + b"\0" * 18, "book.epub"), epub(), 0.0),
    Case("missing-file", None, epub(), 0.0),
    # OSWorld cannot decode a member that is not UTF-8, nor parse an empty chapter: it raises
    Case("not-utf8", epub(extra={"chapter3.html": "<p>caf\xe9</p>".encode("latin-1")}), epub(), 0.0,
         osworld="UnicodeDecodeError"),
    Case("empty-chapter", epub(extra={"chapter3.html": b"\n"}), epub(), 0.0, osworld="ParserError"),
    # OSWorld writes each chapter under its member name into a folder it has not made: it raises
    Case("chapter-in-a-folder", epub(extra={"OEBPS/x.html": b"<p>x</p>"}), epub(extra={"OEBPS/x.html": b"<p>x</p>"}),
         1.0, osworld="FileNotFoundError"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_epub(case: Case, tmp_path: Path) -> None:
    check("compare_epub", case, tmp_path)


def test_compare_epub_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "others", "compare_epub", CASES, tmp_path)


def test_compare_epub_unpacking_past_the_limit_scores_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    padded = epub(extra={"padding.bin": b"\0" * 2**20})
    result, expected = materialize(padded, tmp_path / "r"), materialize(epub(), tmp_path / "e")
    assert metrics.score("compare_epub", result, expected, {}) == 1.0  # the padding is no chapter
    monkeypatch.setattr(epub_metric, "MAX_UNPACKED", 2**20)
    assert metrics.score("compare_epub", result, expected, {}) == 0.0


def test_compare_epub_unreadable_expected_file_is_an_error(tmp_path: Path) -> None:
    result, expected = materialize(epub(), tmp_path / "r"), materialize(File(b"not a zip"), tmp_path / "e")
    with pytest.raises(ValueError, match="compare_epub: the expected file .* is not a readable e-book"):
        metrics.score("compare_epub", result, expected, {})
