"""desktop-basics templates: text editor."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.desktop_basics.common import DIRS, DONE, NAMES, SAVE, _file, _lines, _mousepad, _save_as, _words
from osgym.suites.generators import (
    cmd,
    op,
    rule,
    vm_file,
    write_file,
)


def editor_save_text(rng: random.Random) -> dict[str, Any]:
    d, name, line = rng.choice(DIRS), _file(rng), " ".join(_words(rng, rng.randint(3, 5)))
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, write the line '{line}' and save the document as ~/{d}/{name}",
        "related_apps": ["mousepad"], "config": _mousepad(),
        "evaluator": {"func": "check_include_exclude", "result": cmd(f"cat {path}"),
                      "expected": rule(include=[line], exclude=[])},
        "oracle": [op("click_window", title="Mousepad"), op("type", text=line + "\n"), op("hotkey", keys=["ctrl", "s"]),
                   *_save_as(path), DONE],
    }


def editor_write_list(rng: random.Random) -> dict[str, Any]:
    items, name = _words(rng, rng.randint(3, 6)), rng.choice(NAMES)
    path = f"{HOME}/Documents/{name}-list.txt"
    return {
        "instruction": f"Using the text editor, write a list with one item per line, in this order: "
                       f"{', '.join(items)}. Save it as ~/Documents/{name}-list.txt",
        "related_apps": ["mousepad"], "config": _mousepad(),
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"), "expected": rule(expected=_lines(items))},
        "oracle": [op("click_window", title="Mousepad"), op("type", text=_lines(items)),
                   op("hotkey", keys=["ctrl", "s"]), *_save_as(path), DONE],
    }


def editor_append_line(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words = _words(rng, rng.randint(3, 6))
    line = f"{rng.choice(NAMES)} {words[-1]}"
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"The text editor has ~/{d}/{name} open. Add the line '{line}' at the end and save.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words[:-1])), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=_lines(words[:-1]) + line + "\n")},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "End"]), op("type", text=line + "\n"),
                   *SAVE, DONE],
    }


def editor_delete_line(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words = _words(rng, rng.randint(3, 6))
    k = rng.randrange(len(words))
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, delete the line '{words[k]}' from ~/{d}/{name} and save the file.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words)), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=_lines(words[:k] + words[k + 1:]))},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "Home"]),
                   *[op("press", key="Down") for _ in range(k)], op("hotkey", keys=["shift", "Down"]),
                   op("press", key="Delete"), *SAVE, DONE],
    }


def editor_insert_header(rng: random.Random) -> dict[str, Any]:
    name, d = _file(rng), rng.choice(DIRS)
    words, header = _words(rng, rng.randint(2, 5)), f"# {rng.choice(NAMES).title()} {rng.randint(2020, 2030)}"
    path = f"{HOME}/{d}/{name}"
    return {
        "instruction": f"In the text editor, insert the line '{header}' at the very top of ~/{d}/{name} and save.",
        "related_apps": ["mousepad"], "config": [write_file(path, _lines(words)), *_mousepad(path)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected=header + "\n" + _lines(words))},
        "oracle": [op("click_window", title=name), op("hotkey", keys=["ctrl", "Home"]), op("type", text=header + "\n"),
                   *SAVE, DONE],
    }


def editor_save_copy(rng: random.Random) -> dict[str, Any]:
    a, b = rng.sample(NAMES, 2)
    src, d = f"{HOME}/Documents/{a}.txt", rng.choice(DIRS)
    dst = f"{HOME}/{d}/{b}-copy.txt"
    return {
        "instruction": f"Using the text editor's Save As, save a copy of the open document as ~/{d}/{b}-copy.txt",
        "related_apps": ["mousepad"], "config": [write_file(src, _lines(_words(rng, 3))), *_mousepad(src)],
        "evaluator": {"func": "compare_text_file", "result": vm_file(dst, "result.txt"),
                      "expected": vm_file(src, "expected.txt")},
        "oracle": [op("click_window", title=f"{a}.txt"), op("hotkey", keys=["ctrl", "shift", "s"]), *_save_as(dst),
                   DONE],
    }
