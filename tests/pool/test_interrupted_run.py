"""A collect run killed with SIGKILL leaves replicas; ``osgym pool reap`` removes exactly those.

The run is ``osgym collect`` in its own process group (so anything it started dies
with it); the whole group is SIGKILLed once its replicas are up.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import yaml

from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL

ROOT = Path(__file__).resolve().parents[2]


def _owned_by(client: docker.DockerClient, pid: int) -> list[dict]:
    return [c for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]]


def test_reap_removes_what_a_killed_run_left_and_spares_foreign_containers(docker_client, image, tmp_path) -> None:  # type: ignore[no-untyped-def]
    foreign = docker_client.containers.run(image, entrypoint=["sleep", "120"], detach=True, network_mode="none",
                                           labels={"other.pool": "mine", "com.example.owner": "someone"})
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_HOME": str(tmp_path / "prefect")}
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"name": "killed", "episodes": 40, "replicas": 2, "standby": 1,
                                      "screen": [800, 600], "image": image, "store": str(tmp_path / "data")}))
    proc = subprocess.Popen([sys.executable, "-m", "osgym", "collect", str(recipe), "--no-report"], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while len(_owned_by(docker_client, proc.pid)) < 3:  # 2 replicas + 1 standby are up: mid-run
            assert proc.poll() is None, f"the run ended before it could be killed: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the collect run never started its replicas"
            time.sleep(0.2)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)
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
            os.killpg(proc.pid, signal.SIGKILL)
        foreign.remove(force=True)
