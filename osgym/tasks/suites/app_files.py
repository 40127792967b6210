"""Setup steps that put many files, or binary ones, into a replica in one ``execute`` step, and the
getter that waits for a file the app writes in the background."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from osgym.tasks.generators import cmd, execute, q, wait
from osgym.tasks.suites.apps_smoke.common import SESSION_UP

APP_START_S = 180
"""How long setup waits for an app's window: GIMP and VS Code took over 60 s (a ``wait_window`` step's
limit) at load ~40 on this 2-core machine; the bound only matters when something is broken."""


def write_files(files: Mapping[str, str | bytes]) -> dict[str, Any]:
    """One setup step writing every ``path: content`` (text or bytes, exact), creating parent directories.

    >>> step = write_files({"/tmp/a/b.txt": "hi", "/tmp/c.bin": b"\\x00"})
    >>> step["parameters"]["command"].count("base64 -d")
    2
    """
    parts = []
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        parent = path.rsplit("/", 1)[0]
        b64 = base64.b64encode(data).decode()
        parts.append(f"mkdir -p {q(parent)} && printf '%s' {q(b64)} | base64 -d > {q(path)}")
    return execute(" && ".join(parts))


def poll_then(test: str, then: str, seconds: int = 20) -> dict[str, Any]:
    """A ``vm_command_line`` getter that waits (at most ``seconds``) until the shell test ``test`` holds, then
    runs ``then``. Apps write some state in the background after the action that caused it (Chromium saves
    its Bookmarks file ~2.5 s after a change, a download is renamed from ``.crdownload`` once complete), so
    the evaluator waits for that state rather than reading it once."""
    tries = seconds * 4
    return cmd(f"for i in $(seq {tries}); do {test} && break; sleep 0.25; done; {then}")


def open_app(command: list[str], title: str, seconds: int = APP_START_S) -> list[dict[str, Any]]:
    """Setup steps: wait for the window manager, start ``command`` and wait (at most ``seconds``) until its
    window (title containing ``title``) is mapped, then until it is focused.

    Starting and the long wait are one step, the one just before the last ``wait_window``, which is where
    :mod:`osgym.tasks.variation` finds the step that starts the target app (and moves it after the theme
    and the distractor it adds)."""
    argv = " ".join(q(c) for c in command)
    start = execute(f"setsid {argv} >/dev/null 2>&1 </dev/null & for i in $(seq {seconds * 4}); do "
                    f"wmctrl -l | grep -qF -- {q(title)} && exit 0; sleep 0.25; done; exit 1")
    start["parameters"]["timeout"] = seconds + 30
    return [execute(SESSION_UP), start, wait(title, timeout=60)]
