"""The state a pool shares with its provisioner and its health monitor: its registry and its stats.

:class:`ReplicaRegistry` is which replicas the pool has and on which host, how many it placed on each
host, how many slots (replicas alive or starting) it holds, and whether it is closed, all under one
lock. :class:`PoolStats` counts what the pool has done. The pool makes one of each and hands them to
:class:`~osgym.replicas.provision.Provisioner` and :class:`~osgym.replicas.health.HealthMonitor`
along with its :class:`~osgym.replicas.events.EventRecorder` and its lease queue.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from osgym.replicas.client import Replica
from osgym.replicas.hosts import DockerHost

__all__ = ["PoolStats", "ReplicaRegistry"]


@dataclass
class PoolStats:
    """What a pool has done so far: counts of lifecycle events, and start and acquire latencies."""

    started: int = 0
    ready: int = 0
    leased: int = 0
    faulted: int = 0
    removed: int = 0
    start_failures: int = 0
    restored: int = 0
    restore_failures: int = 0
    start_s: list[float] = field(default_factory=list)
    acquire_s: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)
    """Per started replica, seconds spent in: create, start, socket (until the control socket exists),
    health (until /health answers), screenshot (first non-empty screenshot)."""


class ReplicaRegistry:
    """The replicas of one pool and where they run, under :attr:`lock` (reentrant).

    A replica is entered once its container exists (:meth:`add`) and leaves when it is removed
    (:meth:`remove`) or its start fails (:meth:`start_failed`). A host's placement count goes up when a
    start is planned there and down when that start fails or its replica is removed. A slot is taken for
    every replica alive or starting, and freed when a start gives up or a replica is discarded.

    Attributes:
        lock: held for every read or change of the registry's state (and of the stats kept with it).
        hosts: the pool's Docker hosts.
        placed: host name -> replicas placed there (starting or alive).
        slots: replicas alive or being started.
        closed: set once the pool closes: no start may add a replica after it.
    """

    def __init__(self, hosts: Sequence[DockerHost]) -> None:
        self.lock = threading.RLock()
        self.hosts = list(hosts)
        self.placed: dict[str, int] = {h.name: 0 for h in self.hosts}
        self.slots = 0
        self.closed = False
        self._replicas: dict[str, Replica] = {}
        self._host_of: dict[str, DockerHost] = {}

    def __contains__(self, replica_id: object) -> bool:
        with self.lock:
            return replica_id in self._replicas

    def __len__(self) -> int:
        with self.lock:
            return len(self._replicas)

    def get(self, replica_id: str) -> Replica | None:
        """The registered replica with this id, if any."""
        with self.lock:
            return self._replicas.get(replica_id)

    def replicas(self) -> list[Replica]:
        """The registered replicas now (starting, ready, leased or being given back)."""
        with self.lock:
            return list(self._replicas.values())

    def by_state(self) -> dict[str, int]:
        """How many replicas are in each state (``ReplicaState`` values; the states with none left out), a slot
        whose start has no container yet as ``starting``; given-back replicas count until they are removed."""
        with self.lock:
            counts = collections.Counter(r.state.value for r in self._replicas.values())
            alive = counts["starting"] + counts["ready"] + counts["leased"]
            if self.slots > alive:
                counts["starting"] += self.slots - alive
            return {state: n for state, n in counts.items() if n}

    def host_of(self, replica_id: str) -> DockerHost | None:
        """The host a registered replica runs on."""
        with self.lock:
            return self._host_of.get(replica_id)

    def add(self, replica: Replica, host: DockerHost) -> None:
        """Enter a replica whose container was created on ``host`` (placed there already)."""
        with self.lock:
            self._replicas[replica.id] = replica
            self._host_of[replica.id] = host

    def start_failed(self, replica_id: str, host: DockerHost) -> None:
        """Undo a start planned on ``host``: drop the replica if it was entered, and its placement."""
        with self.lock:
            self._replicas.pop(replica_id, None)
            self._host_of.pop(replica_id, None)
            self.placed[host.name] -= 1

    def remove(self, replica_id: str) -> tuple[bool, DockerHost | None]:
        """Drop a replica whose container goes; returns whether it was registered, and its host."""
        with self.lock:
            known = self._replicas.pop(replica_id, None) is not None
            host = self._host_of.pop(replica_id, None)
            if known and host is not None:
                self.placed[host.name] -= 1
            return known, host

    def free_slot(self, replica_id: str | None = None) -> None:
        """Give a slot back: that of a start that gave up (no ``replica_id``), or of a discarded replica if it
        is registered (a replica discarded twice frees one slot)."""
        with self.lock:
            if replica_id is None or replica_id in self._replicas:
                self.slots -= 1
