"""The live view: a session's noVNC page needs its token, and what a viewer sends never reaches the replica.

Real parts throughout: a desktop-tier server, x11vnc inside the replica, Debian's noVNC on the host, the
server's own websocket relay, and an RFB client written from RFC 6143 (tests/serve/rfb.py).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import docker
import httpx
import pytest
import websockets.exceptions
from rfb import BINARY, RFB, refused, wait_for
from serve_support import OTHER_TOKEN, TOKEN, UnixPeer, plain_task, running
from websockets.sync.client import connect

from osgym.replicas.unix_socket import UnsafeSocket
from osgym.serving.auth import fingerprint
from osgym.serving.liveview import MAX_VIEWERS, LiveViews

# Debian's novnc must be on the host (make novnc; make test runs it)

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

class EchoReplica(UnixPeer):
    """A stand-in for a replica's view socket: a real Unix socket that greets and echoes."""

    def handle(self, conn: socket.socket) -> None:
        conn.sendall(b"RFB 003.008\n")
        while data := conn.recv(4096):
            conn.sendall(data)


def test_a_view_token_reaches_only_its_own_socket_until_revoked(tmp_path: Path) -> None:
    """The host's half alone: a live token connects to its replica's socket, never through a symlink or to a
    socket of another owner, at most MAX_VIEWERS at once; revoking it cuts its connections; noVNC's files
    stay confined."""
    echo = EchoReplica(tmp_path / "vnc.sock")
    views = LiveViews()
    try:
        ticket = views.issue(7, str(echo.path), os.geteuid())
        assert views.valid(ticket.token) and ticket.websocket_path == f"/view/{ticket.token}/websockify"
        assert f"path=view/{ticket.token}/websockify" in ticket.page and "view_only=1" in ticket.page
        conns = [views.connect(ticket.token) for _ in range(MAX_VIEWERS)]
        assert conns[0].recv(12) == b"RFB 003.008\n" and views.relays == MAX_VIEWERS
        with pytest.raises(PermissionError, match="viewers already"):
            views.connect(ticket.token)
        for c in conns[1:]:
            views.disconnected(ticket.token, c)
            c.close()
        with pytest.raises(PermissionError, match="not a live view token"):
            views.connect("x" + ticket.token)

        # a socket of another owner, and a symlink in place of the socket: refused before any byte
        other = views.issue(8, str(echo.path), os.geteuid() + 1)
        with pytest.raises(UnsafeSocket, match="expected a socket of uid"):
            views.connect(other.token)
        (tmp_path / "link.sock").symlink_to(echo.path)
        linked = views.issue(9, str(tmp_path / "link.sock"), None)
        with pytest.raises(UnsafeSocket, match="actual a symlink"):
            views.connect(linked.token)

        assert views.file(ticket.token, "vnc.html").name == "vnc.html"
        for bad in ("../../../etc/passwd", "/etc/passwd", "app/../../../../etc/passwd"):
            with pytest.raises(FileNotFoundError):
                views.file(ticket.token, bad)
        with pytest.raises(PermissionError):
            views.file("not-a-token", "vnc.html")

        # the session ends: its token dies and its open connection is cut
        assert views.end(7) == 1 and not views.valid(ticket.token) and views.end(7) == 0
        conns[0].settimeout(10)
        assert conns[0].recv(16) == b"" and views.relays == 0
        conns[0].close()
    finally:
        views.close()
        echo.close()


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
        assert s.views is not None
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

        # the websocket: on this server, refused with another token or from another site's page
        assert view["websocket"] == f"{url.replace('http', 'ws', 1)}/view/{token}/websockify"
        assert refused(f"{url.replace('http', 'ws', 1)}/view/not-a-token/websockify")
        with pytest.raises(websockets.exceptions.InvalidStatus):
            connect(view["websocket"], subprotocols=BINARY, open_timeout=30, origin="http://evil.example")

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

            # the session ends: its token is revoked, the open view closes, its relay ends
            assert s.views.relays == 1
            assert http.delete(f"/v1/sessions/{sid}", headers=AUTH).status_code == 200
            with pytest.raises(websockets.exceptions.ConnectionClosed):
                while True:
                    ws.recv(timeout=60)
        assert http.get(page).status_code == 403
        assert refused(view["websocket"])
        wait_for(lambda: s.views is not None and s.views.relays == 0, "the relay to end")
