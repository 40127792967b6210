"""Admission: how many replicas this pool's hosts may hold, from :mod:`osgym.replicas.cost`'s density.

A host holds the smaller of the cost model's density (:func:`osgym.replicas.cost.density`: the CPU
and the memory bound for a measured :class:`~osgym.replicas.cost.Profile`, by default
:data:`~osgym.replicas.cost.DEFAULT_PROFILE`) over its *available* memory, and the number of
replicas whose memory *limits* fit without overcommitting memory by more than ``limit_overcommit``.

At an agent's pace (:func:`at_pace`), a replica's cores come from a measured :class:`StepProfile`:
its idle floor plus its CPU per step over the time from one step to the next (:func:`cores_at_pace`).

>>> res = HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=23000)
>>> p = plan(res, mem_limit_mib=512)
>>> p.replicas, p.binding
(150, 'cpu')
"""

from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, Field, ValidationError

from osgym.errors import ConfigError
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


# At the agent's pace ---------------------------------------------------------------------------------------------


class StepProfile(cost._Value):
    """What one replica costs per step, measured by a paced run (``bench/bench_pool.py active``).

    Machine CPU, not just the replica's: its cgroup plus the host-side share (the stepping client and
    the pool in their process, the replica's containerd shim).

    Attributes:
        cpu_per_step_s: machine CPU seconds one step costs above the idle floor.
        step_s: mean time of a step (the action and the screenshot), seconds.
        idle_cores: machine cores one replica uses while held and not stepped (the idle floor).
        mem_mib: memory one replica holds (PSS), MiB.
        source: where the figures were measured, for the plan to cite.
    """

    model_config = ConfigDict(frozen=True, extra="ignore")  # a bench's file carries more than these

    cpu_per_step_s: float = Field(ge=0)
    step_s: float = Field(gt=0)
    idle_cores: float = Field(ge=0)
    mem_mib: float = Field(gt=0)
    source: str = ""


def cores_at_pace(cpu_per_step_s: float, step_s: float, think_s: float, idle_cores: float = 0.0) -> float:
    """Machine cores one replica uses when an agent thinks ``think_s`` seconds between steps.

    A step starts when the model's answer arrives, so the replica steps once every ``step_s + think_s``
    seconds (``think_s`` 0: back to back)::

        cores = idle_cores + cpu_per_step_s / (step_s + think_s)

    >>> cores_at_pace(0.03, 0.05, 0.0)              # nonstop: 20 steps a second at 30 ms each
    0.6
    >>> round(cores_at_pace(0.03, 0.05, 4.95, idle_cores=0.002), 4)   # a step every 5 s
    0.008

    Raises:
        ValueError: naming the input, if ``think_s`` or ``idle_cores`` or ``cpu_per_step_s`` is negative or not
            finite, or ``step_s`` is not positive.
    """
    for name, value in (("think time", think_s), ("CPU per step", cpu_per_step_s), ("idle cores", idle_cores)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name}: expected a finite number >= 0 seconds, actual {value}")
    if not math.isfinite(step_s) or step_s <= 0:
        raise ValueError(f"step time: expected a finite number > 0 seconds, actual {step_s}")
    return idle_cores + cpu_per_step_s / (step_s + think_s)


def at_pace(step: StepProfile, think_s: float) -> cost.Profile:
    """The cost model's :class:`~osgym.replicas.cost.Profile` of a replica stepped at that pace.

    >>> p = at_pace(StepProfile(cpu_per_step_s=0.03, step_s=0.05, idle_cores=0.002, mem_mib=60), 4.95)
    >>> round(p.cores, 4), p.mem_mib
    (0.008, 60.0)

    Raises:
        ValueError: if ``think_s`` is negative or not finite.
    """
    cores = cores_at_pace(step.cpu_per_step_s, step.step_s, think_s, step.idle_cores)
    return cost.Profile(
        cores=max(cores, cost.MIN_CORES), mem_mib=step.mem_mib,
        source=f"{step.idle_cores:.3g} idle + {step.cpu_per_step_s * 1e3:.1f} ms CPU per step / "
               f"({step.step_s:.3g} s step + {think_s:.3g} s think); {step.source or 'no source'}")


def think_time_for(step: StepProfile, step_every: float) -> float:
    """The think time that makes one step every ``step_every`` seconds (start to start) at ``step``'s step time.

    >>> think_time_for(StepProfile(cpu_per_step_s=0.03, step_s=0.05, idle_cores=0, mem_mib=60), 5.0)
    4.95

    Raises:
        ValueError: if ``step_every`` is shorter than the measured step (no think time fits) or not finite.
    """
    if not math.isfinite(step_every) or step_every < step.step_s:
        raise ValueError(f"step every: expected at least the measured step time ({step.step_s:.3g} s; 0 think "
                         f"time is nonstop), actual {step_every}")
    return step_every - step.step_s


def step_profile(tier: str = "desktop", path: str | Path | None = None) -> StepProfile:
    """A measured step profile: the file ``path`` (JSON or YAML: a bench's ``--profile-out`` file), else the
    packaged one of ``tier`` (``step_profiles.yaml``, measured by ``bench/bench_pool.py active``).

    Raises:
        ConfigError: if the file cannot be read or holds no step profile, or there is no such tier.
    """
    where = str(path) if path is not None else "step_profiles.yaml"
    try:
        if path is not None:
            data = yaml.safe_load(Path(path).read_text())
        else:
            packaged = yaml.safe_load(resources.files("osgym.replicas").joinpath("step_profiles.yaml").read_text())
            if tier not in packaged:
                raise ConfigError(f"step profile: no tier {tier!r}; measured tiers: {', '.join(packaged)}")
            data = packaged[tier]
        return StepProfile.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ConfigError(f"step profile {where}: {exc}") from exc
