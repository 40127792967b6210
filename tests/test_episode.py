"""The episode core on real replicas: run_episode (a policy's loop) and the Episode object it loops over.

run_episode: the oracle solves tasks (also with noise) and doing nothing scores 0. Every desktop-basics
template is covered by tests/suites/test_desktop_basics_episodes.py; this module keeps a few representative
tasks. The Episode: its lifecycle (reset, step, close, and a call out of turn), the deadline inside one step,
and one price for an episode whichever way it was driven (collected or served).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from osgym.agents.policies.noop import NoopPolicy
from osgym.agents.policies.scripted import ScriptedPolicy
from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import Recipe
from osgym.episodes import Episode, EpisodeLimits, EpisodeState, EpisodeStateError, run_episode
from osgym.episodes.trajectory import EpisodeResult
from osgym.replicas import cost
from osgym.replicas.actions import Click, Done, Typing, Wait
from osgym.replicas.pool import ReplicaPool
from osgym.serving.limits import ServeLimits
from osgym.serving.sessions import SessionManager
from osgym.suites import load_suite, templates
from osgym.tasks.spec import OracleStep, load_task

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


# ---- the Episode object ----------------------------------------------------------------------------------

FOLDER_TASK = load_task({
    "id": "episode-mkdir", "instruction": "Create a folder named 'reports' on the Desktop.",
    "config": [{"type": "execute", "parameters": {"command": "rm -rf /home/user/Desktop/reports", "shell": True}},
               {"type": "launch", "parameters": {"command": ["xterm"]}},
               {"type": "wait_window", "parameters": {"title": "xterm", "focused": True}}],
    "evaluator": {"func": "exact_match",
                  "result": {"type": "vm_command_line", "shell": True,
                             "command": "test -d /home/user/Desktop/reports && echo yes || echo no"},
                  "expected": {"type": "rule", "rules": {"expected": "yes\n"}}},
})
PLAIN_TASK = load_task({"id": "episode-plain", "instruction": "Look at the desktop.", "config": [],
                        "evaluator": {"func": "infeasible"}})


def test_an_episode_resets_steps_ends_and_closes(shared_pool: ReplicaPool) -> None:
    with shared_pool.lease() as r:
        episode = Episode(r, FOLDER_TASK, seed=4, limits=EpisodeLimits(settle_s=0.5))
        assert episode.state is EpisodeState.NEW
        with pytest.raises(EpisodeStateError, match="call reset"):
            episode.step([Wait(seconds=0.1)])
        first = episode.reset()
        assert episode.state is EpisodeState.RUNNING and first.step == 0 and first.screenshot
        assert any(w.matches("xterm") for w in first.windows) and episode.trajectory.setup_s > 0
        out = episode.step([Typing(text="mkdir ~/Desktop/reports\n")], policy_ms=12.0)
        assert not out.done and out.reward == 0.0 and out.observation.step == 1
        assert episode.observation is out.observation
        looked = episode.observe()  # a fresh look is no step
        assert looked.step == 1 and len(episode.steps) == 1
        end = episode.step([Done()])
        assert (end.terminated, end.truncated, end.termination, end.reward) == (True, False, "done", 1.0)
        assert episode.state is EpisodeState.ENDED
        with pytest.raises(EpisodeStateError, match="it has ended"):
            episode.step([Done()])
        traj = episode.close()
        assert episode.close() is traj and episode.state is EpisodeState.CLOSED  # idempotent
    assert traj.termination == "done" and traj.success and traj.score == 1.0
    assert [s.action_type for s in traj.steps] == ["TYPING", "DONE"]
    assert [s.step for s in traj.steps] == [0, 1] and traj.steps[0].policy_ms == 12.0
    assert traj.steps[-1].done and traj.steps[-1].reward == 1.0 and not traj.steps[0].done
    # observe-act: a step's environment time is its observation and its actions; the total is the steps'
    assert all(s.env_ms > 0 for s in traj.steps)
    assert traj.env_s == pytest.approx(sum(s.env_ms for s in traj.steps) / 1000)


def test_a_call_after_close_raises_and_close_truncates_a_running_episode(shared_pool: ReplicaPool) -> None:
    with shared_pool.lease() as r:
        episode = Episode(r, PLAIN_TASK)
        episode.reset()
        episode.step([Click(x=5, y=5)])
        traj = episode.close()  # the caller gave up: truncated, not evaluated
        assert traj.termination == "max_steps" and traj.error_class is None and len(traj.steps) == 1
        assert traj.ended_at is not None and not traj.steps[-1].done
        for call in (lambda: episode.step([Done()]), episode.observe, episode.reset,
                     lambda: episode.fail(RuntimeError("late"))):
            with pytest.raises(EpisodeStateError, match=f"episode {PLAIN_TASK.id}: it is closed"):
                call()
        assert episode.close() is traj


def test_the_deadline_holds_inside_one_step(shared_pool: ReplicaPool) -> None:
    # one reply of three 2 s waits against a 3 s deadline: the step ends when the deadline does, not 6 s later
    limits = EpisodeLimits(deadline_s=3.0, settle_s=0.2)
    with shared_pool.lease() as r, Episode(r, PLAIN_TASK, limits=limits) as episode:
        started = time.monotonic()
        episode.reset()
        out = episode.step([Wait(seconds=2), Wait(seconds=2), Wait(seconds=2)])
        took = time.monotonic() - started
    traj = episode.trajectory
    assert episode.state is EpisodeState.CLOSED  # the block closed it
    assert (out.terminated, out.truncated, out.termination) == (False, True, "timeout")
    assert took < 3.0 + 1.5, f"the step held the replica {took:.1f} s past a 3 s deadline"
    assert traj.termination == "timeout" and traj.error_class == "timeout" and traj.score == 0.0
    assert traj.error_message == "EpisodeTimeout: episode passed its 3.0 s deadline"
    assert [s.error for s in traj.steps] == ["the episode's deadline passed during this step's actions"]


def _priced_from_row(row: dict[str, Any], prices: cost.PriceTable) -> float:
    """An episode's cost from its stored row alone, through the cost model (not through the code under test)."""
    profile = cost.episode_profile(row["cpu_s"], row["replica_s"], row["mem_avg_mib"])
    profile = profile.model_copy(update={"model": json.loads(row["policy_config"]).get("model")})
    return cost.cost_of(prices, profile, replica_s=row["replica_s"], input_tokens=row["input_tokens"] or 0,
                        output_tokens=row["output_tokens"] or 0, bytes_written=row["bytes_written"]).total_usd


def test_a_served_and_a_collected_episode_of_one_task_and_seed_are_priced_alike(
        make_pool: Callable[..., ReplicaPool], image: str) -> None:
    pool = make_pool(2)
    recipe = Recipe.model_validate({"name": "priced", "episodes": 1, "tasks": ["terminal-create-file"],
                                    "settle_s": 0.5, "max_steps": 10})
    [job] = plan_jobs(recipe, "priced-run")
    collected = Collector(recipe, pool, image).run_job(job)
    served: list[EpisodeResult] = []
    manager = SessionManager(pool, run_id="priced-run", image=image, sink=served.append,
                             limits=ServeLimits(settle_s=0.5, first_settle_s=1.0))
    try:
        session = manager.open("client", job.task, seed=job.seed)
        policy = ScriptedPolicy()
        policy.reset(job.task, seed=job.seed)
        while not session.ended:  # the oracle's GUI steps, sent as a client would (its tasks never wait here)
            decision = policy.act(session.observation, session.trajectory.steps)
            manager.step("client", session.id, decision.actions)
    finally:
        manager.shutdown()
    [result] = served
    assert (collected.trajectory.termination, result.trajectory.termination) == ("done", "done")
    assert collected.task_id == result.task_id and collected.variant == result.variant
    prices = cost.load_prices()
    for r in (collected, result):
        assert r.usage is not None and r.replica_s > 0 and r.cost_usd > 0
        assert r.cost_usd == pytest.approx(_priced_from_row(r.episode_row(), prices))
    # the collector prices the served episode's own accounting exactly as serving did
    repriced = Collector(recipe, pool, image)._result(job, policy, result.trajectory, 1, result.replica_id,
                                                      result.host, result.replica_s, result.usage)
    assert repriced.cost_usd == result.cost_usd
