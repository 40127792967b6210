"""A serve client must not reach the host through its replica's run directory (issue 38's critical finding).

The run directory is bind-mounted into the replica and belongs to the replica's server (uid 990), so
whatever runs as that uid can replace ``vnc.sock`` or ``control.sock`` with a symlink to any host
socket; the host used to connect by path and follow it (to the host's dockerd: root on the host). Real
parts: a desktop-tier ``osgym serve``, its replica, the server's view relay, and a decoy Unix socket on
the host standing for dockerd's, which counts every connection and byte that reaches it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from rfb import BINARY, refused, wait_for
from serve_support import TOKEN, UnixPeer, plain_task, running
from websockets.sync.client import connect

from osgym.replicas.unix_socket import SERVER_UID
from osgym.serving.auth import fingerprint

AUTH = {"Authorization": f"Bearer {TOKEN}"}
CTL = "/run/osgym/ctl"


class Decoy(UnixPeer):
    """A Unix socket on the host that stands for dockerd's: it records who connects and what they send."""

    received = b""

    def handle(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        while data := conn.recv(4096):
            self.received += data
            conn.sendall(b"HTTP/1.1 200 OK\r\nApi-Version: 1.47\r\nContent-Length: 2\r\n\r\nOK")


@pytest.fixture
def decoy(tmp_path: Path) -> Iterator[Decoy]:
    d = Decoy(tmp_path / "docker.sock")
    try:
        yield d
    finally:
        d.close()


def swap_task(target: Path) -> dict[str, Any]:
    """A client task whose setup, once the view's socket exists, replaces it with a symlink to ``target`` as
    the replica's server (``sudo -u osgym``), in the background; it writes how that went to /tmp/swap."""
    swap = (f"for i in $(seq 600); do [ -S {CTL}/vnc.sock ] && break; sleep 0.1; done; sleep 0.5; "
            f"ln -sfn {target} {CTL}/vnc.sock")
    command = (f"(echo password | sudo -S -u osgym sh -c '{swap}' && echo swapped > /tmp/swap || echo refused > "
               "/tmp/swap) </dev/null >/dev/null 2>&1 &")
    return {**plain_task(), "id": "serve-swap", "config": [{"type": "execute", "parameters": {"command": command,
                                                                                             "shell": True}}]}


def ws_url(http_url: str, token: str) -> str:
    return f"{http_url.replace('http', 'ws', 1)}/view/{token}/websockify"


def test_a_client_task_with_root_steps_or_host_files_is_refused(image: str, docker_client: docker.DockerClient,
                                                                tmp_path: Path, decoy: Decoy,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    files = tmp_path / "task-files"
    files.mkdir()
    (files / "answer.xlsx").write_bytes(b"the expected answer")
    monkeypatch.setenv("OSGYM_TASK_FILES_DIR", str(files))
    pull = {**plain_task(), "id": "serve-pull", "config": [
        {"type": "download", "parameters": {"files": [{"path": "/tmp/answer.xlsx", "local_path": "answer.xlsx"}]}}]}
    with running(image, docker_client, tmp_path / "store", replicas=1, standby=0) as (s, url), \
            httpx.Client(base_url=url, timeout=120) as http:
        r = http.post("/v1/sessions", json={"task": swap_task(decoy.path)}, headers=AUTH)
        assert r.status_code == 400 and "OSGYM_SERVE_ALLOW_ROOT_STEPS" in r.json()["message"], r.text[:300]
        r = http.post("/v1/sessions", json={"task": pull}, headers=AUTH)
        assert r.status_code == 400 and "OSGYM_SERVE_ALLOW_TASK_FILES" in r.json()["message"], r.text[:300]
        assert str(files) not in r.text
        assert s.manager.sessions_of(fingerprint(TOKEN)) == [] and s.pool.stats.leased == 0
    assert decoy.connections == 0


def test_a_swapped_socket_never_leads_the_host_elsewhere(image: str, docker_client: docker.DockerClient,
                                                         tmp_path: Path, decoy: Decoy,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the operator lets clients run root steps: the swap must still fail, and the host must not follow one
    monkeypatch.setenv("OSGYM_SERVE_ALLOW_ROOT_STEPS", "1")
    with running(image, docker_client, tmp_path / "store", replicas=1, standby=0) as (s, url), \
            httpx.Client(base_url=url, timeout=120) as http:
        r = http.post("/v1/sessions", json={"task": swap_task(decoy.path)}, headers=AUTH)
        assert r.status_code == 200, r.text[:300]
        sid = r.json()["session_id"]
        replica = s.manager.get(fingerprint(TOKEN), sid).replica
        run_dir = Path(replica.api.endpoint.removeprefix("unix:")).parent
        view = http.post(f"/v1/sessions/{sid}/view", headers=AUTH).json()

        def outcome() -> str:
            with contextlib.suppress(Exception):
                return replica.read_file("/tmp/swap").decode().strip()
            return ""

        # 1. from inside the replica: a root step cannot become the replica's server (no CAP_SETUID)
        wait_for(lambda: outcome() != "", "the task's swap to finish", timeout=90)
        assert outcome() == "refused"
        assert (run_dir / "vnc.sock").is_socket() and not (run_dir / "vnc.sock").is_symlink()
        with connect(view["websocket"], subprotocols=BINARY, open_timeout=30) as ws:
            assert ws.recv(timeout=30) == b"RFB 003.008\n"  # the replica's own x11vnc

        # 2. as if it had: the host finds a symlink in place of the view's socket, to the decoy and to dockerd
        for target in (decoy.path, Path("/var/run/docker.sock")):
            link = run_dir / "vnc.sock.swap"
            link.symlink_to(target)
            os.lchown(link, SERVER_UID, SERVER_UID)
            os.replace(link, run_dir / "vnc.sock")
            assert refused(view["websocket"])
        wait_for(lambda: s.views is not None and s.views.relays == 0, "the refused relays to be forgotten")

        # 3. and in place of the control socket: the host's next connection fails, to no one
        link = run_dir / "control.sock.swap"
        link.symlink_to(decoy.path)
        os.lchown(link, SERVER_UID, SERVER_UID)
        os.replace(link, run_dir / "control.sock")
        time.sleep(httpx.Limits().keepalive_expiry or 5.0)  # the open keep-alive connection expires: a new connect
        r = http.get(f"/v1/sessions/{sid}/observation", headers=AUTH)
        assert r.status_code == 502 and "a symlink" in r.json()["message"], r.text[:300]
        http.delete(f"/v1/sessions/{sid}", headers=AUTH)
    assert decoy.connections == 0 and decoy.received == b""


def test_the_view_works_under_a_long_temporary_directory(image: str, docker_client: docker.DockerClient,
                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """AF_UNIX paths stop at 108 bytes; the host reaches the replica's sockets through /proc/self/fd, so a long
    TMPDIR (the server's temporary files) or run directory breaks neither the replicas nor the view."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setenv("TMPDIR", str(deep))
    monkeypatch.setenv("OSGYM_RUN_DIR", str(deep / "run"))
    with running(image, docker_client, tmp_path / "store", replicas=1, standby=0) as (s, url), \
            httpx.Client(base_url=url, timeout=120) as http:
        assert len(str(s.pool.run_dir / "0123456789" / "control.sock")) > 108
        sid = http.post("/v1/sessions", json={"task": plain_task()}, headers=AUTH).json()["session_id"]
        view = http.post(f"/v1/sessions/{sid}/view", headers=AUTH).json()
        with connect(ws_url(url, view["token"]), subprotocols=BINARY, open_timeout=30) as ws:
            assert ws.recv(timeout=30) == b"RFB 003.008\n"
        http.delete(f"/v1/sessions/{sid}", headers=AUTH)
