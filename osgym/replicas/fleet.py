"""What every replica host holds, read from each host's Docker daemon: ``osgym pool list``.

Read-only, and only containers with osgym's pool label (:data:`~osgym.replicas.reaper.POOL_LABEL`), so unlike a
pool it may reach remote daemons (``ssh://``, ``tcp://``), as :meth:`~osgym.replicas.hosts.DockerHost.resources`
does for ``osgym pool plan``. Each replica's tier is its image's label (``osgym.image``), its run the pool's
:data:`~osgym.replicas.reaper.RUN_LABEL`, and whether it is leased the
:data:`~osgym.replicas.reaper.LEASE_FILE` the pool leaves in its control directory, read through Docker's
archive API. A host that does not answer is reported with the reason, and the others are still read.
"""

from __future__ import annotations

import collections
import io
import math
import tarfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import docker
import docker.errors
import requests

from osgym.replicas.images import LABEL as TIER_LABEL
from osgym.replicas.provision import CTL_MOUNT
from osgym.replicas.reaper import LEASE_FILE, POOL_LABEL, REPLICA_LABEL, RUN_LABEL

__all__ = ["FleetReplica", "HostReplicas", "read_host", "read_hosts"]

DEFAULT_TIMEOUT_S = 10.0
"""How long a host's daemon may take to answer one request before it is reported unreachable."""
LEASED, IDLE, UNKNOWN = "leased", "idle", "unknown"


@dataclass(frozen=True)
class FleetReplica:
    """One replica container as its host's daemon shows it."""

    name: str
    replica_id: str
    pool: str
    tier: str
    image: str
    state: str
    created: float
    lease: str
    """``leased``, ``idle``, or ``unknown`` (not running, or no control directory shared with the host)."""
    run_id: str | None

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.created)


@dataclass(frozen=True)
class HostReplicas:
    """One host's replicas, or why it could not be read."""

    url: str
    replicas: list[FleetReplica] = field(default_factory=list)
    error: str | None = None

    def counts(self, key: str) -> dict[str, int]:
        """How many replicas by ``state``, ``tier`` or ``lease``, most first.

        >>> r = FleetReplica("a", "a", "p", "desktop", "osgym/desktop:1", "running", 0.0, "idle", None)
        >>> HostReplicas("unix:///x", [r, r]).counts("tier")
        {'desktop': 2}
        """
        return dict(collections.Counter(getattr(r, key) for r in self.replicas).most_common())


def _lease(client: docker.DockerClient, container: dict[str, Any]) -> str:
    """Whether the pool marked the replica leased; ``unknown`` where there is nothing to read."""
    shared = any(m.get("Destination") == CTL_MOUNT for m in container.get("Mounts") or ())
    if container.get("State") != "running" or not shared:
        return UNKNOWN
    try:
        stream, _ = client.api.get_archive(container["Id"], f"{CTL_MOUNT}/{LEASE_FILE}")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            return LEASED if tar.getmember(LEASE_FILE).isfile() else UNKNOWN
    except docker.errors.NotFound:
        return IDLE
    except (docker.errors.APIError, tarfile.TarError, KeyError):
        return UNKNOWN  # gone between the list and the read, or an answer that is not the file


def read_host(url: str, timeout: float = DEFAULT_TIMEOUT_S) -> HostReplicas:
    """The osgym replicas on the daemon at ``url``; a host that cannot be read carries the reason in ``error``."""
    client: docker.DockerClient | None = None
    try:
        client = docker.DockerClient(base_url=url, timeout=max(1, math.ceil(timeout)), use_ssh_client=url.startswith("ssh://"))
        listed = client.api.containers(all=True, filters={"label": POOL_LABEL})
        out = []
        for c in listed:
            labels = c.get("Labels") or {}
            name = (c.get("Names") or ["?"])[0].lstrip("/")
            out.append(FleetReplica(name=name, replica_id=labels.get(REPLICA_LABEL, ""), pool=labels[POOL_LABEL],
                                    tier=labels.get(TIER_LABEL, "?"), image=c.get("Image", "?"),
                                    state=c.get("State", "?"), created=float(c.get("Created", 0)),
                                    lease=_lease(client, c), run_id=labels.get(RUN_LABEL)))
        return HostReplicas(url, sorted(out, key=lambda r: (r.pool, r.created, r.name)))
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        return HostReplicas(url, error=_reason(exc))
    finally:
        if client is not None:
            client.close()


def _reason(exc: BaseException) -> str:
    """The innermost cause's words: a refused connection says so, not three layers of wrapping."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return f"{type(exc).__name__}: {str(exc)[:300]}"


def read_hosts(urls: Sequence[str], timeout: float = DEFAULT_TIMEOUT_S) -> list[HostReplicas]:
    """:func:`read_host` for every URL at once, in the order given."""
    if not urls:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(urls)), thread_name_prefix="fleet") as ex:
        return list(ex.map(lambda u: read_host(u, timeout), urls))
