"""Hardware-aware capacity: how many replicas a host holds, and how many hosts a fleet needs.

A replica's cost is its *footprint*: the memory it really uses (Xvfb, openbox,
the control server, plus Docker's containerd shim), not its memory limit. The
plan for one host is the smaller of

* a memory bound: ``(MemAvailable - reserve) / footprint``, and
* a CPU bound: ``cores / cpu_per_replica``, where ``cpu_per_replica`` is the CPU
  one replica uses when an agent steps it at a model's pace (one step every 5 s);

and never more than the replica limits allow to run at once without the
*limits* overcommitting memory by more than ``limit_overcommit``.

>>> res = HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=23000)
>>> p = plan(res, footprint_mib=32, cpu_per_replica=0.01, mem_limit_mib=512)
>>> p.replicas, p.binding
(200, 'cpu')
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

from osgym.replicas import cost

REPLICA_FOOTPRINT_MIB = 59.0
"""Measured memory of one ready idle replica at 1920x1080 with the desktop image of 2026-11-30 (Xvfb, openbox,
tint2, D-Bus, AT-SPI and the control server): 56 MiB PSS of its processes plus 2.6 MiB PSS of its containerd
shim; ``free`` says 59-62 MiB per replica at 50-300 replicas. See bench/results/pool.md."""

CPU_PER_REPLICA = 0.01
"""Cores one replica uses when stepped once every 5 s (a step = a small action + screenshot);
from the active-density benchmark, see bench/results/pool.md."""

RESERVE_MIB = 2048
"""Memory kept back for the host OS, Docker and the collector."""

LIMIT_OVERCOMMIT = 16.0
"""How far the sum of the replicas' memory limits may exceed the available memory.

Limits are ceilings, not reservations: an idle replica uses ~1/16 of a 512 MiB
limit. The overcommit bound only stops absurd pools (thousands of 4 GiB limits)."""


@dataclass(frozen=True)
class HostResources:
    """What a host offers: cores and memory in MiB."""

    cpus: float
    mem_total_mib: float
    mem_available_mib: float


def local_resources() -> HostResources:
    """This machine's usable cores and memory, from the CPU affinity and /proc/meminfo (MemAvailable)."""
    fields: dict[str, float] = {}
    with open("/proc/meminfo") as f:
        for line in f:
            key, _, rest = line.partition(":")
            fields[key] = float(rest.split()[0]) / 1024  # kB -> MiB
    cpus = float(len(os.sched_getaffinity(0)))
    return HostResources(cpus, fields["MemTotal"], fields.get("MemAvailable", fields.get("MemFree", 0.0)))


def docker_resources(info: dict[str, Any]) -> HostResources:
    """A remote Docker host's resources from ``docker info`` (which reports total, not available, memory).

    >>> docker_resources({"NCPU": 4, "MemTotal": 8 * 2**30}).cpus
    4.0
    """
    total = float(info["MemTotal"]) / 2**20
    return HostResources(float(info["NCPU"]), total, total)


@dataclass(frozen=True)
class Plan:
    """How many replicas one host can hold, and which resource binds."""

    replicas: int
    by_memory: int
    by_cpu: int
    by_limits: int
    binding: str
    cpus: float
    mem_available_mib: float
    footprint_mib: float
    cpu_per_replica: float
    mem_limit_mib: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    resources: HostResources,
    *,
    footprint_mib: float = REPLICA_FOOTPRINT_MIB,
    cpu_per_replica: float = CPU_PER_REPLICA,
    mem_limit_mib: float = 512,
    reserve_mib: float = RESERVE_MIB,
    limit_overcommit: float = LIMIT_OVERCOMMIT,
) -> Plan:
    """The number of replicas a host holds: the smallest of the memory, CPU and limit bounds.

    Raises:
        ValueError: if a per-replica figure is not positive.
    """
    if footprint_mib <= 0 or cpu_per_replica <= 0 or mem_limit_mib <= 0:
        raise ValueError(f"per-replica figures: expected > 0, actual footprint_mib={footprint_mib}, "
                         f"cpu_per_replica={cpu_per_replica}, mem_limit_mib={mem_limit_mib}")
    usable = max(0.0, resources.mem_available_mib - reserve_mib)
    by_memory = math.floor(usable / footprint_mib + 1e-9)
    by_cpu = math.floor(resources.cpus / cpu_per_replica + 1e-9)
    by_limits = math.floor(usable * limit_overcommit / mem_limit_mib + 1e-9)
    bounds = {"memory": by_memory, "cpu": by_cpu, "limits": by_limits}
    binding = min(bounds, key=lambda k: bounds[k])
    return Plan(bounds[binding], by_memory, by_cpu, by_limits, binding, resources.cpus,
                resources.mem_available_mib, footprint_mib, cpu_per_replica, mem_limit_mib)


@dataclass(frozen=True)
class FleetPlan:
    """A fleet sized for a number of replicas: hosts, packing and cost."""

    replicas: int
    host_cpus: float
    host_gib: float
    usd_per_hour: float
    replicas_per_host: int
    hosts: int
    binding: str
    usd_per_replica_day: float
    usd_per_day: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fleet(
    replicas: int,
    host_cpus: float,
    host_gib: float,
    usd_per_hour: float,
    *,
    footprint_mib: float = REPLICA_FOOTPRINT_MIB,
    cpu_per_replica: float = CPU_PER_REPLICA,
    reserve_gib: float = RESERVE_MIB / 1024,
) -> FleetPlan:
    """Size a fleet from the measured per-replica footprint (uses :mod:`osgym.replicas.cost`).

    The cost per replica-day assumes every host is fully packed, except the last one's
    spare slots, which are charged to the replicas that run.

    Raises:
        ValueError: if a figure is not positive or a host holds no replica.

    >>> f = fleet(1000, 16, 64, 0.8064, footprint_mib=33, cpu_per_replica=0.01)
    >>> f.replicas_per_host, f.hosts, f.binding, round(f.usd_per_replica_day, 4)
    (1600, 1, 'cpu', 0.0194)
    """
    if replicas < 1:
        raise ValueError(f"replicas: expected >= 1, actual {replicas}")
    price = cost.PriceTable(instance=f"{host_cpus:g}vCPU-{host_gib:g}GiB", vcpus=max(1, math.ceil(host_cpus)),
                            memory_gib=host_gib, usd_per_hour=usd_per_hour)
    per_host = cost.replicas_per_host(host_cpus, host_gib, footprint_mib, cpu_per_replica,
                                      reserve_cpus=0.0, reserve_gib=reserve_gib)
    if per_host < 1:
        raise ValueError(f"a {host_cpus:g} vCPU, {host_gib:g} GiB host holds no replica "
                         f"(footprint {footprint_mib} MiB, {cpu_per_replica} cores each)")
    hosts = math.ceil(replicas / per_host)
    by_mem = math.floor(max(0.0, host_gib - reserve_gib) * 1024 / footprint_mib + 1e-9)
    binding = "memory" if by_mem <= per_host else "cpu"
    # all hosts are paid for; spread their cost over the replicas actually wanted
    effective = replicas / hosts
    day = cost.replica_day_usd(price, effective)
    return FleetPlan(replicas, host_cpus, host_gib, usd_per_hour, per_host, hosts, binding, day, day * replicas)
