"""Per-replica accounting: cgroup v2 parsed from recorded files, v1 read live from a real replica."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from osgym.replicas import accounting
from osgym.replicas.accounting import Meter, Reading
from osgym.replicas.events import events_table
from osgym.replicas.pool import ReplicaPool

V2 = Path(__file__).parent / "fixtures" / "cgroup_v2"
MIB = 1024 * 1024


def test_cgroup_v2_files_are_found_and_parsed() -> None:
    paths = accounting.find_cgroup("0123abcd", V2 / "sys")
    assert paths is not None and paths.version == 2
    cpu_s, working, peak = accounting.read_v2(paths.memory)
    assert cpu_s == 2.5
    assert working == 60 * MIB  # memory.current less inactive_file
    assert peak == 120 * MIB
    r = accounting.read(paths, V2 / "proc", clock=lambda: 7.0)
    assert r == Reading(t=7.0, cpu_s=2.5, mem_bytes=40 * MIB, peak_bytes=120 * MIB, net_bytes=150_000, pss=True)
    assert accounting.find_cgroup("ffff", V2 / "sys") is None


def test_without_readable_processes_memory_is_the_working_set(tmp_path: Path) -> None:
    paths = accounting.find_cgroup("0123abcd", V2 / "sys")
    assert paths is not None
    r = accounting.read(paths, tmp_path)  # no /proc entries: no PSS, no network
    assert (r.mem_bytes, r.pss, r.net_bytes) == (60 * MIB, False, None)


def test_a_removed_cgroup_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        accounting.read_v2(tmp_path)
    with pytest.raises(FileNotFoundError):
        accounting.read_v1(tmp_path, tmp_path)


def test_the_meter_integrates_memory_over_time_and_differences_counters() -> None:
    m = Meter(Reading(0.0, 10.0, 100 * MIB, net_bytes=1000))
    m.add(Reading(1.0, 10.5, 300 * MIB, net_bytes=1500))
    m.add(Reading(3.0, 11.0, 100 * MIB, net_bytes=4000))
    u = m.usage()
    assert u.seconds == 3.0 and u.cpu_s == 1.0 and u.net_bytes == 3000
    assert u.mem_peak_mib == 300
    assert u.mem_avg_mib == pytest.approx((200 * 1 + 200 * 2) / 3)  # trapezoids: (100+300)/2*1 + (300+100)/2*2


def test_a_real_replica_is_accounted_per_lease_and_per_lifetime(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1, sample_interval=0.2)
    with pool.lease() as replica:
        for _ in range(3):
            replica.screenshot()
    usage = replica.usage
    assert usage is not None, "this machine's Docker runs replicas in cgroups this process can read"
    assert usage.seconds > 0 and usage.cpu_s > 0
    assert 5 < usage.mem_avg_mib <= usage.mem_peak_mib < pool.limits.mem_mib
    assert usage.net_bytes is None  # no network: loopback only
    pool.close()
    removed = [e for e in pool.events if e.event == "removed" and e.replica_id == replica.id]
    assert len(removed) == 1 and removed[0].usage is not None
    life = removed[0].usage
    assert life.seconds >= usage.seconds and life.cpu_s >= usage.cpu_s
    table = events_table(pool.events).to_pylist()
    row = next(r for r in table if r["event"] == "removed" and r["replica_id"] == replica.id)
    assert row["cpu_s"] == life.cpu_s and row["mem_peak_mib"] == life.mem_peak_mib
