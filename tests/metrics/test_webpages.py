"""compare_htmls on generated pages (a spreadsheet exported as HTML, as in OSWorld's task): the same page
scores 1 however it is indented; a changed cell, attribute, tag, comment or script, or an extra row or
element, scores 0. OSWorld's function agrees except where docs/osworld-coverage.md says."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.tasks import metrics
from osgym.tasks.metrics import webpages
from tests.metrics.cases import Case, File, check, ids, materialize, parity
from tests.metrics.conftest import OSWorld

HEAD = ('<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.0 Transitional//EN">\n<html>\n<head>\n'
        '\t<meta http-equiv="content-type" content="text/html; charset=utf-8"/>\n\t<title>survey</title>\n'
        '\t<style type="text/css">\n\t\tbody { font-family:"Liberation Sans" }\n\t</style>\n</head>\n')


def page(rows: list[tuple[str, str]] | None = None, *, sep: str = "\n\t\t", cls: str = "head  cell",
         align: str = "right", cell: str = "td", comment: str = "generated", script: str = "",
         sdnum: str = "1033;") -> File:
    rows = rows if rows is not None else [("Year", "2021"), ("Industry", "All industries")]
    body = "".join(f'<tr>{sep}<{cell} class="{cls}">{a}</{cell}>{sep}<td align="{align}" sdnum="{sdnum}">{b}</td>'
                   f"{sep}</tr>\n" for a, b in rows)
    scr = f"<script>{script}</script>\n" if script else ""
    return File(f"{HEAD}<body>\n{scr}<table cellspacing=\"0\" border=\"0\">\n{body}</table>\n<!-- {comment} -->\n"
                "</body>\n</html>\n", "page.html")


CASES = [
    Case("same", page(), page(), 1.0),
    Case("other-indentation-and-class-spacing", page(sep="\n  ", cls="head cell"), page(), 1.0),
    Case("cell-text", page([("Year", "2022"), ("Industry", "All industries")]), page(), 0.0),
    Case("attribute", page(align="left"), page(), 0.0),
    Case("class", page(cls="head"), page(), 0.0),
    Case("tag", page(cell="th"), page(), 0.0),
    Case("comment", page(comment="edited"), page(), 0.0),
    Case("script", page(script="var a = 2;"), page(script="var a = 1;"), 0.0),
    Case("extra-row", page([("Year", "2021"), ("Industry", "All industries"), ("Unit", "$")]), page(), 0.0),
    Case("sdnum", page(sdnum="1033;0;0.00"), page(), 0.0),
    Case("sdnum-ignored", page(sdnum="1033;0;0.00"), page(), 1.0, options={"ignore_sdnum": True}),
    Case("sdnum-ignored-other-attribute", page(sdnum="1033;0;0.00", align="left"), page(), 0.0,
         options={"ignore_sdnum": True}),
    # blanks between tags count as one space or one line break, except in <pre>
    Case("blanks-in-a-cell", File("<p>\t \t</p>", "page.html"), File("<p> </p>", "page.html"), 1.0),
    Case("blanks-in-pre", File("<pre>\t \t</pre>", "page.html"), File("<pre> </pre>", "page.html"), 0.0),
    # OSWorld compares as far as the shorter page goes: an element with no text at the end, or an empty file,
    # passes there
    Case("extra-element-at-the-end", File("<html><body><p>a</p><br></body></html>", "page.html"),
         File("<html><body><p>a</p></body></html>", "page.html"), 0.0, osworld=1.0),
    Case("empty-file", File("", "page.html"), page(), 0.0, osworld=1.0),
    # OSWorld opens the file as UTF-8 text and raises
    Case("not-utf8", File("<p>caf\xe9</p>".encode("latin-1"), "page.html"), page(), 0.0, osworld="UnicodeDecodeError"),
    Case("missing-file", None, page(), 0.0, osworld="TypeError"),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_htmls(case: Case, tmp_path: Path) -> None:
    check("compare_htmls", case, tmp_path)


def test_compare_htmls_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "compare_htmls", CASES, tmp_path)


def test_compare_htmls_unreadable_expected_file_is_an_error(tmp_path: Path) -> None:
    result, expected = materialize(page(), tmp_path / "r"), materialize(File(b"\xff\xfe<p>", "g.html"), tmp_path / "e")
    with pytest.raises(ValueError, match="compare_htmls: the expected file .* is not UTF-8 HTML"):
        metrics.score("compare_htmls", result, expected, {})


def test_compare_htmls_file_over_the_limit_scores_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    padded = File(str(page().content) + " " * 4096, "page.html")  # trailing blanks: still the same page
    result, expected = materialize(padded, tmp_path / "r"), materialize(page(), tmp_path / "e")
    assert metrics.score("compare_htmls", result, expected, {}) == 1.0
    monkeypatch.setattr(webpages, "MAX_BYTES", Path(expected).stat().st_size + 1)
    assert metrics.score("compare_htmls", result, expected, {}) == 0.0
