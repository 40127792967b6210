"""apps-smoke templates: Chromium on a local page."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, open_app
from osgym.suites.generators import cmd, op, rule, write_file

FIELDS = [("Name", "Quantity"), ("Customer", "Tickets"), ("Owner", "Seats"), ("Team", "Players")]
PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{title}</title></head>
<body><h1>{title}</h1>
<form><label>{f1} <input name="{k1}" autofocus></label> <label>{f2} <input name="{k2}" type="number"></label>
<button type="submit">Send</button></form>
<script>if (location.search) {{ document.title = 'Received'; document.querySelector('h1').textContent = 'Received'; }}
</script></body></html>
"""
PAGE_URLS = ("python3 -c \"import json, urllib.request; "
             "print('\\n'.join(t['url'] for t in json.load(urllib.request.urlopen('http://127.0.0.1:9222/json', "
             "timeout=10)) if t['type'] == 'page'))\"")
"""The open tabs' URLs, from Chromium's DevTools endpoint inside the replica (as OSWorld's chrome getters read them)."""


def chromium_fill_form(rng: random.Random) -> dict[str, Any]:
    f1, f2 = rng.choice(FIELDS)
    k1, k2 = f1.lower(), f2.lower()
    who, count = rng.choice(ANIMALS).title(), rng.randint(2, 60)
    page = f"{rng.choice(NAMES)}-form"
    title = f"{page.split('-')[0].title()} {f2} form"
    path = f"{HOME}/Documents/{page}.html"
    return {
        "instruction": f"The browser shows a form. Fill in {f1} with {who} and {f2} with {count}, then send it.",
        "related_apps": ["chrome"],
        "config": [write_file(path, PAGE.format(title=title, f1=f1, f2=f2, k1=k1, k2=k2)),
                   *open_app(["chromium", f"file://{path}"], title)],
        # Sending the form loads the page again with its fields in the query string (a GET form).
        "evaluator": {"func": "check_include_exclude", "result": cmd(PAGE_URLS),
                      "expected": rule(include=[f"file://{path}?{k1}={who}&{k2}={count}"], exclude=[])},
        "oracle": [op("wait_focused", window=title, role="entry", timeout=30), op("type", text=f"{who}\t{count}\n"),
                   op("wait_window", title="Received - Google Chrome", timeout=30), DONE],
    }
