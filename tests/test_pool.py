"""ReplicaPool against a real Docker daemon."""

from __future__ import annotations

import docker
import pytest

from osgym.errors import PoolError, ReplicaUnreachable, RequestRejected
from osgym.replicas.pool import POOL_LABEL, REPLICA_LABEL, ReplicaPool, reap


def _labelled(client: docker.DockerClient, pool: str) -> list:
    return client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool}"})


def test_pool_starts_replicas_in_parallel_with_limits_and_labels(make_pool, docker_client) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(3)
    cs = _labelled(docker_client, pool.name)
    assert len(cs) == 3
    for c in cs:
        hc = c.attrs["HostConfig"]
        assert c.labels[REPLICA_LABEL]
        assert hc["Memory"] == 512 * 2**20 and hc["PidsLimit"] == 512 and hc["NanoCpus"] == 10**9
        assert hc["CapDrop"] == ["ALL"] and "no-new-privileges" in hc["SecurityOpt"]
        # SETUID and SETGID for the entry point's switch to `osgym` and `user`; SETPCAP for root steps to drop them
        assert sorted(hc["CapAdd"]) == ["SETGID", "SETPCAP", "SETUID"]
        assert hc["NetworkMode"] == "none" and not hc["Privileged"]
        assert c.attrs["Config"]["User"] == ""  # starts as root; the entry point drops (tests/security)
    assert sorted(e.event for e in pool.events).count("ready") == 3


def test_release_replaces_the_container(make_pool, docker_client) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1)
    with pool.lease() as r:
        first = r.container.id
        r.write_file("/tmp/dirty", b"x")
    with pool.lease(timeout=30) as r2:
        assert r2.container.id != first
        with pytest.raises(RequestRejected):
            r2.read_file("/tmp/dirty")
    ids = {c.id for c in _labelled(docker_client, pool.name)}
    assert first not in ids
    assert r.api.is_closed  # the released replica left no socket open
    assert r2.api.is_closed


def test_a_killed_replica_faults_and_is_replaced(make_pool, docker_client) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1)
    with pytest.raises(ReplicaUnreachable):
        with pool.lease() as r:
            r.container.kill()
            r.health()
    assert any(e.event == "faulted" for e in pool.events)
    with pool.lease(timeout=30) as r2:
        assert r2.health()["status"] == "ok"


def test_close_removes_everything_and_lease_after_close_fails(make_pool, docker_client) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(2)
    pool.close()
    pool.close()  # idempotent
    assert _labelled(docker_client, pool.name) == []
    assert not pool.run_dir.exists()
    with pytest.raises(PoolError, match="closed"):
        pool.acquire()


def test_reap_touches_only_osgym_labelled_containers(make_pool, docker_client, image, pool_name) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1)
    foreign = docker_client.containers.run(image, entrypoint=["sleep", "60"], detach=True,
                                           labels={"other.pool": pool.name}, network_mode="none")
    try:
        before = {c.id for c in _labelled(docker_client, pool.name)}
        assert reap(docker_client, pool=pool.name) == len(before) == 1
        # the live pool may already be starting a replacement; what reap found must be gone
        assert not before & {c.id for c in _labelled(docker_client, pool.name)}
        foreign.reload()
        assert foreign.status == "running"
    finally:
        foreign.remove(force=True)


def test_container_labels_are_the_documented_ones() -> None:
    # Operators filter on these (docs/operations.md: "containers labelled osgym.pool"); renaming them strands old
    # replicas.
    from osgym.replicas.reaper import OWNER_LABEL, POOL_LABEL, REPLICA_LABEL, RUN_DIR_LABEL

    assert (POOL_LABEL, REPLICA_LABEL, OWNER_LABEL, RUN_DIR_LABEL) == (
        "osgym.pool", "osgym.replica", "osgym.owner", "osgym.run_dir")
