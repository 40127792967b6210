"""The ``apps-multi`` suite: flows across two apps of the apps tier. Run it on ``tier: apps``."""

from __future__ import annotations

import random
from typing import Any

from osgym.tasks.generators import HOME, Template, op, vm_file
from osgym.tasks.suites.app_files import open_app, write_files
from osgym.tasks.suites.apps_smoke.common import ANIMALS, DONE, NAMES, WORDS, save_as
from osgym.tasks.suites.apps_smoke.common import open_app as open_browser

NAME = "apps-multi"
TIER = "apps"
DESCRIPTION = "Flows across apps: a table from a web page into a Calc sheet (needs tier: apps)."
CALC = "LibreOffice Calc"
HEADERS = [("Team", "Wins", "Losses"), ("City", "Stores", "Staff"), ("Runner", "Laps", "Minutes"),
           ("Class", "Pupils", "Rooms"), ("Farm", "Cows", "Goats")]


def _cell(coordinate: str, value: object) -> dict[str, Any]:
    return {"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate,
            "props": {"value": {"method": "eq", "ref": value}}}


def multi_table_to_sheet(rng: random.Random) -> dict[str, Any]:
    header = rng.choice(HEADERS)
    labels = [f"{w.title()}" for w in rng.sample(ANIMALS + WORDS, rng.randint(3, 6))]
    rows = [(label, rng.randint(0, 500), rng.randint(0, 500)) for label in labels]
    title = f"{rng.choice(WORDS).title()} {header[0].lower()} figures"
    page = f"{HOME}/Sites/{rng.choice(NAMES)}-{rng.randint(10, 99)}.html"
    out = f"{HOME}/Documents/{rng.choice(ANIMALS)}-{rng.choice(NAMES)}.xlsx"
    table = ("<table border=1><tr>" + "".join(f"<th>{h}</th>" for h in header) + "</tr>"
             + "".join(f"<tr><td>{a}</td><td>{b}</td><td>{c}</td></tr>" for a, b, c in rows) + "</table>")
    html = (f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
            f"<body>{table}</body></html>\n")
    rules = [_cell(f"{col}1", h) for col, h in zip("ABC", header, strict=True)]
    rules += [_cell(f"{col}{i}", v) for i, row in enumerate(rows, start=2) for col, v in zip("ABC", row, strict=True)]
    return {
        "instruction": f"Copy the table of the web page '{title}', open in the browser, into the empty LibreOffice "
                       f"Calc sheet so that it starts at cell A1, and save the sheet in Excel format as "
                       f"{out.replace(HOME, '~')}",
        "related_apps": ["chrome", "libreoffice_calc"],
        "config": [write_files({page: html}), *open_app(["libreoffice", "--calc"], CALC),
                   *open_browser(["chromium", f"file://{page}"], title)],
        "evaluator": {"func": "compare_table", "result": vm_file(out), "options": {"rules": rules}},
        # Alt+Tab goes back to the window used before (Calc, opened first). Calc
        # pastes a web page's table as HTML, after its Import Options dialog (language, number detection).
        "oracle": [op("wait_focused", window=title, timeout=60), op("hotkey", keys=["ctrl", "a"]),
                   op("hotkey", keys=["ctrl", "c"]), op("hotkey", keys=["alt", "tab"]),
                   op("wait_focused", window=CALC, role="table-cell", timeout=30), op("hotkey", keys=["ctrl", "Home"]),
                   op("hotkey", keys=["ctrl", "v"]),
                   op("wait_enabled", window="Import Options", control="OK", timeout=30), op("press", key="enter"),
                   op("wait_gone", title="Import Options", timeout=30),
                   op("wait_focused", window=CALC, role="table-cell", timeout=30), *save_as(out, CALC), DONE],
    }


TEMPLATES: list[Template] = [
    Template("multi-table-to-sheet", "multi_apps", "copy a table from a web page into a Calc sheet and save it",
             multi_table_to_sheet, difficulty=3),
]
