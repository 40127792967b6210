"""An episode's record in the dataset: its id, its cost and the :class:`EpisodeResult` the writer takes.

Collection and serving both build their rows here (:func:`episode_result`), so an episode is recorded and
priced the same whichever way it was driven.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from osgym.episodes.trajectory import EpisodeResult, Trajectory, utcnow
from osgym.errors import error_class_of
from osgym.replicas import cost
from osgym.replicas.accounting import Usage
from osgym.tasks.spec import TaskSpec

__all__ = ["episode_cost", "episode_id", "episode_result", "failed_trajectory"]


def episode_id(run_id: str, task_id: str, variant: str, seed: int) -> str:
    """Deterministic id from run, task, variant and seed (a served episode's "seed" is its session serial).

    >>> episode_id("r1", "t", "0", 7) == episode_id("r1", "t", "0", 7)
    True
    """
    return hashlib.sha256(f"{run_id}\0{task_id}\0{variant}\0{seed}".encode()).hexdigest()[:20]


def episode_cost(result: EpisodeResult, prices: cost.PriceTable) -> float:
    """An episode's cost from its own accounting: its replica-seconds at the density its measured cores
    and memory allow, its model tokens, and the bytes it stores (:func:`osgym.replicas.cost.cost_of`)."""
    u = result.usage
    profile = cost.episode_profile(u.cpu_s if u else None, result.replica_s, u.mem_avg_mib if u else None)
    profile = profile.model_copy(update={"model": result.policy_config.get("model")})
    tin, tout = result.tokens()
    return cost.cost_of(prices, profile, replica_s=result.replica_s, input_tokens=tin or 0,
                        output_tokens=tout or 0, bytes_written=result.bytes_written()).total_usd


def failed_trajectory(exc: BaseException, started: datetime | None = None) -> Trajectory:
    """A trajectory that records an error which ended the episode before it produced steps."""
    return Trajectory(started_at=started or utcnow(), ended_at=utcnow(), termination="error",
                      error_class=error_class_of(exc), error_message=f"{type(exc).__name__}: {exc}"[:2000])


def episode_result(task: TaskSpec, trajectory: Trajectory, *, episode_id: str, run_id: str, policy: str,
                   policy_config: dict[str, Any], image: str, replica_id: str | None, host: str | None,
                   replica_s: float, prices: cost.PriceTable, usage: Usage | None = None,
                   attempts: int = 1, hollow: bool = False) -> EpisodeResult:
    """The record of one finished episode of ``task``, priced by :func:`episode_cost`.

    Args:
        replica_s: how long the episode held its replica (the collector counts its wait for a lease too).
        usage: what the replica used while leased, left by the pool when the lease ended (None if unread).
        hollow: the replica was hollow (:mod:`osgym.replicas.hollow`): the episode is a load test, not agent data.
    """
    result = EpisodeResult(
        episode_id=episode_id, run_id=run_id, task_id=task.id, variant=task.variant, domain=task.domain,
        instruction=task.instruction, policy=policy, policy_config=policy_config, image=image,
        replica_id=replica_id, host=host, trajectory=trajectory, attempts=attempts, replica_s=replica_s,
        usage=usage, related_apps=list(task.related_apps), hollow=hollow,
    )
    result.cost_usd = episode_cost(result, prices)
    return result
