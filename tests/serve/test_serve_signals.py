"""``osgym serve`` stopped by signals never leaves its replicas behind.

- the installed ``osgym`` command (the console script, which calls the typer app, not ``main()``) under a
  plain ``kill``: uvicorn stops gracefully, then raises SIGTERM again under the handler it found;
- a ``kill`` while a reset waits for a free replica: the server stops at once, not after the lease timeout
  (a supervisor's SIGKILL, or an impatient second signal, would meet a server still holding its replicas);
- a second SIGTERM while the server ends its sessions: the replicas are still removed.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest
from serve_support import TOKEN, OSGymClient, infeasible_task

from osgym.dataset.reader import open_dataset
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL
from osgym.sigterm import EXIT_STATUS

pytestmark = [pytest.mark.docker]

ROOT = Path(__file__).resolve().parents[2]
# what the installed `osgym` script runs, whichever function its entry point names
CONSOLE_SCRIPT = ("import sys; from importlib.metadata import entry_points; "
                  "(ep,) = entry_points(group='console_scripts', name='osgym'); sys.exit(ep.load()())")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _owned_by(client: docker.DockerClient, pid: int) -> list[dict[str, Any]]:
    return [c for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]]


def _serve(port: int, store: Path, *, replicas: int, entry: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "OSGYM_SERVE_TOKENS": TOKEN}
    return subprocess.Popen(
        [sys.executable, *entry, "serve", "--tier", "desktop", "--replicas", str(replicas), "--standby", "0",
         "--screen", "1280x800", "--port", str(port), "--store", str(store), "--dataset", "sig", "--no-live-view"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_healthy(proc: subprocess.Popen[str], url: str) -> None:
    deadline = time.monotonic() + 120
    while True:
        assert proc.poll() is None, f"the server ended: {proc.stderr.read()[-2000:] if proc.stderr else ''}"
        try:
            if httpx.get(f"{url}/v1/health").status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "the server never answered"
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[str]) -> None:
    """After a failed assertion: stop the server so its pool is removed (SIGKILL only if that fails)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def test_a_kill_of_the_installed_osgym_command_removes_its_replicas(docker_client: docker.DockerClient,
                                                                    image: str, tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(port, tmp_path, replicas=1, entry=["-c", CONSOLE_SCRIPT])
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(proc, url)
        client = OSGymClient(url)
        assert client.reset(infeasible_task()).status_code == 200
        client.close()
        assert _owned_by(docker_client, proc.pid), "the server's replica should be up"
        proc.send_signal(signal.SIGTERM)  # a plain `kill`
        _, stderr = proc.communicate(timeout=120)
    finally:
        _stop(proc)
    assert not _owned_by(docker_client, proc.pid), "a kill of `osgym serve` left its replicas running"
    assert proc.returncode == EXIT_STATUS, stderr[-2000:]
    rows = open_dataset(tmp_path, "sig").episodes.to_table().to_pylist()
    assert [(e["task_id"], e["termination"]) for e in rows] == [("serve-infeasible", "max_steps")]


def test_a_kill_while_a_reset_waits_for_a_replica_stops_the_server_at_once(docker_client: docker.DockerClient,
                                                                          image: str, tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(port, tmp_path, replicas=1, entry=["-m", "osgym"])
    waiting: list[httpx.Response | BaseException] = []
    try:
        url = f"http://127.0.0.1:{port}"
        _wait_healthy(proc, url)
        holder, waiter = OSGymClient(url), OSGymClient(url)
        assert holder.reset(infeasible_task()).status_code == 200  # the only replica is leased ...

        def reset() -> None:
            try:
                waiting.append(waiter.reset(infeasible_task()))
            except BaseException as exc:  # noqa: BLE001  (reported by the assertions below)
                waiting.append(exc)

        second = threading.Thread(target=reset, daemon=True)
        second.start()
        time.sleep(3)  # ... so this reset waits for one (the lease timeout is 60 s)
        assert not waiting, f"the second reset should be waiting for a replica: {waiting}"
        proc.send_signal(signal.SIGTERM)
        t0 = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        stopped_s = time.monotonic() - t0
        second.join(timeout=30)
        holder.close()
        waiter.close()
    finally:
        _stop(proc)
    assert not _owned_by(docker_client, proc.pid)
    assert proc.returncode == EXIT_STATUS, stderr[-2000:]
    assert stopped_s < 40, f"the server took {stopped_s:.0f} s to stop: it waited out the waiting reset's lease"
    [answer] = waiting
    assert isinstance(answer, httpx.Response) and answer.status_code == 404, answer
    assert "shutting down" in answer.json()["message"]


# The server as `osgym serve` builds it, with two open sessions; the first SIGTERM ends the block, and a
# second one arrives while the first session is being ended (an end hook sends it: deterministic).
_SECOND_SIGNAL = """
import os, signal, sys
from osgym.serving.server import ServeConfig, serving
from osgym.serving.client_task import load_client_task
from osgym.sigterm import exit_on_sigterm

exit_on_sigterm()
config = ServeConfig(tier="desktop", image=sys.argv[1], replicas=2, standby=0, screen=(800, 600),
                     store=sys.argv[2], dataset="sig", live_view=False)
task = load_client_task({"id": "serve-infeasible", "instruction": "Pair the headphones.", "config": [],
                         "evaluator": {"func": "infeasible"}})
with serving(config, tokens=["t" * 24]) as s:
    for _ in range(2):
        s.manager.open("client", task)
    s.manager.end_hooks.append(lambda _session: os.kill(os.getpid(), signal.SIGTERM))
    print("ready", flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
"""


def test_a_second_sigterm_while_sessions_end_still_removes_the_replicas(docker_client: docker.DockerClient,
                                                                        image: str, tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _SECOND_SIGNAL, image, str(tmp_path)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert out == "ready\n", stderr[-2000:]
    assert not _owned_by(docker_client, proc.pid), "a second SIGTERM during shutdown left the replicas running"
    assert proc.returncode == EXIT_STATUS, stderr[-2000:]
