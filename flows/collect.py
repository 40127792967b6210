"""The ``collect`` flow: recipe in, Parquet dataset and report out.

The flow only orchestrates: it starts a pool, runs the episodes in batches
(one subflow per batch, because Prefect's flow engine keeps every task's state
until its flow ends), maps one task per episode over a thread-pool task runner
sized to the pool, and tears the pool down on every path. Tasks hand finished
episodes straight to the dataset writer and return only a small summary, so
memory stays bounded however long the run. The manifest, not Prefect's
history, is the ledger of record.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows.report import publish_report_artifacts
from osgym.dataset import DatasetWriter, write_sidecar
from osgym.episodes.collect import Collector, EpisodeSummary, new_run_id, plan_jobs, run_config
from osgym.episodes.recipe import Recipe, load_recipe
from osgym.replicas import images
from osgym.replicas.events import events_table
from osgym.replicas.pool import PoolEvent, ReplicaPool
from osgym.settings import settings
from tasks.episode import run_episode_task

LISTENERS: list[Callable[[EpisodeSummary], None]] = []
"""Called with each finished episode's summary, in the flow's thread (the CLI's progress bar registers here)."""
EVENT_LISTENERS: list[Callable[[PoolEvent], None]] = []
"""Called with each replica lifecycle event, from the pool's threads."""

_ACTIVE: dict[str, Collector] = {}  # run_id -> collector, for batch subflows (a pool is not a flow parameter)


def healthy_replicas() -> int:
    """Healthy replicas (ready or leased) over the pools of the runs in progress in this process."""
    return sum(c.pool.healthy for c in list(_ACTIVE.values()))


def _pool_event(event: PoolEvent) -> None:
    for listener in list(EVENT_LISTENERS):
        listener(event)


@flow(name="collect-batch")
def collect_batch(run_id: str, indices: list[int]) -> list[dict[str, Any]]:
    """Run one batch of a run's episodes; returns their summaries."""
    collector = _ACTIVE[run_id]
    jobs = [collector.jobs[i] for i in indices]
    retries = collector.recipe.retries
    episode = run_episode_task.with_options(retries=retries)
    out: list[dict[str, Any]] = []
    with ThreadPoolTaskRunner(max_workers=collector.recipe.replicas) as runner:
        # quote: Prefect would otherwise walk the collector (and its thousands of jobs) on every submit
        # looking for upstream futures, which makes a run quadratic in its episode count.
        futures = [runner.submit(episode, {"collector": quote(collector), "job": j, "retries": retries})
                   for j in jobs]
        by_future = dict(zip(futures, jobs, strict=True))
        for fut in as_completed(futures):
            try:
                summary: EpisodeSummary = fut.result()
            except Exception as exc:  # a crash in the task itself: still a row
                summary = collector.record(collector.error_result(by_future[fut], exc, retries + 1))
            out.append(summary.as_dict())
            for listener in LISTENERS:
                listener(summary)
    return out


@flow(name="collect", log_prints=True)
def collect(
    recipe: dict[str, Any] | str, run_id: str | None = None, shard: int | None = None, shards: int = 1
) -> dict[str, Any]:
    """Collect the episodes a recipe asks for into its store; returns the run's summary.

    Args:
        recipe: a recipe as a dict or the path of a YAML file (see ``datasets/``).
        run_id: resume this run (episodes already committed are skipped), or name a new one.
        shard: with ``shards`` > 1, run only episodes whose index % shards == shard and write a
            part manifest; ``flows/scaleout.py`` merges the parts into the run's manifest.
        shards: how many shards the run is split into.
    """
    rec: Recipe = load_recipe(recipe)
    run_id = run_id or new_run_id()
    jobs = plan_jobs(rec, run_id)  # fails on a bad recipe before any replica starts
    part = None
    if shard is not None:
        if not 0 <= shard < shards:
            raise ValueError(f"shard: expected 0..{shards - 1}, actual {shard}")
        part = f"s{shard:03d}"
    mine = [j for j in jobs if shard is None or j.index % shards == shard]
    image = rec.image or images.ensure_image(rec.tier)
    t0 = time.monotonic()
    counts = {"episodes": 0, "success": 0, "errors": 0, "retried": 0, "steps": 0}
    with DatasetWriter(rec.store, rec.dataset_name, run_id, run_config=run_config(rec, image), part=part) as writer:
        done = writer.committed_episode_ids()
        todo = [j for j in mine if j.episode_id not in done]
        progress = create_progress_artifact(0.0, key="collect-progress", description=f"osgym collect {run_id}")
        with ReplicaPool(image, rec.replicas, standby=rec.standby, screen=rec.screen, hosts=rec.hosts,
                         host_name=settings().host_name, compat=rec.compat,
                         force=rec.force, egress=rec.egress == "open", on_event=_pool_event) as pool:
            collector = Collector(rec, pool, image, jobs=jobs, sink=_locked(writer.add))
            _ACTIVE[run_id] = collector
            try:
                for start in range(0, len(todo), rec.batch_size):
                    batch = todo[start:start + rec.batch_size]
                    for s in collect_batch(run_id, [j.index for j in batch]):
                        counts["episodes"] += 1
                        counts["success"] += int(s["success"])
                        counts["errors"] += int(s["error_class"] is not None)
                        counts["retried"] += int(s["attempts"] > 1)
                        counts["steps"] += s["num_steps"]
                    update_progress_artifact(progress, 100.0 * (start + len(batch)) / max(len(todo), 1))
            finally:
                _ACTIVE.pop(run_id, None)
                write_sidecar(rec.store, rec.dataset_name, "pool_events", run_id, f"{part or 'events'}-{pool.name}",
                              events_table(pool.events, run_id))
        manifest = writer.finalize()
    elapsed = time.monotonic() - t0
    summary = {"run_id": run_id, "shard": shard, "dataset": rec.dataset_name, "store": rec.store, "image": image,
               "skipped": len(done), **counts, "manifest_episodes": manifest.episodes,
               "elapsed_s": round(elapsed, 1),
               "episodes_per_min": round(60 * counts["episodes"] / elapsed, 2) if elapsed else None}
    if part is None:  # a shard's data becomes readable only once the parts are merged
        publish_report_artifacts(rec.store, rec.dataset_name)
    create_markdown_artifact(
        key="collect-summary",
        markdown="\n".join(["| metric | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in summary.items()]]),
        description=f"osgym collect {run_id}",
    )
    return summary


def _locked(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """The writer is fed from many task threads; it wants one at a time."""
    lock = threading.Lock()

    def call(arg: Any) -> None:
        with lock:
            fn(arg)

    return call


__all__ = ["collect", "collect_batch", "healthy_replicas"]
