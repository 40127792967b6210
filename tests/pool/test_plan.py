"""Capacity planning: the host plan, fleet sizing and the ``osgym pool plan`` command (no containers)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.replicas import capacity
from osgym.replicas.cost import Profile
from osgym.replicas.hosts import DockerHost, as_hosts


def test_plan_takes_the_smallest_bound() -> None:
    res = capacity.HostResources(cpus=2, mem_total_mib=24576, mem_available_mib=2048 + 33 * 100)
    p = capacity.plan(res, Profile(cores=0.01, mem_mib=33))
    assert (p.replicas, p.binding, p.by_memory, p.by_cpu) == (100, "memory", 100, 150)
    assert capacity.plan(res, Profile(cores=0.5, mem_mib=33)).binding == "cpu"
    assert capacity.plan(res, Profile(cores=0.001, mem_mib=1), mem_limit_mib=4096).binding == "limits"
    with pytest.raises(ValueError, match="expected > 0"):
        capacity.plan(res, mem_limit_mib=0)


def test_local_resources_read_meminfo() -> None:
    r = capacity.local_resources()
    assert r.cpus >= 1 and 0 < r.mem_available_mib <= r.mem_total_mib


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
    assert "this host:" in out.output and "1 x 16vCPU-64GiB" in out.output
    assert "$0.01935 per replica-day" in out.output and "assumed, not measured" in out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    listed = CliRunner().invoke(app, ["pool", "plan", "--replicas", "1000"])  # the price table's default host
    assert listed.exit_code == 0 and "m7i.4xlarge" in listed.output, listed.output
    bad = CliRunner().invoke(app, ["pool", "plan", "--price", "1"])
    assert bad.exit_code == 2 and "needs --replicas" in bad.output
    bad = CliRunner().invoke(app, ["pool", "plan", "--replicas", "10", "--price", "1"])
    assert bad.exit_code == 2 and "--host-size and --price together" in bad.output
