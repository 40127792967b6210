"""Parking: a held replica that is not stepping keeps only part of its memory resident.

A replica with its apps open holds ~300 MiB, most of it cold between an agent's episodes or while a
trainer updates its policy. Parked, its resident memory is bounded, so the kernel moves its cold pages
to the replica's swap share (zram, :mod:`osgym.replicas.zram`); unparked, the bound goes and the pages it
touches come back. A fleet where only some replicas step at a time then holds more of them than a
fixed cap would let step: a cap low enough for the held ones thrashes the active ones (BENCHMARKS.md,
density, third run).

The bound must never kill what it bounds. On cgroup v2 it is the cgroup's ``memory.high``, not the
container's memory limit (``memory.max``, what ``docker update --memory`` sets): lowered below what the
replica uses, ``memory.max`` makes the kernel reclaim and then OOM-kill inside the replica if it cannot
(a swap share or a zram device that is full), while ``memory.high`` only reclaims and throttles. On cgroup
v1 (no ``memory.high``) it is the memory limit itself, which v1 lowers only if reclaim gets the replica
under it, and otherwise refuses (``EBUSY``, a :class:`~osgym.errors.PoolError` here) with the replica
untouched. Either way it is written in the container's own cgroup: a container of the local Docker daemon,
and root, who owns the cgroup files. Unparking gives v2 back ``max`` and v1 the pool's memory limit; the
swap share stays as the pool set it.
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass
from pathlib import Path

from osgym.errors import ConfigError, PoolError
from osgym.replicas.accounting import find_cgroup
from osgym.replicas.client import Replica

__all__ = ["MIN_RESIDENT_MIB", "Parked", "park", "resident_bound_mib", "unpark"]

CGROUP_ROOT = Path("/sys/fs/cgroup")
MIN_RESIDENT_MIB = 64
"""Below this a replica's X server and control server would page on every request."""


@dataclass(frozen=True)
class Parked:
    """What one park or unpark did: the bound written (None: none), and the wall seconds the write took (the
    kernel reclaims down to a lower bound before the write returns)."""

    replica_id: str
    resident_mib: int | None
    seconds: float


def _bound_file(replica: Replica, root: Path) -> Path:
    if replica.container is None:
        raise ConfigError(f"replica {replica.id} has no container to park")
    paths = find_cgroup(replica.container.id, root)
    if paths is None:
        raise ConfigError(f"replica {replica.id}: no cgroup for its container under {root} (parking needs a "
                          "container of the local Docker daemon)")
    return paths.memory / ("memory.high" if paths.version == 2 else "memory.limit_in_bytes")


def _write(replica: Replica, path: Path, mib: int | None) -> Parked:
    t0 = time.monotonic()
    try:
        path.write_text("max" if mib is None else str(mib * 2**20))
    except PermissionError as exc:
        raise ConfigError(f"replica {replica.id}: cannot write {path} ({exc.strerror}): parking needs root") from exc
    except FileNotFoundError as exc:
        raise ConfigError(f"replica {replica.id}: its cgroup is gone (the container was removed)") from exc
    except OSError as exc:
        if exc.errno == errno.EBUSY:
            raise PoolError(f"replica {replica.id}: could not reclaim it down to {mib} MiB (is its swap share, or "
                            "the host's swap, full?); left as it was") from exc
        raise
    return Parked(replica.id, mib, time.monotonic() - t0)


def park(replica: Replica, resident_mib: int, root: Path = CGROUP_ROOT) -> Parked:
    """Bound ``replica``'s resident memory to ``resident_mib``; returns once the kernel reclaimed down to it
    (what does not fit goes to the replica's swap share; without one, only its page cache goes).

    Raises:
        ConfigError: for a bound under :data:`MIN_RESIDENT_MIB`, or a replica this host cannot park
            (no container, not the local daemon, not root).
        PoolError: on cgroup v1, if the kernel could not reclaim the replica down to the bound.
    """
    if isinstance(resident_mib, bool) or not isinstance(resident_mib, int) or resident_mib < MIN_RESIDENT_MIB:
        raise ConfigError(f"resident_mib must be an integer of at least {MIN_RESIDENT_MIB}, got {resident_mib!r}")
    return _write(replica, _bound_file(replica, root), resident_mib)


def unpark(replica: Replica, limit_mib: int, root: Path = CGROUP_ROOT) -> Parked:
    """Lift the bound :func:`park` set: ``max`` on cgroup v2, the replica's memory limit ``limit_mib`` (what
    its pool gave it) on v1. Idempotent."""
    path = _bound_file(replica, root)
    return _write(replica, path, None if path.name == "memory.high" else limit_mib)


def resident_bound_mib(replica: Replica, root: Path = CGROUP_ROOT) -> int | None:
    """The replica's bound in MiB now (on v1, its memory limit when not parked); None for none."""
    text = _bound_file(replica, root).read_text().strip()
    return None if text == "max" else int(text) // 2**20
