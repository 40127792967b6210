"""Routes of the native control API. Every error is JSON: {"error": message}."""

import hmac
import json
import os
import subprocess
import threading
import time

from screen import Screen
from xinput import InputError, XInput

HOME = "/home/user"
FILE_ROOTS = (HOME, "/tmp")
MAX_EXEC_TIMEOUT = 600


class HttpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.message = message


def bad(message):
    return HttpError(400, message)


def load_json(body):
    if not body:
        return {}
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise bad(f"body is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object, actual {type(data).__name__}")
    return data


def _num(a, key, lo, hi, required=True, kind=int, default=None):
    v = a.get(key, default)
    if v is None:
        if required:
            raise bad(f"{a.get('action_type')}: missing {key!r}")
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise bad(f"{a.get('action_type')}: {key} expected a number, actual {v!r:.50}")
    if not lo <= v <= hi:
        raise bad(f"{a.get('action_type')}: {key} expected {lo}..{hi}, actual {v}")
    return kind(v)


def _str(a, key, max_len=10000):
    v = a.get(key)
    if not isinstance(v, str) or not v or len(v) > max_len:
        raise bad(f"{a.get('action_type')}: {key} expected a string of 1..{max_len} chars, actual {v!r:.50}")
    return v


def _button(a):
    b = a.get("button", "left")
    if b not in ("left", "middle", "right"):
        raise bad(f"{a.get('action_type')}: button expected left|middle|right, actual {b!r:.20}")
    return b


def confine(path):
    """The real path of ``path`` if it lies under the user's home or /tmp."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise bad("path: expected a non-empty string")
    real = os.path.realpath(os.path.expanduser(path.replace("~", HOME, 1) if path.startswith("~") else path))
    if not any(real == root or real.startswith(root + "/") for root in FILE_ROOTS):
        raise HttpError(403, f"path {path!r} is outside {', '.join(FILE_ROOTS)}")
    return real


class App:
    def __init__(self, display, token, compat, child_env):
        self.display = display
        self.token = token
        self.compat = compat
        self.child_env = child_env
        self.input = XInput(display)
        self.screen = Screen(display)
        self.action_lock = threading.Lock()
        self.started = time.time()
        self.routes = {
            ("GET", "/health"): self.health,
            ("GET", "/screenshot"): self.screenshot,
            ("POST", "/actions"): self.actions,
            ("POST", "/execute"): self.execute,
            ("POST", "/launch"): self.launch,
            ("GET", "/windows"): self.windows,
            ("POST", "/windows/activate"): self.activate_window,
            ("POST", "/windows/close"): self.close_window,
            ("POST", "/windows/wait"): self.wait_window,
            ("GET", "/files"): self.file_get,
            ("PUT", "/files"): self.file_put,
            ("GET", "/pointer"): self.pointer,
        }

    def close(self):
        pass

    def authorized(self, path, header):
        if self.compat:
            return True
        scheme, _, given = header.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def handle(self, method, path, query, body, headers):
        route = self.routes.get((method, path))
        if route is None:
            if any(p == path for _, p in self.routes):
                raise HttpError(405, f"{method} not allowed on {path}")
            raise HttpError(404, f"no route {path}")
        return route(query, body)

    # ---- observation -------------------------------------------------------
    def health(self, q, body):
        w, h = self.screen.size
        return 200, {"status": "ok", "screen": [w, h], "uptime_s": round(time.time() - self.started, 3),
                     "compat": self.compat}, None

    def screenshot(self, q, body):
        fmt = q.get("format", "png").lower()
        if fmt in ("jpg",):
            fmt = "jpeg"
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
        img = self.screen.grab(cursor=q.get("cursor", "1") != "0")
        data, (w, h) = self.screen.encode(img, fmt, quality, max_side, level)
        return 200, data, {"Content-Type": f"image/{fmt}", "X-Width": str(w), "X-Height": str(h)}

    def windows(self, q, body):
        return 200, {"windows": self.screen.windows()}, None

    def pointer(self, q, body):
        x, y = self.input.pointer()
        return 200, {"x": x, "y": y}, None

    # ---- actions -----------------------------------------------------------
    def actions(self, q, body):
        data = load_json(body)
        acts = data.get("actions")
        if not isinstance(acts, list) or len(acts) > 200:
            raise bad("actions: expected a list of at most 200 action objects")
        for a in acts:
            self.validate(a)
        settle = data.get("settle") or {}
        if not isinstance(settle, dict):
            raise bad("settle: expected an object {timeout, interval}")
        t0 = time.perf_counter()
        with self.action_lock:
            for i, a in enumerate(acts):
                try:
                    self.perform(a)
                except InputError as exc:
                    raise bad(f"action {i} ({a.get('action_type')}): {exc}") from None
            settled = self.settle(float(settle.get("timeout", 0) or 0), float(settle.get("interval", 0.05) or 0.05))
        x, y = self.input.pointer()
        return 200, {"performed": len(acts), "settled": settled, "pointer": [x, y],
                     "elapsed_ms": round((time.perf_counter() - t0) * 1000, 2)}, None

    def settle(self, timeout, interval):
        """Wait until two consecutive frames are equal, at most ``timeout`` seconds."""
        if timeout <= 0:
            return None
        deadline = time.monotonic() + min(timeout, 30)
        last = self.screen.frame_hash()
        while time.monotonic() < deadline:
            time.sleep(interval)
            now = self.screen.frame_hash()
            if now == last:
                return True
            last = now
        return False

    def validate(self, a):
        if not isinstance(a, dict):
            raise bad(f"expected an action object, actual {type(a).__name__}")
        t = a.get("action_type")
        w, h = self.screen.size
        xy = {"x": (0, w - 1), "y": (0, h - 1)}
        if t in ("MOVE_TO", "DRAG_TO"):
            _num(a, "x", *xy["x"]), _num(a, "y", *xy["y"])
        elif t in ("CLICK", "RIGHT_CLICK", "DOUBLE_CLICK", "SCROLL"):
            if (a.get("x") is None) != (a.get("y") is None):
                raise bad(f"{t}: give both x and y, or neither")
            _num(a, "x", *xy["x"], required=False), _num(a, "y", *xy["y"], required=False)
            if t == "CLICK":
                _button(a), _num(a, "num_clicks", 1, 3, required=False)
            if t == "SCROLL":
                _num(a, "dx", -100, 100, required=False), _num(a, "dy", -100, 100, required=False)
        elif t in ("MOUSE_DOWN", "MOUSE_UP"):
            _button(a)
        elif t == "TYPING":
            _str(a, "text")
        elif t in ("PRESS", "KEY_DOWN", "KEY_UP"):
            self.input.keysym(_str(a, "key", 32)) if isinstance(a.get("key"), str) else _str(a, "key", 32)
        elif t == "HOTKEY":
            keys = a.get("keys")
            if not isinstance(keys, list) or not 1 <= len(keys) <= 6 or not all(isinstance(k, str) and k for k in keys):
                raise bad("HOTKEY: keys expected a list of 1..6 key names")
            for k in keys:
                try:
                    self.input.keysym(k)
                except InputError as exc:
                    raise bad(f"HOTKEY: {exc}") from None
        elif t == "WAIT":
            _num(a, "seconds", 0, 60, required=False, kind=float)
        elif t in ("DONE", "FAIL"):
            pass
        else:
            raise bad(f"action_type: expected a computer_13 action, actual {t!r:.40}")

    def perform(self, a):
        t = a["action_type"]
        x, y = a.get("x"), a.get("y")
        i = self.input
        if t == "MOVE_TO":
            i.move(x, y)
        elif t == "CLICK":
            i.click(x, y, a.get("button", "left"), int(a.get("num_clicks", 1)))
        elif t == "RIGHT_CLICK":
            i.click(x, y, "right")
        elif t == "DOUBLE_CLICK":
            i.click(x, y, "left", 2)
        elif t == "MOUSE_DOWN":
            i.button(a.get("button", "left"), True)
        elif t == "MOUSE_UP":
            i.button(a.get("button", "left"), False)
        elif t == "DRAG_TO":
            i.drag_to(x, y)
        elif t == "SCROLL":
            i.scroll(a.get("dx", 0), a.get("dy", 0), x, y)
        elif t == "TYPING":
            i.type_text(a["text"])
        elif t == "PRESS":
            i.press(a["key"])
        elif t == "KEY_DOWN":
            i.key_down(a["key"])
        elif t == "KEY_UP":
            i.key_up(a["key"])
        elif t == "HOTKEY":
            i.hotkey(a["keys"])
        elif t == "WAIT":
            time.sleep(float(a.get("seconds", 1.0)))

    # ---- processes ---------------------------------------------------------
    def _command(self, data):
        cmd = data.get("command")
        shell = bool(data.get("shell", isinstance(cmd, str)))
        if isinstance(cmd, str) and cmd:
            return (cmd if shell else cmd.split()), shell
        if isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
            return (" ".join(cmd) if shell else cmd), shell
        raise bad("command: expected a non-empty string or list of strings")

    def execute(self, q, body):
        data = load_json(body)
        cmd, shell = self._command(data)
        timeout = data.get("timeout", 120)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_EXEC_TIMEOUT:
            raise bad(f"timeout: expected seconds in (0, {MAX_EXEC_TIMEOUT}]")
        try:
            p = subprocess.run(cmd, shell=shell, capture_output=True, timeout=timeout, cwd=HOME,
                               env=self.child_env(), stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired as exc:
            return 200, {"status": "timeout", "output": (exc.stdout or b"").decode("utf-8", "replace"),
                         "error": f"timed out after {timeout} s", "returncode": -1}, None
        except (FileNotFoundError, PermissionError) as exc:
            return 200, {"status": "error", "output": "", "error": str(exc), "returncode": 127}, None
        return 200, {"status": "success" if p.returncode == 0 else "error",
                     "output": p.stdout.decode("utf-8", "replace"), "error": p.stderr.decode("utf-8", "replace"),
                     "returncode": p.returncode}, None

    def launch(self, q, body):
        data = load_json(body)
        cmd, shell = self._command(data)
        try:
            p = subprocess.Popen(cmd, shell=shell, cwd=HOME, env=self.child_env(), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except (FileNotFoundError, PermissionError) as exc:
            raise bad(f"cannot launch {cmd!r:.100}: {exc}") from None
        threading.Thread(target=p.wait, daemon=True).start()  # reap it when it exits
        return 200, {"status": "success", "pid": p.pid}, None

    # ---- windows -----------------------------------------------------------
    def _find_window(self, data):
        wins = self.screen.windows()
        if "id" in data:
            match = [w for w in wins if w["id"] == data["id"]]
        elif isinstance(data.get("title"), str):
            needle = data["title"].lower()
            match = [w for w in wins if needle in w["title"].lower() or needle in w["wm_class"].lower()]
        else:
            raise bad("expected {id} or {title}")
        if not match:
            raise HttpError(404, f"no window matches {data.get('title', data.get('id'))!r}")
        return match[0]

    def activate_window(self, q, body):
        w = self._find_window(load_json(body))
        self.screen.activate(w["id"])
        return 200, {"status": "success", "window": w}, None

    def close_window(self, q, body):
        w = self._find_window(load_json(body))
        self.screen.close(w["id"])
        return 200, {"status": "success", "window": w}, None

    def wait_window(self, q, body):
        """Poll until a window whose title/class contains ``title`` exists (and optionally is focused)."""
        data = load_json(body)
        timeout = min(float(data.get("timeout", 10)), 60)
        deadline = time.monotonic() + timeout
        while True:
            try:
                w = self._find_window(data)
                if not data.get("focused") or w["focused"]:
                    return 200, {"status": "success", "window": w}, None
            except HttpError as exc:
                if exc.status != 404:
                    raise
            if time.monotonic() >= deadline:
                raise HttpError(404, f"no window matching {data.get('title')!r} within {timeout} s")
            time.sleep(0.05)

    # ---- files -------------------------------------------------------------
    def file_get(self, q, body):
        path = confine(q.get("path"))
        if not os.path.isfile(path):
            raise HttpError(404, f"no file {q.get('path')!r}")
        with open(path, "rb") as f:
            return 200, f.read(), None

    def file_put(self, q, body):
        path = confine(q.get("path"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.osgym-tmp"
        with open(tmp, "wb") as f:
            f.write(body)
        os.replace(tmp, path)
        return 200, {"status": "success", "bytes": len(body)}, None
