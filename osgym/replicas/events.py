"""Replica lifecycle events and the Parquet ``pool_events`` table.

Every event a pool records (created, ready, leased, released, faulted, removed,
quarantined) is one :class:`PoolEvent`; :func:`events_table` turns a list of
them into an Arrow table with the fixed :data:`POOL_EVENTS_SCHEMA`, and
:func:`events_table` turns a pool's events into an Arrow table (the collection writes it as a sidecar).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from osgym.replicas.accounting import Usage

EVENT_KINDS = ("created", "ready", "leased", "released", "faulted", "removed", "quarantined")
"""The lifecycle events a pool records."""


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
        elapsed_s: for ``ready``, seconds from the start request to ready.
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
