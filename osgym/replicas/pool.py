"""``ReplicaPool``: provision, lease, reset (discard and replace), recover and reap replicas.

A pool owns every container that carries its ``osgym.replicas.pool=<name>`` label and
touches nothing else. Replicas are handed out through a lease queue; a released
replica is always discarded and replaced, so every lease starts from a clean
desktop. ``standby`` extra replicas are kept ready so an episode rarely waits for
a container start.

Recovery works in layers:

1. every control request has a finite deadline (:class:`osgym.replicas.client.Timeouts`),
   so a hung replica raises ``ReplicaUnreachable`` within ``timeouts.read`` seconds;
2. a replica that faults during a lease is discarded (``faulted`` event) and the
   caller retries the episode on a fresh one; a background health checker probes
   idle replicas and replaces dead or hung ones; an OOM kill is detected when the
   container is removed;
3. a host whose recent failure rate crosses a threshold, or whose daemon stops
   answering, is quarantined: no new replicas go there (``quarantined`` event,
   :meth:`ReplicaPool.hosts_report`).

Replicas spread over several Docker hosts (:mod:`osgym.replicas.hosts`) in proportion to
their capacity (:mod:`osgym.replicas.capacity`); the pool refuses to plan past that
capacity unless ``force=True``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import queue
import secrets
import shutil
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from osgym.errors import (
    CapacityError,
    ConfigError,
    PoolError,
    ReplicaError,
    ReplicaStartTimeout,
    ReplicaUnreachable,
)
from osgym.replicas.client import DEFAULT_TIMEOUTS, Replica, ReplicaState, Timeouts
from osgym.replicas.events import PoolEvent, events_table, write_events
from osgym.replicas.hosts import DockerHost, as_hosts
from osgym.settings import settings

__all__ = [
    "POOL_LABEL", "REPLICA_LABEL", "OWNER_LABEL", "PoolEvent", "PoolStats", "ReplicaLimits", "ReplicaPool",
    "events_table", "write_events", "reap", "default_run_dir", "COMPAT_CAP_DROP",
]

POOL_LABEL = "osgym.replicas.pool"
REPLICA_LABEL = "osgym.replicas.client"
OWNER_LABEL = "osgym.owner"
"""``<hostname>:<pid>:<process start time>`` of the process that started the replica (for the reaper)."""
RUN_DIR_LABEL = "osgym.run_dir"
CONTROL_PORT = 5000

COMPAT_CAP_DROP = ["NET_RAW", "MKNOD", "SYS_CHROOT", "SETFCAP", "NET_BIND_SERVICE"]
"""Capabilities removed from Docker's default set in OSWorld compatibility mode.

What stays (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
AUDIT_WRITE) is what ``sudo`` and package-style task setup need; raw sockets,
device nodes, chroot and file capabilities go."""


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


@dataclass(frozen=True)
class ReplicaLimits:
    """Per-replica resource limits, applied as Docker limits."""

    mem_mib: int = 512
    cpus: float = 1.0
    pids: int = 512
    shm_mib: int = 64


@dataclass
class PoolStats:
    started: int = 0
    ready: int = 0
    leased: int = 0
    faulted: int = 0
    removed: int = 0
    start_failures: int = 0
    start_s: list[float] = field(default_factory=list)
    acquire_s: list[float] = field(default_factory=list)
    phases: list[dict[str, float]] = field(default_factory=list)
    """Per started replica, seconds spent in: create, start, socket (until the control socket exists),
    health (until /health answers), screenshot (first non-empty screenshot)."""


_loopback_lock = threading.Lock()
_loopback_used: set[str] = set()


def _allocate_loopback() -> str:
    """An unused 127.0.0.N (N >= 2, then 127.0.1.x, ...) whose control port is free on this machine."""
    with _loopback_lock:
        for n in range(2, 2**16):
            addr = str(ipaddress.IPv4Address(0x7F000000 + n))
            if addr.endswith((".0", ".255")) or addr in _loopback_used:
                continue
            with socket.socket() as s:
                try:
                    s.bind((addr, CONTROL_PORT))
                except OSError:
                    continue
            _loopback_used.add(addr)
            return addr
    raise PoolError("no free loopback address for a compatibility-mode replica")


def _free_loopback(addr: str | None) -> None:
    if addr:
        with _loopback_lock:
            _loopback_used.discard(addr)


class ReplicaPool:
    """A pool of desktop replicas on one or more Docker hosts.

    Example::

        with ReplicaPool(image, size=2) as pool:
            with pool.lease() as replica:
                replica.screenshot()

    Args:
        image: replica image tag (see :func:`osgym.replicas.images.ensure_image`).
        size: replicas that may be leased at once.
        standby: extra ready replicas kept to hide replacement latency.
        name: pool name, used in labels and container names; random if omitted.
        docker_client: client for a single Docker host (ignored if ``hosts`` is given).
        hosts: Docker endpoints (URLs or :class:`osgym.replicas.hosts.DockerHost`) to spread replicas over.
        limits: per-replica resource limits.
        screen: X screen size of each replica.
        egress: give replicas a bridge network (default: none, no route anywhere).
        transport: "unix" (socket in a bind-mounted directory, default; local hosts only) or
            "tcp" (port published on 127.0.0.1; needs a bridge network).
        compat: OSWorld compatibility mode: tokenless replicas on ``http://127.0.0.N:5000``, a bridge
            network, no ``no-new-privileges`` and Docker's default capabilities minus
            :data:`COMPAT_CAP_DROP`, so ``sudo`` works. Trusted agents only.
        force: start even if ``size + standby`` exceeds the hosts' planned capacity.
        health_interval: seconds between background health probes of idle replicas (0 disables).
        start_concurrency: containers started at once.
        start_timeout: seconds a replica may take to become ready.
        timeouts: control-request deadlines.
        on_event: called with every :class:`PoolEvent`, from the pool's threads.
    """

    def __init__(
        self,
        image: str,
        size: int,
        *,
        standby: int = 1,
        name: str | None = None,
        docker_client: docker.DockerClient | None = None,
        hosts: Sequence[str | DockerHost] | str | DockerHost | None = None,
        host_name: str = "local",
        limits: ReplicaLimits = ReplicaLimits(),
        screen: tuple[int, int] = (1920, 1080),
        egress: bool = False,
        transport: str = "unix",
        compat: bool = False,
        force: bool = False,
        health_interval: float = 2.0,
        start_concurrency: int = 8,
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
        self.limits = limits
        self.screen = screen
        self.compat = compat
        self.transport = "tcp" if compat else transport
        self.egress = egress or compat or self.transport == "tcp"
        self.force = force
        self.health_interval = health_interval
        self.start_timeout = start_timeout
        self.timeouts = timeouts
        self.run_dir = (run_dir or default_run_dir()) / self.name
        self.on_event = on_event
        threads = size + standby + 4
        if hosts is None:
            client = docker_client or docker.from_env(max_pool_size=threads * 2)
            self.hosts = [DockerHost(name=host_name, client=client)]
        else:
            self.hosts = as_hosts(hosts)
        if self.transport == "unix" and not all(h.local for h in self.hosts):
            remote = [h.url for h in self.hosts if not h.local]
            raise ConfigError(f"transport 'unix' needs local Docker hosts (unix://), actual {remote}: use "
                              "transport='tcp' with an SSH tunnel, or run a worker with a local pool on each host")
        self.owner = owner_id()
        self.events: list[PoolEvent] = []
        unreachable: dict[str, str] = {}
        for h in self.hosts:
            try:
                h.connect(max_pool_size=threads * 2)
            except docker.errors.DockerException as exc:
                if len(self.hosts) == 1:
                    raise PoolError(f"Docker host {h.url} unreachable: {exc}") from exc
                unreachable[h.name] = f"docker unreachable: {exc}"
        if len(unreachable) == len(self.hosts):
            raise PoolError(f"every Docker host is unreachable: {unreachable}")
        self.docker = next(h.client for h in self.hosts if h.name not in unreachable)
        self.host_name = self.hosts[0].name
        self.stats = PoolStats()
        self._ready: queue.Queue[Replica] = queue.Queue()
        self._all: dict[str, Replica] = {}
        self._host_of: dict[str, DockerHost] = {}
        self._placed: dict[str, int] = {h.name: 0 for h in self.hosts}
        self._slots = 0  # replicas alive or being started
        self._checked: dict[str, float] = {}
        self._lock = threading.RLock()
        self._starter = ThreadPoolExecutor(max_workers=max(1, min(start_concurrency, threads)),
                                           thread_name_prefix=f"{self.name}-start")
        self._remover = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"{self.name}-rm")
        self._stop = threading.Event()
        self._health: threading.Thread | None = None
        self._closed = False
        self._started = False
        for h in self.hosts:
            if h.name in unreachable:
                h.capacity = 0
                self._quarantine(h, unreachable[h.name])

    def __repr__(self) -> str:
        hosts = ",".join(h.name for h in self.hosts)
        return f"<ReplicaPool {self.name} size={self.size}+{self.standby} image={self.image} hosts={hosts}>"

    # ---- lifecycle ----------------------------------------------------------
    def __enter__(self) -> ReplicaPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def target(self) -> int:
        """Replicas the pool keeps alive: ``size + standby``."""
        return self.size + self.standby

    def plan(self) -> dict[str, int]:
        """Each host's planned capacity (replicas), computed once from its resources and the limits."""
        kw = {"mem_limit_mib": self.limits.mem_mib}
        return {h.name: 0 if h.quarantined else h.plan_capacity(**kw) for h in self.hosts}

    def start(self, wait: bool = True) -> None:
        """Provision ``size + standby`` replicas in parallel; with ``wait``, block until ``size`` are ready.

        Raises:
            CapacityError: if the hosts' planned capacity is below ``size + standby`` and not ``force``.
            PoolError: if fewer than ``size`` replicas become ready.
        """
        if self._started:
            return
        planned = sum(self.plan().values())
        if self.target > planned and not self.force:
            raise CapacityError(f"pool {self.name}: {self.target} replicas requested, hosts hold {planned} "
                                f"({self.plan()}); pass force=True to overcommit")
        self._started = True
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "owner").write_text(self.owner)
        futures = self._refill()
        if self.health_interval > 0:
            self._health = threading.Thread(target=self._health_loop, name=f"{self.name}-health", daemon=True)
            self._health.start()
        if wait:
            errors = [exc for f in futures if (exc := f.exception()) is not None]
            if len(errors) > self.standby:
                self.close()
                ok = len(futures) - len(errors)
                raise PoolError(f"only {ok} of {len(futures)} replicas started: {errors[0]}") from errors[0]

    def close(self) -> None:
        """Remove every replica of this pool and its run directory. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._starter.shutdown(wait=True, cancel_futures=True)
        if self._health is not None:
            self._health.join(timeout=10)
        with self._lock:
            replicas = list(self._all.values())
        list(self._remover.map(lambda r: self._remove(r, "pool closed"), replicas))
        self._remover.shutdown(wait=True)
        for h in self.hosts:  # anything a failed start left; a dead host's leftovers wait for the reaper
            if h.client is None:
                continue
            try:
                reap(h.client, pool=self.name, run_dir=self.run_dir.parent)
            except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                self._quarantine(h, f"docker unreachable at close: {exc}")
        shutil.rmtree(self.run_dir, ignore_errors=True)

    # ---- leasing ------------------------------------------------------------
    @contextlib.contextmanager
    def lease(self, timeout: float = 30.0) -> Iterator[Replica]:
        """Hand out a clean replica; on exit it is discarded and replaced, on every path.

        A ``ReplicaError`` raised inside the block marks the replica faulted (with
        its class and message as the cause) before it is discarded and re-raised.

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
        """Take a ready replica from the lease queue (see :meth:`lease`).

        Raises:
            PoolError: if the pool is closed, or no replica is ready within ``timeout``.
        """
        if self._closed:
            raise PoolError(f"pool {self.name} is closed")
        if not self._started:
            self.start(wait=False)
        t0 = time.monotonic()
        deadline = t0 + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PoolError(f"no replica ready within {timeout} s in pool {self.name} "
                                f"({self.stats.start_failures} start failures; hosts: {self.hosts_report()})")
            try:
                replica = self._ready.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self._closed:
                    raise PoolError(f"pool {self.name} is closed") from None
                continue
            with self._lock:
                if replica.state is not ReplicaState.READY:
                    continue  # faulted by the health checker while it waited
                replica.state = ReplicaState.LEASED
                self.stats.leased += 1
                self.stats.acquire_s.append(time.monotonic() - t0)
            self._event(replica, "leased")
            return replica

    def release(self, replica: Replica, fault: str | None = None) -> None:
        """Give a replica back: it is removed in the background and a replacement starts.

        With ``fault``, the replica is recorded as faulted with that cause, and its
        host's failure rate goes up.
        """
        with self._lock:
            if replica.state not in (ReplicaState.LEASED, ReplicaState.READY):
                return  # already given back
            replica.state = ReplicaState.FAULTED if fault else ReplicaState.CLOSED
        host = self._host_of.get(replica.id)
        if fault:
            self.stats.faulted += 1
            self._event(replica, "faulted", fault)
        else:
            self._event(replica, "released")
        if host is not None:
            self._host_outcome(host, ok=fault is None)
        self._discard(replica, fault or "reset")

    def _discard(self, replica: Replica, cause: str) -> None:
        """Free the replica's slot now, remove its container in the background, start a replacement."""
        replica.close()
        with self._lock:
            if replica.id in self._all:
                self._slots -= 1
        if self._closed:
            return
        try:
            self._remover.submit(self._remove, replica, cause, True)
        except RuntimeError:  # closing
            return
        self._refill()

    # ---- provisioning -------------------------------------------------------
    def _refill(self) -> list[Future[Replica]]:
        """Start replicas until ``size + standby`` are alive or starting."""
        futures = []
        with self._lock:
            if self._closed:
                return futures
            while self._slots < self.target:
                self._slots += 1
                try:
                    futures.append(self._starter.submit(self._start_with_retry))
                except RuntimeError:  # executor shut down
                    self._slots -= 1
                    break
        return futures

    def _pick_host(self) -> DockerHost:
        """The non-quarantined host with the most free planned capacity, proportionally."""
        with self._lock:
            live = [h for h in self.hosts if not h.quarantined]
            if not live:
                raise PoolError(f"pool {self.name}: every host is quarantined: {self.hosts_report()}")
            host = min(live, key=lambda h: (self._placed[h.name] + 1) / max(h.capacity or 1, 1))
            self._placed[host.name] += 1
            return host

    def _start_with_retry(self, attempts: int = 3) -> Replica:
        last: BaseException | None = None
        for _ in range(attempts):
            if self._closed:
                break
            try:
                host = self._pick_host()
            except PoolError as exc:
                last = exc
                break
            try:
                return self._start_one(host)
            except ReplicaError as exc:
                last = exc
        with self._lock:
            self._slots -= 1
        assert last is not None or self._closed
        raise last or PoolError(f"pool {self.name} is closed")

    def _container_config(self, rid: str, token: str, rdir: Path, loopback: str | None) -> dict[str, Any]:
        env = {"OSGYM_SCREEN": f"{self.screen[0]}x{self.screen[1]}"}
        host_kw: dict[str, Any] = dict(
            mem_limit=f"{self.limits.mem_mib}m", memswap_limit=f"{self.limits.mem_mib}m",
            nano_cpus=int(self.limits.cpus * 1e9), pids_limit=self.limits.pids,
            shm_size=f"{self.limits.shm_mib}m", init=True,
            network_mode="bridge" if self.egress else "none",
        )
        create_kw: dict[str, Any] = {}
        if self.compat:
            env["OSGYM_COMPAT"] = "1"
            env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
            host_kw["cap_drop"] = COMPAT_CAP_DROP
            host_kw["port_bindings"] = {CONTROL_PORT: (loopback, CONTROL_PORT)}
            create_kw["ports"] = [CONTROL_PORT]
        else:
            host_kw["cap_drop"] = ["ALL"]
            host_kw["security_opt"] = ["no-new-privileges"]
            if self.transport == "unix":
                env["OSGYM_LISTEN"] = "unix:/run/osgym/control.sock"
                host_kw["binds"] = {str(rdir): {"bind": "/run/osgym", "mode": "rw"}}
            else:
                env["OSGYM_TOKEN"] = token
                env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
                host_kw["port_bindings"] = {CONTROL_PORT: ("127.0.0.1", None)}
                create_kw["ports"] = [CONTROL_PORT]
        labels = {POOL_LABEL: self.name, REPLICA_LABEL: rid, OWNER_LABEL: self.owner,
                  RUN_DIR_LABEL: str(self.run_dir)}
        return {"environment": env, "labels": labels, "host_kw": host_kw, **create_kw}

    def _start_one(self, host: DockerHost) -> Replica:
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        t0 = time.monotonic()
        rdir = self.run_dir / rid
        loopback = _allocate_loopback() if self.compat else None
        api = host.client.api
        cid: str | None = None
        replica: Replica | None = None
        try:
            if self.transport == "unix":
                rdir.mkdir(parents=True, exist_ok=True)
                tok = rdir / "token"
                fd = os.open(tok, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as f:
                    f.write(token)
                if os.geteuid() == 0:
                    os.chown(rdir, 1000, 1000)
                    os.chown(tok, 1000, 1000)
                else:
                    os.chmod(rdir, 0o777)
                    os.chmod(tok, 0o666)
            cfg = self._container_config(rid, token, rdir, loopback)
            host_config = api.create_host_config(**cfg.pop("host_kw"))
            t_prep = time.monotonic()
            cid = api.create_container(self.image, name=f"{self.name}-{rid}", detach=True,
                                       host_config=host_config, **cfg)["Id"]
            t_create = time.monotonic()
            api.start(cid)
            t_start = time.monotonic()
            container = host.client.containers.prepare_model({"Id": cid})
            if self.compat:
                endpoint, token_or_none = f"http://{loopback}:{CONTROL_PORT}", None
            elif self.transport == "unix":
                endpoint, token_or_none = f"unix:{rdir / 'control.sock'}", token
            else:
                port = api.port(cid, CONTROL_PORT)[0]["HostPort"]
                endpoint, token_or_none = f"http://127.0.0.1:{port}", token
            replica = Replica(rid, endpoint, token_or_none, host=host.name, container=container,
                              timeouts=self.timeouts)
            replica.loopback = loopback  # type: ignore[attr-defined]
            with self._lock:
                self._all[rid] = replica
                self._host_of[rid] = host
                self.stats.started += 1
            self._event(replica, "created")
            t_sock, t_health, t_shot = self._wait_ready(replica, host, t0)
        except Exception as exc:
            self.stats.start_failures += 1
            cause = f"start failed: {type(exc).__name__}: {exc}"
            unreachable = isinstance(exc, (requests.exceptions.ConnectionError, docker.errors.DockerException)) \
                and not isinstance(exc, docker.errors.APIError)
            if cid is not None:
                with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                    api.remove_container(cid, force=True)
            with self._lock:
                self._all.pop(rid, None)
                self._host_of.pop(rid, None)
                self._placed[host.name] -= 1
            if replica is not None:
                replica.close()
            _free_loopback(loopback)
            shutil.rmtree(rdir, ignore_errors=True)
            self._record(PoolEvent(time.time(), self.name, rid, host.name, "faulted", cause[:2000]))
            if unreachable:
                self._quarantine(host, f"docker unreachable: {exc}")
            else:
                self._host_outcome(host, ok=False)
            if isinstance(exc, ReplicaError):
                raise
            raise ReplicaUnreachable(f"replica on {host.name} failed to start: {exc}") from exc
        elapsed = time.monotonic() - t0
        with self._lock:
            ok = replica.state is ReplicaState.STARTING and not self._closed
            if ok:
                replica.state = ReplicaState.READY
                replica.ready_at = time.time()
                self.stats.ready += 1
                self.stats.start_s.append(elapsed)
                self.stats.phases.append({"prepare": t_prep - t0, "create": t_create - t_prep,
                                          "start": t_start - t_create, "socket": t_sock - t_start,
                                          "health": t_health - t_sock, "screenshot": t_shot - t_health})
        if ok:
            self._event(replica, "ready", elapsed_s=elapsed)
            self._checked[rid] = time.monotonic()
            self._ready.put(replica)
        return replica

    def _wait_ready(self, replica: Replica, host: DockerHost, t0: float) -> tuple[float, float, float]:
        """Poll until /health answers and a screenshot is non-empty; fail fast if the container exits.

        The socket's appearance is polled with a cheap stat every 5 ms; the HTTP
        probes start only once it exists. The container state is checked once a
        second, not on every probe.
        """
        deadline = t0 + self.start_timeout
        sock = replica.api.endpoint[len("unix:"):] if replica.api.endpoint.startswith("unix:") else None
        last: Exception | None = None
        next_state_check = time.monotonic() + 1.0
        t_sock = t_health = 0.0
        while time.monotonic() < deadline:
            if self._closed:
                raise PoolError(f"pool {self.name} closed while replica {replica.id} was starting")
            if sock is None or os.path.exists(sock):
                t_sock = t_sock or time.monotonic()
                try:
                    if not t_health:
                        replica.health(timeout=min(2.0, self.timeouts.health))
                        t_health = time.monotonic()
                    if replica.screenshot(max_side=64).data:
                        return t_sock, t_health, time.monotonic()
                except ReplicaError as exc:
                    last = exc
                time.sleep(0.01)
            else:
                time.sleep(0.005)
            if time.monotonic() >= next_state_check:
                next_state_check = time.monotonic() + 1.0
                state = host.client.api.inspect_container(replica.container.id)["State"]
                if state.get("Status") in ("exited", "dead"):
                    logs = host.client.api.logs(replica.container.id, tail=10).decode("utf-8", "replace")
                    cause = "oom" if state.get("OOMKilled") else f"exit {state.get('ExitCode')}"
                    raise ReplicaUnreachable(f"replica {replica.id} exited during start ({cause}): {logs.strip()}")
        raise ReplicaStartTimeout(f"replica {replica.id} not ready within {self.start_timeout} s: {last}")

    def _remove(self, replica: Replica, cause: str, inspect: bool = False) -> None:
        """Remove the container (and run dir); with ``inspect``, first record an OOM kill as a fault."""
        replica.close()
        with self._lock:
            known = self._all.pop(replica.id, None) is not None
            host = self._host_of.pop(replica.id, None)
            self._checked.pop(replica.id, None)
            if known and host is not None:
                self._placed[host.name] -= 1
        _free_loopback(getattr(replica, "loopback", None))
        if replica.container is not None and host is not None:
            api = host.client.api
            try:
                if inspect and api.inspect_container(replica.container.id)["State"].get("OOMKilled"):
                    self.stats.faulted += 1
                    self._event(replica, "faulted", "oom: the container hit its memory limit")
                    self._host_outcome(host, ok=False)
                api.remove_container(replica.container.id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    self._event(replica, "faulted", f"remove failed: {exc}")
            except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
                cause = f"{cause}; container left for the reaper: docker unreachable ({exc})"
                self._quarantine(host, f"docker unreachable: {exc}")
        shutil.rmtree(self.run_dir / replica.id, ignore_errors=True)
        if known:
            self.stats.removed += 1
            self._event(replica, "removed", cause)

    # ---- health -------------------------------------------------------------
    def _health_loop(self) -> None:
        while not self._stop.wait(self.health_interval):
            try:
                self.check_health()
            except Exception as exc:  # the checker must survive anything; record and go on
                self._record(PoolEvent(time.time(), self.name, "", "", "faulted", f"health checker: {exc!r}"))

    def check_health(self, batch: int = 32) -> int:
        """Probe up to ``batch`` idle ready replicas (least recently checked first); replace the dead or hung.

        Also restarts replicas lost to failed starts. Returns the number of replicas faulted.
        """
        with self._ready.mutex:
            idle = [r for r in self._ready.queue if r.state is ReplicaState.READY]
        idle.sort(key=lambda r: self._checked.get(r.id, 0.0))
        faulted = 0
        for replica in idle[:batch]:
            if self._stop.is_set():
                break
            try:
                replica.health(timeout=self.timeouts.health)
                self._checked[replica.id] = time.monotonic()
            except ReplicaError as exc:
                with self._lock:
                    if replica.state is not ReplicaState.READY:
                        continue  # leased meanwhile: the episode will find out
                    replica.state = ReplicaState.FAULTED
                faulted += 1
                self.stats.faulted += 1
                self._event(replica, "faulted", f"health check: {type(exc).__name__}: {exc}")
                host = self._host_of.get(replica.id)
                if host is not None:
                    self._host_outcome(host, ok=False)
                self._discard(replica, "failed health check")
        self._refill()
        return faulted

    def _host_outcome(self, host: DockerHost, ok: bool) -> None:
        """Count a start or lease outcome against its host; quarantine a failing host unless it is the last one.

        The last healthy host is never quarantined for its failure rate (the pool would stop); it is
        reported once as degraded (a host-level ``faulted`` event) instead. An unreachable daemon is
        always quarantined (:meth:`_quarantine`).
        """
        reason = host.record(ok)
        if not reason:
            return
        with self._lock:
            others = [h for h in self.hosts if h is not host and not h.quarantined]
        if others:
            self._quarantine(host, reason)
        elif not host.degraded:
            host.degraded = reason
            self._record(PoolEvent(time.time(), self.name, "", host.name, "faulted",
                                   f"host degraded: {reason}; not quarantined (last healthy host)"))

    def _quarantine(self, host: DockerHost, reason: str) -> None:
        if host.quarantine(reason):
            self._record(PoolEvent(time.time(), self.name, "", host.name, "quarantined", reason[:2000]))

    def hosts_report(self) -> list[dict[str, Any]]:
        """Per host: url, planned capacity, replicas placed, recent failure rate, quarantine reason."""
        with self._lock:
            return [{"host": h.name, "url": h.url, "capacity": h.capacity, "placed": self._placed[h.name],
                     "failure_rate": round(h.failure_rate, 3), "quarantined": h.quarantined,
                     "degraded": h.degraded} for h in self.hosts]

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

    @property
    def healthy(self) -> int:
        """Replicas that passed their readiness check and have not faulted (ready or leased)."""
        with self._lock:
            return sum(r.state in (ReplicaState.READY, ReplicaState.LEASED) for r in self._all.values())

    @property
    def idle(self) -> int:
        """Ready replicas waiting in the lease queue."""
        return self._ready.qsize()


def reap(
    client: docker.DockerClient | None = None,
    pool: str | None = None,
    run_dir: Path | None = None,
    *,
    all_owners: bool = False,
) -> int:
    """Remove what interrupted runs left: labelled containers, networks and run directories.

    Touches nothing without osgym's ``osgym.replicas.pool`` label. With ``pool``, removes
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
