"""The ``apps-multi`` suite: flows across two apps of the apps tier. Run it on ``tier: apps``.

Each setup opens both apps with a focused ``wait_window`` each (the apps the focus check of
:mod:`osgym.episodes.focus` lets input go to), then lays their windows out side by side at a seeded split,
above the seeded distractor window, with the app the task starts in focused. The oracle switches apps as a
person does: it clicks the other app's window (found by title, or an element of it found through the
accessibility tree), never a blind Alt+Tab, which goes to whichever window had the focus before (the
distractor, if it opened last).
"""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.browser import PAGE_URLS
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, WORDS, docx_bytes, open_app, save_as
from osgym.suites.generators import Template, cmd, execute, op, q, rule, vm_file
from osgym.suites.variation import Variation

NAME = "apps-multi"
TIER = "apps"
DESCRIPTION = ("Flows across apps: a table from a web page into a Calc sheet, a code from a Writer document into "
               "a page's form (needs tier: apps).")
CALC = "LibreOffice Calc"
WRITER = "LibreOffice Writer"
HEADERS = [("Team", "Wins", "Losses"), ("City", "Stores", "Staff"), ("Runner", "Laps", "Minutes"),
           ("Class", "Pupils", "Rooms"), ("Farm", "Cows", "Goats")]
SIDE_BY_SIDE = Variation(geometry=False)
"""Theme, zoom and the distractor as every apps-tier task; the window geometry is the template's own
side-by-side layout (:func:`side_by_side`), which keeps both apps in sight for the switch."""

_TILE = ("python3 - {left} {right} {split} {active} <<'PY'\n"
         "import subprocess, sys, time\n"
         "from Xlib import X, display\n"
         "d = display.Display()\n"
         "root = d.screen().root\n"
         "W, H = d.screen().width_in_pixels, d.screen().height_in_pixels - 30\n"
         "left, right, split, active = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]\n"
         "def find(title):\n"
         "    listed = subprocess.run(['wmctrl', '-l'], capture_output=True, text=True, check=True).stdout\n"
         "    for line in listed.splitlines():\n"
         "        if title.lower() in line.split(None, 3)[-1].lower():\n"
         "            return int(line.split()[0], 16)\n"
         "    sys.exit(f'no window {{title!r}}')\n"
         "w = W * split // 1000\n"
         "want = {{find(left): (0, 30, w, H), find(right): (w, 30, W - w, H)}}\n"
         "for wid, (x, y, ww, hh) in want.items():\n"
         "    for args in (['-b', 'remove,maximized_vert,maximized_horz'], ['-e', f'0,{{x}},{{y}},{{ww}},{{hh}}']):\n"
         "        subprocess.run(['wmctrl', '-i', '-r', hex(wid), *args], check=True)\n"
         "first = find(active)\n"
         "def now():\n"
         "    return root.get_full_property(d.intern_atom('_NET_ACTIVE_WINDOW'), X.AnyPropertyType).value[0]\n"
         "for wid in sorted(want, key=lambda i: i == first):\n"
         "    subprocess.run(['wmctrl', '-i', '-a', hex(wid)], check=True)\n"
         "    for _ in range(100):\n"
         "        if now() == wid:\n"
         "            break\n"
         "        time.sleep(0.1)\n"
         "for _ in range(100):\n"
         "    at = {{}}\n"
         "    for wid in want:\n"
         "        win = d.create_resource_object('window', wid)\n"
         "        g, p = win.get_geometry(), root.translate_coords(win, 0, 0)\n"
         "        at[wid] = (p.x, p.y, g.width, g.height)\n"
         "    if now() == first and all(max(abs(a - b) for a, b in zip(at[i], want[i])) < 60 for i in want):\n"
         "        sys.exit(0)\n"
         "    time.sleep(0.1)\n"
         "sys.exit(f'windows at {{at}}, active {{now():#x}}; wanted {{want}}, active {{first:#x}}')\n"
         "PY")
"""Put the window titled ``left`` on the left ``split`` thousandths of the screen below the panel and ``right``
on the rest, raise both (over the distractor, opened before the last app) and activate ``active``, then wait
(at most 10 s) until the window manager reports that layout (within 60 px, as osgym.suites.variation does).
Each activation is waited for before the next, so that the app activated first does not take the focus back
from the one the task starts in."""


def side_by_side(rng: random.Random, start: str, other: str) -> dict[str, Any]:
    """A setup step (after both apps are up) laying the two apps' windows out side by side: which side each
    takes and where the split falls are seeded; ``start`` ends up focused, ``other`` above the distractor."""
    left, right = (start, other) if rng.random() < 0.5 else (other, start)
    step = execute(_TILE.format(left=q(left), right=q(right), split=rng.randint(420, 580), active=q(start)))
    step["parameters"]["timeout"] = 40
    return step


def _cell(coordinate: str, value: object) -> dict[str, Any]:
    return {"type": "check_cell", "sheet_idx": 0, "coordinate": coordinate,
            "props": {"value": {"method": "eq", "ref": value}}}


def _page(title: str, body: str) -> str:
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{title}</title></head>\n'
            f"<body><h1>{title}</h1>\n{body}</body></html>\n")


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
                   *open_app(["chromium", f"file://{page}"], title), side_by_side(rng, title, CALC)],
        "evaluator": {"func": "compare_table", "result": vm_file(out), "options": {"rules": rules}},
        # A click in the middle of the sheet's window brings Calc to the front with the focus on the sheet (the
        # table; Ctrl+Home then goes to A1). Calc pastes a web page's table as HTML, after its Import Options
        # dialog (language, number detection).
        "oracle": [op("wait_focused", window=title, timeout=60), op("hotkey", keys=["ctrl", "a"]),
                   op("hotkey", keys=["ctrl", "c"]), op("click_window", title=CALC),
                   op("wait_focused", window=CALC, role="table", timeout=30), op("hotkey", keys=["ctrl", "Home"]),
                   op("hotkey", keys=["ctrl", "v"]),
                   op("wait_enabled", window="Import Options", control="OK", timeout=30), op("press", key="enter"),
                   op("wait_gone", title="Import Options", timeout=30),
                   op("wait_focused", window=CALC, timeout=30), *save_as(out, CALC), DONE],
    }


def multi_doc_to_form(rng: random.Random) -> dict[str, Any]:
    """A reference code from a Writer document (its own paragraph among others) into a page's form."""
    who, shop = rng.choice(NAMES).title(), f"{rng.choice(ANIMALS).title()} {rng.choice(['Travel', 'Books', 'Tools'])}"
    kind = rng.choice(["order", "booking", "claim", "return", "repair"])
    code = (f"{rng.choice('BCDFGHJKLMNPRSTVWXZ')}{rng.choice('AEIOUY')}{rng.choice('BCDFGHJKLMNPRSTVWXZ')}"
            f"-{rng.randint(1000, 99999)}-{rng.choice('ABCDEFGHJKLMNPQRSTUVWXYZ')}{rng.randint(0, 9)}")
    before = [f"{shop}", f"Dear {who},", f"thank you for your {kind}.", f"Your {kind} reference is:"]
    after = [f"Keep this letter until your {kind} is complete.", rng.choice(["Kind regards,", "Best wishes,"]),
             f"The {shop} team"]
    extra = [f"It was placed on {rng.randint(1, 28)} {rng.choice(['May', 'June', 'July', 'March'])}.",
             f"Ask for {rng.choice(NAMES).title()} at the desk.", f"Our shop opens at {rng.randint(7, 10)} am."]
    before[2:2] = rng.sample(extra, rng.randint(0, 2))
    paragraphs = [*before, code, *after]
    k = len(before)
    stem = f"{kind}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}"
    doc, window = f"{HOME}/Documents/{stem}.docx", f"{stem}.docx - {WRITER}"
    title = f"{shop} {kind} desk"
    field = rng.choice(["Reference", "Code", "Number"])
    page = f"{HOME}/Sites/{rng.choice(NAMES)}-{rng.randint(10, 99)}.html"
    body = (f'<p>Enter the {kind} reference from your letter.</p>\n'
            f'<form><label>{field} <input name="ref" size="30"></label> <button type="submit">Send</button></form>\n'
            "<script>if (location.search) { document.title = 'Received'; }</script>")
    return {
        "instruction": f"The letter ~/Documents/{stem}.docx is open in LibreOffice Writer. Copy the {kind} "
                       f"reference it gives into the {field} field of the page '{title}', open in the browser, and "
                       "send the form.",
        "related_apps": ["libreoffice_writer", "chrome"],
        "config": [write_files({page: _page(title, body), doc: docx_bytes(paragraphs)}),
                   *open_app(["chromium", f"file://{page}"], title),
                   *open_app(["libreoffice", "--writer", doc], window), side_by_side(rng, window, title)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(PAGE_URLS),
                      "expected": rule(include=[f"file://{page}?ref={code}"], exclude=[])},
        # The code is a paragraph of its own, k lines below the top (each paragraph is one short line): Home,
        # Shift+End selects it. A click on the page's field brings the browser to the front with the caret there.
        "oracle": [op("wait_focused", window=window, role="paragraph", timeout=90), op("hotkey", keys=["ctrl", "Home"]),
                   *[op("press", key="down")] * k, op("press", key="Home"), op("hotkey", keys=["shift", "End"]),
                   op("hotkey", keys=["ctrl", "c"]), op("click_element", window=title, name=field, role="entry"),
                   op("wait_focused", window=title, role="entry", timeout=30), op("hotkey", keys=["ctrl", "v"]),
                   op("press", key="enter"), op("wait_window", title="Received - Google Chrome", timeout=30), DONE],
    }


TEMPLATES: list[Template] = [
    Template("multi-table-to-sheet", "multi_apps", "copy a table from a web page into a Calc sheet and save it",
             multi_table_to_sheet, difficulty=3, vary=SIDE_BY_SIDE),
    Template("multi-doc-to-form", "multi_apps", "copy a code from a Writer document into a page's form and send it",
             multi_doc_to_form, difficulty=2, vary=SIDE_BY_SIDE),
]
