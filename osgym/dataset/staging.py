"""Local staging directories for the shards a backend uploads whole (S3), and reclaiming a dead writer's.

A writer of such a store builds its open shard in a private temporary directory
(``$TMPDIR/osgym-shards-*``) and uploads it whole when it commits. A writer that ends removes
the directory; a writer that is killed (SIGKILL, the OOM killer, a power cut) cannot, and its
open shard's files would stay there for good. So each directory names its process in an
``owner`` file (host, pid and start time: :func:`osgym.replicas.reaper.owner_id`, which the
replica reaper uses too), and every new writer removes the directories of processes that are
provably gone (:func:`reclaim_orphans`). What they held was never committed: a resumed run
collects those episodes again.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from osgym.replicas.reaper import owner_alive, owner_id

__all__ = ["PREFIX", "reclaim_orphans", "staging_dir"]

log = logging.getLogger(__name__)

PREFIX = "osgym-shards-"
OWNER_FILE = "owner"


def staging_dir() -> tempfile.TemporaryDirectory[str]:
    """A new private (0700) staging directory in the temporary directory, naming this process as its owner.

    Raises:
        OSError: if it cannot be created (the temporary directory is full or not writable).
    """
    directory = tempfile.TemporaryDirectory(prefix=PREFIX)
    try:
        (Path(directory.name) / OWNER_FILE).write_text(owner_id())
    except OSError:
        directory.cleanup()
        raise
    return directory


def reclaim_orphans(root: Path | None = None) -> list[Path]:
    """Remove the staging directories in ``root`` (default: the temporary directory) of writers that are gone.

    Only this user's own private directories with an ``owner`` file are touched, and only when the owner
    is provably gone from this machine: a live writer's directory, another user's, one on a shared
    ``/tmp`` made on another host, or one from before owners were recorded stays. Returns what was removed.
    """
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        candidates = list(base.glob(PREFIX + "*"))
    except OSError:
        return removed
    for d in candidates:
        try:
            st = d.lstat()
            # anyone can make a directory of this name in /tmp: never act on another user's, or on a symlink
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
                continue
            owner = (d / OWNER_FILE).read_text()
        except OSError:
            continue
        if owner_alive(owner) is False:
            shutil.rmtree(d, ignore_errors=True)
            log.info("removed the staging directory %s of a writer that is gone (%s)", d, owner)
            removed.append(d)
    return removed
