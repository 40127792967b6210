"""Run OSWorld's own getter functions, inside the reference venv (tests/metrics/conftest.py), against an
osgym replica; not imported by osgym.

Reads ``{"socket", "token", "calls": [{"module", "func", "config", "active_url"?}]}`` from stdin and
prints a JSON list of ``{"value": ..., "refused": [...]}`` (the requests the replica answered with other
than 200, which OSWorld's controller reads as None; bytes as ``{"bytes": base64}``, tuples as lists, files
the getter wrote as ``{"file": base64}``) or ``{"error": "Type: message"}``.

OSWorld's getters take an ``env`` whose ``controller`` talks to OSWorld's server. The adapter here
(:class:`Controller`) answers the same calls from the osgym replica's native API over its Unix
socket: ``get_file`` is ``GET /files``, ``execute_python_command`` is ``POST /execute`` of
``python3 -c``. The getter module is loaded from OSWorld's real file without its package
``__init__`` (which imports every family); ``chrome.py``'s Playwright and PyDrive imports are left
out, and a function is run only if its code names nothing they would have bound.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import os
import socket
import sys
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared loader
from osworld_reference import enter_packages, load, names  # noqa: E402

HEAVY = {"chrome": ({"playwright.sync_api", "pydrive.auth", "pydrive.drive"},
                    {"sync_playwright", "expect", "GoogleAuth", "GoogleDrive", "GoogleDriveFileList",
                     "GoogleDriveFile"})}


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("replica", timeout=60)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(self._path)


class Controller:
    """The calls OSWorld's getters make on ``env.controller``, answered by an osgym replica."""

    def __init__(self, sock: str, token: str) -> None:
        self.sock, self.token = sock, token
        self.refused: list[str] = []  # answers other than 200, which OSWorld's controller turns into None

    def _request(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        conn = _UnixConnection(self.sock)
        try:
            headers = {"Authorization": self.token}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                headers["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            answer = r.read()
            if r.status != 200:
                self.refused.append(f"{method} {path} -> {r.status}: {answer[:300].decode('utf-8', 'replace')}")
            return r.status, answer
        finally:
            conn.close()

    def get_file(self, path: str) -> bytes | None:
        status, data = self._request("GET", "/files?" + urllib.parse.urlencode({"path": path}))
        return data if status == 200 else None

    def execute_python_command(self, command: str) -> dict[str, Any]:
        status, data = self._request("POST", "/execute", {"command": ["python3", "-c", command], "timeout": 30})
        answer: dict[str, Any] = json.loads(data)
        return answer

    def get_terminal_output(self) -> str | None:
        status, data = self._request("GET", "/terminal")
        return json.loads(data)["output"] if status == 200 else None

    def get_accessibility_tree(self) -> str | None:
        status, data = self._request("GET", "/accessibility")
        return data.decode() if status == 200 else None


class Env:
    def __init__(self, controller: Controller, cache_dir: str) -> None:
        self.controller = controller
        self.cache_dir = cache_dir
        self.vm_platform = "Linux"
        self.vm_ip = "0.0.0.0"  # getters that POST to OSWorld's server directly are not run here


def _plain(value: Any, cache: str) -> Any:
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, str) and value.startswith(cache + os.sep) and os.path.isfile(value):
        with open(value, "rb") as f:
            return {"file": base64.b64encode(f.read()).decode()}
    if isinstance(value, list | tuple):
        return [_plain(v, cache) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, cache) for k, v in value.items()}
    return value


def main() -> None:
    request = json.load(sys.stdin)
    enter_packages("getters")
    out = []
    # OSWorld's getters print as they go: keep stdout for the answer.
    with contextlib.redirect_stdout(sys.stderr), tempfile.TemporaryDirectory() as cache:
        env = Env(Controller(request["socket"], request["token"]), cache)
        for call in request["calls"]:
            try:
                module = load("getters", call["module"], HEAVY)
                func = getattr(module, call["func"])
                if "active_url" in call:
                    # the address bar's text comes from Chrome's accessibility tree there: hand in the URL
                    # osgym read, to compare what the getter makes of it
                    module.get_active_url_from_accessTree = lambda env, config, url=call["active_url"]: url
                unused = HEAVY.get(call["module"], (set(), set()))[1]
                assert not (names(func.__code__) & unused), f"{call['func']} uses {unused}: cannot run it here"
                env.controller.refused = []
                out.append({"value": _plain(func(env, dict(call["config"])), cache), "refused": env.controller.refused})
            except Exception as exc:  # reported to the test, which decides what a crash means
                out.append({"error": f"{type(exc).__name__}: {exc}"})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
