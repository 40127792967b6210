"""Docker endpoints that back a pool: connection, capacity and health.

A :class:`DockerHost` is one Docker daemon. The pool spreads replicas over its
hosts in proportion to their capacity and quarantines a host whose recent failure
rate crosses a threshold.

A pool's hosts are daemons on this machine (``unix://`` sockets; several daemons
may back one pool). Remote daemons (``tcp://``, ``ssh://``) are refused when the
pool is built, for two reasons: the pool reaches a replica through a socket in a
bind-mounted directory or a port published on this machine's loopback, and it
fences networked replicas in with this machine's firewall
(:mod:`osgym.replicas.network`), which cannot reach another host's bridges.
Publishing control ports on a remote host's network instead would expose them
(and plaintext tokens) to that network, and its replicas would run unfenced. To
use several machines, run a Prefect worker with a local pool on each (docs/operations.md,
"Production"); :meth:`DockerHost.resources` still reads a remote daemon's size for
``osgym pool plan``.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker

from osgym.errors import ConfigError
from osgym.replicas import capacity as capacity_model

DEFAULT_DOCKER_HOST = "unix:///var/run/docker.sock"
FAILURE_WINDOW = 20
"""How many recent outcomes (starts and leases) a host's failure rate is computed over."""
QUARANTINE_RATE = 0.5
QUARANTINE_MIN_FAILURES = 4


@dataclass
class DockerHost:
    """One Docker daemon that can run replicas.

    Args:
        url: the daemon's address, e.g. ``unix:///var/run/docker.sock`` (a pool takes only ``unix://``; see above).
        name: short name recorded in events and episodes; derived from ``url`` if omitted.
        capacity: replicas this host may hold; planned from its resources if omitted.
        client: an existing client for ``url`` (tests pass one).
    """

    url: str = DEFAULT_DOCKER_HOST
    name: str = ""
    capacity: int | None = None
    client: Any = None  # a docker.DockerClient once connected; Any: callers use it right after connect()
    quarantined: str | None = None
    degraded: str | None = None
    _outcomes: collections.deque[bool] = field(default_factory=lambda: collections.deque(maxlen=FAILURE_WINDOW))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        if not self.name:
            self.name = "local" if self.url == DEFAULT_DOCKER_HOST else self.url.split("://", 1)[-1].strip("/")

    def __repr__(self) -> str:
        state = f" quarantined ({self.quarantined})" if self.quarantined else ""
        return f"<DockerHost {self.name} {self.url} capacity={self.capacity}{state}>"

    @property
    def local(self) -> bool:
        """True if the daemon is reached over a unix:// socket (this machine), so bind-mounted run dirs,
        loopback ports and host firewall rules work; for a given client, what it actually connects to."""
        if self.client is not None:
            return str(self.client.api.base_url) == "http+docker://localhost"  # docker-py's name for unix://
        return self.url.startswith("unix://")

    def connect(self, max_pool_size: int = 16) -> docker.DockerClient:
        """The Docker client for this host (created once)."""
        if self.client is None:
            self.client = docker.DockerClient(base_url=self.url, max_pool_size=max_pool_size, timeout=60,
                                              use_ssh_client=self.url.startswith("ssh://"))
        client: docker.DockerClient = self.client
        return client

    def resources(self) -> capacity_model.HostResources:
        """Cores and memory: /proc/meminfo for a local daemon, ``docker info`` for a remote one."""
        if self.local:
            return capacity_model.local_resources()
        return capacity_model.docker_resources(self.connect().info())

    def plan_capacity(self, **plan_kw: Any) -> int:
        """Set (if unset) and return :attr:`capacity` from :func:`osgym.replicas.capacity.plan`."""
        if self.capacity is None:
            self.capacity = capacity_model.plan(self.resources(), **plan_kw).replicas
        return self.capacity

    # ---- health -------------------------------------------------------------
    def record(self, ok: bool) -> str | None:
        """Record one outcome; return a reason if the failure rate is over the quarantine threshold.

        The caller (the pool) decides whether to quarantine: it never takes its last healthy host away.
        """
        with self._lock:
            self._outcomes.append(ok)
            if self.quarantined:
                return None
            failures = self._outcomes.count(False)
            rate = failures / len(self._outcomes)
            if failures >= QUARANTINE_MIN_FAILURES and rate >= QUARANTINE_RATE:
                return f"failure rate {rate:.0%} over the last {len(self._outcomes)} outcomes"
        return None

    def quarantine(self, reason: str) -> bool:
        """Take the host out of placement; True if it was not already quarantined."""
        with self._lock:
            if self.quarantined:
                return False
            self.quarantined = reason
            return True

    @property
    def failure_rate(self) -> float:
        with self._lock:
            return self._outcomes.count(False) / len(self._outcomes) if self._outcomes else 0.0


def as_hosts(hosts: Any) -> list[DockerHost]:
    """Normalise a URL, a DockerHost or a list of either into a list of hosts.

    >>> [h.name for h in as_hosts(["unix:///var/run/docker.sock", "ssh://me@box"])]
    ['local', 'me@box']
    """
    if hosts is None:
        return [DockerHost()]
    if isinstance(hosts, (str, DockerHost)):
        hosts = [hosts]
    out = [h if isinstance(h, DockerHost) else DockerHost(str(h)) for h in hosts]
    names = [h.name for h in out]
    if len(set(names)) != len(names):
        raise ValueError(f"host names: expected unique, actual {names}")
    return out


def check_runtime(client: docker.DockerClient, host_name: str, runtime: str) -> None:
    """Refuse a pool whose OCI ``runtime`` a host's daemon does not know, before any container.

    Raises:
        ConfigError: naming the runtimes the daemon has and how to register one.
    """
    info = client.info()
    known = sorted((info.get("Runtimes") or {}).keys())
    if runtime not in known:
        raise ConfigError(f"runtime {runtime!r}: Docker on {host_name} has {', '.join(known) or 'none'}; register it "
                          f"in /etc/docker/daemon.json (\"runtimes\": {{\"{runtime}\": {{\"path\": ...}}}}) and "
                          "reload dockerd (SIGHUP); scripts/ensure-docker.sh does so for Debian's crun")
    held = _unified_controllers() if runtime == "crun" and info.get("CgroupVersion") == "1" else []
    if held:
        raise ConfigError(f"runtime 'crun' cannot start containers on {host_name}: the host mixes cgroup v1 with a "
                          f"cgroup2 hierarchy that holds {', '.join(held)} (crun 1.8 refuses that); mount each as v1 "
                          f"(mount -t cgroup -o {held[0]} cgroup /sys/fs/cgroup/{held[0]}), as "
                          "scripts/ensure-docker.sh does, or run the default runtime")


def _unified_controllers() -> list[str]:
    """The controllers a hybrid host's cgroup2 mount holds (none on a pure v1 or pure v2 host)."""
    try:
        return Path("/sys/fs/cgroup/unified/cgroup.controllers").read_text().split()
    except OSError:
        return []
