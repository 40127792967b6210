"""The pool's health: a background checker of idle replicas, and per-host failure accounting.

:class:`HealthMonitor` probes idle ready replicas every ``health_interval`` seconds
and has the pool replace the dead or hung; it counts every start and lease outcome
against its host, and quarantines a host whose recent failure rate crosses the
threshold or whose daemon stops answering (``quarantined`` event). The pool owns
one and calls it; the monitor reads the pool's replica registry under its lock.
Its :class:`OomWatcher` records every OOM kill inside the pool's containers as a fault.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Any

import docker.errors
import requests.exceptions

from osgym.errors import ReplicaError
from osgym.replicas.client import Replica, ReplicaState
from osgym.replicas.events import PoolEvent
from osgym.replicas.hosts import DockerHost
from osgym.replicas.reaper import POOL_LABEL, REPLICA_LABEL

if TYPE_CHECKING:
    from osgym.replicas.pool import ReplicaPool

log = logging.getLogger(__name__)

OOM_CAUSE = "oom: a process in the replica was killed at the container's memory limit"
OOM_WINDOW_S = 2
"""Seconds each request for a host's ``oom`` events stays open; also how long a closed pool's
watcher threads may linger before they notice."""


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
        self.oom = OomWatcher(pool, self)

    def start(self) -> None:
        """Start the OOM watcher, and the background checker unless the interval is 0."""
        self.oom.start()
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.pool.name}-health", daemon=True)
            self._thread.start()

    def stop(self, wait: bool = True, timeout: float = 10) -> None:
        """Tell the background checker to stop; with ``wait``, wait up to ``timeout`` seconds for it. Idempotent.

        The OOM watcher is told to stop too, but not waited for: it still records what arrives in
        its current window, and ends within :data:`OOM_WINDOW_S`.
        """
        self._stop.set()
        self.oom.stop()
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


class OomWatcher:
    """Records each OOM kill in a pool's containers as a ``faulted`` event with :data:`OOM_CAUSE`.

    Docker sets a container's ``State.OOMKilled`` only when the container dies of it; when the
    kernel kills one process inside a running replica (an app, or an agent's command that
    allocated too much) the only trace is an ``oom`` event. So each host's event stream is
    followed, filtered to this pool's label, in windows of :data:`OOM_WINDOW_S` seconds that
    overlap by one second (duplicates are dropped): a dropped connection loses nothing, and
    no stream has to be cancelled (docker-py cannot cancel one over ``ssh://``).

    Args:
        pool: whose containers (``osgym.pool=<name>``) are watched, on each of its hosts.
        monitor: counts each OOM against its host.
    """

    def __init__(self, pool: ReplicaPool, monitor: HealthMonitor):
        self.pool = pool
        self.monitor = monitor
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Start one watcher thread per reachable host. Idempotent."""
        if self._threads:
            return
        since = int(time.time()) - 1
        for host in self.pool.hosts:
            if host.client is None:
                continue
            t = threading.Thread(target=self._watch, args=(host, since), name=f"{self.pool.name}-oom-{host.name}",
                                 daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self) -> None:
        """Tell the watcher threads to end after their current window. Idempotent."""
        self._stop.set()

    def _watch(self, host: DockerHost, since: int) -> None:
        filters = {"type": "container", "event": "oom", "label": f"{POOL_LABEL}={self.pool.name}"}
        seen: set[tuple[str, int]] = set()
        while not self._stop.is_set():
            until = int(time.time()) + OOM_WINDOW_S
            try:
                for ev in host.client.api.events(since=since, until=until, filters=filters, decode=True):
                    key = (str(ev.get("id", "")), int(ev.get("timeNano", 0)))
                    if key not in seen:
                        seen.add(key)
                        self._record(host, ev)
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                log.debug("pool %s: reading oom events of host %s failed: %s", self.pool.name, host.name, exc)
                if self._stop.wait(1.0):
                    return
                continue
            since = until - 1
            seen = {k for k in seen if k[1] >= since * 10**9}  # older ones cannot come again

    def _record(self, host: DockerHost, ev: dict[str, Any]) -> None:
        pool = self.pool
        attributes = (ev.get("Actor") or {}).get("Attributes") or {}
        pool.stats.faulted += 1
        pool._record(PoolEvent(time.time(), pool.name, str(attributes.get(REPLICA_LABEL, "")), host.name, "faulted",
                               OOM_CAUSE))
        self.monitor.host_outcome(host, ok=False)
