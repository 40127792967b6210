"""Parking the replicas of idle sessions: held, not stepping, so most of their memory can wait in swap.

A trainer holds its sessions while its model thinks, between rollouts and across a policy update; the
replicas keep Chromium and Calc open all that while. A session no request has touched for
``park_after_s`` has its replica parked (:mod:`osgym.replicas.parking`: only ``park_mib`` stays resident,
the rest goes to the replica's swap share), and its next request lifts the bound before it runs. The
bound never kills: a bound the kernel cannot reach is refused (cgroup v1) or only throttles (v2).

Parking needs the operator's setup: a swap share for the replicas (``OSGYM_REPLICA_SWAP_MIB``) on a zram
device (``osgym host tune --zram``), root, and the local Docker daemon. A server that cannot park logs why
once and stops trying; its sessions run as they would unparked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Protocol

from osgym.errors import ConfigError, PoolError
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool

__all__ = ["Held", "IdleParking"]

log = logging.getLogger(__name__)


class Held(Protocol):
    """What parking needs of a session (:class:`~osgym.serving.sessions.Session` is one): its replica, when a request
    last touched it, whether it ended, and the lock its requests hold."""

    @property
    def id(self) -> int: ...

    @property
    def replica(self) -> Replica: ...

    @property
    def lock(self) -> threading.Lock: ...

    @property
    def ended(self) -> bool: ...

    @property
    def last_seen(self) -> float: ...


class IdleParking:
    """Parks idle sessions' replicas (:meth:`park_idle`, from the reaper) and wakes them (:meth:`wake`)."""

    def __init__(self, pool: ReplicaPool, park_after_s: float, park_mib: int, clock: Callable[[], float]) -> None:
        self.pool, self.park_after_s, self.park_mib, self.clock = pool, park_after_s, park_mib, clock
        self.parked: set[int] = set()
        """Ids of the sessions whose replicas are parked now."""
        self.parks = self.wakes = self.refused = 0
        self.disabled: str | None = None
        """Why this host cannot park (then nothing is tried again), or None."""
        self._lock = threading.Lock()

    def park_idle(self, sessions: Iterable[Held], most: int = 4) -> list[int]:
        """Park up to ``most`` live sessions idle for ``park_after_s`` and not parked yet; returns their ids.

        A park takes seconds (the kernel reclaims before the write returns) and the reaper calls this
        between its rounds: a few per round keep its reclaiming of idle sessions on time when a whole
        fleet goes idle at once (a trainer's policy update)."""
        done: list[int] = []
        for s in sessions:
            if self.disabled is not None or len(done) >= most:
                break
            with self._lock:
                if s.id in self.parked or s.ended or self.clock() - s.last_seen <= self.park_after_s:
                    continue
            if not s.lock.acquire(blocking=False):
                continue  # a request is running on it: not idle
            try:
                # under the session's lock: a request that comes now waits for the bound, then lifts it
                if s.ended or self.clock() - s.last_seen <= self.park_after_s:
                    continue
                self.pool.park(s.replica, self.park_mib)
                with self._lock:
                    self.parked.add(s.id)
                    self.parks += 1
                done.append(s.id)
            except ConfigError as exc:
                self.disabled = str(exc)
                log.warning("parking idle sessions is off: %s", exc)
            except PoolError as exc:  # the kernel could not reclaim it down (swap full): left as it was
                self.refused += 1
                log.info("session %s not parked: %s", s.id, exc)
            finally:
                s.lock.release()
        return done

    def wake(self, session: Held) -> None:
        """Lift the session's bound if it is parked (before its request runs)."""
        with self._lock:
            if session.id not in self.parked:
                return
        with session.lock:  # waits for a park that is running to finish, so it cannot land after this
            with self._lock:
                if session.id not in self.parked:
                    return
                self.parked.discard(session.id)
                self.wakes += 1
            if session.ended:
                return
            try:
                self.pool.unpark(session.replica)
            except (ConfigError, OSError) as exc:  # its container is gone: the request itself will say so
                log.warning("session %s: could not unpark its replica: %s", session.id, exc)

    def forget(self, session: Held) -> None:
        """An ended session's replica is discarded, bound and all (a :attr:`SessionManager.end_hooks` hook)."""
        with self._lock:
            self.parked.discard(session.id)
