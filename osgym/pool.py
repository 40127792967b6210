"""``ReplicaPool``: provision, lease, reset (discard and replace), recover and reap replicas.

A pool owns every container that carries its ``osgym.pool=<name>`` label and
touches nothing else. Replicas are handed out through a lease queue; a released
replica is always discarded and replaced, so every lease starts from a clean
desktop. ``standby`` extra replicas are kept ready so an episode rarely waits for
a container start.
"""

from __future__ import annotations

import contextlib
import os
import queue
import secrets
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors

from osgym.errors import ConfigError, PoolError, ReplicaError, ReplicaStartTimeout, ReplicaUnreachable
from osgym.replica import DEFAULT_TIMEOUTS, Replica, ReplicaState, Timeouts

POOL_LABEL = "osgym.pool"
REPLICA_LABEL = "osgym.replica"
CONTROL_PORT = 5000


def default_run_dir() -> Path:
    """Host directory for the replicas' control sockets: $OSGYM_RUN_DIR, else /run/osgym (root) or /tmp."""
    env = os.environ.get("OSGYM_RUN_DIR")
    if env:
        return Path(env)
    return Path("/run/osgym") if os.geteuid() == 0 else Path(f"/tmp/osgym-{os.getuid()}")


@dataclass(frozen=True)
class ReplicaLimits:
    """Per-replica resource limits, applied as Docker limits."""

    mem_mib: int = 512
    cpus: float = 1.0
    pids: int = 512
    shm_mib: int = 64


@dataclass(frozen=True)
class PoolEvent:
    """One lifecycle event: created, ready, leased, released, faulted or removed."""

    ts: float
    pool: str
    replica_id: str
    host: str
    event: str
    cause: str | None = None
    elapsed_s: float | None = None


@dataclass
class PoolStats:
    started: int = 0
    ready: int = 0
    faulted: int = 0
    removed: int = 0
    start_failures: int = 0
    start_s: list[float] = field(default_factory=list)


class ReplicaPool:
    """A pool of desktop replicas on a Docker host.

    Example::

        with ReplicaPool(image, size=2) as pool:
            with pool.lease() as replica:
                replica.screenshot()

    Args:
        image: replica image tag (see :func:`osgym.images.ensure_image`).
        size: replicas that may be leased at once.
        standby: extra ready replicas kept to hide replacement latency.
        name: pool name, used in labels and container names; random if omitted.
        docker_client: client for the Docker host; ``docker.from_env()`` if omitted.
        limits: per-replica resource limits.
        screen: X screen size of each replica.
        egress: give replicas a bridge network (default: none, no route anywhere).
        transport: "unix" (socket in a bind-mounted directory, default) or "tcp"
            (port published on 127.0.0.1).
    """

    def __init__(
        self,
        image: str,
        size: int,
        *,
        standby: int = 1,
        name: str | None = None,
        docker_client: docker.DockerClient | None = None,
        host_name: str = "local",
        limits: ReplicaLimits = ReplicaLimits(),
        screen: tuple[int, int] = (1920, 1080),
        egress: bool = False,
        transport: str = "unix",
        start_timeout: float = 30.0,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        run_dir: Path | None = None,
        on_event: Callable[[PoolEvent], None] | None = None,
    ):
        if size < 1:
            raise ConfigError(f"size: expected >= 1, actual {size}")
        if standby < 0:
            raise ConfigError(f"standby: expected >= 0, actual {standby}")
        if transport not in ("unix", "tcp"):
            raise ConfigError(f"transport: expected unix or tcp, actual {transport!r}")
        self.image = image
        self.size = size
        self.standby = standby
        self.name = name or f"osgym-{uuid.uuid4().hex[:8]}"
        self.host_name = host_name
        self.limits = limits
        self.screen = screen
        self.egress = egress
        self.transport = transport
        self.start_timeout = start_timeout
        self.timeouts = timeouts
        self.run_dir = (run_dir or default_run_dir()) / self.name
        self.on_event = on_event
        threads = size + standby + 4
        self.docker = docker_client or docker.from_env(max_pool_size=threads * 2)
        self.events: list[PoolEvent] = []
        self.stats = PoolStats()
        self._ready: queue.Queue[Replica] = queue.Queue()
        self._all: dict[str, Replica] = {}
        self._lock = threading.Lock()
        self._starter = ThreadPoolExecutor(max_workers=min(8, threads), thread_name_prefix=f"{self.name}-start")
        self._pending: set[Future[Any]] = set()
        self._closed = False
        self._started = False

    def __repr__(self) -> str:
        return f"<ReplicaPool {self.name} size={self.size}+{self.standby} image={self.image}>"

    # ---- lifecycle ----------------------------------------------------------
    def __enter__(self) -> ReplicaPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, wait: bool = True) -> None:
        """Provision ``size + standby`` replicas in parallel; with ``wait``, block until ``size`` are ready.

        Raises:
            PoolError: if fewer than ``size`` replicas become ready.
        """
        if self._started:
            return
        self._started = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        futures = [self._spawn() for _ in range(self.size + self.standby)]
        if wait:
            errors = []
            for f in futures:
                exc = f.exception()
                if exc is not None:
                    errors.append(exc)
            if len(errors) > self.standby:
                self.close()
                ok = len(futures) - len(errors)
                raise PoolError(f"only {ok} of {len(futures)} replicas started: {errors[0]}") from errors[0]

    def close(self) -> None:
        """Remove every replica of this pool and its run directory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._starter.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            replicas = list(self._all.values())
        for r in replicas:
            self._remove(r, "pool closed")
        reap(self.docker, pool=self.name)  # anything a failed start left behind
        shutil.rmtree(self.run_dir, ignore_errors=True)

    # ---- leasing ------------------------------------------------------------
    @contextlib.contextmanager
    def lease(self, timeout: float = 30.0) -> Iterator[Replica]:
        """Hand out a clean replica; on exit it is discarded and replaced, on every path.

        Raises:
            PoolError: if no replica becomes ready within ``timeout`` seconds.
        """
        replica = self.acquire(timeout)
        try:
            yield replica
        except ReplicaError as exc:
            self.release(replica, fault=f"{type(exc).__name__}: {exc}")
            raise
        except BaseException:
            self.release(replica)
            raise
        else:
            self.release(replica)

    def acquire(self, timeout: float = 30.0) -> Replica:
        """Take a ready replica from the lease queue (see :meth:`lease`)."""
        if self._closed:
            raise PoolError(f"pool {self.name} is closed")
        if not self._started:
            self.start(wait=False)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PoolError(f"no replica ready within {timeout} s in pool {self.name} "
                                f"({self.stats.start_failures} start failures)")
            try:
                replica = self._ready.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                continue
            if replica.state is ReplicaState.READY:
                replica.state = ReplicaState.LEASED
                self._event(replica, "leased")
                return replica

    def release(self, replica: Replica, fault: str | None = None) -> None:
        """Give a replica back: it is removed and a replacement starts in the background."""
        if fault:
            replica.state = ReplicaState.FAULTED
            self.stats.faulted += 1
            self._event(replica, "faulted", fault)
        else:
            self._event(replica, "released")
        self._remove(replica, fault or "reset")
        if not self._closed:
            self._spawn()

    # ---- provisioning -------------------------------------------------------
    def _spawn(self) -> Future[Replica]:
        fut = self._starter.submit(self._start_one)
        return fut

    def _start_one(self) -> Replica:
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        t0 = time.monotonic()
        rdir = self.run_dir / rid
        rdir.mkdir(parents=True, exist_ok=True)
        os.chown(rdir, 1000, 1000) if os.geteuid() == 0 else os.chmod(rdir, 0o777)
        env = {"OSGYM_SCREEN": f"{self.screen[0]}x{self.screen[1]}"}
        kwargs: dict[str, Any] = {}
        if self.transport == "unix":
            tok = rdir / "token"
            tok.write_text(token)
            os.chmod(tok, 0o600)
            if os.geteuid() == 0:
                os.chown(tok, 1000, 1000)
            env["OSGYM_LISTEN"] = "unix:/run/osgym/control.sock"
            kwargs["volumes"] = {str(rdir): {"bind": "/run/osgym", "mode": "rw"}}
        else:
            env["OSGYM_TOKEN"] = token
            env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
            kwargs["ports"] = {f"{CONTROL_PORT}/tcp": ("127.0.0.1", None)}
        network = "bridge" if (self.egress or self.transport == "tcp") else "none"
        container = None
        try:
            container = self.docker.containers.run(
                self.image,
                detach=True,
                name=f"{self.name}-{rid}",
                labels={POOL_LABEL: self.name, REPLICA_LABEL: rid},
                environment=env,
                network_mode=network,
                mem_limit=f"{self.limits.mem_mib}m",
                memswap_limit=f"{self.limits.mem_mib}m",
                nano_cpus=int(self.limits.cpus * 1e9),
                pids_limit=self.limits.pids,
                shm_size=f"{self.limits.shm_mib}m",
                cap_drop=["ALL"],
                security_opt=["no-new-privileges"],
                init=True,
                **kwargs,
            )
            if self.transport == "unix":
                endpoint = f"unix:{rdir / 'control.sock'}"
            else:
                container.reload()
                port = container.attrs["NetworkSettings"]["Ports"][f"{CONTROL_PORT}/tcp"][0]["HostPort"]
                endpoint = f"http://127.0.0.1:{port}"
            replica = Replica(rid, endpoint, token, host=self.host_name, container=container, timeouts=self.timeouts)
            with self._lock:
                self._all[rid] = replica
                self.stats.started += 1
            self._event(replica, "created")
            self._wait_ready(replica, t0)
        except Exception as exc:
            self.stats.start_failures += 1
            if container is not None:
                with contextlib.suppress(docker.errors.APIError):
                    container.remove(force=True)
            with self._lock:
                self._all.pop(rid, None)
            shutil.rmtree(rdir, ignore_errors=True)
            self._record(PoolEvent(time.time(), self.name, rid, self.host_name, "faulted", f"start failed: {exc}"))
            raise
        replica.state = ReplicaState.READY
        replica.ready_at = time.time()
        elapsed = time.monotonic() - t0
        self.stats.ready += 1
        self.stats.start_s.append(elapsed)
        self._event(replica, "ready", elapsed_s=elapsed)
        if self._closed:
            self._remove(replica, "pool closed")
        else:
            self._ready.put(replica)
        return replica

    def _wait_ready(self, replica: Replica, t0: float) -> None:
        """Poll until /health answers and a screenshot is non-empty; fail fast if the container exits."""
        deadline = t0 + self.start_timeout
        sock = replica.api.endpoint[len("unix:"):] if replica.api.endpoint.startswith("unix:") else None
        last: Exception | None = None
        delay = 0.02
        checks = 0
        while time.monotonic() < deadline:
            if sock is None or os.path.exists(sock):
                try:
                    replica.health(timeout=1.0)
                    if replica.screenshot(max_side=64).data:
                        return
                except ReplicaError as exc:
                    last = exc
            checks += 1
            if checks % 10 == 0:  # a container that died will never answer
                replica.container.reload()
                if replica.container.status in ("exited", "dead"):
                    logs = replica.container.logs(tail=10).decode("utf-8", "replace")
                    raise ReplicaUnreachable(f"replica {replica.id} exited during start: {logs.strip()}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
        raise ReplicaStartTimeout(f"replica {replica.id} not ready within {self.start_timeout} s: {last}")

    def _remove(self, replica: Replica, cause: str) -> None:
        replica.close()
        with self._lock:
            known = self._all.pop(replica.id, None) is not None
        if replica.container is not None:
            with contextlib.suppress(docker.errors.NotFound):
                try:
                    replica.container.remove(force=True)
                except docker.errors.APIError as exc:
                    if "already in progress" not in str(exc):
                        raise
        shutil.rmtree(self.run_dir / replica.id, ignore_errors=True)
        if known:
            self.stats.removed += 1
            self._event(replica, "removed", cause)

    # ---- events -------------------------------------------------------------
    def _event(self, replica: Replica, event: str, cause: str | None = None, elapsed_s: float | None = None) -> None:
        self._record(PoolEvent(time.time(), self.name, replica.id, replica.host, event, cause, elapsed_s))

    def _record(self, ev: PoolEvent) -> None:
        with self._lock:
            self.events.append(ev)
        if self.on_event is not None:
            self.on_event(ev)

    @property
    def live(self) -> int:
        """Replicas that currently exist (starting, ready or leased)."""
        with self._lock:
            return len(self._all)


def reap(client: docker.DockerClient | None = None, pool: str | None = None, run_dir: Path | None = None) -> int:
    """Remove containers labelled ``osgym.pool`` (only ``pool``'s if given) and their run directories.

    Touches nothing without osgym's label. Returns the number of containers removed.
    """
    client = client or docker.from_env()
    label = f"{POOL_LABEL}={pool}" if pool else POOL_LABEL
    removed = 0
    pools = set()
    for c in client.containers.list(all=True, filters={"label": label}):
        pools.add(c.labels.get(POOL_LABEL, ""))
        with contextlib.suppress(docker.errors.NotFound):
            c.remove(force=True)
            removed += 1
    base = run_dir or default_run_dir()
    for name in pools | ({pool} if pool else set()):
        if name and "/" not in name and name not in (".", ".."):
            shutil.rmtree(base / name, ignore_errors=True)
    return removed
