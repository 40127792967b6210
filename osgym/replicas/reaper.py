"""What the pool labels its containers with, who owns them, and :func:`reap`, which removes leftovers.

Every container a pool starts carries ``osgym.pool=<name>`` and the owning
process (``osgym.owner``); the reaper touches nothing without the first, and an
orphan is a container whose owner is provably gone from this machine.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
from pathlib import Path

import docker
import docker.errors

from osgym.settings import settings

__all__ = ["POOL_LABEL", "REPLICA_LABEL", "OWNER_LABEL", "RUN_DIR_LABEL", "default_run_dir", "owner_id",
           "owner_alive", "reap"]

POOL_LABEL = "osgym.pool"
REPLICA_LABEL = "osgym.replica"
OWNER_LABEL = "osgym.owner"
"""``<hostname>:<pid>:<process start time>`` of the process that started the replica (for the reaper)."""
RUN_DIR_LABEL = "osgym.run_dir"


def default_run_dir() -> Path:
    """Host directory for the replicas' control sockets: $OSGYM_RUN_DIR, else /run/osgym (root) or /tmp."""
    return settings().resolved_run_dir()


def _proc_start(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def owner_id() -> str:
    """This process as the reaper identifies it: hostname, pid and start time."""
    return f"{socket.gethostname()}:{os.getpid()}:{_proc_start(os.getpid())}"


def owner_alive(owner: str | None) -> bool | None:
    """True if the owning process runs, False if it is gone, None if it is on another machine.

    >>> owner_alive(owner_id())
    True
    >>> owner_alive(f"{socket.gethostname()}:999999999:1")
    False
    """
    if not owner:
        return False
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname():
        return None
    try:
        return _proc_start(int(pid)) == start
    except ValueError:
        return False


def reap(
    client: docker.DockerClient | None = None,
    pool: str | None = None,
    run_dir: Path | None = None,
    *,
    all_owners: bool = False,
) -> int:
    """Remove what interrupted runs left: labelled containers, networks and run directories.

    Touches nothing without osgym's ``osgym.pool`` label. With ``pool``, removes
    that pool's containers whoever started them. Without it, removes only
    orphans: containers whose owning process (``osgym.owner`` label) is gone
    from this machine, so a pool another process is using on a shared host
    survives; ``all_owners`` removes every osgym container on the host
    (including ones without an owner label, from older osgym versions).

    Returns the number of containers removed.
    """
    client = client or docker.from_env()
    label = f"{POOL_LABEL}={pool}" if pool else POOL_LABEL
    base = run_dir or default_run_dir()
    removed = 0
    dirs: set[Path] = set()
    for c in client.api.containers(all=True, filters={"label": label}):
        labels = c.get("Labels") or {}
        owner = labels.get(OWNER_LABEL)
        if pool is None and not all_owners and (not owner or owner_alive(owner) is not False):
            continue  # a live owner, one on another machine, or none recorded: not provably orphaned
        name = labels.get(POOL_LABEL, "")
        if labels.get(RUN_DIR_LABEL):
            dirs.add(Path(labels[RUN_DIR_LABEL]))
        elif name:
            dirs.add(base / name)
        with contextlib.suppress(docker.errors.NotFound):
            try:
                client.api.remove_container(c["Id"], force=True)
                removed += 1
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    raise
    for net in client.api.networks(filters={"label": label}):
        with contextlib.suppress(docker.errors.APIError):
            client.api.remove_network(net["Id"])
    if pool:
        dirs.add(base / pool)
    elif base.is_dir():  # run dirs of pools whose owner is gone (their containers may already be removed)
        for d in base.iterdir():
            owner = d / "owner"
            if d.is_dir() and (all_owners or (owner.exists() and owner_alive(owner.read_text()) is False)):
                dirs.add(d)
    for d in dirs:
        if d.name and d.name not in (".", "..") and not d.is_symlink():
            shutil.rmtree(d, ignore_errors=True)
    return removed
