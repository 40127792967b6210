"""``ReplicaPool``: provision, lease, reset (discard and replace), recover and reap replicas.

A pool owns every container that carries its ``osgym.pool=<name>`` label and touches nothing else.
Replicas are handed out through a lease queue; a released replica is always discarded and replaced, so every
lease starts from a clean desktop. ``standby`` extra replicas are kept ready so an episode rarely waits.

The pool is composed of one part per concern:

- :mod:`osgym.replicas.provision`: :class:`Provisioner` starts containers (limits, labels,
  run directories, tokens) and waits until they are ready; it also removes them.
- this module: leasing (lease, release, discard, refill to ``size + standby``).
- :mod:`osgym.replicas.lease_queue`: :class:`LeaseQueue` hands ready replicas to waiting leases in the
  order they asked.
- :mod:`osgym.replicas.health`: :class:`HealthMonitor` probes idle replicas and quarantines
  failing hosts.
- :mod:`osgym.replicas.reaper`: the labels, the owner identity, and :func:`reap`.
- :mod:`osgym.replicas.spec` and :mod:`osgym.replicas.limits`: what every replica is made of.
- :mod:`osgym.replicas.restore`: with ``reset="restore"``, replicas restored from a checkpoint instead.

The pool makes the state its parts share (:mod:`osgym.replicas.pool_state`, events, lease queue) and passes it on.

Recovery works in layers:

1. every control request has a finite deadline (:class:`osgym.replicas.client.Timeouts`),
   so a hung replica raises ``ReplicaUnreachable`` within ``timeouts.read`` seconds;
2. a replica that faults during a lease is discarded (``faulted`` event) and the
   caller retries the episode on a fresh one; a background health checker probes
   idle replicas and replaces dead or hung ones; an OOM kill inside a replica is recorded as a fault
   as Docker reports it (:class:`~osgym.replicas.health.OomWatcher`) and ends its lease as one;
3. a host whose recent failure rate crosses a threshold, or whose daemon stops
   answering, is quarantined: no new replicas go there (``quarantined`` event,
   :meth:`ReplicaPool.hosts_report`).

Replicas spread over several Docker hosts (:mod:`osgym.replicas.hosts`) in proportion to
their capacity (:mod:`osgym.replicas.capacity`); the pool refuses to plan past that
capacity unless ``force=True``.
"""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests.exceptions

from osgym.errors import CapacityError, ConfigError, LeaseTimeout, PoolError, ReplicaError, ReplicaOomKilled
from osgym.replicas import parking
from osgym.replicas.accounting import Accountant
from osgym.replicas.client import DEFAULT_TIMEOUTS, Replica, ReplicaState, Timeouts
from osgym.replicas.cost import DEFAULT_PROFILE, Profile
from osgym.replicas.events import EventRecorder, PoolEvent, events_table
from osgym.replicas.health import OOM_CAUSE, HealthMonitor
from osgym.replicas.hollow import CONTAINER, HOLLOW, REPLICA_KINDS
from osgym.replicas.hollow.provision import HollowProvisioner, hollow_hosts
from osgym.replicas.hosts import DockerHost, as_hosts
from osgym.replicas.lease_queue import LeaseQueue
from osgym.replicas.limits import ReplicaLimits, limits_for
from osgym.replicas.network import ReplicaNetwork
from osgym.replicas.pool_state import PoolStats, ReplicaRegistry
from osgym.replicas.provision import COMPAT_CAP_DROP, CONTROL_PORT, Provisioner
from osgym.replicas.reaper import (
    OWNER_LABEL,
    POOL_LABEL,
    REPLICA_LABEL,
    RUN_DIR_LABEL,
    default_run_dir,
    owner_alive,
    owner_id,
    reap,
)
from osgym.replicas.restore import RESTORE, RestoringProvisioner, check_reset
from osgym.replicas.spec import ReplicaSpec
from osgym.replicas.warm import DESKTOP
from osgym.settings import settings
from osgym.sigterm import signals_held

__all__ = ["POOL_LABEL", "REPLICA_LABEL", "OWNER_LABEL", "RUN_DIR_LABEL", "CONTROL_PORT", "PoolEvent", "PoolStats",
           "ReplicaLimits", "ReplicaPool", "events_table", "limits_for", "reap", "default_run_dir", "owner_id",
           "owner_alive", "COMPAT_CAP_DROP"]


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
        hosts: Docker endpoints (URLs or :class:`osgym.replicas.hosts.DockerHost`) to spread replicas over;
            each must be a daemon on this machine (``unix://``), see :mod:`osgym.replicas.hosts`.
        limits: per-replica resource limits.
        screen: X screen size of each replica.
        egress: put replicas on osgym's ``osgym-egress`` network: the public internet only, no other
            replica, no private, link-local or host address (:mod:`osgym.replicas.network`). Default:
            no network at all.
        transport: "unix" (socket in a bind-mounted directory, default) or "tcp" (port published on
            127.0.0.1; the replica sits on the ``osgym-isolated`` network, without egress unless ``egress``).
        compat: OSWorld compatibility mode: tokenless replicas on ``http://127.0.0.N:5000``, on the
            ``osgym-isolated`` network (``osgym-egress`` with ``egress``), no ``no-new-privileges`` and
            Docker's default capabilities minus :data:`COMPAT_CAP_DROP`, so ``sudo`` works. Trusted agents only.
        assets_dir: a local offline asset cache (:mod:`osgym.tasks.assets`), mounted read-only into
            compatibility replicas, where OSWorld's ``/setup/download_file`` reads it (and the network
            never). Only with ``compat``: osgym's own setup steps read the cache on the host.
        memory_merge: opt the replicas' processes into the host's KSM (:mod:`osgym.replicas.ksm`), which
            merges their identical pages while the operator runs ``ksmd``; off: ``False``.
        runtime: the OCI runtime of the replicas' containers, a name registered with each Docker daemon
            (``crun``: scripts/ensure-docker.sh registers Debian's); default ``OSGYM_REPLICA_RUNTIME``, else
            the daemon's default (runc).
        force: start even if ``size + standby`` exceeds the hosts' planned capacity.
        health_interval: seconds between background health probes of idle replicas (0 disables).
        start_concurrency: containers started at once.
        start_timeout: seconds a replica may take to become ready.
        timeouts: control-request deadlines.
        on_event: called with every :class:`PoolEvent`, from the pool's threads.
        kind: ``container`` (default: each replica a Docker container) or ``hollow``: replicas that speak the
            control protocol over the same transport with a synthetic screen and no container, to load the
            control plane at scale (:mod:`osgym.replicas.hollow`); never for agent data.
        reset: ``cold`` or ``restore``: each replica restored from a checkpoint of one brought to the ``warm`` state
            (:mod:`osgym.replicas.warm`; :mod:`osgym.replicas.restore`); default ``OSGYM_REPLICA_RESET`` where it can.
        profile: what one replica uses (:class:`osgym.replicas.cost.Profile`, measured by a previous run);
            the hosts' capacity is the cost model's density for it (default: ``cost.DEFAULT_PROFILE``).
        sample_interval: seconds between samples of each replica's cgroup (:mod:`osgym.replicas.accounting`),
            besides those at lease, release and removal; 0: only those (one costs ~5 ms CPU: 10 s is cheap).
        run_id: the collection run this pool serves, labelled on its containers (``osgym pool list`` shows it).

    Raises:
        ConfigError: if ``size``, ``standby``, ``transport`` or ``assets_dir`` is out of range, a host is not a
            Docker daemon on this machine, or an ``OSGYM_*`` setting is not valid (read once, here).
        PoolError: if every Docker host is unreachable.
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
        assets_dir: Path | None = None,
        memory_merge: bool = True,
        runtime: str | None = None,
        force: bool = False,
        health_interval: float = 2.0,
        start_concurrency: int = 8,
        start_timeout: float = 30.0,
        timeouts: Timeouts = DEFAULT_TIMEOUTS,
        run_dir: Path | None = None,
        on_event: Callable[[PoolEvent], None] | None = None,
        sample_interval: float = 10.0,
        profile: Profile | None = None,
        kind: str = CONTAINER,
        reset: str | None = None,
        warm: str = DESKTOP,
        run_id: str | None = None,
    ):
        if kind not in REPLICA_KINDS:
            raise ConfigError(f"kind: expected one of {', '.join(REPLICA_KINDS)}, actual {kind!r:.40}")
        self.kind = kind
        if size < 1:
            raise ConfigError(f"size: expected >= 1, actual {size}")
        if standby < 0:
            raise ConfigError(f"standby: expected >= 0, actual {standby}")
        self.image = image
        self.size = size
        self.standby = standby
        self.name = name or f"osgym-{uuid.uuid4().hex[:8]}"
        self.owner = owner_id()
        self.run_dir = (run_dir or default_run_dir()) / self.name
        self.spec = ReplicaSpec.for_pool(
            image, self.name, owner=self.owner, run_dir=self.run_dir, screen=screen, limits=limits, egress=egress,
            transport=transport, compat=compat, assets_dir=assets_dir, memory_merge=memory_merge, runtime=runtime,
            timeouts=timeouts, start_timeout=start_timeout, run_id=run_id)
        self.limits, self.screen, self.compat, self.egress = limits, screen, compat, egress
        self.memory_merge, self.assets_dir = memory_merge, self.spec.assets_dir
        self.runtime, self.transport = self.spec.runtime, self.spec.transport
        self.network_kind, self.network_name = self.spec.network_kind, self.spec.network_name
        self.networks: dict[str, ReplicaNetwork] = {}
        self.force, self.health_interval, self.start_timeout, self.timeouts = (force, health_interval, start_timeout,
                                                                               timeouts)
        threads = size + standby + 4
        if kind == HOLLOW:
            self.hosts = hollow_hosts(host_name, hosts=hosts, docker_client=docker_client, compat=compat,
                                      egress=egress, transport=transport)
        else:
            self.hosts = as_hosts(hosts) if hosts is not None else [
                DockerHost(name=host_name, client=docker_client or docker.from_env(max_pool_size=threads * 2))]
        remote = [h.url if h.client is None else h.client.api.base_url for h in self.hosts
                  if not h.local and kind == CONTAINER]
        if remote:  # why: osgym.replicas.hosts
            raise ConfigError(f"hosts: expected Docker daemons on this machine (unix://), actual {remote}: remote "
                              "(tcp://, ssh://) daemons are not supported; run a worker with a local pool on each "
                              "host (docs/operations.md, \"Production\")")
        self.recorder = EventRecorder(self.name, on_event)
        self.events = self.recorder.events
        unreachable: dict[str, str] = {}
        for h in self.hosts if kind == CONTAINER else ():
            try:
                h.connect(max_pool_size=threads * 2)
            except docker.errors.DockerException as exc:
                if len(self.hosts) == 1:
                    raise PoolError(f"Docker host {h.url} unreachable: {exc}") from exc
                unreachable[h.name] = f"docker unreachable: {exc}"
        if len(unreachable) == len(self.hosts):
            raise PoolError(f"every Docker host is unreachable: {unreachable}")
        self.docker = next(h.client for h in self.hosts if h.name not in unreachable)  # None: hollow
        self.host_name = self.hosts[0].name
        self.stats = PoolStats()
        self.registry = ReplicaRegistry(self.hosts)
        self._ready: LeaseQueue[Replica] = LeaseQueue()
        self._draining = False
        self._started = False
        self.accountant = Accountant(sample_interval)
        self.profile = profile or DEFAULT_PROFILE
        self.health = HealthMonitor(self.name, health_interval, registry=self.registry, ready=self._ready,
                                    stats=self.stats, recorder=self.recorder, accountant=self.accountant,
                                    probe_timeout=timeouts.health, replace=self._discard, refill=self._refill)
        parts: dict[str, Any] = dict(target=self.target, start_concurrency=start_concurrency, ready=self._ready,
                                     registry=self.registry, stats=self.stats, recorder=self.recorder,
                                     accountant=self.accountant, health=self.health)
        self.reset, self.warm = check_reset(reset, warm, self.spec, kind), warm
        self.provisioner: Provisioner = (
            HollowProvisioner(self.spec, **parts) if kind == HOLLOW
            else RestoringProvisioner(self.spec, warm=warm, cache_dir=settings().checkpoint_dir, pool=ReplicaPool,
                                      **parts)
            if self.reset == RESTORE else Provisioner(self.spec, **parts))
        for h in self.hosts:
            if h.name in unreachable:
                h.capacity = 0
                self.health.quarantine(h, unreachable[h.name])

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

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.registry.closed

    @property
    def on_event(self) -> Callable[[PoolEvent], None] | None:
        """Called with every :class:`PoolEvent`, from the pool's threads; may be replaced at any time."""
        return self.recorder.sink

    @on_event.setter
    def on_event(self, sink: Callable[[PoolEvent], None] | None) -> None:
        self.recorder.sink = sink

    def plan(self) -> dict[str, int]:
        """Each host's planned capacity (replicas), computed once from its resources and the limits."""
        kw = {"mem_limit_mib": self.limits.mem_mib, "profile": self.profile}
        return {h.name: 0 if h.quarantined else h.plan_capacity(**kw) for h in self.hosts}

    def start(self, wait: bool = True) -> None:
        """Provision ``size + standby`` replicas in parallel; with ``wait``, block until ``size`` are ready.

        Raises:
            CapacityError: if the hosts' planned capacity is below ``size + standby`` and not ``force``.
            PoolError: if networked replicas' network or host firewall rules cannot be set up
                (:func:`osgym.replicas.network.prepare_network`).
            PoolError: if fewer than ``size`` replicas become ready.
            ConfigError: if the run directory belongs to another user or others may write it.
            KeyboardInterrupt: on Ctrl-C while replicas start (``SystemExit`` on SIGTERM): the pool is closed first.
        """
        if self._started:
            return
        planned = sum(self.plan().values())
        if self.target > planned and not self.force:
            raise CapacityError(f"pool {self.name}: {self.target} replicas requested, hosts hold {planned} "
                                f"({self.plan()}); pass force=True to overcommit")
        self.networks = self.provisioner.prepare()
        self._started = True
        try:
            (self.run_dir / "owner").write_text(self.owner)
            futures = self._refill()
            self.health.start()
            self.accountant.start()
            errors = [exc for f in futures if (exc := f.exception()) is not None] if wait else []
        except BaseException:  # Ctrl-C or SIGTERM while they start: `with` calls no __exit__ when __enter__ raises
            self.close()
            raise
        if len(errors) > self.standby:
            self.close()
            ok = len(futures) - len(errors)
            raise PoolError(f"only {ok} of {len(futures)} replicas started: {errors[0]}") from errors[0]

    def close(self) -> None:
        """Remove every replica of this pool and its run directory. Idempotent. A Ctrl-C or SIGTERM meanwhile is
        acted on once they are gone: stopping halfway would leave replicas that only ``osgym pool reap`` removes."""
        if self.registry.closed:
            return
        with signals_held():
            self.registry.closed = True
            self._ready.close()  # leases waiting for a replica raise PoolError now, not at their timeout
            self.health.stop(wait=False)
            self.provisioner.stop_starting()
            self.health.stop()
            self.provisioner.remove_all(self.registry.replicas(), "pool closed")
            self.accountant.stop()
            for h in self.hosts:  # anything a failed start left; a dead host's leftovers wait for the reaper
                if h.client is None:
                    continue
                try:
                    reap(h.client, pool=self.name, run_dir=self.run_dir.parent)
                except (docker.errors.DockerException, requests.exceptions.RequestException) as exc:
                    self.health.quarantine(h, f"docker unreachable at close: {exc}")
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def drain(self) -> None:
        """Stop leasing and replacing (a server that stops): leases waiting or to come raise ``PoolError`` at
        once, and replicas given back are removed without a replacement. Leased ones stay with their holders."""
        self._draining = True
        self._ready.close()

    # ---- leasing ------------------------------------------------------------
    @contextlib.contextmanager
    def lease(self, timeout: float = 30.0, *, patient: bool = False) -> Iterator[Replica]:
        """Hand out a clean replica; on exit it is discarded and replaced, on every path.

        A ``ReplicaError`` raised inside the block marks the replica faulted (with
        its class and message as the cause) before it is discarded and re-raised.

        Raises:
            LeaseTimeout: if no replica becomes ready within ``timeout`` seconds (retryable).
            PoolError: if the pool is closed.
            ReplicaOomKilled: if a process in the replica was killed at its memory limit during the
                block: what the block did there does not stand (the kill is recorded once, as a fault).
        """
        replica = self.acquire(timeout, patient=patient)
        try:
            yield replica
        except BaseException as exc:
            self.release(replica, fault=f"{type(exc).__name__}: {exc}" if isinstance(exc, ReplicaError) else None)
            raise
        if self.health.oom.killed_in_lease(replica):
            self.release(replica, fault=OOM_CAUSE, recorded=True)
            raise ReplicaOomKilled(f"replica {replica.id} on {replica.host}: {OOM_CAUSE} during the lease")
        self.release(replica)

    def acquire(self, timeout: float = 30.0, *, patient: bool = False) -> Replica:
        """Take a ready replica from the lease queue (see :meth:`lease`); leases that wait are served first come,
        first served. With ``patient``, ``timeout`` bounds the time in which no lease was served, not this
        lease's whole wait (:class:`~osgym.replicas.lease_queue.LeaseQueue`): a queue that moves is waited out.

        Raises:
            LeaseTimeout: if no replica is ready within ``timeout`` (a :class:`ReplicaError`, so the
                episode is retried).
            PoolError: if the pool is closed or draining, or no replica was ready in time and every host is
                quarantined (no replica can come: retrying would only wait again).
        """
        if self.registry.closed:
            raise PoolError(f"pool {self.name} is closed")
        if not self._started:
            self.start(wait=False)
        t0 = time.monotonic()
        deadline = t0 + timeout
        skipped = False
        while True:
            remaining = max(deadline, self._ready.served_at + timeout if patient else 0) - time.monotonic()
            if remaining <= 0:
                detail = f"{self.stats.start_failures} start failures; hosts: {self.hosts_report()}"
                if all(h.quarantined for h in self.hosts):
                    raise PoolError(f"no replica ready within {timeout} s in pool {self.name}, and every host "
                                    f"is quarantined ({detail})")
                raise LeaseTimeout(f"no replica ready within {timeout} s in pool {self.name} ({detail})")
            # one wait for the whole remaining time: the lease queue serves waiters in arrival order, and a
            # waiter that gave up and asked again would go to the back of the line
            replica = self._ready.get(remaining, first=skipped, patient=patient)
            if self._draining:  # woken by drain(), or handed an idle replica: it stays for close() to remove
                raise PoolError(f"pool {self.name} is draining: it leases no more replicas")
            if replica is None:
                if self.registry.closed:
                    raise PoolError(f"pool {self.name} is closed")
                continue
            with self.registry.lock:
                if replica.state is not ReplicaState.READY:
                    skipped = True  # faulted by the health checker while it waited: wait again, still first
                    continue
                replica.state = ReplicaState.LEASED
                self.stats.leased += 1
                self.stats.acquire_s.append(waited := time.monotonic() - t0)
            replica.usage = None
            self.accountant.lease_started(replica.id)
            self.health.oom.lease_started(replica)
            self.recorder.replica(replica, "leased", elapsed_s=waited)
            self.provisioner.mark_leased(replica)
            return replica

    def release(self, replica: Replica, fault: str | None = None, *, recorded: bool = False) -> None:
        """Give a replica back: it is removed in the background and a replacement starts.

        With ``fault``, the replica is recorded as faulted with that cause, and its host's failure rate goes
        up, unless the fault was ``recorded`` already (an OOM kill). What the lease used (CPU, memory,
        network) is left in ``replica.usage`` (None where the cgroup cannot be read).
        """
        with self.registry.lock:
            if replica.state not in (ReplicaState.LEASED, ReplicaState.READY):
                return  # already given back
            leased = replica.state is ReplicaState.LEASED
            replica.state = ReplicaState.FAULTED if fault else ReplicaState.CLOSED
        if leased:
            replica.usage = self.accountant.lease_ended(replica.id)
        host = self.registry.host_of(replica.id)
        if fault and not recorded:
            self.stats.faulted += 1
            self.recorder.replica(replica, "faulted", fault)
        elif not fault:
            self.recorder.replica(replica, "released")
        if host is not None and not recorded:
            self.health.host_outcome(host, ok=fault is None)
        self._discard(replica, fault or "reset")

    def park(self, replica: Replica, resident_mib: int) -> parking.Parked:
        """Bound a held replica's resident memory while it does not step (:mod:`osgym.replicas.parking`)."""
        return parking.park(replica, resident_mib)

    def unpark(self, replica: Replica) -> parking.Parked:
        """Lift :meth:`park`'s bound: the replica may use its whole memory limit again."""
        return parking.unpark(replica, self.limits.mem_mib)

    def _discard(self, replica: Replica, cause: str) -> None:
        """Free the replica's slot now, remove its container in the background, start a replacement."""
        replica.close()
        self.registry.free_slot(replica.id)
        if self.registry.closed:
            return
        if self.provisioner.remove_later(replica, cause):
            self._refill()

    def _refill(self) -> list[Future[Replica]]:
        """Start replicas until ``size + standby`` are alive or starting (none once draining)."""
        return [] if self._draining else self.provisioner.refill()

    # ---- health -------------------------------------------------------------
    def check_health(self, batch: int = 32) -> int:
        """Probe idle replicas and replace the dead or hung (:meth:`HealthMonitor.check`); returns how many faulted."""
        return self.health.check(batch)

    def hosts_report(self) -> list[dict[str, Any]]:
        """Per host: url, planned capacity, replicas placed, recent failure rate, quarantine reason."""
        return self.health.hosts_report()

    # ---- counts -------------------------------------------------------------
    @property
    def live(self) -> int:
        """Replicas that currently exist (starting, ready or leased)."""
        return len(self.registry)

    @property
    def healthy(self) -> int:
        """Replicas that passed their readiness check and have not faulted (ready or leased)."""
        with self.registry.lock:  # states change under it: one consistent count
            return sum(r.state in (ReplicaState.READY, ReplicaState.LEASED) for r in self.registry.replicas())

    @property
    def waiting(self) -> int:
        """Leases waiting for a ready replica (served in the order they asked)."""
        return self._ready.waiting()

    @property
    def idle(self) -> int:
        """Ready replicas waiting in the lease queue."""
        return self._ready.qsize()
