"""One hollow replica: its token, its state and its answer to each route of the control API.

The routes, their parameters, their limits and their errors are those of the replica's own server
(``replica_images/server/api.py``): both read a request with the same code,
:mod:`~osgym.replicas.hollow.protocol` (``replica_images/server/protocol.py``), so a request a real replica
refuses, a hollow one refuses with the same status and message. What lies behind them is synthetic: the
screen is a few frames (:mod:`~osgym.replicas.hollow.screen`) that each action moves on, a command runs nothing
and succeeds with no output, files live in a small in-memory store, and any window the caller names exists.
"""

from __future__ import annotations

import posixpath
import re
import time
from collections.abc import Callable
from typing import Any

from osgym.replicas.hollow import protocol
from osgym.replicas.hollow.protocol import MAX_JSON_BODY, MAX_UPLOAD, HttpError, bad, load_json, number
from osgym.replicas.hollow.screen import Frames, scaled

__all__ = ["HollowDesktop", "HttpError", "Answer", "MAX_FILES_BYTES", "MAX_JSON_BODY", "MAX_UPLOAD"]

MAX_EXEC_TIMEOUT = 600
MAX_FILES_BYTES = 4 * 2**20
"""What one hollow replica's files may hold in all (a real one's home is a bounded tmpfs too)."""
HOME = "/home/user"
FILE_ROOTS = (HOME, "/tmp")
_KEY = re.compile(r"^[A-Za-z0-9_+\-]{1,32}$")

Answer = tuple[int, "dict[str, Any] | bytes", "dict[str, str] | None", float]
"""A route's answer: status, JSON payload or bytes, extra headers, and seconds to wait before sending it."""


def _check_key(name: str) -> None:
    """A hollow replica has no X server to look key names up in: any plausible name is one."""
    if not _KEY.match(name):
        raise ValueError(f"unknown key name {name!r}")


def _command(data: dict[str, Any]) -> None:
    cmd, shell = data.get("command"), data.get("shell")
    if shell is not None and not isinstance(shell, bool):
        raise bad(f"shell: expected true or false, actual {shell!r:.40}")
    if isinstance(cmd, str) and cmd.strip():
        return
    if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd) and cmd[0]:
        return
    raise bad("command: expected a non-empty string or a list of strings")


def _confine(path: Any) -> str:
    if not isinstance(path, str) or not path or "\x00" in path:
        raise bad("path: expected a non-empty string")
    full = posixpath.normpath(HOME + path[1:] if path.startswith("~") else path)
    if not any(full == root or full.startswith(root + "/") for root in FILE_ROOTS):
        raise HttpError(403, f"path {path!r} is outside {', '.join(FILE_ROOTS)}")
    return full


class HollowDesktop:
    """One hollow replica's token and state, and its routes (``(method, path) -> handler(query, body)``).

    Not thread-safe: the hollow server calls it from its one event loop.
    """

    def __init__(self, token: str, screen: tuple[int, int], frames: Frames):
        if not token:
            raise ValueError("a hollow replica needs a token")
        self.token = token
        self.width, self.height = screen
        self.frames = frames
        self.started = time.time()
        self.frame = 0
        self.pointer = (self.width // 2, self.height // 2)
        self.files: dict[str, bytes] = {}
        self.windows: dict[str, dict[str, Any]] = {}
        self.pids = 100
        self.routes: dict[tuple[str, str], Callable[[dict[str, str], bytes], Answer]] = {
            ("GET", "/health"): self.health, ("GET", "/screenshot"): self.screenshot,
            ("POST", "/actions"): self.actions, ("POST", "/execute"): self.execute, ("POST", "/launch"): self.launch,
            ("GET", "/windows"): self.list_windows, ("POST", "/windows/activate"): self.window,
            ("POST", "/windows/close"): self.window, ("POST", "/windows/wait"): self.window,
            ("GET", "/files"): self.file_get, ("PUT", "/files"): self.file_put, ("GET", "/pointer"): self.get_pointer,
            ("GET", "/accessibility"): self.accessibility, ("GET", "/terminal"): self.terminal,
            ("GET", "/wallpaper"): self.no_wallpaper, ("POST", "/wallpaper"): self.no_wallpaper,
            ("POST", "/recording/start"): self.no_recording, ("POST", "/recording/stop"): self.no_recording,
            ("GET", "/recording"): self.no_recording, ("POST", "/token"): self.replace_token,
        }

    # ---- what the server asks before a body is read ------------------------------------------------
    def authorized(self, header: str) -> bool:
        return protocol.authorized(header, self.token)

    def route(self, method: str, path: str) -> Callable[[dict[str, str], bytes], Answer]:
        return protocol.find_route(self.routes, method, path)

    def body_limit(self, method: str, path: str) -> int:
        return protocol.body_limit(self.routes, method, path)

    def replace_token(self, q: dict[str, str], body: bytes) -> Answer:
        """Take a new bearer token, given with the current one, as a replica restored from a checkpoint does."""
        self.token = protocol.new_token(body)
        return 200, {"status": "success"}, None, 0.0

    # ---- observation -------------------------------------------------------------------------------
    def health(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"status": "ok", "screen": [self.width, self.height], "compat": False, "recording": False,
                     "uptime_s": round(time.time() - self.started, 3), "desktop": {"hollow": True}}, None, 0.0

    def screenshot(self, q: dict[str, str], body: bytes) -> Answer:
        fmt, quality, max_side, _, with_windows = protocol.screenshot_params(q)
        listed = protocol.windows_header(list(self.windows.values())) if with_windows else {}
        w, h = scaled(self.width, self.height, max_side)
        data = self.frames.get((w, h), fmt, quality, self.frame)
        return 200, data, {"Content-Type": f"image/{fmt}", "X-Width": str(w), "X-Height": str(h), **listed}, 0.0

    def list_windows(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"windows": list(self.windows.values())}, None, 0.0

    def get_pointer(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"x": self.pointer[0], "y": self.pointer[1]}, None, 0.0

    def accessibility(self, q: dict[str, str], body: bytes) -> Answer:
        number(q, "timeout", 0.5, 60, default=10)
        number(q, "max_nodes", 1, 200_000, default=20_000, kind=int)
        number(q, "max_bytes", 1024, 64 * 2**20, default=32 * 2**20, kind=int)
        number(q, "showing", 0, 1, default=0, kind=int)
        protocol.window_filter(q)
        found = ' found="false"' if protocol.a11y_find(q) is not None else ""  # its desktop has no elements
        xml = f'<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" name="hollow"{found}/>'
        return 200, xml.encode(), {"Content-Type": "application/xml; charset=utf-8"}, 0.0

    def terminal(self, q: dict[str, str], body: bytes) -> Answer:
        number(q, "timeout", 0.5, 60, default=10)
        return 200, {"output": None}, None, 0.0

    # ---- acting ------------------------------------------------------------------------------------
    def actions(self, q: dict[str, str], body: bytes) -> Answer:
        req = protocol.read_actions(load_json(body), (self.width, self.height), _check_key)
        acts, waits = req.actions, req.waits
        for a in acts:
            if a.get("x") is not None:
                self.pointer = (int(a["x"]), int(a["y"]))
            if a["action_type"] not in ("WAIT", "DONE", "FAIL"):
                self.frame += 1
        settled = (True, req.mode) if req.timeout > 0 else (None, None)
        return 200, {"performed": len(acts), "settled": settled[0], "settled_by": settled[1],
                     "pointer": list(self.pointer), "elapsed_ms": 0.0}, None, waits

    def execute(self, q: dict[str, str], body: bytes) -> Answer:
        data = load_json(body)
        _command(data)
        t = data.get("timeout", 120.0)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= MAX_EXEC_TIMEOUT:
            raise bad(f"timeout: expected seconds in (0, {MAX_EXEC_TIMEOUT}], actual {t!r:.40}")
        return 200, {"status": "success", "output": "", "error": "", "returncode": 0}, None, 0.0

    def launch(self, q: dict[str, str], body: bytes) -> Answer:
        _command(load_json(body))
        self.pids += 1
        return 200, {"status": "success", "pid": self.pids}, None, 0.0

    def window(self, q: dict[str, str], body: bytes) -> Answer:
        data = load_json(body)
        title = data.get("title")
        if not isinstance(title, str) or not title:
            raise bad("title: expected a non-empty string")
        number(data, "timeout", 0, 60, default=0)
        found = self.windows.setdefault(title, {"id": 0x400000 + len(self.windows), "title": title, "x": 0, "y": 0,
                                                "width": self.width, "height": self.height, "focused": True,
                                                "wm_class": "hollow"})
        return 200, {"status": "success", "window": found}, None, 0.0

    def no_wallpaper(self, q: dict[str, str], body: bytes) -> Answer:
        raise HttpError(409, "no wallpaper on a hollow replica")

    def no_recording(self, q: dict[str, str], body: bytes) -> Answer:
        raise HttpError(409, "a hollow replica does not record")

    # ---- files -------------------------------------------------------------------------------------
    def file_get(self, q: dict[str, str], body: bytes) -> Answer:
        path = _confine(q.get("path"))
        if path not in self.files:
            raise HttpError(404, f"no file {q.get('path')!r:.200}")
        return 200, self.files[path], None, 0.0

    def file_put(self, q: dict[str, str], body: bytes) -> Answer:
        path = _confine(q.get("path"))
        held = sum(len(v) for k, v in self.files.items() if k != path)
        if held + len(body) > MAX_FILES_BYTES:
            raise HttpError(507, f"the hollow replica's files would pass {MAX_FILES_BYTES} bytes")
        self.files[path] = body
        return 200, {"status": "success", "bytes": len(body)}, None, 0.0
