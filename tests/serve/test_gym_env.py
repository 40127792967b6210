"""The Gymnasium environments on real desktop replicas: the env checker, group reset, the server backend."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from serve_support import TOKEN, folder_task, plain_task, running

from osgym.replicas.pool import ReplicaPool
from osgym.serving.gym_env import ENV_ID, DesktopEnv, DesktopVectorEnv
from osgym.serving.limits import ServeLimits
from osgym.serving.sessions import SessionManager
from osgym.tasks.spec import load_task
from tests.conftest import SESSION

pytestmark = [pytest.mark.docker]


@pytest.fixture(scope="module")
def manager(image: str, docker_client: docker.DockerClient) -> Iterator[SessionManager]:
    pool = ReplicaPool(image, 3, standby=1, name=f"{SESSION}-gym-{uuid.uuid4().hex[:6]}",
                       docker_client=docker_client, screen=(1280, 800))
    pool.start()
    m = SessionManager(pool, run_id="gym-test", image=image, limits=ServeLimits(settle_s=0.3,
                                                                                max_sessions_per_owner=3))
    yield m
    m.shutdown()
    pool.close()


def test_the_env_passes_gymnasiums_checker(manager: SessionManager) -> None:
    env = gymnasium.make(ENV_ID, manager=manager, task=plain_task(), disable_env_checker=True)
    try:
        check_env(env.unwrapped, skip_render_check=True)
    finally:
        env.close()
    assert len(manager) == 0, "the checker's episodes were not given back"


def test_group_reset_gives_replicas_whose_first_observations_match(manager: SessionManager) -> None:
    envs = DesktopVectorEnv(3, manager=manager, suite="desktop-basics", group_size=3)
    try:
        obs, info = envs.reset(seed=7)
        assert obs["image"].shape == (3, 800, 1280, 3) and obs["image"].dtype == np.uint8
        assert len(set(info["session_id"])) == 3  # three replicas
        assert len(set(obs["instruction"])) == 1 and list(info["seed"]) == [7, 7, 7]
        assert np.array_equal(obs["image"][0], obs["image"][1]) and np.array_equal(obs["image"][0], obs["image"][2])
        obs2, info2 = envs.reset(seed=8)  # another seed: another variant, the same across the group
        assert len(set(obs2["instruction"])) == 1
        obs3, _, terminated, truncated, infos = envs.step(["clack(1,1)", "finish()", "wait()"])
        assert list(terminated) == [False, True, False] and not truncated.any()
        assert "clack" in infos["error"][0] and infos["error"][2] is None
        assert np.array_equal(obs3["image"][0], obs2["image"][0])  # the bad action ran nothing
    finally:
        envs.close()
    assert len(manager) == 0


def test_two_groups_get_two_seeds(manager: SessionManager) -> None:
    envs = DesktopVectorEnv(2, manager=manager, suite="desktop-basics", group_size=1)
    try:
        _, info = envs.reset(seed=3)
        assert list(info["seed"]) == [3, 4]
    finally:
        envs.close()


def test_the_env_over_a_server(image: str, docker_client: docker.DockerClient, tmp_path: Path) -> None:
    with running(image, docker_client, tmp_path, replicas=2, standby=0) as (s, url):
        env = gymnasium.make(ENV_ID, url=url, token=TOKEN)  # the screen comes from the server
        try:
            obs, info = env.reset(options={"task": folder_task("gym")})
            assert obs["image"].shape == (800, 1280, 3) and "gym" in obs["instruction"]
            obs, reward, terminated, truncated, info = env.step("type(mkdir ~/Desktop/gym)&press(enter)")
            assert (reward, terminated, truncated) == (0.0, False, False)
            obs, reward, terminated, truncated, info = env.step({"action_type": "DONE"})
            assert (reward, terminated, truncated) == (1.0, True, False) and info["termination"] == "done"
            with pytest.raises(gymnasium.error.ResetNeeded):
                env.step("wait()")
            obs, info = env.reset(seed=1)  # a suite variant drawn on the server
            assert obs["instruction"]
        finally:
            env.close()
        # Gymnasium's own AsyncVectorEnv (a process per sub-env) over the server, group-reset by a list of seeds
        envs = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="async",
                                  vector_kwargs={"shared_memory": False}, url=url, token=TOKEN, screen=(1280, 800),
                                  suite="desktop-basics")
        try:
            obs, info = envs.reset(seed=[5, 5])
            assert obs["instruction"][0] == obs["instruction"][1]
            assert np.array_equal(obs["image"][0], obs["image"][1])
        finally:
            envs.close()
        assert len(s.manager) == 0


def test_an_env_with_its_own_pool_removes_it_on_close(image: str, docker_client: docker.DockerClient) -> None:
    name = f"{SESSION}-gymown-{uuid.uuid4().hex[:6]}"
    env = DesktopEnv(image=image, docker_client=docker_client, pool_name=name, render_mode="rgb_array")
    obs, _ = env.reset(seed=2)
    obs, reward, terminated, truncated, info = env.step("move(10,10)&wait()")
    assert not terminated and info.get("error") is None
    rendered = env.render()
    assert rendered is not None and np.array_equal(rendered, obs["image"])
    env.close()
    env.close()
    assert not docker_client.containers.list(all=True, filters={"label": f"osgym.pool={name}"})


def test_a_failing_end_hook_is_logged_and_the_replica_still_goes_back(
        manager: SessionManager, caplog: pytest.LogCaptureFixture) -> None:
    seen: list[int] = []

    def broken(session: object) -> None:
        raise RuntimeError("the hook broke")

    manager.end_hooks.extend([broken, lambda s: seen.append(s.id)])  # type: ignore[attr-defined]
    try:
        session = manager.open("hooks", load_task(plain_task()))
        manager.close("hooks", session.id)
    finally:
        del manager.end_hooks[-2:]
    assert seen == [session.id]  # the next hook ran too
    assert any("the hook broke" in (r.exc_text or str(r.exc_info)) and str(session.id) in r.getMessage()
               for r in caplog.records), caplog.text
    assert len(manager) == 0
