"""apps-smoke templates: LibreOffice Calc and Writer, saving to Microsoft formats."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.apps_smoke.common import (
    ANIMALS,
    DONE,
    NAMES,
    WORDS,
    docx_bytes,
    open_app,
    save_as,
    unprefixed,
    write_expected,
)
from osgym.suites.generators import op, vm_file

CALC = "LibreOffice Calc"
WRITER = "LibreOffice Writer"
HEADERS = [("Item", "Qty"), ("Product", "Count"), ("Fruit", "Boxes"), ("Part", "Stock")]
PLACES = ["library", "harbor", "station", "museum", "bakery", "garden", "market", "school"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def _cell(coordinate: str, value: object) -> dict[str, Any]:
    return {"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate,
            "props": {"value": {"method": "eq", "ref": value}}}


def calc_enter_table(rng: random.Random) -> dict[str, Any]:
    header = rng.choice(HEADERS)
    n = rng.randint(2, 4)
    # Column A must hold no entry that starts another (Calc's AutoInput would complete it): the items,
    # the header and "Total" are drawn together.
    items = unprefixed(rng, [w for w in WORDS if w[:2] not in ("to", header[0][:2].lower())], n)
    qtys = [rng.randint(2, 99) for _ in items]
    name = f"{rng.choice(NAMES)}-{rng.randint(10, 99)}"
    path = f"{HOME}/Documents/{name}.xlsx"
    last = n + 1
    rows = [header, *zip(items, qtys, strict=True)]
    typed = "".join(f"{a}\t{b}\n" for a, b in rows) + f"Total\t=SUM(B2:B{last})\n"
    table = "; ".join(f"{a} {b}" for a, b in rows[1:])
    rules = [_cell("A1", header[0]), _cell("B1", header[1]),
             *[c for i, (w, q) in enumerate(rows[1:], start=2) for c in (_cell(f"A{i}", w), _cell(f"B{i}", q))],
             _cell(f"A{last + 1}", "Total"), _cell(f"B{last + 1}", sum(qtys))]
    return {
        "instruction": f"In LibreOffice Calc, enter a table starting at cell A1 with the headers {header[0]} and "
                       f"{header[1]}, then one row per entry: {table}. Below the last row put Total in column A "
                       f"and the sum of column B, as a formula, in column B. Save it in Excel format as "
                       f"~/Documents/{name}.xlsx",
        "related_apps": ["libreoffice_calc"], "config": open_app(["libreoffice", "--calc"], CALC),
        "evaluator": {"func": "compare_table", "result": vm_file(path), "options": {"rules": rules}},
        "oracle": [op("wait_focused", window=CALC, role="table-cell", timeout=30), op("type", text=typed),
                   *save_as(path, CALC), DONE],
    }


def writer_write_note(rng: random.Random) -> dict[str, Any]:
    animal, place, day = rng.choice(ANIMALS), rng.choice(PLACES), rng.choice(DAYS)
    w1, w2, w3 = rng.sample(WORDS, 3)
    # Sentences as Writer's autocorrect leaves them: capitalised, no quotes, dashes or ordinals.
    title = f"The {animal.title()} Club"
    lines = [title, f"We meet at the {place} on {day}.", f"Please bring a {w1}, a {w2} and a {w3}."]
    name = f"{animal}-{rng.choice(NAMES)}"
    path = f"{HOME}/Documents/{name}.docx"
    postconfig, expected = write_expected(f"{name}.docx", docx_bytes(lines))
    return {
        "instruction": f"In LibreOffice Writer, write a note of three paragraphs: the title '{lines[0]}', then "
                       f"'{lines[1]}', then '{lines[2]}'. Center the title, and save the note in Word format "
                       f"as ~/Documents/{name}.docx",
        "related_apps": ["libreoffice_writer"], "config": open_app(["libreoffice", "--writer"], WRITER),
        "evaluator": {"func": ["compare_docx_files", "is_first_line_centered"], "conj": "and",
                      "result": [vm_file(path), vm_file(path, "centered.docx")],
                      "expected": [vm_file(expected, "expected.docx"), None], "options": [{}, {}],
                      "postconfig": [postconfig]},
        "oracle": [op("wait_focused", window=WRITER, role="paragraph", timeout=30), op("type", text="\n".join(lines)),
                   op("hotkey", keys=["ctrl", "Home"]), op("hotkey", keys=["ctrl", "e"]), *save_as(path, WRITER),
                   DONE],
    }
