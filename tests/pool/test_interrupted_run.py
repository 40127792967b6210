"""A run killed with SIGKILL leaves replicas; ``osgym pool reap`` removes exactly those.

The run is a subprocess that leases replicas from a pool in a loop, as a collect
run does (the pool is what leaves containers behind, not the flow around it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker

from osgym.pool import OWNER_LABEL, POOL_LABEL

ROOT = Path(__file__).resolve().parents[2]
RUN = """
from osgym.pool import ReplicaPool
pool = ReplicaPool({image!r}, 2, standby=1, screen=(800, 600))
pool.start()
while True:
    with pool.lease() as r:
        r.screenshot(max_side=64)
"""


def _owned_by(client: docker.DockerClient, pid: int) -> list[dict]:
    return [c for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]]


def test_reap_removes_what_a_killed_run_left_and_spares_foreign_containers(docker_client, image, tmp_path) -> None:  # type: ignore[no-untyped-def]
    foreign = docker_client.containers.run(image, entrypoint=["sleep", "120"], detach=True, network_mode="none",
                                           labels={"other.pool": "mine", "com.example.owner": "someone"})
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1"}
    proc = subprocess.Popen([sys.executable, "-c", RUN.format(image=image)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while len(_owned_by(docker_client, proc.pid)) < 3:  # 2 replicas + 1 standby are up: mid-run
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the collect run never started its replicas"
            time.sleep(0.2)
        time.sleep(1.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        left = _owned_by(docker_client, proc.pid)
        assert left, "SIGKILL should leave the run's replicas behind"
        run_dirs = {c["Labels"]["osgym.run_dir"] for c in left}
        out = subprocess.run([sys.executable, "-m", "osgym", "pool", "reap"], cwd=ROOT, env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert _owned_by(docker_client, proc.pid) == []
        assert not any(Path(d).exists() for d in run_dirs)
        foreign.reload()
        assert foreign.status == "running"
    finally:
        if proc.poll() is None:
            proc.kill()
        foreign.remove(force=True)
