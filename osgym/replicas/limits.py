"""Per-replica resource limits, and each image tier's defaults.

:class:`ReplicaLimits` is what a pool gives every replica it starts (Docker's memory, CPU and thread
limits, the sizes of its tmpfs mounts and logs, its writable layer and swap share);
:data:`TIER_LIMITS` holds what each image tier needs (:mod:`osgym.replicas.images`).

>>> limits_for("apps").mem_mib, limits_for("no-such-tier") == ReplicaLimits()
(1536, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from osgym.errors import ConfigError

__all__ = ["TIER_LIMITS", "ReplicaLimits", "limits_for"]


@dataclass(frozen=True)
class ReplicaLimits:
    """Per-replica resource limits, applied as Docker limits.

    Raises:
        ConfigError: if ``tmp_mib`` or ``home_mib`` is below 1 MiB.
    """

    mem_mib: int = 512
    cpus: float = 1.0
    pids: int = 512
    shm_mib: int = 64
    tmp_mib: int = 256
    """Size of ``/tmp``, a tmpfs: what the agent (or a recording) can fill there. Its pages
    count against ``mem_mib``, as ``/dev/shm``'s do."""
    home_mib: int | None = 256
    """Size of ``/home/user``, a tmpfs like ``/tmp``, filled from the image's home at start: with it the agent's
    account can write nowhere on the writable layer, which overlay2 over ext4 cannot bound (docs/security.md).
    ``None`` keeps the home on the writable layer (bounded by ``disk_mib`` only, where Docker can)."""
    log_mib: int = 4
    """Size of each of the two json-file logs Docker keeps of the container's output."""
    disk_mib: int | None = None
    """Size of the container's writable layer (Docker's ``storage_opt size``): what root steps
    write (and the home, with ``home_mib=None``). ``None`` leaves it unbounded: only some storage drivers support it
    (overlay2 on xfs mounted with ``pquota``, btrfs, zfs), and Docker refuses to create the
    container on the others. Unset here, ``OSGYM_REPLICA_DISK_MIB`` gives it (read when the pool is made)."""
    swap_mib: int | None = None
    """Swap the replica may use beyond ``mem_mib``: its cold pages move there under the host's memory
    pressure. ``None`` takes ``OSGYM_REPLICA_SWAP_MIB`` (default 0, no swap; read when the pool is made). Meant for
    zram, compressed swap in memory (:mod:`osgym.replicas.zram`); on a disk, an agent's memory would reach the disk."""

    def __post_init__(self) -> None:
        if any(mib is not None and mib < 1 for mib in (self.tmp_mib, self.home_mib)):  # tmpfs takes size=0 as no cap
            raise ConfigError(f"tmp_mib and home_mib must be at least 1 MiB, got {self.tmp_mib} and {self.home_mib}")


TIER_LIMITS: dict[str, ReplicaLimits] = {
    "desktop": ReplicaLimits(),
    # Measured with bench/bench_apps_tier.py (cgroup memory usage, page cache included, medians of 3):
    # the XFCE session idles at 165 MiB; with Chromium (one tab) and Calc open, 473 MiB (peak 479),
    # within 40 MiB of the default 512 MiB limit before a page is loaded or a second app opens.
    # 1536 MiB leaves room for a few tabs plus GIMP or Thunderbird. pids_limit counts threads:
    # 132 with Chromium + Calc, so 1024 leaves room for more apps without lifting the fork-bomb cap.
    # home_mib: one oracle episode of each apps suite left 0.4-13 MiB in home (code-server's profile the most);
    # 512 MiB holds several 64 MiB uploads and Chromium's 80 MiB disk cache, and with /tmp fits the memory limit.
    "apps": ReplicaLimits(mem_mib=1536, pids=1024, home_mib=512),
}
"""Per-tier defaults: the image's apps decide how much memory and how many threads a replica needs."""


def limits_for(tier: str) -> ReplicaLimits:
    """The default :class:`ReplicaLimits` for an image tier (``desktop``'s for an unknown one)."""
    return TIER_LIMITS.get(tier, ReplicaLimits())
