"""OSWorld's own client against an apps replica in compatibility mode: the apps image (built once if
missing, as in tests/apps; ``make test`` builds it first, so the build's time shows there), a compat
replica at 1920x1080 with the tier's limits, the client venv (desktop-env without its dependencies, plus
requests, requests-toolbelt, python-dotenv and Playwright, which its controllers import; Playwright's
package only, no browser: OSWorld connects it to the replica's Chromium) and a local HTTP server for
the tasks' assets.
"""

from __future__ import annotations

import base64
import contextlib
import http.server
import json
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from osgym.replicas import images
from osgym.replicas.pool import limits_for
from tests.osworld_venv import desktop_env_venv
from tests.replica.helpers import compat_replica

SCREEN = (1920, 1080)
CLIENT_NEEDED = ("requests", "requests-toolbelt", "python-dotenv", "playwright")
RUNNER = Path(__file__).with_name("osworld_client_runner.py")
CALL_TIMEOUT_S = 300
"""A batch of calls: OSWorld's methods retry three times, 5 s apart, before they answer None."""


@pytest.fixture(scope="session")
def image(docker_client: docker.DockerClient) -> str:
    """The apps image for the current inputs, built once if missing."""
    return images.build("apps", client=docker_client, log=lambda _m: None).tag


@dataclass
class OSWorldClient:
    """OSWorld's ``PythonController`` and ``SetupController`` in the client venv, pointed at one replica."""

    python: Path
    host: str
    cache_dir: Path

    def calls(self, *calls: tuple[str, str, list[Any]]) -> list[Any]:
        """Each ``(controller, method, args)``'s return value, in one subprocess; bytes come back as bytes."""
        request = {"host": self.host, "port": 5000, "cache_dir": str(self.cache_dir), "screen": list(SCREEN),
                   "calls": [{"controller": c, "method": m, "args": a} for c, m, a in calls]}
        # its own working directory: OSWorld's setup module reads .env and a proxy list relative to it
        with tempfile.TemporaryDirectory(prefix="osgym-osworld-client-") as cwd:
            proc = subprocess.run([str(self.python), str(RUNNER)], input=json.dumps(request), capture_output=True,
                                  text=True, timeout=CALL_TIMEOUT_S, check=False, cwd=cwd)
        assert proc.returncode == 0, proc.stderr[-4000:]
        answers = json.loads(proc.stdout)
        errors = [a["error"] for a in answers if "error" in a]
        assert not errors, f"{errors}\n{proc.stderr[-3000:]}"
        return [_decode(a["value"]) for a in answers]

    def call(self, controller: str, method: str, *args: Any) -> Any:
        return self.calls((controller, method, list(args)))[0]


def _decode(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"bytes"}:
        return base64.b64decode(value["bytes"])
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        return {k: _decode(v) for k, v in value.items()}
    return value


@pytest.fixture(scope="session")
def client_python() -> Path:
    """The client venv's interpreter; the venv is built on first use (about 20 s, downloads included)."""
    return desktop_env_venv(CLIENT_NEEDED) / "bin" / "python"


@pytest.fixture(scope="module")
def compat_url(image: str, docker_client: docker.DockerClient) -> Iterator[str]:
    """An apps replica in OSWorld compatibility mode at http://127.0.0.N:5000, with the tier's limits."""
    limits = limits_for("apps")
    with compat_replica(docker_client, image, SCREEN, mem_limit=f"{limits.mem_mib}m", pids_limit=limits.pids,
                        ready_timeout=120) as url:
        yield url


@pytest.fixture(scope="module")
def osworld(client_python: Path, compat_url: str, tmp_path_factory: pytest.TempPathFactory) -> OSWorldClient:
    host = compat_url.removeprefix("http://").split(":")[0]
    return OSWorldClient(client_python, host, tmp_path_factory.mktemp("osworld-cache"))


class AssetServer:
    """Serves ``files`` (URL path to bytes) at http://127.0.0.1:PORT; counts the requests per path."""

    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.hits: dict[str, int] = {}
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                body = server.files.get(self.path)
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"


@pytest.fixture(scope="module")
def assets() -> Iterator[AssetServer]:
    server = AssetServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.httpd.shutdown()
        with contextlib.suppress(OSError):
            server.httpd.server_close()
