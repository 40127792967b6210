"""What the desktop-basics templates share: word lists, and oracle and setup fragments."""


from __future__ import annotations

import random
from typing import Any

from osgym.suites.generators import (
    launch,
    launch_until_window,
    op,
    wait,
)

NAMES = ["notes", "report", "budget", "ideas", "draft", "summary", "agenda", "journal", "recipes", "contacts",
         "invoice", "letter", "plan", "minutes", "todo", "inventory", "schedule", "checklist", "outline", "memo",
         "story", "poem", "lyrics", "tasks", "goals", "expenses", "receipts", "travel", "packing", "errands"]
WORDS = ["apple", "river", "mountain", "coffee", "yellow", "garden", "window", "silver", "planet", "orange",
         "forest", "candle", "rocket", "pepper", "violet", "harbor", "meadow", "thunder", "pencil", "marble",
         "canyon", "lemon", "falcon", "cotton", "saddle", "walnut", "copper", "breeze", "maple", "tiger"]
ANIMALS = ["otter", "badger", "heron", "lynx", "marmot", "puffin", "walrus", "gecko", "bison", "coyote", "ferret",
           "ibis", "koala", "lemur", "magpie", "narwhal", "ocelot", "panda", "quokka", "raven", "salmon", "tapir",
           "urchin", "vole", "wombat", "yak", "zebra", "alpaca", "beaver", "cobra"]
SUBFOLDERS = ["archive", "backup", "shared", "inbox", "outbox", "review", "final", "pending", "current", "spare"]
DIRS = ["Desktop", "Documents", "Downloads"]
XTERM = [launch(["xterm"]), wait("xterm")]
CLICK_XTERM = op("click_window", title="xterm")
DONE = op("done")


def _words(rng: random.Random, k: int) -> list[str]:
    return rng.sample(WORDS, k)


def _lines(words: list[str]) -> str:
    return "".join(w + "\n" for w in words)


def _file(rng: random.Random, exts: tuple[str, ...] = ("txt", "md")) -> str:
    return f"{rng.choice(NAMES)}.{rng.choice(exts)}"


def _mousepad(path: str | None = None, *, keyfile: bool = False) -> list[dict[str, Any]]:
    """Launch mousepad (on ``path``) and wait for its window; ``keyfile`` keeps its settings in a file."""
    title = "Mousepad" if path is None else path.rsplit("/", 1)[-1]
    env = {"GSETTINGS_BACKEND": "keyfile"} if keyfile else None
    return launch_until_window(["mousepad", *([path] if path else [])], title, env=env)


def _save_as(path: str) -> list[dict[str, Any]]:
    """Oracle ops to fill and confirm mousepad's Save As dialog.

    Enter goes only once Save is sensitive: GTK's file chooser re-enables it 150 ms after the last change
    to the Name field, and until then ignores Enter (on a quiet machine the next step comes sooner).
    """
    return [op("wait_window", title="Save As", focused=True), op("hotkey", keys=["ctrl", "a"]), op("type", text=path),
            op("wait_enabled", window="Save As", control="Save"), op("press", key="enter"),
            op("wait_window", title=path.rsplit("/", 1)[-1] + " - Mousepad")]


SAVE = [op("hotkey", keys=["ctrl", "s"]), op("wait_gone", title="*")]


def _pcmanfm(folder: str) -> list[dict[str, Any]]:
    return launch_until_window(["pcmanfm", folder], folder.rsplit("/", 1)[-1])


def _select(name: str) -> list[dict[str, Any]]:
    """Select a file in pcmanfm by typing its name, then close the type-ahead box."""
    return [op("type", text=name, noise=False), op("press", key="Escape", noise=False)]


