"""Who runs what inside a replica: the control server as `osgym`, everything of the desktop as `user`.

The agent acts as `user` (uid 1000). If the control server ran as that uid too, the
agent could signal or ptrace it, read its token from /proc, or replace its socket.
So the container starts as root, and :func:`drop_to_server` switches to the system
user `osgym` at once, keeping exactly two capabilities, CAP_SETUID and CAP_SETGID:

- to start the desktop session, the agent's commands, the AT-SPI reader and the
  recorder as `user` (``subprocess.Popen(**AS_USER)``), and
- to touch files on the agent's behalf with the agent's own permissions and
  ownership (:func:`fs_as_user`: the calling thread's filesystem uid, nothing else).

Processes started as `user` get no capability at all (a non-root execve without
file capabilities or ambient capabilities clears them, and the pool sets
no-new-privileges, so set-uid programs such as sudo do not elevate either).
"""

import contextlib
import errno
import ctypes
import os
import pwd

USER = pwd.getpwnam("user")
SERVER = pwd.getpwnam("osgym")
AGENT_UID, AGENT_GID = USER.pw_uid, USER.pw_gid
SERVER_UID, SERVER_GID = SERVER.pw_uid, SERVER.pw_gid

AS_USER = {"user": AGENT_UID, "group": AGENT_GID, "extra_groups": []}
"""Keyword arguments of ``subprocess.Popen`` that start a process as `user` with only its own group."""

CAP_SETGID, CAP_SETUID, CAP_SETPCAP = 6, 7, 8
_KEPT = (1 << CAP_SETGID) | (1 << CAP_SETUID)
_PR_SET_KEEPCAPS = 8
_PR_CAPBSET_DROP = 24
_PR_SET_DUMPABLE = 4
_CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL("libc.so.6", use_errno=True)  # glibc (Debian): capget/capset, prctl, setfsuid


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def capabilities():
    """(effective, permitted, inheritable) of the calling thread, as 64-bit masks."""
    hdr, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    _check(_libc.capget(ctypes.byref(hdr), data), "capget")
    return tuple(getattr(data[0], f) | getattr(data[1], f) << 32 for f in ("effective", "permitted", "inheritable"))


def drop_to_server():
    """Become `osgym` with CAP_SETUID and CAP_SETGID only (effective and permitted; nothing inheritable).

    Must run as root, before any thread starts (capabilities and credentials are per thread;
    threads started later inherit these).

    Raises:
        SystemExit: if not started as root, or the capabilities cannot be kept.
    """
    if os.getuid() != 0:
        raise SystemExit(f"the control server must start as root to drop to `osgym` (uid {SERVER_UID}); "
                         f"running as uid {os.getuid()}: do not pass a user to the container")
    if os.environ.get("OSGYM_COMPAT") != "1":
        # Native replicas hold CAP_SETPCAP only so that the host's root steps can empty their own bounding set
        # (osgym.replicas.execution); the server and everything it starts never need it.
        try:
            _check(_libc.prctl(_PR_CAPBSET_DROP, CAP_SETPCAP, 0, 0, 0), "prctl(PR_CAPBSET_DROP)")
        except OSError as exc:
            if exc.errno != errno.EPERM:  # EPERM: the container has no SETPCAP to drop
                raise
    _check(_libc.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    os.setgroups([SERVER_GID])
    os.setresgid(SERVER_GID, SERVER_GID, SERVER_GID)
    os.setresuid(SERVER_UID, SERVER_UID, SERVER_UID)
    hdr = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = _KEPT
    try:
        _check(_libc.capset(ctypes.byref(hdr), data), "capset")
    except OSError as exc:
        raise SystemExit(f"cannot keep CAP_SETUID and CAP_SETGID ({exc}): start the replica with "
                         "cap_add=['SETUID', 'SETGID']") from None
    _check(_libc.prctl(_PR_SET_KEEPCAPS, 0, 0, 0, 0), "prctl(PR_SET_KEEPCAPS)")
    # Not dumpable: even a process that becomes `osgym` (a compatibility replica's root) cannot ptrace
    # the server or read its memory and environment through /proc.
    _check(_libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")


def add_group(gid):
    """Add a supplementary group to the server (the group of a run directory shared with a non-root host)."""
    groups = os.getgroups()
    if gid not in groups and gid != 0:
        os.setgroups([*groups, gid])


_setfsuid, _setfsgid = _libc.setfsuid, _libc.setfsgid


@contextlib.contextmanager
def fs_as_user():
    """Within the block, this thread opens, creates and lists files as `user` would, and nothing else changes.

    The filesystem uid and gid are per thread and are not what signals or ptrace check,
    so the agent gains no hold on the server meanwhile. Files created are owned by `user`.
    """
    prev_uid = _setfsuid(AGENT_UID)
    prev_gid = _setfsgid(AGENT_GID)
    # setfsuid reports no error; a second call returns the value now in force.
    if _setfsuid(AGENT_UID) != AGENT_UID or _setfsgid(AGENT_GID) != AGENT_GID:
        _setfsuid(prev_uid)
        _setfsgid(prev_gid)
        raise PermissionError("cannot act as `user` on files (CAP_SETUID missing?)")
    try:
        yield
    finally:
        _setfsgid(prev_gid)
        _setfsuid(prev_uid)


@contextlib.contextmanager
def fs_as_server():
    """Within a :func:`fs_as_user` block, this thread opens files as the server again (its own
    directories, such as the asset cache mounted at /run/osgym/assets, which `user` cannot enter)."""
    prev_uid = _setfsuid(SERVER_UID)
    prev_gid = _setfsgid(SERVER_GID)
    try:
        yield
    finally:
        _setfsgid(prev_gid)
        _setfsuid(prev_uid)
