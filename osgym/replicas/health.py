"""The pool's health: a background checker of idle replicas, and per-host failure accounting.

:class:`HealthMonitor` probes idle ready replicas every ``health_interval`` seconds
and has the pool replace the dead or hung; it counts every start and lease outcome
against its host, and quarantines a host whose recent failure rate crosses the
threshold or whose daemon stops answering (``quarantined`` event). The pool owns
one and calls it; the monitor reads the pool's replica registry under its lock.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from osgym.errors import ReplicaError
from osgym.replicas.client import Replica, ReplicaState
from osgym.replicas.events import PoolEvent
from osgym.replicas.hosts import DockerHost

if TYPE_CHECKING:
    from osgym.replicas.pool import ReplicaPool


class HealthMonitor:
    """Health checks of one pool's idle replicas, and quarantine of its failing hosts.

    Args:
        pool: the pool whose replicas and hosts are watched.
        interval: seconds between background probes (0 disables the thread; :meth:`check` still works).
    """

    def __init__(self, pool: ReplicaPool, interval: float):
        self.pool = pool
        self.interval = interval
        self._checked: dict[str, float] = {}  # replica id -> monotonic time of its last good probe
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Start the background checker, unless the interval is 0."""
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.pool.name}-health", daemon=True)
            self._thread.start()

    def stop(self, wait: bool = True, timeout: float = 10) -> None:
        """Tell the background checker to stop; with ``wait``, wait up to ``timeout`` seconds for it. Idempotent."""
        self._stop.set()
        if wait and self._thread is not None:
            self._thread.join(timeout=timeout)

    def mark_checked(self, replica_id: str) -> None:
        """Note that a replica was just found healthy (it is probed last)."""
        self._checked[replica_id] = time.monotonic()

    def forget(self, replica_id: str) -> None:
        """Drop a removed replica's record."""
        self._checked.pop(replica_id, None)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as exc:  # the checker must survive anything; record and go on
                self.pool._record(PoolEvent(time.time(), self.pool.name, "", "", "faulted", f"health checker: {exc!r}"))

    def check(self, batch: int = 32) -> int:
        """Probe up to ``batch`` idle ready replicas (least recently checked first); replace the dead or hung.

        Also restarts replicas lost to failed starts. Returns the number of replicas faulted.
        """
        pool = self.pool
        with pool._ready.mutex:
            idle = [r for r in pool._ready.queue if r.state is ReplicaState.READY]
        idle.sort(key=lambda r: self._checked.get(r.id, 0.0))
        faulted = 0
        for replica in idle[:batch]:
            if self._stop.is_set():
                break
            if self._probe(replica):
                continue
            faulted += 1
        pool._refill()
        return faulted

    def _probe(self, replica: Replica) -> bool:
        """Probe one idle replica; a failure faults and discards it. False if it was faulted here."""
        pool = self.pool
        try:
            replica.health(timeout=pool.timeouts.health)
            self.mark_checked(replica.id)
            return True
        except ReplicaError as exc:
            with pool._lock:
                if replica.state is not ReplicaState.READY:
                    return True  # leased meanwhile: the episode will find out
                replica.state = ReplicaState.FAULTED
            pool.stats.faulted += 1
            pool._event(replica, "faulted", f"health check: {type(exc).__name__}: {exc}")
            host = pool._host_of.get(replica.id)
            if host is not None:
                self.host_outcome(host, ok=False)
            pool._discard(replica, "failed health check")
            return False

    def host_outcome(self, host: DockerHost, ok: bool) -> None:
        """Count a start or lease outcome against its host; quarantine a failing host unless it is the last one.

        The last healthy host is never quarantined for its failure rate (the pool would stop); it is
        reported once as degraded (a host-level ``faulted`` event) instead. An unreachable daemon is
        always quarantined (:meth:`quarantine`).
        """
        reason = host.record(ok)
        if not reason:
            return
        with self.pool._lock:
            others = [h for h in self.pool.hosts if h is not host and not h.quarantined]
        if others:
            self.quarantine(host, reason)
        elif not host.degraded:
            host.degraded = reason
            self.pool._record(PoolEvent(time.time(), self.pool.name, "", host.name, "faulted",
                                        f"host degraded: {reason}; not quarantined (last healthy host)"))

    def quarantine(self, host: DockerHost, reason: str) -> None:
        """Place no more replicas on ``host``; records a ``quarantined`` event the first time."""
        if host.quarantine(reason):
            self.pool._record(PoolEvent(time.time(), self.pool.name, "", host.name, "quarantined", reason[:2000]))

    def hosts_report(self) -> list[dict[str, Any]]:
        """Per host: url, planned capacity, replicas placed, recent failure rate, quarantine reason."""
        pool = self.pool
        with pool._lock:
            return [{"host": h.name, "url": h.url, "capacity": h.capacity, "placed": pool._placed[h.name],
                     "failure_rate": round(h.failure_rate, 3), "quarantined": h.quarantined,
                     "degraded": h.degraded} for h in pool.hosts]
