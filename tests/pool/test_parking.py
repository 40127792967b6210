"""Parking a held replica: its resident memory bounded in its own cgroup, never killed for it, lifted again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

from osgym.errors import ConfigError, PoolError
from osgym.replicas import accounting, parking
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool, limits_for

pytestmark = [pytest.mark.docker]

MIB = 2**20


def _cgroup(replica: Replica) -> accounting.CgroupPaths:
    assert replica.container is not None
    paths = accounting.find_cgroup(replica.container.id)
    assert paths is not None, "the replica's cgroup was not found"
    return paths


def _charged(replica: Replica) -> int:
    """What the replica's cgroup is charged now, page cache included: what a bound reclaims from."""
    paths = _cgroup(replica)
    return int((paths.memory / ("memory.current" if paths.version == 2 else "memory.usage_in_bytes")).read_text())


def test_a_parked_replica_gives_back_its_cache_keeps_working_and_unparks(
        make_pool: Callable[..., ReplicaPool]) -> None:
    # The home on the writable layer (home_mib=None): the default tmpfs home holds pages no bound can give
    # back without a swap share, which is what the next test is for.
    pool = make_pool(1, limits=dataclasses.replace(limits_for("desktop"), home_mib=None))
    with pool.lease() as r:
        # clean page cache the replica is charged for: 160 MiB written to its home, then flushed
        assert r.execute("dd if=/dev/zero of=$HOME/blob bs=1M count=160 status=none && sync").returncode == 0
        before = _charged(r)
        assert before > 160 * MIB, f"the file's pages were not charged to the replica ({before / MIB:.0f} MiB)"
        parked = pool.park(r, 96)
        assert (parked.replica_id, parked.resident_mib) == (r.id, 96)
        assert parking.resident_bound_mib(r) == 96
        assert _charged(r) <= 96 * MIB, f"still charged {_charged(r) / MIB:.0f} MiB with a bound of 96"
        # parked, it still serves: the desktop answers and its files are whole
        shot = r.screenshot()
        assert (shot.width, shot.height) == (1280, 800) and shot.data[:4] == b"\x89PNG"
        assert r.execute("stat -c %s $HOME/blob").output.strip() == str(160 * MIB)
        pool.unpark(r)
        v2 = _cgroup(r).version == 2
        assert parking.resident_bound_mib(r) == (None if v2 else pool.limits.mem_mib)
        pool.unpark(r)  # idempotent
        assert parking.resident_bound_mib(r) == (None if v2 else pool.limits.mem_mib)


def test_a_bound_the_kernel_cannot_reach_never_kills_the_replica(make_pool: Callable[..., ReplicaPool]) -> None:
    pool = make_pool(1)  # no swap share: /tmp's pages (a tmpfs) cannot leave memory
    with pool.lease() as r:
        assert r.execute("head -c 160M /dev/zero > /tmp/pinned").returncode == 0
        if _cgroup(r).version == 2:
            pool.park(r, 96)  # memory.high: reclaims what it can and throttles, never kills
        else:
            with pytest.raises(PoolError, match="could not reclaim it down to 96 MiB"):
                pool.park(r, 96)
            assert parking.resident_bound_mib(r) == pool.limits.mem_mib, "a refused bound was left behind"
        assert r.health()["status"] == "ok"
        assert r.execute("stat -c %s /tmp/pinned").output.strip() == str(160 * MIB)
        pool.unpark(r)


@pytest.mark.parametrize("bound", [parking.MIN_RESIDENT_MIB - 1, 0, True, "96", 96.5])
def test_a_bad_bound_is_refused_before_anything_is_written(make_pool: Callable[..., ReplicaPool],
                                                           bound: object) -> None:
    pool = make_pool(1)
    with pool.lease() as r:
        was = parking.resident_bound_mib(r)
        with pytest.raises(ConfigError, match="resident_mib must be an integer"):
            pool.park(r, bound)  # type: ignore[arg-type]
        assert parking.resident_bound_mib(r) == was


def test_a_replica_without_a_local_container_cannot_be_parked(make_pool: Callable[..., ReplicaPool]) -> None:
    with pytest.raises(ConfigError, match="has no container"):
        parking.park(Replica("r-none", "unix:/nonexistent", "t"), 96)
    pool = make_pool(1)
    r = pool.acquire()
    pool.close()  # removes the container, and with it the cgroup
    with pytest.raises(ConfigError, match="no cgroup for its container"):
        parking.park(r, 96)
