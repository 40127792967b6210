"""Fixtures for the replica tests: a shared native replica, a compatibility-mode container and an input probe.

Every container started here carries an ``osgym.pool=<session>-i3-...`` label, so the
session's leak check finds it, and is removed in the fixture's finalizer, whatever the test did.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import docker
import pytest

from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool
from tests.conftest import SESSION
from tests.replica.helpers import SCREEN, compat_replica


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
    with compat_replica(docker_client, image, SCREEN) as url:
        yield url
