"""OSGym's protocol against real desktop replicas: round trips, rewards, errors, access and reclaim."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
from serve_support import (
    OTHER_TOKEN,
    TOKEN,
    OSGymClient,
    folder_task,
    infeasible_task,
    jpeg_size,
    running,
)

from osgym.dataset.reader import open_dataset
from osgym.serving.auth import fingerprint
from osgym.serving.server import Serving
from osgym.serving.sessions import Session

pytestmark = [pytest.mark.docker]

SCREEN = (1280, 800)
OWNER = fingerprint(TOKEN)


@pytest.fixture(scope="module")
def server(image: str, docker_client: docker.DockerClient,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serving, str]]:
    store = tmp_path_factory.mktemp("served")
    with running(image, docker_client, store, max_sessions_per_token=2) as s:
        yield s


@pytest.fixture
def client(server: tuple[Serving, str]) -> Iterator[OSGymClient]:
    c = OSGymClient(server[1])
    yield c
    c.shutdown("all")
    c.close()


def test_round_trip_and_finish_returns_the_reward(client: OSGymClient) -> None:
    task = folder_task()
    r = client.reset(task)
    assert r.status_code == 200, r.text
    body = r.json()
    assert set(body) == {"screenshot", "problem", "vm_id"}
    assert body["problem"] == task["instruction"] and isinstance(body["vm_id"], int)
    assert jpeg_size(body["screenshot"]) == SCREEN
    vm = body["vm_id"]

    r = client.step(vm, "type(mkdir ~/Desktop/reports)&press(enter)")
    assert r.status_code == 200, r.text
    step = r.json()
    assert set(step) == {"screenshot", "is_finish", "reward"}
    assert step["is_finish"] is False and step["reward"] == 0
    assert jpeg_size(step["screenshot"]) == SCREEN

    shot = client.screenshot(vm)
    assert shot.status_code == 200 and shot.json()["vm_id"] == vm
    assert jpeg_size(shot.json()["screenshot"]) == SCREEN

    r = client.step(vm, "finish()")
    assert r.status_code == 200, r.text
    assert r.json()["is_finish"] is True and r.json()["reward"] == 1.0
    gone = client.step(vm, "wait()")  # the episode ended and its replica went back
    assert gone.status_code == 404 and "no session" in gone.json()["message"]


def test_finish_without_solving_scores_zero_and_call_user_scores_infeasible_tasks(client: OSGymClient) -> None:
    vm = client.reset(folder_task("unsolved")).json()["vm_id"]
    r = client.step(vm, "click(10,10)&finish()")
    assert r.json() == {**r.json(), "is_finish": True, "reward": 0.0}
    vm = client.reset(infeasible_task()).json()["vm_id"]
    r = client.step(vm, "call_user()")
    assert r.json()["is_finish"] is True and r.json()["reward"] == 1.0


@pytest.mark.parametrize(("action", "named"), [
    ("clack(1,2)", "clack"),
    ("click(5000,10)", "x: expected 0..1279"),
    ("click(10)", "expected 2 argument"),
    ("click(a,b)", "expected an integer"),
    ("scroll(1,2,up)", "expected an integer"),
    ("click(1,2)&&finish()", "between '&'"),
    ("hotkey()", "key names"),
])
def test_a_bad_action_gets_a_4xx_naming_the_problem(client: OSGymClient, action: str, named: str) -> None:
    vm = client.reset(infeasible_task()).json()["vm_id"]
    r = client.step(vm, action)
    assert r.status_code == 400, r.text
    assert named in r.json()["message"]
    assert client.step(vm, "wait()").status_code == 200  # nothing ran; the session goes on
    client.shutdown(vm)


def test_bad_requests_and_other_clients_sessions(server: tuple[Serving, str], client: OSGymClient) -> None:
    url = server[1]
    assert client.http.post("/step", json={"action": "wait()"}).status_code == 422  # no vm_id
    assert client.step(987654, "wait()").status_code == 404
    vm = client.reset(infeasible_task()).json()["vm_id"]
    other = OSGymClient(url, OTHER_TOKEN)
    assert other.step(vm, "wait()").status_code == 404  # another token's session is not found
    assert other.screenshot(vm).status_code == 404
    for token in (None, "wrong-token-" + "c" * 20):
        stranger = OSGymClient(url, token)
        r = stranger.reset(infeasible_task())
        assert r.status_code == 401 and r.headers["WWW-Authenticate"] == "Bearer"
        assert stranger.step(vm, "finish()").status_code == 401
        stranger.close()
    other.close()
    client.shutdown(vm)


def test_sessions_are_capped_per_token(client: OSGymClient) -> None:
    first = client.reset(infeasible_task()).json()["vm_id"]
    second = client.reset(infeasible_task()).json()["vm_id"]
    r = client.reset(infeasible_task())
    assert r.status_code == 429 and "2 sessions" in r.json()["message"]
    client.shutdown(first)
    third = client.reset(infeasible_task())
    assert third.status_code == 200
    client.shutdown("all")
    assert client.step(second, "wait()").status_code == 404


@pytest.mark.parametrize(("task", "named"), [
    ({"id": "x", "instruction": "i", "config": [{"type": "googledrive", "parameters": {}}],
      "evaluator": {"func": "infeasible"}}, "googledrive"),
    ({"id": "x", "instruction": "i", "config": [],
      "evaluator": {"func": "compare_text_file", "result": {"type": "vm_file", "path": "/home/user/a.txt",
                                                        "dest": "../../etc/passwd"},
                    "expected": {"type": "vm_file", "path": "/home/user/b.txt", "dest": "b.txt"}}},
     "dest: expected a relative path"),
    ({"id": "x", "instruction": "i", "config": [{"type": "download", "parameters": {"files": [
        {"url": "https://example.org/a.xlsx", "path": "/home/user/a.xlsx"}]}}],
      "evaluator": {"func": "infeasible"}}, "asset not cached: https://example.org/a.xlsx"),
    ({"id": "x", "instruction": "i", "config": [], "evaluator": {"func": "no_such_metric"}}, "no_such_metric"),
])
def test_an_untrusted_task_file_is_refused_before_a_replica_is_leased(
        server: tuple[Serving, str], client: OSGymClient, task: dict[str, object], named: str) -> None:
    leased = server[0].pool.stats.leased
    r = client.reset(task)
    assert r.status_code == 400, r.text
    assert named in r.json()["message"]
    assert server[0].pool.stats.leased == leased


def test_a_vanished_clients_replica_is_reclaimed(server: tuple[Serving, str], client: OSGymClient,
                                                 docker_client: docker.DockerClient) -> None:
    s = server[0]
    # The session can be reclaimed before this test reads anything after the reset (1 s idle, counted from the
    # answer's last byte on the server's side): what ended is taken from the manager's end hook, not from a
    # look at the session table that would race the reaper.
    gone: list[Session] = []
    hook = gone.append
    s.manager.end_hooks.append(hook)
    try:
        before = s.manager.episodes_ended
        vm = client.reset(infeasible_task(), timeout=1).json()["vm_id"]  # OSGym's timeout: idle seconds allowed
        # the episode is counted only after its replica went back, which takes longer on a loaded machine
        deadline = time.monotonic() + 15
        while s.manager.episodes_ended == before and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        s.manager.end_hooks.remove(hook)
    assert [g.id for g in gone] == [vm], "the idle session was not reclaimed (or another one ended)"
    assert gone[0].trajectory.termination == "timeout"
    assert vm not in s.manager.sessions_of(OWNER)
    assert s.manager.episodes_ended == before + 1
    replica = gone[0].replica
    assert replica.container is not None
    assert client.step(vm, "wait()").status_code == 404
    assert "reclaimed" in client.step(vm, "wait()").json()["message"]
    # the replica went back to the pool: released (not faulted), its container removed, a fresh one leasable
    assert any(e.event == "released" and e.replica_id == replica.id for e in s.pool.events)
    # a container removed between docker-py's listing and its look at each one is gone, not an error
    deadline = time.monotonic() + 60
    while docker_client.containers.list(all=True, filters={"id": replica.container.id}, ignore_removed=True) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not docker_client.containers.list(all=True, filters={"id": replica.container.id}, ignore_removed=True)
    again = client.reset(infeasible_task()).json()["vm_id"]
    assert s.manager.get(OWNER, again).replica.id != replica.id


def test_every_served_episode_is_recorded(image: str, docker_client: docker.DockerClient, tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=1, standby=0, shard_max_age_s=1) as (s, url):
        c = OSGymClient(url)
        vm = c.reset(folder_task("recorded")).json()["vm_id"]
        c.step(vm, "type(mkdir ~/Desktop/recorded)&press(enter)")
        assert c.step(vm, "finish()").json()["reward"] == 1.0
        # the shard commits on the writer's time bound, while the server runs: a crash now loses nothing
        shards = tmp_path / "served" / "episodes" / f"run={s.run_id}"
        deadline = time.monotonic() + 15
        while not list(shards.glob("part-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert list(shards.glob("part-*.parquet")), "no shard committed within its time bound"
        vm = c.reset(infeasible_task()).json()["vm_id"]
        c.step(vm, "wait()")  # left open: the server's stop records it
        c.close()
        run_id = s.run_id
    view = open_dataset(tmp_path, "served")
    episodes = {e["task_id"]: e for e in view.episodes.to_table().to_pylist()}
    assert set(episodes) == {"serve-mkdir-recorded", "serve-infeasible"}
    solved, open_ = episodes["serve-mkdir-recorded"], episodes["serve-infeasible"]
    assert solved["run_id"] == run_id and solved["success"] and solved["termination"] == "done"
    assert solved["num_steps"] == 2 and solved["policy"] == "served-osgym"
    assert open_["termination"] == "max_steps" and not open_["success"]
    steps = view.steps.to_table().to_pylist()
    last = [st for st in steps if st["episode_id"] == solved["episode_id"] and st["done"]]
    assert len(last) == 1 and last[0]["reward"] == 1.0 and last[0]["action_type"] == "DONE"
    assert all(st["screenshot"]["bytes"][:2] == b"\xff\xd8" for st in steps)  # JPEGs as the replica encoded them


def test_a_replica_that_dies_mid_episode_is_a_502_and_a_fault(server: tuple[Serving, str],
                                                              client: OSGymClient) -> None:
    s = server[0]
    vm = client.reset(infeasible_task()).json()["vm_id"]
    faulted = s.pool.stats.faulted
    s.manager.get(OWNER, vm).replica.container.kill()
    r = client.step(vm, "click(10,10)")
    assert r.status_code == 502 and r.json()["error"] in ("ReplicaUnreachable", "ActionFailed"), r.text
    assert s.pool.stats.faulted == faulted + 1  # discarded as faulted, a replacement started
    assert client.step(vm, "wait()").status_code == 404
    assert client.reset(infeasible_task()).status_code == 200  # the pool goes on
