"""Each app of the apps tier opens clean: launched as a task's setup would, its window maps
within 20 s, no other window (tip of the day, first-run wizard, privacy prompt, splash,
recovery dialog) appears while it settles, and the replica's accessibility tree holds its
menu or toolbar items.

One fresh replica per app, with the tier's limits (osgym.replicas.limits.TIER_LIMITS).
"""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from osgym.replicas.client import Replica
from osgym.replicas.observation import Window
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep
from tests.apps.phash import distance, phash

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SCREEN = (1920, 1080)
REFERENCES = Path(__file__).parent / "references" / "phash.json"
MAP_TIMEOUT_S = 20.0
SETTLE_S = 8.0
"""How long after the app's window maps that no other window may appear. First-run dialogs
(LibreOffice's tip of the day, VLC's privacy prompt, Thunderbird's account hub) come up
within a few seconds of the main window on this machine, under load."""

MENU_ROLES = frozenset({"menu-bar", "menu", "menu-item", "check-menu-item", "radio-menu-item", "tool-bar"})
BUTTON_ROLES = frozenset({"push-button", "toggle-button", "menu-button"})
HEADER_BAR_ROLES = MENU_ROLES | BUTTON_ROLES
"""gedit 44 has no menu bar: its header bar's buttons (Open, Save, the main menu) are its toolbar."""
INVISIBLE_PX = 4
"""Windows of at most this many pixels are not dialogs: LibreOffice maps a 1x1 "LibreOffice 7.4"
helper window beside every document window."""


@dataclass(frozen=True)
class App:
    id: str
    command: str
    window: str
    """Substring of the window's title or WM class (case-insensitive)."""
    a11y_app: str
    """Substring of the application's name in the AT-SPI tree (case-insensitive); ``|`` separates alternatives."""
    roles: frozenset[str] = MENU_ROLES
    """Roles that count as the app's menu or toolbar items (named ones only)."""


APPS = [
    App("chromium", "chromium", "chromium", "chromium"),
    App("writer", "libreoffice --writer", "libreoffice-writer", "soffice"),
    App("calc", "libreoffice --calc", "libreoffice-calc", "soffice"),
    App("impress", "libreoffice --impress", "libreoffice-impress", "soffice"),
    App("gimp", "gimp", "gimp", "gimp|gnu image manipulation program"),
    App("vlc", "vlc", "vlc", "vlc"),
    App("thunderbird", "thunderbird", "thunderbird", "thunderbird"),
    App("terminal", "xfce4-terminal", "xfce4-terminal", "xfce4-terminal"),
    App("thunar", "thunar", "thunar", "thunar"),
    App("gedit", "gedit", "gedit", "gedit", HEADER_BAR_ROLES),
    App("mousepad", "mousepad", "mousepad", "mousepad"),
    # VS Code is code-server in a Chromium app window (replica_images/apps/code-server/code), so its
    # AT-SPI application is Chromium's; the title comes from its machine settings.
    App("code", "code", "visual studio code", "chromium"),
]


def _matches(w: Window, needle: str) -> bool:
    return needle.lower() in w.title.lower() or needle.lower() in w.wm_class.lower()


def _menu_items(xml: str, app: App) -> list[str]:
    """``role:name`` of the named menu and toolbar items under the application named like ``app.a11y_app``:
    elements with one of ``app.roles``, and buttons inside a tool bar."""
    root = ET.fromstring(xml)
    found: list[str] = []
    names = app.a11y_app.lower().split("|")
    for node in root:
        if any(n in (node.get("name") or "").lower() for n in names):
            found += [f"{el.tag}:{el.get('name')}" for el in node.iter() if el.tag in app.roles and el.get("name")]
            for bar in node.iter("tool-bar"):
                found += [f"{el.tag}:{el.get('name')}" for el in bar.iter()
                          if el.tag in BUTTON_ROLES and el.get("name") and el.tag not in app.roles]
    return found


SESSION_UP = ("xprop -root _NET_SUPPORTING_WM_CHECK | grep -q 'window id'"
              " && xwininfo -root -tree | grep -q '\"xfce4-panel\".*1920x'"
              " && xwininfo -root -tree | grep -q '\"Desktop\".*1920x1080'")


def wait_session(replica: Replica, timeout: float = 30.0) -> None:
    """Wait until the XFCE session manages windows and has drawn its panel and desktop.

    The server answers /health once the session script runs, ~1-3 s before xfwm4, the panel and
    xfdesktop are up; an app launched in between maps at 0,0 undecorated (seen in the pHash
    check). Until the server's readiness covers the session, tests wait here.

    Raises:
        AssertionError: if the session is not up within ``timeout``.
    """
    deadline = time.monotonic() + timeout
    while replica.execute(SESSION_UP, shell=True, timeout=10).returncode != 0:
        assert time.monotonic() < deadline, f"the XFCE session was not up within {timeout} s"
        time.sleep(0.25)


def open_clean(replica: Replica, app: App) -> Window:
    """Launch ``app`` as a task's setup step would and check it opened clean: its window within
    MAP_TIMEOUT_S, no other window for SETTLE_S, menu or toolbar items in the accessibility tree.
    Returns its window. Shared with scripts/apps_references.py, so references show the same state.

    Raises:
        AssertionError: naming the app and what went wrong.
    """
    wait_session(replica)
    before = {w.id for w in replica.windows()}
    run_step(replica, SetupStep(type="launch", parameters={"command": app.command, "shell": False}))

    deadline = time.monotonic() + MAP_TIMEOUT_S
    main: Window | None = None
    while main is None and time.monotonic() < deadline:
        main = next((w for w in replica.windows() if w.id not in before and _matches(w, app.window)), None)
        if main is None:
            time.sleep(0.25)
    if main is None:  # say how late it was (or that it never came), to tell a slow start from a broken one
        late = time.monotonic() + 40
        while main is None and time.monotonic() < late:
            main = next((w for w in replica.windows() if w.id not in before and _matches(w, app.window)), None)
            time.sleep(0.5)
        after = time.monotonic() - deadline + MAP_TIMEOUT_S
        came = f"it mapped {after:.0f} s after launch" if main else "none in 60 s"
        new = [f"{w.title!r} ({w.wm_class})" for w in replica.windows() if w.id not in before]
        raise AssertionError(f"{app.id}: no window like {app.window!r} within {MAP_TIMEOUT_S} s ({came}); new: {new}")

    settle_end = time.monotonic() + SETTLE_S
    extra: list[str] = []
    while time.monotonic() < settle_end and not extra:
        extra = [f"{w.title!r} ({w.wm_class}, {w.width}x{w.height})" for w in replica.windows()
                 if w.id not in before | {main.id} and w.width * w.height > INVISIBLE_PX]
        time.sleep(0.25)
    assert not extra, f"{app.id}: other windows appeared beside {main.title!r}: {extra}"

    items: list[str] = []
    apps: list[str] = []
    deadline = time.monotonic() + 20
    while len(items) < 3 and time.monotonic() < deadline:  # the app registers with AT-SPI a bit after mapping
        xml = replica.accessibility(timeout=30)
        items = _menu_items(xml, app)
        apps = [node.get("name") or "" for node in ET.fromstring(xml)]
        if len(items) < 3:
            time.sleep(1)
    assert len(items) >= 3, (f"{app.id}: accessibility tree has {items} under an app named like "
                             f"{app.a11y_app!r}; applications in the tree: {apps}")
    return main


@pytest.mark.parametrize("app", APPS, ids=[a.id for a in APPS])
def test_app_opens_clean(app: App, make_pool: Callable[..., ReplicaPool], tmp_path: Path) -> None:
    pool = make_pool(1, screen=SCREEN, limits=limits_for("apps"))
    with pool.lease(timeout=120) as replica:
        open_clean(replica, app)
        # ...and looks as it did when the references were made (scripts/apps_references.py).
        refs = json.loads(REFERENCES.read_text())
        want, limit = int(refs["apps"][app.id], 16), refs["max_distance"]
        deadline = time.monotonic() + 10  # a page may still be painting (seen once with Chromium under load)
        while True:
            shot = replica.screenshot().data
            got = distance(phash(shot), want)
            if got <= limit or time.monotonic() > deadline:
                break
            time.sleep(1)
        (tmp_path / f"{app.id}.png").write_bytes(shot)
        assert got <= limit, (f"{app.id}: screenshot's pHash is {got} bits from tests/apps/references/{app.id}.png "
                              f"(at most {limit} allowed); screenshot: {tmp_path / (app.id + '.png')}")
        print(f"{app.id}: pHash distance {got}")


def test_chromium_devtools_answers_inside_on_loopback_only(make_pool: Callable[..., ReplicaPool]) -> None:
    """DevTools (for task setup and checks inside the replica) listens on 127.0.0.1:9222 and nowhere else."""
    pool = make_pool(1, screen=SCREEN, limits=limits_for("apps"))
    with pool.lease(timeout=120) as replica:
        replica.launch("chromium")
        probe = ("import json, time, urllib.request\n"
                 "for _ in range(120):\n"
                 "    try:\n"
                 "        print(json.load(urllib.request.urlopen('http://127.0.0.1:9222/json/version', timeout=2))"
                 "['Browser']); break\n"
                 "    except OSError: time.sleep(0.5)\n")
        res = replica.execute(["python3", "-c", probe], timeout=90)
        assert res.output.startswith(("Chrome/", "Chromium/")), res  # Browser: "Chrome/150.0..."
        # Every socket listening on 9222 (0x2406), IPv4 and IPv6: its local address must be loopback.
        listeners = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            rows = replica.execute(["cat", table], timeout=10).output.splitlines()[1:]
            listeners += [r.split()[1] for r in rows if r.split()[3] == "0A" and r.split()[1].endswith(":2406")]
        assert listeners, "nothing listens on port 9222"
        assert set(listeners) <= {"0100007F:2406", "00000000000000000000000001000000:2406"}, listeners
