from __future__ import annotations

from datetime import date

import pydantic
import pytest

from osgym.replicas import cost
from osgym.replicas.cost import DEFAULT_PRICE, PriceTable


def test_default_price_is_the_cited_m7i_4xlarge() -> None:
    assert (DEFAULT_PRICE.instance, DEFAULT_PRICE.vcpus, DEFAULT_PRICE.memory_gib) == ("m7i.4xlarge", 16, 64)
    assert DEFAULT_PRICE.usd_per_hour == pytest.approx(4 * 0.2016)
    assert DEFAULT_PRICE.region == "us-east-1"
    assert "https://" in DEFAULT_PRICE.source
    assert DEFAULT_PRICE.retrieved == date(2026, 11, 30)
    assert DEFAULT_PRICE.usd_per_second == pytest.approx(0.8064 / 3600)


def test_price_table_is_a_validated_value() -> None:
    a = PriceTable(instance="x", vcpus=2, memory_gib=4, usd_per_hour=1.0)
    assert a == PriceTable(instance="x", vcpus=2, memory_gib=4, usd_per_hour=1.0)
    with pytest.raises(pydantic.ValidationError):
        a.usd_per_hour = 2.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="usd_per_hour"):
        PriceTable(instance="x", vcpus=2, memory_gib=4, usd_per_hour=-1)
    with pytest.raises(pydantic.ValidationError, match="vcpus"):
        PriceTable(instance="x", vcpus=0, memory_gib=4, usd_per_hour=1)
    with pytest.raises(pydantic.ValidationError, match="extra"):
        PriceTable(instance="x", vcpus=2, memory_gib=4, usd_per_hour=1, gpus=1)  # type: ignore[call-arg]


def test_replicas_per_host_takes_the_smaller_bound() -> None:
    # CPU bound: 16 / 0.5 = 32, memory allows (64 - 2) * 1024 / 31.3 = 2028.
    assert cost.replicas_per_host(16, 64, 31.3, 0.5) == 32
    # Memory bound: (8 - 2) * 1024 / 1024 = 6, CPU allows 64.
    assert cost.replicas_per_host(16, 8, 1024, 0.25) == 6
    assert cost.replicas_per_host(16, 8, 1024, 0.25, reserve_gib=0) == 8
    assert cost.replicas_per_host(16, 64, 31.3, 1.0, reserve_cpus=2) == 14
    assert cost.replicas_per_host(1, 1, 4096, 1) == 0  # too small for one replica
    assert cost.default_replicas_per_host() == 32


@pytest.mark.parametrize("kwargs", [{"replica_mem_mib": 0}, {"replica_cpus": -1}])
def test_replicas_per_host_rejects_nonpositive_figures(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="expected > 0"):
        cost.replicas_per_host(16, 64, **kwargs)


def test_costs_divide_the_host_price_by_density() -> None:
    price = PriceTable(instance="t", vcpus=4, memory_gib=16, usd_per_hour=3.6)  # $0.001/s
    assert cost.usd_per_replica_second(price, 10) == pytest.approx(0.0001)
    assert cost.episode_cost_usd(100, price, 10) == pytest.approx(0.01)
    assert cost.episode_cost_usd(0, price, 10) == 0
    assert cost.replica_day_usd(price, 10) == pytest.approx(8.64)
    assert cost.replica_day_usd(DEFAULT_PRICE, 32) == pytest.approx(0.6048)
    with pytest.raises(ValueError, match="replicas_per_host"):
        cost.episode_cost_usd(1, price, 0)
    with pytest.raises(ValueError, match="replica_s"):
        cost.episode_cost_usd(-1, price, 1)


def test_assumptions_state_price_source_and_density() -> None:
    lines = cost.assumptions(DEFAULT_PRICE, 32)
    text = "\n".join(lines)
    assert "m7i.4xlarge" in text and "$0.8064/hour" in text
    assert DEFAULT_PRICE.source in text and "2026-11-30" in text
    assert "32 replicas per host" in text and "$0.6048/replica-day" in text
    assert f"{cost.IDLE_REPLICA_MEM_MIB} MiB" in text
