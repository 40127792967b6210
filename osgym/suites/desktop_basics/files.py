"""desktop-basics templates: file manager."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.desktop_basics.common import DONE, NAMES, SUBFOLDERS, WORDS, _pcmanfm, _select, _words
from osgym.suites.generators import (
    cmd,
    execute,
    op,
    rule,
    vm_file,
)


def _folder_with_files(rng: random.Random, n: tuple[int, int] = (3, 5)) -> tuple[str, list[str], dict[str, Any]]:
    folder = f"{HOME}/Documents/{rng.choice(NAMES)}"
    files = [f"{w}.{rng.choice(['txt', 'md', 'csv'])}" for w in _words(rng, rng.randint(*n))]
    step = execute(f"mkdir -p {folder} && cd {folder} && for f in {' '.join(files)}; do echo $f > $f; done")
    return folder, files, step


def files_rename(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    old = rng.choice(files)
    new = f"{rng.choice(WORDS)}-{rng.choice(NAMES)}.{old.split('.')[-1]}"
    return {
        "instruction": f"In the file manager, rename {old} to {new}.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {"func": "check_directory_tree", "result": {"type": "list_directory", "path": folder},
                      "expected": rule(present=[new], absent=[old])},
        "oracle": [*_select(old), op("press", key="F2"), op("wait_window", title="Rename File"),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=new), op("press", key="enter"),
                   op("wait_gone", title="Rename File"), DONE],
    }


def files_create_folder(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng, (1, 3))
    name = f"{rng.choice(SUBFOLDERS)}-{rng.randint(1, 99)}"
    return {
        "instruction": f"Using the file manager, create a new folder named {name} in the folder it shows.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {"func": "exact_match", "result": cmd(f"test -d {folder}/{name} && echo yes"),
                      "expected": rule(expected="yes\n")},
        "oracle": [op("hotkey", keys=["ctrl", "shift", "n"]), op("wait_window", title="New Folder"),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=name), op("press", key="enter"),
                   op("wait_gone", title="New Folder"), DONE],
    }


def files_trash(rng: random.Random) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    victim = rng.choice(files)
    return {
        "instruction": f"In the file manager, move {victim} to the trash.",
        "related_apps": ["pcmanfm"], "config": [step, *_pcmanfm(folder)],
        "evaluator": {
            "func": ["check_directory_tree", "check_directory_tree"],
            "result": [{"type": "list_directory", "path": folder},
                       {"type": "list_directory", "path": f"{HOME}/.local/share/Trash/files"}],
            "expected": [rule(present=[f for f in files if f != victim], absent=[victim]),
                         rule(present=[victim], absent=[])],
        },
        "oracle": [*_select(victim), op("press", key="Delete"), op("wait_window", title="Confirm"),
                   op("press", key="enter"), op("wait_gone", title="Confirm"), DONE],
    }


def _files_transfer(rng: random.Random, move: bool) -> dict[str, Any]:
    folder, files, step = _folder_with_files(rng)
    name, sub = rng.choice(files), rng.choice(SUBFOLDERS)
    dest = f"{folder}/{sub}"
    verb = "Move" if move else "Copy"
    check = ({"func": "check_directory_tree", "result": {"type": "list_directory", "path": folder},
              "expected": rule(present=[sub], absent=[name])} if move else
             {"func": "file_exists", "result": vm_file(f"{folder}/{name}", "original"), "expected": None})
    return {
        "instruction": f"Using the file manager, {verb.lower()} {name} into its subfolder {sub}.",
        "related_apps": ["pcmanfm"], "config": [step, execute(f"mkdir -p {dest}"), *_pcmanfm(folder)],
        "evaluator": {
            "func": ["check_directory_tree", check["func"]],
            "result": [{"type": "list_directory", "path": dest}, check["result"]],
            "expected": [rule(present=[name], absent=[]), check["expected"]],
        },
        # The title changes as soon as Enter is handled, but pcmanfm hands the keyboard to the folder view only in
        # a low-priority idle (main-win.c, idle_focus_view, a workaround for GTK bug 650114): a Ctrl+V that
        # arrives in between is pasted into the location bar as text. A click on the (empty) folder view
        # gives it the focus, and X delivers the click before the paste.
        "oracle": [*_select(name), op("hotkey", keys=["ctrl", "x" if move else "c"]), op("hotkey", keys=["ctrl", "l"]),
                   op("type", text=dest), op("press", key="enter"), op("wait_window", title=sub),
                   op("click_window", title=sub, anchor="center", dx=80), op("hotkey", keys=["ctrl", "v"]), DONE],
    }


def files_copy(rng: random.Random) -> dict[str, Any]:
    return _files_transfer(rng, move=False)


def files_move(rng: random.Random) -> dict[str, Any]:
    return _files_transfer(rng, move=True)
