"""Seeded variation of an apps-tier task's desktop, beyond what its template draws: theme, zoom,
window geometry and a distractor window.

A :class:`Variation` rewrites a built task's setup (``config``) from its own RNG stream, so the
template's builder and its draws stay as they are, and the variation shows in the task JSON
(plain ``execute``/``launch``/``wait_window`` steps) that an exported task file carries:

>>> from osgym.suites.generators import launch, wait
>>> data = {"instruction": "i", "config": [launch(["gedit"]), wait("gedit")], "evaluator": {"func": "infeasible"}}
>>> varied = Variation()(data, random.Random(0))
>>> [s["type"] for s in varied["config"]]
['execute', 'execute', 'execute', 'launch', 'wait_window', 'execute', 'launch', 'wait_window', 'execute', 'wait_window']
>>> Variation()(data, random.Random(0)) == varied and data["config"][0]["type"] == "launch"
True

The target is the app whose window the setup's last ``wait_window`` step waits for, started by the
step just before it. What is added:

- **theme and zoom**, before the app starts: the XFCE session's XSETTINGS (``/Net/ThemeName`` and
  ``/Xft/DPI``, which GTK apps, LibreOffice and Chromium follow), waited for until the settings daemon
  has published them, so the app starts in them. Chromium also gets ``--force-device-scale-factor``.
  Every varied task sets both, its defaults included, so a reused replica carries nothing over.
- **a distractor**, before the app starts: a text file with seeded lines in Mousepad, or a folder of
  seeded files in Thunar (never the target's own program: a second ``gedit`` would open a tab in the
  target's window), at a seeded place, under ``/tmp/osgym-distractor`` so that no evaluator of files
  in the home directory sees it. The target app opens over it; its focused ``wait_window`` holds.
- **geometry**, after the app's window is up: the active window (the target: setup waited for it to be
  focused) un-maximized, moved and resized to seeded fractions of the screen, then waited for until the
  window manager reports it there, and the target waited for, focused, once more.

Oracles keep working as long as they find their targets through window titles, the accessibility
tree and window-relative anchors (``click_element``, ``click_window``), never screen offsets.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass
from typing import Any

from osgym.suites.generators import execute, launch, q, wait

THEMES = ("Greybird", "Greybird-dark", "Adwaita")
"""GTK 3 themes of the apps image, the image's own first: Greybird and Greybird-dark are in
/usr/share/themes, Adwaita is built into GTK. Not Greybird-bright (only a notification theme there) nor
"Adwaita-dark" (no such theme directory: GTK falls back to light Adwaita), checked on screenshots."""
DPIS = (96, 108, 120)
"""XSETTINGS text resolutions: 100 %, 112.5 % and 125 % zoom of every app's text."""
DISTRACTOR_DIR = "/tmp/osgym-distractor"
TOPICS = ("groceries", "reading", "errands", "garden", "recipes", "travel", "chores", "birthdays", "movies")
ITEMS = ("apples", "stamps", "batteries", "paint", "tickets", "candles", "string", "soap", "envelopes",
         "lemons", "glue", "rice", "seeds", "a lamp", "a map", "tea", "coffee", "bread")
MIN_W, MAX_W = 0.55, 0.95
MIN_H, MAX_H = 0.6, 0.9
"""Window sizes, as fractions of the screen: large enough for LibreOffice's minimum size and the
oracles' dialogs, small enough that where the window sits varies."""

_XSETTINGS_UP = ("python3 - {theme} {dpi} <<'PY'\n"
                 "import sys, time\n"
                 "from Xlib import X, display\n"
                 "d = display.Display()\n"
                 "owner = d.get_selection_owner(d.intern_atom('_XSETTINGS_S0'))\n"
                 "want = [sys.argv[1].encode(), (int(sys.argv[2]) * 1024).to_bytes(4, 'little')]\n"
                 "for _ in range(100):\n"
                 "    p = owner.get_full_property(d.intern_atom('_XSETTINGS_SETTINGS'), X.AnyPropertyType)\n"
                 "    if p is not None and all(w in bytes(p.value) for w in want):\n"
                 "        sys.exit(0)\n"
                 "    time.sleep(0.1)\n"
                 "sys.exit('XSETTINGS never published ' + sys.argv[1])\n"
                 "PY")
"""Wait (at most 10 s) until xfsettingsd has published the theme and the DPI (1024ths of a dot per
inch, little-endian) on its XSETTINGS window: an app started before that starts in the old look."""

_PLACE_ACTIVE = ("python3 - {fx} {fy} {fw} {fh} <<'PY'\n"
                 "import subprocess, sys, time\n"
                 "from Xlib import X, display\n"
                 "d = display.Display()\n"
                 "root = d.screen().root\n"
                 "W, H = d.screen().width_in_pixels, d.screen().height_in_pixels - 30\n"
                 "fx, fy, fw, fh = (int(a) for a in sys.argv[1:5])\n"
                 "x, y, w, h = W * fx // 1000, 30 + H * fy // 1000, W * fw // 1000, H * fh // 1000\n"
                 "wid = root.get_full_property(d.intern_atom('_NET_ACTIVE_WINDOW'), X.AnyPropertyType).value[0]\n"
                 "for args in (['-b', 'remove,maximized_vert,maximized_horz'], ['-e', f'0,{{x}},{{y}},{{w}},{{h}}']):\n"
                 "    subprocess.run(['wmctrl', '-i', '-r', hex(wid), *args], check=True)\n"
                 "win = d.create_resource_object('window', wid)\n"
                 "for _ in range(100):\n"
                 "    g, p = win.get_geometry(), root.translate_coords(win, 0, 0)\n"
                 "    if max(abs(p.x - x), abs(p.y - y), abs(g.width - w), abs(g.height - h)) < 60:\n"
                 "        sys.exit(0)\n"
                 "    time.sleep(0.1)\n"
                 "sys.exit(f'window {{wid:#x}} at {{p.x}},{{p.y}} {{g.width}}x{{g.height}}, '\n"
                 "         f'never at {{x}},{{y}} {{w}}x{{h}}')\n"
                 "PY")
"""Move and resize the focused window to fractions (in thousandths) of the screen below the panel (30 px),
and wait (at most 10 s) until the window manager reports it there: within 60 px, since an app keeps its
own size increments (a terminal's character cells) and the frame's borders shift the client area."""


@dataclass(frozen=True)
class Variation:
    """Which kinds of variation a template takes; calling it varies a built task's JSON.

    ``Variation()`` is every kind (what apps-tier suites get unless a template says otherwise);
    :data:`NONE` is none, for a template whose task is about the very thing varied (say, a window's size).
    """

    theme: bool = True
    zoom: bool = True
    geometry: bool = True
    distractor: bool = True

    def __call__(self, data: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        """``data`` with the variation's setup steps added (a copy); unchanged if the setup opens no window."""
        config = list(data.get("config") or [])
        waits = [i for i, s in enumerate(config) if s.get("type") == "wait_window"]
        if not waits or waits[-1] == 0 or not any((self.theme, self.zoom, self.geometry, self.distractor)):
            return data
        k = waits[-1]
        title = str(config[k].get("parameters", {}).get("title", ""))
        start = copy.deepcopy(config[k - 1])  # the step that starts the target app
        # Every draw happens whatever is enabled, so turning one kind off leaves the others as they were.
        theme, dpi = rng.choice(THEMES), rng.choice(DPIS)
        place = [rng.randint(int(MIN_W * 1000), int(MAX_W * 1000)), rng.randint(int(MIN_H * 1000), int(MAX_H * 1000))]
        place = [rng.randint(0, 1000 - place[0]), rng.randint(0, 1000 - place[1]), *place]
        distract = _distractor(rng, title, _argv0(start))
        before: list[dict[str, Any]] = []
        if self.theme or self.zoom:
            theme = theme if self.theme else THEMES[0]
            dpi = dpi if self.zoom else DPIS[0]
            before.append(execute(f"xfconf-query -c xsettings -p /Net/ThemeName -s {q(theme)} && "
                                  f"xfconf-query -c xsettings -p /Xft/DPI -n -t int -s {dpi}"))
            before.append(execute(_XSETTINGS_UP.format(theme=q(theme), dpi=dpi)))
            if self.zoom and start.get("type") == "launch" and _argv0(start) == "chromium":
                start["parameters"]["command"] = [*start["parameters"]["command"],
                                                  f"--force-device-scale-factor={dpi / 96:g}"]
        if self.distractor and distract:
            before.extend(distract)
        after: list[dict[str, Any]] = []
        if self.geometry:
            fx, fy, fw, fh = place
            after = [execute(_PLACE_ACTIVE.format(fx=fx, fy=fy, fw=fw, fh=fh)), copy.deepcopy(config[k])]
        varied = [*config[:k - 1], *before, start, config[k], *after, *config[k + 1:]]
        return {**data, "config": varied}


NONE = Variation(theme=False, zoom=False, geometry=False, distractor=False)
DEFAULT = Variation()


def _argv0(step: dict[str, Any]) -> str:
    """The program a ``launch`` step starts ('' for anything else)."""
    if step.get("type") != "launch":
        return ""
    command = step.get("parameters", {}).get("command")
    first = command[0] if isinstance(command, list) and command else str(command or "").split(" ")[0]
    return str(first).rsplit("/", 1)[-1]


def _distractor(rng: random.Random, title: str, target: str) -> list[dict[str, Any]]:
    """Setup steps opening a seeded distractor window that is neither ``target``'s program nor matches
    ``title`` (so the target's waits and the oracle's window lookups never find it), or [] if none fits."""
    topic = rng.choice(TOPICS)
    name = f"{topic}-{rng.randint(10, 99)}"
    lines = [f"{rng.choice(ITEMS)} x{rng.randint(1, 9)}" for _ in range(rng.randint(3, 8))]
    kind = rng.choice(("mousepad", "thunar"))
    fx, fy = rng.randint(0, 400), rng.randint(0, 300)
    folder = f"{DISTRACTOR_DIR}/{name}"
    if kind == target or kind in title.lower() or name in title.lower():
        kind = "thunar" if kind == "mousepad" else "mousepad"
    if kind == target or kind in title.lower() or name in title.lower():
        return []
    body = "".join(line + "\n" for line in lines)
    if kind == "mousepad":
        path = f"{folder}/{name}.txt"
        steps = [execute(f"mkdir -p {q(folder)} && printf '%s' {q(body)} > {q(path)}"),
                 launch(["mousepad", path])]
    else:
        files = " ".join(q(f"{folder}/{line.split(' x')[0].replace(' ', '-')}.txt") for line in lines)
        steps = [execute(f"mkdir -p {q(folder)} && touch {files}"), launch(["thunar", folder])]
    # Placed by its own id, found by title: the target app is not up yet, so nothing else can match.
    place = (f"id=$(wmctrl -l | awk -v n={q(name)} 'index($0, n) {{print $1; exit}}'); "
             f"[ -n \"$id\" ] && wmctrl -i -r \"$id\" -e 0,{fx},{30 + fy},-1,-1")
    return [*steps, wait(name, focused=False, timeout=60), execute(place)]
