"""Replica lifecycle events, their recorder, and the Parquet ``pool_events`` table.

Every event a pool records (created, ready, leased, released, faulted, removed,
quarantined) is one :class:`PoolEvent`, kept in order by the pool's :class:`EventRecorder`
(which also hands each to the pool's ``on_event`` sink); :func:`events_table` turns a pool's
events into an Arrow table with the fixed :data:`POOL_EVENTS_SCHEMA` (the collection writes it as a sidecar).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from osgym.replicas.accounting import Usage
from osgym.replicas.client import Replica

EVENT_KINDS = ("created", "ready", "leased", "released", "faulted", "removed", "quarantined", "checkpointed",
               "restore_failed")
"""The lifecycle events a pool records; the last two, of a host, only with reset by restore
(:mod:`osgym.replicas.restore`): its checkpoint made or found, and a restore that failed (a cold start followed)."""


@dataclass(frozen=True)
class PoolEvent:
    """One lifecycle event of a replica (or, for ``quarantined``, of a host).

    Attributes:
        ts: Unix time of the event, seconds.
        pool: pool name.
        replica_id: replica id ("" for host events).
        host: name of the Docker host.
        event: one of :data:`EVENT_KINDS`.
        cause: why (a fault's error class and message, "reset", "oom", ...), if any.
        elapsed_s: for ``ready``, seconds from the start request to ready; for ``leased``, seconds the lease
            waited for a ready replica; for ``checkpointed``, seconds the checkpoint took.
        usage: for ``removed``, what the replica used over its lifetime (from its cgroup), if readable.
    """

    ts: float
    pool: str
    replica_id: str
    host: str
    event: str
    cause: str | None = None
    elapsed_s: float | None = None
    usage: Usage | None = None


class EventRecorder:
    """One pool's events, in the order they happened, each also handed to ``sink`` (from the pool's threads).

    The pool, its provisioner and its health monitor share one recorder.

    >>> rec = EventRecorder("p")
    >>> rec.record("quarantined", host="h1", cause="docker unreachable").event, len(rec.events)
    ('quarantined', 1)

    Args:
        pool: the pool's name, carried by every event.
        sink: called with every event after it is kept; may be replaced at any time.
    """

    def __init__(self, pool: str, sink: Callable[[PoolEvent], None] | None = None) -> None:
        self.pool = pool
        self.sink = sink
        self.events: list[PoolEvent] = []
        self._lock = threading.Lock()

    def record(self, event: str, replica_id: str = "", host: str = "", cause: str | None = None,
               elapsed_s: float | None = None, usage: Usage | None = None) -> PoolEvent:
        """Keep one event, stamped now, and hand it to the sink; returns it."""
        ev = PoolEvent(time.time(), self.pool, replica_id, host, event, cause, elapsed_s, usage)
        with self._lock:  # the sink read with the append: see :meth:`chain`
            self.events.append(ev)
            sink = self.sink
        if sink is not None:
            sink(ev)
        return ev

    def chain(self, first: Callable[[PoolEvent], None]) -> list[PoolEvent]:
        """From now on hand every event to ``first``, then to the sink there was; returns the events so far.

        Each event is either in the list returned or handed to ``first``, never both: a late subscriber (a
        server's metrics, after its pool started) misses none and counts none twice.

        >>> rec = EventRecorder("p")
        >>> _ = rec.record("created", "r1")
        >>> seen = []
        >>> [e.event for e in rec.chain(seen.append)]
        ['created']
        >>> _ = rec.record("ready", "r1")
        >>> [e.event for e in seen]
        ['ready']
        """
        with self._lock:
            rest = self.sink

            def both(ev: PoolEvent) -> None:
                first(ev)
                if rest is not None:
                    rest(ev)

            self.sink = both
            return list(self.events)

    def replica(self, replica: Replica, event: str, cause: str | None = None, elapsed_s: float | None = None,
                usage: Usage | None = None) -> PoolEvent:
        """:meth:`record` an event of ``replica``, on its host."""
        return self.record(event, replica.id, replica.host, cause, elapsed_s, usage)


POOL_EVENTS_SCHEMA = pa.schema([
    pa.field("ts", pa.timestamp("us", tz="UTC"), nullable=False),
    pa.field("run_id", pa.string()),
    pa.field("pool", pa.string(), nullable=False),
    pa.field("replica_id", pa.string(), nullable=False),
    pa.field("host", pa.string(), nullable=False),
    pa.field("event", pa.string(), nullable=False),
    pa.field("cause", pa.string()),
    pa.field("elapsed_s", pa.float64()),
    pa.field("lifetime_s", pa.float64()),
    pa.field("cpu_s", pa.float64()),
    pa.field("mem_avg_mib", pa.float64()),
    pa.field("mem_peak_mib", pa.float64()),
    pa.field("net_bytes", pa.int64()),
])
"""Schema of the ``pool_events`` table: one row per lifecycle event."""


def events_table(events: Iterable[PoolEvent], run_id: str | None = None) -> pa.Table:
    """The events as an Arrow table with :data:`POOL_EVENTS_SCHEMA`.

    >>> t = events_table([PoolEvent(0.0, "p", "r1", "local", "ready", elapsed_s=0.4)], run_id="run")
    >>> t.num_rows, t.column("event").to_pylist(), str(t.schema.field("ts").type)
    (1, ['ready'], 'timestamp[us, tz=UTC]')
    """
    rows: dict[str, list[Any]] = {name: [] for name in POOL_EVENTS_SCHEMA.names}
    for ev in events:
        rows["ts"].append(int(round(ev.ts * 1e6)))
        rows["run_id"].append(run_id)
        rows["pool"].append(ev.pool)
        rows["replica_id"].append(ev.replica_id)
        rows["host"].append(ev.host)
        rows["event"].append(ev.event)
        rows["cause"].append(ev.cause)
        rows["elapsed_s"].append(ev.elapsed_s)
        u = ev.usage
        rows["lifetime_s"].append(u.seconds if u else None)
        rows["cpu_s"].append(u.cpu_s if u else None)
        rows["mem_avg_mib"].append(u.mem_avg_mib if u else None)
        rows["mem_peak_mib"].append(u.mem_peak_mib if u else None)
        rows["net_bytes"].append(u.net_bytes if u else None)
    return pa.Table.from_pydict(rows, schema=POOL_EVENTS_SCHEMA)
