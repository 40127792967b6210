"""``run_episode(replica, task, policy) -> Trajectory``: setup, the policy loop, evaluation.

Errors inside the episode become the trajectory's ``termination`` and
``error_class`` (setup_error, policy_error, evaluator_error, timeout). A
:class:`~osgym.errors.ReplicaError` is *raised*, because the remedy is to retry
the episode on a fresh replica.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from osgym.actions import TERMINAL_TYPES
from osgym.errors import EvaluatorError, PolicyError, ReplicaError, RequestRejected, TaskError
from osgym.policies.base import Policy
from osgym.replica import Replica
from osgym.specs.evaluate import evaluate
from osgym.specs.setup import run_setup
from osgym.specs.task import TaskSpec
from osgym.trajectory import Step, Trajectory, utcnow


@dataclass(frozen=True)
class EpisodeLimits:
    """How an episode observes and when it must stop."""

    max_steps: int = 15
    deadline_s: float = 300.0
    screenshot_format: str = "png"
    screenshot_quality: int = 80
    screenshot_max_side: int | None = None
    settle_s: float = 1.0


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def run_episode(
    replica: Replica, task: TaskSpec, policy: Policy, *, seed: int = 0, limits: EpisodeLimits = EpisodeLimits()
) -> Trajectory:
    """Run one episode of ``task`` with ``policy`` on ``replica``.

    Raises:
        ReplicaError: if the replica fails; retry the episode on a fresh replica.
    """
    traj = Trajectory(started_at=utcnow())
    start = time.monotonic()
    deadline = start + limits.deadline_s
    t0 = time.perf_counter()
    try:
        run_setup(replica, task.config)
    except TaskError as exc:
        return _end(traj, "error", "setup_error", exc)
    finally:
        traj.setup_s = _ms(t0) / 1000
    try:
        policy.reset(task, seed=seed)
    except PolicyError as exc:
        return _end(traj, "error", "policy_error", exc)

    last_type: str | None = None
    termination = "max_steps"
    for i in range(limits.max_steps):
        if time.monotonic() > deadline:
            termination = "timeout"
            break
        t0 = time.perf_counter()
        obs = replica.observe(task.instruction, i, format=limits.screenshot_format,
                              quality=limits.screenshot_quality, max_side=limits.screenshot_max_side)
        observe_ms = _ms(t0)
        t0 = time.perf_counter()
        try:
            decision = policy.act(obs, traj.steps)
        except PolicyError as exc:
            traj.policy_s += _ms(t0) / 1000
            traj.env_s += observe_ms / 1000
            return _end(traj, "error", "policy_error", exc)
        policy_ms = _ms(t0)
        actions = decision.actions
        if not actions:
            return _end(traj, "error", "policy_error", PolicyError("policy returned no action"))
        types = [a.action_type for a in actions]
        terminal = next((t for t in types if t in TERMINAL_TYPES), None)
        to_run = [a for a in actions if a.action_type not in TERMINAL_TYPES]
        t0 = time.perf_counter()
        error = None
        try:
            if to_run:
                replica.act(to_run, settle=limits.settle_s)
        except RequestRejected as exc:
            error = str(exc)
        step = Step(
            step=i, ts=utcnow(), screenshot=obs.screenshot, screenshot_format=obs.screenshot_format,
            width=obs.width, height=obs.height, a11y=obs.a11y,
            action=actions[0].to_json() if len(actions) == 1 else {"actions": [a.to_json() for a in actions]},
            action_type=",".join(types), thought=decision.thought, done=terminal is not None,
            policy_ms=policy_ms, env_ms=observe_ms + _ms(t0), error=error,
        )
        traj.steps.append(step)
        traj.policy_s += policy_ms / 1000
        traj.env_s += step.env_ms / 1000
        if error is not None:
            return _end(traj, "error", "policy_error", PolicyError(f"replica rejected the action: {error}"))
        if terminal is not None:
            last_type = terminal
            termination = "done" if terminal == "DONE" else "fail"
            break
    if termination == "timeout" or time.monotonic() > deadline:
        return _end(traj, "timeout", "timeout", TimeoutError(f"episode passed its {limits.deadline_s} s deadline"))
    if traj.steps and limits.settle_s:
        # Let the last actions land (a shell still running a typed command, an app still saving)
        # before the evaluator inspects the replica: a second settle window, at least a second long.
        replica.act([], settle=max(limits.settle_s, 1.0))
    try:
        traj.score = evaluate(replica, task, last_type)
    except (EvaluatorError, TaskError) as exc:
        return _end(traj, "error", "evaluator_error", exc)
    if traj.steps:
        traj.steps[-1].reward = traj.score
        traj.steps[-1].done = True
    traj.termination = termination
    traj.ended_at = utcnow()
    return traj


def _end(traj: Trajectory, termination: str, error_class: str, exc: BaseException) -> Trajectory:
    if isinstance(exc, ReplicaError):  # never swallow: the caller retries on a fresh replica
        raise exc
    traj.termination = termination
    traj.error_class = error_class
    traj.error_message = f"{type(exc).__name__}: {exc}"[:2000]
    traj.score = 0.0
    traj.ended_at = utcnow()
    return traj
