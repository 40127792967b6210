"""The ``collect`` flow: recipe in, Parquet dataset and report out.

The run itself is :func:`osgym.collection.run_collection` (the same code
``osgym collect`` calls); the flow adds what Prefect is for: each batch runs as a
``collect-batch`` subflow (Prefect's flow engine keeps every task's state until
its flow ends) that maps one ``episode`` task per job over a thread-pool task
runner sized to the pool, with the task's retry policy; and the run publishes a
progress artifact, a summary artifact and the report's artifacts. Tasks hand
finished episodes straight to the dataset writer and return only a small
summary, so memory stays bounded however long the run. The manifest, not
Prefect's history, is the ledger of record.

    python -m flows.collect datasets/smoke.yaml   # the flow on the ephemeral server, then the report
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from prefect import flow
from prefect.artifacts import create_markdown_artifact, create_progress_artifact, update_progress_artifact
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows.report import publish_report_artifacts
from osgym.collection import Collection, EpisodeCallback, EventCallback, Executor
from osgym.collection.collector import EpisodeJob
from tasks.episode import run_episode_task


def run_as_subflows(progress: UUID) -> Executor:
    """An executor for :meth:`Collection.run`: each batch a ``collect-batch`` subflow of ``episode`` tasks."""

    def execute(run: Collection, jobs: Sequence[EpisodeJob], done: EpisodeCallback) -> None:
        collector, retries = run.collector, run.recipe.retries
        episode = run_episode_task.with_options(retries=retries)

        @flow(name="collect-batch")
        def collect_batch(episode_ids: list[str]) -> list[dict[str, Any]]:
            """Run one batch of a run's episodes; returns their summaries."""
            out: list[dict[str, Any]] = []
            with ThreadPoolTaskRunner(max_workers=run.recipe.replicas) as runner:
                futures = {runner.submit(episode, {"collector": collector, "job": j, "retries": retries}): j
                           for j in jobs}
                for fut in as_completed(list(futures)):
                    summary = collector.summary_of(futures[fut], fut)
                    out.append(summary.as_dict())
                    done(summary)
            return out

        collect_batch([j.episode_id for j in jobs])
        update_progress_artifact(progress, 100.0 * run.counts.episodes / max(run.pending, 1))

    return execute


@flow(name="collect", log_prints=True)
def collect(
    recipe: dict[str, Any] | str,
    run_id: str | None = None,
    shard: int | None = None,
    shards: int = 1,
    on_episode: EpisodeCallback | None = None,
    on_event: EventCallback | None = None,
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
    """
    run = Collection(recipe, run_id=run_id, shard=shard, shards=shards, on_episode=on_episode,
                     on_event=on_event)  # fails on a bad recipe before any replica starts
    progress = create_progress_artifact(0.0, key="collect-progress", description=f"osgym collect {run.run_id}")
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
    args = ap.parse_args(argv)
    try:
        summary = collect(args.recipe, run_id=args.run_id)
    except OsgymError as exc:
        raise SystemExit(f"error: {exc}") from exc
    print_run(summary)


__all__ = ["collect", "main", "run_as_subflows"]

if __name__ == "__main__":
    main()
