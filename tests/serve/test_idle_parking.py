"""Served sessions' replicas parked while idle and woken by the next request, against real replicas."""

from __future__ import annotations

import time
from pathlib import Path

import docker
import pytest
from pydantic import ValidationError
from serve_support import TOKEN, OSGymClient, folder_task, infeasible_task, running

from osgym.replicas import accounting, parking
from osgym.replicas.client import Replica
from osgym.serving.auth import fingerprint
from osgym.serving.idle_parking import IdleParking
from osgym.serving.server import ServeConfig, Serving

pytestmark = [pytest.mark.docker]

OWNER = fingerprint(TOKEN)
PARK_MIB = 96


def _unparked(replica: Replica, s: Serving) -> int | None:
    """The bound an unparked replica has: none on cgroup v2, its memory limit on v1."""
    assert replica.container is not None
    paths = accounting.find_cgroup(replica.container.id)
    assert paths is not None
    return None if paths.version == 2 else s.pool.limits.mem_mib


def _wait_parked(s: Serving, vm: int, parks: int) -> None:
    parked = s.manager.parking
    assert parked is not None
    deadline = time.monotonic() + 20
    while (vm not in parked.parked or parked.parks < parks) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert vm in parked.parked and parked.parks == parks, (parked.parked, parked.parks, parked.disabled)


def test_an_idle_session_is_parked_and_its_next_step_wakes_it(image: str, docker_client: docker.DockerClient,
                                                              tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=1, standby=0, park_after_s=1.0,
                 park_mib=PARK_MIB) as (s, url):
        idle = s.manager.parking
        assert idle is not None
        c = OSGymClient(url)
        # The reaper parks a session 1 s after its last request; on a loaded host the checks of an unparked
        # replica could take that long and race it. Parking is held off while they run (the reaper reads
        # park_after_s each round), and let go where the test waits for a park.
        idle.park_after_s = 3600.0
        vm = c.reset(folder_task("parked")).json()["vm_id"]
        replica = s.manager.get(OWNER, vm).replica
        assert parking.resident_bound_mib(replica) == _unparked(replica, s)
        idle.park_after_s = 1.0
        _wait_parked(s, vm, parks=1)
        assert parking.resident_bound_mib(replica) == PARK_MIB
        idle.park_after_s = 3600.0
        # the next request lifts the bound before it runs, and the episode goes on as if nothing happened
        r = c.step(vm, "type(mkdir ~/Desktop/parked)&press(enter)")
        assert r.status_code == 200, r.text
        assert idle.wakes == 1
        assert vm not in idle.parked
        assert parking.resident_bound_mib(replica) == _unparked(replica, s)
        idle.park_after_s = 1.0
        _wait_parked(s, vm, parks=2)  # idle again: parked again
        done = c.step(vm, "finish()")
        assert done.status_code == 200 and done.json()["reward"] == 1.0
        assert idle.wakes == 2 and not idle.parked  # ended: forgotten
        assert idle.disabled is None and idle.refused == 0
        c.close()


def test_a_round_parks_at_most_its_share_and_a_busy_session_waits(image: str, docker_client: docker.DockerClient,
                                                                  tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=2, standby=0) as (s, url):  # the server parks nothing
        c = OSGymClient(url)
        vms = [c.reset(infeasible_task()).json()["vm_id"] for _ in range(2)]
        sessions = [s.manager.get(OWNER, vm) for vm in vms]
        idle = IdleParking(s.pool, 0.0, PARK_MIB, time.monotonic)
        with sessions[0].lock:  # a request is running on the first: not idle, whatever its clock says
            assert idle.park_idle(sessions, most=2) == [vms[1]]
        assert idle.park_idle(sessions, most=1) == [vms[0]]
        assert idle.park_idle(sessions, most=1) == []  # both parked already
        assert [parking.resident_bound_mib(x.replica) for x in sessions] == [PARK_MIB, PARK_MIB]
        for x in sessions:
            idle.wake(x)
        assert not idle.parked and idle.wakes == 2
        assert [parking.resident_bound_mib(x.replica) for x in sessions] == [_unparked(x.replica, s)] * 2
        c.shutdown("all")
        c.close()


def test_parking_after_the_idle_timeout_is_refused() -> None:
    with pytest.raises(ValidationError, match="must be under idle_timeout_s"):
        ServeConfig(park_after_s=600, idle_timeout_s=600)
    with pytest.raises(ValidationError, match="greater than or equal to 64"):
        ServeConfig(park_after_s=5, park_mib=32)
