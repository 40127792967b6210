"""``SessionManager``: episodes driven from outside, one leased replica per session.

A trainer (over HTTP, :mod:`osgym.serving.app`, or in process, :mod:`osgym.serving.gym_env`) opens a
session with a task, then sends actions one step at a time. The manager owns the sessions:

* **open** loads nothing itself: it takes a :class:`~osgym.tasks.spec.TaskSpec` the caller loaded
  with :func:`load_client_task` (the same loader, confinement and asset-cache check as a collected
  task), leases a fresh replica, runs the task's setup and observes;
* **step** performs a decision's actions, settles, observes again; a ``DONE``/``FAIL`` action, or the
  step budget, ends the episode: the task is evaluated and the score is the reward;
* **close** ends an episode the client gives up (``truncated``);
* idle sessions are reclaimed by a background thread after their idle timeout, so a client that
  disappears gives its replica back;
* sessions are capped per owner (a token), and each is visible to its owner only.

Every ended episode becomes an :class:`~osgym.episodes.trajectory.EpisodeResult`, the same record a
collected episode is, handed to ``sink`` (the dataset writer). A step row holds the screenshot the
client acted on and the actions it sent; the last step carries the reward.

How a served episode ends (``termination``): ``done``/``fail`` (the client's ``finish()``/``call_user()``,
evaluated), ``max_steps`` (the step budget, evaluated; or a client's shutdown before the end, not
evaluated: the trainer truncated it), ``timeout`` (reclaimed idle), ``error`` (setup, evaluator or
replica fault).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from osgym.collection.collector import episode_cost, episode_id
from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory, utcnow
from osgym.errors import (
    EpisodeTimeout,
    EvaluatorError,
    OsgymError,
    PolicyError,
    ReplicaError,
    RequestRejected,
    TaskError,
    TaskLoadError,
    error_class_of,
)
from osgym.replicas import cost
from osgym.replicas.actions import TERMINAL_TYPES, Action, check_reply
from osgym.replicas.client import Replica
from osgym.replicas.observation import Observation
from osgym.replicas.pool import ReplicaPool
from osgym.serving.idle_parking import IdleParking
from osgym.serving.limits import OSGYM_OBSERVATION, ObservationOptions, ServeLimits
from osgym.tasks.assets import cache_from_settings, missing_assets
from osgym.tasks.evaluate import evaluate
from osgym.tasks.setup import run_setup
from osgym.tasks.spec import TaskSpec, load_task

__all__ = ["ObservationOptions", "ServeLimits", "Session", "SessionLimit", "SessionManager", "SessionNotFound",
           "StepOutcome", "load_client_task"]

log = logging.getLogger(__name__)


class SessionNotFound(OsgymError):
    """Raised when a session id is unknown, ended, or belongs to another client."""


class SessionLimit(OsgymError):
    """Raised when a client already holds as many sessions as it may."""


def load_client_task(data: Any) -> TaskSpec:
    """Load a task a client sent: the collected tasks' loader, then the asset cache's check.

    The task file is untrusted input: :func:`~osgym.tasks.spec.load_task` refuses unsupported steps,
    getters, metrics and host paths; every http(s) URL it fetches must be in the operator's asset
    cache (``OSGYM_ASSET_CACHE``), as for a collected task; local sources stay confined to
    ``OSGYM_TASK_FILES_DIR`` when used (:mod:`osgym.tasks.files`).

    Raises:
        TaskLoadError: naming what is wrong, or the first URL the cache lacks.
    """
    if not isinstance(data, dict):
        raise TaskLoadError(f"task: expected a JSON object, actual {type(data).__name__}")
    task = load_task(data)
    missing = missing_assets(task, cache_from_settings())
    if missing:
        raise TaskLoadError(f"task {task.id}: asset not cached: {missing[0]} (the operator stages assets with "
                            "`osgym tasks fetch-assets`)")
    return task


@dataclass
class StepOutcome:
    """What one step returns: the new observation and, when the episode ended, how."""

    observation: Observation
    reward: float
    terminated: bool
    truncated: bool
    termination: str | None = None
    error: str | None = None

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


@dataclass
class Session:
    """One served episode on one leased replica."""

    id: int
    owner: str
    protocol: str
    task: TaskSpec
    seed: int
    replica: Replica
    options: ObservationOptions
    idle_timeout_s: float
    observation: Observation
    trajectory: Trajectory
    leased_at: float
    last_seen: float
    serial: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: bool = False
    answered_at: float = 0.0
    """When the client last got an observation: the time to its next step is its own (its model's)."""

    @property
    def steps(self) -> int:
        return len(self.trajectory.steps)


class SessionManager:
    """Sessions over a started :class:`~osgym.replicas.pool.ReplicaPool`.

    Args:
        pool: a started pool; the manager leases and releases its replicas, never closes it.
        run_id: the dataset run every episode is recorded under (one per server process).
        image: the replicas' image, recorded in each episode row.
        sink: receives each ended episode (normally ``DatasetWriter.add``); None records nothing.
        limits: the operator's bounds.
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(self, pool: ReplicaPool, *, run_id: str, image: str,
                 sink: Callable[[EpisodeResult], None] | None = None, limits: ServeLimits = ServeLimits(),
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.pool = pool
        self.run_id = run_id
        self.image = image
        self.sink = sink
        self.limits = limits
        self.clock = clock
        self.prices = cost.load_prices()  # the operator's table (OSGYM_PRICES): a bad one fails at start
        self._sessions: dict[int, Session] = {}
        self._opening: dict[str, int] = {}  # sessions each owner is opening (leasing, setting up)
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self.episodes_ended = 0
        self.sink_errors: list[str] = []
        self.end_hooks: list[Callable[[Session], None]] = []
        """Called with each session as it ends, before its replica is given back (the live views' revocation)."""
        self.parking = None if limits.park_after_s is None else IdleParking(pool, limits.park_after_s,
                                                                            limits.park_mib, clock)
        if self.parking is not None:
            self.end_hooks.append(self.parking.forget)
        self._reaper = threading.Thread(target=self._reap_loop, name="osgym-serve-reaper", daemon=True)
        self._reaper.start()

    def __deepcopy__(self, memo: dict[int, Any]) -> SessionManager:
        return self  # a live resource, shared: gymnasium.make deep-copies its kwargs, and envs share a manager

    # ---- queries -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return len(self._sessions)

    def sessions_of(self, owner: str) -> list[int]:
        with self._lock:
            return sorted(s.id for s in self._sessions.values() if s.owner == owner)

    def get(self, owner: str, session_id: int) -> Session:
        """The owner's live session ``session_id``, touched (its idle clock restarts).

        Raises:
            SessionNotFound: if there is none (another owner's session is not found either).
        """
        with self._lock:
            s = self._sessions.get(session_id)
            if s is None or s.owner != owner:
                raise SessionNotFound(f"no session {session_id}: it ended, was reclaimed after its idle timeout, "
                                      "or was never opened by this client")
            s.last_seen = self.clock()
        if self.parking is not None:
            self.parking.wake(s)
        return s

    # ---- open ----------------------------------------------------------------------------------------
    def open(self, owner: str, task: TaskSpec, *, seed: int = 0, protocol: str = "native",
             options: ObservationOptions = OSGYM_OBSERVATION, idle_timeout_s: float | None = None) -> Session:
        """Lease a fresh replica, run ``task``'s setup on it and observe: a new session.

        Raises:
            SessionLimit: if ``owner`` holds ``max_sessions_per_owner`` sessions already.
            LeaseTimeout: if no replica was free within ``lease_timeout_s``.
            SetupError: if the task's setup failed (the episode is recorded, the replica given back).
            ReplicaError: if the replica failed (likewise).
        """
        if self._closed.is_set():
            raise SessionNotFound("the server is shutting down")
        idle = self.limits.idle_timeout_s if idle_timeout_s is None else min(max(idle_timeout_s, 1.0),
                                                                             self.limits.idle_timeout_s)
        # count the open against the cap until it is a session, so concurrent opens respect the cap; the
        # lock is held only for the count, never across the (slow) lease, so opens wait for replicas in parallel
        with self._lock:
            held = sum(s.owner == owner for s in self._sessions.values()) + self._opening.get(owner, 0)
            if held >= self.limits.max_sessions_per_owner:
                raise SessionLimit(f"this client holds {held} sessions, the most it may (shut one down first)")
            self._opening[owner] = self._opening.get(owner, 0) + 1
            sid = next(self._ids)
        try:
            replica = self.pool.acquire(self.limits.lease_timeout_s)
            now = self.clock()
            empty = Observation(b"", options.format, 0, 0, task.instruction, 0)
            session = Session(sid, owner, protocol, task, seed, replica, options, idle, empty,
                              Trajectory(started_at=utcnow()), leased_at=now, last_seen=now, serial=sid)
            t0 = time.perf_counter()
            try:
                run_setup(replica, task.config, task_id=task.id)
                if self.limits.first_settle_s:  # the first screen once setup's windows have drawn, not midway
                    replica.act([], settle=self.limits.first_settle_s, quiet=self.limits.first_quiet_s)
                session.trajectory.setup_s = time.perf_counter() - t0
                session.observation = self._observe(session, 0)
            except BaseException as exc:  # the episode is recorded and the replica given back, on every path
                session.trajectory.setup_s = time.perf_counter() - t0
                self._end(session, "error", exc, fault=isinstance(exc, ReplicaError))
                raise
            with self._lock:
                self._sessions[sid] = session
                session.last_seen = session.answered_at = self.clock()
            return session
        finally:
            with self._lock:
                self._opening[owner] -= 1

    # ---- step ----------------------------------------------------------------------------------------
    def step(self, owner: str, session_id: int, actions: Sequence[Action]) -> StepOutcome:
        """Perform one decision's actions on the session's replica and observe.

        A ``DONE`` or ``FAIL`` action ends the decision (what follows it is not run) and the episode:
        the task is evaluated and the score is the reward. The step that reaches ``max_steps`` ends
        it too (evaluated, ``truncated``).

        Raises:
            SessionNotFound: if the owner has no such session.
            PolicyError: if the decision is empty, or holds too many actions or too much waiting
                (nothing ran, nothing is recorded).
            RequestRejected: if the replica refused an action (recorded on the step; the session goes on).
            ReplicaError: if the replica failed (the episode ends as a replica fault).
        """
        session = self.get(owner, session_id)
        if not actions:
            raise PolicyError("expected at least one action, actual none")
        check_reply(actions)
        with session.lock:
            if session.ended:
                raise SessionNotFound(f"no session {session_id}: it ended")
            try:
                return self._step(session, list(actions))
            finally:
                session.last_seen = session.answered_at = self.clock()

    def _step(self, session: Session, actions: list[Action]) -> StepOutcome:
        traj, obs = session.trajectory, session.observation
        types: list[str] = [a.action_type for a in actions]
        terminal = next((t for t in types if t in TERMINAL_TYPES), None)
        if terminal is not None:  # nothing after the episode's end runs
            actions = actions[: types.index(terminal) + 1]
            types = types[: len(actions)]
        to_run = [a for a in actions if a.action_type not in TERMINAL_TYPES]
        # the client's time since its last observation: its model thinking, as a policy's time
        policy_ms = max(0.0, (self.clock() - session.answered_at) * 1000)
        t0 = time.perf_counter()
        error: str | None = None
        try:
            if to_run:
                session.replica.act(to_run, settle=self.limits.settle_s, mode=self.limits.settle_mode)
        except RequestRejected as exc:
            error = str(exc)
        except ReplicaError as exc:
            self._record_step(session, obs, actions, types, policy_ms, t0, str(exc))
            self._end(session, "error", exc, fault=True)
            raise
        last = len(traj.steps) + 1 >= self.limits.max_steps
        step = self._record_step(session, obs, actions, types, policy_ms, t0, error)
        if error is not None:
            step.env_ms = (time.perf_counter() - t0) * 1000
            raise RequestRejected(f"the replica refused the action: {error}", 400)
        if terminal is None and not last:
            try:
                session.observation = self._observe(session, len(traj.steps))
            except ReplicaError as exc:
                self._end(session, "error", exc, fault=True)
                raise
            step.env_ms = (time.perf_counter() - t0) * 1000
            traj.env_s += step.env_ms / 1000
            return StepOutcome(session.observation, 0.0, False, False)
        return self._finish(session, step, terminal, t0)

    def _finish(self, session: Session, step: Step, terminal: str | None, t0: float) -> StepOutcome:
        """Observe the final screen, evaluate the task, end the episode."""
        traj = session.trajectory
        termination = "done" if terminal == "DONE" else "fail" if terminal == "FAIL" else "max_steps"
        try:
            final = self._observe(session, len(traj.steps))
            # let the last actions land (a shell still running, an app still saving) before the evaluator looks
            session.replica.act([], settle=max(self.limits.settle_s, 1.0), mode=self.limits.settle_mode)
            score = evaluate(session.replica, session.task, terminal)
        except (EvaluatorError, TaskError) as exc:
            step.env_ms = (time.perf_counter() - t0) * 1000
            traj.env_s += step.env_ms / 1000
            self._end(session, "error", exc, error_class=EvaluatorError.error_class)
            return StepOutcome(final, 0.0, terminal is not None, terminal is None, "error", f"{exc}")
        except ReplicaError as exc:
            self._end(session, "error", exc, fault=True)
            raise
        step.env_ms = (time.perf_counter() - t0) * 1000
        traj.env_s += step.env_ms / 1000
        step.reward, step.done = score, True
        traj.score = score
        self._end(session, termination)
        return StepOutcome(final, score, terminal is not None, terminal is None, termination)

    def _record_step(self, session: Session, obs: Observation, actions: list[Action], types: list[str],
                     policy_ms: float, t0: float, error: str | None) -> Step:
        step = Step(
            step=len(session.trajectory.steps), ts=utcnow(), screenshot=obs.screenshot,
            screenshot_format=obs.screenshot_format, width=obs.width, height=obs.height, a11y=obs.a11y,
            action=actions[0].to_json() if len(actions) == 1 else {"actions": [a.to_json() for a in actions]},
            action_type=",".join(types), done=any(t in TERMINAL_TYPES for t in types),
            policy_ms=policy_ms, env_ms=(time.perf_counter() - t0) * 1000, error=error,
        )
        session.trajectory.steps.append(step)
        session.trajectory.policy_s += policy_ms / 1000
        return step

    def _observe(self, session: Session, step: int) -> Observation:
        o = session.options
        return session.replica.observe(session.task.instruction, step, format=o.format, quality=o.quality,
                                       max_side=o.max_side, a11y=o.a11y)

    # ---- observe, close, reap ------------------------------------------------------------------------
    def observe(self, owner: str, session_id: int) -> Observation:
        """A fresh observation of the session's screen (not a step; nothing is recorded).

        Raises:
            SessionNotFound: if the owner has no such session.
            ReplicaError: if the replica failed (the episode ends as a replica fault).
        """
        session = self.get(owner, session_id)
        with session.lock:
            if session.ended:
                raise SessionNotFound(f"no session {session_id}: it ended")
            try:
                return self._observe(session, session.steps)
            except ReplicaError as exc:
                self._end(session, "error", exc, fault=True)
                raise

    def close(self, owner: str, session_id: int) -> None:
        """End the owner's session before its end: recorded as truncated (``max_steps``), not evaluated.

        Raises:
            SessionNotFound: if the owner has no such session.
        """
        session = self.get(owner, session_id)
        with session.lock:
            if not session.ended:
                self._end(session, "max_steps")

    def reap_idle(self) -> list[int]:
        """End every session idle past its timeout (``timeout``); returns their ids."""
        now = self.clock()
        with self._lock:
            stale = [s for s in self._sessions.values()
                     if now - s.last_seen > s.idle_timeout_s]
        reaped = []
        for s in stale:
            if not s.lock.acquire(blocking=False):
                continue  # a request is running on it: not idle
            try:
                if not s.ended and self.clock() - s.last_seen > s.idle_timeout_s:
                    self._end(s, "timeout", EpisodeTimeout(f"session idle for more than {s.idle_timeout_s:g} s: "
                                                           "reclaimed"))
                    reaped.append(s.id)
            finally:
                s.lock.release()
        return reaped

    def _reap_loop(self) -> None:
        while not self._closed.wait(self.limits.reap_interval_s):
            try:
                self.reap_idle()
                if self.parking is not None:
                    with self._lock:
                        live = list(self._sessions.values())
                    self.parking.park_idle(live)
            except Exception:  # the reaper must outlive a failing release; the next round retries
                continue

    def shutdown(self) -> None:
        """End every session (truncated) and stop the reaper. Idempotent."""
        self._closed.set()
        with self._lock:
            live = list(self._sessions.values())
        for s in live:
            with s.lock:
                if not s.ended:
                    self._end(s, "max_steps")
        self._reaper.join(timeout=5)

    # ---- ending --------------------------------------------------------------------------------------
    def _end(self, session: Session, termination: str, exc: BaseException | None = None, *, fault: bool = False,
             error_class: str | None = None) -> None:
        """Give the replica back (discarded and replaced), drop the session, record the episode."""
        session.ended = True
        with self._lock:
            self._sessions.pop(session.id, None)
        traj = session.trajectory
        traj.termination = termination
        if exc is not None:
            traj.error_class = error_class or error_class_of(exc)
            traj.error_message = f"{type(exc).__name__}: {exc}"[:2000]
            traj.score = 0.0
        traj.ended_at = utcnow()
        for hook in self.end_hooks:
            try:
                hook(session)
            except Exception:  # a hook must not keep the replica from going back, but its failure is news
                log.exception("end hook %r failed for session %s", hook, session.id)
        self.pool.release(session.replica, fault=f"{type(exc).__name__}: {exc}" if fault and exc else None)
        replica_s = self.clock() - session.leased_at
        result = EpisodeResult(
            episode_id=episode_id(self.run_id, session.task.id, session.task.variant, session.serial),
            run_id=self.run_id, task_id=session.task.id, variant=session.task.variant, domain=session.task.domain,
            instruction=session.task.instruction, policy=f"served-{session.protocol}",
            policy_config={"name": "served", "protocol": session.protocol, "client": session.owner,
                           "seed": session.seed, "session": session.id},
            image=self.image, replica_id=session.replica.id, host=session.replica.host, trajectory=traj,
            replica_s=replica_s, usage=session.replica.usage, related_apps=list(session.task.related_apps),
        )
        result.cost_usd = episode_cost(result, self.prices)
        with self._lock:
            self.episodes_ended += 1
        if self.sink is not None:
            try:
                self.sink(result)
            except Exception as exc2:  # a store failure must not leak the replica or the client's answer
                with self._lock:
                    self.sink_errors.append(f"{result.episode_id}: {type(exc2).__name__}: {exc2}")

