"""``Episode``: one task on one leased replica, shaped like Gymnasium's ``Env``: ``reset``, ``step``, ``close``.

The episode owns what happens on its replica: the task's setup and the first settle, the observations (screenshot,
windows, the accessibility tree as asked), the actions with their settle, the deadline, the step records and the
evaluation when it ends. Its drivers own the rest: :func:`~osgym.episodes.runner.run_episode` puts a policy in the
loop (collection), :class:`~osgym.serving.sessions.SessionManager` a client across the network (serving); leasing,
retries and sessions are theirs. Its record in the dataset is built from its trajectory by
:func:`~osgym.episodes.record.episode_result`.

The lifecycle is explicit (:class:`EpisodeState`)::

    NEW --reset()--> RUNNING --(DONE/FAIL, the step budget, the deadline, an error, fail())--> ENDED --close()--> CLOSED

:meth:`Episode.close` ends a running episode as truncated (``max_steps``, not evaluated) and is idempotent; any other
call the state does not allow raises :class:`EpisodeStateError`, naming the call and the state.

How an episode ends (``Trajectory.termination``): ``done`` or ``fail`` (a ``DONE`` or ``FAIL`` action, evaluated),
``max_steps`` (the step that reaches the budget, evaluated; or closed before its end, not evaluated), ``timeout``
(the deadline, or :meth:`Episode.fail` with an :class:`~osgym.errors.EpisodeTimeout`), ``error`` (setup, evaluator,
policy or replica; ``error_class`` says which). A :class:`~osgym.errors.ReplicaError` ends the episode
(:attr:`Episode.fault` holds it) and is raised: the remedy is a fresh replica. A setup step that fails but that setup
goes on after (OSWorld's rule for a command that exits non-zero, in ``config[]`` or ``evaluator.postconfig``) ends
nothing: it is listed in ``Trajectory.setup_failures``.

The deadline holds inside a step too: every request gets what is left of it as its timeout, and a reply's actions go
in pieces that end at its waits, with the deadline checked between them. An episode out of time ends as ``timeout``
and never waits on its replica past the deadline.

A step is one of two cycles (:data:`Cycle`), which the dataset has always recorded as they are:

- ``observe-act`` (a policy in the loop): a step is an observation, the decision on it and its actions. Its
  ``env_ms`` is that observation and those actions; nothing is observed after the last step, and the settle and
  evaluation at the end are the episode's, not a step's.
- ``act-observe`` (a client across the network): a step is its actions, then the observation the client gets back.
  Its ``env_ms`` is both, and for the last step the final observation, settle and evaluation the client waited
  for; the first observation, :meth:`Episode.reset`'s, is no step's.

A waiting decision (:attr:`~osgym.agents.policies.base.Decision.waiting`) spends no step: its actions run without a
settle and the episode observes again, until a decision that does not wait comes. The wait is then recorded as one
``WAIT`` step on the observation it began on, as long as the whole wait, and that decision acts as the next step.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal

from osgym.agents.policies.base import Decision
from osgym.episodes.limits import EpisodeLimits
from osgym.episodes.trajectory import Step, Trajectory, add_usage, utcnow
from osgym.errors import (
    EpisodeTimeout,
    EvaluatorError,
    PolicyError,
    ReplicaError,
    RequestRejected,
    TaskError,
    error_class_of,
)
from osgym.replicas.actions import TERMINAL_TYPES, Action, Wait, check_reply
from osgym.replicas.client import Replica, SettleMode
from osgym.replicas.hollow.protocol import A11yFind
from osgym.replicas.observation import Observation
from osgym.tasks.evaluate import evaluate
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import TaskSpec

__all__ = ["Cycle", "Episode", "EpisodeState", "EpisodeStateError", "StepOutcome"]

Cycle = Literal["observe-act", "act-observe"]
"""What one step is, and so what its ``env_ms`` holds (see the module docstring)."""


class EpisodeState(enum.Enum):
    """Where an episode is in its lifecycle."""

    NEW = "new"
    RUNNING = "running"
    ENDED = "ended"
    CLOSED = "closed"


class EpisodeStateError(RuntimeError):
    """Raised when an episode is called in a state that does not allow it (a step before reset, or after its end)."""


@dataclass(frozen=True)
class StepOutcome:
    """What one step returns: the observation to act on next and, when the episode ended, how.

    ``refused`` is what the replica answered when it refused one of the step's actions: the step is recorded with
    it, the observation is the one the step acted on, and the episode goes on (its driver decides what follows).
    """

    observation: Observation
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    termination: str | None = None
    error: str | None = None
    refused: str | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class _Wait:
    """A waiting decision's time so far: the step it will be recorded as."""

    observation: Observation  # the one the wait began on, which its step records
    first: Decision
    started: float
    env_ms: float = 0.0
    policy_ms: float = 0.0
    usages: list[dict[str, Any] | None] = field(default_factory=list)


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1000


def _a11y(limits: EpisodeLimits, policy_needs: bool) -> bool | Literal["showing"]:
    """The tree the next observation reads: all of it when the episode records it at every step; when
    only the policy asks, what is on screen, all it can click or find focused, at a fraction of the cost
    (a LibreOffice window's whole tree takes seconds to walk)."""
    return True if limits.a11y else ("showing" if policy_needs else False)


class Episode:
    """One episode of ``task`` on ``replica`` (leased by the caller, who gives it back); see the module docstring.

    Args:
        replica: a clean replica, leased for this episode.
        task: what is asked; its setup runs in :meth:`reset`.
        seed: the episode's seed, recorded with it (the task variant is already drawn).
        limits: how it observes, settles and when it must stop.
        cycle: what a step is: ``observe-act`` for a policy in the loop, ``act-observe`` for a client.
    """

    def __init__(self, replica: Replica, task: TaskSpec, *, seed: int = 0, limits: EpisodeLimits = EpisodeLimits(),
                 cycle: Cycle = "observe-act") -> None:
        self.replica = replica
        self.task = task
        self.seed = seed
        self.limits = limits
        self.cycle: Cycle = cycle
        self.state = EpisodeState.NEW
        self.trajectory = Trajectory()
        self.fault: ReplicaError | None = None
        """The replica's failure that ended the episode, if one did: its replica goes back as faulted."""
        self._deadline: float | None = None
        self._observation: Observation | None = None
        self._pending_ms = 0.0  # environment time the next recorded step is billed: its observation, a wait's polls
        self._wait: _Wait | None = None

    def __repr__(self) -> str:
        return f"<Episode {self.task.id} on {self.replica.id} {self.state.value} steps={len(self.trajectory.steps)}>"

    def __enter__(self) -> Episode:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def observation(self) -> Observation:
        """The observation the next step acts on.

        Raises:
            EpisodeStateError: before :meth:`reset` has observed.
        """
        if self._observation is None:
            raise EpisodeStateError(f"episode {self.task.id} has no observation yet: call reset() first")
        return self._observation

    @property
    def steps(self) -> list[Step]:
        """The steps recorded so far (a policy's history)."""
        return self.trajectory.steps

    # ---- the lifecycle -----------------------------------------------------------------------------
    def reset(self) -> Observation:
        """Run the task's setup, let the screen settle, and observe: the first observation.

        Raises:
            TaskError: the setup failed (the episode ended as ``error``).
            EpisodeTimeout: the deadline passed (the episode ended as ``timeout``).
            ReplicaError: the replica failed (the episode ended as a replica fault).
            EpisodeStateError: if the episode was reset before.
        """
        self._require("reset", EpisodeState.NEW)
        self.state = EpisodeState.RUNNING
        self.trajectory.started_at = utcnow()
        if self.limits.deadline_s is not None:
            self._deadline = time.monotonic() + self.limits.deadline_s
        t0 = time.perf_counter()
        try:
            run_setup(self.replica, self.task.config, task_id=self.task.id, tolerated=self.trajectory.setup_failures)
            if self.limits.first_settle_s:  # the first screen once setup's windows have drawn, not midway
                self.replica.act([], settle=self.limits.first_settle_s, quiet=self.limits.first_quiet_s)
            self.trajectory.setup_s = _ms(t0) / 1000
            if self._past_deadline():
                raise EpisodeTimeout(self._deadline_message())
            self._observation, observe_ms = self._observe(0, _a11y(self.limits, False))
        except EpisodeTimeout:
            self._end("timeout", EpisodeTimeout(self._deadline_message()))
            raise
        except BaseException as exc:  # recorded on every path, the caller's interrupt included
            self.trajectory.setup_s = _ms(t0) / 1000
            self._end("error", exc)
            raise
        if self.cycle == "observe-act":
            self._pending_ms = observe_ms
        return self._observation

    def step(self, action: Decision | Sequence[Action], *, policy_ms: float = 0.0) -> StepOutcome:
        """Take one step: run a decision's actions (a ``DONE`` or ``FAIL`` among them ends the episode), record it,
        and observe again; or end the episode, evaluated, when it ended or reached its step budget.

        Args:
            action: a policy's decision (its thought, reply and usage are recorded), or a client's actions.
            policy_ms: how long the decision took (the policy's call, or the client's time since its last answer).

        Raises:
            PolicyError: the decision holds no action, or too many, or too much waiting: nothing ran or was
                recorded (a wait that ended is recorded first).
            ReplicaError: the replica failed (the episode ended as a replica fault).
            EpisodeStateError: if the episode is not running.
        """
        self._require("step", EpisodeState.RUNNING)
        decision = action if isinstance(action, Decision) else Decision(list(action))
        try:
            if decision.waiting:
                return self._poll(decision, policy_ms)
            if self._wait is not None:
                ended = self._record_wait()
                if ended is not None:
                    return ended
            return self._act_step(decision, policy_ms)
        except EpisodeTimeout:
            return self._timed_out()
        except ReplicaError as exc:
            self._end("error", exc)
            raise

    def observe(self) -> Observation:
        """A fresh observation of the screen, outside the steps: nothing is recorded, and the next step still
        acts on :attr:`observation`.

        Raises:
            ReplicaError: the replica failed (the episode ended as a replica fault).
            EpisodeTimeout: the deadline passed (the episode ended as ``timeout``).
            EpisodeStateError: if the episode is not running.
        """
        self._require("observe", EpisodeState.RUNNING)
        with self._ending_on_faults():
            return self._observe(len(self.steps), _a11y(self.limits, False))[0]

    def fail(self, exc: BaseException, *, error_class: str | None = None) -> None:
        """End the running episode on ``exc`` (a policy that failed, a session reclaimed idle): as ``timeout`` for an
        :class:`~osgym.errors.EpisodeTimeout`, else ``error``; its ``error_class`` is the exception's unless given.

        Raises:
            EpisodeStateError: if the episode is not running.
        """
        self._require("fail", EpisodeState.RUNNING)
        self._end("timeout" if isinstance(exc, EpisodeTimeout) else "error", exc, error_class)

    def close(self) -> Trajectory:
        """End the episode if it is still going (truncated: ``max_steps``, not evaluated) and return its trajectory.

        Idempotent. The replica stays the caller's to give back.
        """
        if self.state in (EpisodeState.NEW, EpisodeState.RUNNING):
            self._end("max_steps")
        self.state = EpisodeState.CLOSED
        return self.trajectory

    # ---- one step ----------------------------------------------------------------------------------
    def _act_step(self, decision: Decision, policy_ms: float) -> StepOutcome:
        actions = decision.actions
        if not actions:
            raise PolicyError("policy returned no action")
        check_reply(actions)
        types = [a.action_type for a in actions]
        terminal = next((t for t in types if t in TERMINAL_TYPES), None)
        to_run = [a for a in actions if a.action_type not in TERMINAL_TYPES]
        obs = self.observation
        t0 = time.perf_counter()
        error: str | None = None  # the step's, as recorded
        timed_out = False
        try:
            if to_run:
                self._act(to_run, self.limits.settle_s, self.limits.settle_mode)
        except RequestRejected as exc:
            error = str(exc)
        except EpisodeTimeout:
            timed_out = True
            error = "the episode's deadline passed during this step's actions"
        except ReplicaError as exc:
            self._record(obs, decision, policy_ms, self._take_pending() + _ms(t0), str(exc))
            raise
        step = self._record(obs, decision, policy_ms, self._take_pending() + _ms(t0), error)
        if timed_out:
            return self._timed_out()
        if error is not None:
            return StepOutcome(obs, refused=error)
        if terminal is not None or len(self.steps) >= self.limits.max_steps:
            return self._finish(step, terminal, t0)
        if self._past_deadline():
            return self._timed_out()
        self._observation, observe_ms = self._observe(len(self.steps), _a11y(self.limits, decision.needs_a11y),
                                                      decision.a11y_window, decision.a11y_find)
        if self.cycle == "observe-act":
            self._pending_ms = observe_ms  # the next step acts on it
        else:
            self._bill(step, _ms(t0))  # the client gets it back from this step
        return StepOutcome(self._observation)

    def _poll(self, decision: Decision, policy_ms: float) -> StepOutcome:
        """Run a waiting decision's actions without a settle and observe again (numbered as the next step), without
        spending a step: the time goes to the wait's step."""
        if self._past_deadline():
            return self._timed_out()
        check_reply(decision.actions)
        wait = self._wait or _Wait(self.observation, decision, time.monotonic())
        self._wait = wait
        wait.env_ms += self._take_pending()  # the observation this decision was made on
        wait.policy_ms += policy_ms
        wait.usages.append(decision.usage)
        t0 = time.perf_counter()
        self._act(decision.actions, 0.0)
        wait.env_ms += _ms(t0)
        self._observation, self._pending_ms = self._observe(len(self.steps) + 1,
                                                            _a11y(self.limits, decision.needs_a11y),
                                                            decision.a11y_window, decision.a11y_find)
        return StepOutcome(self._observation)

    def _record_wait(self) -> StepOutcome | None:
        """Record the wait that a decision which does not wait just ended, as one ``WAIT`` step with the first
        reply and the tokens of every call the wait made; the outcome if that ended the episode, else None."""
        wait, self._wait = self._wait, None
        assert wait is not None
        waited = Decision([Wait(seconds=round(time.monotonic() - wait.started, 3))], thought=wait.first.thought,
                          raw=wait.first.raw, usage=add_usage(wait.usages))
        step = self._record(wait.observation, waited, wait.policy_ms, wait.env_ms, None)
        if len(self.steps) >= self.limits.max_steps:
            return self._finish(step, None, time.perf_counter())
        return self._timed_out() if self._past_deadline() else None

    def _finish(self, step: Step, terminal: str | None, t0: float) -> StepOutcome:
        """Let the last actions land, evaluate the task, end the episode; ``step`` is the last one."""
        termination = "done" if terminal == "DONE" else "fail" if terminal == "FAIL" else "max_steps"
        if self._past_deadline():
            return self._timed_out()
        final = self.observation
        try:
            if self.cycle == "act-observe":  # the client gets the final screen back
                final, _ = self._observe(len(self.steps), _a11y(self.limits, False))
                self._observation = final
            if self.limits.evaluation_settle_s:
                self.replica.act([], settle=self.limits.evaluation_settle_s, mode=self.limits.settle_mode)
            score = evaluate(self.replica, self.task, terminal, tolerated=self.trajectory.setup_failures)
        except (EvaluatorError, TaskError) as exc:  # a getter's TaskError still counts as the evaluator's
            if self.cycle == "act-observe":
                self._bill(step, _ms(t0))
            self._end("error", exc, EvaluatorError.error_class)
            return StepOutcome(final, 0.0, terminal is not None, terminal is None, "error", f"{exc}")
        if self.cycle == "act-observe":
            self._bill(step, _ms(t0))
        step.reward, step.done = score, True
        self.trajectory.score = score
        self._end(termination)
        return StepOutcome(final, score, terminal is not None, terminal is None, termination)

    def _timed_out(self) -> StepOutcome:
        message = self._deadline_message()
        self._end("timeout", EpisodeTimeout(message))
        return StepOutcome(self.observation, 0.0, False, True, "timeout", message)

    # ---- the replica ---------------------------------------------------------------------------------
    def _observe(self, index: int, a11y: bool | Literal["showing"], window: str | None = None,
                 find: A11yFind | None = None) -> tuple[Observation, float]:
        """Observe, within what is left of the deadline; the observation and what it took (ms). ``window`` and
        ``find`` narrow a tree read for the policy only (``"showing"``): a tree the episode records stays whole.

        Raises:
            EpisodeTimeout: the deadline passed while observing.
        """
        t0 = time.perf_counter()
        lim = self.limits
        with self.replica.deadline(self._deadline):
            obs = self.replica.observe(self.task.instruction, index, format=lim.screenshot_format,
                                       quality=lim.screenshot_quality, max_side=lim.screenshot_max_side, a11y=a11y,
                                       a11y_window=window if a11y == "showing" else None,
                                       a11y_find=find if a11y == "showing" else None)
        return obs, _ms(t0)

    def _act(self, actions: list[Action], settle: float, mode: SettleMode | None = None) -> None:
        """Perform one reply's actions, stopping between them once the deadline has passed.

        Under a deadline the actions go in pieces that each end at a ``WAIT`` (one request for a reply
        without waits), so the deadline is seen between a reply's waits, not only after all of them, and
        each request's timeout is cut to what is left of it (:meth:`Replica.deadline`). The settle window
        follows the last piece only.

        Raises:
            EpisodeTimeout: the deadline passed between two pieces, or during one.
            RequestRejected: the replica refused an action.
        """
        if not actions:
            return
        if self._deadline is None:
            self.replica.act(actions, settle=settle, mode=mode)
            return
        pieces: list[list[Action]] = [[]]
        for action in actions:
            pieces[-1].append(action)
            if isinstance(action, Wait):
                pieces.append([])
        pieces = [p for p in pieces if p]
        with self.replica.deadline(self._deadline):
            for n, piece in enumerate(pieces):
                if time.monotonic() > self._deadline:
                    raise EpisodeTimeout("the episode's deadline passed between the pieces of a reply")
                self.replica.act(piece, settle=settle if n == len(pieces) - 1 else 0.0, mode=mode)

    # ---- bookkeeping ---------------------------------------------------------------------------------
    def _record(self, obs: Observation, decision: Decision, policy_ms: float, env_ms: float,
                error: str | None) -> Step:
        actions = decision.actions
        types = [a.action_type for a in actions]
        step = Step(
            step=len(self.steps), ts=utcnow(), screenshot=obs.screenshot, screenshot_format=obs.screenshot_format,
            width=obs.width, height=obs.height, a11y=obs.a11y,
            action=actions[0].to_json() if len(actions) == 1 else {"actions": [a.to_json() for a in actions]},
            action_type=",".join(types), thought=decision.thought, done=any(t in TERMINAL_TYPES for t in types),
            policy_ms=policy_ms, env_ms=env_ms, error=error, raw=decision.raw, usage=decision.usage,
            windows=obs.windows,
        )
        self.trajectory.steps.append(step)
        self.trajectory.policy_s += policy_ms / 1000
        self.trajectory.env_s += env_ms / 1000
        return step

    def _bill(self, step: Step, env_ms: float) -> None:
        """Make ``env_ms`` the step's environment time (the episode's total follows)."""
        self.trajectory.env_s += (env_ms - step.env_ms) / 1000
        step.env_ms = env_ms

    def _take_pending(self) -> float:
        pending, self._pending_ms = self._pending_ms, 0.0
        return pending

    def _past_deadline(self) -> bool:
        return self._deadline is not None and time.monotonic() > self._deadline

    def _deadline_message(self) -> str:
        return f"episode passed its {self.limits.deadline_s} s deadline"

    @contextmanager
    def _ending_on_faults(self) -> Iterator[None]:
        """End the episode on a replica fault (``error``) or the deadline (``timeout``), then re-raise."""
        try:
            yield
        except EpisodeTimeout:
            self._end("timeout", EpisodeTimeout(self._deadline_message()))
            raise
        except ReplicaError as exc:
            self._end("error", exc)
            raise

    def _end(self, termination: str, exc: BaseException | None = None, error_class: str | None = None) -> None:
        """End the episode as ``termination``; with ``exc``, on that error (score 0)."""
        traj = self.trajectory
        traj.termination = termination
        if exc is not None:
            traj.error_class = error_class or error_class_of(exc)
            traj.error_message = f"{type(exc).__name__}: {exc}"[:2000]
            traj.score = 0.0
            if isinstance(exc, ReplicaError):
                self.fault = exc
        traj.ended_at = utcnow()
        self._wait = None
        self.state = EpisodeState.ENDED

    def _require(self, call: str, state: EpisodeState) -> None:
        if self.state is not state:
            hint = {EpisodeState.NEW: "call reset() first", EpisodeState.RUNNING: "it is running",
                    EpisodeState.ENDED: "it has ended; close() it", EpisodeState.CLOSED: "it is closed"}[self.state]
            raise EpisodeStateError(f"cannot {call}() episode {self.task.id}: {hint}")
