"""``osgym serve`` as an operator runs it: a token printed once; Ctrl-C or SIGTERM stops it, the run committed."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import docker
import httpx
import pytest
from serve_support import infeasible_task

from osgym.dataset.reader import open_dataset
from osgym.replicas.pool import POOL_LABEL, RUN_DIR_LABEL
from osgym.sigterm import EXIT_STATUS
from tests.conftest import SESSION_RUN_DIR

pytestmark = [pytest.mark.docker]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


# uvicorn answers SIGTERM with a graceful stop, then raises it again under the previous handler: without
# osgym's (osgym.sigterm) the process died there, before its sessions were recorded and its replicas removed.
@pytest.mark.parametrize(("stop", "status"), [(signal.SIGINT, 0), (signal.SIGTERM, EXIT_STATUS)],
                         ids=["ctrl-c", "sigterm"])
def test_serve_prints_a_token_once_and_stops_cleanly(stop: signal.Signals, status: int, image: str,
                                                     docker_client: docker.DockerClient, tmp_path: Path) -> None:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if k != "OSGYM_SERVE_TOKENS"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "osgym", "serve", "--tier", "desktop", "--replicas", "1", "--standby", "0",
         "--screen", "1280x800", "--port", str(port), "--store", str(tmp_path), "--dataset", "cli"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        token_line = proc.stdout.readline()
        assert token_line.startswith("token"), token_line
        token = token_line.rsplit(" ", 1)[1].strip()
        assert "serving 1 desktop replicas" in proc.stdout.readline()
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/v1/health").status_code == 200:
                    break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        headers = {"Authorization": f"Bearer {token}"}
        assert httpx.post(f"{url}/reset", json={"task_config": infeasible_task(), "timeout": 60}).status_code == 401
        r = httpx.post(f"{url}/reset", json={"task_config": infeasible_task(), "timeout": 60}, headers=headers,
                       timeout=120)
        assert r.status_code == 200, r.text
        proc.send_signal(stop)  # the open session is ended and recorded, the run committed
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:  # a failed assertion: still stop it cleanly, so its pool is removed
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert proc.returncode == status, out
    assert token not in out  # printed once, at start
    rows = open_dataset(tmp_path, "cli").episodes.to_table().to_pylist()
    assert [(e["task_id"], e["termination"]) for e in rows] == [("serve-infeasible", "max_steps")]
    mine = [c for c in docker_client.api.containers(all=True, filters={"label": POOL_LABEL})
            if Path(c["Labels"].get(RUN_DIR_LABEL) or "/").parent == SESSION_RUN_DIR
            and c["Labels"][POOL_LABEL].startswith("osgym-")]
    assert not mine, "the server left containers behind"


def test_serve_refuses_tokenless_access_off_loopback() -> None:
    r = subprocess.run([sys.executable, "-m", "osgym", "serve", "--host", "0.0.0.0", "--tokenless-loopback"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "127.0.0.1" in r.stderr and "Traceback" not in r.stderr
