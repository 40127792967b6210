"""The ``apps-code`` suite: VS Code (the apps tier's code-server in a Chromium app window): its user
settings checked in ``~/.config/Code/User/settings.json`` with OSWorld's ``check_json_settings``, and edits
of an open file (a line replaced after Go to Line, a word replaced everywhere with Find and Replace)
checked on the saved file with ``compare_config``. Run it on ``tier: apps``."""

from __future__ import annotations

import json
import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, SESSION_UP, WORDS
from osgym.suites.generators import Template, execute, launch_until_window, op, q, rule, vm_file

NAME = "apps-code"
TIER = "apps"
DESCRIPTION = "VS Code: user settings, editing and replacing in a file (needs tier: apps)."
SETTINGS = f"{HOME}/.config/Code/User/settings.json"
OPEN_SETTINGS = "Preferences: Open User Settings (JSON)"
SETTINGS_TITLE = "settings.json - Visual Studio Code"
UNSAVED = "\u25cf "
"""What the tier's ``window.title`` (``${dirty}``) puts before the editor's name while it holds unsaved changes."""
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


def write_user_settings(title: str, settings: dict[str, object]) -> list[dict[str, Any]]:
    """Oracle steps that replace VS Code's user settings.json with ``settings``, from the editor titled ``title``.

    The title names the file once the workbench has loaded (before, the window shows its URL), and the editor
    (an entry named after the file) has the focus once it takes keys. F1 is the command palette (Ctrl+Shift+P
    would be Chromium's print dialog while the page loads): its first entry takes the focus once it is up, and
    the list shows the command once it has filtered the typed text. VS Code closes brackets and quotes as they
    are typed, and types over a closing one, but not always when keys come fast: what it added stays after the
    caret, so everything after the caret goes. The title starts with a dot while the editor holds unsaved
    changes (the tier's ``window.title``): it shows once the typing is in the editor, which can be a second
    behind the keys, and goes once the save is on disk, which can be a second more. Only then is the editor
    closed (Ctrl+W): a close that overtook the save let the task be scored on the file as it was before.
    """
    return [op("wait_focused", window=title, role="entry", timeout=60), op("press", key="F1"),
            op("wait_focused", window="Visual Studio Code", role="list-item", timeout=30),
            op("type", text=OPEN_SETTINGS),
            op("wait_enabled", window="Visual Studio Code", control=OPEN_SETTINGS, role="list-item"),
            op("press", key="enter"),
            op("wait_window", title=SETTINGS_TITLE, timeout=30),
            op("wait_focused", window=SETTINGS_TITLE, role="entry", timeout=30),
            op("hotkey", keys=["ctrl", "a"]), op("type", text=json.dumps(settings)),
            op("press", key="escape"), op("hotkey", keys=["ctrl", "shift", "End"]), op("press", key="delete"),
            op("wait_window", title=UNSAVED + SETTINGS_TITLE, timeout=30),
            op("hotkey", keys=["ctrl", "s"]), op("wait_gone", title=UNSAVED + SETTINGS_TITLE, timeout=30),
            op("hotkey", keys=["ctrl", "w"]), op("wait_window", title=title, timeout=30)]


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
        "evaluator": {"func": "check_json_settings", "result": vm_file(SETTINGS), "expected": rule(expected=wanted),
                      "postconfig": [settings_saved(wanted)]},
        "oracle": [*write_user_settings(title, wanted), DONE],
    }


EXTENSIONS = ("txt", "md", "cfg", "log", "notes")


def _within_20s(test: str) -> dict[str, Any]:
    """A postconfig step waiting (at most 20 s) until the shell ``test`` succeeds, and succeeding either way (the
    evaluator then scores what is there): VS Code writes a file in the background after Ctrl+S, about a second
    later on a loaded replica, and an agent may say it is done in between."""
    return execute(f"for i in $(seq 80); do {test} && exit 0; sleep 0.25; done; exit 0")


def saved(path: str, text: str) -> dict[str, Any]:
    """A postconfig step waiting (at most 20 s) until ``path`` holds ``text``."""
    return _within_20s(f"printf '%s' {q(text)} | cmp -s - {q(path)}")


def settings_saved(wanted: dict[str, object]) -> dict[str, Any]:
    """A postconfig step waiting (at most 20 s) until the user's settings.json holds every key of ``wanted``
    with its value, read as strict JSON as ``check_json_settings`` reads it (jq, in the apps image)."""
    holds = ". as $f | $want | all(to_entries[]; $f[.key] == .value)"
    return _within_20s(f"jq -e --argjson want {q(json.dumps(wanted))} {q(holds)} {q(SETTINGS)} >/dev/null 2>&1")


def edited(path: str, text: str) -> dict[str, Any]:
    """The evaluator: the saved file is exactly ``text``."""
    return {"func": "compare_config", "result": vm_file(path), "expected": rule(expected=text),
            "postconfig": [saved(path, text)]}


def _lines(rng: random.Random, n: int, avoid: str = "") -> list[str]:
    """``n`` distinct seeded lines (``key: value`` pairs), none containing ``avoid`` in any case."""
    out: list[str] = []
    while len(out) < n:
        line = f"{rng.choice(ANIMALS)} {rng.choice(['count', 'weight', 'age', 'zone', 'pen', 'tag'])}: " \
               f"{rng.randint(1, 999)}"
        if line not in out and not (avoid and avoid in line.lower()):
            out.append(line)
    return out


def code_edit_line(rng: random.Random) -> dict[str, Any]:
    lines = _lines(rng, rng.randint(5, 12))
    n = rng.randint(1, len(lines))
    new = f"{rng.choice(ANIMALS)} {rng.choice(WORDS)}: {rng.randint(1000, 9999)}"
    name = f"{rng.choice(NAMES)}-{rng.randint(1, 99)}.{rng.choice(EXTENSIONS)}"
    path, title = f"{HOME}/Documents/{name}", f"{name} - Visual Studio Code"
    result = "".join(line + "\n" for line in [*lines[:n - 1], new, *lines[n:]])
    return {
        "instruction": f"In VS Code, replace line {n} of {name} with '{new}' and save the file.",
        "related_apps": ["vscode"],
        "config": [write_files({path: "".join(line + "\n" for line in lines)}), *open_code(path, title)],
        "evaluator": edited(path, result),
        # Go to Line (Ctrl+G) puts the caret at the line's start; Shift+End selects the line, which the new
        # text replaces; Escape closes a word suggestion the typing may have opened; Ctrl+S saves.
        "oracle": [op("wait_focused", window=title, role="entry", timeout=60), op("hotkey", keys=["ctrl", "g"]),
                   op("wait_focused", window=title, role="list-item", timeout=30), op("type", text=str(n)),
                   op("press", key="enter"), op("wait_focused", window=title, role="entry", timeout=30),
                   op("hotkey", keys=["shift", "End"]), op("type", text=new), op("press", key="escape"),
                   op("hotkey", keys=["ctrl", "s"]), DONE],
    }


def code_replace_all(rng: random.Random) -> dict[str, Any]:
    old, new = rng.sample(WORDS, 2)
    lines = _lines(rng, rng.randint(4, 10), avoid=old)
    for i in sorted(rng.sample(range(len(lines)), rng.randint(2, min(5, len(lines))))):
        lines[i] = f"{lines[i]} {old}" if rng.random() < 0.5 else f"{old} {lines[i]}"
    text = "".join(line + "\n" for line in lines)
    name = f"{rng.choice(NAMES)}-{rng.randint(1, 99)}.{rng.choice(EXTENSIONS)}"
    path, title = f"{HOME}/Documents/{name}", f"{name} - Visual Studio Code"
    return {
        "instruction": f"In VS Code, replace every '{old}' in {name} with '{new}' and save the file.",
        "related_apps": ["vscode"],
        "config": [write_files({path: text}), *open_code(path, title)],
        "evaluator": edited(path, text.replace(old, new)),
        # Find and Replace (Ctrl+H): each field clicked where the accessibility tree shows it and filled
        # (Ctrl+A first: VS Code seeds Find with the word at the caret), then Replace All; Escape closes the
        # widget and Ctrl+S saves.
        "oracle": [op("wait_focused", window=title, role="entry", timeout=60), op("hotkey", keys=["ctrl", "h"]),
                   op("click_element", window=title, name="Find", role="entry", timeout=30),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=old),
                   op("click_element", window=title, name="Replace", role="entry"),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=new),
                   op("click_element", window=title, name="Replace All (Ctrl+Alt+Enter)", role="push-button"),
                   op("press", key="escape"), op("hotkey", keys=["ctrl", "s"]), DONE],
    }


TEMPLATES: list[Template] = [
    Template("code-settings", "vs_code", "set four editor settings in VS Code's user settings", code_settings,
             difficulty=2),
    Template("code-edit-line", "vs_code", "replace one line of a file in VS Code (Go to Line) and save",
             code_edit_line, difficulty=1),
    Template("code-replace-all", "vs_code", "replace a word everywhere in a file in VS Code and save",
             code_replace_all, difficulty=2),
]
