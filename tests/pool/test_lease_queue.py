"""``LeaseQueue``: blocked getters are served in arrival order, and none is lost to a timeout or a close."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from osgym.replicas.lease_queue import LeaseQueue


def _until(cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, "state not reached"
        time.sleep(0.005)


def _getters(q: LeaseQueue[int], n: int, got: list[tuple[int, int | None]], start: int = 0,
             **kw: bool) -> list[threading.Thread]:
    """Start getters ``start``.. ``start + n - 1`` one after the other, each blocked before the next starts."""
    threads = []
    for i in range(start, start + n):
        before = q.waiting()
        t = threading.Thread(target=lambda i=i: got.append((i, q.get(30, **kw))))
        t.start()
        threads.append(t)
        _until(lambda before=before: q.waiting() == before + 1)
    return threads


def test_blocked_getters_are_served_in_arrival_order_and_a_late_one_waits_its_turn() -> None:
    q: LeaseQueue[int] = LeaseQueue()
    got: list[tuple[int, int | None]] = []
    threads = _getters(q, 5, got)
    for item in range(100, 105):
        q.put(item)
        _until(lambda item=item: len(got) == item - 99)  # one served per item, the oldest waiter
        late = q.get(0)  # a getter arriving with an item just handed over finds nothing to take
        assert late is None
    for t in threads:
        t.join()
    assert got == [(0, 100), (1, 101), (2, 102), (3, 103), (4, 104)]
    assert q.waiting() == 0 and q.qsize() == 0


def test_items_wait_only_while_no_getter_does() -> None:
    q: LeaseQueue[int] = LeaseQueue()
    q.put(1)
    q.put(2)
    assert q.qsize() == 2 and q.get(0) == 1 and q.get(0) == 2 and q.get(0.01) is None


def test_a_timed_out_getter_leaves_the_line_and_a_first_getter_goes_ahead() -> None:
    q: LeaseQueue[int] = LeaseQueue()
    t0 = time.monotonic()
    assert q.get(0.2) is None
    assert time.monotonic() - t0 >= 0.2 and q.waiting() == 0
    got: list[tuple[int, int | None]] = []
    threads = _getters(q, 2, got)
    threads += _getters(q, 1, got, start=2, first=True)  # handed an unusable item: it keeps its place ahead
    for item in (7, 8, 9):
        q.put(item)
        _until(lambda item=item: len(got) == item - 6)
    for t in threads:
        t.join()
    assert got == [(2, 7), (0, 8), (1, 9)]


def test_close_wakes_every_getter_empty_handed() -> None:
    q: LeaseQueue[int] = LeaseQueue()
    got: list[tuple[int, int | None]] = []
    threads = _getters(q, 3, got)
    q.close()
    for t in threads:
        t.join(5)
        assert not t.is_alive()
    assert sorted(got) == [(0, None), (1, None), (2, None)]
    assert q.get(10) is None  # returns at once


def test_a_patient_getter_keeps_its_place_while_the_queue_moves_and_gives_up_once_it_stops() -> None:
    # 6 getters with a 1 s bound; one item every 0.3 s: the last is served after ~1.8 s, past its bound,
    # because someone was served less than 1 s before each of its waits ran out
    timeout = 1.0
    for patient in (True, False):
        q: LeaseQueue[int] = LeaseQueue()
        got: list[tuple[int, int | None]] = []
        threads = []
        for i in range(6):
            t = threading.Thread(target=lambda i=i, q=q, got=got, patient=patient:
                                 got.append((i, q.get(timeout, patient=patient))))
            t.start()
            threads.append(t)
            _until(lambda i=i, q=q: q.waiting() == i + 1)
        for item in range(6):
            time.sleep(0.3)
            q.put(item)
        for t in threads:
            t.join(5)
        if patient:
            assert sorted(got) == [(i, i) for i in range(6)], "each waited its turn, none lost"
        else:
            assert (5, None) in got and (0, 0) in got, "an impatient getter gives up at its bound"
        assert q.waiting() == 0

    # nobody is served any more: a patient getter gives up `timeout` after the last item went out
    q = LeaseQueue()
    q.put(1)
    assert q.get(0) == 1
    t0 = time.monotonic()
    assert q.get(timeout, patient=True) is None
    waited = time.monotonic() - t0
    assert timeout <= waited < timeout + 1.0 and q.waiting() == 0
