"""Interrupted collect runs: SIGTERM ends one cleanly; SIGKILL leaves replicas that ``osgym pool reap`` removes.

The run is ``osgym collect`` in its own process group (so anything it started dies
with it). SIGTERM (a scheduler, ``timeout``, ``docker stop``) goes to the process alone, once a shard
is committed; SIGKILL goes to the whole group once its replicas are up.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import docker
import yaml

from osgym.dataset.reader import open_dataset
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, RUN_DIR_LABEL
from osgym.sigterm import EXIT_STATUS

ROOT = Path(__file__).resolve().parents[2]


def _owned_by(client: docker.DockerClient, pid: int) -> list[dict]:
    return [c for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]]


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
            "PREFECT_HOME": str(tmp_path / "prefect")}


def test_sigterm_ends_a_run_cleanly_and_its_resume_collects_the_rest(docker_client, image, tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = tmp_path / "data"
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({"name": "terminated", "episodes": 30, "replicas": 2, "standby": 1,
                                      "screen": [800, 600], "image": image, "tasks": ["terminal-create-file"],
                                      "shard_max_age_s": 1, "store": str(store)}))
    cmd = [sys.executable, "-m", "osgym", "collect", str(recipe), "--run-id", "term", "--no-report"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(tmp_path), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # stdout unread: a full pipe would stall the run
    try:
        deadline = time.monotonic() + 240
        while not list(store.rglob("*.parquet")):  # a committed shard (an open one ends in .incomplete)
            assert proc.poll() is None, f"the run ended before it was terminated: {proc.stderr.read()[-2000:]!r}"
            assert time.monotonic() < deadline, "the collect run committed no shard"
            time.sleep(0.2)
        run_dirs = {c["Labels"][RUN_DIR_LABEL] for c in _owned_by(docker_client, proc.pid)}
        assert run_dirs, "the run's replicas should be up"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=240)  # the running episodes finish; the queued ones never start
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == EXIT_STATUS, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert _owned_by(docker_client, proc.pid) == [], "SIGTERM left the run's replicas behind"
    assert not any(Path(d).exists() for d in run_dirs)
    resumed = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    match = re.search(r"run term: (\d+) episodes written \((\d+) already committed\)", resumed.stdout)
    assert match, resumed.stdout
    written, committed = int(match[1]), int(match[2])
    assert committed >= 1 and written + committed == 30, resumed.stdout
    episodes = open_dataset(store, "terminated").episodes.to_table(columns=["episode_id"]).column(0).to_pylist()
    assert len(episodes) == len(set(episodes)) == 30


def test_reap_removes_what_a_killed_run_left_and_spares_foreign_containers(docker_client, image, tmp_path) -> None:  # type: ignore[no-untyped-def]
    foreign = docker_client.containers.run(image, entrypoint=["sleep", "120"], detach=True, network_mode="none",
                                           labels={"other.pool": "mine", "com.example.owner": "someone"})
    env = _env(tmp_path)
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
        run_dirs = {c["Labels"][RUN_DIR_LABEL] for c in left}
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
