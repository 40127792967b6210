"""Helpers for the replica tests: the input probe and loopback addresses."""

from __future__ import annotations

import errno
import json
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from osgym.replicas.client import Replica

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
    """A 127.0.0.N whose port 5000 is free right now (N in 100..250, random start)."""
    start = uuid.uuid4().int % 150
    for i in range(150):
        host = f"127.0.0.{100 + (start + i) % 150}"
        with socket.socket() as s:
            try:
                s.bind((host, 5000))
            except OSError as exc:
                if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                    continue
                raise
            return host
    raise RuntimeError("no free 127.0.0.N:5000 found")
