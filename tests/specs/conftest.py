"""A module-scoped pool of 2 replicas (standby 1) for the task-file episode tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from osgym.replicas.pool import ReplicaPool
from tests.conftest import SESSION, TEST_SCREEN


@pytest.fixture(scope="module")
def shared_pool(image: str, docker_client) -> Iterator[ReplicaPool]:  # type: ignore[no-untyped-def]
    with ReplicaPool(image, 2, standby=1, name=f"{SESSION}-specs", docker_client=docker_client,
                     screen=TEST_SCREEN) as pool:
        yield pool
