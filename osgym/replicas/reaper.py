"""What the pool labels its containers with, who owns them, and :func:`reap`, which removes leftovers.

Every container a pool starts carries ``osgym.pool=<name>`` and the owning
process (``osgym.owner``); the reaper touches nothing without the first, and an
orphan is a container whose owner is provably gone from this machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import stat
from pathlib import Path

import docker
import docker.errors

from osgym.errors import ConfigError
from osgym.settings import settings

__all__ = ["POOL_LABEL", "REPLICA_LABEL", "OWNER_LABEL", "RUN_DIR_LABEL", "RUN_LABEL", "LEASE_FILE", "default_run_dir",
           "ensure_private_dir", "owner_id", "owner_alive", "reap"]

POOL_LABEL = "osgym.pool"
REPLICA_LABEL = "osgym.replica"
OWNER_LABEL = "osgym.owner"
"""``<hostname>:<pid>:<process start time>`` of the process that started the replica (for the reaper)."""
RUN_DIR_LABEL = "osgym.run_dir"
RUN_LABEL = "osgym.run"
"""The collection run a pool serves, where it serves one (``osgym pool list`` shows it)."""
LEASE_FILE = "leased"
"""Written in a replica's control directory when the pool leases it (a lease is the replica's last: it is removed
after), so that ``osgym pool list`` tells leased from idle through Docker alone, on any host."""


def default_run_dir() -> Path:
    """Host directory for the replicas' control sockets: $OSGYM_RUN_DIR, else /run/osgym (root) or /tmp."""
    return settings().resolved_run_dir()


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700, with parents), or accept it only if this user owns it and others cannot write it.

    A predictable directory such as /tmp/osgym-<uid> could have been made by another user
    beforehand, who could then replace the replicas' sockets in it; so it is refused
    rather than used.

    Raises:
        ConfigError: if ``path`` is a symlink or not a directory, belongs to another user,
            or is group- or world-writable.
    """
    with contextlib.suppress(FileExistsError):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.mkdir(mode=0o700)
    try:
        st = path.lstat()
    except OSError as exc:
        raise ConfigError(f"run dir {path}: {exc}") from exc
    hint = "remove it, or set OSGYM_RUN_DIR to a directory of your own with mode 0700"
    if not stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"run dir {path} is not a directory (a symlink or file): {hint}")
    if st.st_uid != os.geteuid():
        raise ConfigError(f"run dir {path} belongs to uid {st.st_uid}, not to this user (uid {os.geteuid()}): {hint}")
    if st.st_mode & 0o022:
        raise ConfigError(f"run dir {path} is group- or world-writable (mode {stat.S_IMODE(st.st_mode):04o}): {hint}")
    return path


_POOL_DIR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def _ours(d: Path, base: Path) -> bool:
    """True if ``d`` is a pool directory osgym made: directly inside the run root ``base``, a real
    directory (no symlink) owned by this user and holding the pool's ``owner`` file."""
    try:
        if not _POOL_DIR_NAME.fullmatch(d.name) or d.parent.resolve(strict=True) != base.resolve(strict=True):
            return False
        st = d.lstat()
        return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and (d / "owner").is_file()
    except OSError:
        return False


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

    Run directories are removed only when they are osgym's: directly inside the run root
    ``run_dir`` (default :func:`default_run_dir`), owned by this user, with an ``owner`` file;
    never a directory a container's label merely names.

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
        # A label is whatever its container's creator wrote (anyone who can reach the Docker
        # daemon): its run dir is only a hint, used when it names this pool's directory in the run root.
        hinted = Path(labels.get(RUN_DIR_LABEL) or (base / name))
        if name and hinted.name == name:
            dirs.add(hinted)
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
        if _ours(d, base):
            shutil.rmtree(d, ignore_errors=True)
    return removed
