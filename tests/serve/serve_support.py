"""Helpers for the environment server's tests: task files, a server on a background thread, a protocol client."""

from __future__ import annotations

import base64
import contextlib
import io
import socket
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
from PIL import Image

from osgym.serving.server import ServeConfig, ServerThread, Serving, serving
from tests.conftest import SESSION

TOKEN = "test-token-" + "a" * 24
OTHER_TOKEN = "test-token-" + "b" * 24


def folder_task(name: str = "reports") -> dict[str, Any]:
    """An OSWorld-format task on the desktop tier: an xterm, solved by typing one command."""
    return {
        "id": f"serve-mkdir-{name}", "instruction": f"Create a folder named '{name}' on the Desktop.",
        "config": [
            {"type": "execute", "parameters": {"command": f"rm -rf /home/user/Desktop/{name}", "shell": True}},
            {"type": "launch", "parameters": {"command": ["xterm"]}},
            {"type": "wait_window", "parameters": {"title": "xterm", "focused": True}},
        ],
        "evaluator": {"func": "exact_match",
                      "result": {"type": "vm_command_line", "shell": True,
                                 "command": f"test -d /home/user/Desktop/{name} && echo yes || echo no"},
                      "expected": {"type": "rule", "rules": {"expected": "yes\n"}}},
    }


def infeasible_task() -> dict[str, Any]:
    return {"id": "serve-infeasible", "instruction": "Pair the Bluetooth headphones named 'Aurora Buds'.",
            "config": [], "evaluator": {"func": "infeasible"}}


def plain_task() -> dict[str, Any]:
    """No setup: every fresh replica shows the same screen."""
    return {"id": "serve-plain", "instruction": "Look at the desktop.", "config": [],
            "evaluator": {"func": "infeasible"}}


def jpeg_size(b64: str) -> tuple[int, int]:
    img = Image.open(io.BytesIO(base64.b64decode(b64)))
    assert img.format == "JPEG", f"expected a JPEG screenshot, actual {img.format}"
    return img.size


@contextlib.contextmanager
def running(image: str, client: docker.DockerClient, store: Path, **kw: Any) -> Iterator[tuple[Serving, str]]:
    """A desktop-tier server with replicas labelled for this test session, on a background thread."""
    kw.setdefault("replicas", 2)
    kw.setdefault("standby", 1)
    kw.setdefault("screen", (1280, 800))
    kw.setdefault("settle_s", 0.3)
    tokens = kw.pop("tokens", [TOKEN, OTHER_TOKEN])
    config = ServeConfig(tier="desktop", image=image, store=str(store), dataset="served", **kw)
    with serving(config, docker_client=client, pool_name=f"{SESSION}-serve-{uuid.uuid4().hex[:6]}",
                 tokens=tokens) as s, ServerThread(s.app) as server:
        yield s, server.url


class OSGymClient:
    """A client written from OSGym's protocol (main.py's routes and shapes), with a bearer token."""

    def __init__(self, url: str, token: str | None = TOKEN, timeout: float = 120.0) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def reset(self, task: dict[str, Any], timeout: float = 600) -> httpx.Response:
        return self.http.post("/reset", json={"task_config": task, "timeout": timeout})

    def step(self, vm_id: int, action: str) -> httpx.Response:
        return self.http.post("/step", json={"action": action, "vm_id": vm_id})

    def shutdown(self, vm_id: int | str) -> httpx.Response:
        return self.http.post("/shutdown", json={"vm_id": vm_id})

    def screenshot(self, vm_id: int) -> httpx.Response:
        return self.http.get("/screenshot", params={"vmId": vm_id})

    def close(self) -> None:
        self.http.close()


class UnixPeer:
    """A real Unix socket on the host that accepts in a thread and hands each connection to :meth:`handle`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections = 0
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, contextlib.suppress(OSError):
            self.handle(conn)

    def handle(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self._server.close()
