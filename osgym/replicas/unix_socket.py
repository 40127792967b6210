"""Connecting to a socket in a replica's run directory without following what the replica put there.

A replica's run directory is a host directory that is bind-mounted into the container, and the
replica's control server (uid :data:`SERVER_UID`) may write in it: it binds ``control.sock`` and the
live view's ``vnc.sock`` there. Whatever runs as that uid inside the replica can therefore replace
either name with a symlink to any host path (``/var/run/docker.sock``, another replica's socket). A
plain ``connect(path)`` on the host follows that link, so the host would speak to whatever it names.

:func:`connect_unix` never resolves the name through the file system: the directory and then the name
are opened with ``O_PATH | O_NOFOLLOW``, the file must be a socket owned by the replica's server, and
the connection is made through ``/proc/self/fd/N``, which names that very inode. A symlink, a
regular file, a FIFO or a socket of another owner is refused before a byte is sent. The short
``/proc`` path also keeps within AF_UNIX's 108 bytes however long the run directory's path is.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat

from osgym.errors import ReplicaUnreachable
from osgym.replicas.accounts import SERVER_UID

__all__ = ["SERVER_UID", "UnsafeSocket", "connect_unix", "check_socket"]


class UnsafeSocket(ReplicaUnreachable):
    """Raised when a replica's socket name holds something other than a socket of the replica's server."""


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(mode):
            return name
    return "not a socket"


def check_socket(fd: int, name: str, owner: int | None) -> None:
    """Refuse the file open at ``fd`` (``O_PATH``) unless it is a socket owned by ``owner`` (any owner if None).

    Raises:
        UnsafeSocket: naming what was found instead.
    """
    st = os.fstat(fd)
    if not stat.S_ISSOCK(st.st_mode):
        raise UnsafeSocket(f"{name}: expected the replica's socket, actual {_kind(st.st_mode)}; not connecting")
    if owner is not None and st.st_uid != owner:
        raise UnsafeSocket(f"{name}: expected a socket of uid {owner} (the replica's server), actual uid "
                           f"{st.st_uid}; not connecting")


def connect_unix(path: str, *, owner: int | None, timeout: float | None) -> socket.socket:
    """A stream socket connected to the Unix socket at ``path``, never through a symlink.

    Args:
        path: the socket's path; its directory is opened without following a final symlink, and
            the socket's own name is never followed.
        owner: the uid the socket must belong to; None accepts any owner (a socket of a test).
        timeout: the connect's timeout, in seconds, and the socket's afterwards.

    Raises:
        UnsafeSocket: if the name holds a symlink, a file that is not a socket, or a socket of another owner.
        OSError: if the directory or the socket is missing or the connection is refused.
    """
    directory, _, name = path.rpartition("/")
    dir_fd = os.open(directory or "/", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fd = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
    finally:
        os.close(dir_fd)
    try:
        check_socket(fd, path, owner)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(timeout)
            sock.connect(f"/proc/self/fd/{fd}")
        except BaseException:
            with contextlib.suppress(OSError):
                sock.close()
            raise
        return sock
    finally:
        os.close(fd)
