"""A lease that times out is retried like a replica fault, not recorded as a final error row.

A pool of one replica is held by someone else for longer than the collector's lease
timeout, then given back: the episode must wait it out over several attempts and
then run on a replica. If the pool stays busy through every attempt, the row records
a retryable ``replica_fault`` after all attempts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pool_support import run_jobs

from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.errors import LeaseTimeout, PoolError, ReplicaError
from osgym.replicas.pool import ReplicaPool


def _recipe(tmp_path, retries: int):  # type: ignore[no-untyped-def]
    return load_recipe({"name": "lease", "episodes": 1, "replicas": 1, "standby": 0, "screen": [1280, 800],
                        "max_steps": 10, "settle_s": 0.2, "retries": retries, "store": str(tmp_path)})


def test_a_lease_timeout_is_retried_until_a_replica_is_free(make_pool: Callable[..., ReplicaPool], image: str,
                                                            tmp_path) -> None:  # type: ignore[no-untyped-def]
    pool = make_pool(1)
    recipe = _recipe(tmp_path, retries=6)
    job = plan_jobs(recipe, "lease-run")[0]
    held = pool.acquire(30)  # all replicas busy ...
    freed = threading.Timer(4.0, pool.release, args=(held,))  # ... for longer than the lease timeout
    freed.start()
    try:
        [result] = run_jobs(Collector(recipe, pool, image, lease_timeout_s=3.0), [job], workers=1,
                            retries=recipe.retries)
    finally:
        freed.cancel()
        freed.join()
        pool.release(held)  # a no-op once the timer gave it back
    t = result.trajectory
    assert result.attempts >= 2, "the first lease could not succeed: the replica was held for 4 s"
    assert result.replica_id is not None and result.replica_id != held.id, "it ran on the freed pool's replica"
    assert t.error_class is None or "no replica ready" not in (t.error_message or ""), t.error_message
    assert len(t.steps) >= 1


def test_a_pool_busy_through_every_attempt_records_a_replica_fault(make_pool: Callable[..., ReplicaPool],
                                                                   image: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pool = make_pool(1)
    recipe = _recipe(tmp_path, retries=1)
    held = pool.acquire(30)
    try:
        [result] = run_jobs(Collector(recipe, pool, image, lease_timeout_s=0.5), plan_jobs(recipe, "busy-run"),
                            workers=1, retries=recipe.retries)
    finally:
        pool.release(held)
    t = result.trajectory
    assert result.attempts == 2 and result.replica_id is None
    assert t.error_class == "replica_fault" and "LeaseTimeout: no replica ready within 0.5 s" in (t.error_message or "")


def test_lease_timeout_is_a_pool_error_and_a_retryable_replica_error() -> None:
    exc = LeaseTimeout("no replica ready")
    assert isinstance(exc, PoolError) and isinstance(exc, ReplicaError)


def test_a_pool_whose_every_host_is_quarantined_is_not_waited_on_again(make_pool: Callable[..., ReplicaPool],
                                                                       image: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    pool = make_pool(1)
    recipe = _recipe(tmp_path, retries=3)
    held = pool.acquire(30)
    pool.health.quarantine(pool.hosts[0], "test: the only host is out")  # no replica can come
    try:
        [result] = run_jobs(Collector(recipe, pool, image, lease_timeout_s=0.5), plan_jobs(recipe, "dead-run"),
                            workers=1, retries=recipe.retries)
    finally:
        pool.release(held)
    t = result.trajectory
    assert result.attempts == 1, "retrying a pool that cannot start replicas only waits again"
    assert t.error_class == "error" and "every host is quarantined" in (t.error_message or ""), t.error_message
