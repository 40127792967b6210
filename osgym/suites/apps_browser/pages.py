"""apps-browser templates: Chromium on local pages that setup writes (``file://`` URLs).

Oracles drive the page by keyboard: each page puts the focus on its first link or field by script (as
a page with ``autofocus`` does), so Tab moves through its links in document order, and the oracle waits
for that focus before its first key.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from html import escape
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import poll_then, write_files
from osgym.suites.apps_smoke.browser import PAGE_URLS
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, WORDS, open_app
from osgym.suites.generators import cmd, execute, op, q, rule

SITE_DIR = f"{HOME}/Sites"
CHROMIUM = ["chromium"]
"""Started by a ``launch`` step (apps-smoke's ``open_app``), where the seeded variation adds its zoom flag."""
FOCUS_FIRST = "<script>document.querySelector('{}').focus();</script>"
GOODS = ["lamp", "chair", "kettle", "basket", "candle", "mirror", "teapot", "blanket", "clock", "vase", "rug",
         "stool", "shelf", "pillow", "bucket", "ladder", "scarf", "jacket", "helmet", "lantern", "compass", "globe"]
COLUMNS: list[tuple[str, Callable[[random.Random], str]]] = [
    ("Price", lambda r: f"{r.randint(3, 240)}.{r.choice(['00', '50', '25', '75', '99'])}"),
    ("Stock", lambda r: str(r.randint(0, 500))), ("Shelf", lambda r: f"{r.choice('ABCDEFGH')}{r.randint(1, 40)}"),
    ("Code", lambda r: f"{r.choice('KLMNPRSTVX')}{r.randint(1000, 9999)}")]


def _page(title: str, body: str, focus: str = "a") -> str:
    return (f'<!doctype html>\n<html><head><meta charset="utf-8"><title>{escape(title)}</title></head>\n'
            f"<body><h1>{escape(title)}</h1>\n{body}\n{FOCUS_FIRST.format(focus)}</body></html>\n")


def _links(items: list[tuple[str, str]]) -> str:
    return "<ul>" + "".join(f'<li><a href="{h}">{escape(t)}</a></li>' for t, h in items) + "</ul>"


def _tabs_then_enter(n: int) -> list[dict[str, Any]]:
    return [*[op("press", key="tab")] * n, op("press", key="enter")]


def web_table_lookup(rng: random.Random) -> dict[str, Any]:
    """Search within a page: read one value off a long table, send it in the page's form."""
    shop = f"{rng.choice(ANIMALS).title()} {rng.choice(['Store', 'Depot', 'Market', 'Outlet', 'Shop'])}"
    column, draw = rng.choice(COLUMNS)
    goods = rng.sample(GOODS, rng.randint(10, 16))
    values = [draw(rng) for _ in goods]
    k = rng.randrange(len(goods))
    rows = "".join(f"<tr><td>{g}</td><td>{v}</td></tr>" for g, v in zip(goods, values, strict=True))
    page = f"{rng.choice(NAMES)}-{rng.randint(10, 99)}.html"
    path = f"{SITE_DIR}/{page}"
    body = (f"<table border=1><tr><th>Item</th><th>{column}</th></tr>{rows}</table>\n"
            '<form><label>Answer <input name="answer"></label> <button type="submit">Send</button></form>\n'
            "<script>if (location.search) { document.title = 'Received'; }</script>")
    return {
        "instruction": f"The browser shows the {shop} inventory. Look up the {column.lower()} of the {goods[k]} "
                       f"on that page, type it into the Answer field at the bottom and send the form.",
        "related_apps": ["chrome"],
        "config": [write_files({path: _page(shop, body, focus="input")}),
                   *open_app([*CHROMIUM, f"file://{path}"], shop)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(PAGE_URLS),
                      "expected": rule(include=[f"file://{path}?answer={values[k]}"], exclude=[])},
        "oracle": [op("wait_focused", window=shop, role="entry", timeout=30), op("type", text=f"{values[k]}\n"),
                   op("wait_window", title="Received - Google Chrome", timeout=30), DONE],
    }


def web_follow_links(rng: random.Random) -> dict[str, Any]:
    """Navigation: from a site's home page to a section, then to one of its pages (two links)."""
    site = f"{rng.choice(WORDS).title()} {rng.choice(['Club', 'Library', 'Guild', 'Museum', 'Garden', 'Society'])}"
    sections = rng.sample(["News", "Events", "Members", "Archive", "Projects", "Gallery", "Shop", "Contact"],
                          rng.randint(3, 5))
    root = f"{SITE_DIR}/{rng.choice(ANIMALS)}-{rng.randint(100, 999)}"
    files: dict[str, str] = {}
    pages: dict[str, list[str]] = {}
    for s in sections:
        pages[s] = [f"{s} {w.title()}" for w in rng.sample(WORDS, rng.randint(3, 5))]
        files[f"{root}/{s.lower()}.html"] = _page(f"{site} {s}", _links(
            [(t, t.lower().replace(" ", "-") + ".html") for t in pages[s]]))
        for t in pages[s]:
            files[f"{root}/{t.lower().replace(' ', '-')}.html"] = _page(t, f"<p>{escape(t)} of the {escape(site)}.</p>",
                                                                        focus="body")
    files[f"{root}/index.html"] = _page(site, _links([(s, f"{s.lower()}.html") for s in sections]))
    i = rng.randrange(len(sections))
    section = sections[i]
    j = rng.randrange(len(pages[section]))
    target = pages[section][j]
    target_url = f"file://{root}/{target.lower().replace(' ', '-')}.html"
    return {
        "instruction": f"The browser shows the home page of the {site}. Go to its {section} section and open the "
                       f"page {target} from there.",
        "related_apps": ["chrome"],
        "config": [write_files(files), *open_app([*CHROMIUM, f"file://{root}/index.html"], site)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(PAGE_URLS),
                      "expected": rule(include=[target_url], exclude=[f"file://{root}/index.html"])},
        # Each page focuses its first link, so the i-th link is i Tabs away.
        "oracle": [op("wait_focused", window=site, role="link", timeout=30), *_tabs_then_enter(i),
                   op("wait_focused", window=f"{site} {section}", role="link", timeout=30), *_tabs_then_enter(j),
                   op("wait_window", title=f"{target} - Google Chrome", timeout=30), DONE],
    }


BOOKMARK_LIST = ("python3 -c \"import json,sys\nd=json.load(open(sys.argv[1]))\ndef walk(n):\n"
                 " [walk(c) for c in n.get('children', [])]\n"
                 " if n.get('type') == 'url': print(n['name'] + ' | ' + n['url'])\n"
                 "[walk(r) for r in d['roots'].values() if isinstance(r, dict)]\" ")
"""Every bookmark in the Bookmarks file given, in any folder, as ``name | url`` lines."""
BOOKMARKS = f"{HOME}/.config/google-chrome/Default/Bookmarks"


def web_bookmark_page(rng: random.Random) -> dict[str, Any]:
    """Bookmarks: bookmark the open page under a given name (checked in the profile's Bookmarks file)."""
    topic = f"{rng.choice(WORDS).title()} {rng.choice(['recipes', 'timetable', 'notes', 'map', 'guide', 'rules'])}"
    name = f"{rng.choice(ANIMALS).title()} {rng.choice(WORDS)} {rng.randint(1, 99)}"
    path = f"{SITE_DIR}/{topic.lower().replace(' ', '-')}-{rng.randint(10, 99)}.html"
    url = f"file://{path}"
    return {
        "instruction": f"Bookmark the page open in the browser ({topic}) under the name '{name}'.",
        "related_apps": ["chrome"],
        "config": [write_files({path: _page(topic, f"<p>All about {escape(topic.lower())}.</p>", focus="body")}),
                   *open_app([*CHROMIUM, url], topic)],
        "evaluator": {"func": "check_include_exclude",
                      "result": poll_then(f"grep -qF {q(name)} {q(BOOKMARKS)} 2>/dev/null",
                                          BOOKMARK_LIST + q(BOOKMARKS)),
                      "expected": rule(include=[f"{name} | {url}"], exclude=[])},
        # Ctrl+D adds the bookmark and opens its bubble with the name selected in its field.
        # (The bubble is a dialog in the accessibility tree, not a managed window.) Chromium writes the file
        # a moment after the change: the evaluator waits for the name to be there.
        "oracle": [op("wait_focused", window=topic, timeout=30), op("hotkey", keys=["ctrl", "d"]),
                   op("wait_focused", window="Bookmark added", role="entry", timeout=30),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=name), op("press", key="enter"), DONE],
    }


def web_download_file(rng: random.Random) -> dict[str, Any]:
    """Downloads: one of several files linked from a page (checked in ~/Downloads)."""
    project = f"{rng.choice(ANIMALS).title()} {rng.choice(['project', 'survey', 'archive', 'release'])}"
    names = [f"{w}-{rng.randint(1, 9)}.{rng.randint(0, 9)}.zip" for w in rng.sample(WORDS, rng.randint(3, 5))]
    k = rng.randrange(len(names))
    folder = f"{SITE_DIR}/{project.lower().replace(' ', '-')}"
    # The smallest zip archive (an empty one): Chromium downloads a zip rather than showing it.
    files: dict[str, str | bytes] = {f"{folder}/files/{n}": b"PK\x05\x06" + bytes(18) for n in names}
    files[f"{folder}/index.html"] = _page(f"{project} downloads", _links([(n, f"files/{n}") for n in names]))
    others = [n for n in names if n != names[k]]
    return {
        "instruction": f"From the {project} downloads page open in the browser, download {names[k]} (only that file).",
        "related_apps": ["chrome"],
        "config": [write_files(files), *open_app([*CHROMIUM, f"file://{folder}/index.html"], f"{project} downloads")],
        "evaluator": {"func": "check_include_exclude",
                      "result": poll_then(f"test -f ~/Downloads/{names[k]}", "ls -a ~/Downloads"),
                      "expected": rule(include=[names[k]], exclude=[".crdownload", *others])},
        "oracle": [op("wait_focused", window=f"{project} downloads", role="link", timeout=30), *_tabs_then_enter(k),
                   DONE],
    }


BAYS = "ABCDEFGHJKLMNPRSTUVW"


def web_find_in_page(rng: random.Random) -> dict[str, Any]:
    """Search within a page: find one entry among well over a screenful (Ctrl+F) and send a value it gives in
    the form that stays at the top of the page."""
    depot = f"{rng.choice(WORDS).title()} {rng.choice(['depot', 'warehouse', 'store room', 'yard', 'archive'])}"
    field = rng.choice(["Bay", "Location", "Place"])
    codes = rng.sample([f"{w}-{a}-{n}" for w in WORDS for a in ANIMALS for n in range(10, 100, 7)],
                       rng.randint(120, 180))
    bays = [f"{rng.choice(BAYS)}-{rng.randint(1, 60)}" for _ in codes]
    k = rng.randrange(len(codes) // 2, len(codes))  # below the first screenful at any zoom
    entries = "\n".join(f"<p>Part {c}: {rng.randint(1, 400)} units in bay {b}, checked "
                        f"{rng.randint(1, 28)}/{rng.randint(1, 12)}.</p>" for c, b in zip(codes, bays, strict=True))
    title = f"{depot.title()} stock list"
    path = f"{SITE_DIR}/{rng.choice(NAMES)}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}.html"
    body = ('<form style="position: sticky; top: 0; background: #eef; padding: 8px">'
            f'<label>{field} <input name="place"></label> <button type="submit">Send</button></form>\n'
            f"{entries}\n<script>if (location.search) {{ document.title = 'Received'; }}</script>")
    return {
        "instruction": f"The browser shows the {title}, a long list of parts. Find part {codes[k]} on it, type the "
                       f"bay it is in into the {field} field at the top of the page and send the form.",
        "related_apps": ["chrome"],
        "config": [write_files({path: _page(title, body, focus="input")}),
                   *open_app([*CHROMIUM, f"file://{path}"], title)],
        "evaluator": {"func": "check_include_exclude", "result": cmd(PAGE_URLS),
                      "expected": rule(include=[f"file://{path}?place={bays[k]}"], exclude=[])},
        # Find in page (Ctrl+F, the text, Escape) scrolls to the entry and leaves the focus on the page, not in
        # the field: a click on the field (it stays in sight at the top) puts the caret back there.
        "oracle": [op("wait_focused", window=title, role="entry", timeout=30), op("hotkey", keys=["ctrl", "f"]),
                   op("type", text=codes[k]), op("press", key="enter"), op("press", key="Escape"),
                   op("click_element", window=title, name=field, role="entry", timeout=30),
                   op("wait_focused", window=title, role="entry", timeout=30), op("type", text=f"{bays[k]}\n"),
                   op("wait_window", title="Received - Google Chrome", timeout=30), DONE],
    }


FONT_SIZES = [9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 40, 44, 48, 56, 64, 72]
"""The stops of the Font size slider in chrome://settings/fonts (its arrow keys step through them)."""
PREFERENCES = f"{HOME}/.config/google-chrome/Default/Preferences"
TOPIC_KINDS = ["recipes", "timetable", "notes", "guide", "rules", "news", "minutes", "letters", "menu", "diary",
               "manual", "stories"]


def web_font_size(rng: random.Random) -> dict[str, Any]:
    """Settings: the default font size (``webkit.webprefs.default_font_size`` in the profile's Preferences, read
    with OSWorld's ``chrome_font_size`` getter and ``check_font_size`` metric)."""
    topic = f"{rng.choice(WORDS).title()} {rng.choice(TOPIC_KINDS)}"
    size = rng.choice([s for s in FONT_SIZES[:19] if s != 16])
    reason = rng.choice(["to read comfortably", "to read from where you sit", "on this screen", "for a long read"])
    path = f"{SITE_DIR}/{topic.lower().replace(' ', '-')}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}.html"
    feel = "too small" if size > 16 else "too large"
    # Chromium writes Preferences some seconds after a change: the evaluator waits (at most 30 s) for the size
    # asked for, then reads the file as OSWorld does; another size (or none) still scores 0.
    settle = execute(f"for i in $(seq 120); do grep -q '\"default_font_size\":{size}[,}}]' {q(PREFERENCES)} "
                     "2>/dev/null && break; sleep 0.25; done; true")
    return {
        "instruction": f"The text of the page '{topic}' open in the browser is {feel} {reason}. In the "
                       f"browser's settings, set the font size of all pages to {size}.",
        "related_apps": ["chrome"],
        "config": [write_files({path: _page(topic, f"<p>All about {escape(topic.lower())}.</p>", focus="body")}),
                   *open_app([*CHROMIUM, f"file://{path}"], topic)],
        "evaluator": {"func": "check_font_size", "result": {"type": "chrome_font_size"},
                      "expected": {"type": "rule", "rules": {"type": "value", "value": size}},
                      "postconfig": [settle]},
        # chrome://settings/fonts has the Font size slider at its top. A click on it moves it to where it was
        # clicked; Home then puts it on its first stop and each Right goes one stop on. The subpage puts the focus
        # on its back button once it is shown, up to 0.3 s after the slider is (a probe, 3 loads): a click before
        # that lost the slider's focus to it, and the keys went to the button (2 of 8 under stress-ng, 2026-12-07).
        "oracle": [op("wait_focused", window=topic, timeout=30), op("hotkey", keys=["ctrl", "l"]),
                   op("type", text="chrome://settings/fonts\n"),
                   op("wait_focused", window="Customize fonts", role="push-button", timeout=30),
                   op("click_element", window="Customize fonts", name="Font size", role="slider", timeout=30),
                   op("press", key="Home"), *[op("press", key="Right")] * FONT_SIZES.index(size), DONE],
    }
