"""The replica server's window-naming rules (replica_images/server/windows.py): osgym's, and wmctrl's, which
OSWorld's ``activate_window``/``close_window`` steps use (``wmctrl -a``, ``-x`` for by_class, ``-F`` for strict).
The waiting for a window is tested in a real apps replica (tests/apps/test_apps_osworld_vm.py)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SERVER_DIR = Path(__file__).resolve().parents[2] / "replica_images" / "server"

CODE = {"id": 1, "title": "test.py - Desktop - Visual Studio Code", "wm_class": "Code",
        "wm_instance": "127.0.0.1__?folder=%2Fhome%2Fuser%2FDesktop"}
TERM = {"id": 2, "title": "Terminal - user@replica: ~", "wm_class": "Xfce4-terminal", "wm_instance": "xfce4-terminal"}


@pytest.fixture(scope="module")
def windows() -> Iterator[ModuleType]:
    """The server's module, imported as the server imports it (its directory on sys.path), then forgotten."""
    sys.path.insert(0, str(SERVER_DIR))
    try:
        yield importlib.import_module("windows")
    finally:
        sys.path.remove(str(SERVER_DIR))
        for name in ("windows", "protocol"):
            sys.modules.pop(name, None)


@pytest.mark.parametrize(("name", "strict", "by_class", "hits"), [
    ("Visual Studio Code", False, False, [1]),
    ("visual studio CODE", False, False, [1]),          # wmctrl: case-insensitive substring
    ("Visual Studio Code", True, False, []),            # -F: the whole title
    ("test.py - Desktop - Visual Studio Code", True, False, [1]),
    ("test.py - desktop - visual studio code", True, False, []),  # -F: case-sensitive
    ("Code", False, False, [1]),
    ("code", False, True, [1]),                          # -x: instance.class
    ("xfce4-terminal.Xfce4-terminal", True, True, [2]),
    ("Xfce4-terminal", True, True, []),
    ("terminal", False, True, [2]),
    ("Desktop", False, True, [1]),                       # the instance names the folder: wmctrl would match too
])
def test_wmctrl_rule(windows: ModuleType, name: str, strict: bool, by_class: bool, hits: list[int]) -> None:
    assert [w["id"] for w in (CODE, TERM) if windows.wmctrl_match(w, name, strict, by_class)] == hits


def test_matcher_picks_the_rule_and_checks_the_request(windows: ModuleType) -> None:
    osgym_rule, _ = windows.matcher({"title": "xfce4-terminal"})
    assert [osgym_rule(w) for w in (CODE, TERM)] == [False, True]  # the instance, whole
    wmctrl_rule, label = windows.matcher({"title": "Visual Studio Code", "strict": True})
    assert [wmctrl_rule(w) for w in (CODE, TERM)] == [False, False] and label == "'Visual Studio Code'"
    by_id, _ = windows.matcher({"id": 2})
    assert [by_id(w) for w in (CODE, TERM)] == [False, True]
    protocol = importlib.import_module("protocol")
    for bad in ({}, {"title": ""}, {"title": "x", "strict": "yes"}, {"title": "x", "by_class": 1}):
        with pytest.raises(protocol.HttpError) as exc:
            windows.matcher(bad)
        assert exc.value.status == 400
    with pytest.raises(protocol.HttpError):
        windows.wait_seconds({"timeout": windows.MAX_WAIT_S + 1})
    assert windows.wait_seconds({}) == 0
