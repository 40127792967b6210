"""osgym replica: starts the desktop, then serves the control API.

Runs as PID 1's child (docker --init). It starts as root and at once becomes the
system user `osgym` (uids.py), so the agent, which acts as `user`, can neither
signal, ptrace nor impersonate it. The desktop session and every command run as `user`.

Environment:
  OSGYM_LISTEN   unix:/run/osgym/ctl/control.sock (default) or tcp:HOST:PORT
  OSGYM_SCREEN   WIDTHxHEIGHT (default 1920x1080)
  OSGYM_SESSION  path of an executable (set by the image, e.g. the apps tier's XFCE session script)
                 run instead of openbox + tint2; supervised and restarted like them
  OSGYM_COMPAT   1 = OSWorld compatibility mode: no token, OSWorld's routes added (osworld.py),
                 and `user` may sudo (as in OSWorld's VM); the pool must publish it on a loopback address only
  The bearer token is read from /run/osgym/ctl/token (then deleted) or OSGYM_TOKEN.

/run/osgym is the server's own directory (`osgym`, mode 0700): the host's run directory
is bind-mounted below it at /run/osgym/ctl, so `user` cannot reach the socket or the
token even when the host directory's owner has the agent's uid (a non-root host user 1000).
"""

import functools
import json
import os
import secrets
import select
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import traceback
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from Xlib import X
from Xlib import display as xdisplay

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api  # noqa: E402
import home  # noqa: E402
import limits  # noqa: E402
import memory  # noqa: E402
import osworld  # noqa: E402
import procs  # noqa: E402
import uids  # noqa: E402

DISPLAY = ":0"
SERVER_DIR = "/run/osgym"
CTL_DIR = "/run/osgym/ctl"
TOKEN_FILE = "/run/osgym/ctl/token"
DEFAULT_LISTEN = "unix:/run/osgym/ctl/control.sock"
SERVER_XAUTHORITY = "/run/osgym/Xauthority"
COMPAT_SUDOERS = "/etc/sudoers.d/osgym-compat"
FAMILY_SERVER_INTERPRETED = 5  # X11 host family for "localuser:NAME" entries (xhost +si:localuser:NAME)
CHILD_ENV_DROP = ("OSGYM_TOKEN",)


SESSION_BUS = "unix:path=/tmp/runtime-user/bus"
XAUTHORITY = "/home/user/.Xauthority"
SESSION_TIMEOUT_S = 60.0  # the session's first start; ~1-3 s on a quiet machine, 20+ s seen under load


def child_env():
    env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROP and k != "NO_AT_BRIDGE"}
    env.update(DISPLAY=DISPLAY, HOME="/home/user", USER="user", LOGNAME="user",
               XDG_RUNTIME_DIR="/tmp/runtime-user", DBUS_SESSION_BUS_ADDRESS=SESSION_BUS, XAUTHORITY=XAUTHORITY,
               GTK_A11Y="atspi", ACCESSIBILITY_ENABLED="1", PYTHONWARNINGS="ignore")
    return env


def server_env():
    """Environment of the server's own children (Xvfb, xauth): no token, the server's X cookie."""
    env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROP}
    env.update(DISPLAY=DISPLAY, HOME=SERVER_DIR, USER="osgym", LOGNAME="osgym", XAUTHORITY=SERVER_XAUTHORITY)
    return env


def read_token():
    token = None
    try:
        with open(TOKEN_FILE) as f:
            token = f.read().strip()
        os.unlink(TOKEN_FILE)
    except FileNotFoundError:
        pass
    token = token or os.environ.pop("OSGYM_TOKEN", None)
    os.environ.pop("OSGYM_TOKEN", None)
    return token


def _spawn(argv, env, pass_fds=()):
    """Start one of the desktop's processes as `user`."""
    return subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=pass_fds, **uids.AS_USER)


def _as_user_exists(path):
    with uids.fs_as_user():  # /tmp/runtime-user is the user's, mode 0700
        return os.path.exists(path)


def _wait_for(check, what, timeout=10.0, tolerate=False):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            if tolerate:
                print(f"{what} not up within {timeout} s: starting anyway", file=sys.stderr, flush=True)
                return
            raise RuntimeError(f"{what} not up within {timeout} s")
        time.sleep(0.01)



class Desktop:
    """Supervises the desktop's processes: Xvfb, the session bus, AT-SPI, the window manager and the panel.

    Start-up is polled (display fd, bus socket), never slept. A watchdog thread
    restarts the window manager, panel and AT-SPI bus if they die; if Xvfb dies
    the server exits, so the pool sees a dead replica and replaces it.
    """

    # An image may bring its own session (window manager, panel, desktop) as one script:
    # OSGYM_SESSION names it, and it replaces openbox + tint2.
    SESSION = os.environ.get("OSGYM_SESSION") or None
    RESTARTABLE = ("session", "at-spi") if SESSION else ("openbox", "tint2", "at-spi")

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.procs = {}
        self.stopping = False

    def start(self):
        with uids.fs_as_user():
            os.makedirs("/tmp/runtime-user", mode=0o700, exist_ok=True)
        # A real cookie: python-xlib prints "no xauthority details" to *stdout* of every
        # X client (pyautogui included) without one, which pollutes command output. The
        # X server and the control server (`osgym`) read their copy from /run/osgym, the
        # user's programs theirs from the home directory; the cookie is not secret from
        # the agent, which is an X client anyway.
        cookie = secrets.token_hex(16)
        for path, as_user in ((SERVER_XAUTHORITY, {}), (XAUTHORITY, uids.AS_USER)):
            subprocess.run(["xauth", "-q", "-f", path, "add", DISPLAY, ".", cookie], check=True, env=server_env(),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd="/", **as_user)
        os.environ["XAUTHORITY"] = SERVER_XAUTHORITY
        r, w = os.pipe()
        # Xvfb runs as `osgym`: the agent can neither kill the display nor change what it grabs.
        self.procs["xvfb"] = subprocess.Popen(
            ["Xvfb", DISPLAY, "-auth", SERVER_XAUTHORITY, "-screen", "0", f"{self.width}x{self.height}x24",
             "-nolisten", "tcp", "-listen", "unix", "-displayfd", str(w), "+extension", "XTEST",
             "+extension", "XFIXES", "-dpi", "96", "+extension", "RANDR",
             # No GLX: loading Mesa (and libLLVM behind it) cost 11 MiB of private pages per Xvfb; the
             # apps render in software either way (Chromium through SwiftShader, VLC through XCB).
             "-extension", "GLX"],
            pass_fds=(w,), env={**server_env(), "GLIBC_TUNABLES": memory.RETURN_FREED_TUNABLES},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=SERVER_DIR,
        )
        os.close(w)
        with os.fdopen(r) as f:
            if not f.readline().strip():
                raise RuntimeError(f"Xvfb exited with {self.procs['xvfb'].wait()}")
        self._admit_server()
        env = child_env()
        sock = SESSION_BUS.split("=", 1)[1]
        with uids.fs_as_user():
            if os.path.exists(sock):
                os.unlink(sock)
        self.procs["dbus"] = _spawn(["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={SESSION_BUS}"],
                                    env)
        _wait_for(lambda: _as_user_exists(sock), "session bus")
        ready_r, ready_w = os.pipe()
        # AT-SPI's bus before any GTK program: a GTK program that finds org.a11y.Bus unowned has the session bus
        # start a second launcher (D-Bus activation); one of the two loses the name and exits, and when ours lost
        # (seen under load), the watchdog restarted it in vain and /health said at-spi was down while it worked.
        self.procs["at-spi"] = _spawn(self._argv("at-spi"), env)
        if self.SESSION:
            _wait_for(lambda: procs.a11y_bus_owned(env), "the accessibility bus", timeout=5.0, tolerate=True)
        for name in self.RESTARTABLE:
            if name == "at-spi":
                continue
            if name == "session":
                self.procs[name] = _spawn(self._argv(name), {**env, "OSGYM_READY_FD": str(ready_w)}, (ready_w,))
            elif name != "tint2":
                self.procs[name] = _spawn(self._argv(name), env)
        if "tint2" in self.RESTARTABLE:
            # tint2 started before a window manager is up waits for one and looks again only about a second
            # later (its window mapped 1.05 s after a joint start, 0.17 s after openbox was up): start it
            # once openbox has claimed the screen, so readiness (the panel's strut) comes that much sooner.
            self._wait_for_window_manager(time.monotonic() + SESSION_TIMEOUT_S)
            self.procs["tint2"] = _spawn(self._argv("tint2"), env)
        os.close(ready_w)
        self._wait_until_managed(ready_r)
        threading.Thread(target=self._watch, name="desktop-watchdog", daemon=True).start()

    def _wait_until_managed(self, ready_fd, timeout=SESSION_TIMEOUT_S):
        """Return once windows get managed: the session script said "ready" on ``ready_fd`` (it
        writes it when its panel and desktop are drawn), or, with openbox, the window manager set
        _NET_SUPPORTING_WM_CHECK and the panel's strut shows in _NET_WORKAREA. A window mapped
        before the first lands at 0,0 without decorations; one mapped before the second is placed
        against the whole screen, 15 px off where the same window lands once the panel is up (two
        replicas set up from one task then start from different screens).

        Past ``timeout`` (or if the session script exits without "ready") the server starts anyway
        and says so on stderr: the replica works, and the pool's screenshot check still applies.
        """
        deadline = time.monotonic() + timeout
        with os.fdopen(ready_fd, "rb", buffering=0) as ready:
            if self.SESSION:
                got = b""
                while b"\n" not in got and time.monotonic() < deadline:
                    if select.select([ready], [], [], max(0.0, deadline - time.monotonic()))[0]:
                        chunk = ready.read(64)
                        if not chunk:
                            break
                        got += chunk
                ok = got.startswith(b"ready")
            else:
                workarea = self._x_admin.intern_atom("_NET_WORKAREA")
                root = self._x_admin.screen().root
                whole = [0, 0, self.width, self.height]

                def panel_reserved():
                    area = root.get_full_property(workarea, X.AnyPropertyType)
                    return area is not None and list(area.value[:4]) not in ([], whole)
                ok = self._wait_for_window_manager(deadline)
                while ok and not panel_reserved() and time.monotonic() < deadline:
                    time.sleep(0.01)
                ok = ok and panel_reserved()
        if not ok:
            print(f"desktop session not ready within {timeout} s: serving anyway", file=sys.stderr, flush=True)

    def _wait_for_window_manager(self, deadline):
        """Whether openbox set _NET_SUPPORTING_WM_CHECK before ``deadline`` (polled, as the rest of start-up)."""
        wm_check = self._x_admin.intern_atom("_NET_SUPPORTING_WM_CHECK")
        root = self._x_admin.screen().root
        while root.get_full_property(wm_check, X.AnyPropertyType) is None:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def _admit_server(self):
        """Let the X server admit the control server by its uid (SO_PEERCRED), cookie or not.

        A request thread reads files as `user` (uids.fs_as_user), so it cannot read the
        server's cookie when Pillow opens a new X connection for a grab. The connection that
        adds the rule stays open: an X server that loses its last client resets its host list.
        """
        self._x_admin = xdisplay.Display(DISPLAY)
        self._x_admin.change_hosts(X.HostInsert, FAMILY_SERVER_INTERPRETED, list(b"localuser\x00osgym"))
        self._x_admin.sync()

    @staticmethod
    def _argv(name):
        return {
            "openbox": ["openbox", "--config-file", "/opt/osgym/openbox-rc.xml"],
            "tint2": ["tint2", "-c", "/etc/xdg/osgym/tint2rc"],
            "at-spi": ["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"],
            "session": [Desktop.SESSION],
        }[name]

    def _watch(self):
        restarts = {name: 0 for name in self.RESTARTABLE}
        while not self.stopping:
            time.sleep(0.5)
            if self.procs["xvfb"].poll() is not None and not self.stopping:
                print("Xvfb died: stopping the replica", file=sys.stderr, flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return
            for name in self.RESTARTABLE:
                if self.procs[name].poll() is not None and restarts[name] < 20 and not self.stopping:
                    restarts[name] += 1  # a look at the bus counts too: no dbus-send every 0.5 s for ever
                    if name == "at-spi" and procs.a11y_bus_owned(child_env()):
                        continue  # another launcher has the name: a new one of ours would lose it and exit
                    self.procs[name] = _spawn(self._argv(name), child_env())

    def status(self):
        up = {name: p.poll() is None for name, p in self.procs.items()}
        if "at-spi" in up and not up["at-spi"]:
            up["at-spi"] = procs.a11y_bus_owned(child_env())  # the bus is what programs use, whoever launched it
        return up

    def stop(self):
        self.stopping = True
        for p in reversed(list(self.procs.values())):
            if p.poll() is None:
                procs.signal_as_user(p.pid, signal.SIGTERM)


class Handler(limits.LimitedHandler, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "osgym-replica/1"
    app = None  # set at start-up

    def log_message(self, fmt, *args):  # requests carry the token: never log them
        pass

    def address_string(self):
        return "local"

    def _dispatch(self, method):
        self._t0 = time.perf_counter()
        try:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if not self.app.authorized(url.path, self.headers.get("Authorization", "")):
                # Refused on its headers, before a byte of its body is read: an unauthorized
                # client costs neither memory nor time. The unread body ends the connection.
                self.close_connection = True
                return self._send(401, {"error": "missing or wrong bearer token"})
            if self.headers.get("Transfer-Encoding"):
                self.close_connection = True
                return self._send(411, {"error": "chunked bodies are not supported: send Content-Length"})
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                self.close_connection = True
                return self._send(400, {"error": "Content-Length: expected an integer"})
            if length < 0:
                self.close_connection = True
                return self._send(400, {"error": "Content-Length: expected >= 0"})
            try:
                limit = self.app.body_limit(method, url.path)
            except api.HttpError as exc:  # no such route: its body stays unread, so the connection ends
                self.close_connection = self.close_connection or length > 0
                return self._send(exc.status, {"error": exc.message})
            if length > limit:
                self.close_connection = True
                return self._send(413, {"error": f"body of {length} bytes exceeds the {limit} that "
                                                 f"{method} {url.path} accepts"})
            try:
                body = self.read_body(length)
            except (TimeoutError, ValueError) as exc:
                self.close_connection = True
                return self._send(408 if isinstance(exc, TimeoutError) else 400,
                                  {"error": f"request body: {exc or 'not in within its time'}"})
            status, payload, headers = self.app.handle(method, url.path, query, body, self.headers)
            return self._send(status, payload, headers)
        except api.HttpError as exc:
            return self._send(exc.status, {"error": exc.message})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except PermissionError as exc:
            return self._send(403, {"error": f"permission denied: {exc.filename or exc}"})
        except FileNotFoundError as exc:
            return self._send(404, {"error": f"not found: {exc.filename or exc}"})
        except (IsADirectoryError, NotADirectoryError, OSError) as exc:
            if isinstance(exc, (IsADirectoryError, NotADirectoryError)) or exc.errno in (36, 22, 40):
                return self._send(400, {"error": f"{type(exc).__name__}: {exc}"})
            traceback.print_exc(file=sys.stderr)
            return self._send(500, {"error": f"{type(exc).__name__}: {exc}"})
        except Exception as exc:  # the server must survive any request
            traceback.print_exc(file=sys.stderr)
            return self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    def send_error(self, code, message=None, explain=None):
        """http.server's own errors (bad request line, headers too long) as JSON too."""
        self.close_connection = True
        self._send(code, {"error": message or explain or f"HTTP {code}"})

    def _send(self, status, payload, headers=None):
        headers = dict(headers or {})
        if self.close_connection:
            headers.setdefault("Connection", "close")
        if isinstance(payload, (bytes, bytearray)):
            data = bytes(payload)
            headers.setdefault("Content-Type", "application/octet-stream")
        else:
            data = json.dumps(payload).encode()
            headers.setdefault("Content-Type", "application/json")
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            t0 = getattr(self, "_t0", None)
            if t0 is not None:  # time spent inside the replica, for benchmarks (RFC Server-Timing)
                self.send_header("Server-Timing", f"app;dur={(time.perf_counter() - t0) * 1000:.2f}")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError, TimeoutError):  # a client that does not read
            self.close_connection = True

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")


class UnixServer(limits.BoundedThreadingMixIn, socketserver.UnixStreamServer):
    def get_request(self):
        conn, _ = self.socket.accept()
        return conn, ("local", 0)


class TCPServer(limits.BoundedThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    address_family = socket.AF_INET


def serve(listen, handler):
    kind, _, where = listen.partition(":")
    if kind == "unix":
        tmp = where + ".tmp"
        for p in (tmp, where):
            if os.path.exists(p):
                os.unlink(p)
        srv = UnixServer(tmp, handler)
        # Owner `osgym`; the group is the run directory's (a set-gid directory shared with
        # a non-root host user, see provision.py) or `osgym`. Never world-accessible.
        os.chmod(tmp, 0o660)
        os.rename(tmp, where)  # the socket appears only once it accepts
        return srv
    if kind == "tcp":
        host, _, port = where.rpartition(":")
        return TCPServer((host or "0.0.0.0", int(port)), handler)
    raise SystemExit(f"OSGYM_LISTEN: expected unix:PATH or tcp:HOST:PORT, actual {listen!r}")


def grant_compat_sudo():
    """OSWorld's VM lets `user` sudo with the password `password`; only compatibility replicas do (as root)."""
    fd = os.open(COMPAT_SUDOERS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o440)
    with os.fdopen(fd, "w") as f:
        f.write("user ALL=(ALL:ALL) ALL\n")


def share_run_dir():
    """Join the group of the host's run directory when a non-root host owns it (it is set-gid, mode 2770)."""
    try:
        st = os.stat(CTL_DIR)
    except FileNotFoundError:
        return  # TCP transport: nothing is mounted
    if st.st_uid != uids.SERVER_UID:
        uids.add_group(st.st_gid)


def wrap_routes(app):
    """Every route touches files as `user`: with the agent's permissions, and new files owned by `user`."""
    def as_user(fn):
        @functools.wraps(fn)
        def route(*args):
            with uids.fs_as_user():
                return fn(*args)
        return route
    app.routes = {key: as_user(fn) for key, fn in app.routes.items()}


def main():
    width, _, height = os.environ.get("OSGYM_SCREEN", "1920x1080").partition("x")
    compat = os.environ.get("OSGYM_COMPAT") == "1"
    if compat and os.getuid() == 0:
        grant_compat_sudo()
    memory.merge_pages()  # before any child: they inherit it
    memory.return_freed_buffers()
    uids.drop_to_server()
    os.chdir(SERVER_DIR)
    share_run_dir()
    token = read_token()
    if not token and not compat:
        raise SystemExit("no control token: pass /run/osgym/token or OSGYM_TOKEN (or OSGYM_COMPAT=1)")
    home.seed()  # before anything of the session writes there
    desktop = Desktop(int(width), int(height))
    desktop.start()
    app = api.App(display=DISPLAY, token=token, compat=compat, child_env=child_env)
    if compat:  # OSWorld's routes on top, replacing the native ones where OSWorld uses the same path
        app.routes.update(osworld.routes(app))
    app.desktop = desktop
    app.started = time.time()
    wrap_routes(app)
    Handler.app = app
    srv = serve(os.environ.get("OSGYM_LISTEN", DEFAULT_LISTEN), Handler)

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        srv.serve_forever(poll_interval=0.5)
    finally:
        app.close()
        desktop.stop()


if __name__ == "__main__":
    main()
