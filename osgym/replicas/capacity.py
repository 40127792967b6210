"""Admission: how many replicas this pool's hosts may hold, from :mod:`osgym.replicas.cost`'s density.

A host holds the smaller of the cost model's density (:func:`osgym.replicas.cost.density`: the CPU
and the memory bound for a measured :class:`~osgym.replicas.cost.Profile`, by default
:data:`~osgym.replicas.cost.DEFAULT_PROFILE`) over its *available* memory, and the number of
replicas whose memory *limits* fit without overcommitting memory by more than ``limit_overcommit``.

>>> res = HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=23000)
>>> p = plan(res, mem_limit_mib=512)
>>> p.replicas, p.binding
(150, 'cpu')
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from typing import Any

from osgym.replicas import cost

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
    mem_mib: float
    cores: float
    mem_limit_mib: float
    source: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def plan(
    resources: HostResources,
    profile: cost.Profile = cost.DEFAULT_PROFILE,
    *,
    mem_limit_mib: float = 512,
    limit_overcommit: float = LIMIT_OVERCOMMIT,
) -> Plan:
    """The number of replicas a host holds: the smallest of the CPU, memory and limit bounds.

    Raises:
        ValueError: if ``mem_limit_mib`` is not positive.
    """
    if mem_limit_mib <= 0:
        raise ValueError(f"mem_limit_mib: expected > 0, actual {mem_limit_mib}")
    d = cost.density(resources.cpus, resources.mem_available_mib / 1024, profile)
    usable = max(0.0, resources.mem_available_mib - cost.RESERVE_GIB * 1024)
    by_limits = math.floor(usable * limit_overcommit / mem_limit_mib + 1e-9)
    bounds = {"cpu": d.by_cpu, "memory": d.by_memory, "limits": by_limits}
    binding = min(bounds, key=lambda k: bounds[k])
    return Plan(bounds[binding], d.by_memory, d.by_cpu, by_limits, binding, resources.cpus,
                resources.mem_available_mib, profile.mem_mib, profile.cores, mem_limit_mib, profile.source)
