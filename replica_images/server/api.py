"""Routes of the native control API. Every error is JSON: {"error": message}.

In compatibility mode (OSGYM_COMPAT=1) the entry point adds the routes of ``osworld.py`` on top,
replacing the native ones where OSWorld uses the same path.
"""

import os
import threading
import time

import liveview
import procs
import protocol
import settle
import wallpaper
import windows
from files import confine, read_file, write_file
from protocol import HttpError, bad, load_json, number
from screen import Screen
from xinput import InputError, XInput


class App:
    def __init__(self, display, token, compat, child_env):
        self.display = display
        self.token = token
        self.compat = compat
        self.child_env = child_env
        self.input = XInput(display)
        self.screen = Screen(display)
        try:
            self.damage = settle.Damage(display)
        except Exception:  # an X server without DAMAGE: settles by frames, and says so in each answer
            self.damage = None
        self.action_lock = threading.Lock()
        self.started = time.time()
        self.desktop = None  # the supervisor (osgym_replica.Desktop), set at start-up
        self.a11y = procs.Accessibility(child_env)
        self.recorder = procs.Recorder(display, child_env, lambda: self.screen.size)
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
            ("GET", "/accessibility"): self.accessibility,
            ("GET", "/terminal"): self.terminal,
            ("GET", "/wallpaper"): self.wallpaper_get,
            ("POST", "/wallpaper"): self.wallpaper_set,
            ("POST", "/recording/start"): self.recording_start,
            ("POST", "/recording/stop"): self.recording_stop,
            ("GET", "/recording"): self.recording_get,
            ("POST", "/token"): self.replace_token,
        }
        self.view = liveview.LiveView(display, child_env)
        self.routes.update(self.view.routes())

    def close(self):
        self.recorder.close()
        self.view.stop()

    def authorized(self, path, header):
        return self.compat or protocol.authorized(header, self.token)

    def route(self, method, path):
        return protocol.find_route(self.routes, method, path)

    def body_limit(self, method, path):
        """The largest body the route takes (404 or 405 if there is none); checked before any is read."""
        return protocol.body_limit(self.routes, method, path)

    def handle(self, method, path, query, body, headers):
        route = self.route(method, path)
        if getattr(route, "wants_headers", False):
            return route(query, body, headers)
        return route(query, body)

    def replace_token(self, q, body):
        """Take a new bearer token, given with the current one (every route needs it). A replica restored from a
        checkpoint holds the template's token in memory, as every other clone of it does: the host gives each
        clone its own before leasing it, and from then on the template's opens nothing here."""
        if self.compat:
            raise HttpError(409, "an OSWorld compatibility replica has no token")
        self.token = protocol.new_token(body)
        return 200, {"status": "success"}, None

    # ---- observation -------------------------------------------------------
    def health(self, q, body):
        w, h = self.screen.size
        return 200, {"status": "ok", "screen": [w, h], "uptime_s": round(time.time() - self.started, 3),
                     "compat": self.compat, "recording": self.recorder.recording,
                     "grab": "mit-shm" if self.screen.shm is not None else "socket",
                     "desktop": self.desktop.status() if self.desktop is not None else {}}, None

    def screenshot(self, q, body):
        fmt, quality, max_side, level, with_windows = protocol.screenshot_params(q)
        # the window list first: the picture is then at least as recent as any window a policy acts on
        listed = protocol.windows_header(self.screen.windows()) if with_windows else {}
        img = self.screen.grab(cursor=q.get("cursor", "1") != "0")
        data, (w, h) = self.screen.encode(img, fmt, quality, max_side, level)
        return 200, data, {"Content-Type": f"image/{fmt}", "X-Width": str(w), "X-Height": str(h), **listed}

    def windows(self, q, body):
        return 200, {"windows": self.screen.windows()}, None

    def pointer(self, q, body):
        x, y = self.input.pointer()
        return 200, {"x": x, "y": y}, None

    # ---- actions -----------------------------------------------------------
    def actions(self, q, body):
        req = protocol.read_actions(load_json(body), self.screen.size, self.input.keysym)
        acts = req.actions
        t0 = time.perf_counter()
        with self.action_lock:
            try:
                for i, a in enumerate(acts):
                    try:
                        self.perform(a)
                    except InputError as exc:
                        raise bad(f"action {i} ({a.get('action_type')}): {exc}") from None
            finally:
                self.input.sync()  # every event reached the X server before we answer
            settled, mode = self.settle(time.monotonic(), req.mode, req.timeout, req.interval, req.quiet,
                                        req.minimum)
        x, y = self.input.pointer()
        return 200, {"performed": len(acts), "settled": settled, "settled_by": mode, "pointer": [x, y],
                     "elapsed_ms": round((time.perf_counter() - t0) * 1000, 2)}, None

    def settle(self, start, mode, timeout, interval, quiet, minimum):
        """(settled, the mode that judged it): True once quiet, False at the timeout, None if not asked."""
        if timeout <= 0:
            return None, None
        if mode == "damage":
            if self.damage is None or self.damage.failed:
                mode = "frames"  # reported back, so a caller sees which rule judged its step
            else:
                return self.damage.settle(start, timeout, quiet, minimum), mode
        rest = max(0.0, minimum - (time.monotonic() - start))
        time.sleep(rest)
        return settle.by_frames(self.screen, timeout - rest, interval, quiet), mode

    def perform(self, a):
        t = a["action_type"]
        x, y = a.get("x"), a.get("y")
        i = self.input
        if t == "MOVE_TO":
            i.move(x, y)
        elif t == "CLICK":
            i.click(x, y, a.get("button") or "left", int(a.get("num_clicks") or 1))
        elif t == "RIGHT_CLICK":
            i.click(x, y, "right")
        elif t == "DOUBLE_CLICK":
            i.click(x, y, "left", 2)
        elif t == "MOUSE_DOWN":
            i.button(a.get("button") or "left", True)
        elif t == "MOUSE_UP":
            i.button(a.get("button") or "left", False)
        elif t == "DRAG_TO":
            i.drag_to(x, y)
        elif t == "SCROLL":
            i.scroll(a.get("dx") or 0, a.get("dy") or 0, x, y)
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
            seconds = a.get("seconds")
            time.sleep(1.0 if seconds is None else float(seconds))

    # ---- processes ---------------------------------------------------------
    def execute(self, q, body):
        data = load_json(body)
        cmd, shell = procs.command_of(data)
        return 200, procs.run(cmd, shell, procs.timeout_of(data), self.child_env()), None

    def launch(self, q, body):
        cmd, shell = procs.command_of(load_json(body))
        return 200, {"status": "success", "pid": procs.launch(cmd, shell, self.child_env())}, None

    # ---- accessibility and recording -----------------------------------------
    def accessibility(self, q, body):
        xml = self.a11y.tree(timeout=number(q, "timeout", 0.5, 60, default=10),
                             max_nodes=number(q, "max_nodes", 1, 200_000, default=20_000, kind=int),
                             max_bytes=number(q, "max_bytes", 1024, 64 * 2**20, default=32 * 2**20, kind=int),
                             showing_only=number(q, "showing", 0, 1, default=0, kind=int) == 1,
                             window=protocol.window_filter(q), find=protocol.a11y_find(q))
        return 200, xml.encode(), {"Content-Type": "application/xml; charset=utf-8"}

    def terminal(self, q, body):
        """The text of the focused terminal (VTE's accessible text: xfce4-terminal, not xterm), or null."""
        return 200, {"output": self.a11y.terminal(timeout=number(q, "timeout", 0.5, 60, default=10))}, None

    # ---- desktop -------------------------------------------------------------
    def wallpaper_get(self, q, body):
        return 200, {"path": wallpaper.current(self.child_env())}, None

    def wallpaper_set(self, q, body):
        return 200, {"status": "success", "path": wallpaper.change(load_json(body).get("path"), self.child_env())}, None

    def recording_start(self, q, body):
        data = load_json(body)
        return 200, self.recorder.start(fps=number(data, "fps", 1, 60, default=10, kind=int)), None

    def recording_stop(self, q, body):
        path = self.recorder.stop()
        return 200, {"status": "success", "path": path, "bytes": os.path.getsize(path)}, None

    def recording_get(self, q, body):
        path = self.recorder.path
        if self.recorder.recording:
            raise HttpError(409, "recording still in progress: POST /recording/stop first")
        if not path or not os.path.isfile(path):
            raise HttpError(404, "no recording: POST /recording/start, then /recording/stop")
        return 200, read_file(path), {"Content-Type": "video/mp4"}

    # ---- windows -----------------------------------------------------------
    def _find_window(self, data, timeout=0.0):
        """The first window the request names (windows.py's rules), waiting up to ``timeout`` s for one."""
        test, label = windows.matcher(data)
        match = windows.find(self.screen, test, timeout)
        if not match:
            raise HttpError(404, f"no window matches {label}" + (f" within {timeout:g} s" if timeout else ""))
        return match[0]

    def activate_window(self, q, body):
        data = load_json(body)
        w = self._find_window(data, windows.wait_seconds(data))
        self.screen.activate(w["id"])
        return 200, {"status": "success", "window": w}, None

    def close_window(self, q, body):
        data = load_json(body)
        w = self._find_window(data, windows.wait_seconds(data))
        self.screen.close(w["id"])
        return 200, {"status": "success", "window": w}, None

    def wait_window(self, q, body):
        """Poll until a window whose title/class contains ``title`` exists (and optionally is focused)."""
        data = load_json(body)
        timeout = number(data, "timeout", 0, 60, default=10)
        test, label = windows.matcher(data)
        deadline = time.monotonic() + timeout
        while True:
            match = windows.find(self.screen, test)
            if match and (not data.get("focused") or match[0]["focused"]):
                return 200, {"status": "success", "window": match[0]}, None
            if time.monotonic() >= deadline:
                raise HttpError(404, f"no window matching {label} within {timeout} s")
            time.sleep(0.05)

    # ---- files -------------------------------------------------------------
    def file_get(self, q, body):
        path = confine(q.get("path"))
        if not os.path.isfile(path):
            raise HttpError(404, f"no file {q.get('path')!r:.200}")
        return 200, read_file(path), None

    def file_put(self, q, body):
        path = confine(q.get("path"))
        write_file(path, body)
        return 200, {"status": "success", "bytes": len(body)}, None
