"""While a root step runs, root may write the agent's home, as root may on Ubuntu.

On Ubuntu ``echo password | sudo -S mkdir ~/Desktop/todo`` makes a root-owned folder in the user's
Desktop: root passes every permission check. A root step here keeps no capability
(:mod:`osgym.replicas.execution`), CAP_DAC_OVERRIDE included (native replicas do not even hold it), so
the user's 0755 folders would refuse it. For the step's duration each folder and regular file of
``/home/user`` that belongs to `user` and has no ACL of its own gets one more POSIX ACL entry, for uid 0
(``rwx`` on folders and executables, ``rw-`` on other files); after the step the entries go and the
modes are what they were. The home is a tmpfs, which keeps ACLs.

Both passes run as `user` (``docker exec --user 1000``), through Docker from the worker: they can do only
what the agent's own account can, so nothing here is a way for `user` to reach root; and the ACL entries
name uid 0, which only root steps (and, in compatibility mode, the agent's own ``sudo``) hold.

What a step can still tell: while it runs, the granted entries' group bits show the ACL mask
(``drwxrwxr-x+`` for a 0755 folder); the changes bump the entries' ctime.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import ReplicaUnreachable
from osgym.replicas.accounts import AGENT_GID, AGENT_HOME, AGENT_UID

__all__ = ["MAX_HOME_ENTRIES", "home_granted", "pass_argv"]

log = logging.getLogger(__name__)

MAX_HOME_ENTRIES = 200_000
"""A pass stops past this many entries of the home (an apps replica's fresh home holds a few thousand)."""
PASS_TIMEOUT_S = 30
"""A pass ends by then (timeout(1) in the replica), inside docker-py's own 60 s read timeout."""

_PASS = r"""
import json, os, stat, struct, sys
home, limit, grant = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "grant"
XATTR, NONE = "system.posix_acl_access", 0xFFFFFFFF
USER_OBJ, USER, GROUP_OBJ, MASK, OTHER = 0x01, 0x02, 0x04, 0x10, 0x20
def pack(entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
def paths():
    yield home
    for top, dirs, files in os.walk(home):
        for name in dirs + files:
            yield os.path.join(top, name)
seen = changed = failed = 0
for path in paths():
    seen += 1
    if seen > limit:
        print(json.dumps({"seen": seen, "changed": changed, "failed": failed, "stopped": True}))
        sys.exit(3)
    try:
        st = os.lstat(path)
        if st.st_uid != os.getuid() or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            continue
        try:
            raw = os.getxattr(path, XATTR, follow_symlinks=False)
        except OSError:
            raw = None
        m = st.st_mode
        if grant:
            if raw is not None:
                continue
            u, g, o = (m >> 6) & 7, (m >> 3) & 7, m & 7
            r = 7 if stat.S_ISDIR(m) or m & 0o111 else 6
            os.setxattr(path, XATTR, pack([(USER_OBJ, u, NONE), (USER, r, 0), (GROUP_OBJ, g, NONE),
                                          (MASK, r | g, NONE), (OTHER, o, NONE)]), follow_symlinks=False)
        else:
            if raw is None or len(raw) != 4 + 5 * 8:
                continue
            es = [struct.unpack_from("<HHI", raw, 4 + 8 * k) for k in range(5)]
            if [e[0] for e in es] != [USER_OBJ, USER, GROUP_OBJ, MASK, OTHER] or es[1][2] != 0:
                continue
            os.removexattr(path, XATTR, follow_symlinks=False)
            os.chmod(path, (m & 0o7000) | es[0][1] << 6 | es[2][1] << 3 | es[4][1])
        changed += 1
    except OSError:
        failed += 1
print(json.dumps({"seen": seen, "changed": changed, "failed": failed, "stopped": False}))
"""


def pass_argv(which: str, home: str = AGENT_HOME, limit: int = MAX_HOME_ENTRIES) -> list[str]:
    """The argv of one pass over ``home`` (``which``: ``grant`` or ``revoke``), run as the home's owner. It
    prints a JSON summary (``seen``, ``changed``, ``failed``, ``stopped``) and exits 3 past ``limit`` entries."""
    if which not in ("grant", "revoke"):
        raise ValueError(f"which: expected 'grant' or 'revoke', actual {which!r}")
    return ["python3", "-I", "-c", _PASS, home, str(limit), which]


def _pass(container: Any, replica_id: str, which: str) -> None:
    argv = ["timeout", "--kill-after=2", str(PASS_TIMEOUT_S), *pass_argv(which)]
    api = container.client.api
    try:
        eid = api.exec_create(container.id, argv, user=f"{AGENT_UID}:{AGENT_GID}", workdir="/",
                              environment={"LC_ALL": "C.UTF-8"})["Id"]
        out = api.exec_start(eid, demux=True)
        code = api.exec_inspect(eid)["ExitCode"]
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ReplicaUnreachable(f"replica {replica_id}: the home's {which} pass for a root step failed in "
                                 f"Docker: {exc}") from exc
    stdout, stderr = ((out[0] or b""), (out[1] or b"")) if isinstance(out, tuple) else (out or b"", b"")
    try:
        summary = json.loads(stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        summary = None
    if code != 0 or summary is None or summary.get("failed"):
        log.warning("replica %s: the home's %s pass for a root step exited %s: %s %s", replica_id, which, code,
                    summary, stderr.decode("utf-8", "replace")[-300:])
    else:
        log.debug("replica %s: the home's %s pass: %s", replica_id, which, summary)


@contextmanager
def home_granted(container: Any, replica_id: str) -> Iterator[None]:
    """Let uid 0 write the agent's home inside the block (module docstring); a pass that fails is logged, and
    the root step then meets the home's own permissions.

    Raises:
        ReplicaUnreachable: if Docker fails.
    """
    _pass(container, replica_id, "grant")
    try:
        yield
    finally:
        _pass(container, replica_id, "revoke")
