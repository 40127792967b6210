"""The one cost model: the price table (packaged and user files), density, costs, fleet, assumptions."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pydantic
import pytest

from osgym.errors import ConfigError
from osgym.replicas import capacity, cost
from osgym.replicas.cost import DEFAULT_PROFILE, HostPrice, Profile


def test_the_packaged_table_keeps_the_cited_m7i_4xlarge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_PRICES", raising=False)
    h = cost.load_prices().host()
    assert (h.instance, h.vcpus, h.memory_gib, h.region) == ("m7i.4xlarge", 16, 64, "us-east-1")
    assert h.usd_per_hour == pytest.approx(4 * 0.2016)
    assert "https://" in h.source and h.retrieved == date(2026, 11, 30)


def test_a_user_table_adds_and_replaces_entries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = tmp_path / "prices.yaml"
    mine.write_text(
        "default_host: rack-a\n"
        "hosts:\n"
        "  - {instance: rack-a, provider: on-prem, vcpus: 64, memory_gib: 256, usd_per_hour: 1.5,\n"
        "     source: our invoice 2026-10, retrieved: 2026-11-01}\n"
        "models:\n"
        "  - {name: m1, usd_per_million_input: 2.0, usd_per_million_output: 8.0, source: list}\n"
        "storage: {usd_per_gib_month: 0.01, months: 12}\n")
    monkeypatch.setenv("OSGYM_PRICES", str(mine))
    table = cost.load_prices()  # the settings field names the file
    assert table.host().instance == "rack-a" and table.host("m7i.4xlarge").usd_per_hour == 0.8064
    assert table.model("m1") is not None and table.model("other") is None
    assert table.storage is not None and table.storage.usd_per_byte == pytest.approx(0.12 / 2**30)
    with pytest.raises(ConfigError, match="no host 'nope'"):
        table.host("nope")


@pytest.mark.parametrize("text, match", [
    ("hosts: [{instance: x}]\n", "vcpus"),
    ("default_host: x\n", "no host 'x'"),
    ("- a list\n", "expected a mapping"),
    ("hosts: [{instance: m7i.4xlarge, vcpus: 16, memory_gib: 64, usd_per_hour: -1}]\n", "usd_per_hour"),
    ("models: [{name: m, usd_per_million_input: 1, usd_per_million_output: 1, gpus: 1}]\n", "gpus"),
])
def test_a_bad_price_table_is_a_config_error(tmp_path: Path, text: str, match: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match=match):
        cost.load_prices(bad)
    with pytest.raises(ConfigError, match="No such file"):
        cost.load_prices(tmp_path / "missing.yaml")


def test_values_are_frozen_and_checked() -> None:
    h = HostPrice(instance="x", vcpus=2, memory_gib=4, usd_per_hour=1.0)
    assert h == HostPrice(instance="x", vcpus=2, memory_gib=4, usd_per_hour=1.0)
    with pytest.raises(pydantic.ValidationError):
        h.usd_per_hour = 2.0  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError, match="cores"):
        Profile(cores=0, mem_mib=10)


def test_density_is_the_smaller_bound_with_cpu_headroom() -> None:
    d = cost.density(16, 64, Profile(cores=0.5, mem_mib=59))
    assert (d.replicas, d.binding, d.by_cpu) == (24, "cpu", 24)  # 16 cores x 75% / 0.5
    d = cost.density(16, 8, Profile(cores=0.01, mem_mib=1024))
    assert (d.replicas, d.binding) == (6, "memory")  # (8 - 2 GiB reserve) / 1 GiB
    assert cost.density(1, 1, Profile(cores=1, mem_mib=4096)).replicas == 0


def test_the_pool_admission_uses_the_same_density() -> None:
    res = capacity.HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=23000)
    p = capacity.plan(res)
    d = cost.density(2, 23000 / 1024, DEFAULT_PROFILE)
    assert (p.replicas, p.by_cpu, p.by_memory, p.binding) == (d.replicas, d.by_cpu, d.by_memory, "cpu") == (
        150, 150, 355, "cpu")  # not 200: the CPU bound keeps 25 % headroom
    assert capacity.plan(res, Profile(cores=0.5, mem_mib=59)).replicas == 3


def test_costs_of_compute_tokens_and_storage() -> None:
    table = cost.PriceTable(
        default_host="t", hosts=[HostPrice(instance="t", vcpus=4, memory_gib=16, usd_per_hour=3.6)],
        models=[cost.ModelPrice(name="m", usd_per_million_input=2.0, usd_per_million_output=10.0)],
        storage=cost.StoragePrice(usd_per_gib_month=1.0, months=2))
    p = Profile(cores=0.3, mem_mib=100, replica_s=100, input_tokens=1e6, output_tokens=1e5, bytes=2**30,
                model="m")
    c = cost.cost_of(table, p, episodes=2)
    assert c.compute_usd == pytest.approx(0.02)  # 200 replica-s at $0.001/s over 10 replicas
    assert c.tokens_usd == pytest.approx(2 * (2.0 + 1.0))
    assert c.storage_usd == pytest.approx(2 * 2.0)
    assert c.total_usd == pytest.approx(0.02 + 6 + 4)
    unpriced = cost.cost_of(table, p.model_copy(update={"model": "other"}))
    assert unpriced.tokens_usd == 0
    huge = cost.cost_of(table, Profile(cores=64, mem_mib=10, replica_s=3600))
    assert huge.compute_usd == pytest.approx(3.6)  # more than a host: it pays the whole host
    assert cost.replica_day_usd(table.host(), 10) == pytest.approx(8.64)
    with pytest.raises(ValueError, match="replicas per host"):
        cost.usd_per_replica_second(table.host(), 0)


def test_an_episode_profile_comes_from_its_own_accounting() -> None:
    p = cost.episode_profile(cpu_s=12.0, replica_s=40.0, mem_mib=90.0)
    assert (p.cores, p.mem_mib, p.replica_s) == (0.3, 90.0, 40.0)
    fallback = cost.episode_profile(None, 40.0, None)
    assert (fallback.cores, fallback.mem_mib) == (DEFAULT_PROFILE.cores, DEFAULT_PROFILE.mem_mib)


def test_fleet_charges_the_paid_hosts_to_the_replicas_that_run() -> None:
    f = cost.fleet(1000, HostPrice(instance="s", vcpus=2, memory_gib=4, usd_per_hour=0.1),
                   Profile(cores=0.05, mem_mib=100))
    assert (f.replicas_per_host, f.hosts, f.binding) == (20, 50, "memory")
    assert f.usd_per_replica_day == pytest.approx(0.1 * 24 / 20) and f.usd_per_day == pytest.approx(120)
    with pytest.raises(ValueError, match="holds no replica"):
        cost.fleet(10, HostPrice(instance="s", vcpus=1, memory_gib=1, usd_per_hour=1), DEFAULT_PROFILE)


def test_assumptions_cite_prices_profile_and_density(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OSGYM_PRICES", raising=False)
    table = cost.load_prices()
    text = "\n".join(cost.assumptions(table, DEFAULT_PROFILE))
    assert "m7i.4xlarge" in text and "$0.8064/hour" in text and "2026-11-30" in text
    assert "1,076 replicas per host (memory binds" in text and "$0.01799 per replica-day" in text
    assert DEFAULT_PROFILE.source in text
    assert "e-0" not in text and "e-1" not in text  # no exponent notation
    tokens = "\n".join(cost.assumptions(table, DEFAULT_PROFILE.model_copy(update={"input_tokens": 5, "model": "x"})))
    assert "Model tokens not costed" in tokens


def test_a_bad_price_table_fails_a_collection_before_any_replica(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from osgym.collection import Collection

    bad = tmp_path / "prices.yaml"
    bad.write_text("hosts: [{instance: x, vcpus: 0, memory_gib: 1, usd_per_hour: 1}]\n")
    monkeypatch.setenv("OSGYM_PRICES", str(bad))
    with pytest.raises(ConfigError, match=r"(?s)price table .*vcpus"):
        Collection({"name": "x", "episodes": 1, "store": str(tmp_path / "data")})
    assert not (tmp_path / "data").exists()
