"""The Prefect tasks that run episodes. Only replica faults are retried, each time on a fresh replica.

``episode`` runs one episode, with Prefect's retry policy: a task run (and its retry states) per episode.
``episodes`` runs several, one after another on its thread, each with the same policy in plain Python
(:func:`~osgym.collection.collector.collect_with_retries`): at 1,000 replicas the Prefect server spent 20-38 ms
of CPU recording each task run's states, a third of the control plane's CPU per episode (BENCHMARKS.md, issue 42).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.runtime import task_run as current_task_run

from osgym.collection.collector import Collector, EpisodeJob, EpisodeSummary, collect_with_retries
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


@task(
    name="episodes",
    task_run_name="episodes {label}",
    cache_policy=NO_CACHE,
    persist_result=False,
    log_prints=False,
)
def run_episodes_task(collector: Collector, jobs: Sequence[EpisodeJob], retries: int = 2, label: str = "",
                      on_summary: Callable[[EpisodeJob, EpisodeSummary], None] | None = None,
                      ) -> list[EpisodeSummary]:
    """Run ``jobs`` one after another and store each; returns their summaries, in order.

    Each episode gets the ``episode`` task's retries: a replica fault retries on a fresh replica after a
    backoff, and the last allowed attempt records it as an error row. A failure outside the episode (a
    bug) is recorded as that episode's error row, as the flow records a failed ``episode`` task, and the
    next job runs. ``on_summary(job, summary)`` is called as each one is stored, so the flow knows which
    jobs have their row if the task itself dies. ``label`` names the task run (the episodes' indices).
    """
    out = []
    for job in jobs:
        try:
            summary = collect_with_retries(collector, job, retries)
        except Exception as exc:  # a store failure raises again here and ends the task
            summary = collector.record(collector.error_result(job, exc, retries + 1))
        if on_summary is not None:
            on_summary(job, summary)
        out.append(summary)
    return out
