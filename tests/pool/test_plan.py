"""Capacity planning: the host plan, fleet sizing and the ``osgym pool plan`` command (no containers)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.replicas import capacity
from osgym.replicas.hosts import DockerHost, as_hosts


def test_plan_takes_the_smallest_bound() -> None:
    res = capacity.HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=2048 + 33 * 100)
    p = capacity.plan(res, footprint_mib=33, cpu_per_replica=0.01)
    assert (p.replicas, p.binding, p.by_memory, p.by_cpu) == (100, "memory", 100, 200)
    assert capacity.plan(res, footprint_mib=33, cpu_per_replica=0.5).binding == "cpu"
    with pytest.raises(ValueError, match="expected > 0"):
        capacity.plan(res, footprint_mib=0)


def test_local_resources_read_meminfo() -> None:
    r = capacity.local_resources()
    assert r.cpus >= 1 and 0 < r.mem_available_mib <= r.mem_total_mib


def test_fleet_sizing_uses_the_cost_model() -> None:
    f = capacity.fleet(1000, 2, 4, 0.1, footprint_mib=100, cpu_per_replica=0.05)
    assert f.replicas_per_host == 20 and f.hosts == 50 and f.binding == "memory"
    assert f.usd_per_replica_day == pytest.approx(0.1 * 24 / 20)


def test_host_quarantine_threshold() -> None:
    h = DockerHost("tcp://box:2376")
    assert h.name == "box:2376" and not h.local
    reasons = [h.record(ok) for ok in (True, False, False, True, False, False)]
    assert reasons[-1] and reasons[-1].startswith("failure rate 67%") and not any(reasons[:-1])
    with pytest.raises(ValueError, match="unique"):
        as_hosts(["unix:///a.sock", DockerHost("unix:///b.sock", name="unix:///a.sock".split("://")[1])]
                 + ["unix:///a.sock"])


def test_pool_plan_command() -> None:
    out = CliRunner().invoke(app, ["pool", "plan", "--replicas", "1000", "--host-size", "16,64", "--price", "0.8064"])
    assert out.exit_code == 0, out.output
    assert "this host:" in out.output and "host(s)" in out.output and "per replica-day" in out.output
    bad = CliRunner().invoke(app, ["pool", "plan", "--replicas", "10"])
    assert bad.exit_code == 2
