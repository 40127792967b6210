"""Commands run inside a replica: their result, and the root steps that the host runs through Docker.

A task step that uses ``sudo`` (OSWorld's ``echo password | sudo -S ...``) runs as root through
``docker exec --user root``, since the agent's account has no sudo. The command comes from a task
file, which is untrusted, so a root step is bounded on the host's side as well as the replica's:

* **Time.** The step's ``timeout`` is clamped to :data:`MAX_ROOT_STEP_S`; ``timeout(1)`` in the
  replica ends the command then (SIGKILL two seconds later), and the host stops waiting a few
  seconds after that whatever the replica does (a process that detached and kept the output open).
* **Output.** The output is streamed and kept up to :data:`MAX_ROOT_OUTPUT` bytes per stream; past
  that the host stops reading and the step fails. Reading it whole first (``demux`` without a
  stream) let ``sudo cat /dev/zero`` grow the worker until the kernel killed it.
* **Privilege.** In a native replica the command runs with an empty bounding set (``setpriv``, with
  the container's CAP_SETPCAP), so it keeps no capability: it is uid 0, owns root's files, and cannot
  become the replica's server (uid 990), whose run directory is shared with the host, nor the agent.
  ``sudo -u`` therefore fails in a root step. (Dropping bounding capabilities needs CAP_SETPCAP; without
  it ``setpriv`` silently leaves them, so native replicas keep SETPCAP for this.)
* **Disk.** The agent's account writes only to capped tmpfs mounts, but root owns most of the image's
  files, and what a root step writes lands on the container's writable layer, which nothing bounds on
  overlay2 over ext4. So a root step writes no file past :data:`MAX_ROOT_FILE` (``RLIMIT_FSIZE``), and
  after it the layer is measured (:mod:`osgym.replicas.disk`): past :data:`MAX_ROOT_LAYER` the step fails
  with :class:`~osgym.errors.SetupError`, the episode ends and the replica is removed with its layer.

What ``sudo`` means inside a step is Ubuntu's, as far as the step's shell can tell. The whole command runs
as root (the agent's account has no sudo, and no channel from `user` to root exists), but its shell sees
the user's ``HOME``, ``USER`` and ``LOGNAME`` (``/home/user``, ``user``), as shell variables, and starts in
``/home/user``: ``~``, ``$HOME`` and ``$USER`` expand as the user's shell expands them on Ubuntu, and a
``sudo`` there (the shim in ``/opt/osgym/rootbin``) runs its command with ``HOME=/root``, ``USER=root``,
as Ubuntu's sudo does. The variables are not exported, so the programs of the step's other parts, which
run as root too, find root's home (``/root``) through the password database and never read the agent's
dotfiles; they do get the session's ``DISPLAY`` and ``XAUTHORITY``, as Ubuntu's ``sudo`` keeps them. While a step
runs, root may also write the agent's home, as it may on Ubuntu
(:mod:`osgym.replicas.home_grant`). What a task can still tell apart is in docs/osworld.md.
"""

from __future__ import annotations

import logging
import shlex
import threading
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import ReplicaUnreachable, SetupError
from osgym.replicas.accounts import AGENT_DISPLAY, AGENT_HOME, AGENT_XAUTHORITY
from osgym.replicas.disk import LayerUnmeasurable, writable_layer_usage
from osgym.replicas.home_grant import home_granted

__all__ = ["MAX_ROOT_FILE", "MAX_ROOT_LAYER", "MAX_ROOT_OUTPUT", "MAX_ROOT_STEP_S", "ROOT_PATH", "ExecResult",
           "launch_as_root", "run_as_root"]

log = logging.getLogger(__name__)

ROOT_PATH = "/opt/osgym/rootbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH of root steps: the ``sudo`` shim first, then the user's PATH."""
ROOT_ENV = {"PATH": ROOT_PATH, "DISPLAY": AGENT_DISPLAY, "XAUTHORITY": AGENT_XAUTHORITY}
"""A root step's environment: the user's shell exports its display and X cookie, and Ubuntu's ``sudo`` keeps both
(its default ``env_keep``), so ``sudo apt install xsel && xsel -bc`` reaches the user's clipboard (the cookie is
readable during the step through :mod:`osgym.replicas.home_grant`)."""
MAX_ROOT_OUTPUT = 16 * 2**20
"""Output kept per stream (stdout, stderr) of a root step; past it the step fails."""
MAX_ROOT_STEP_S = 600.0
"""The longest a root step may run, whatever its task file says (OSWorld's installs take seconds offline)."""
GRACE_S = 10.0
"""How long the host waits past a root step's timeout (timeout's SIGKILL comes 2 s after it)."""
MAX_ROOT_FILE = 512 * 2**20
"""The largest file a root step may write (an OSWorld install writes a few MiB)."""
MAX_ROOT_LAYER = 1024 * 2**20
"""The most a replica's writable layer may hold after a root step."""
CONFINED = ["setpriv", "--bounding-set=-all", "--inh-caps=-all", "--", "prlimit", f"--fsize={MAX_ROOT_FILE}", "--"]


@dataclass(frozen=True)
class ExecResult:
    """Outcome of a command run inside the replica."""

    status: str
    output: str
    error: str
    returncode: int


USER_SHELL = f"HOME={AGENT_HOME} USER=user LOGNAME=user; "
"""What a root step's shell runs first: the user's variables, unexported (module docstring)."""
UNEXPORTED = ["env", "-u", "HOME", "-u", "USER", "-u", "LOGNAME"]
"""A root step's programs get no HOME, USER or LOGNAME (Docker would pass the image's ``HOME=/home/user``)."""


def _argv_home(argv: list[str]) -> list[str]:
    return [AGENT_HOME + a[1:] if a.startswith("~/") else a for a in argv]


def root_argv(command: str | list[str], shell: bool | None) -> list[str]:
    """The argv of a root step's command: ``command`` and ``shell`` mean what they mean for ``/execute``; a
    shell sets the user's variables first, and argv items that start with ``~/`` name the user's home (as
    OSWorld's server expands them).

    >>> root_argv("echo hi", None)
    ['/bin/sh', '-c', 'HOME=/home/user USER=user LOGNAME=user; echo hi']
    >>> root_argv(["sudo", "mkdir", "~/x"], None), root_argv(["a b", "c"], True)[2]
    (['sudo', 'mkdir', '/home/user/x'], "HOME=/home/user USER=user LOGNAME=user; 'a b' c")
    """
    if isinstance(command, str):
        return ["/bin/sh", "-c", USER_SHELL + command] if shell is not False else _argv_home(shlex.split(command))
    return ["/bin/sh", "-c", USER_SHELL + " ".join(map(shlex.quote, command))] if shell else _argv_home(command)


class _Collector(threading.Thread):
    """Reads a root step's streamed output, keeping at most ``cap`` bytes per stream."""

    def __init__(self, stream: Any, cap: int) -> None:
        super().__init__(name="osgym-root-step", daemon=True)
        self.stream = stream
        self.cap = cap
        self.out = bytearray()
        self.err = bytearray()
        self.overflow = False
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            for out, err in self.stream:
                for buf, chunk in ((self.out, out), (self.err, err)):
                    if chunk:
                        room = self.cap - len(buf)
                        buf += chunk[:room]
                        self.overflow = self.overflow or len(chunk) > room
                if self.overflow:
                    return
        except BaseException as exc:  # the stream closed under us (deadline, overflow) or Docker failed
            self.failure = exc


def run_as_root(container: Any, replica_id: str, command: str | list[str], *, shell: bool | None = None,
                timeout: float = 60, cap: int = MAX_ROOT_OUTPUT, confine: bool = True) -> ExecResult:
    """Run a task step's command as root in ``container`` (``docker exec --user root``), bounded as the
    module says; with ``confine``, without any capability.

    Returns:
        The result; ``status`` is ``timeout`` past the (clamped) timeout and ``error`` when the output
        passed ``cap`` (the kept part is returned, and the message says so).

    Raises:
        ReplicaUnreachable: if Docker fails.
    """
    limit = min(max(float(timeout), 1.0), MAX_ROOT_STEP_S)
    argv = [*(CONFINED if confine else []), *UNEXPORTED, "timeout", "--kill-after=2", f"{limit:g}",
            *root_argv(command, shell)]
    # confined root passes no permission check of the agent's home without the grant; unconfined root needs none
    with home_granted(container, replica_id) if confine else nullcontext():
        return _run(container, replica_id, argv, limit, cap, confine)


def _run(container: Any, replica_id: str, argv: list[str], limit: float, cap: int, confine: bool) -> ExecResult:
    api = container.client.api
    try:
        eid = api.exec_create(container.id, argv, user="root", workdir=AGENT_HOME, environment=ROOT_ENV)["Id"]
        stream = api.exec_start(eid, stream=True, demux=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ReplicaUnreachable(f"replica {replica_id}: root step failed in Docker: {exc}") from exc
    reader = _Collector(stream, cap)
    reader.start()
    reader.join(limit + GRACE_S)
    late = reader.is_alive()
    if late or reader.overflow:
        stream.close()  # stop reading; the command ends by its timeout in the replica
        reader.join(5)
    out = bytes(reader.out).decode("utf-8", "replace")
    err = bytes(reader.err).decode("utf-8", "replace")
    if reader.overflow:
        return ExecResult("error", out, f"{err}\nosgym: the root step's output passed {cap} bytes; it was stopped",
                          -1)
    if late:
        return ExecResult("timeout", out, f"{err}\nosgym: the root step ran past {limit:g} s", -1)
    if reader.failure is not None:
        raise ReplicaUnreachable(f"replica {replica_id}: root step's output failed in Docker: {reader.failure}") \
            from reader.failure
    try:
        code = api.exec_inspect(eid)["ExitCode"]
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ReplicaUnreachable(f"replica {replica_id}: root step failed in Docker: {exc}") from exc
    if confine:
        _check_layer(container, replica_id)
    status = "timeout" if code in (124, 137) else "success" if code == 0 else "error"
    return ExecResult(status, out, err, int(code or 0))


def _check_layer(container: Any, replica_id: str, bound: int = MAX_ROOT_LAYER) -> None:
    """Fail the step if the replica's writable layer holds more than ``bound`` bytes after it.

    Raises:
        SetupError: past the bound, or when the layer has too many files to measure.
    """
    try:
        usage = writable_layer_usage(container)
    except LayerUnmeasurable as exc:  # not root, or not overlay2 here: the file-size limit still holds
        log.debug("replica %s: root step's layer not measured: %s", replica_id, exc)
        return
    if usage.bytes > bound or not usage.complete:
        held = f"more than {usage.bytes >> 20} MiB" if not usage.complete else f"{usage.bytes >> 20} MiB"
        raise SetupError(f"replica {replica_id}: after a root step its writable layer holds {held} "
                         f"({usage.entries} entries), past the {bound >> 20} MiB a task may write there")


def launch_as_root(container: Any, replica_id: str, command: str | list[str], *, shell: bool | None = None,
                   confine: bool = True) -> None:
    """Start a task step's command as root in ``container`` and return at once (a ``launch`` step with ``sudo``);
    with ``confine``, without any capability.

    Raises:
        ReplicaUnreachable: if Docker fails.
    """
    api = container.client.api
    try:
        eid = api.exec_create(container.id, [*(CONFINED if confine else []), *UNEXPORTED, *root_argv(command, shell)],
                              user="root", workdir=AGENT_HOME, environment=ROOT_ENV)["Id"]
        api.exec_start(eid, detach=True)
    except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
        raise ReplicaUnreachable(f"replica {replica_id}: root launch failed in Docker: {exc}") from exc
