"""Leases waiting on real replicas are served in the order they asked, and a closing pool wakes them."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from osgym.errors import PoolError
from osgym.replicas.pool import ReplicaPool

pytestmark = pytest.mark.docker


def _until(cond: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.01)


def test_waiting_leases_get_replicas_in_arrival_order(make_pool: Callable[..., ReplicaPool]) -> None:
    # one replica, no standby: every lease after the first waits for the replacement of the one before
    pool = make_pool(1)
    held = pool.acquire()
    served: list[int] = []
    errors: list[str] = []

    def lease(n: int) -> None:
        try:
            replica = pool.acquire(timeout=300)
        except Exception as exc:  # the assertion below names it
            errors.append(f"lease {n}: {type(exc).__name__}: {exc}")
            return
        served.append(n)
        replica.screenshot()  # the replica works: a lease, not only a queue entry
        pool.release(replica)

    threads = []
    for n in range(4):  # each blocked in the lease queue before the next asks
        threads.append(threading.Thread(target=lease, args=(n,)))
        threads[-1].start()
        _until(lambda n=n: pool.waiting == n + 1)
    pool.release(held)
    # asks while the first four still wait for the replacement (a container start): it must not overtake
    threads.append(threading.Thread(target=lease, args=(4,)))
    threads[-1].start()
    for t in threads:
        t.join(360)
    assert not errors, errors
    assert served == [0, 1, 2, 3, 4]
    assert pool.waiting == 0


def test_closing_the_pool_wakes_a_waiting_lease(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1)
    held = pool.acquire()
    outcome: list[BaseException] = []

    def lease() -> None:
        try:
            pool.acquire(timeout=120)
        except BaseException as exc:  # the assertion below checks which
            outcome.append(exc)

    t = threading.Thread(target=lease)
    t.start()
    _until(lambda: pool.waiting == 1)
    t0 = time.monotonic()
    pool.close()
    t.join(30)
    assert not t.is_alive() and time.monotonic() - t0 < 30
    assert len(outcome) == 1 and isinstance(outcome[0], PoolError) and "closed" in str(outcome[0])
    pool.release(held)  # a closed pool takes a lease back without starting anything
