"""osgym replica: starts the desktop, then serves the control API.

Runs as PID 1's child (docker --init) under the unprivileged user `user`.

Environment:
  OSGYM_LISTEN   unix:/run/osgym/control.sock (default) or tcp:HOST:PORT
  OSGYM_SCREEN   WIDTHxHEIGHT (default 1920x1080)
  OSGYM_COMPAT   1 = OSWorld compatibility mode: no token (loopback-published only)
  The bearer token is read from /run/osgym/token (then deleted) or OSGYM_TOKEN.
"""

import json
import os
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import api  # noqa: E402

DISPLAY = ":0"
TOKEN_FILE = "/run/osgym/token"
MAX_BODY = 64 * 2**20
CHILD_ENV_DROP = ("OSGYM_TOKEN",)


def child_env():
    env = {k: v for k, v in os.environ.items() if k not in CHILD_ENV_DROP}
    env.update(DISPLAY=DISPLAY, HOME="/home/user", USER="user", LOGNAME="user",
               XDG_RUNTIME_DIR="/tmp/runtime-user", NO_AT_BRIDGE="0", GTK_A11Y="atspi")
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


def start_desktop(width, height):
    """Start Xvfb and the window manager; return once both are up (polled, not slept)."""
    os.makedirs("/tmp/runtime-user", mode=0o700, exist_ok=True)
    r, w = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", DISPLAY, "-screen", "0", f"{width}x{height}x24", "-nolisten", "tcp", "-nolisten", "unix",
         "-listen", "unix", "-displayfd", str(w), "+extension", "XTEST", "+extension", "XFIXES", "-dpi", "96"],
        pass_fds=(w,), env=child_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    os.close(w)
    with os.fdopen(r) as f:
        if not f.readline().strip():
            raise RuntimeError(f"Xvfb exited with {xvfb.wait()}")
    env = child_env()
    procs = [xvfb]
    procs.append(subprocess.Popen(["openbox", "--config-file", "/opt/osgym/openbox-rc.xml"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    return procs


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "osgym-replica/1"
    app = None  # set at start-up

    def log_message(self, fmt, *args):  # requests carry the token: never log them
        pass

    def address_string(self):
        return "local"

    def _dispatch(self, method):
        try:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self.close_connection = True
                return self._send(413, {"error": f"body of {length} bytes exceeds {MAX_BODY}"})
            body = self.rfile.read(length) if length else b""
            if not self.app.authorized(url.path, self.headers.get("Authorization", "")):
                return self._send(401, {"error": "missing or wrong bearer token"})
            status, payload, headers = self.app.handle(method, url.path, query, body, self.headers)
            return self._send(status, payload, headers)
        except api.HttpError as exc:
            return self._send(exc.status, {"error": exc.message})
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception as exc:  # the server must survive any request
            traceback.print_exc(file=sys.stderr)
            return self._send(500, {"error": f"{type(exc).__name__}: {exc}"})

    def _send(self, status, payload, headers=None):
        headers = dict(headers or {})
        if isinstance(payload, (bytes, bytearray)):
            data = bytes(payload)
            headers.setdefault("Content-Type", "application/octet-stream")
        else:
            data = json.dumps(payload).encode()
            headers.setdefault("Content-Type", "application/json")
        try:
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_DELETE(self):
        self._dispatch("DELETE")


class UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def get_request(self):
        conn, _ = self.socket.accept()
        return conn, ("local", 0)


class TCPServer(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
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
        os.chmod(tmp, 0o660)
        os.rename(tmp, where)  # the socket appears only once it accepts
        return srv
    if kind == "tcp":
        host, _, port = where.rpartition(":")
        return TCPServer((host or "0.0.0.0", int(port)), handler)
    raise SystemExit(f"OSGYM_LISTEN: expected unix:PATH or tcp:HOST:PORT, actual {listen!r}")


def main():
    width, _, height = os.environ.get("OSGYM_SCREEN", "1920x1080").partition("x")
    compat = os.environ.get("OSGYM_COMPAT") == "1"
    token = read_token()
    if not token and not compat:
        raise SystemExit("no control token: pass /run/osgym/token or OSGYM_TOKEN (or OSGYM_COMPAT=1)")
    procs = start_desktop(int(width), int(height))
    app = api.App(display=DISPLAY, token=token, compat=compat, child_env=child_env)
    app.started = time.time()
    Handler.app = app
    srv = serve(os.environ.get("OSGYM_LISTEN", "unix:/run/osgym/control.sock"), Handler)

    def stop(*_):
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        srv.serve_forever(poll_interval=0.5)
    finally:
        app.close()
        for p in procs:
            p.terminate()


if __name__ == "__main__":
    main()
