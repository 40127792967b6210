"""The session's leak check covers every pool the session starts, whatever its name, and no other.

A nested pytest session (``leak_probe.py``) leaves a pool behind under a name of its
own choosing. Its leak check must fail it and remove the container. A pool of another
session running at the same time (this one's, from the nested session's point of view)
is neither reported nor touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import docker

from osgym.replicas.pool import POOL_LABEL, ReplicaPool, reap

ROOT = Path(__file__).resolve().parents[2]


def test_the_leak_check_catches_a_pool_under_any_name_and_spares_other_sessions(  # type: ignore[no-untyped-def]
        image: str, docker_client: docker.DockerClient, make_pool) -> None:
    other_session = make_pool(1)  # alive while the nested session ends: not its leak
    leaked = f"leaky-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "LEAK_PROBE_IMAGE": image, "LEAK_PROBE_POOL": leaked, "PYTHONPATH": str(ROOT)}
    try:
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "tests/pool/leak_probe.py"], cwd=ROOT, env=env, capture_output=True, text=True,
                             timeout=300)
        text = out.stdout + out.stderr
        assert out.returncode != 0, f"the nested session passed although it leaked pool {leaked}:\n{text[-3000:]}"
        assert "pools that leaked replicas in this test session" in text and leaked in text, text[-3000:]
        assert docker_client.api.containers(all=True, filters={"label": f"{POOL_LABEL}={leaked}"}) == [], \
            "the leak check must remove what it found"
        assert other_session.live == 1 and other_session.healthy == 1, "another session's pool was touched"
        assert other_session.name not in text
    finally:
        reap(docker_client, pool=leaked)


def test_session_pools_are_found_by_their_run_directory(image: str, docker_client: docker.DockerClient) -> None:
    from tests.conftest import SESSION_RUN_DIR, session_pools

    name = f"foreign-name-{uuid.uuid4().hex[:6]}"  # not made by pool_name, as a subprocess's pool would be
    pool = ReplicaPool(image, 1, standby=0, name=name, docker_client=docker_client, screen=(800, 600),
                       health_interval=0)
    try:
        assert pool.run_dir.parent == SESSION_RUN_DIR
        pool.start()
        assert name in session_pools(docker_client)
    finally:
        pool.close()
    assert name not in session_pools(docker_client)
