"""How much a container's writable layer holds on the Docker host's disk (overlay2 only).

Docker's own bound on a writable layer (``storage_opt size``, :attr:`ReplicaLimits.disk_mib
<osgym.replicas.limits.ReplicaLimits.disk_mib>`) needs overlay2 on xfs with ``pquota``, btrfs or
zfs; on overlay2 over ext4 nothing bounds it. The agent's account writes only to size-capped tmpfs
mounts (its home, ``/tmp``: :mod:`osgym.replicas.provision`), but root steps
(``Replica.execute_as_root``) can still write root-owned paths on the layer. A caller that measures
the layer after each root step with :func:`writable_layer_usage` can fault a replica past a bound.

The layer is overlay2's ``UpperDir`` (``docker inspect``'s ``GraphDriver.Data``), a directory on this
machine: the daemon must be local and the caller root (the directory is root's, mode 0700). It is
walked without following symlinks, each inode counted once by its allocated blocks (``st_blocks``,
so a sparse file counts what it holds, not its length), and the walk stops after ``max_entries``
entries, so a layer of millions of files costs a bounded time and reports a lower bound.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import OsgymError, ReplicaUnreachable

__all__ = ["DEFAULT_MAX_ENTRIES", "LayerUnmeasurable", "LayerUsage", "upper_dir", "writable_layer_usage"]

DEFAULT_MAX_ENTRIES = 100_000
"""Entries visited before the walk stops. A walk costs 4-5 us an entry here (2 cores, the inodes in the
page cache, load 2-6): 1 ms for a replica's layer after an apps episode (6 entries: the home is a tmpfs),
0.5 s at this bound. A root step that installs a package adds its files, hundreds to thousands; a layer
past this many is itself a reason to fault the replica (the reading says it is incomplete)."""

_LOCAL_BASE_URL = "http+docker://localhost"  # docker-py's name for a unix:// socket (as in hosts.py)


class LayerUnmeasurable(OsgymError):
    """Raised when this process cannot read a container's writable layer: a remote daemon, a storage
    driver other than overlay2, or a layer directory it cannot see or open (not root, or another
    mount namespace). Retrying on a fresh replica does not help: the host is set up that way."""


@dataclass(frozen=True)
class LayerUsage:
    """One reading of a writable layer."""

    bytes: int
    """Allocated bytes (``st_blocks * 512``), each inode once, directories included."""
    entries: int
    """Directory entries visited."""
    complete: bool
    """False when the walk stopped at ``max_entries``: ``bytes`` is then a lower bound."""


def upper_dir(container: Any) -> str:
    """The host path of ``container``'s overlay2 writable layer (a docker-py ``Container``).

    Raises:
        LayerUnmeasurable: the daemon is remote or the driver is not overlay2.
        ReplicaUnreachable: the container is gone or Docker does not answer.
    """
    api = container.client.api
    if str(api.base_url) != _LOCAL_BASE_URL:
        raise LayerUnmeasurable(f"container {container.id[:12]}: its daemon ({api.base_url}) is not local, so its "
                                "writable layer is not a directory of this machine")
    try:
        driver = api.inspect_container(container.id).get("GraphDriver") or {}
    except docker.errors.NotFound as exc:
        raise ReplicaUnreachable(f"container {container.id[:12]} is gone") from exc
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ReplicaUnreachable(f"container {container.id[:12]}: docker inspect failed: {exc}") from exc
    path = (driver.get("Data") or {}).get("UpperDir")
    if driver.get("Name") != "overlay2" or not path:
        raise LayerUnmeasurable(f"container {container.id[:12]}: storage driver {driver.get('Name')!r} has no "
                                "overlay2 UpperDir to measure (only overlay2 is supported)")
    return str(path)


def writable_layer_usage(container: Any, max_entries: int = DEFAULT_MAX_ENTRIES) -> LayerUsage:
    """What ``container``'s writable layer holds on the host's disk now; see the module's docstring.

    Args:
        container: a docker-py ``Container`` (``Replica.container``).
        max_entries: entries visited before the walk stops (``complete`` False).

    Raises:
        LayerUnmeasurable: remote daemon, another driver, or the layer cannot be opened (not root).
        ReplicaUnreachable: the container is gone or Docker does not answer.
    """
    if max_entries < 1:
        raise ValueError(f"max_entries must be at least 1, actual {max_entries}")
    root = upper_dir(container)
    try:
        top = os.lstat(root).st_blocks * 512
        os.scandir(root).close()
    except FileNotFoundError as exc:
        raise LayerUnmeasurable(f"container {container.id[:12]}: its writable layer {root} is not on this "
                                "machine (a daemon in another mount namespace?)") from exc
    except PermissionError as exc:
        raise LayerUnmeasurable(f"container {container.id[:12]}: cannot open its writable layer {root}: "
                                "measuring it needs root") from exc
    total, entries, complete = top, 0, True
    seen: set[tuple[int, int]] = set()
    # Paths, not open iterators, wait on the stack: a deep tree must not hold a descriptor per level.
    stack = [root]
    while stack:
        try:
            listing = os.scandir(stack.pop())
        except FileNotFoundError:  # removed since it was listed: the container writes as we read
            continue
        except OSError:  # a path past PATH_MAX, or one we may not read: what it holds goes uncounted
            complete = False
            continue
        with listing:
            for entry in listing:
                entries += 1
                if entries > max_entries:
                    return LayerUsage(total, max_entries, complete=False)
                try:
                    est = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(est.st_mode):
                    stack.append(entry.path)
                elif est.st_nlink > 1:
                    if (est.st_dev, est.st_ino) in seen:
                        continue
                    seen.add((est.st_dev, est.st_ino))
                total += est.st_blocks * 512
    return LayerUsage(total, entries, complete)
