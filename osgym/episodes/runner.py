"""``run_episode(replica, task, policy) -> Trajectory``: setup, the policy loop, evaluation.

Errors inside the episode become the trajectory's ``termination`` and
``error_class`` (setup_error, policy_error, evaluator_error, timeout). A
:class:`~osgym.errors.ReplicaError` is *raised*, because the remedy is to retry
the episode on a fresh replica.

The wall-clock deadline holds inside a step too: every request of the policy loop gets what
is left of it as its timeout, a reply's actions go in pieces that end at its waits, and a
decision holds at most ``MAX_ACTIONS_PER_REPLY`` actions and ``MAX_WAIT_PER_REPLY_S`` of
waiting (:func:`~osgym.replicas.actions.check_reply`). An episode out of time ends as a
``timeout`` and never waits on its replica past the deadline (a policy's own call to its
model is bounded by the policy's timeout, and is checked against the deadline when it returns).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

from osgym.agents.policies.base import Decision, Policy
from osgym.episodes.trajectory import Step, Trajectory, add_usage, utcnow
from osgym.errors import (
    EpisodeTimeout,
    EvaluatorError,
    PolicyError,
    RequestRejected,
    TaskError,
    error_class_of,
)
from osgym.replicas.actions import TERMINAL_TYPES, Action, Wait, check_reply
from osgym.replicas.client import Replica, SettleMode
from osgym.replicas.observation import Observation
from osgym.tasks.evaluate import evaluate
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import TaskSpec


@dataclass(frozen=True)
class EpisodeLimits:
    """How an episode observes and when it must stop."""

    max_steps: int = 15
    deadline_s: float = 300.0
    screenshot_format: str = "png"
    screenshot_quality: int = 80
    screenshot_max_side: int | None = None
    settle_s: float = 1.0
    settle_mode: SettleMode = "damage"
    a11y: bool = False  # capture the accessibility tree at every step


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
        run_setup(replica, task.config, task_id=task.id)
    except TaskError as exc:
        return _end(traj, "error", exc)
    finally:
        traj.setup_s = _ms(t0) / 1000
    try:
        policy.reset(task, seed=seed)
    except PolicyError as exc:
        return _end(traj, "error", exc)

    last_type: str | None = None
    termination = "max_steps"
    carried: _Turn | None = None  # the decision a wait ended on: it acts at the next step
    needs_a11y = _a11y(limits, False)
    for i in range(limits.max_steps):
        if time.monotonic() > deadline:
            termination = "timeout"
            break
        try:
            turn = carried or _turn(replica, task, policy, traj, i, limits, deadline, a11y=needs_a11y)
            carried = None
            if turn.decision.waiting:
                turn, carried = _wait(replica, task, policy, traj, turn, limits, deadline)
        except PolicyError as exc:
            return _end(traj, "error", exc)
        except (_DeadlinePassed, EpisodeTimeout):
            termination = "timeout"
            break
        obs, decision = turn.observation, turn.decision
        needs_a11y = _a11y(limits, decision.needs_a11y)
        actions = decision.actions
        if not actions:
            return _end(traj, "error", PolicyError("policy returned no action"))
        try:
            check_reply(actions)
        except PolicyError as exc:
            return _end(traj, "error", exc)
        types = [a.action_type for a in actions]
        terminal = next((t for t in types if t in TERMINAL_TYPES), None)
        to_run = [a for a in actions if a.action_type not in TERMINAL_TYPES]
        t0 = time.perf_counter()
        error = None
        timed_out = False
        try:
            if to_run and carried is None:  # a wait's actions already ran while it polled
                _act(replica, to_run, limits.settle_s, deadline, limits.settle_mode)
        except RequestRejected as exc:
            error = str(exc)
        except (_DeadlinePassed, EpisodeTimeout):
            timed_out = True
            error = "the episode's deadline passed during this step's actions"
        step = Step(
            step=i, ts=utcnow(), screenshot=obs.screenshot, screenshot_format=obs.screenshot_format,
            width=obs.width, height=obs.height, a11y=obs.a11y,
            action=actions[0].to_json() if len(actions) == 1 else {"actions": [a.to_json() for a in actions]},
            action_type=",".join(types), thought=decision.thought, done=terminal is not None,
            policy_ms=turn.policy_ms, env_ms=turn.observe_ms + _ms(t0), error=error,
            raw=decision.raw, usage=decision.usage, windows=obs.windows,
        )
        traj.steps.append(step)
        traj.policy_s += turn.policy_ms / 1000
        traj.env_s += step.env_ms / 1000
        if timed_out:
            termination = "timeout"
            break
        if error is not None:
            return _end(traj, "error", PolicyError(f"replica rejected the action: {error}"))
        if terminal is not None:
            last_type = terminal
            termination = "done" if terminal == "DONE" else "fail"
            break
    if termination == "timeout" or time.monotonic() > deadline:
        return _end(traj, "timeout", EpisodeTimeout(f"episode passed its {limits.deadline_s} s deadline"))
    if traj.steps and limits.settle_s:
        # Let the last actions land (a shell still running a typed command, an app still saving)
        # before the evaluator inspects the replica: a second settle window, at least a second long.
        replica.act([], settle=max(limits.settle_s, 1.0), mode=limits.settle_mode)
    try:
        traj.score = evaluate(replica, task, last_type)
    except (EvaluatorError, TaskError) as exc:
        return _end(traj, "error", exc, EvaluatorError.error_class)
    if traj.steps:
        traj.steps[-1].reward = traj.score
        traj.steps[-1].done = True
    traj.termination = termination
    traj.ended_at = utcnow()
    return traj


@dataclass
class _Turn:
    """One observation and the policy's decision on it, with what each cost."""

    observation: Observation
    decision: Decision
    observe_ms: float
    policy_ms: float


class _DeadlinePassed(Exception):
    """The episode's deadline passed while the policy was waiting."""


def _a11y(limits: EpisodeLimits, policy_needs: bool) -> bool | Literal["showing"]:
    """The tree the next observation reads: all of it when the episode records it at every step; when
    only the policy asks, what is on screen, all it can click or find focused, at a fraction of the cost
    (a LibreOffice window's whole tree takes seconds to walk)."""
    return True if limits.a11y else ("showing" if policy_needs else False)


def _turn(replica: Replica, task: TaskSpec, policy: Policy, traj: Trajectory, step: int, limits: EpisodeLimits,
          deadline: float, *, a11y: bool | Literal["showing"]) -> _Turn:
    """Observe and ask the policy. Every observing request gets what is left of ``deadline`` as its timeout.

    Raises:
        EpisodeTimeout: the deadline passed while observing.
        PolicyError: the policy failed.
    """
    t0 = time.perf_counter()
    with replica.deadline(deadline):
        obs = replica.observe(task.instruction, step, format=limits.screenshot_format,
                              quality=limits.screenshot_quality, max_side=limits.screenshot_max_side, a11y=a11y)
    observe_ms = _ms(t0)
    t0 = time.perf_counter()
    decision = policy.act(obs, traj.steps)
    return _Turn(obs, decision, observe_ms, _ms(t0))


def _wait(replica: Replica, task: TaskSpec, policy: Policy, traj: Trajectory, first: _Turn, limits: EpisodeLimits,
          deadline: float) -> tuple[_Turn, _Turn]:
    """Run a waiting policy's actions and observe again until it decides something else.

    Returns the turn to record (the first observation, with one ``WAIT`` as long as the whole wait)
    and the turn the wait ended on, which acts at the next step.

    Raises:
        PolicyError: the policy gave up (its own timeout), or a decision holds too many actions.
        _DeadlinePassed: the episode's deadline passed first.
        EpisodeTimeout: it passed during a request.
    """
    started = time.monotonic()
    turn, env_ms, policy_ms = first, 0.0, 0.0
    usages: list[dict[str, Any] | None] = []
    while turn.decision.waiting:
        if time.monotonic() > deadline:
            raise _DeadlinePassed
        env_ms += turn.observe_ms
        policy_ms += turn.policy_ms
        usages.append(turn.decision.usage)
        check_reply(turn.decision.actions)
        t0 = time.perf_counter()
        _act(replica, turn.decision.actions, 0.0, deadline)
        env_ms += _ms(t0)
        turn = _turn(replica, task, policy, traj, first.observation.step + 1, limits, deadline,
                     a11y=_a11y(limits, turn.decision.needs_a11y))
    # the step records the first reply, and the tokens of every call the wait made
    waited = Decision([Wait(seconds=round(time.monotonic() - started, 3))], thought=first.decision.thought,
                      raw=first.decision.raw, usage=add_usage(usages))
    return _Turn(first.observation, waited, env_ms, policy_ms), turn


def _act(replica: Replica, actions: list[Action], settle: float, deadline: float,
         mode: SettleMode | None = None) -> None:
    """Perform one reply's actions, stopping between them once ``deadline`` has passed.

    The actions go in pieces that each end at a ``WAIT`` (one request for a reply without
    waits), so the runner sees the deadline between a reply's waits, not only after all of
    them, and each request's timeout is cut to what is left of the deadline
    (:meth:`Replica.deadline`). The settle window follows the last piece only.

    Raises:
        _DeadlinePassed: the deadline passed between two pieces.
        EpisodeTimeout: it passed during one.
        RequestRejected: the replica refused an action.
    """
    pieces: list[list[Action]] = [[]]
    for action in actions:
        pieces[-1].append(action)
        if isinstance(action, Wait):
            pieces.append([])
    pieces = [p for p in pieces if p]
    with replica.deadline(deadline):
        for n, piece in enumerate(pieces):
            if time.monotonic() > deadline:
                raise _DeadlinePassed
            replica.act(piece, settle=settle if n == len(pieces) - 1 else 0.0, mode=mode)


def _end(traj: Trajectory, termination: str, exc: BaseException, error_class: str | None = None) -> Trajectory:
    """End ``traj`` on ``exc``; its ``error_class`` is the exception's own unless given (an evaluator's
    getter may raise a TaskError, which still counts as the evaluator's)."""
    traj.termination = termination
    traj.error_class = error_class or error_class_of(exc)
    traj.error_message = f"{type(exc).__name__}: {exc}"[:2000]
    traj.score = 0.0
    traj.ended_at = utcnow()
    return traj
