"""One hollow replica: its token, its state and its answer to each route of the control API.

The routes, their parameters, their limits and their errors are those of the replica's own server
(``replica_images/server/api.py``): a request a real replica refuses, a hollow one refuses with the same
status. What lies behind them is synthetic: the screen is a few frames (:mod:`~osgym.replicas.hollow.screen`)
that each action moves on, a command runs nothing and succeeds with no output, files live in a small
in-memory store, and any window the caller names exists.
"""

from __future__ import annotations

import hmac
import json
import posixpath
import re
import time
from collections.abc import Callable
from typing import Any

from osgym.replicas.hollow.screen import Frames, scaled

__all__ = ["HollowDesktop", "HttpError", "Answer", "MAX_FILES_BYTES", "MAX_JSON_BODY", "MAX_UPLOAD"]

MAX_UPLOAD = 64 * 2**20
MAX_JSON_BODY = 16 * 2**20
UPLOAD_ROUTES = frozenset({("PUT", "/files")})
MAX_WAIT_PER_REQUEST = 120.0
MAX_EXEC_TIMEOUT = 600
MAX_FILES_BYTES = 4 * 2**20
"""What one hollow replica's files may hold in all (a real one's home is a bounded tmpfs too)."""
HOME = "/home/user"
FILE_ROOTS = (HOME, "/tmp")
_KEY = re.compile(r"^[A-Za-z0-9_+\-]{1,32}$")
SETTLE_MODES = ("frames", "damage")
ACTION_TYPES = frozenset({"MOVE_TO", "DRAG_TO", "CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "SCROLL", "MOUSE_DOWN",
                          "MOUSE_UP", "TYPING", "PRESS", "KEY_DOWN", "KEY_UP", "HOTKEY", "WAIT", "DONE", "FAIL"})

Answer = tuple[int, "dict[str, Any] | bytes", "dict[str, str] | None", float]
"""A route's answer: status, JSON payload or bytes, extra headers, and seconds to wait before sending it."""


class HttpError(Exception):
    """Raised by a route to answer ``status`` with ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def bad(message: str) -> HttpError:
    return HttpError(400, message)


def load_json(body: bytes) -> dict[str, Any]:
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        raise bad(f"body is not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object, actual {type(data).__name__}")
    return data


def number(data: dict[str, Any], key: str, lo: float, hi: float, default: Any = None,
           kind: Callable[[Any], Any] = float) -> Any:
    v = data.get(key, default)
    if isinstance(v, str):
        try:
            v = float(v)
        except ValueError:
            raise bad(f"{key}: expected a number, actual {v!r:.40}") from None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
        raise bad(f"{key}: expected a number in {lo}..{hi}, actual {v!r:.40}")
    return kind(v)


def _num(a: dict[str, Any], key: str, lo: float, hi: float, required: bool = True) -> None:
    v = a.get(key)
    if v is None:
        if required:
            raise bad(f"{a.get('action_type')}: missing {key!r}")
        return
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(f"{a.get('action_type')}: {key} expected a number, actual {v!r:.50}")
    if not lo <= v <= hi:
        raise bad(f"{a.get('action_type')}: {key} expected {lo}..{hi}, actual {v}")


def _str(a: dict[str, Any], key: str, max_len: int = 10000) -> str:
    v = a.get(key)
    if not isinstance(v, str) or not v or len(v) > max_len:
        raise bad(f"{a.get('action_type')}: {key} expected a string of 1..{max_len} chars, actual {v!r:.50}")
    return v


def _key(t: str, name: str) -> None:
    if not _KEY.match(name):
        raise bad(f"{t}: unknown key {name!r:.40}")


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
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def route(self, method: str, path: str) -> Callable[[dict[str, str], bytes], Answer]:
        found = self.routes.get((method, path))
        if found is None:
            if any(p == path for _, p in self.routes):
                raise HttpError(405, f"{method} not allowed on {path}")
            raise HttpError(404, f"no route {path}")
        return found

    def body_limit(self, method: str, path: str) -> int:
        self.route(method, path)
        return MAX_UPLOAD if (method, path) in UPLOAD_ROUTES else MAX_JSON_BODY

    def replace_token(self, q: dict[str, str], body: bytes) -> Answer:
        """Take a new bearer token, given with the current one, as a replica restored from a checkpoint does."""
        new = load_json(body).get("token")
        if not isinstance(new, str) or not 24 <= len(new) <= 256 or not new.isascii() or not new.isprintable() \
                or " " in new:
            raise bad("token: expected 24..256 printable ASCII characters without spaces")
        self.token = new
        return 200, {"status": "success"}, None, 0.0

    # ---- observation -------------------------------------------------------------------------------
    def health(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"status": "ok", "screen": [self.width, self.height], "compat": False, "recording": False,
                     "uptime_s": round(time.time() - self.started, 3), "desktop": {"hollow": True}}, None, 0.0

    def screenshot(self, q: dict[str, str], body: bytes) -> Answer:
        fmt = q.get("format", "png").lower()
        fmt = "jpeg" if fmt == "jpg" else fmt
        if fmt not in ("png", "jpeg"):
            raise bad(f"format: expected png|jpeg, actual {fmt!r:.20}")
        try:
            quality = int(q.get("quality", 80))
            max_side = int(q["max_side"]) if q.get("max_side") else None
            level = int(q.get("png_level", 1))
        except ValueError as exc:
            raise bad(f"screenshot parameters must be integers: {exc}") from None
        if not 1 <= quality <= 100 or (max_side is not None and not 16 <= max_side <= 8192) or not 0 <= level <= 9:
            raise bad("quality expected 1..100, max_side 16..8192, png_level 0..9")
        w, h = scaled(self.width, self.height, max_side)
        data = self.frames.get((w, h), fmt, quality, self.frame)
        return 200, data, {"Content-Type": f"image/{fmt}", "X-Width": str(w), "X-Height": str(h)}, 0.0

    def list_windows(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"windows": list(self.windows.values())}, None, 0.0

    def get_pointer(self, q: dict[str, str], body: bytes) -> Answer:
        return 200, {"x": self.pointer[0], "y": self.pointer[1]}, None, 0.0

    def accessibility(self, q: dict[str, str], body: bytes) -> Answer:
        number(q, "timeout", 0.5, 60, default=10)
        number(q, "max_nodes", 1, 200_000, default=20_000, kind=int)
        number(q, "max_bytes", 1024, 64 * 2**20, default=32 * 2**20, kind=int)
        number(q, "showing", 0, 1, default=0, kind=int)
        xml = '<desktop-frame xmlns:st="https://accessibility.ubuntu.example.org/ns/state" name="hollow"/>'
        return 200, xml.encode(), {"Content-Type": "application/xml; charset=utf-8"}, 0.0

    def terminal(self, q: dict[str, str], body: bytes) -> Answer:
        number(q, "timeout", 0.5, 60, default=10)
        return 200, {"output": None}, None, 0.0

    # ---- acting ------------------------------------------------------------------------------------
    def actions(self, q: dict[str, str], body: bytes) -> Answer:
        data = load_json(body)
        acts = data.get("actions")
        if not isinstance(acts, list) or len(acts) > 200:
            raise bad("actions: expected a list of at most 200 action objects")
        for a in acts:
            self.validate(a)
        waits = sum(1.0 if a.get("seconds") is None else float(a["seconds"]) for a in acts
                    if a.get("action_type") == "WAIT")
        if waits > MAX_WAIT_PER_REQUEST:
            raise bad(f"actions: expected at most {MAX_WAIT_PER_REQUEST:g} s of WAIT in one request, actual {waits:g}")
        how = data.get("settle") or {}
        if not isinstance(how, dict):
            raise bad("settle: expected an object {timeout, interval, quiet, min, mode}")
        mode = how.get("mode", "frames")
        if mode not in SETTLE_MODES:
            raise bad(f"settle.mode: expected one of {', '.join(SETTLE_MODES)}, actual {mode!r:.20}")
        timeout = number(how, "timeout", 0, 30, default=0)
        number(how, "interval", 0.01, 5, default=0.05)
        number(how, "quiet", 0, 5, default=0.1)
        number(how, "min", 0, 5, default=0)
        for a in acts:
            if a.get("x") is not None:
                self.pointer = (int(a["x"]), int(a["y"]))
            if a["action_type"] not in ("WAIT", "DONE", "FAIL"):
                self.frame += 1
        settled = (True, mode) if timeout > 0 else (None, None)
        return 200, {"performed": len(acts), "settled": settled[0], "settled_by": settled[1],
                     "pointer": list(self.pointer), "elapsed_ms": 0.0}, None, waits

    def validate(self, a: Any) -> None:
        if not isinstance(a, dict):
            raise bad(f"expected an action object, actual {type(a).__name__}")
        t = a.get("action_type")
        if t not in ACTION_TYPES:
            raise bad(f"action_type: expected a computer_13 action, actual {t!r:.40}")
        xs, ys = (0, self.width - 1), (0, self.height - 1)
        if t in ("MOVE_TO", "DRAG_TO"):
            _num(a, "x", *xs)
            _num(a, "y", *ys)
        elif t in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "SCROLL"):
            if (a.get("x") is None) != (a.get("y") is None):
                raise bad(f"{t}: give both x and y, or neither")
            _num(a, "x", *xs, required=False)
            _num(a, "y", *ys, required=False)
            if t == "CLICK":
                self._button(a)
                _num(a, "num_clicks", 1, 3, required=False)
            if t == "SCROLL":
                _num(a, "dx", -100, 100, required=False)
                _num(a, "dy", -100, 100, required=False)
        elif t in ("MOUSE_DOWN", "MOUSE_UP"):
            self._button(a)
        elif t == "TYPING":
            _str(a, "text")
        elif t in ("PRESS", "KEY_DOWN", "KEY_UP"):
            _key(t, _str(a, "key", 32))
        elif t == "HOTKEY":
            keys = a.get("keys")
            if not isinstance(keys, list) or not 1 <= len(keys) <= 6 or not all(isinstance(k, str) and k for k in keys):
                raise bad("HOTKEY: keys expected a list of 1..6 key names")
            for k in keys:
                _key(t, k)
        elif t == "WAIT":
            _num(a, "seconds", 0, 60, required=False)

    @staticmethod
    def _button(a: dict[str, Any]) -> None:
        b = "left" if a.get("button") is None else a.get("button")
        if b not in ("left", "middle", "right"):
            raise bad(f"{a.get('action_type')}: button expected left|middle|right, actual {b!r:.20}")

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
