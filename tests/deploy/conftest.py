"""A real `prefect server` and process workers, started per module and always stopped."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PrefectServer:
    """`prefect server start` on SQLite in a temp PREFECT_HOME, bound to 127.0.0.1."""

    def __init__(self, home: Path):
        self.home = home
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/api"
        self.env = {
            **os.environ,
            "PREFECT_HOME": str(home),
            "PREFECT_API_URL": self.url,
            "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
            "PREFECT_UI_ENABLED": "false",
            "DO_NOT_TRACK": "1",
            "PWD": str(ROOT),
        }
        self.env.pop("PREFECT_PROFILES_PATH", None)
        self.procs: list[subprocess.Popen[bytes]] = []

    def settings(self) -> Any:
        """A context in which this process's Prefect client talks to this server."""
        from prefect.settings import PREFECT_API_URL, PREFECT_SERVER_ANALYTICS_ENABLED, temporary_settings

        return temporary_settings({PREFECT_API_URL: self.url, PREFECT_SERVER_ANALYTICS_ENABLED: False})

    def start(self) -> None:
        log = open(self.home / "server.log", "wb")  # noqa: SIM115
        self.procs.append(subprocess.Popen(
            [sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port", str(self.port)],
            env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.procs[0].poll() is not None:
                break
            time.sleep(0.5)
        raise RuntimeError(f"prefect server did not start: {(self.home / 'server.log').read_text()[-2000:]}")

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
        p = subprocess.run([sys.executable, "-m", "prefect", "--no-prompt", *args], cwd=ROOT, capture_output=True,
                           text=True, env={**self.env, **(env or {})}, timeout=timeout)
        assert p.returncode == 0, f"prefect {' '.join(args)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
        return p.stdout

    def worker(self, name: str, pool: str = "osgym", env: dict[str, str] | None = None,
               limit: int | None = None) -> subprocess.Popen[bytes]:
        log = open(self.home / f"worker-{name}.log", "wb")  # noqa: SIM115
        extra = ["--limit", str(limit)] if limit else []
        proc = subprocess.Popen(
            [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--name", name, "--type", "process",
             *extra],
            cwd=ROOT, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


@pytest.fixture(scope="module")
def prefect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrefectServer]:
    server = PrefectServer(tmp_path_factory.mktemp("prefect-home"))
    try:
        server.start()
        yield server
    finally:
        server.stop()
