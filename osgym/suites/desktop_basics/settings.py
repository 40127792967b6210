"""desktop-basics templates: settings."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.desktop_basics.common import (
    CLICK_XTERM,
    DIRS,
    DONE,
    NAMES,
    SAVE,
    WORDS,
    XTERM,
    _file,
    _mousepad,
)
from osgym.suites.generators import (
    cmd,
    op,
    rule,
    write_file,
)

ALIASES = ["ll", "la", "gs", "up", "cls", "hh", "now", "ports", "mem", "disk", "lt", "work", "home2", "psg", "dfh"]
ALIAS_CMDS = ["ls -la", "ls -A", "clear", "history", "date", "df -h", "du -sh", "cd ..", "ps aux", "free -m",
              "uptime", "ls -lt", "pwd", "whoami"]
ENV_VARS = ["PROJECT_HOME", "WORKSPACE", "BACKUP_DIR", "OSGYM_MODE", "API_REGION", "BUILD_TYPE", "DATA_ROOT",
            "LOG_LEVEL", "THEME_NAME", "DEFAULT_CITY"]


def settings_bash_alias(rng: random.Random) -> dict[str, Any]:
    name, command = rng.choice(ALIASES), rng.choice(ALIAS_CMDS)
    return {
        "instruction": f"Define a shell alias '{name}' for the command '{command}' in ~/.bashrc, so every new "
                       f"terminal has it.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "exact_match", "result": cmd(f"bash -ic 'alias {name}' 2>/dev/null"),
                      "expected": rule(expected=f"alias {name}='{command}'\n")},
        "oracle": [CLICK_XTERM, op("type", text=f"echo \"alias {name}='{command}'\" >> ~/.bashrc\n"), DONE],
    }


def settings_bash_env(rng: random.Random) -> dict[str, Any]:
    var = rng.choice(ENV_VARS)
    value = rng.choice([rng.choice(WORDS), f"{HOME}/{rng.choice(NAMES)}", f"{rng.choice(WORDS)}-{rng.randint(1, 9)}"])
    return {
        "instruction": f"Make every new terminal have the environment variable {var} set to {value}, by exporting "
                       f"it in ~/.bashrc.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "exact_match", "result": cmd(f"bash -ic 'printf %s \"${var}\"' 2>/dev/null"),
                      "expected": rule(expected=value)},
        "oracle": [CLICK_XTERM, op("type", text=f"echo 'export {var}={value}' >> ~/.bashrc\n"), DONE],
    }


def settings_xresources(rng: random.Random) -> dict[str, Any]:
    key, value = rng.choice([
        ("faceSize", str(rng.randint(8, 24))), ("saveLines", str(rng.randrange(500, 20001, 500))),
        ("background", rng.choice(["black", "white", "navy", "gray20", "ivory", "darkgreen"])),
        ("foreground", rng.choice(["black", "white", "yellow", "gray80", "orange", "cyan"])),
        ("cursorColor", rng.choice(["red", "green", "blue", "magenta", "gold", "orchid"])),
        ("faceName", rng.choice(["DejaVu Sans Mono", "Monospace", "Liberation Mono", "Noto Mono"])),
        ("geometry", f"{rng.choice([80, 100, 120, 132])}x{rng.choice([24, 30, 40, 50])}"),
        ("scrollBar", rng.choice(["true", "false"])),
    ])
    line = f"XTerm*{key}: {value}"
    return {
        "instruction": f"Add the X resource setting '{line}' for xterm to ~/.Xresources.",
        "related_apps": ["xterm"], "config": XTERM,
        "evaluator": {"func": "check_include_exclude", "result": cmd("cat ~/.Xresources"),
                      "expected": rule(include=[line], exclude=[])},
        "oracle": [CLICK_XTERM, op("type", text=f"echo '{line}' >> ~/.Xresources\n"), DONE],
    }


MOUSEPAD_VIEW = {  # View menu item -> (mnemonic, key in mousepad's GSettings keyfile)
    "line numbers": ("u", "show-line-numbers=true"),
    "toolbar": ("t", "toolbar-visible=true"),
    "status bar": ("a", "statusbar-visible=true"),
}


def settings_editor_view(rng: random.Random) -> dict[str, Any]:
    items = rng.sample(sorted(MOUSEPAD_VIEW), rng.randint(1, 3))
    path = f"{HOME}/{rng.choice(DIRS)}/{_file(rng)}"
    ops: list[dict[str, Any]] = []
    for item in items:
        ops += [op("hotkey", keys=["alt", "v"]), op("press", key=MOUSEPAD_VIEW[item][0], noise=False)]
    return {
        "instruction": f"Make the text editor show its {' and its '.join(items)}.",
        "related_apps": ["mousepad"],
        "config": [write_file(path, rng.choice(WORDS) + "\n"), *_mousepad(path, keyfile=True)],
        "evaluator": {"func": "check_include_exclude", "result": cmd("cat ~/.config/glib-2.0/settings/keyfile"),
                      "expected": rule(include=[MOUSEPAD_VIEW[i][1] for i in items],
                                       exclude=[v[1] for k, v in MOUSEPAD_VIEW.items() if k not in items])},
        "oracle": [op("click_window", title="Mousepad"), *ops, DONE],
    }


APPS = ["sketchpad", "photon", "tunebox", "mailer", "notekeeper", "planner", "reader", "syncer"]
INI_KEYS = {"theme": ["light", "dark", "solarized", "contrast"], "language": ["en", "de", "fr", "es", "ja"],
            "autosave": ["true", "false"], "interval": ["5", "10", "15", "30", "60"],
            "font_size": ["10", "11", "12", "14", "16"], "units": ["metric", "imperial"]}


def settings_edit_config(rng: random.Random) -> dict[str, Any]:
    app = rng.choice(APPS)
    keys = rng.sample(sorted(INI_KEYS), rng.randint(3, 5))
    values = {k: rng.choice(INI_KEYS[k]) for k in keys}
    key = rng.choice(keys)
    new = rng.choice([v for v in INI_KEYS[key] if v != values[key]])
    path = f"{HOME}/.config/{app}/settings.ini"
    before = "[main]\n" + "".join(f"{k}={values[k]}\n" for k in keys)
    after = "[main]\n" + "".join(f"{k}={new if k == key else values[k]}\n" for k in keys)
    return {
        "instruction": f"The text editor shows {app}'s configuration file. Change the setting {key} to {new} "
                       f"and save the file, leaving the other settings as they are.",
        "related_apps": ["mousepad"], "config": [write_file(path, before), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"), "expected": rule(expected=after)},
        "oracle": [op("click_window", title="settings.ini"), op("hotkey", keys=["ctrl", "a"]),
                   op("type", text=after), *SAVE, DONE],
    }
