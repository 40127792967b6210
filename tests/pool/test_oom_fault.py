"""An OOM kill inside a running replica is recorded as a fault of that replica.

Docker marks a container ``OOMKilled`` only when the container dies of it; here one
process inside a leased replica allocates past the memory limit, the kernel kills
it, and the replica keeps running. The pool must still record the fault.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pool_support import push_past_memory_limit

from osgym.replicas.health import OOM_CAUSE
from osgym.replicas.pool import ReplicaPool


def test_an_oom_kill_inside_a_running_replica_is_a_recorded_fault(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1)
    faulted_before = pool.stats.faulted
    with pool.lease() as replica:
        push_past_memory_limit(replica.container)
        deadline = time.monotonic() + 30
        while not [e for e in pool.events if e.event == "faulted" and e.replica_id == replica.id]:
            assert time.monotonic() < deadline, f"no fault recorded for the OOM kill: {pool.events}"
            time.sleep(0.1)
        assert replica.health()["status"] == "ok", "only the allocating process was killed"
    [fault] = [e for e in pool.events if e.event == "faulted" and e.replica_id == replica.id]
    assert fault.cause == OOM_CAUSE and fault.host == replica.host
    assert pool.stats.faulted == faulted_before + 1
