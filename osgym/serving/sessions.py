"""``SessionManager``: episodes driven from outside, one leased replica per session.

A trainer (over HTTP, :mod:`osgym.serving.app`, or in process, :mod:`osgym.serving.gym_env`) opens a
session with a task, then sends actions one step at a time. Each session holds an
:class:`~osgym.episodes.episode.Episode` in its ``act-observe`` cycle, which does the episode's work (setup and
the first settle, acting, observing, evaluating, the step records). The manager holds what is the server's:

* **open** loads nothing itself: it takes a :class:`~osgym.tasks.spec.TaskSpec` the caller loaded
  with :func:`~osgym.serving.client_task.load_client_task`, leases a fresh replica and resets an episode on it;
* **step** runs a decision's actions as the episode's next step (nothing after a ``DONE``/``FAIL`` runs); an
  episode that ends (``DONE``/``FAIL``, or the step budget: evaluated, the score is the reward) ends its session;
* **close** ends an episode the client gives up (``truncated``);
* idle sessions are reclaimed by a background thread after their idle timeout, so a client that
  disappears gives its replica back, and parked before that if the operator asks (:mod:`osgym.serving.idle_parking`);
* sessions are capped per owner (a token), and each is visible to its owner only.

Every ended session gives its replica back (as faulted if the replica failed) and its episode becomes an
:class:`~osgym.episodes.trajectory.EpisodeResult`, built and priced as a collected episode's is
(:func:`~osgym.episodes.record.episode_result`), handed to ``sink`` (the dataset writer). A step row holds the
screenshot the client acted on and the actions it sent; the last step carries the reward.

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

from osgym.episodes.episode import Episode, StepOutcome
from osgym.episodes.record import episode_id, episode_result
from osgym.episodes.trajectory import EpisodeResult, Trajectory
from osgym.errors import EpisodeTimeout, OsgymError, PolicyError, PoolError, ReplicaError, RequestRejected
from osgym.replicas import cost
from osgym.replicas.actions import TERMINAL_TYPES, Action, check_reply
from osgym.replicas.client import Replica
from osgym.replicas.observation import Observation
from osgym.replicas.pool import ReplicaPool
from osgym.serving.idle_parking import IdleParking
from osgym.serving.limits import OSGYM_OBSERVATION, ObservationOptions, ServeLimits
from osgym.tasks.spec import TaskSpec

__all__ = ["Session", "SessionLimit", "SessionManager", "SessionNotFound"]

log = logging.getLogger(__name__)


class SessionNotFound(OsgymError):
    """Raised when a session id is unknown, ended, or belongs to another client."""


class SessionLimit(OsgymError):
    """Raised when a client already holds as many sessions as it may."""


@dataclass
class Session:
    """One served episode on one leased replica."""

    id: int
    owner: str
    protocol: str
    episode: Episode
    idle_timeout_s: float
    leased_at: float
    last_seen: float
    serial: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    ended: bool = False
    answered_at: float = 0.0
    """When the client last got an observation: the time to its next step is its own (its model's)."""

    @property
    def task(self) -> TaskSpec:
        return self.episode.task

    @property
    def replica(self) -> Replica:
        return self.episode.replica

    @property
    def observation(self) -> Observation:
        """The observation the client's next step acts on."""
        return self.episode.observation

    @property
    def trajectory(self) -> Trajectory:
        return self.episode.trajectory

    @property
    def steps(self) -> int:
        return len(self.episode.steps)


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
        self.step_hooks: list[Callable[[Session, float], None]] = []
        """Called with each session and the seconds its step took, after a step that returned (the metrics)."""
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

    def capacity(self, owner: str) -> dict[str, Any]:
        """What a client needs to place its next sessions (``GET /v1/capacity``): ``free`` is how many more
        ``owner`` may open here without waiting on the server's limits.

        ``session_limit`` is the replicas the pool keeps (one per session); ``replicas_free`` the ready ones
        a lease takes now; ``run_id`` names this server process (another one after a restart).
        """
        with self._lock:
            sessions = len(self._sessions)
            opening = sum(self._opening.values())
            mine = sum(s.owner == owner for s in self._sessions.values()) + self._opening.get(owner, 0)
        limit = self.pool.target
        free = 0 if self._closed.is_set() else max(0, min(limit - sessions - opening,
                                                          self.limits.max_sessions_per_owner - mine))
        return {"free": free, "sessions": sessions, "opening": opening, "session_limit": limit,
                "replicas_free": self.pool.idle, "leases_waiting": self.pool.waiting, "sessions_of_client": mine,
                "sessions_per_client": self.limits.max_sessions_per_owner, "run_id": self.run_id}

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
        """Lease a fresh replica and reset an episode of ``task`` on it (setup, settle, observe): a new session.

        Raises:
            SessionLimit: if ``owner`` holds ``max_sessions_per_owner`` sessions already.
            SessionNotFound: if the server is shutting down (:meth:`drain`), also while the open waits.
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
            episode = Episode(replica, task, seed=seed, limits=self.limits.episode(options), cycle="act-observe")
            session = Session(sid, owner, protocol, episode, idle, leased_at=now, last_seen=now, serial=sid)
            try:
                episode.reset()
            except BaseException:  # the episode ended on it: recorded, and the replica given back, on every path
                self._end(session)
                raise
            with self._lock:
                self._sessions[sid] = session
                session.last_seen = session.answered_at = self.clock()
            return session
        except PoolError as exc:
            if self._closed.is_set():  # drained while it waited for a replica: the server stops, not the pool
                raise SessionNotFound("the server is shutting down") from exc
            raise
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
            t0 = time.perf_counter()
            try:
                out = self._step(session, list(actions))
            finally:
                session.last_seen = session.answered_at = self.clock()
            for hook in self.step_hooks:
                hook(session, time.perf_counter() - t0)
            return out

    def _step(self, session: Session, actions: list[Action]) -> StepOutcome:
        types = [a.action_type for a in actions]
        terminal = next((t for t in types if t in TERMINAL_TYPES), None)
        if terminal is not None:  # nothing after the episode's end runs
            actions = actions[: types.index(terminal) + 1]
        # the client's time since its last observation: its model thinking, as a policy's time
        policy_ms = max(0.0, (self.clock() - session.answered_at) * 1000)
        try:
            out = session.episode.step(actions, policy_ms=policy_ms)
        except ReplicaError:
            self._end(session)
            raise
        if out.refused is not None:
            raise RequestRejected(f"the replica refused the action: {out.refused}", 400)
        if out.done:
            self._end(session)
        return out

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
                return session.episode.observe()
            except ReplicaError:
                self._end(session)
                raise

    def close(self, owner: str, session_id: int) -> None:
        """End the owner's session before its end: recorded as truncated (``max_steps``), not evaluated.

        Raises:
            SessionNotFound: if the owner has no such session.
        """
        session = self.get(owner, session_id)
        with session.lock:
            if not session.ended:
                self._end(session)

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
                    s.episode.fail(EpisodeTimeout(f"session idle for more than {s.idle_timeout_s:g} s: reclaimed"))
                    self._end(s)
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

    def drain(self) -> None:
        """Open no more sessions (waiting opens fail now), replace no replica; open ones last until :meth:`shutdown`."""
        self._closed.set()
        self.pool.drain()

    def shutdown(self) -> None:
        """End every session (truncated) and stop the reaper, after :meth:`drain`. Idempotent."""
        self.drain()
        with self._lock:
            live = list(self._sessions.values())
        for s in live:
            with s.lock:
                if not s.ended:
                    self._end(s)
        self._reaper.join(timeout=5)

    # ---- ending --------------------------------------------------------------------------------------
    def _end(self, session: Session) -> None:
        """Close the session's episode (truncated if it is still going), give the replica back (discarded and
        replaced; as faulted if the replica failed), drop the session, record the episode."""
        session.ended = True
        with self._lock:
            self._sessions.pop(session.id, None)
        episode = session.episode
        trajectory = episode.close()
        for hook in self.end_hooks:
            try:
                hook(session)
            except Exception:  # a hook must not keep the replica from going back, but its failure is news
                log.exception("end hook %r failed for session %s", hook, session.id)
        fault = episode.fault
        self.pool.release(session.replica, fault=f"{type(fault).__name__}: {fault}" if fault else None)
        task = session.task
        result = episode_result(
            task, trajectory, episode_id=episode_id(self.run_id, task.id, task.variant, session.serial),
            run_id=self.run_id, policy=f"served-{session.protocol}",
            policy_config={"name": "served", "protocol": session.protocol, "client": session.owner,
                           "seed": episode.seed, "session": session.id},
            image=self.image, replica_id=session.replica.id, host=session.replica.host,
            replica_s=self.clock() - session.leased_at, prices=self.prices, usage=session.replica.usage)
        with self._lock:
            self.episodes_ended += 1
        if self.sink is not None:
            try:
                self.sink(result)
            except Exception as exc:  # a store failure must not leak the replica or the client's answer
                with self._lock:
                    self.sink_errors.append(f"{result.episode_id}: {type(exc).__name__}: {exc}")
