"""Fixtures for the replica tests: a shared native replica, a compatibility-mode container and an input probe.

Every container started here carries an ``osgym.pool=<session>-i3-...`` label, so the
session's leak check finds it, and is removed in the fixture's finalizer, whatever the test did.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator

import docker
import docker.errors
import httpx
import pytest

from osgym.replicas.client import Replica
from osgym.replicas.pool import POOL_LABEL, ReplicaPool
from tests.conftest import SESSION
from tests.replica.helpers import SCREEN, free_loopback_address


@pytest.fixture(scope="module")
def shared_replica(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    """One replica for a module's tests that leave no GUI state behind (observation, files, errors)."""
    pool = ReplicaPool(image, 1, standby=0, name=f"{SESSION}-i3-shared-{uuid.uuid4().hex[:6]}",
                       docker_client=docker_client, screen=SCREEN)
    try:
        pool.start()
        replica = pool.acquire()
        yield replica
    finally:
        pool.close()


@pytest.fixture(scope="module")
def compat_url(image: str, docker_client: docker.DockerClient) -> Iterator[str]:
    """A replica in OSWorld compatibility mode, published at http://127.0.0.N:5000, as the pool will run it."""
    host = free_loopback_address()
    name = f"{SESSION}-i3-compat-{uuid.uuid4().hex[:6]}"
    # A network of its own: its bridge does not depend on docker0 (which other daemons on a shared
    # host have been seen to remove).
    network = docker_client.networks.create(name, driver="bridge", labels={POOL_LABEL: name})
    container = None
    try:
        container = docker_client.containers.create(
            image, name=name, labels={POOL_LABEL: name}, init=True, network=name,
            environment={"OSGYM_COMPAT": "1", "OSGYM_LISTEN": "tcp:0.0.0.0:5000",
                         "OSGYM_SCREEN": f"{SCREEN[0]}x{SCREEN[1]}"},
            ports={"5000/tcp": (host, 5000)}, mem_limit="768m", pids_limit=512,
        )
        container.start()
        url = f"http://{host}:5000"
        deadline = time.monotonic() + 30
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
