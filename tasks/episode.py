"""The per-episode Prefect task. Only replica faults are retried, each time on a fresh replica."""

from __future__ import annotations

from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as current_task_run

from osgym.collection.collector import Collector, EpisodeJob, EpisodeSummary
from osgym.errors import ReplicaError


def is_replica_fault(task: Any, task_run: Any, state: Any) -> bool:
    """Retry condition: the attempt failed because a replica did, so a fresh one may succeed."""
    try:
        state.result()
    except ReplicaError:
        return True
    except Exception:
        return False
    return False


@task(
    name="episode",
    retries=2,
    retry_delay_seconds=[0.5, 2, 5],
    retry_condition_fn=is_replica_fault,
    cache_policy=NO_CACHE,
    persist_result=False,
    log_prints=False,
)
def run_episode_task(collector: Collector, job: EpisodeJob, retries: int = 2) -> EpisodeSummary:
    """Run one episode and store it; on the last allowed attempt a replica fault becomes an error row."""
    attempt = int(current_task_run.run_count or 1)
    return collector.collect(job, attempt=attempt, final=attempt > retries)
