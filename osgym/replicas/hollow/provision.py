"""Starting and stopping hollow replicas: the one process that serves them, and the pool's provisioner.

:class:`HollowProvisioner` is the pool's :class:`~osgym.replicas.provision.Provisioner` with the start and
the removal of a replica replaced: a start asks the pool's :class:`HollowHost` (the process of
:mod:`osgym.replicas.hollow.server`) to serve a new replica on a socket in its run directory, with a new
token, then waits until ``/health`` answers and a screenshot is non-empty through the real client, as for a
container; a removal asks it to stop. Slots, retries, placement, the registry, the lease queue, the health
checks and the events are the pool's own code, unchanged.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO, Any

import osgym
from osgym.errors import ConfigError, PoolError, ReplicaError, ReplicaStartTimeout, ReplicaUnreachable
from osgym.replicas.client import Replica
from osgym.replicas.hollow import HOLLOW
from osgym.replicas.hollow.server import raise_fd_limit
from osgym.replicas.hosts import DockerHost
from osgym.replicas.provision import Provisioner
from osgym.replicas.reaper import ensure_private_dir
from osgym.replicas.spec import ReplicaSpec

__all__ = ["FDS_PER_REPLICA", "HollowHost", "HollowProvisioner", "hollow_hosts"]

FDS_PER_REPLICA = 3
"""Open files a hollow replica costs in the pool's process and in the server's, at most: a listening socket or a
client connection, a connection being replaced, the socket's O_PATH handle while it connects."""
FD_RESERVE = 512
"""Open files kept for everything else of a process (Prefect's client, the writer's files, the store)."""
COMMAND_TIMEOUT_S = 30.0


def hollow_capacity() -> int:
    """How many hollow replicas this process's open-file limit leaves room for (raised to its hard limit first)."""
    return max(0, (raise_fd_limit() - FD_RESERVE) // FDS_PER_REPLICA)


def hollow_hosts(host_name: str, *, hosts: Any, docker_client: Any, compat: bool, egress: bool,
                 transport: str) -> list[DockerHost]:
    """The one pseudo-host of a hollow pool, its capacity bounded by the open-file limit.

    Raises:
        ConfigError: if the pool is also given Docker hosts, compatibility mode, egress or the TCP transport:
            hollow replicas have none of them.
    """
    given = [name for name, on in (("hosts", hosts is not None), ("docker_client", docker_client is not None),
                                   ("compat", compat), ("egress", egress), ("transport=tcp", transport != "unix"))
             if on]
    if given:
        raise ConfigError(f"kind={HOLLOW!r}: hollow replicas are served by a process on this machine over Unix "
                          f"sockets, without Docker, a network or OSWorld's routes; remove {', '.join(given)}")
    return [DockerHost(url=f"{HOLLOW}://{host_name}", name=host_name, capacity=hollow_capacity())]


class HollowHost:
    """The process that serves one pool's hollow replicas (:mod:`osgym.replicas.hollow.server`).

    Commands go one at a time over its standard input; its error output goes to ``log``.
    """

    def __init__(self, log: str):
        self.log = log
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the process, once.

        Raises:
            PoolError: if it does not answer.
        """
        if self._proc is not None:
            return
        root = str(Path(osgym.__file__).resolve().parent.parent)  # this osgym, whatever the child's path says
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        with open(self.log, "ab") as err:
            self._proc = subprocess.Popen([sys.executable, "-m", "osgym.replicas.hollow.server"], env=env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, cwd="/")
        try:
            self.call({"op": "ping"})
        except ReplicaError as exc:
            self.stop()
            raise PoolError(f"the hollow server did not start: {exc}") from exc

    def call(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Send one command and read its answer.

        Raises:
            ReplicaUnreachable: if the process is gone, or refused the command.
        """
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise ReplicaUnreachable("the hollow server is not running")
        with self._lock:
            try:
                proc.stdin.write(json.dumps(msg).encode() + b"\n")
                proc.stdin.flush()
                line = _readline(proc.stdout, COMMAND_TIMEOUT_S)
            except (OSError, ValueError) as exc:
                raise ReplicaUnreachable(f"the hollow server is gone ({exc}); its log: {self.log}") from exc
        if not line:
            raise ReplicaUnreachable(f"the hollow server exited ({proc.poll()}); its log: {self.log}")
        answer: dict[str, Any] = json.loads(line)
        if not answer.get("ok"):
            raise ReplicaUnreachable(f"the hollow server refused {msg.get('op')}: {answer.get('error')}")
        return answer

    def stop(self) -> None:
        """Stop the process (it stops when its input closes) and wait for it. Idempotent."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        with self._lock:
            if proc.stdin is not None:
                try:
                    proc.stdin.close()
                except OSError:
                    pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _readline(stream: IO[bytes], timeout: float) -> bytes:
    """A line from ``stream`` (b"" at its end), or ValueError after ``timeout`` seconds."""
    import select

    if not select.select([stream], [], [], timeout)[0]:
        raise ValueError(f"no answer within {timeout:g} s")
    return stream.readline()


class HollowProvisioner(Provisioner):
    """The pool's provisioner for hollow replicas: the same slots, retries and bookkeeping, with each replica a
    socket of the pool's :class:`HollowHost` instead of a container."""

    def __init__(self, spec: ReplicaSpec, **kw: Any):
        super().__init__(spec, **kw)
        self.server = HollowHost(str(spec.run_dir / "hollow-server.log"))  # removed with the run directory

    def mark_leased(self, replica: Replica) -> None:
        """Nothing to mark: ``osgym pool list`` reads containers, and a hollow replica has none."""

    def prepare(self) -> dict[str, Any]:
        """Make the run directory private and start the hollow server; hollow replicas have no network.

        Raises:
            ConfigError: if the run directory belongs to another user or others may write it, or the open-file
                limit leaves no room for the pool's replicas.
            PoolError: if the hollow server does not start.
        """
        room = hollow_capacity()
        if room < self.target:
            raise ConfigError(f"{self.target} hollow replicas need about {self.target * FDS_PER_REPLICA + FD_RESERVE} "
                              f"open files, and this process may open {room * FDS_PER_REPLICA + FD_RESERVE}: raise "
                              "its hard limit (ulimit -Hn, LimitNOFILE= for a service)")
        ensure_private_dir(self.spec.run_dir.parent)
        ensure_private_dir(self.spec.run_dir)
        self.server.start()
        return {}

    def start_one(self, host: DockerHost) -> Replica:
        """Have the hollow server serve one more replica, wait until it is ready, and queue it for leasing.

        Raises:
            ReplicaStartTimeout: if it is not ready within the pool's ``start_timeout``.
            ReplicaUnreachable: if the hollow server is gone or refuses it.
        """
        spec = self.spec
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        t0 = time.monotonic()
        rdir = spec.run_dir / rid
        sock = rdir / "control.sock"
        replica: Replica | None = None
        try:
            rdir.mkdir(mode=0o700)
            self.server.call({"op": "add", "id": rid, "path": str(sock), "token": token, "screen": list(spec.screen)})
            t_start = time.monotonic()
            replica = Replica(rid, f"unix:{sock}", token, host=host.name, timeouts=spec.timeouts,
                              socket_owner=os.geteuid())
            with self.registry.lock:
                self.registry.add(replica, host)
                self.stats.started += 1
            self.recorder.replica(replica, "created")
            t_health, t_shot = self._wait_ready(replica, t0)
        except Exception as exc:
            self._start_failed(host, rid, None, replica, None, rdir, exc)
            self._forget(rid)
            if isinstance(exc, ReplicaError):
                raise
            raise ReplicaUnreachable(f"hollow replica {rid} failed to start: {exc}") from exc
        return self.queue_ready(replica, t0, {"start": t_start - t0, "health": t_health - t_start,
                                              "screenshot": t_shot - t_health})

    def _wait_ready(self, replica: Replica, t0: float) -> tuple[float, float]:
        deadline = t0 + self.spec.start_timeout
        last: Exception | None = None
        t_health = 0.0
        while time.monotonic() < deadline:
            if self.registry.closed:
                raise PoolError(f"pool {self.spec.pool_name} closed while replica {replica.id} was starting")
            try:
                if not t_health:
                    replica.health(timeout=min(2.0, self.spec.timeouts.health))
                    t_health = time.monotonic()
                if replica.screenshot(max_side=64).data:
                    return t_health, time.monotonic()
            except ReplicaError as exc:
                last = exc
            time.sleep(0.01)
        raise ReplicaStartTimeout(f"hollow replica {replica.id} not ready within {self.spec.start_timeout} s: {last}")

    def remove(self, replica: Replica, cause: str) -> None:
        """Stop serving the replica, then the pool's own bookkeeping of a removal."""
        replica.close()
        self._forget(replica.id)
        super().remove(replica, cause)

    def _forget(self, rid: str) -> None:
        try:
            self.server.call({"op": "remove", "id": rid})
        except ReplicaError:
            pass  # the server is gone: so is every replica it served
        shutil.rmtree(self.spec.run_dir / rid, ignore_errors=True)

    def remove_all(self, replicas: list[Replica], cause: str) -> None:
        """Remove every replica, then stop the hollow server."""
        try:
            super().remove_all(replicas, cause)
        finally:
            self.server.stop()
