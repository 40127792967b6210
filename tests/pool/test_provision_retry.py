"""The provisioner's start retry (osgym.retrying): fresh containers for replica faults, nothing else retried.

No container starts here: ``start_one`` is replaced, so only the retry and the slot accounting (the pool's
registry, on purpose) run.
"""

from __future__ import annotations

from collections.abc import Iterator

import docker
import pytest

from osgym.errors import PoolError, ReplicaStartTimeout
from osgym.replicas.hosts import DockerHost
from osgym.replicas.pool import ReplicaPool


@pytest.fixture
def pool(docker_client: docker.DockerClient, pool_name: str) -> Iterator[ReplicaPool]:
    p = ReplicaPool("unused:image", 1, standby=0, name=pool_name, docker_client=docker_client, health_interval=0)
    yield p
    p.close()


def test_a_failed_start_is_retried_on_a_fresh_container(pool: ReplicaPool, monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[str] = []

    def start_one(host: DockerHost) -> object:
        tries.append(host.name)
        if len(tries) < 3:
            raise ReplicaStartTimeout(f"try {len(tries)}")
        return "replica"

    monkeypatch.setattr(pool.provisioner, "start_one", start_one)
    pool.registry.slots = 1
    assert pool.provisioner.start_with_retry() == "replica"
    assert tries == ["local"] * 3 and pool.registry.slots == 1


def test_the_last_fault_is_raised_and_the_slot_freed(pool: ReplicaPool, monkeypatch: pytest.MonkeyPatch) -> None:
    tries: list[int] = []

    def start_one(host: DockerHost) -> object:
        tries.append(1)
        raise ReplicaStartTimeout(f"try {len(tries)}")

    monkeypatch.setattr(pool.provisioner, "start_one", start_one)
    pool.registry.slots = 1
    with pytest.raises(ReplicaStartTimeout, match="try 3"):
        pool.provisioner.start_with_retry()
    assert len(tries) == 3 and pool.registry.slots == 0


def test_a_closed_pool_or_quarantined_hosts_are_not_retried(pool: ReplicaPool,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pool.provisioner, "start_one", lambda host: pytest.fail("must not start"))
    pool.hosts[0].quarantine("test")
    pool.registry.slots = 1
    with pytest.raises(PoolError, match="every host is quarantined"):
        pool.provisioner.start_with_retry()
    assert pool.registry.slots == 0
    pool.registry.closed, pool.registry.slots = True, 1
    with pytest.raises(PoolError, match="is closed"):
        pool.provisioner.start_with_retry()
    assert pool.registry.slots == 0
    pool.registry.closed = False
