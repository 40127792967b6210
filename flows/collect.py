"""The ``collect`` flow: recipe in, Parquet dataset and report out.

The flow only orchestrates: it starts a pool, maps one task per episode over a
thread-pool task runner sized to the pool, streams results into the dataset
writer as they finish, and tears the pool down on every path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from osgym import images
from osgym.collect import Collector, new_run_id, plan_jobs, run_config
from osgym.pool import PoolEvent, ReplicaPool
from osgym.recipe import Recipe, load_recipe
from osgym.store import DatasetWriter
from osgym.trajectory import EpisodeResult
from tasks.episode import run_episode_task

ProgressFn = Callable[[EpisodeResult], None]
LISTENERS: list[ProgressFn] = []
"""Called with each finished episode, in the flow's thread (the CLI's progress bar registers here)."""
EVENT_LISTENERS: list[Callable[[PoolEvent], None]] = []
"""Called with each replica lifecycle event, from the pool's threads."""


def _pool_event(event: PoolEvent) -> None:
    for listener in list(EVENT_LISTENERS):
        listener(event)


@flow(name="collect", log_prints=True)
def collect(
    recipe: dict[str, Any] | str,
    run_id: str | None = None,
) -> dict[str, Any]:
    """Collect the episodes a recipe asks for into its store; returns the run's summary."""
    rec: Recipe = load_recipe(recipe)
    run_id = run_id or new_run_id()
    image = rec.image or images.ensure_image(rec.tier)
    jobs = plan_jobs(rec, run_id)
    counts = {"episodes": 0, "success": 0, "errors": 0, "retried": 0}
    with DatasetWriter(rec.store, rec.dataset_name, run_id, run_config=run_config(rec, image)) as writer:
        done = writer.committed_episode_ids()
        jobs = [j for j in jobs if j.episode_id not in done]
        with ReplicaPool(image, rec.replicas, standby=rec.standby, screen=rec.screen,
                         egress=rec.egress == "open", on_event=_pool_event) as pool:
            collector = Collector(rec, pool, image)
            runner = ThreadPoolTaskRunner(max_workers=rec.replicas)
            episode = run_episode_task.with_options(retries=rec.retries)
            with runner:
                for start in range(0, len(jobs), rec.batch_size):
                    batch = jobs[start:start + rec.batch_size]
                    futures = [runner.submit(episode, {"collector": collector, "job": j, "retries": rec.retries})
                               for j in batch]
                    by_future = dict(zip(futures, batch, strict=True))
                    for fut in as_completed(futures):
                        try:
                            result: EpisodeResult = fut.result()
                        except Exception as exc:  # a bug or crash in the task: still a row
                            result = collector.error_result(by_future[fut], exc, rec.retries + 1)
                        writer.add(result)
                        counts["episodes"] += 1
                        counts["success"] += int(result.trajectory.success)
                        counts["errors"] += int(result.trajectory.error_class is not None)
                        counts["retried"] += int(result.attempts > 1)
                        for listener in LISTENERS:
                            listener(result)
        manifest = writer.finalize()
    summary = {"run_id": run_id, "dataset": rec.dataset_name, "store": rec.store, "image": image,
               "skipped": len(done), **counts, "manifest_episodes": manifest.episodes}
    create_markdown_artifact(
        key="collect-summary",
        markdown="\n".join(["| metric | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in summary.items()]]),
        description=f"osgym collect {run_id}",
    )
    return summary
