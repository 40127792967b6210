"""run_episode on real replicas: the oracle solves tasks (also with noise) and doing nothing scores 0.

Every desktop-basics template is covered by tests/suites/test_desktop_basics_episodes.py;
this module keeps a few representative tasks.
"""

from __future__ import annotations

import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.episodes.runner import EpisodeLimits, run_episode
from osgym.replicas.pool import ReplicaPool
from osgym.tasks.spec import OracleStep
from osgym.tasks.suites import load_suite, templates

TASKS = [t for t in load_suite("desktop-basics")
         if t.id in ("terminal-create-file", "editor-save-text", "terminal-rename-file")]
NOISY = [t.variant(s) for t, s in zip(templates("desktop-basics", ["terminal-create-file", "editor-write-list",
                                                                   "settings-edit-config", "files-copy"]),
                                      (11, 12, 13, 14), strict=True)]


@pytest.fixture(scope="module")
def shared_pool(image, docker_client):  # type: ignore[no-untyped-def]
    from tests.conftest import SESSION, TEST_SCREEN

    with ReplicaPool(image, 2, standby=1, name=f"{SESSION}-episode", docker_client=docker_client,
                     screen=TEST_SCREEN) as pool:
        yield pool


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_scripted_oracle_solves_the_task_through_the_gui(shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(settle_s=0.5))
    assert traj.termination == "done", traj.error_message
    assert traj.score == 1.0 and traj.success
    kinds = {s.action_type for s in traj.steps}
    assert "CLICK" in kinds and "TYPING" in kinds  # solved by GUI input, not /execute
    assert len({s.screenshot_sha256 for s in traj.steps}) >= 3
    assert traj.steps[-1].done and traj.steps[-1].reward == 1.0


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_an_oracle_settled_by_comparing_frames_solves_the_task(
        shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    # the default settles by the X server's damage reports (the test above); frames remain a choice
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(settle_s=0.5, settle_mode="frames"))
    assert traj.termination == "done", traj.error_message
    assert traj.score == 1.0 and traj.success
    assert len({s.screenshot_sha256 for s in traj.steps}) >= 3  # the observations followed the oracle's work


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_doing_nothing_scores_zero(shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    with shared_pool.lease() as r:
        traj = run_episode(r, task, NoopPolicy(), limits=EpisodeLimits(settle_s=0.5))
    assert traj.termination == "done" and traj.error_class is None
    assert traj.score == 0.0 and not traj.success


def test_step_budget_ends_the_episode(shared_pool: ReplicaPool) -> None:
    task = next(t for t in TASKS if t.id == "editor-save-text")  # it needs more than two steps
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(max_steps=2))
    assert traj.termination == "max_steps" and len(traj.steps) == 2 and traj.score == 0.0


@pytest.mark.parametrize("task", NOISY, ids=[t.id for t in NOISY])
def test_noisy_oracle_makes_mistakes_recovers_and_still_solves(shared_pool: ReplicaPool, task) -> None:  # type: ignore[no-untyped-def]
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(noise=1.0), seed=3,
                           limits=EpisodeLimits(max_steps=60, settle_s=0.5))
    assert traj.termination == "done", traj.error_message
    assert traj.score == 1.0
    actions = [s.action for s in traj.steps]
    assert any(a.get("action_type") == "MOVE_TO" for a in actions)  # stray pointer moves
    assert any(a.get("action_type") == "PRESS" and a.get("key") == "backspace" for a in actions)  # typo fixed
    assert any("noise" in (s.thought or "") for s in traj.steps)


def _with_oracle(task, *ops: dict):  # type: ignore[no-untyped-def]
    return task.model_copy(update={"oracle": [OracleStep(**o) for o in ops]})


def test_wall_clock_deadline_ends_the_episode_as_timeout(shared_pool: ReplicaPool) -> None:
    task = _with_oracle(TASKS[0], {"op": "wait", "args": {"seconds": 3}}, {"op": "done"})
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(deadline_s=2.0, settle_s=0.5))
    assert traj.termination == "timeout" and traj.error_class == "timeout" and traj.score == 0.0


def test_fail_on_a_feasible_task_scores_zero(shared_pool: ReplicaPool) -> None:
    task = _with_oracle(TASKS[0], {"op": "fail"})
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(settle_s=0.5))
    assert traj.termination == "fail" and traj.error_class is None and traj.score == 0.0


def test_an_oracle_that_cannot_act_is_a_policy_error(shared_pool: ReplicaPool) -> None:
    task = _with_oracle(TASKS[0], {"op": "wait_window", "args": {"title": "no such window", "timeout": 0.5}})
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(settle_s=0.5))
    assert traj.termination == "error" and traj.error_class == "policy_error"
    assert "no such window" in (traj.error_message or "")


def test_a_wait_that_never_ends_is_a_policy_error_naming_the_task_step_and_windows(shared_pool: ReplicaPool) -> None:
    # 5 steps hold 25 polls of 0.2 s, not the 3 s this wait may take: its budget is time, not steps.
    task = _with_oracle(TASKS[0], {"op": "press", "args": {"key": "shift"}},
                        {"op": "wait_window", "args": {"title": "no such window", "timeout": 3}}, {"op": "done"})
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(max_steps=5, settle_s=0.5))
        on_screen = [w.title for w in r.windows()]
    assert traj.termination == "error" and traj.error_class == "policy_error", traj.termination
    message = traj.error_message or ""
    assert task.id in message and "step 2/3 (wait_window)" in message and "'no such window' never appeared" in message
    assert on_screen and f"windows on screen: {on_screen}" in message, message
    assert [s.action_type for s in traj.steps] == ["PRESS"]


def test_a_wait_is_recorded_as_one_step_however_long_it_polls(shared_pool: ReplicaPool) -> None:
    task = _with_oracle(TASKS[0], {"op": "click_window", "args": {"title": "xterm"}},
                        {"op": "type", "args": {"text": "sleep 2; mousepad\n"}},
                        {"op": "wait_window", "args": {"title": "Mousepad", "timeout": 30}}, {"op": "done"})
    with shared_pool.lease() as r:
        traj = run_episode(r, task, ScriptedPolicy(), limits=EpisodeLimits(max_steps=4, settle_s=0.5))
    assert traj.termination == "done", traj.error_message
    assert [s.action_type for s in traj.steps] == ["CLICK", "TYPING", "WAIT", "DONE"]
    assert traj.steps[2].action["seconds"] >= 1.0  # five polls or more, one step
