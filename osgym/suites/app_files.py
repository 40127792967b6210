"""Setup steps that put many files, or binary ones, into a replica in one ``execute`` step, and the
getter that waits for a file the app writes in the background. Apps are opened with
:func:`osgym.suites.apps_smoke.common.open_app`."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from osgym.suites.generators import cmd, execute, q


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

