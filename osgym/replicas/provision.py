"""Provisioning: starting a pool's replica containers until they are ready, and removing them.

:class:`Provisioner` places each new replica on the host with the most free planned
capacity, creates the container with the pool's limits, labels and network (none, or one of
osgym's fenced networks: :mod:`osgym.replicas.network`), hands it its token (a file in its
bind-mounted run directory, or with the TCP transport a file copied into the container before
it starts: never its environment, which ``docker inspect`` shows), and polls it until
``/health`` answers and a screenshot is non-empty. A failed start is retried on a fresh
container (up to three tries, :func:`osgym.retrying.retrying`); its host's failure rate goes
up, and an unreachable daemon quarantines the host. Before the first start it prepares the
hosts (:meth:`Provisioner.prepare`: the runtime, the run directory, the network).

The pool owns one provisioner and passes it what every replica is made of
(:class:`~osgym.replicas.spec.ReplicaSpec`, the operator's settings read once, when the pool is made)
and the state it shares: the registry the provisioner fills (:mod:`osgym.replicas.pool_state`),
the event recorder, the lease queue, the accountant and the health monitor.
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
from pathlib import Path
from typing import Any

import docker.errors
import requests.exceptions

from osgym.errors import PoolError, ReplicaError, ReplicaStartTimeout, ReplicaUnreachable
from osgym.replicas.accounting import Accountant
from osgym.replicas.accounts import AGENT_GID, AGENT_HOME, AGENT_UID, SERVER_GID, SERVER_UID
from osgym.replicas.client import Replica, ReplicaState
from osgym.replicas.events import EventRecorder
from osgym.replicas.health import HealthMonitor
from osgym.replicas.hosts import DockerHost, check_runtime
from osgym.replicas.lease_queue import LeaseQueue
from osgym.replicas.loopback import CONTROL_PORT, DEVTOOLS_PORT, allocate_loopback, free_loopback
from osgym.replicas.network import HOSTS_FILE, ReplicaNetwork, container_sysctls, prepare_network, write_hosts
from osgym.replicas.pool_state import PoolStats, ReplicaRegistry
from osgym.replicas.reaper import (
    LEASE_FILE,
    OWNER_LABEL,
    POOL_LABEL,
    REPLICA_LABEL,
    RUN_DIR_LABEL,
    RUN_LABEL,
    ensure_private_dir,
)
from osgym.replicas.spec import ReplicaSpec
from osgym.retrying import retrying

__all__ = ["CONTROL_PORT", "COMPAT_CAP_DROP", "CTL_MOUNT", "NATIVE_CAP_ADD", "SERVER_UID", "Provisioner"]

START_ATTEMPTS = 3
"""Containers tried per replica slot before the start counts as failed."""

NATIVE_CAP_ADD = ["SETUID", "SETGID", "SETPCAP"]
"""The only capabilities a native replica keeps. The entry point starts as root and drops to
`osgym` keeping SETUID and SETGID, to start the desktop and the agent's commands as `user` and to
touch files as `user` (server/uids.py); processes it starts as `user` get none (no-new-privileges).
SETPCAP is only for root steps (``docker exec --user root``), which use it to empty their own
bounding set before the task's command runs (:mod:`osgym.replicas.execution`): without it a root
step could not drop SETUID, and with SETUID it could become the server and reach its run directory."""

CTL_MOUNT = "/run/osgym/ctl"
"""Where the replica's run directory is mounted: below the server's own directory (mode 0700,
`osgym`), so the agent's account cannot reach it even when its uid owns the host directory."""
ASSETS_MOUNT = "/run/osgym/assets"
"""Where a compatibility replica sees the pool's ``assets_dir`` (read-only), for ``/setup/download_file``."""

COMPAT_CAP_DROP = ["NET_RAW", "MKNOD", "SYS_CHROOT", "SETFCAP", "NET_BIND_SERVICE"]
"""Capabilities removed from Docker's default set in OSWorld compatibility mode.

What stays (CHOWN, DAC_OVERRIDE, FOWNER, FSETID, KILL, SETGID, SETUID, SETPCAP,
AUDIT_WRITE) is what ``sudo`` and package-style task setup need; raw sockets,
device nodes, chroot and file capabilities go."""


REPLICA_HOSTNAME = "osgym"
"""Every replica's host name. Shell prompts and terminal titles show it, so with Docker's default (the
container id) two replicas set up from one task and seed would not start from the same screen."""


class Provisioner:
    """Starts and removes one pool's containers, in background threads.

    Args:
        spec: what every replica is made of.
        target: replicas the pool keeps alive or starting (``size + standby``).
        start_concurrency: containers started at once.
        registry: the pool's registry, which started replicas are entered in and removed ones leave.
        ready: the pool's lease queue, which replicas join once ready.
        stats: the pool's counts and latencies.
        recorder: the pool's event recorder.
        accountant: the pool's cgroup accounting, which tracks each replica from its start to its removal.
        health: the pool's health monitor: told of each ready and removed replica, and of each failure of a host.
    """

    def __init__(self, spec: ReplicaSpec, *, target: int, start_concurrency: int, registry: ReplicaRegistry,
                 ready: LeaseQueue[Replica], stats: PoolStats, recorder: EventRecorder, accountant: Accountant,
                 health: HealthMonitor):
        self.spec = spec
        self.target = target
        self.registry = registry
        self.ready = ready
        self.stats = stats
        self.recorder = recorder
        self.accountant = accountant
        self.health = health
        self._starter = ThreadPoolExecutor(max_workers=max(1, min(start_concurrency, target + 4)),
                                           thread_name_prefix=f"{spec.pool_name}-start")
        self._remover = ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"{spec.pool_name}-rm")

    def prepare(self) -> dict[str, ReplicaNetwork]:
        """Make each host that is not quarantined ready for the replicas, before any starts: their runtime known to
        its daemon, the pool's run directory private, their network and its host firewall rules; returns the
        networks by host name.

        Raises:
            ConfigError: if a daemon does not know the runtime, or the run directory belongs to another user or
                others may write it.
            PoolError: if a network or its host firewall rules cannot be set up
                (:func:`osgym.replicas.network.prepare_network`).
        """
        spec, hosts = self.spec, [h for h in self.registry.hosts if not h.quarantined]
        if spec.runtime is not None:
            for h in hosts:
                check_runtime(h.client, h.name, spec.runtime)
        ensure_private_dir(spec.run_dir.parent)
        ensure_private_dir(spec.run_dir)
        kind = spec.network_kind
        return {} if kind is None else {h.name: prepare_network(h.client, kind) for h in hosts}

    # ---- slots ---------------------------------------------------------------
    def refill(self) -> list[Future[Replica]]:
        """Start replicas until ``size + standby`` are alive or starting."""
        reg = self.registry
        futures: list[Future[Replica]] = []
        with reg.lock:
            if reg.closed:
                return futures
            while reg.slots < self.target:
                reg.slots += 1
                try:
                    futures.append(self._starter.submit(self.start_with_retry))
                except RuntimeError:  # executor shut down
                    reg.slots -= 1
                    break
        return futures

    def mark_leased(self, replica: Replica) -> None:
        """Leave :data:`LEASE_FILE` in a leased replica's control directory, where ``osgym pool list`` reads it
        through Docker. Only where that directory is the host's (the Unix transport); best effort: a replica
        unmarked shows as idle, and the lease goes on. The replica's server can write that directory: the file is
        created anew and never through a link it may have put there (O_EXCL, O_NOFOLLOW)."""
        if self.spec.transport == "unix":
            with contextlib.suppress(OSError):
                fd = os.open(self.spec.run_dir / replica.id / LEASE_FILE,
                             os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, "w") as f:
                    f.write(f"{time.time():.0f}\n")

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
        reg = self.registry
        with reg.lock:
            live = [h for h in reg.hosts if not h.quarantined]
            if not live:
                raise PoolError(f"pool {self.spec.pool_name}: every host is quarantined: "
                                f"{self.health.hosts_report()}")
            host = min(live, key=lambda h: (reg.placed[h.name] + 1) / max(h.capacity or 1, 1))
            reg.placed[host.name] += 1
            return host

    def start_with_retry(self, attempts: int = START_ATTEMPTS) -> Replica:
        """Start one replica, on a fresh container after each failure; frees the slot if every try fails.

        Raises:
            ReplicaError: the last start failure.
            PoolError: if the pool closed, or every host is quarantined.
        """
        reg = self.registry

        def retry_start(exc: BaseException) -> bool:
            return isinstance(exc, ReplicaError) and not reg.closed

        try:
            for attempt in retrying(attempts=attempts, on=retry_start):
                with attempt:
                    if reg.closed:
                        raise PoolError(f"pool {self.spec.pool_name} is closed")
                    return self.start_one(self._pick_host())
        except BaseException:
            reg.free_slot()
            raise
        raise AssertionError("unreachable: retrying returns or raises")  # pragma: no cover

    # ---- one container ------------------------------------------------------
    def container_config(self, rid: str, rdir: Path, loopback: str | None) -> dict[str, Any]:
        """``create_container`` arguments: environment, labels, ports, and ``host_kw`` for the host config.

        It is not given the token: whatever goes in here, ``docker inspect`` shows."""
        spec, limits = self.spec, self.spec.limits
        env = {"OSGYM_SCREEN": f"{spec.screen[0]}x{spec.screen[1]}"}
        if not spec.memory_merge:
            env["OSGYM_KSM"] = "0"
        host_kw: dict[str, Any] = dict(
            mem_limit=f"{limits.mem_mib}m", memswap_limit=f"{limits.mem_mib + spec.swap_mib}m",
            nano_cpus=int(limits.cpus * 1e9), pids_limit=limits.pids,
            shm_size=f"{limits.shm_mib}m", init=True,
            # never Docker's default bridge: osgym's own fenced network, or none (osgym.replicas.network)
            network_mode=spec.network_name or "none",
            # What an agent can fill on the host: /tmp (a bounded tmpfs; exec, as a disk /tmp allows)
            # and the container's log, rotated. The writable layer only where the driver can bound it.
            tmpfs={"/tmp": f"rw,exec,nosuid,nodev,size={limits.tmp_mib}m,mode=1777"},
            log_config={"Type": "json-file",
                        "Config": {"max-size": f"{limits.log_mib}m", "max-file": "2"}},
        )
        if spec.runtime is not None:
            host_kw["runtime"] = spec.runtime
        host_kw["sysctls"] = container_sysctls()
        if limits.home_mib is not None:  # `user`'s (uid 1000): the server fills it as `user`, its root cannot
            host_kw["tmpfs"][AGENT_HOME] = (f"rw,exec,nosuid,nodev,size={limits.home_mib}m,uid={AGENT_UID},"
                                            f"gid={AGENT_GID},mode=0755")
        if spec.disk_mib is not None:
            host_kw["storage_opt"] = {"size": f"{spec.disk_mib}m"}
        create_kw: dict[str, Any] = {}
        if spec.compat:
            env["OSGYM_COMPAT"] = "1"
            env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
            host_kw["cap_drop"] = COMPAT_CAP_DROP
            host_kw["port_bindings"] = {CONTROL_PORT: (loopback, CONTROL_PORT),
                                        DEVTOOLS_PORT: (loopback, DEVTOOLS_PORT)}
            create_kw["ports"] = [CONTROL_PORT, DEVTOOLS_PORT]
            if spec.assets_dir is not None:
                # inside the server's own 0700 directory: the server reads it, the agent's account cannot
                host_kw["binds"] = {str(spec.assets_dir): {"bind": ASSETS_MOUNT, "mode": "ro"}}
        else:
            host_kw["cap_drop"] = ["ALL"]
            host_kw["cap_add"] = NATIVE_CAP_ADD
            host_kw["security_opt"] = ["no-new-privileges"]
            if spec.transport == "unix":
                env["OSGYM_LISTEN"] = f"unix:{CTL_MOUNT}/control.sock"
                host_kw["binds"] = {str(rdir): {"bind": CTL_MOUNT, "mode": "rw"}}
                if not spec.network_name:
                    # no network sandbox of Docker's either, and no prestart hook on every start and restore
                    # (osgym.replicas.network.HOSTS_FILE): runc sets up the namespace it makes, and CRIU's
                    # action script a clone's (scripts/criu/restore-netns.c); the sysctls keep it IPv4 only
                    create_kw["network_disabled"] = True
                    host_kw["binds"][str(rdir / HOSTS_FILE)] = {"bind": "/etc/hosts", "mode": "ro"}
            else:
                # The token is copied into the container before it starts (start_one), not passed in
                # its environment, where `docker inspect` and /proc/*/environ would show it.
                env["OSGYM_LISTEN"] = f"tcp:0.0.0.0:{CONTROL_PORT}"
                host_kw["port_bindings"] = {CONTROL_PORT: ("127.0.0.1", None)}
                create_kw["ports"] = [CONTROL_PORT]
        labels = {POOL_LABEL: spec.pool_name, REPLICA_LABEL: rid, OWNER_LABEL: spec.owner,
                  RUN_DIR_LABEL: str(spec.run_dir), **({RUN_LABEL: spec.run_id} if spec.run_id else {})}
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
        spec = self.spec
        rid = uuid.uuid4().hex[:10]
        token = secrets.token_urlsafe(24)
        t0 = time.monotonic()
        rdir = spec.run_dir / rid
        loopback = allocate_loopback() if spec.compat else None
        api = host.client.api
        cid: str | None = None
        replica: Replica | None = None
        try:
            if spec.transport == "unix":
                self._write_token(rdir, token)
            cfg = self.container_config(rid, rdir, loopback)
            if cfg.get("network_disabled"):
                write_hosts(rdir)  # the file container_config binds at /etc/hosts
            host_config = api.create_host_config(**cfg.pop("host_kw"))
            t_prep = time.monotonic()
            cid = api.create_container(spec.image, name=f"{spec.pool_name}-{rid}", detach=True,
                                       hostname=REPLICA_HOSTNAME, host_config=host_config, **cfg)["Id"]
            t_create = time.monotonic()
            if spec.transport == "tcp" and not spec.compat and not api.put_archive(cid, CTL_MOUNT,
                                                                                  self.token_archive(token)):
                raise ReplicaUnreachable(f"replica {rid}: Docker refused to copy the control token in")
            api.start(cid)
            t_start = time.monotonic()
            container = host.client.containers.prepare_model({"Id": cid})
            if spec.compat:
                endpoint, token_or_none = f"http://{loopback}:{CONTROL_PORT}", None
            elif spec.transport == "unix":
                endpoint, token_or_none = f"unix:{rdir / 'control.sock'}", token
            else:
                port = api.port(cid, CONTROL_PORT)[0]["HostPort"]
                endpoint, token_or_none = f"http://127.0.0.1:{port}", token
            replica = Replica(rid, endpoint, token_or_none, host=host.name, container=container,
                              timeouts=spec.timeouts, socket_owner=SERVER_UID if spec.transport == "unix" else None,
                              confine_root_steps=not spec.compat)
            replica.loopback = loopback  # type: ignore[attr-defined]
            with self.registry.lock:
                self.registry.add(replica, host)
                self.stats.started += 1
            self.recorder.replica(replica, "created")
            self.accountant.track(rid, cid)
            t_sock, t_health, t_shot = self.wait_ready(replica, host, t0)
        except Exception as exc:
            self._start_failed(host, rid, cid, replica, loopback, rdir, exc)
            if isinstance(exc, ReplicaError):
                raise
            raise ReplicaUnreachable(f"replica on {host.name} failed to start: {exc}") from exc
        return self.queue_ready(replica, t0, {"prepare": t_prep - t0, "create": t_create - t_prep,
                                              "start": t_start - t_create, "socket": t_sock - t_start,
                                              "health": t_health - t_sock, "screenshot": t_shot - t_health})

    def queue_ready(self, replica: Replica, t0: float, phases: dict[str, float]) -> Replica:
        """Mark a replica that answered its readiness checks READY and put it in the lease queue, unless it
        faulted or the pool closed meanwhile; ``phases`` are its start's durations, for the pool's stats."""
        elapsed = time.monotonic() - t0
        with self.registry.lock:
            ok = replica.state is ReplicaState.STARTING and not self.registry.closed
            if ok:
                replica.state = ReplicaState.READY
                replica.ready_at = time.time()
                self.stats.ready += 1
                self.stats.start_s.append(elapsed)
                self.stats.phases.append(phases)
        if ok:
            self.recorder.replica(replica, "ready", elapsed_s=elapsed)
            self.health.mark_checked(replica.id)
            self.ready.put(replica)
        return replica

    def _start_failed(self, host: DockerHost, rid: str, cid: str | None, replica: Replica | None,
                      loopback: str | None, rdir: Path, exc: Exception) -> None:
        """Undo a failed start (container, registry, loopback, run dir) and count it against its host."""
        self.stats.start_failures += 1
        cause = f"start failed: {type(exc).__name__}: {exc}"
        unreachable = isinstance(exc, (requests.exceptions.ConnectionError, docker.errors.DockerException)) \
            and not isinstance(exc, docker.errors.APIError)
        if cid is not None:
            with contextlib.suppress(docker.errors.DockerException, requests.exceptions.RequestException):
                host.client.api.remove_container(cid, force=True)
        self.accountant.finish(rid)
        self.registry.start_failed(rid, host)
        if replica is not None:
            replica.close()
        free_loopback(loopback)
        shutil.rmtree(rdir, ignore_errors=True)
        self.recorder.record("faulted", rid, host.name, cause[:2000])
        if unreachable:
            self.health.quarantine(host, f"docker unreachable: {exc}")
        else:
            self.health.host_outcome(host, ok=False)

    def wait_ready(self, replica: Replica, host: DockerHost, t0: float) -> tuple[float, float, float]:
        """Poll until /health answers and a screenshot is non-empty; fail fast if the container exits.

        The socket's appearance is polled with a cheap stat every 5 ms; the HTTP
        probes start only once it exists. The container state is checked once a
        second, not on every probe.

        Returns:
            Monotonic times at which the socket appeared, /health answered and a screenshot came.
        """
        spec = self.spec
        deadline = t0 + spec.start_timeout
        sock = replica.api.endpoint[len("unix:"):] if replica.api.endpoint.startswith("unix:") else None
        last: Exception | None = None
        next_state_check = time.monotonic() + 1.0
        t_sock = t_health = 0.0
        while time.monotonic() < deadline:
            if self.registry.closed:
                raise PoolError(f"pool {spec.pool_name} closed while replica {replica.id} was starting")
            if sock is None or os.path.exists(sock):
                t_sock = t_sock or time.monotonic()
                try:
                    if not t_health:
                        replica.health(timeout=min(2.0, spec.timeouts.health))
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
        raise ReplicaStartTimeout(f"replica {replica.id} not ready within {spec.start_timeout} s: {last}")

    def remove(self, replica: Replica, cause: str) -> None:
        """Remove the container (and run dir). OOM kills are recorded as they happen, by the
        health monitor's :class:`~osgym.replicas.health.OomWatcher`."""
        replica.close()
        usage = self.accountant.finish(replica.id)  # the last reading, before the cgroup goes
        known, host = self.registry.remove(replica.id)
        self.health.forget(replica.id)
        free_loopback(getattr(replica, "loopback", None))
        if replica.container is not None and host is not None:
            api = host.client.api
            try:
                api.remove_container(replica.container.id, force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as exc:
                if "already in progress" not in str(exc):
                    self.recorder.replica(replica, "faulted", f"remove failed: {exc}")
            except (requests.exceptions.RequestException, docker.errors.DockerException) as exc:
                cause = f"{cause}; container left for the reaper: docker unreachable ({exc})"
                self.health.quarantine(host, f"docker unreachable: {exc}")
        shutil.rmtree(self.spec.run_dir / replica.id, ignore_errors=True)
        if known:
            self.stats.removed += 1
            self.recorder.replica(replica, "removed", cause, usage=usage)
