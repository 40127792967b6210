"""Capacity planning: the host plan, fleet sizing and the ``osgym pool plan`` command (no containers)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from osgym.cli import app
from osgym.errors import ConfigError
from osgym.replicas import capacity
from osgym.replicas.cost import Profile, density, load_prices, replica_day_usd
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


def test_cores_at_pace_is_the_idle_floor_plus_the_cpu_per_step_over_the_step_period() -> None:
    assert capacity.cores_at_pace(0.03, 0.05, 0.0) == pytest.approx(0.6)
    assert capacity.cores_at_pace(0.03, 0.05, 4.95, idle_cores=0.002) == pytest.approx(0.008)
    assert capacity.cores_at_pace(0.0, 0.05, 10.0, idle_cores=0.002) == pytest.approx(0.002)
    for args, says in [((0.03, 0.05, -1.0), "think time"), ((0.03, 0.05, math.inf), "think time"),
                       ((0.03, 0.05, math.nan), "think time"), ((-0.01, 0.05, 1.0), "CPU per step"),
                       ((0.03, 0.0, 1.0), "step time"), ((0.03, 0.05, 1.0, -0.1), "idle cores")]:
        with pytest.raises(ValueError, match=says):
            capacity.cores_at_pace(*args)
    step = capacity.StepProfile(cpu_per_step_s=0.03, step_s=0.05, idle_cores=0.002, mem_mib=60, source="here")
    p = capacity.at_pace(step, 4.95)
    assert p.cores == pytest.approx(0.008) and p.mem_mib == 60 and "here" in p.source and "4.95 s think" in p.source


def test_the_packaged_step_profiles_are_measured_for_both_tiers() -> None:
    desktop, apps = capacity.step_profile("desktop"), capacity.step_profile("apps")
    assert "bench_pool.py active" in desktop.source and "bench_pool.py active" in apps.source
    assert apps.mem_mib > desktop.mem_mib and apps.cpu_per_step_s > desktop.cpu_per_step_s
    with pytest.raises(ConfigError, match="no tier 'gpu'"):
        capacity.step_profile("gpu")


def _day(output: str) -> float:
    m = re.search(r"at this pace: \$([0-9.]+) per replica-day on m7i\.4xlarge", " ".join(output.split()))
    assert m, output
    return float(m.group(1))


def test_pool_plan_prices_a_replica_day_at_the_agents_pace() -> None:
    out = CliRunner().invoke(app, ["pool", "plan", "--think-time", "5"])
    assert out.exit_code == 0, out.output
    step = capacity.step_profile("desktop")
    profile = capacity.at_pace(step, 5)
    host = load_prices().host()
    want = replica_day_usd(host, density(host.vcpus, host.memory_gib, profile).replicas)
    assert _day(out.output) == pytest.approx(want, rel=1e-3)
    assert "ms CPU per step" in " ".join(out.output.split())
    days = {t: _day(CliRunner().invoke(app, ["pool", "plan", "--think-time", t]).output) for t in ("0", "2", "10")}
    assert days["0"] > days["2"] >= _day(out.output) >= days["10"]
    apps = CliRunner().invoke(app, ["pool", "plan", "--think-time", "5", "--tier", "apps"])
    assert apps.exit_code == 0 and _day(apps.output) > _day(out.output), apps.output
    fleet = CliRunner().invoke(app, ["pool", "plan", "--think-time", "5", "--replicas", "1000"])
    assert fleet.exit_code == 0 and "fleet: 1,000 replicas" in fleet.output, fleet.output


def test_pool_plan_reads_a_benchs_step_profile(tmp_path: Path) -> None:
    path = tmp_path / "apps-5s-15.json"
    path.write_text(json.dumps({"tier": "apps", "replicas": 15, "period_s": 5, "cpu_per_step_s": 0.1, "step_s": 0.2,
                                "idle_cores": 0.01, "mem_mib": 1024.0, "source": "a test"}))
    out = CliRunner().invoke(app, ["pool", "plan", "--think-time", "4.8", "--step-profile", str(path)])
    assert out.exit_code == 0, out.output
    # 0.01 + 0.1 / 5 = 0.03 cores: 400 by CPU; (64 - 2) GiB / 1 GiB = 62 by memory, which binds
    assert "62 per host, memory binds" in " ".join(out.output.split())
    assert _day(out.output) == pytest.approx(0.8064 * 24 / 62, rel=1e-3)


@pytest.mark.parametrize(("args", "says"), [
    (["--think-time", "-1"], "think time: expected a finite number >= 0"),
    (["--think-time", "nan"], "think time: expected a finite number >= 0"),
    (["--think-time", "5", "--tier", "gpu"], "no tier 'gpu'"),
    (["--think-time", "5", "--step-profile", "/nonexistent.json"], "step profile /nonexistent.json"),
    (["--think-time", "5", "--from-run", "r1"], "does not combine with --from-run"),
    (["--step-profile", "/nonexistent.json"], "--step-profile needs --think-time"),
])
def test_pool_plan_refuses_a_bad_pace(args: list[str], says: str) -> None:
    out = CliRunner().invoke(app, ["pool", "plan", *args])
    assert out.exit_code == 2 and says in " ".join(out.output.split()), out.output
    assert "Traceback" not in out.output


def test_pool_plan_at_a_step_every_n_seconds_is_the_think_time_that_makes_that_period() -> None:
    step = capacity.step_profile("desktop")
    every = CliRunner().invoke(app, ["pool", "plan", "--step-every", "5"])
    think = CliRunner().invoke(app, ["pool", "plan", "--think-time", str(5 - step.step_s)])
    assert every.exit_code == 0 and _day(every.output) == _day(think.output), every.output
    short = CliRunner().invoke(app, ["pool", "plan", "--step-every", str(step.step_s / 2)])
    assert short.exit_code == 2 and "expected at least the measured step time" in " ".join(short.output.split())
    both = CliRunner().invoke(app, ["pool", "plan", "--step-every", "5", "--think-time", "5"])
    assert both.exit_code == 2 and "not both" in both.output
