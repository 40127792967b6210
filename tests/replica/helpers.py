"""Helpers for the replica tests: the input probe, loopback addresses and compatibility-mode containers."""

from __future__ import annotations

import contextlib
import errno
import json
import socket
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import httpx

from osgym.replicas.client import Replica
from osgym.replicas.pool import POOL_LABEL
from tests.conftest import SESSION

SCREEN = (1280, 800)
PROBE_SOURCE = (Path(__file__).parent / "probe.py").read_bytes()


class Probe:
    """The Tk input probe (``probe.py``) running inside a replica; reads back the events it logged."""

    def __init__(self, replica: Replica, name: str = "probe"):
        self.replica = replica
        self.log = f"/tmp/{name}-{uuid.uuid4().hex[:6]}.jsonl"
        self._seen = 0
        replica.write_file("/tmp/osgym_probe.py", PROBE_SOURCE)
        replica.launch(["python3", "/tmp/osgym_probe.py", self.log])
        self.window = replica.wait_window("osgym-probe", timeout=15)
        self.wait_for(lambda e: e["kind"] == "ready")

    def events(self) -> list[dict[str, Any]]:
        """Events logged since the last :meth:`clear`."""
        try:
            raw = self.replica.read_file(self.log)
        except Exception:
            return []
        return [json.loads(line) for line in raw.decode().splitlines() if line.strip()][self._seen:]

    def clear(self) -> None:
        """Forget the events so far (the probe keeps appending to the same file)."""
        self._seen += len(self.events())

    def wait_for(self, pred: Any, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Poll the log until an event matches ``pred``; return all events."""
        return self.wait_until(lambda events: any(pred(e) for e in events), timeout)

    def wait_until(self, pred: Any, timeout: float = 20.0) -> list[dict[str, Any]]:
        """Poll the log until ``pred(events)`` holds; return the events."""
        deadline = time.monotonic() + timeout
        while True:
            events = self.events()
            if pred(events):
                return events
            if time.monotonic() > deadline:
                raise AssertionError(f"no matching probe event within {timeout} s; got {events[-10:]}")
            time.sleep(0.05)


def free_loopback_address() -> str:
    """A 127.0.0.N whose ports 5000 and 9222 are free right now (N in 100..250, random start)."""
    start = uuid.uuid4().int % 150
    for i in range(150):
        host = f"127.0.0.{100 + (start + i) % 150}"
        with socket.socket() as a, socket.socket() as b:
            try:
                a.bind((host, 5000))
                b.bind((host, 9222))
            except OSError as exc:
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise
            return host
    raise RuntimeError("no free 127.0.0.N with ports 5000 and 9222 found")


@contextlib.contextmanager
def compat_replica(client: docker.DockerClient, image: str, screen: tuple[int, int], *,
                   mem_limit: str = "768m", pids_limit: int = 512, ready_timeout: float = 30) -> Iterator[str]:
    """A container of ``image`` in OSWorld compatibility mode, published at http://127.0.0.N:5000 as the
    pool will run it; yields its URL and removes it (and its network) on exit, whatever happened.
    Labelled ``osgym.pool=<session>-i3-compat-...`` so the session's leak check finds it."""
    host = free_loopback_address()
    name = f"{SESSION}-i3-compat-{uuid.uuid4().hex[:6]}"
    # A network of its own: its bridge does not depend on docker0 (which other daemons on a shared
    # host have been seen to remove).
    network = client.networks.create(name, driver="bridge", labels={POOL_LABEL: name})
    container = None
    try:
        container = client.containers.create(
            image, name=name, labels={POOL_LABEL: name}, init=True, network=name,
            environment={"OSGYM_COMPAT": "1", "OSGYM_LISTEN": "tcp:0.0.0.0:5000",
                         "OSGYM_SCREEN": f"{screen[0]}x{screen[1]}"},
            ports={"5000/tcp": (host, 5000), "9222/tcp": (host, 9222)}, mem_limit=mem_limit, pids_limit=pids_limit,
        )
        container.start()
        url = f"http://{host}:5000"
        deadline = time.monotonic() + ready_timeout
        while True:
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                container.reload()
                raise RuntimeError(f"compat replica not ready: {container.status} "
                                   f"{container.logs(tail=20).decode(errors='replace')}")
            time.sleep(0.1)
        yield url
    finally:
        if container is not None:
            with contextlib.suppress(docker.errors.NotFound):
                container.reload()
                print(f"compat replica {name} ({container.status}) log tail:\n"  # shown if a test failed
                      + container.logs(tail=30).decode(errors="replace"))
                container.remove(force=True)
        with contextlib.suppress(docker.errors.NotFound):
            network.remove()
