"""The pool's health: a background checker of idle replicas, and per-host failure accounting.

:class:`HealthMonitor` probes idle ready replicas every ``health_interval`` seconds
and has the pool replace the dead or hung; it counts every start and lease outcome
against its host, and quarantines a host whose recent failure rate crosses the
threshold or whose daemon stops answering (``quarantined`` event). The pool owns
one and calls it; the monitor is given the pool's shared state (:mod:`osgym.replicas.pool_state`,
the event recorder, the lease queue) and two of its acts: replace a replica, refill the pool.
Its :class:`OomWatcher` records every OOM kill inside the pool's containers as a fault, and tells the
pool whether one happened during a lease.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import ReplicaError
from osgym.replicas.accounting import Accountant
from osgym.replicas.client import Replica, ReplicaState
from osgym.replicas.events import EventRecorder
from osgym.replicas.hosts import DockerHost
from osgym.replicas.lease_queue import LeaseQueue
from osgym.replicas.pool_state import PoolStats, ReplicaRegistry
from osgym.replicas.reaper import POOL_LABEL, REPLICA_LABEL

log = logging.getLogger(__name__)

OOM_CAUSE = "oom: a process in the replica was killed at the container's memory limit"
OOM_WINDOW_S = 2
"""Seconds each request for a host's ``oom`` events stays open; also how long a closed pool's
watcher threads may linger before they notice."""
OOM_REPORT_S = OOM_WINDOW_S + 1.0
"""How long a lease's end waits for Docker's report of a kill the kernel has already counted (Docker's
event comes milliseconds later), so that the watcher, not the lease, records it: once."""


class HealthMonitor:
    """Health checks of one pool's idle replicas, and quarantine of its failing hosts.

    Args:
        pool_name: the pool's name (its threads' names, its containers' label).
        interval: seconds between background probes (0 disables the thread; :meth:`check` still works).
        registry: the pool's replicas and hosts.
        ready: the pool's lease queue, whose idle replicas are probed.
        stats: the pool's counts (faults).
        recorder: the pool's event recorder.
        accountant: the pool's cgroup accounting (each replica's OOM kill count).
        probe_timeout: seconds one probe may take (the pool's ``timeouts.health``).
        replace: discards a faulted replica and starts a replacement.
        refill: starts replicas until the pool is full again (after failed starts).
    """

    def __init__(self, pool_name: str, interval: float, *, registry: ReplicaRegistry, ready: LeaseQueue[Replica],
                 stats: PoolStats, recorder: EventRecorder, accountant: Accountant, probe_timeout: float,
                 replace: Callable[[Replica, str], None], refill: Callable[[], object]):
        self.pool_name = pool_name
        self.interval = interval
        self.registry = registry
        self.ready = ready
        self.stats = stats
        self.recorder = recorder
        self.probe_timeout = probe_timeout
        self._replace = replace
        self._refill = refill
        self._checked: dict[str, float] = {}  # replica id -> monotonic time of its last good probe
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.oom = OomWatcher(pool_name, registry=registry, stats=stats, recorder=recorder, accountant=accountant,
                              monitor=self)

    def start(self) -> None:
        """Start the OOM watcher, and the background checker unless the interval is 0."""
        self.oom.start()
        if self.interval > 0 and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"{self.pool_name}-health", daemon=True)
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
        self.oom.forget(replica_id)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.check()
            except Exception as exc:  # the checker must survive anything; record and go on
                self.recorder.record("faulted", cause=f"health checker: {exc!r}")

    def check(self, batch: int = 32) -> int:
        """Probe up to ``batch`` idle ready replicas (least recently checked first); replace the dead or hung.

        Also restarts replicas lost to failed starts. Returns the number of replicas faulted.
        """
        with self.ready.mutex:
            idle = [r for r in self.ready.queue if r.state is ReplicaState.READY]
        idle.sort(key=lambda r: self._checked.get(r.id, 0.0))
        faulted = 0
        for replica in idle[:batch]:
            if self._stop.is_set():
                break
            if self._probe(replica):
                continue
            faulted += 1
        self._refill()
        return faulted

    def _probe(self, replica: Replica) -> bool:
        """Probe one idle replica; a failure faults and discards it. False if it was faulted here."""
        try:
            replica.health(timeout=self.probe_timeout)
            self.mark_checked(replica.id)
            return True
        except ReplicaError as exc:
            with self.registry.lock:
                if replica.state is not ReplicaState.READY:
                    return True  # leased meanwhile: the episode will find out
                replica.state = ReplicaState.FAULTED
            self.stats.faulted += 1
            self.recorder.replica(replica, "faulted", f"health check: {type(exc).__name__}: {exc}")
            host = self.registry.host_of(replica.id)
            if host is not None:
                self.host_outcome(host, ok=False)
            self._replace(replica, "failed health check")
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
        with self.registry.lock:
            others = [h for h in self.registry.hosts if h is not host and not h.quarantined]
        if others:
            self.quarantine(host, reason)
        elif not host.degraded:
            host.degraded = reason
            self.recorder.record("faulted", host=host.name,
                               cause=f"host degraded: {reason}; not quarantined (last healthy host)")

    def quarantine(self, host: DockerHost, reason: str) -> None:
        """Place no more replicas on ``host``; records a ``quarantined`` event the first time."""
        if host.quarantine(reason):
            self.recorder.record("quarantined", host=host.name, cause=reason[:2000])

    def hosts_report(self) -> list[dict[str, Any]]:
        """Per host: url, planned capacity, replicas placed, recent failure rate, quarantine reason."""
        reg = self.registry
        with reg.lock:
            return [{"host": h.name, "url": h.url, "capacity": h.capacity, "placed": reg.placed[h.name],
                     "failure_rate": round(h.failure_rate, 3), "quarantined": h.quarantined,
                     "degraded": h.degraded} for h in reg.hosts]


class OomWatcher:
    """Records each OOM kill in a pool's containers as a ``faulted`` event with :data:`OOM_CAUSE`.

    Docker sets a container's ``State.OOMKilled`` only when the container dies of it; when the
    kernel kills one process inside a running replica (an app, or an agent's command that
    allocated too much) the only trace is an ``oom`` event. So each host's event stream is
    followed, filtered to this pool's label, in windows of :data:`OOM_WINDOW_S` seconds that
    overlap by one second (duplicates are dropped): a dropped connection loses nothing, and
    no stream has to be cancelled (docker-py cannot cancel one over ``ssh://``).

    Whether a kill happened during a lease (:meth:`lease_started`, then :meth:`killed_in_lease`) is
    told by the kernel's own count in the replica's cgroup, exact at the lease's end, and by the
    events where the cgroup cannot be read.

    Args:
        pool_name: the name of the pool whose containers (``osgym.pool=<name>``) are watched.
        registry: the pool's hosts (each one watched) and replicas.
        stats: the pool's counts (faults).
        recorder: the pool's event recorder.
        accountant: the pool's cgroup accounting (the kernel's count of kills).
        monitor: counts each OOM against its host.
    """

    def __init__(self, pool_name: str, *, registry: ReplicaRegistry, stats: PoolStats, recorder: EventRecorder,
                 accountant: Accountant, monitor: HealthMonitor):
        self.pool_name = pool_name
        self.registry = registry
        self.stats = stats
        self.recorder = recorder
        self.accountant = accountant
        self.monitor = monitor
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._recorded: collections.Counter[str] = collections.Counter()  # replica id -> kills recorded
        self._ahead: collections.Counter[str] = collections.Counter()  # kills recorded before Docker's event
        self._leases: dict[str, tuple[int, int | None]] = {}  # replica id -> both counts when its lease began

    def lease_started(self, replica: Replica) -> None:
        """Note the kills recorded in ``replica`` so far, and the kernel's count (None if its cgroup is unreadable)."""
        with self._lock:
            self._leases[replica.id] = (self._recorded[replica.id], self.accountant.oom_kills(replica.id))

    def forget(self, replica_id: str) -> None:
        """Drop a removed replica's counts; not a kill recorded ahead of Docker's event, which may come yet."""
        with self._lock:
            self._leases.pop(replica_id, None)
            self._recorded.pop(replica_id, None)

    def killed_in_lease(self, replica: Replica) -> bool:
        """True if a process in ``replica`` was OOM-killed since :meth:`lease_started`.

        The kernel's count decides where the cgroup is readable (a kill Docker reported late, from before
        the lease, is not this lease's); the recorded events elsewhere. A kill the kernel counted that
        Docker has not reported is waited for (up to :data:`OOM_REPORT_S`), then recorded here, and
        Docker's late event of it ignored: each kill is one fault.
        """
        with self._lock:
            before = self._leases.pop(replica.id, (0, None))
        counted = self.accountant.oom_kills(replica.id)
        if before[1] is None or counted is None:
            return self._recorded[replica.id] > before[0]
        if counted == before[1]:
            return False
        deadline = time.monotonic() + OOM_REPORT_S
        while self._recorded[replica.id] == before[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        with self._lock:  # checked and counted at once: Docker's event may be being reported right now
            unreported = self._recorded[replica.id] == before[0]
            if unreported:
                self._recorded[replica.id] += 1
                self._ahead[replica.id] += 1
        host = self.registry.host_of(replica.id)
        if unreported and host is not None:
            log.warning("pool %s: Docker has not reported replica %s's OOM kill; recorded from its cgroup",
                        self.pool_name, replica.id)
            self._record(host, replica.id)
        return True

    def start(self) -> None:
        """Start one watcher thread per reachable host. Idempotent."""
        if self._threads:
            return
        since = int(time.time()) - 1
        for host in self.registry.hosts:
            if host.client is None:
                continue
            t = threading.Thread(target=self._watch, args=(host, since), name=f"{self.pool_name}-oom-{host.name}",
                                 daemon=True)
            self._threads.append(t)
            t.start()

    def stop(self) -> None:
        """Tell the watcher threads to end after their current window. Idempotent."""
        self._stop.set()

    def _watch(self, host: DockerHost, since: int) -> None:
        filters = {"type": "container", "event": "oom", "label": f"{POOL_LABEL}={self.pool_name}"}
        seen: set[tuple[str, int]] = set()
        while not self._stop.is_set():
            until = int(time.time()) + OOM_WINDOW_S
            try:
                for ev in host.client.api.events(since=since, until=until, filters=filters, decode=True):
                    key = (str(ev.get("id", "")), int(ev.get("timeNano", 0)))
                    if key not in seen:
                        seen.add(key)
                        self._reported(host, ev)
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                log.debug("pool %s: reading oom events of host %s failed: %s", self.pool_name, host.name, exc)
                if self._stop.wait(1.0):
                    return
                continue
            since = until - 1
            seen = {k for k in seen if k[1] >= since * 10**9}  # older ones cannot come again

    def _reported(self, host: DockerHost, ev: dict[str, Any]) -> None:
        replica_id = str(((ev.get("Actor") or {}).get("Attributes") or {}).get(REPLICA_LABEL, ""))
        with self._lock:
            if self._ahead[replica_id] > 0:  # its lease's end recorded this kill already, from the cgroup
                self._ahead[replica_id] -= 1
                return
            self._recorded[replica_id] += 1
        self._record(host, replica_id)

    def _record(self, host: DockerHost, replica_id: str) -> None:
        """The fault of one kill, counted already in ``_recorded``: an event, and its host's failure rate."""
        self.stats.faulted += 1
        self.recorder.record("faulted", replica_id, host.name, OOM_CAUSE)
        self.monitor.host_outcome(host, ok=False)
