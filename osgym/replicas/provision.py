"""Provisioning: starting a pool's replica containers until they are ready, and removing them.

:class:`Provisioner` places each new replica on the host with the most free planned
capacity, creates the container with the pool's limits, labels and network (none, or one of
osgym's fenced networks: :mod:`osgym.replicas.network`), hands it its token (a file in its
bind-mounted run directory, or with the TCP transport a file copied into the container before
it starts: never its environment, which ``docker inspect`` shows), and polls it until
``/health`` answers and a
screenshot is non-empty. A failed start is retried on a fresh container (up to three
tries, :func:`osgym.retrying.retrying`); its host's failure rate goes up, and an
unreachable daemon quarantines the host. The pool owns one provisioner and keeps the
replica registry it fills.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import shutil
import tarfile
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import docker.errors
import requests.exceptions

from osgym.errors import PoolError, ReplicaError, ReplicaStartTimeout, ReplicaUnreachable
from osgym.replicas.client import Replica, ReplicaState
from osgym.replicas.events import PoolEvent
from osgym.replicas.hosts import DockerHost
from osgym.replicas.loopback import CONTROL_PORT, DEVTOOLS_PORT, allocate_loopback, free_loopback
from osgym.replicas.network import container_sysctls
from osgym.replicas.reaper import OWNER_LABEL, POOL_LABEL, REPLICA_LABEL, RUN_DIR_LABEL
from osgym.retrying import retrying
from osgym.settings import settings

if TYPE_CHECKING:
    from osgym.replicas.pool import ReplicaPool

__all__ = ["CONTROL_PORT", "COMPAT_CAP_DROP", "CTL_MOUNT", "NATIVE_CAP_ADD", "SERVER_UID", "TIER_LIMITS", "PoolStats",
           "Provisioner", "ReplicaLimits", "limits_for"]

START_ATTEMPTS = 3
"""Containers tried per replica slot before the start counts as failed."""

SERVER_UID = SERVER_GID = 990
"""The control server's account inside the image (`osgym`, replica_images/desktop/Dockerfile)."""

NATIVE_CAP_ADD = ["SETUID", "SETGID"]
"""The only capabilities a native replica keeps. The entry point starts as root and drops to
`osgym` keeping these two, to start the desktop and the agent's commands as `user` and to touch
files as `user` (server/uids.py); processes it starts as `user` get none (no-new-privileges)."""

CTL_MOUNT = "/run/osgym/ctl"
ASSETS_MOUNT = "/run/osgym/assets"
"""Where a compatibility replica sees the pool's ``assets_dir`` (read-only), for ``/setup/download_file``."""
"""Where the replica's run directory is mounted: below the server's own directory (mode 0700,
`osgym`), so the agent's account cannot reach it even when its uid owns the host directory."""

COMPAT_CAP_DROP = ["NET_RAW", "MKNOD", "SYS_CHROOT", "SETFCAP", "NET_BIND_SERVICE"]
"""Capabilities removed from Docker's default set in OSWorld compatibility mode.

What stays (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
AUDIT_WRITE) is what ``sudo`` and package-style task setup need; raw sockets,
device nodes, chroot and file capabilities go."""


@dataclass(frozen=True)
class ReplicaLimits:
    """Per-replica resource limits, applied as Docker limits."""

    mem_mib: int = 512
    cpus: float = 1.0
    pids: int = 512
    shm_mib: int = 64
    tmp_mib: int = 256
    """Size of ``/tmp``, a tmpfs: what the agent (or a recording) can fill there. Its pages
    count against ``mem_mib``, as ``/dev/shm``'s do."""
    log_mib: int = 4
    """Size of each of the two json-file logs Docker keeps of the container's output."""
    disk_mib: int | None = None
    """Size of the container's writable layer (Docker's ``storage_opt size``), which holds
    the home directory. ``None`` leaves it unbounded: only some storage drivers support it
    (overlay2 on xfs mounted with ``pquota``, btrfs, zfs), and Docker refuses to create the
    container on the others. Unset here, ``OSGYM_REPLICA_DISK_MIB`` gives it."""
    swap_mib: int | None = None
    """Swap the replica may use beyond ``mem_mib``: its cold pages move there under the host's memory
    pressure. ``None`` takes ``OSGYM_REPLICA_SWAP_MIB`` (default 0, no swap). Meant for zram, compressed
    swap in memory (:mod:`osgym.replicas.zram`); on a disk, an agent's memory would reach the disk."""


TIER_LIMITS: dict[str, ReplicaLimits] = {
    "desktop": ReplicaLimits(),
    # Measured with bench/bench_apps_tier.py (cgroup memory usage, page cache included, medians of 3):
    # the XFCE session idles at 165 MiB; with Chromium (one tab) and Calc open, 473 MiB (peak 479),
    # within 40 MiB of the default 512 MiB limit before a page is loaded or a second app opens.
    # 1536 MiB leaves room for a few tabs plus GIMP or Thunderbird. pids_limit counts threads:
    # 132 with Chromium + Calc, so 1024 leaves room for more apps without lifting the fork-bomb cap.
    "apps": ReplicaLimits(mem_mib=1536, pids=1024),
}
"""Per-tier defaults: the image's apps decide how much memory and how many threads a replica needs."""


def limits_for(tier: str) -> ReplicaLimits:
    """The default :class:`ReplicaLimits` for an image tier (``desktop``'s for an unknown one)."""
    return TIER_LIMITS.get(tier, ReplicaLimits())


@dataclass
class PoolStats:
    """What a pool has done so far: counts of lifecycle events, and start and acquire latencies."""

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


REPLICA_HOSTNAME = "osgym"
"""Every replica's host name. Shell prompts and terminal titles show it, so with Docker's default (the
container id) two replicas set up from one task and seed would not start from the same screen."""

class Provisioner:
    """Starts and removes one pool's containers, in background threads.

    Args:
        pool: the pool whose image, limits, screen, transport and timeouts are used, and whose
            registry (``_all``, ``_host_of``, ``_placed``, ``_slots``) the replicas are entered in.
        start_concurrency: containers started at once.
    """

    def __init__(self, pool: ReplicaPool, start_concurrency: int):
        self.pool = pool
        threads = pool.size + pool.standby + 4
        self._starter = ThreadPoolExecutor(max_workers=max(1, min(start_concurrency, threads)),
                                           thread_name_prefix=f"{pool.name}-start")
        self._remover = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"{pool.name}-rm")

    # ---- slots ---------------------------------------------------------------
    def refill(self) -> list[Future[Replica]]:
        """Start replicas until ``size + standby`` are alive or starting."""
        pool = self.pool
        futures: list[Future[Replica]] = []
        with pool._lock:
            if pool._closed:
                return futures
            while pool._slots < pool.target:
                pool._slots += 1
                try:
                    futures.append(self._starter.submit(self.start_with_retry))
                except RuntimeError:  # executor shut down
                    pool._slots -= 1
                    break
        return futures

    def remove_later(self, replica: Replica, cause: str) -> bool:
        """Remove a discarded replica in the background; False if closing."""
        try:
            self._remover.submit(self.remove, replica, cause)
        except RuntimeError:  # closing
            return False
        return True

    def stop_starting(self) -> None:
        """Cancel pending starts and wait for running ones (they see the pool closed and give up)."""
        self._starter.shutdown(wait=True, cancel_futures=True)

    def remove_all(self, replicas: list[Replica], cause: str) -> None:
        """Remove ``replicas`` in parallel, wait for every pending removal, and stop the removal threads."""
        list(self._remover.map(lambda r: self.remove(r, cause), replicas))
        self._remover.shutdown(wait=True)

    def _pick_host(self) -> DockerHost:
        """The non-quarantined host with the most free planned capacity, proportionally."""
        pool = self.pool
        with pool._lock:
            live = [h for h in pool.hosts if not h.quarantined]
            if not live:
                raise PoolError(f"pool {pool.name}: every host is quarantined: {pool.hosts_report()}")
            host = min(live, key=lambda h: (pool._placed[h.name] + 1) / max(h.capacity or 1, 1))
            pool._placed[host.name] += 1
            return host

    def start_with_retry(self, attempts: int = START_ATTEMPTS) -> Replica:
        """Start one replica, on a fresh container after each failure; frees the slot if every try fails.

        Raises:
            ReplicaError: the last start failure.
            PoolError: if the pool closed, or every host is quarantined.
        """
        pool = self.pool

        def retry_start(exc: BaseException) -> bool:
            return isinstance(exc, ReplicaError) and not pool._closed

        try:
            for attempt in retrying(attempts=attempts, on=retry_start):
                with attempt:
                    if pool._closed:
                        raise PoolError(f"pool {pool.name} is closed")
                    return self.start_one(self._pick_host())
        except BaseException:
            with pool._lock:
                pool._slots -= 1
            raise
        raise AssertionError("unreachable: retrying returns or raises")  # pragma: no cover

    # ---- one container ------------------------------------------------------
    def container_config(self, rid: str, rdir: Path, loopback: str | None) -> dict[str, Any]:
        """``create_container`` arguments: environment, labels, ports, and ``host_kw`` for the host config.

        It is not given the token: whatever goes in here, ``docker inspect`` shows."""
        pool = self.pool
        env = {"OSGYM_SCREEN": f"{pool.screen[0]}x{pool.screen[1]}"}
        if not pool.memory_merge:
            env["OSGYM_KSM"] = "0"
        cfg = settings()  # read once per container: it parses the environment
        swap_mib = pool.limits.swap_mib if pool.limits.swap_mib is not None else cfg.replica_swap_mib
        host_kw: dict[str, Any] = dict(
            mem_limit=f"{pool.limits.mem_mib}m", memswap_limit=f"{pool.limits.mem_mib + swap_mib}m",
            nano_cpus=int(pool.limits.cpus * 1e9), pids_limit=pool.limits.pids,
            shm_size=f"{pool.limits.shm_mib}m", init=True,
            # never Docker's default bridge: osgym's own fenced network, or none (osgym.replicas.network)
            network_mode=pool.network_name or "none",
            # What an agent can fill on the host: /tmp (a bounded tmpfs; exec, as a disk /tmp allows)
            # and the container's log, rotated. The writable layer only where the driver can bound it.
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={pool.limits.tmp_mib}m,mode=1777"},
            log_config={"Type": "json-file",
                        "Config": {"max-size": f"{pool.limits.log_mib}m", "max-file": "2"}},
        )
        if pool.runtime is not None:
            host_kw["runtime"] = pool.runtime
        if pool.network_name:
            host_kw["sysctls"] = container_sysctls()
        disk_mib = pool.limits.disk_mib if pool.limits.disk_mib is not None else cfg.replica_disk_mib
        if disk_mib is not None:
            host_kw["storage_opt"] = {"size": f"{disk_mib}m"}
        create_kw: dict[str, Any] = {}
        if pool.compat:
            env["OSGYM_COMPAT"] = "1"
            env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
            host_kw["cap_drop"] = COMPAT_CAP_DROP
            host_kw["port_bindings"] = {CONTROL_PORT: (loopback, CONTROL_PORT),
                                        DEVTOOLS_PORT: (loopback, DEVTOOLS_PORT)}
            create_kw["ports"] = [CONTROL_PORT, DEVTOOLS_PORT]
            if pool.assets_dir is not None:
                # inside the server's own 0700 directory: the server reads it, the agent's account cannot
                host_kw["binds"] = {str(pool.assets_dir): {"bind": ASSETS_MOUNT, "mode": "ro"}}
        else:
            host_kw["cap_drop"] = ["ALL"]
            host_kw["cap_add"] = NATIVE_CAP_ADD
            host_kw["security_opt"] = ["no-new-privileges"]
            if pool.transport == "unix":
                env["OSGYM_LISTEN"] = f"unix:{CTL_MOUNT}/control.sock"
                host_kw["binds"] = {str(rdir): {"bind": CTL_MOUNT, "mode": "rw"}}
            else:
                # The token is copied into the container before it starts (start_one), not passed in
                # its environment, where `docker inspect` and /proc/*/environ would show it.
                env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
                host_kw["port_bindings"] = {CONTROL_PORT: ("127.0.0.1", None)}
                create_kw["ports"] = [CONTROL_PORT]
        labels = {POOL_LABEL: pool.name, REPLICA_LABEL: rid, OWNER_LABEL: pool.owner,
                  RUN_DIR_LABEL: str(pool.run_dir)}
        return {"environment": env, "labels": labels, "host_kw": host_kw, **create_kw}

    @staticmethod
    def _write_token(rdir: Path, token: str) -> None:
        """Create the replica's run directory with its token, for the replica's server (`osgym`) only.

        As root: the directory (0700) and the token (0600) belong to the server's uid. Otherwise
        (a user in the docker group cannot chown), the directory keeps our primary group and is
        set-gid 2770, the token 0640: the server joins that group at start (its socket inherits
        it), and nothing is world-accessible. The agent's account cannot reach the mount either
        way (:data:`CTL_MOUNT`).
        """
        rdir.mkdir(mode=0o700)  # the pool directory is ours and private: a leftover here is an error
        tok = rdir / "token"
        fd = os.open(tok, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(token)
        if os.geteuid() == 0:
            os.chown(tok, SERVER_UID, SERVER_GID)
            os.chown(rdir, SERVER_UID, SERVER_GID)
        else:
            os.chmod(tok, 0o640)
            os.chmod(rdir, 0o2770)

    @staticmethod
    def token_archive(token: str) -> bytes:
        """A tar holding ``token`` as the file the replica's server reads and deletes
        (``/run/osgym/ctl/token``), owned by the server's uid and readable by it only; unpacked into
        ``/run/osgym/ctl``, inside the server's own 0700 directory, which the agent's user cannot enter."""
        data = token.encode()
        info = tarfile.TarInfo("token")
        info.size, info.mode, info.uid, info.gid = len(data), 0o600, SERVER_UID, SERVER_UID
        info.mtime = int(time.time())
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w") as tar:
            tar.addfile(info, io.BytesIO(data))
        return out.getvalue()

    def start_one(self, host: DockerHost) -> Replica:
        """Create and start one container on ``host``, wait until it is ready, and queue it for leasing.

        Raises:
            ReplicaStartTimeout: if it is not ready within the pool's ``start_timeout``.
            ReplicaUnreachable: if it exits during start, or Docker fails.
        """
        pool = self.pool
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        t0 = time.monotonic()
        rdir = pool.run_dir / rid
        loopback = allocate_loopback() if pool.compat else None
        api = host.client.api
        cid: str | None = None
        replica: Replica | None = None
        try:
            if pool.transport == "unix":
                self._write_token(rdir, token)
            cfg = self.container_config(rid, rdir, loopback)
            host_config = api.create_host_config(**cfg.pop("host_kw"))
            t_prep = time.monotonic()
            cid = api.create_container(pool.image, name=f"{pool.name}-{rid}", detach=True, hostname=REPLICA_HOSTNAME,
                                       host_config=host_config, **cfg)["Id"]
            t_create = time.monotonic()
            if pool.transport == "tcp" and not pool.compat and not api.put_archive(cid, CTL_MOUNT,
                                                                                  self.token_archive(token)):
                raise ReplicaUnreachable(f"replica {rid}: Docker refused to copy the control token in")
            api.start(cid)
            t_start = time.monotonic()
            container = host.client.containers.prepare_model({"Id": cid})
            if pool.compat:
                endpoint, token_or_none = f"http://{loopback}:{CONTROL_PORT}", None
            elif pool.transport == "unix":
                endpoint, token_or_none = f"unix:{rdir / 'control.sock'}", token
            else:
                port = api.port(cid, CONTROL_PORT)[0]["HostPort"]
                endpoint, token_or_none = f"http://127.0.0.1:{port}", token
            replica = Replica(rid, endpoint, token_or_none, host=host.name, container=container,
                              timeouts=pool.timeouts)
            replica.loopback = loopback  # type: ignore[attr-defined]
            with pool._lock:
                pool._all[rid] = replica
                pool._host_of[rid] = host
                pool.stats.started += 1
            pool._event(replica, "created")
            pool.accountant.track(rid, cid)
            t_sock, t_health, t_shot = self.wait_ready(replica, host, t0)
        except Exception as exc:
            self._start_failed(host, rid, cid, replica, loopback, rdir, exc)
            if isinstance(exc, ReplicaError):
                raise
            raise ReplicaUnreachable(f"replica on {host.name} failed to start: {exc}") from exc
        elapsed = time.monotonic() - t0
        with pool._lock:
            ok = replica.state is ReplicaState.STARTING and not pool._closed
            if ok:
                replica.state = ReplicaState.READY
                replica.ready_at = time.time()
                pool.stats.ready += 1
                pool.stats.start_s.append(elapsed)
                pool.stats.phases.append({"prepare": t_prep - t0, "create": t_create - t_prep,
                                          "start": t_start - t_create, "socket": t_sock - t_start,
                                          "health": t_health - t_sock, "screenshot": t_shot - t_health})
        if ok:
            pool._event(replica, "ready", elapsed_s=elapsed)
            pool.health.mark_checked(rid)
            pool._ready.put(replica)
        return replica

    def _start_failed(self, host: DockerHost, rid: str, cid: str | None, replica: Replica | None,
                      loopback: str | None, rdir: Path, exc: Exception) -> None:
        """Undo a failed start (container, registry, loopback, run dir) and count it against its host."""
        pool = self.pool
        pool.stats.start_failures += 1
        cause = f"start failed: {type(exc).__name__}: {exc}"
        unreachable = isinstance(exc, (requests.exceptions.ConnectionError, docker.errors.DockerException)) \
            and not isinstance(exc, docker.errors.APIError)
        if cid is not None:
            with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                host.client.api.remove_container(cid, force=True)
        pool.accountant.finish(rid)
        with pool._lock:
            pool._all.pop(rid, None)
            pool._host_of.pop(rid, None)
            pool._placed[host.name] -= 1
        if replica is not None:
            replica.close()
        free_loopback(loopback)
        shutil.rmtree(rdir, ignore_errors=True)
        pool._record(PoolEvent(time.time(), pool.name, rid, host.name, "faulted", cause[:2000]))
        if unreachable:
            pool.health.quarantine(host, f"docker unreachable: {exc}")
        else:
            pool.health.host_outcome(host, ok=False)

    def wait_ready(self, replica: Replica, host: DockerHost, t0: float) -> tuple[float, float, float]:
        """Poll until /health answers and a screenshot is non-empty; fail fast if the container exits.

        The socket's appearance is polled with a cheap stat every 5 ms; the HTTP
        probes start only once it exists. The container state is checked once a
        second, not on every probe.

        Returns:
            Monotonic times at which the socket appeared, /health answered and a screenshot came.
        """
        pool = self.pool
        deadline = t0 + pool.start_timeout
        sock = replica.api.endpoint[len("unix:"):] if replica.api.endpoint.startswith("unix:") else None
        last: Exception | None = None
        next_state_check = time.monotonic() + 1.0
        t_sock = t_health = 0.0
        while time.monotonic() < deadline:
            if pool._closed:
                raise PoolError(f"pool {pool.name} closed while replica {replica.id} was starting")
            if sock is None or os.path.exists(sock):
                t_sock = t_sock or time.monotonic()
                try:
                    if not t_health:
                        replica.health(timeout=min(2.0, pool.timeouts.health))
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
        raise ReplicaStartTimeout(f"replica {replica.id} not ready within {pool.start_timeout} s: {last}")

    def remove(self, replica: Replica, cause: str) -> None:
        """Remove the container (and run dir). OOM kills are recorded as they happen, by the
        health monitor's :class:`~osgym.replicas.health.OomWatcher`."""
        pool = self.pool
        replica.close()
        usage = pool.accountant.finish(replica.id)  # the last reading, before the cgroup goes
        with pool._lock:
            known = pool._all.pop(replica.id, None) is not None
            host = pool._host_of.pop(replica.id, None)
            pool.health.forget(replica.id)
            if known and host is not None:
                pool._placed[host.name] -= 1
        free_loopback(getattr(replica, "loopback", None))
        if replica.container is not None and host is not None:
            api = host.client.api
            try:
                api.remove_container(replica.container.id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    pool._event(replica, "faulted", f"remove failed: {exc}")
            except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
                cause = f"{cause}; container left for the reaper: docker unreachable ({exc})"
                pool.health.quarantine(host, f"docker unreachable: {exc}")
        shutil.rmtree(pool.run_dir / replica.id, ignore_errors=True)
        if known:
            pool.stats.removed += 1
            pool._event(replica, "removed", cause, usage=usage)
