"""``ReplicaSpec``: what every replica of one pool is made of, fixed when the pool is made.

The pool builds one from its arguments and the operator's settings (``OSGYM_REPLICA_*``, read once, when the
pool is made); its :class:`~osgym.replicas.provision.Provisioner` makes every container from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from osgym.errors import ConfigError
from osgym.replicas.client import Timeouts
from osgym.replicas.limits import ReplicaLimits
from osgym.replicas.network import EGRESS, ISOLATED, NETWORK_NAMES
from osgym.settings import settings

__all__ = ["ReplicaSpec"]


@dataclass(frozen=True)
class ReplicaSpec:
    """What every replica of one pool is made of, fixed when the pool is made.

    Attributes:
        image: the replica image tag.
        pool_name: the pool's name (its containers' names and label).
        owner: the pool's owner identity (:func:`osgym.replicas.reaper.owner_id`), a label.
        run_dir: the pool's run directory: one directory per replica (its token, its control socket).
        screen: the X screen size.
        limits: the Docker limits.
        swap_mib: swap beyond the memory limit (``limits.swap_mib``, else ``OSGYM_REPLICA_SWAP_MIB``).
        disk_mib: the writable layer's size (``limits.disk_mib``, else ``OSGYM_REPLICA_DISK_MIB``); None: unbounded.
        runtime: the OCI runtime; None: the daemon's default.
        network_kind: the kind of osgym's fenced network the replicas join (:mod:`osgym.replicas.network`); None:
            no network.
        transport: "unix" or "tcp".
        compat: OSWorld compatibility mode (see :class:`~osgym.replicas.pool.ReplicaPool`).
        assets_dir: the offline asset cache mounted read-only into compatibility replicas.
        memory_merge: whether the replicas' processes opt into the host's KSM.
        timeouts: the replicas' control-request deadlines.
        start_timeout: seconds a replica may take to become ready.
        run_id: the collection run the pool serves (a label, for ``osgym pool list``); None: none.
    """

    image: str
    pool_name: str
    owner: str
    run_dir: Path
    screen: tuple[int, int]
    limits: ReplicaLimits
    swap_mib: int
    disk_mib: int | None
    runtime: str | None
    network_kind: str | None
    transport: str
    compat: bool
    assets_dir: Path | None
    memory_merge: bool
    timeouts: Timeouts
    start_timeout: float
    run_id: str | None = None

    @property
    def network_name(self) -> str | None:
        """The Docker name of the replicas' network; None: no network."""
        return NETWORK_NAMES[self.network_kind] if self.network_kind else None

    @classmethod
    def for_pool(cls, image: str, pool_name: str, *, owner: str, run_dir: Path, screen: tuple[int, int],
                 limits: ReplicaLimits, egress: bool, transport: str, compat: bool, assets_dir: Path | None,
                 memory_merge: bool, runtime: str | None, timeouts: Timeouts, start_timeout: float,
                 run_id: str | None = None) -> ReplicaSpec:
        """The spec of a pool's replicas from the pool's arguments (:class:`~osgym.replicas.pool.ReplicaPool`), and
        the operator's settings where they leave it open: the runtime, the swap share, the writable layer's size.

        Raises:
            ConfigError: if ``transport`` is not unix or tcp, ``assets_dir`` is given without ``compat`` or is not
                a directory, or an ``OSGYM_*`` setting is not valid.
        """
        if transport not in ("unix", "tcp"):
            raise ConfigError(f"transport: expected unix or tcp, actual {transport!r}")
        if assets_dir is not None:
            if not compat:
                raise ConfigError("assets_dir: only compatibility replicas mount the asset cache (compat=True); "
                                  "osgym's own setup steps read it on the host")
            if not Path(assets_dir).is_dir():
                raise ConfigError(f"assets_dir: {str(assets_dir)!r:.300} is not a directory (expected a local "
                                  "asset cache, filled by osgym tasks fetch-assets)")
        cfg = settings()
        transport = "tcp" if compat else transport
        # networked replicas never join Docker's default bridge: osgym's own networks, fenced by host rules
        kind = EGRESS if egress else ISOLATED if transport == "tcp" else None
        return cls(image=image, pool_name=pool_name, owner=owner, run_dir=run_dir, screen=screen, limits=limits,
                   swap_mib=limits.swap_mib if limits.swap_mib is not None else cfg.replica_swap_mib,
                   disk_mib=limits.disk_mib if limits.disk_mib is not None else cfg.replica_disk_mib,
                   runtime=runtime or cfg.replica_runtime, network_kind=kind, transport=transport, compat=compat,
                   assets_dir=Path(assets_dir).resolve() if assets_dir is not None else None,
                   memory_merge=memory_merge, timeouts=timeouts, start_timeout=start_timeout, run_id=run_id)
