"""What a task needs from outside the replica, which is offline: live websites and VS Code's marketplace.

A task that needs either cannot run here until issue 16's asset cache serves a snapshot instead, so
the loader refuses it, naming what it needs (``osgym tasks check`` counts such files apart).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlparse

__all__ = ["BROWSER_STEPS", "live_urls", "marketplace_extensions"]

BROWSER_STEPS = {"chrome_open_tabs": "urls_to_open", "chrome_close_tabs": "urls_to_close"}
"""Setup steps that drive Chromium through DevTools, and the parameter holding their URLs."""

_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def live_urls(urls: object) -> list[str]:
    """The URLs in ``urls`` that reach outside the replica: http(s) to any host but its own loopback.

    >>> live_urls(["https://www.example.com/a", "http://127.0.0.1:8000/", "file:///home/user/a.html"])
    ['https://www.example.com/a']
    """
    items = urls if isinstance(urls, list) else [urls]
    return [u for u in items if isinstance(u, str) and urlparse(u).scheme in ("http", "https")
            and urlparse(u).hostname not in _LOOPBACK]


_UNQUOTE = str.maketrans("", "", "'\"\\")


def _words(command: object, needle: str) -> list[str]:
    """``command``'s words, or none if no word can be ``needle`` (splitting is the slow part of loading a
    task: quotes and backslashes are the only characters shlex drops from within a word)."""
    if isinstance(command, str) and needle not in command.translate(_UNQUOTE):
        return []
    if isinstance(command, list):
        return [str(w) for w in command]
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    return []


def marketplace_extensions(steps: Iterable[tuple[str, dict[str, Any]]],
                           results: Iterable[tuple[str, dict[str, Any]]]) -> list[str]:
    """VS Code extension IDs a task installs from the marketplace, or asks the agent to install.

    ``steps``: its setup steps as (type, parameters); ``results``: its result getters as (type, options).
    A setup step that runs ``code --install-extension ID`` needs the marketplace (a ``.vsix`` path does
    not). So does an evaluator that greps ``code --list-extensions`` for an ID, unless a setup step
    brings a ``.vsix`` file for the agent to install.

    >>> marketplace_extensions([("command", {"command": ["code", "--install-extension", "ms-python.python"]})], [])
    ['ms-python.python']
    >>> check = [("vm_command_line", {"command": ["code", "--list-extensions", "|", "grep", "a.b"]})]
    >>> marketplace_extensions([], check), marketplace_extensions(
    ...     [("download", {"files": [{"url": "https://x/t.vsix", "path": "/home/user/t.vsix"}]})], check)
    (['a.b'], [])
    """
    steps = list(steps)
    out: list[str] = []
    vsix = False
    for _, params in steps:
        words = _words(params.get("command"), "--install-extension")
        for i, w in enumerate(words[:-1]):
            if w == "--install-extension" and not words[i + 1].endswith(".vsix"):
                out.append(words[i + 1])
        files = params.get("files")
        for f in files if isinstance(files, list) else []:
            vsix |= isinstance(f, dict) and any(str(f.get(k, "")).endswith(".vsix") for k in ("path", "local_path"))
    for kind, options in results:
        words = _words(options.get("command"), "--list-extensions")
        if kind == "vm_command_line" and "--list-extensions" in words and "grep" in words and not vsix:
            out += words[words.index("grep") + 1:][:1]
    return list(dict.fromkeys(out))
