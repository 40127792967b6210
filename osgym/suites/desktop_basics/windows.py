"""desktop-basics templates: window management."""

from __future__ import annotations

import random
from typing import Any

from osgym.suites.desktop_basics.common import ANIMALS, DONE
from osgym.suites.generators import (
    launch,
    op,
    rule,
    wait,
)

GRID = [(20, 40), (660, 40), (20, 420), (660, 420)]


def _windows(rng: random.Random, n: tuple[int, int] = (2, 4)) -> tuple[list[str], list[dict[str, Any]]]:
    titles = rng.sample(ANIMALS, rng.randint(*n))
    steps: list[dict[str, Any]] = []
    for t, (x, y) in zip(titles, GRID, strict=False):
        steps += [launch(["xterm", "-T", t, "-xrm", "XTerm*allowTitleOps: false", "-geometry", f"60x15+{x}+{y}"]),
                  wait(t)]
    return titles, steps


def _window_task(instruction: str, steps: list[dict[str, Any]], rules: dict[str, Any],
                 oracle: list[dict[str, Any]]) -> dict[str, Any]:
    return {"instruction": instruction, "related_apps": ["openbox", "xterm"], "config": steps,
            "evaluator": {"func": "check_window_state", "result": {"type": "vm_windows"}, "expected": rule(**rules)},
            "oracle": [*oracle, DONE]}


def windows_close(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng)
    t = rng.choice(titles)
    return _window_task(f"Close the terminal window titled '{t}' and leave the other windows open.", steps,
                        {"absent": [t], "present": [x for x in titles if x != t]},
                        [op("click_window", title=t), op("hotkey", keys=["alt", "F4"]), op("wait_gone", title=t)])


def windows_close_others(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (3, 4))
    keep = rng.choice(titles)
    oracle: list[dict[str, Any]] = []
    for t in titles:
        if t != keep:
            oracle += [op("click_window", title=t), op("hotkey", keys=["alt", "F4"]), op("wait_gone", title=t)]
    return _window_task(f"Close every window except the terminal titled '{keep}'.", steps,
                        {"present": [keep], "count": 1}, oracle)


def windows_focus(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng)
    t = rng.choice(titles[:-1])  # the last one opened has the focus already
    return _window_task(f"Switch to the terminal window titled '{t}' so that it has the keyboard focus.", steps,
                        {"focused": t}, [op("click_window", title=t)])


def windows_maximize(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (1, 4))
    t = rng.choice(titles)
    return _window_task(f"Maximize the terminal window titled '{t}'.", steps, {"maximized": [t]},
                        [op("click_window", title=t, anchor="top_right", dx=-26, dy=-11)])


def windows_minimize(rng: random.Random) -> dict[str, Any]:
    titles, steps = _windows(rng, (1, 4))
    t = rng.choice(titles)
    return _window_task(f"Minimize (iconify) the terminal window titled '{t}'.", steps, {"minimized": [t]},
                        [op("click_window", title=t, anchor="top_right", dx=-42, dy=-11)])
