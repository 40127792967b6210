"""run_episode on real replicas: the oracle solves every task and doing nothing scores 0."""

from __future__ import annotations

import pytest

from osgym.episode import EpisodeLimits, run_episode
from osgym.policies.noop import NoopPolicy
from osgym.policies.scripted import ScriptedPolicy
from osgym.pool import ReplicaPool
from osgym.suites import load_suite

TASKS = load_suite("desktop-basics")


@pytest.fixture(scope="module")
def shared_pool(image, docker_client):  # type: ignore[no-untyped-def]
    from tests.conftest import SESSION, TEST_SCREEN

    with ReplicaPool(image, 2, standby=1, name=f"{SESSION}-episode", docker_client=docker_client,
                     screen=TEST_SCREEN) as pool:
        yield pool


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_scripted_oracle_solves_the_task_through_the_gui(shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(settle_s=1.0))
    assert traj.termination == "done", traj.error_message
    assert traj.score == 1.0 and traj.success
    kinds = {s.action_type for s in traj.steps}
    assert "CLICK" in kinds and "TYPING" in kinds  # solved by GUI input, not /execute
    assert len({s.screenshot_sha256 for s in traj.steps}) >= 3
    assert traj.steps[-1].done and traj.steps[-1].reward == 1.0


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_doing_nothing_scores_zero(shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    with shared_pool.lease() as r:
        traj = run_episode(r, task, NoopPolicy())
    assert traj.termination == "done" and traj.error_class is None
    assert traj.score == 0.0 and not traj.success


def test_step_budget_ends_the_episode(shared_pool: ReplicaPool) -> None:
    task = TASKS[1]  # the editor task needs more than two steps
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(max_steps=2))
    assert traj.termination == "max_steps" and len(traj.steps) == 2 and traj.score == 0.0
