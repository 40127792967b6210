"""The ``collect`` flow: recipe in, Parquet dataset and report out.

The run itself is :func:`osgym.collection.run_collection` (the same code
``osgym collect`` calls); the flow adds what Prefect is for: each batch runs as a
``collect-batch`` subflow (Prefect's flow engine keeps every task's state until
its flow ends) that maps its jobs over a thread-pool task runner sized to the
pool, a few episodes to an ``episodes`` task (``episodes_per_task``; one, as an
``episode`` task, keeps a task run per episode), each episode with the replica-fault
retry policy; and the run publishes a
progress artifact, a summary artifact and the report's artifacts. Tasks hand
finished episodes straight to the dataset writer and return only a small
summary, so memory stays bounded however long the run. The manifest, not
Prefect's history, is the ledger of record.

    python -m flows.collect datasets/smoke.yaml   # the flow on the ephemeral server, then the report
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows.report import publish_report_artifacts
from osgym.collection import Collection, EpisodeCallback, EventCallback, Executor
from osgym.collection.collector import Collector, EpisodeJob, EpisodeSummary
from osgym.collection.recipe import Recipe
from osgym.metrics import Metrics, exposition
from tasks.episode import run_episode_task, run_episodes_task

MAX_EPISODES_PER_TASK = 10
"""Episodes one ``episodes`` task runs at most when the recipe leaves ``episodes_per_task`` unset."""


def episodes_per_task(recipe: Recipe, batch: int) -> int:
    """How many episodes each task of a ``batch``-episode subflow runs: the recipe's ``episodes_per_task``, or
    as many as still give every replica a task, from 1 to :data:`MAX_EPISODES_PER_TASK`.

    >>> from osgym.collection.recipe import load_recipe
    >>> [episodes_per_task(load_recipe({"name": "x", "episodes": 1, "replicas": 100}), n) for n in (50, 400, 5000)]
    [1, 4, 10]
    >>> episodes_per_task(load_recipe({"name": "x", "episodes": 1, "episodes_per_task": 1}), 5000)
    1
    """
    if recipe.episodes_per_task is not None:
        return recipe.episodes_per_task
    return max(1, min(MAX_EPISODES_PER_TASK, batch // recipe.replicas))


def run_as_subflows(progress: UUID) -> Executor:
    """An executor for :meth:`Collection.run`: each batch a ``collect-batch`` subflow of tasks, each running
    :func:`episodes_per_task` episodes (an ``episodes`` task) or one (an ``episode`` task)."""

    def execute(run: Collection, jobs: Sequence[EpisodeJob], done: EpisodeCallback) -> None:
        collector, retries = run.collector, run.recipe.retries
        per_task = episodes_per_task(run.recipe, len(jobs))
        episode = run_episode_task.with_options(retries=retries)

        @flow(name="collect-batch")
        def collect_batch(episode_ids: list[str]) -> list[dict[str, Any]]:
            """Run one batch of a run's episodes; returns their summaries."""
            out: list[dict[str, Any]] = []
            with ThreadPoolTaskRunner(max_workers=run.recipe.replicas) as runner:
                if per_task == 1:
                    futures = {runner.submit(episode, {"collector": collector, "job": j, "retries": retries}): j
                               for j in jobs}
                    for fut in as_completed(list(futures)):
                        summary = collector.summary_of(futures[fut], fut)
                        out.append(summary.as_dict())
                        done(summary)
                    return out
                stored: dict[str, EpisodeSummary] = {}  # written by the tasks' threads, one key each

                def on_summary(job: EpisodeJob, summary: EpisodeSummary) -> None:
                    stored[job.episode_id] = summary

                chunks = [jobs[i:i + per_task] for i in range(0, len(jobs), per_task)]
                # quote: Prefect would walk every job's task spec looking for futures (6-12% of the flow
                # process's CPU at 1,000 replicas, py-spy); there are none in them
                group = {runner.submit(run_episodes_task, {
                    "collector": collector, "jobs": quote(c), "retries": retries, "on_summary": on_summary,
                    "label": f"#{c[0].index}" + (f"-{c[-1].index}" if len(c) > 1 else "")}): c for c in chunks}
                for fut in as_completed(list(group)):
                    for summary in _chunk_summaries(collector, group[fut], fut, stored, retries):
                        out.append(summary.as_dict())
                        done(summary)
            return out

        collect_batch([j.episode_id for j in jobs])
        update_progress_artifact(progress, 100.0 * run.counts.episodes / max(run.pending, 1))

    return execute


def _chunk_summaries(collector: Collector, chunk: Sequence[EpisodeJob], future: Any,
                     stored: dict[str, EpisodeSummary], retries: int) -> list[EpisodeSummary]:
    """A finished ``episodes`` task's summaries. If the task itself failed (a task-runner failure, a store
    that refuses rows), the episodes it stored keep their rows and each of the others gets an error row,
    counted as every allowed attempt, as :meth:`Collector.summary_of` does for an ``episode`` task."""
    try:
        return list(future.result())
    except Exception as exc:
        return [stored[j.episode_id] if j.episode_id in stored
                else collector.record(collector.error_result(j, exc, retries + 1)) for j in chunk]


@flow(name="collect", log_prints=True)
def collect(
    recipe: dict[str, Any] | str,
    run_id: str | None = None,
    shard: int | None = None,
    shards: int = 1,
    on_episode: EpisodeCallback | None = None,
    on_event: EventCallback | None = None,
    metrics_port: int | None = None,
) -> dict[str, Any]:
    """Collect the episodes a recipe asks for into its store; returns the run's summary.

    Args:
        recipe: a recipe as a dict or the path of a YAML file (see ``datasets/``).
        run_id: resume this run (episodes already committed are skipped), or name a new one.
        shard: with ``shards`` > 1, run only episodes whose index % shards == shard and write a
            part manifest; ``flows/scaleout.py`` merges the parts into the run's manifest.
        shards: how many shards the run is split into.
        on_episode: for in-process callers only (deployments leave it unset): called with each
            finished episode's summary.
        on_event: likewise, called with each replica lifecycle event, from the pool's threads.
        metrics_port: serve the run's Prometheus metrics (:mod:`osgym.metrics`) on ``127.0.0.1:metrics_port``
            while it lasts.
    """
    metrics = Metrics() if metrics_port is not None else None
    run = Collection(recipe, run_id=run_id, shard=shard, shards=shards, on_episode=on_episode,
                     on_event=on_event, metrics=metrics)  # fails on a bad recipe before any replica starts
    progress = create_progress_artifact(0.0, key="collect-progress", description=f"osgym collect {run.run_id}")
    with contextlib.ExitStack() as stack:
        if metrics is not None and metrics_port is not None:
            print(f"metrics: {stack.enter_context(exposition(metrics, metrics_port)).url}")
        summary = run.run(run_as_subflows(progress))
    if run.part is None:  # a shard's data becomes readable only once the parts are merged
        publish_report_artifacts(run.recipe.store, run.recipe.dataset_name)
    create_markdown_artifact(
        key="collect-summary",
        markdown="\n".join(["| metric | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in summary.items()]]),
        description=f"osgym collect {run.run_id}",
    )
    return summary


def main(argv: list[str] | None = None) -> None:
    """``python -m flows.collect RECIPE [--run-id ID]``: run the flow, then print what ``osgym collect`` prints."""
    import argparse

    from osgym.cli import print_run
    from osgym.errors import OsgymError

    ap = argparse.ArgumentParser(prog="python -m flows.collect", description=main.__doc__)
    ap.add_argument("recipe", help="recipe YAML, e.g. datasets/smoke.yaml")
    ap.add_argument("--run-id", help="resume or name this run")
    ap.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on 127.0.0.1:PORT while the run lasts")
    args = ap.parse_args(argv)
    try:
        summary = collect(args.recipe, run_id=args.run_id, metrics_port=args.metrics_port)
    except OsgymError as exc:
        raise SystemExit(f"error: {exc}") from exc
    print_run(summary)


__all__ = ["MAX_EPISODES_PER_TASK", "collect", "episodes_per_task", "main", "run_as_subflows"]

if __name__ == "__main__":
    main()
