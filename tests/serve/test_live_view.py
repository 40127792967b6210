"""The live view: a session's noVNC page needs its token, and what a viewer sends never reaches the replica.

Real parts throughout: a desktop-tier server, x11vnc inside the replica, Debian's websockify and
noVNC on the host, and an RFB client written from RFC 6143 talking over websockify's websocket.
"""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

import docker
import httpx
import pytest
import websockets.exceptions
from serve_support import OTHER_TOKEN, TOKEN, plain_task, running
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from osgym.serving.auth import fingerprint
from osgym.serving.liveview import LiveViews

# Debian's websockify and novnc must be on the host (make novnc; make test runs it)

BINARY = [Subprotocol("binary")]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
KEYLOG = """\
import tkinter as tk
log = open("/tmp/keylog.txt", "a", buffering=1)
root = tk.Tk()
root.title("osgym-keylog")
root.attributes("-fullscreen", True)
root.bind_all("<Key>", lambda e: log.write(f"key {e.keysym}\\n"))
root.bind_all("<Button>", lambda e: log.write(f"button {e.num} {e.x_root} {e.y_root}\\n"))
root.wait_visibility()
root.focus_force()
root.update()
log.write("ready\\n")
root.mainloop()
"""

class RFB:
    """The client side of RFB 3.8 (RFC 6143) over a websocket: enough to log in, read frames and send input."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.buf = b""

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            msg = self.ws.recv(timeout=60)
            self.buf += msg if isinstance(msg, bytes) else msg.encode()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def handshake(self) -> tuple[int, int, int, bytes]:
        """Version, security None, ClientInit (shared); returns (width, height, bits per pixel, name)."""
        version = self.read(12)
        assert version.startswith(b"RFB 003."), version
        self.ws.send(b"RFB 003.008\n")
        types = self.read(self.read(1)[0])
        assert 1 in types, f"expected security type None among {list(types)}"
        self.ws.send(b"\x01")
        assert struct.unpack(">I", self.read(4))[0] == 0, "security handshake failed"
        self.ws.send(b"\x01")  # ClientInit: shared
        width, height = struct.unpack(">HH", self.read(4))
        bpp = self.read(16)[0]
        name = self.read(struct.unpack(">I", self.read(4))[0])
        self.ws.send(struct.pack(">BxHi", 2, 1, 0))  # SetEncodings: Raw only
        return width, height, bpp, name

    def frame(self, bpp: int, x: int, y: int, w: int, h: int) -> list[tuple[int, int, int, int, bytes]]:
        """Ask for a full update of a region and read the FramebufferUpdate that answers it."""
        self.ws.send(struct.pack(">BBHHHH", 3, 0, x, y, w, h))
        while True:
            kind = self.read(1)[0]
            if kind == 0:
                break
            if kind == 2:  # Bell
                continue
            if kind == 3:  # ServerCutText
                self.read(3)
                self.read(struct.unpack(">I", self.read(4))[0])
                continue
            raise AssertionError(f"unexpected server message {kind}")
        self.read(1)
        rects = []
        for _ in range(struct.unpack(">H", self.read(2))[0]):
            rx, ry, rw, rh, enc = struct.unpack(">HHHHi", self.read(12))
            assert enc == 0, f"expected Raw rectangles only, actual encoding {enc}"
            rects.append((rx, ry, rw, rh, self.read(rw * rh * bpp // 8)))
        return rects

    def pointer(self, mask: int, x: int, y: int) -> None:
        self.ws.send(struct.pack(">BBHH", 5, mask, x, y))

    def key(self, keysym: int, down: bool) -> None:
        self.ws.send(struct.pack(">BBxxI", 4, int(down), keysym))


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def refused(uri: str) -> bool:
    try:
        with connect(uri, subprotocols=BINARY, open_timeout=30) as ws:
            ws.recv(timeout=30)
    except (websockets.exceptions.InvalidHandshake, websockets.exceptions.ConnectionClosed, OSError, EOFError):
        return True
    return False


def group_members(pgid: int) -> list[int]:
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[2]) == pgid:
                out.append(int(pid))
    return out


def test_websockify_relays_live_tokens_only_to_their_socket(tmp_path: Path) -> None:
    """The host's half alone: a token reaches its socket until it is revoked; noVNC's files stay confined."""
    sock_path = tmp_path / "vnc.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(4)

    def echo() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"RFB 003.008\n")
                while data := conn.recv(4096):
                    conn.sendall(data)

    threading.Thread(target=echo, daemon=True).start()
    views = LiveViews()
    try:
        ticket = views.issue(7, str(sock_path))
        assert views.running and views.port == ticket.port and views.valid(ticket.token)
        uri = f"ws://127.0.0.1:{ticket.port}{ticket.websocket_path}"
        with connect(uri, subprotocols=BINARY, open_timeout=30) as ws:
            assert ws.recv(timeout=30) == b"RFB 003.008\n"
            ws.send(b"ping")
            assert ws.recv(timeout=30) == b"ping"
        base = f"ws://127.0.0.1:{ticket.port}/websockify"
        assert refused(base) and refused(f"{base}?token=x{ticket.token}") and refused(f"{base}?token=../vnc.sock")
        assert views.file(ticket.token, "vnc.html").name == "vnc.html"
        for bad in ("../../../etc/passwd", "/etc/passwd", "app/../../../../etc/passwd"):
            with pytest.raises(FileNotFoundError):
                views.file(ticket.token, bad)
        with pytest.raises(PermissionError):
            views.file("not-a-token", "vnc.html")
        assert views.end(7) == 1 and not views.valid(ticket.token) and views.end(7) == 0
        assert refused(uri)
        pid, token_dir = views.pid, views.token_dir
    finally:
        views.close()
        server.close()
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    assert token_dir is not None and not token_dir.parent.exists()


@pytest.mark.docker
def test_the_live_view_needs_its_token_and_sends_no_input(image: str, docker_client: docker.DockerClient,
                                                          tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=1, standby=0) as (s, url), \
            httpx.Client(base_url=url, timeout=120) as http:
        r = http.post("/v1/sessions", json={"task": plain_task()}, headers=AUTH)
        assert r.status_code == 200, r.text
        sid = r.json()["session_id"]

        # the view is issued to the session's owner only
        assert http.post(f"/v1/sessions/{sid}/view").status_code == 401
        assert http.post(f"/v1/sessions/{sid}/view", headers={"Authorization": f"Bearer {OTHER_TOKEN}"}
                         ).status_code == 404
        assert s.views is not None and not s.views.running  # websockify starts with the first view
        r = http.post(f"/v1/sessions/{sid}/view", headers=AUTH)
        assert r.status_code == 200, r.text
        view = r.json()
        token, page = view["token"], view["page"]
        assert page.startswith(f"/view/{token}/vnc.html?") and "view_only=1" in page

        # the page: refused without the token or with another, served with it
        for path, status in (("/view", 401), ("/view/", 401), ("/view/not-a-token/vnc.html", 403),
                             (f"/view/{token[:-1]}/vnc.html", 403), (f"/view/{token}/no-such-file.js", 404)):
            got = http.get(path)
            assert got.status_code == status, (path, got.text)
            assert "message" in got.json()
        got = http.get(page)
        assert got.status_code == 200 and "noVNC" in got.text
        assert got.headers["cache-control"] == "no-store" and got.headers["referrer-policy"] == "no-referrer"
        assert http.get(f"/view/{token}/app/ui.js").status_code == 200
        short = http.get(f"/view/{token}")
        assert short.status_code == 303 and short.headers["location"] == page

        # the websocket: refused without the token or with another
        ws_base = view["websocket"].partition("?")[0]
        assert refused(ws_base) and refused(f"{ws_base}?token=not-a-token")

        replica = s.manager.get(fingerprint(TOKEN), sid).replica
        replica.write_file("/tmp/keylog.py", KEYLOG.encode())
        replica.launch(["python3", "/tmp/keylog.py"])
        replica.wait_window("osgym-keylog", timeout=60, focused=True)

        def log() -> list[str]:
            try:
                return replica.read_file("/tmp/keylog.txt").decode().splitlines()
            except Exception:
                return []

        wait_for(lambda: "ready" in log(), "the logger's window to be visible and focused")
        # the logger sees input from the control API (so it would see the viewer's, if any reached it)
        replica.act([{"action_type": "CLICK", "x": 640, "y": 400}, {"action_type": "TYPING", "text": "a"}])
        wait_for(lambda: "key a" in log(), "the logger to see the control API's click and key")
        assert log() == ["ready", "button 1 640 400", "key a"]

        with connect(view["websocket"], subprotocols=BINARY, open_timeout=30, max_size=2**26) as ws:
            rfb = RFB(ws)
            width, height, bpp, _name = rfb.handshake()
            assert (width, height) == (1280, 800)
            rects = rfb.frame(bpp, 0, 0, 64, 64)
            assert rects and sum(w * h for _x, _y, w, h, _p in rects) >= 64 * 64
            ps = replica.execute("ps -o user=,args= -C x11vnc").output
            assert "-viewonly" in ps and ps.split()[0] == "user", ps

            # a viewer's click, drag and keys: x11vnc drops them all
            rfb.pointer(0, 100, 250)
            rfb.pointer(1, 100, 250)
            rfb.pointer(0, 120, 260)
            for keysym in (0x71, 0xFF0D):  # q, Return
                rfb.key(keysym, True)
                rfb.key(keysym, False)
            rfb.frame(bpp, 0, 0, 8, 8)  # answered in order: every event before it was handled (or dropped)
            replica.act([{"action_type": "TYPING", "text": "z"}])  # and a marker through the control API
            wait_for(lambda: "key z" in log(), "the control API's marker key")
            assert log() == ["ready", "button 1 640 400", "key a", "key z"]
            assert replica.pointer() == (640, 400)

            # the session ends: its token is revoked, the open view closes, its relay process ends
            relays = group_members(s.views.pid or -1)
            assert len(relays) >= 2, relays  # websockify and the relay of this connection
            assert http.delete(f"/v1/sessions/{sid}", headers=AUTH).status_code == 200
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                while True:
                    ws.recv(timeout=60)
        assert http.get(page).status_code == 403
        assert refused(view["websocket"])
        wait_for(lambda: group_members(s.views.pid or -1) == [s.views.pid], "the relay process to end")
        token_dir = s.views.token_dir
        assert token_dir is not None and token not in os.listdir(token_dir)
        pid = s.views.pid
    # the server stopped: websockify and its private directory are gone
    assert pid is not None and not Path(f"/proc/{pid}").exists()
    assert not s.views.running and not token_dir.parent.exists()
