"""apps-documents templates on the page and its text as a whole: a header or footer (Insert > Header
and Footer), line spacing (Format > Spacing) and Find and Replace across the document.

A header's text is checked twice: ``compare_docx_files`` on the saved ``.odt`` (OSWorld reads the body's
paragraphs, then the headers' and footers'), so the body must be unchanged and the text must be there;
and ``exact_match`` on what the file's default page style holds in its header and footer, so the text
must be in the right one, not typed as a last paragraph of the body.
"""

from __future__ import annotations

import random
import re
from typing import Any
from xml.sax.saxutils import escape

from osgym.suites.apps_documents.writer import DOCS, WRITER, _opened, _ready, _sentences, _stem
from osgym.suites.apps_smoke.common import ANIMALS, DONE, save_as, write_expected
from osgym.suites.apps_spreadsheet.calc import CITIES, PEOPLE
from osgym.suites.generators import cmd, op, q, rule, vm_file
from osgym.suites.office import ODF_NAMESPACES, docx_with_body, menu, odt_package


def odt_bytes(paragraphs: list[str], header: str | None = None, footer: str | None = None) -> bytes:
    """The smallest OpenDocument text holding ``paragraphs``, and a header and footer on its default page
    style if given; the same bytes for the same text.

    >>> from osgym.tasks.metrics._odt import odt_paragraphs
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as d:
    ...     path = os.path.join(d, "a.odt")
    ...     _ = open(path, "wb").write(odt_bytes(["Title", "A & B."], header="Top"))
    ...     odt_paragraphs(path)
    ['Title', 'A & B.', 'Top']
    """
    body = "".join(f"<text:p>{escape(p)}</text:p>" for p in paragraphs)
    marks = "".join(f"<style:{kind}><text:p>{escape(text)}</text:p></style:{kind}>"
                    for kind, text in (("header", header), ("footer", footer)) if text is not None)
    return odt_package(
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ODF_NAMESPACES}><office:body>'
        f'<office:text>{body}</office:text></office:body></office:document-content>',
        f'<?xml version="1.0" encoding="UTF-8"?><office:document-styles {ODF_NAMESPACES}>'
        '<office:automatic-styles><style:page-layout style:name="pm1"/></office:automatic-styles>'
        '<office:master-styles><style:master-page style:name="Standard" style:page-layout-name="pm1">'
        f'{marks}</style:master-page></office:master-styles></office:document-styles>')


_PAGE_MARKS = ("python3 - {path} <<'PY'\n"
               "import sys, zipfile\n"
               "from xml.etree import ElementTree as E\n"
               "S = '{{urn:oasis:names:tc:opendocument:xmlns:style:1.0}}'\n"
               "T = '{{urn:oasis:names:tc:opendocument:xmlns:text:1.0}}'\n"
               "root = E.fromstring(zipfile.ZipFile(sys.argv[1]).read('styles.xml'))\n"
               "page = next(p for p in root.iter(S + 'master-page') if p.get(S + 'name') == 'Standard')\n"
               "out = [kind + ': ' + ' / '.join(''.join(p.itertext()) for p in el.iter(T + 'p'))\n"
               "       for kind in ('header', 'footer') for el in page.findall(S + kind)]\n"
               "sys.stdout.write('\\n'.join(out))\n"
               "PY")
"""A getter's command printing the header's and footer's text of an ``.odt``'s default page style, one
``header: ...`` / ``footer: ...`` line each (nothing, and a failure, if the file is missing)."""

_MOTTOS = ["Minutes", "Draft", "Newsletter", "Agenda", "Report", "Notice", "Schedule", "Bulletin"]
_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December"]


def _mark_text(rng: random.Random) -> str:
    """A header or footer line that Writer's autocorrect leaves as typed (no dashes, quotes or ordinals)."""
    return (f"{rng.choice(ANIMALS).title()} Society {rng.choice(_MOTTOS).lower()} for "
            f"{rng.choice(_MONTHS)} {rng.randint(2019, 2031)}")


def _header_footer_menu(window: str, footer: bool) -> list[dict[str, Any]]:
    """Insert > Header and Footer (third item up from the first, wrapping round) > Header or Footer >
    Default Page Style, each submenu waited for before the next key; Writer then puts the cursor in the
    new header or footer, so its element is waited for before typing."""
    kind = "Footer" if footer else "Header"
    return [*menu(window, ["alt", "i"], "Header and Footer", role="menu"), *(op("press", key="up") for _ in range(3)),
            op("press", key="right"), op("wait_enabled", window=window, control="Header", role="menu", timeout=30),
            *([op("press", key="down")] if footer else []), op("press", key="right"),
            op("wait_enabled", window=window, control="Default Page Style", role="check-menu-item", timeout=30),
            op("press", key="enter"),
            op("wait_element", window=window, name=f"{kind} 1", role=kind.lower(), timeout=30)]


def doc_header_footer(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.odt", f"{DOCS}/{stem}-page.odt"
    lines = [f"{rng.choice(['Notes', 'Minutes', 'News', 'Plans'])} for {rng.choice(PEOPLE)}",
             *_sentences(rng, rng.randint(1, 4))]
    which = rng.choice(["header", "footer", "both"])
    header = _mark_text(rng) if which in ("header", "both") else None
    footer = _mark_text(rng) if which in ("footer", "both") else None
    while footer is not None and footer == header:
        footer = _mark_text(rng)
    asked = " and ".join(f"a page {kind} reading '{text}'"
                         for kind, text in (("header", header), ("footer", footer)) if text is not None)
    postconfig, expected = write_expected(f"{stem}.odt", odt_bytes(lines, header, footer))
    marks = "\n".join(f"{kind}: {text}" for kind, text in (("header", header), ("footer", footer)) if text is not None)
    window = f"{stem}.odt - {WRITER}"
    oracle: list[dict[str, Any]] = [_ready(window)]
    for is_footer, text in ((False, header), (True, footer)):
        if text is not None:
            oracle += [*_header_footer_menu(window, is_footer), op("type", text=text)]
    return {
        "instruction": f"The document ~/Documents/{stem}.odt is open in LibreOffice Writer. Add {asked} to its "
                       f"pages (the default page style), leaving the text of the document as it is. Save it in "
                       f"OpenDocument format as ~/Documents/{stem}-page.odt",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, odt_bytes(lines)),
        "evaluator": {"func": ["compare_docx_files", "exact_match"], "conj": "and",
                      "result": [vm_file(out), cmd(_PAGE_MARKS.format(path=q(out)))],
                      "expected": [vm_file(expected, "expected.odt"), rule(expected=marks)],
                      "options": [{}, {}], "postconfig": [postconfig]},
        "oracle": [*oracle, *save_as(out, WRITER), DONE],
    }


_SPACINGS = {"1.15": ("single spacing widened to 1.15 lines", 276), "1.5": ("one and a half lines", 360),
             "2": ("double spacing (2 lines)", 480)}
"""Format > Spacing's line spacings: how the task names each, and its Word value (240ths of a line)."""


def docx_spaced(paragraphs: list[str], lines: list[int | None]) -> bytes:
    """A Word document of ``paragraphs``, each with its proportional line spacing (240ths of a line; None:
    none set), the same bytes for the same input.

    >>> import io
    >>> from docx import Document
    >>> d = Document(io.BytesIO(docx_spaced(["Title", "Body"], [None, 360])))
    >>> [p.paragraph_format.line_spacing for p in d.paragraphs]
    [None, 1.5]
    """
    def par(text: str, line: int | None) -> str:
        spacing = f'<w:pPr><w:spacing w:line="{line}" w:lineRule="auto"/></w:pPr>' if line else ""
        return f'<w:p>{spacing}<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r></w:p>'

    return docx_with_body("".join(par(t, n) for t, n in zip(paragraphs, lines, strict=True)))


def doc_line_spacing(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}-spaced.docx"
    lines = [f"{rng.choice(['Report', 'Letter', 'Essay', 'Summary'])} by {rng.choice(PEOPLE)}",
             *_sentences(rng, rng.randint(2, 5))]
    key = rng.choice(sorted(_SPACINGS))
    named, value = _SPACINGS[key]
    skip_title = rng.random() < 0.5
    spaced = [None if skip_title and i == 0 else value for i in range(len(lines))]
    which = "every paragraph except the title (the first one)" if skip_title else "every paragraph"
    postconfig, expected = write_expected(f"{stem}.docx", docx_spaced(lines, spaced))
    window = f"{stem}.docx - {WRITER}"
    # Ctrl+Down goes to the next paragraph's start, so the title is left out however it wraps.
    select = ([op("hotkey", keys=["ctrl", "Home"]), op("hotkey", keys=["ctrl", "down"]),
               op("hotkey", keys=["ctrl", "shift", "End"])] if skip_title else [op("hotkey", keys=["ctrl", "a"])])
    item = f"Line Spacing: {key}"
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. Set the line spacing "
                       f"of {which} to {named}, changing nothing else. Save it in Word format as "
                       f"~/Documents/{stem}-spaced.docx",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, docx_spaced(lines, [None] * len(lines))),
        "evaluator": {"func": "compare_line_spacing", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.docx"), "postconfig": [postconfig]},
        # Format > Spacing is the menu's second item; its submenu lists 1, 1.15, 1.5 and 2 in that order.
        "oracle": [_ready(window), *select, *menu(window, ["alt", "o"], "Spacing", role="menu"),
                   op("press", key="down"), op("press", key="right"),
                   op("wait_enabled", window=window, control="Line Spacing: 1", role="check-menu-item", timeout=30),
                   *(op("press", key="down") for _ in range(sorted(_SPACINGS).index(key) + 1)),
                   op("wait_enabled", window=window, control=item, role="check-menu-item", timeout=30),
                   op("press", key="enter"), *save_as(out, WRITER), DONE],
    }


def _replaceable(rng: random.Random) -> tuple[list[str], str, str]:
    """Paragraphs in which a city occurs at least twice and only as a whole word, that city, and another
    city (not in the text) to put in its place."""
    while True:
        lines = [f"Visits to {rng.choice(CITIES)}", *_sentences(rng, rng.randint(3, 6))]
        text = "\n".join(lines)
        counts = {c: len(re.findall(rf"\b{re.escape(c)}\b", text)) for c in CITIES}
        # Find and Replace matches any case and inside words: the city must occur only as itself
        found = [c for c, n in counts.items() if n >= 2 and text.lower().count(c.lower()) == n]
        if found:
            old = rng.choice(sorted(found))
            new = rng.choice([c for c in CITIES if c.lower() not in text.lower() and old.lower() not in c.lower()])
            return lines, old, new


def doc_find_replace(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}-replaced.docx"
    lines, old, new = _replaceable(rng)
    n = "\n".join(lines).count(old)
    replaced = [line.replace(old, new) for line in lines]
    postconfig, expected = write_expected(f"{stem}.docx", docx_spaced(replaced, [None] * len(lines)))
    window = f"{stem}.docx - {WRITER}"
    dialog = "Find and Replace"
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. The city {old} is "
                       f"wrong everywhere in it: replace every occurrence of {old} with {new}. Save it in Word "
                       f"format as ~/Documents/{stem}-replaced.docx",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, docx_spaced(lines, [None] * len(lines))),
        "evaluator": {"func": "compare_docx_files", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.docx"), "options": {}, "postconfig": [postconfig]},
        # Ctrl+H opens the dialog on its Find field; four Tabs (past the field's drop-down button and the
        # Match case and Whole words boxes) reach Replace. Replace All reports its count in the dialog.
        "oracle": [_ready(window), op("hotkey", keys=["ctrl", "h"]),
                   op("wait_focused", window=dialog, role="text", timeout=60), op("type", text=old),
                   *(op("press", key="tab") for _ in range(4)), op("type", text=new),
                   op("wait_enabled", window=dialog, control="Replace All", timeout=30),
                   op("click_element", window=dialog, name="Replace All", role="push-button", timeout=30),
                   op("wait_element", window=dialog, name=f"Search key replaced {n} times.", role="static",
                      timeout=30),
                   op("click_element", window=dialog, name="Close", role="push-button", timeout=30),
                   op("wait_gone", title=dialog, timeout=30), _ready(window), *save_as(out, WRITER), DONE],
    }
