"""A drained pool (a server that stops) fails its waiting leases at once and replaces nothing."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from osgym.errors import LeaseTimeout, PoolError
from osgym.replicas.pool import ReplicaPool


def test_drain_fails_waiting_leases_at_once_and_replaces_no_replica(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1)
    held = pool.acquire(30)  # the only replica is leased ...
    outcome: list[tuple[BaseException, float]] = []

    def wait_for_one() -> None:
        t0 = time.monotonic()
        try:
            pool.acquire(60)  # ... so this lease waits
        except PoolError as exc:
            outcome.append((exc, time.monotonic() - t0))

    waiter = threading.Thread(target=wait_for_one, daemon=True)
    waiter.start()
    time.sleep(1)
    assert pool.waiting == 1 and not outcome
    pool.drain()
    waiter.join(timeout=10)
    [(exc, waited_s)] = outcome
    assert not isinstance(exc, LeaseTimeout) and "draining" in str(exc), exc
    assert waited_s < 10, f"the waiting lease took {waited_s:.1f} s to fail: it waited for its timeout"
    created = sum(e.event == "created" for e in pool.events)
    pool.release(held)  # given back: removed, not replaced
    deadline = time.monotonic() + 30
    while pool.live:
        assert time.monotonic() < deadline, "the released replica was never removed"
        time.sleep(0.1)
    assert sum(e.event == "created" for e in pool.events) == created, "a drained pool started a replacement"
    with pytest.raises(PoolError, match="draining"):
        pool.acquire(1)
