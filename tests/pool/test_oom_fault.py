"""An OOM kill inside a running replica is a fault of that replica, and ends its lease as one.

Docker marks a container ``OOMKilled`` only when the container dies of it; here one
process inside a leased replica allocates past the memory limit, the kernel kills
it, and the replica keeps running. The pool must still record the fault, once, and
the episode that held the lease must not stand: it is retried on a fresh replica.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker
import pytest
from pool_support import push_past_memory_limit, run_jobs

from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.errors import ReplicaOomKilled
from osgym.replicas.accounting import find_cgroup, read_oom_kills
from osgym.replicas.client import Replica
from osgym.replicas.events import PoolEvent
from osgym.replicas.health import OOM_CAUSE, OOM_WINDOW_S
from osgym.replicas.pool import ReplicaPool
from osgym.replicas.reaper import POOL_LABEL


def _faults(pool: ReplicaPool, replica_id: str) -> list[PoolEvent]:
    return [e for e in pool.events if e.event == "faulted" and e.replica_id == replica_id]


def _oom_kills(replica: Replica) -> int:
    paths = find_cgroup(replica.container.id)
    assert paths is not None, "the test reads the replica's cgroup to know when the kernel killed"
    kills = read_oom_kills(paths)
    assert kills is not None
    return kills


class DockerOoms:
    """Docker's ``oom`` events for one pool's containers, read as they come from when it is entered.

    Not a query of Docker's history afterwards: the daemon keeps only its last 256 events for ``since``
    (moby's daemon/events), and the other tests' containers on a busy machine pass that within one test
    (CI, 2026-12-07: the kill's event was gone when the test asked, 0 against the pool's one fault).
    """

    def __init__(self, client: docker.DockerClient, pool_name: str) -> None:
        self._client, self._pool_name = client, pool_name
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> DockerOoms:
        self._stream = self._client.api.events(
            since=int(time.time()) - 1, decode=True,
            filters={"type": "container", "event": "oom", "label": f"{POOL_LABEL}={self._pool_name}"})
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        with contextlib.suppress(Exception):  # the stream is closed under it at the end
            for ev in self._stream:
                self._events.append(ev)

    def of(self, container_id: str, *, expected: int = 0) -> int:
        """The kills Docker has reported in the container ``container_id``, waiting up to 3 s for ``expected``: this
        stream and the pool's own may hand on one event a moment apart."""
        deadline = time.monotonic() + 3
        while True:
            n = sum(1 for ev in list(self._events) if ev.get("id") == container_id)
            if n >= expected or time.monotonic() > deadline:
                return n
            time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self._stream.close()
        self._thread.join(5)


def test_an_oom_kill_inside_a_running_replica_is_a_recorded_fault(
        make_pool: Callable[..., ReplicaPool], docker_client: docker.DockerClient) -> None:
    pool = make_pool(1)
    faulted_before = pool.stats.faulted
    with DockerOoms(docker_client, pool.name) as docker_ooms, pytest.raises(ReplicaOomKilled), \
            pool.lease() as replica:
        push_past_memory_limit(replica.container)
        deadline = time.monotonic() + 30
        while not _faults(pool, replica.id):
            assert time.monotonic() < deadline, f"no fault recorded for the OOM kill: {pool.events}"
            time.sleep(0.1)
        assert replica.health()["status"] == "ok", "only the allocating process was killed"
    faults = _faults(pool, replica.id)
    assert faults and all(f.cause == OOM_CAUSE and f.host == replica.host for f in faults)
    # one fault per kill Docker reports: under load the kernel killed twice for the one allocation (2026-12-07)
    assert len(faults) == docker_ooms.of(replica.container.id, expected=len(faults)), pool.events
    assert pool.stats.faulted == faulted_before + len(faults)


def test_a_lease_that_ends_just_after_an_oom_kill_ends_as_a_fault_recorded_once(
        make_pool: Callable[..., ReplicaPool], docker_client: docker.DockerClient) -> None:
    pool = make_pool(1)
    with DockerOoms(docker_client, pool.name) as docker_ooms, pytest.raises(ReplicaOomKilled), \
            pool.lease() as replica:
        before = _oom_kills(replica)
        push_past_memory_limit(replica.container)
        deadline = time.monotonic() + 30
        while _oom_kills(replica) == before:  # the kernel has killed; Docker may not have said so yet
            assert time.monotonic() < deadline, "the allocation was never OOM-killed"
            time.sleep(0.01)
    faults = _faults(pool, replica.id)
    assert faults and {f.cause for f in faults} == {OOM_CAUSE}
    time.sleep(3)  # Docker's own report of the kill has come by now: the lease's end must not have added a fault
    # one fault per kill Docker reports (the kernel may kill more than one process for one allocation)
    faults = _faults(pool, replica.id)
    assert len(faults) == docker_ooms.of(replica.container.id, expected=len(faults)), pool.events


def test_a_kill_docker_never_reports_is_still_the_leases_fault(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1)
    pool.health.oom.stop()  # Docker's events go unread from now on (a dropped stream, a slow daemon)
    time.sleep(OOM_WINDOW_S + 1)  # the watcher's last window ends
    with pytest.raises(ReplicaOomKilled), pool.lease() as replica:
        before = _oom_kills(replica)
        push_past_memory_limit(replica.container)
        deadline = time.monotonic() + 30
        while _oom_kills(replica) == before:
            assert time.monotonic() < deadline, "the allocation was never OOM-killed"
            time.sleep(0.01)
    [fault] = _faults(pool, replica.id)  # recorded from the cgroup, once
    assert fault.cause == OOM_CAUSE and fault.host == replica.host


def _recipe(tmp_path: Path, retries: int):  # type: ignore[no-untyped-def]
    return load_recipe({"name": "oom", "episodes": 1, "replicas": 1, "standby": 0, "screen": [1280, 800],
                        "max_steps": 10, "settle_s": 0.2, "retries": retries, "store": str(tmp_path)})


def _oom_first_lease(pool: ReplicaPool, hit: list[tuple[str, str]]) -> Callable[[PoolEvent], None]:
    """An event hook that OOM-kills a process in the first leased replica before its episode starts."""
    def on_event(ev: PoolEvent) -> None:
        if ev.event != "leased" or hit:
            return
        replica = pool.registry.get(ev.replica_id)
        assert replica is not None
        hit.append((ev.replica_id, replica.container.id))
        push_past_memory_limit(replica.container)
        deadline = time.monotonic() + 30
        while not _faults(pool, ev.replica_id):  # the episode runs on after the kill, as an agent's would
            assert time.monotonic() < deadline, "the OOM kill was never recorded"
            time.sleep(0.05)
    return on_event


@pytest.mark.parametrize("retries", [2, 0], ids=["retried", "last-attempt"])
def test_an_episode_whose_replica_had_an_oom_kill_is_a_replica_fault(
        make_pool: Callable[..., ReplicaPool], docker_client: docker.DockerClient, image: str, tmp_path: Path,
        retries: int) -> None:
    pool = make_pool(1)
    hit: list[tuple[str, str]] = []
    pool.on_event = _oom_first_lease(pool, hit)
    recipe = _recipe(tmp_path, retries)
    with DockerOoms(docker_client, pool.name) as docker_ooms:
        [result] = run_jobs(Collector(recipe, pool, image), plan_jobs(recipe, "oom-run"), workers=1,
                            retries=recipe.retries)
    t = result.trajectory
    assert hit, "no replica was leased"
    if retries:
        assert result.attempts == 2, "the episode on the OOM-hit replica must not stand"
        assert result.replica_id not in (None, hit[0][0]), "the retry runs on a fresh replica"
        assert t.error_class is None and len(t.steps) >= 1, t.error_message
    else:
        assert result.attempts == 1 and t.error_class == "replica_fault"
        assert "ReplicaOomKilled" in (t.error_message or ""), t.error_message
    faults = _faults(pool, hit[0][0])
    assert faults and {f.cause for f in faults} == {OOM_CAUSE}
    assert len(faults) == docker_ooms.of(hit[0][1], expected=len(faults)), "one fault per kill Docker reported"
