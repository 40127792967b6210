"""Each app of the apps tier opens clean: launched as a task's setup would, its window maps
within 20 s, no other window (tip of the day, first-run wizard, privacy prompt, splash,
recovery dialog) appears while it settles, and the replica's accessibility tree holds its
menu or toolbar items.

One fresh replica per app, with the tier's limits (osgym.replicas.provision.TIER_LIMITS).
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from osgym.replicas.observation import Window
from osgym.replicas.pool import ReplicaPool, limits_for
from osgym.tasks.setup import run_step
from osgym.tasks.spec import SetupStep

pytestmark = [pytest.mark.docker, pytest.mark.slow]

SCREEN = (1920, 1080)
MAP_TIMEOUT_S = 20.0
SETTLE_S = 8.0
"""How long after the app's window maps that no other window may appear. First-run dialogs
(LibreOffice's tip of the day, VLC's privacy prompt, Thunderbird's account hub) come up
within a few seconds of the main window on this machine, under load."""

MENU_ROLES = {"menu-bar", "menu", "menu-item", "check-menu-item", "radio-menu-item", "tool-bar"}


@dataclass(frozen=True)
class App:
    id: str
    command: str
    window: str
    """Substring of the window's title or WM class (case-insensitive)."""
    a11y_app: str
    """Substring of the application's name in the AT-SPI tree (case-insensitive)."""


APPS = [
    App("chromium", "chromium", "chromium", "chromium"),
    App("writer", "libreoffice --writer", "libreoffice-writer", "soffice"),
    App("calc", "libreoffice --calc", "libreoffice-calc", "soffice"),
    App("impress", "libreoffice --impress", "libreoffice-impress", "soffice"),
    App("gimp", "gimp", "gimp", "gimp"),
    App("vlc", "vlc", "vlc", "vlc"),
    App("thunderbird", "thunderbird", "thunderbird", "thunderbird"),
    App("terminal", "xfce4-terminal", "xfce4-terminal", "xfce4-terminal"),
    App("thunar", "thunar", "thunar", "thunar"),
    App("gedit", "gedit", "gedit", "gedit"),
    App("mousepad", "mousepad", "mousepad", "mousepad"),
]


def _matches(w: Window, needle: str) -> bool:
    return needle.lower() in w.title.lower() or needle.lower() in w.wm_class.lower()


def _menu_items(xml: str, app_name: str) -> list[str]:
    """Roles of the menu and toolbar elements under the application named like ``app_name``."""
    root = ET.fromstring(xml)
    found: list[str] = []
    for app in root:
        if app_name.lower() in (app.get("name") or "").lower():
            found += [el.tag for el in app.iter() if el.tag in MENU_ROLES]
    return found


@pytest.mark.parametrize("app", APPS, ids=[a.id for a in APPS])
def test_app_opens_clean(app: App, make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1, screen=SCREEN, limits=limits_for("apps"))
    with pool.lease(timeout=120) as replica:
        before = {w.id for w in replica.windows()}
        run_step(replica, SetupStep(type="launch", parameters={"command": app.command, "shell": False}))

        deadline = time.monotonic() + MAP_TIMEOUT_S
        main: Window | None = None
        while main is None and time.monotonic() < deadline:
            main = next((w for w in replica.windows() if w.id not in before and _matches(w, app.window)), None)
            if main is None:
                time.sleep(0.25)
        new = [f"{w.title!r} ({w.wm_class})" for w in replica.windows() if w.id not in before]
        assert main is not None, f"{app.id}: no window like {app.window!r} within {MAP_TIMEOUT_S} s; new: {new}"

        settle_end = time.monotonic() + SETTLE_S
        extra: list[str] = []
        while time.monotonic() < settle_end and not extra:
            extra = [f"{w.title!r} ({w.wm_class})" for w in replica.windows() if w.id not in before | {main.id}]
            time.sleep(0.25)
        assert not extra, f"{app.id}: other windows appeared beside {main.title!r}: {extra}"

        items: list[str] = []
        deadline = time.monotonic() + 20
        while len(items) < 3 and time.monotonic() < deadline:  # the app registers with AT-SPI a bit after mapping
            items = _menu_items(replica.accessibility(timeout=30), app.a11y_app)
            if len(items) < 3:
                time.sleep(1)
        assert len(items) >= 3, f"{app.id}: accessibility tree has {items} under an app named like {app.a11y_app!r}"
