"""The ``apps-code`` suite: VS Code (the apps tier's code-server in a Chromium app window), its user
settings checked in ``~/.config/Code/User/settings.json`` with OSWorld's ``check_json_settings``.
Run it on ``tier: apps``."""

from __future__ import annotations

import json
import random
from typing import Any

from osgym.tasks.generators import HOME, Template, execute, launch_until_window, op, rule, vm_file
from osgym.tasks.suites.app_files import write_files
from osgym.tasks.suites.apps_smoke.common import DONE, NAMES, SESSION_UP

NAME = "apps-code"
TIER = "apps"
DESCRIPTION = "VS Code: user settings (needs tier: apps)."
SETTINGS = f"{HOME}/.config/Code/User/settings.json"
OPEN_SETTINGS = "Preferences: Open User Settings (JSON)"
CHOICES: dict[str, tuple[str, list[str]]] = {
    "editor.cursorStyle": ("the cursor style", ["line", "block", "underline", "line-thin", "block-outline",
                                                "underline-thin"]),
    "editor.wordWrap": ("word wrap", ["on", "off", "bounded", "wordWrapColumn"]),
    "editor.lineNumbers": ("line numbers", ["on", "off", "relative", "interval"]),
    "editor.renderWhitespace": ("the rendering of whitespace", ["none", "boundary", "selection", "trailing", "all"]),
}


def open_code(path: str, title: str) -> list[dict[str, Any]]:
    """Setup steps opening ``path`` in VS Code, starting ``code`` again if no window came within a minute:
    at load ~30 the tier's ``code`` gave up on code-server (it waits 15 s for it to listen), and a setup
    that launched it once waited 210 s for a window that never came."""
    first, focused = launch_until_window(["code", path], title, tries=3, per_try_s=60)
    first["parameters"]["timeout"] = 3 * 60 + 30
    focused["parameters"]["timeout"] = 60
    return [execute(SESSION_UP), first, focused]


def code_settings(rng: random.Random) -> dict[str, Any]:
    size, tab = rng.randint(8, 48), rng.randint(1, 8)
    keys = rng.sample(sorted(CHOICES), 2)
    picked = {k: rng.choice(CHOICES[k][1]) for k in keys}
    wanted: dict[str, object] = {"editor.fontSize": size, "editor.tabSize": tab, **picked}
    others = " and ".join(f"{CHOICES[k][0]} ({k}) set to {v}" for k, v in picked.items())
    name = f"{rng.choice(NAMES)}.py"
    path = f"{HOME}/Documents/{name}"
    title = f"{name} - Visual Studio Code"
    return {
        "instruction": f"In VS Code, change the user settings: editor font size {size}, tab size {tab}, {others}.",
        "related_apps": ["vscode"],
        "config": [write_files({path: "def main():\n    return 0\n"}), *open_code(path, title)],
        "evaluator": {"func": "check_json_settings", "result": vm_file(SETTINGS), "expected": rule(expected=wanted)},
        # As the vscode-font sample task (osgym/tasks/sample_apps.py): F1, the command, the settings JSON typed
        # whole; what VS Code's auto-closing added after the caret is deleted; saved and closed.
        "oracle": [op("wait_focused", window=title, role="entry", timeout=60), op("press", key="F1"),
                   op("wait_focused", window="Visual Studio Code", role="list-item", timeout=30),
                   op("type", text=OPEN_SETTINGS),
                   op("wait_enabled", window="Visual Studio Code", control=OPEN_SETTINGS, role="list-item"),
                   op("press", key="enter"),
                   op("wait_window", title="settings.json - Visual Studio Code", timeout=30),
                   op("wait_focused", window="settings.json - Visual Studio Code", role="entry", timeout=30),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=json.dumps(wanted)),
                   op("press", key="escape"), op("hotkey", keys=["ctrl", "shift", "End"]), op("press", key="delete"),
                   op("hotkey", keys=["ctrl", "s"]), op("hotkey", keys=["ctrl", "w"]),
                   op("wait_window", title=title, timeout=30), DONE],
    }


TEMPLATES: list[Template] = [
    Template("code-settings", "vs_code", "set four editor settings in VS Code's user settings", code_settings,
             difficulty=2),
]
