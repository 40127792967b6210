"""``LeaseQueue``: ready replicas handed to waiting leases in the order the leases asked.

``queue.Queue`` is not fair to its getters: a getter that arrives while an item waits takes it ahead of
those already blocked, a woken getter that loses that race waits again at the back, and a getter that
polls with a short timeout rejoins at the back each time. Under a load where leases outnumber replicas
(32 clients cycling on 8 replicas), some leases waited past the lease timeout while later ones were
served within seconds. Here a replica that becomes ready goes straight to the oldest waiting lease; only
with no lease waiting does it wait in the queue, so a new lease never overtakes an older one.

A patient getter's timeout bounds the time in which nobody was served, not its own wait: when a flow's
2,500 task runs all needed a replica at once, the last of them waited past a 30 s bound in a queue that
never stopped moving, and 7.8 % of the episodes were recorded as replica faults without having run
(BENCHMARKS.md, issue 42). A queue that stops still times out.
"""

from __future__ import annotations

import collections
import math
import threading
import time
from typing import Generic, TypeVar

__all__ = ["LeaseQueue"]

T = TypeVar("T")


class _Waiter(Generic[T]):
    __slots__ = ("event", "item")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.item: T | None = None


class LeaseQueue(Generic[T]):
    """A FIFO of ready items whose blocked getters are served in arrival order.

    ``mutex`` and ``queue`` (the items waiting for a getter) are those of ``queue.Queue``, for readers
    that look at the idle items without taking any.
    """

    def __init__(self) -> None:
        self.mutex = threading.Lock()
        self.queue: collections.deque[T] = collections.deque()
        self._waiters: collections.deque[_Waiter[T]] = collections.deque()
        self._closed = False
        self.served_at = -math.inf
        """When an item last went to a getter (``time.monotonic()``)."""

    def put(self, item: T) -> None:
        """Hand ``item`` to the oldest waiting getter, or keep it for the next one."""
        with self.mutex:
            if self._waiters:
                waiter = self._waiters.popleft()
                waiter.item = item
                waiter.event.set()
                self.served_at = time.monotonic()
                return
            self.queue.append(item)

    def get(self, timeout: float, *, first: bool = False, patient: bool = False) -> T | None:
        """The oldest item, waiting up to ``timeout`` seconds behind the getters already waiting.

        With ``first``, wait ahead of them: for a getter that was handed an item it could not use and
        must not lose its place. With ``patient``, keep the place past ``timeout`` for as long as other
        getters are being served: give up only ``timeout`` seconds after the later of the call and the
        last item handed out. Returns None on timeout, or once the queue is closed.
        """
        with self.mutex:
            if self.queue:  # items wait only while no getter does, so nobody is overtaken here
                self.served_at = time.monotonic()
                return self.queue.popleft()
            if self._closed:
                return None
            waiter: _Waiter[T] = _Waiter()
            if first:
                self._waiters.appendleft(waiter)
            else:
                self._waiters.append(waiter)
        deadline = time.monotonic() + max(timeout, 0.0)
        while not waiter.event.wait(max(deadline - time.monotonic(), 0.0)):
            moving_until = self.served_at + timeout  # a float read: no lock needed
            if not patient or moving_until <= time.monotonic():
                break
            deadline = moving_until
        else:
            return waiter.item
        with self.mutex:
            if waiter.event.is_set():  # handed an item as the wait ended: take it, or it would be lost
                return waiter.item
            self._waiters.remove(waiter)
        return None

    def close(self) -> None:
        """Wake every waiting getter empty-handed; later gets return at once once the items are gone."""
        with self.mutex:
            self._closed = True
            while self._waiters:
                self._waiters.popleft().event.set()

    def qsize(self) -> int:
        """Items waiting for a getter."""
        with self.mutex:
            return len(self.queue)

    def waiting(self) -> int:
        """Getters waiting for an item."""
        with self.mutex:
            return len(self._waiters)
