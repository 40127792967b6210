"""Fixtures for the replica tests: a shared native replica, a compatibility-mode container and an input probe.

Every container started here carries an ``osgym.pool=<session>-i3-...`` label, so the
session's leak check finds it, and is removed in the fixture's finalizer, whatever the test did.
"""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from osgym.replicas.client import Replica
from tests.conftest import held_replica
from tests.replica.helpers import SCREEN, compat_replica


@pytest.fixture(scope="module")
def shared_replica(image: str, docker_client: docker.DockerClient) -> Iterator[Replica]:
    """One replica for a module's tests that leave no GUI state behind (observation, files, errors)."""
    with held_replica(image, docker_client, "i3-shared", screen=SCREEN) as replica:
        yield replica


@pytest.fixture(scope="module")
def compat_url(image: str, docker_client: docker.DockerClient) -> Iterator[str]:
    """A replica in OSWorld compatibility mode, published at http://127.0.0.N:5000, as the pool will run it."""
    with compat_replica(docker_client, image, SCREEN) as url:
        yield url
