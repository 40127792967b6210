"""apps-documents templates: each writes its input document, asks for one change in LibreOffice Writer,
and scores the saved or exported file with OSWorld's document metrics."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import (
    ANIMALS,
    DONE,
    NAMES,
    docx_bytes,
    open_app,
    save_as,
    write_expected,
)
from osgym.suites.apps_spreadsheet.calc import CITIES, PEOPLE, PRODUCTS
from osgym.suites.generators import op, vm_file
from osgym.suites.office import convert_expected, docx_with_table, file_dialog, menu, unlocked

WRITER = "LibreOffice Writer"
DOCS = f"{HOME}/Documents"
SUBJECTS = ["The team", "Our office", "The committee", "The club", "The library", "The workshop", "The crew"]
VERBS = ["meets", "closes", "opens", "travels", "reports", "votes", "plans"]
WHEN = ["on Monday", "on Tuesday", "next week", "in March", "at noon", "after lunch", "every Friday", "in June"]
EXTRA = ["Bring a notebook.", "Coffee is provided.", "Seats are limited.", "Guests are welcome.",
         "Please arrive early.", "The room is on the second floor.", "Parking is free.", "Lunch is at one."]


def _sentences(rng: random.Random, k: int) -> list[str]:
    """``k`` distinct sentences as Writer's autocorrect leaves them (capitalised, no quotes or dashes)."""
    out: list[str] = []
    while len(out) < k:
        s = (f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(WHEN)} in {rng.choice(CITIES)}. "
             f"{rng.choice(EXTRA)}")
        if s not in out:
            out.append(s)
    return out


def _stem(rng: random.Random) -> str:
    return f"{rng.choice(ANIMALS)}-{rng.choice(NAMES)}-{rng.randint(10, 99)}"


def _ready(title: str) -> dict[str, Any]:
    """Wait until the document's text has the keyboard focus (Writer drops keys until then)."""
    return op("wait_focused", window=title, role="paragraph", timeout=90)


def _opened(path: str, title: str, data: bytes) -> list[dict[str, Any]]:
    return [write_files({path: data}), *open_app(["libreoffice", "--writer", path], title)]


def doc_strike_center(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}-edited.docx"
    title = f"{rng.choice(['Notes', 'Minutes', 'News', 'Plans'])} of the {rng.choice(ANIMALS).title()} Society"
    lines = [title, *_sentences(rng, rng.randint(2, 4))]
    postconfig, expected = write_expected(f"{stem}.docx", docx_bytes(lines))
    window = f"{stem}.docx - {WRITER}"
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. Center its title (the "
                       f"first paragraph) and strike through the whole last paragraph, which is out of date. Save "
                       f"it in Word format as ~/Documents/{stem}-edited.docx",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, docx_bytes(lines)),
        "evaluator": {"func": ["is_first_line_centered", "evaluate_strike_through_last_paragraph"], "conj": "and",
                      "result": [vm_file(out), vm_file(out, "struck.docx")],
                      "expected": [None, vm_file(expected, "expected.docx")], "options": [{}, {}],
                      "postconfig": [postconfig]},
        # Ctrl+Shift+Up from the end selects the last paragraph however many lines it wraps to; Format >
        # Text > Strikethrough by its access key once the submenu is open.
        "oracle": [_ready(window), op("hotkey", keys=["ctrl", "Home"]), op("hotkey", keys=["ctrl", "e"]),
                   op("hotkey", keys=["ctrl", "End"]), op("hotkey", keys=["ctrl", "shift", "up"]),
                   op("hotkey", keys=["alt", "o"]),
                   op("wait_enabled", window=window, control="Text", role="menu", timeout=30),
                   op("press", key="right"),
                   op("wait_enabled", window=window, control="Strikethrough", role="check-menu-item", timeout=30),
                   op("press", key="o"), *save_as(out, WRITER), DONE],
    }


def doc_insert_table(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}-table.docx"
    cols = rng.randint(2, 4)
    rows = rng.randint(2, 5)
    head = rng.sample(["Name", "City", "Item", "Count", "Price", "Day", "Room"], cols)
    pools = {"Name": PEOPLE, "City": CITIES, "Item": PRODUCTS, "Room": [f"R{i}" for i in range(100, 400)]}
    body = [[rng.choice(pools[h]) if h in pools else str(rng.randint(1, 999)) for h in head] for _ in range(rows - 1)]
    table = [head, *body]
    intro = f"{rng.choice(['Order', 'Stock', 'Visit', 'Guest'])} list for {rng.choice(CITIES)}"
    postconfig, expected = write_expected(f"{stem}.docx", docx_with_table([intro], table))
    window = f"{stem}.docx - {WRITER}"
    listing = " / ".join(", ".join(r) for r in table)
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. Below its first line, "
                       f"insert a table of {cols} columns and {rows} rows holding, row by row (cells separated by "
                       f"commas, rows by slashes): {listing}. Save it in Word format as "
                       f"~/Documents/{stem}-table.docx",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, docx_bytes([intro])),
        "evaluator": {"func": "compare_docx_tables", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.docx"), "postconfig": [postconfig]},
        # Table > Insert Table... is the Table menu's first item; the dialog opens on its Name field, then
        # Tab reaches Columns and Rows (their text selected, so typing replaces it). A sensitive Insert
        # button does not mean the dialog has the keyboard focus, nor does the dialog's going mean Writer
        # has it back: a key sent in either gap lands elsewhere, so both focuses are waited for.
        "oracle": [_ready(window), op("hotkey", keys=["ctrl", "End"]), op("press", key="enter"),
                   *menu(window, ["alt", "a"], "Insert Table..."), op("press", key="enter"),
                   op("wait_enabled", window="Insert Table", control="Insert", timeout=60),
                   op("wait_focused", window="Insert Table", role="text", timeout=60),
                   op("press", key="tab"), op("type", text=str(cols)), op("press", key="tab"),
                   op("type", text=str(rows)), op("wait_enabled", window="Insert Table", control="Insert"),
                   op("press", key="enter"), op("wait_gone", title="Insert Table", timeout=60),
                   _ready(window), op("type", text="\t".join(c for r in table for c in r)),
                   *save_as(out, WRITER), DONE],
    }


def _export_pdf(window: str, out: str) -> list[dict[str, Any]]:
    """File > Export As > Export Directly as PDF: nine items up from the File menu's first (wrapping round
    to the bottom), its submenu to the right, the second item there, then the file chooser."""
    return [*menu(window, ["alt", "f"], "Export As", role="menu"), *(op("press", key="up") for _ in range(9)),
            op("press", key="right"),
            op("wait_enabled", window=window, control="Export Directly as PDF", role="menu-item", timeout=30),
            op("press", key="down"), op("press", key="enter"), *file_dialog("Export", "Export", out),
            op("wait_gone", title="Export", timeout=60)]


def _pdf_eval(out: str, stem: str, expected_docx: bytes) -> dict[str, Any]:
    """``compare_pdfs`` with the expected document exported by a headless LibreOffice of its own, and a
    one-page check; the postconfig first waits for the agent's export to be written."""
    keep, kept = write_expected(f"{stem}.docx", expected_docx)
    folder = kept.rsplit("/", 1)[0]
    return {"func": ["compare_pdfs", "check_pdf_pages"], "conj": "and",
            "result": [vm_file(out), vm_file(out, "pages.pdf")],
            "expected": [vm_file(f"{folder}/{stem}.pdf", "expected.pdf"),
                         {"type": "rule", "rules": {"relation": "eq", "ref_value": 1}}],
            "options": [{}, {}], "postconfig": [unlocked(out), keep, convert_expected(kept, "pdf", folder)]}


def doc_export_pdf(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}.pdf"
    lines = [f"{rng.choice(['Report', 'Letter', 'Notice', 'Memo'])} for {rng.choice(PEOPLE)}",
             *_sentences(rng, rng.randint(2, 5))]
    data = docx_bytes(lines)
    window = f"{stem}.docx - {WRITER}"
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. Export it as a PDF "
                       f"file to ~/Documents/{stem}.pdf",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, data),
        "evaluator": _pdf_eval(out, stem, data),
        "oracle": [_ready(window), *_export_pdf(window, out), DONE],
    }


def doc_sign_export_pdf(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.docx", f"{DOCS}/{stem}-signed.pdf"
    lines = [f"{rng.choice(['Offer', 'Contract', 'Agreement', 'Receipt'])} for {rng.choice(PEOPLE)}",
             *_sentences(rng, rng.randint(1, 3))]
    closing = f"Signed by {rng.choice(PEOPLE)} in {rng.choice(CITIES)} on day {rng.randint(1, 28)}."
    window = f"{stem}.docx - {WRITER}"
    return {
        "instruction": f"The document ~/Documents/{stem}.docx is open in LibreOffice Writer. Add a last paragraph "
                       f"reading '{closing}' and export the document as a PDF file to "
                       f"~/Documents/{stem}-signed.pdf",
        "related_apps": ["libreoffice_writer"], "config": _opened(src, window, docx_bytes(lines)),
        "evaluator": _pdf_eval(out, f"{stem}-signed", docx_bytes([*lines, closing])),
        "oracle": [_ready(window), op("hotkey", keys=["ctrl", "End"]), op("type", text=f"\n{closing}"),
                   *_export_pdf(window, out), DONE],
    }
