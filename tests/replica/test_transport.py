"""The replica client's connections: kept alive between requests, never reused once the server closed them,
and an action never sent twice.

The server here is real HTTP/1.1 on a Unix socket (the standard library's ``http.server``), counting the
connections it accepted and the actions it received; it can drop its idle connections, as the replica's
server does after 10 s (``replica_images/server/limits.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from osgym.errors import ReplicaUnreachable
from osgym.replicas.client import ControlClient, Timeouts
from osgym.replicas.transport import KEEPALIVE_S


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str) -> None:
        self.connections: list[socket.socket] = []
        self.actions = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, body: dict[str, object]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                self._answer({"status": "ok", "auth": self.headers.get("Authorization")})

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"]))
                with outer.lock:
                    outer.actions += 1
                self._answer({"performed": len(json.loads(body)["actions"])})

        super().__init__(path, Handler)

    def get_request(self) -> tuple[socket.socket, object]:
        conn, addr = super().get_request()
        with self.lock:
            self.connections.append(conn)
        return conn, addr

    def drop_connections(self) -> None:
        """Close every connection from the server's side, as an idle close does."""
        with self.lock:
            for conn in self.connections:
                with contextlib.suppress(OSError):  # one the handler already closed
                    conn.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def server() -> Iterator[tuple[_Server, str]]:
    with tempfile.TemporaryDirectory(prefix="osgym-transport-") as d:
        path = os.path.join(d, "control.sock")
        srv = _Server(path)
        thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        thread.start()
        try:
            yield srv, path
        finally:
            srv.shutdown()
            srv.server_close()
            thread.join(10)


def _until(cond: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():  # type: ignore[operator]
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.01)


def test_requests_share_one_kept_connection_with_the_token(server: tuple[_Server, str]) -> None:
    srv, path = server
    client = ControlClient(f"unix:{path}", "tok", Timeouts(read=5.0))
    try:
        for _ in range(5):
            assert client.request("GET", "/health").json() == {"status": "ok", "auth": "Bearer tok"}
        assert client.request("POST", "/actions", json={"actions": [{}, {}]}).json() == {"performed": 2}
        assert len(srv.connections) == 1 and not client.is_closed
        client.set_token("new")
        assert client.request("GET", "/health").json()["auth"] == "Bearer new"
    finally:
        client.close()
    assert client.is_closed


def test_a_connection_the_server_closed_is_not_used_and_an_action_is_sent_once(server: tuple[_Server, str]) -> None:
    srv, path = server
    client = ControlClient(f"unix:{path}", "tok", Timeouts(read=5.0))
    try:
        client.request("GET", "/health")
        srv.drop_connections()
        assert client.request("GET", "/health").json()["status"] == "ok", "a read goes on a fresh connection"
        _until(lambda: len(srv.connections) == 2)
        srv.drop_connections()
        time.sleep(0.1)  # the close reaches the client's end
        assert client.request("POST", "/actions", json={"actions": [{}]}).json() == {"performed": 1}
        assert srv.actions == 1 and len(srv.connections) == 3, "the action went once, on a new connection"
    finally:
        client.close()


def test_an_idle_connection_is_not_kept_past_the_keepalive(server: tuple[_Server, str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    srv, path = server
    client = ControlClient(f"unix:{path}", "tok", Timeouts(read=5.0))
    try:
        client.request("GET", "/health")
        real = time.monotonic
        monkeypatch.setattr(time, "monotonic", lambda: real() + KEEPALIVE_S + 1)  # as if it sat idle that long
        client.request("GET", "/health")
        assert len(srv.connections) == 2
    finally:
        client.close()


def test_a_socket_that_is_gone_is_unreachable_and_not_a_traceback(tmp_path: Path) -> None:
    client = ControlClient(f"unix:{tmp_path}/control.sock", "tok", Timeouts(read=1.0))
    with pytest.raises(ReplicaUnreachable, match=r"POST /actions failed on unix:.*control\.sock"):
        client.request("POST", "/actions", json={"actions": []})
    with pytest.raises(ValueError, match="expected unix:PATH or http://HOST:PORT"):
        ControlClient("ftp://replica", "tok")
