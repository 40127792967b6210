"""apps-smoke templates: xfce4-terminal and gedit."""

from __future__ import annotations

import random
from typing import Any

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.apps_smoke.common import DONE, NAMES, WORDS, open_app
from osgym.suites.generators import cmd, op, rule, write_file


def terminal_count_matches(rng: random.Random) -> dict[str, Any]:
    word = rng.choice(WORDS)
    others = [w for w in WORDS if w != word]
    n = rng.randint(4, 9)
    hits = rng.randint(1, n - 1)  # at least one: grep exits 1 on no match, and the oracle's `&& cd` waits on it
    lines = [" ".join(rng.sample(others, 2) + ([word] if i < hits else [])) for i in range(n)]
    rng.shuffle(lines)
    name = rng.choice(NAMES)
    src, dst = f"~/Documents/{name}.txt", f"~/Documents/{name}-{word}.txt"
    return {
        "instruction": f"In the terminal, count the lines of {src} that contain the word {word}, and write just "
                       f"that number to {dst}",
        "related_apps": ["terminal"],
        "config": [write_file(f"{HOME}/Documents/{name}.txt", "".join(line + "\n" for line in lines)),
                   *open_app(["xfce4-terminal"], "Terminal")],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {dst}"), "expected": rule(expected=f"{hits}\n")},
        # The prompt's directory, which the title shows, changes only once the command has finished.
        "oracle": [op("wait_focused", window="Terminal", role="terminal", timeout=30),
                   op("type", text=f"grep -c -w {word} {src} > {dst} && cd ~/Documents\n"),
                   op("wait_window", title=": ~/Documents", timeout=30), DONE],
    }


def gedit_append_line(rng: random.Random) -> dict[str, Any]:
    words = rng.sample(WORDS, rng.randint(2, 5))
    line = f"{rng.choice(NAMES)} {rng.choice(WORDS)} {rng.randint(1, 99)}"
    name = f"{rng.choice(NAMES)}.txt"
    path = f"{HOME}/Documents/{name}"
    return {
        "instruction": f"In gedit, add the line '{line}' at the end of {name} and save it.",
        "related_apps": ["gedit"],
        "config": [write_file(path, "".join(w + "\n" for w in words)), *open_app(["gedit", path], name)],
        "evaluator": {"func": "exact_match", "result": cmd(f"cat {path}"),
                      "expected": rule(expected="".join(w + "\n" for w in [*words, line]))},
        # gedit hides a file's final newline (and writes it back on save), so the end of the text is the
        # end of the last line: a new line starts with Enter. "*" marks the title while there are unsaved
        # changes: seen once the typing has landed, gone once the file is written. Saving clicks the header
        # bar's Save button, found in the accessibility tree wherever the window's geometry and zoom put it.
        "oracle": [op("wait_focused", window=name, role="text", timeout=30), op("hotkey", keys=["ctrl", "End"]),
                   op("type", text="\n" + line), op("wait_window", title="*" + name),
                   op("click_element", window=name, name="Save", role="push-button"),
                   op("wait_gone", title="*" + name, timeout=30), DONE],
    }
