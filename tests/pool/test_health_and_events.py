"""Health checking, lifecycle events, capacity refusal and the compat mode."""

from __future__ import annotations

import time
from pathlib import Path

import docker
import pyarrow.parquet as pq
import pytest
from pool_support import sigstop

from osgym.dataset import write_sidecar
from osgym.errors import CapacityError, ReplicaUnreachable
from osgym.replicas.client import ReplicaState, Timeouts
from osgym.replicas.events import EVENT_KINDS, events_table
from osgym.replicas.hosts import DockerHost
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, ReplicaPool, owner_id, reap


def _wait(cond, timeout: float) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.1)
    return False


def test_health_checker_replaces_a_hung_idle_replica(make_pool) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(2, health_interval=0.5, timeouts=Timeouts(health=1.0))
    victim = next(r for r in pool.registry.replicas() if r.state is ReplicaState.READY)
    assert pool.healthy == 2
    sigstop(victim.container)
    assert _wait(lambda: any(e.event == "faulted" and e.replica_id == victim.id for e in pool.events), 15)
    # idle counts the ready queue, which may still hold the faulted replica until a lease skips it
    assert _wait(lambda: pool.healthy == 2 and victim.id not in pool.registry, 30)
    fault = next(e for e in pool.events if e.event == "faulted" and e.replica_id == victim.id)
    assert "health check" in (fault.cause or "")


def test_a_hung_leased_replica_raises_unreachable_within_the_read_timeout(make_pool) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1, timeouts=Timeouts(read=2.0, health=1.0))
    t0 = time.monotonic()
    with pytest.raises(ReplicaUnreachable):
        with pool.lease() as r:
            assert pool.healthy == 1
            sigstop(r.container)
            r.screenshot()
    assert time.monotonic() - t0 < 10
    faults = [e for e in pool.events if e.event == "faulted"]
    assert faults and faults[0].cause and faults[0].cause.startswith("ReplicaUnreachable")
    with pool.lease(timeout=30) as r2:
        assert r2.health()["status"] == "ok"


def test_events_cover_the_lifecycle_and_write_as_parquet(make_pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1)
    with pool.lease() as r:
        r.health()
    assert _wait(lambda: any(e.event == "removed" for e in pool.events), 15)
    events = list(pool.events)  # a replacement replica may add more while we write
    written = write_sidecar(tmp_path, "ds", "pool_events", "run-1", "events", events_table(events, "run-1"))
    t = pq.read_table(written)
    assert t.num_rows == len(events) >= 5
    kinds = set(t.column("event").to_pylist())
    assert {"created", "ready", "leased", "released", "removed"} <= kinds <= set(EVENT_KINDS)
    assert set(t.column("host").to_pylist()) == {"local"} and set(t.column("run_id").to_pylist()) == {"run-1"}
    ready = [e for e in pool.events if e.event == "ready"]
    assert all(e.elapsed_s and e.elapsed_s > 0 for e in ready)


def test_pool_refuses_to_overcommit_past_the_plan_unless_forced(image, docker_client, pool_name) -> None:  # type: ignore[no-untyped-def]
    host = DockerHost(name="local", client=docker_client, capacity=3)
    pool = ReplicaPool(image, 3, standby=1, name=pool_name, hosts=[host])
    with pytest.raises(CapacityError, match="4 replicas requested, hosts hold 3"):
        pool.start()
    pool.close()
    assert docker_client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool_name}"}) == []
    forced = ReplicaPool(image, 3, standby=1, name=pool_name, hosts=[DockerHost(name="local", client=docker_client,
                         capacity=3)], force=True, screen=(800, 600))
    try:
        forced.start()
        assert forced.live == 4
    finally:
        forced.close()


def test_reap_without_pool_spares_pools_whose_owner_is_alive(docker_client, image, pool_name) -> None:  # type: ignore[no-untyped-def]
    kw = dict(entrypoint=["sleep", "60"], detach=True, network_mode="none")
    alive = docker_client.containers.run(image, labels={POOL_LABEL: pool_name + "-a", OWNER_LABEL: owner_id()}, **kw)
    orphan = docker_client.containers.run(image, labels={POOL_LABEL: pool_name + "-o",
                                                         OWNER_LABEL: owner_id().rsplit(":", 1)[0] + ":0"}, **kw)
    try:
        reap(docker_client)
        with pytest.raises(docker.errors.NotFound):
            orphan.reload()
        alive.reload()
        assert alive.status == "running"
    finally:
        for c in (alive, orphan):
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass


def test_compat_mode_serves_tokenless_on_its_own_loopback_address_and_sudo_works(make_pool) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(2, compat=True)
    with pool.lease() as a, pool.lease() as b:
        for r in (a, b):
            assert r.api.endpoint.startswith("http://127.0.") and r.api.endpoint.endswith(":5000")
            assert "Authorization" not in r.api.headers
            assert r.health()["status"] == "ok"
        assert a.api.endpoint != b.api.endpoint
        res = a.execute("echo password | sudo -S -p '' id -u", shell=True, timeout=20)
        assert res.output.strip() == "0", res
        hc = a.container.client.api.inspect_container(a.container.id)["HostConfig"]
        assert "no-new-privileges" not in (hc.get("SecurityOpt") or []) and "NET_RAW" in hc["CapDrop"]
