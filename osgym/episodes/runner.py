"""``run_episode(replica, task, policy) -> Trajectory``: a policy's loop over an :class:`~osgym.episodes.Episode`.

Gymnasium's plain loop: reset the episode and the policy, then ask the policy to act on each observation, with the
steps so far as its history, until the episode ends. The episode does the work (setup, observing, acting within the
deadline, evaluation); the loop only turns a policy's failures into the episode's end.

Errors inside the episode become the trajectory's ``termination`` and ``error_class`` (setup_error,
policy_error, evaluator_error, timeout). A :class:`~osgym.errors.ReplicaError` is *raised*, because the remedy is
to retry the episode on a fresh replica.

The wall-clock deadline holds inside a step too (see :mod:`osgym.episodes.episode`), and a decision holds at most
``MAX_ACTIONS_PER_REPLY`` actions and ``MAX_WAIT_PER_REPLY_S`` of waiting
(:func:`~osgym.replicas.actions.check_reply`). A policy's own call to its model is bounded by the policy's
timeout, and is checked against the deadline when it returns.
"""

from __future__ import annotations

import time

from osgym.agents.policies.base import Policy
from osgym.episodes.episode import Episode
from osgym.episodes.limits import EpisodeLimits
from osgym.episodes.trajectory import Trajectory
from osgym.errors import EpisodeTimeout, PolicyError, TaskError
from osgym.replicas.client import Replica
from osgym.tasks.spec import TaskSpec

__all__ = ["run_episode"]


def run_episode(
    replica: Replica, task: TaskSpec, policy: Policy, *, seed: int = 0, limits: EpisodeLimits = EpisodeLimits()
) -> Trajectory:
    """Run one episode of ``task`` with ``policy`` on ``replica``.

    Raises:
        ReplicaError: if the replica fails; retry the episode on a fresh replica.
    """
    episode = Episode(replica, task, seed=seed, limits=limits)
    try:
        observation = episode.reset()
    except (TaskError, EpisodeTimeout):  # the episode ended on it: the trajectory says how
        return episode.close()
    try:
        policy.reset(task, seed=seed)
        while True:
            t0 = time.perf_counter()
            decision = policy.act(observation, episode.steps)
            outcome = episode.step(decision, policy_ms=(time.perf_counter() - t0) * 1000)
            if outcome.refused is not None:
                episode.fail(PolicyError(f"replica rejected the action: {outcome.refused}"))
                break
            if outcome.done:
                break
            observation = outcome.observation
    except PolicyError as exc:
        episode.fail(exc)
    return episode.close()
