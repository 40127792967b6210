"""Price table and cost model (design.md §8).

A replica costs its share of the host it runs on::

    usd_per_replica_second = host usd_per_hour / 3600 / replicas_per_host
    episode cost           = replica_s * usd_per_replica_second
    replica-day            = 86_400 * usd_per_replica_second

``replicas_per_host`` is the packing density, the figure that matters most. It
is the smaller of a memory bound and a CPU bound (:func:`replicas_per_host`).
An idle 1920x1080 replica was measured here at about 59 MiB (bench/bench_pool.py), so memory almost
never binds; an *active* replica is CPU bound (X rendering, the apps, frame
encoding), so the default density comes from a per-replica vCPU figure that the
caller should replace with the pool's measured one.

Default host (``DEFAULT_PRICE``): AWS EC2 ``m7i.4xlarge`` (16 vCPU, 64 GiB),
Linux on-demand in us-east-1, $0.8064 per hour. AWS's list price for
``m7i.xlarge`` there is $0.2016 per hour as quoted by
https://c3x.dev/blog/m5-vs-m6i-vs-m7i-cost-performance (a 2026 article, read on
2026-11-30); EC2 prices scale linearly with size within a family, so
``4xlarge`` = 4 x $0.2016 = $0.8064. The authoritative table is
https://aws.amazon.com/ec2/pricing/on-demand/; check it before quoting costs.

>>> price = PriceTable(instance="example", vcpus=4, memory_gib=16, usd_per_hour=3.6)
>>> episode_cost_usd(100, price, replicas_per_host=10)
0.01
>>> replica_day_usd(price, replicas_per_host=10)
8.64
"""

from __future__ import annotations

import math
from datetime import date

from pydantic import BaseModel, ConfigDict, Field

SECONDS_PER_DAY = 86_400

IDLE_REPLICA_MEM_MIB = 59.0
"""Measured resident memory of one idle replica at 1920x1080 (design notes)."""

DEFAULT_REPLICA_CPUS = 0.5
"""vCPUs per active replica. An assumption until the pool measures it; active density is CPU bound."""

DEFAULT_HOST_RESERVE_CPUS = 0.0
DEFAULT_HOST_RESERVE_GIB = 2.0
"""Memory kept back for the host OS, Docker and the collector."""


class PriceTable(BaseModel):
    """The price of one replica host, as a value.

    Attributes:
        instance: the host's name, e.g. an EC2 instance type.
        provider: who sells it ("aws", "on-prem", ...).
        region: where the price applies.
        vcpus: vCPUs of the host.
        memory_gib: memory of the host in GiB.
        usd_per_hour: on-demand price of the whole host, US dollars per hour.
        source: where the price was read (a URL), so a report can cite it.
        retrieved: the day the price was read.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    instance: str
    provider: str = "custom"
    region: str = ""
    vcpus: int = Field(gt=0)
    memory_gib: float = Field(gt=0)
    usd_per_hour: float = Field(ge=0)
    source: str = ""
    retrieved: date | None = None

    @property
    def usd_per_second(self) -> float:
        """The host's price per second."""
        return self.usd_per_hour / 3600.0


DEFAULT_PRICE = PriceTable(
    instance="m7i.4xlarge",
    provider="aws",
    region="us-east-1",
    vcpus=16,
    memory_gib=64,
    # Linux on-demand. m7i.xlarge is $0.2016/h (source below, read 2026-11-30); 4xlarge is 4x that.
    usd_per_hour=0.8064,
    source="https://c3x.dev/blog/m5-vs-m6i-vs-m7i-cost-performance (AWS list price; "
    "authoritative: https://aws.amazon.com/ec2/pricing/on-demand/)",
    retrieved=date(2026, 11, 30),
)
"""The documented default host: AWS m7i.4xlarge, us-east-1, Linux on-demand, $0.8064/h."""


def replicas_per_host(
    host_cpus: float,
    host_gib: float,
    replica_mem_mib: float = IDLE_REPLICA_MEM_MIB,
    replica_cpus: float = DEFAULT_REPLICA_CPUS,
    *,
    reserve_cpus: float = DEFAULT_HOST_RESERVE_CPUS,
    reserve_gib: float = DEFAULT_HOST_RESERVE_GIB,
) -> int:
    """How many replicas fit on a host: the smaller of the memory and the CPU bound.

    Args:
        host_cpus: vCPUs of the host.
        host_gib: memory of the host in GiB.
        replica_mem_mib: memory one replica needs, in MiB.
        replica_cpus: vCPUs one active replica needs.
        reserve_cpus: vCPUs kept back for the host itself.
        reserve_gib: GiB kept back for the host itself.

    Returns:
        The number of replicas, at least 0.

    Raises:
        ValueError: if a per-replica figure is not positive.

    >>> replicas_per_host(16, 64, replica_mem_mib=31.3, replica_cpus=0.5)
    32
    >>> replicas_per_host(16, 8, replica_mem_mib=1024, replica_cpus=0.25, reserve_gib=0)
    8
    """
    if replica_mem_mib <= 0:
        raise ValueError(f"replica_mem_mib: expected > 0, actual {replica_mem_mib}")
    if replica_cpus <= 0:
        raise ValueError(f"replica_cpus: expected > 0, actual {replica_cpus}")
    by_mem = math.floor(max(0.0, host_gib - reserve_gib) * 1024 / replica_mem_mib + 1e-9)
    by_cpu = math.floor(max(0.0, host_cpus - reserve_cpus) / replica_cpus + 1e-9)
    return max(0, min(by_mem, by_cpu))


def default_replicas_per_host(price: PriceTable = DEFAULT_PRICE) -> int:
    """The density assumed when the caller does not pass one: :func:`replicas_per_host` with defaults.

    >>> default_replicas_per_host()
    32
    """
    return replicas_per_host(price.vcpus, price.memory_gib)


def _check_density(replicas_per_host: float) -> None:
    if not replicas_per_host > 0:
        raise ValueError(f"replicas_per_host: expected > 0, actual {replicas_per_host}")


def usd_per_replica_second(price: PriceTable, replicas_per_host: float) -> float:
    """One replica's share of the host price, per second.

    Raises:
        ValueError: if ``replicas_per_host`` is not positive.

    >>> round(usd_per_replica_second(DEFAULT_PRICE, 32) * 3600, 4)
    0.0252
    """
    _check_density(replicas_per_host)
    return price.usd_per_second / replicas_per_host


def episode_cost_usd(replica_s: float, price: PriceTable, replicas_per_host: float) -> float:
    """The cost of an episode that held a replica for ``replica_s`` seconds.

    Args:
        replica_s: replica-seconds the episode used (the ``episodes.replica_s`` column).
        price: the host price.
        replicas_per_host: replicas packed on one host.

    Returns:
        US dollars.

    Raises:
        ValueError: if ``replica_s`` is negative or ``replicas_per_host`` is not positive.
    """
    if replica_s < 0:
        raise ValueError(f"replica_s: expected >= 0, actual {replica_s}")
    return round(replica_s * usd_per_replica_second(price, replicas_per_host), 12)


def replica_day_usd(price: PriceTable, replicas_per_host: float) -> float:
    """The cost of keeping one replica for 24 hours.

    Raises:
        ValueError: if ``replicas_per_host`` is not positive.
    """
    return round(SECONDS_PER_DAY * usd_per_replica_second(price, replicas_per_host), 12)


def assumptions(price: PriceTable, replicas_per_host: float) -> list[str]:
    """The cost model's assumptions as sentences, for a report to print.

    Raises:
        ValueError: if ``replicas_per_host`` is not positive.
    """
    per_s = usd_per_replica_second(price, replicas_per_host)
    where = ", ".join(p for p in (price.provider, price.region) if p)
    lines = [
        f"Host: {price.instance} ({where}): {price.vcpus} vCPU, {price.memory_gib:g} GiB, "
        f"${price.usd_per_hour:.4f}/hour on-demand.",
        f"Price source: {price.source or 'not given'}"
        + (f", read {price.retrieved.isoformat()}." if price.retrieved else "."),
        f"Density: {replicas_per_host:g} replicas per host; a replica costs ${per_s * 3600:.5f}/hour, "
        f"${replica_day_usd(price, replicas_per_host):.4f}/replica-day.",
        f"Measured idle replica: {IDLE_REPLICA_MEM_MIB} MiB at 1920x1080, so memory rarely binds; "
        f"active replicas are CPU bound (default {DEFAULT_REPLICA_CPUS} vCPU each, an assumption "
        "until the pool measures it).",
        "Episode cost = replica_s x host price per second / replicas per host. The host is assumed "
        "fully packed; idle replicas, warm spares, storage, network and model-inference costs are not included.",
    ]
    return lines
