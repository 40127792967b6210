"""One collection run: a recipe in, a committed dataset run and its summary out.

:func:`run_collection` is the one entry point. ``osgym collect`` calls it
directly; the Prefect flow ``collect`` (``flows/collect.py``) calls it with an
executor that maps its ``@task`` over each batch. Either way the same code plans
the jobs, resumes past committed episodes, starts the pool with every recipe
option, keeps the counters, writes the pool-events sidecar and commits the
manifest.

A run's state (plan, writer, pool, collector, counters, callbacks) lives in the
:class:`Collection` that runs it; nothing is registered at module level, so two
runs in one process never see each other's episodes or events.

It sits above ``osgym.episodes`` and ``osgym.dataset``, beside the CLI, because
it joins the two.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from osgym.collection.collector import (
    Collector,
    EpisodeJob,
    EpisodeSummary,
    collect_with_retries,
    new_run_id,
    plan,
    run_config,
)
from osgym.collection.recipe import Recipe, load_recipe
from osgym.dataset import DatasetWriter, write_sidecar
from osgym.episodes.trajectory import TERMINATIONS, EpisodeResult
from osgym.metrics import Metrics, Snapshot
from osgym.replicas import cost, images
from osgym.replicas.events import EVENT_KINDS, events_table
from osgym.replicas.hollow import HOLLOW, HOLLOW_IMAGE
from osgym.replicas.pool import PoolEvent, ReplicaPool, limits_for
from osgym.replicas.warm import warm_state_for
from osgym.settings import settings
from osgym.storage import open_backend
from osgym.tasks.assets import cache_from_settings, local_copy

EpisodeCallback = Callable[[EpisodeSummary], None]
EventCallback = Callable[[PoolEvent], None]
Executor = Callable[["Collection", Sequence[EpisodeJob], EpisodeCallback], None]
"""Runs one batch of a run's jobs on ``run.collector`` and calls ``done`` with each episode's
summary as it finishes, from the thread that called it, once per job."""


@dataclass
class Counts:
    """What a run collected so far (episodes skipped as already committed are not counted).

    >>> c = Counts()
    >>> c.add(EpisodeSummary("e", "t", success=True, attempts=2, error_class=None, num_steps=5))
    >>> c
    Counts(episodes=1, success=1, errors=0, retried=1, steps=5)
    """

    episodes: int = 0
    success: int = 0
    errors: int = 0
    retried: int = 0
    steps: int = 0

    def add(self, s: EpisodeSummary) -> None:
        self.episodes += 1
        self.success += int(s.success)
        self.errors += int(s.error_class is not None)
        self.retried += int(s.attempts > 1)
        self.steps += s.num_steps


def part_name(shard: int | None, shards: int) -> str | None:
    """The writer's part name for a shard, or None for a whole run.

    >>> part_name(None, 1), part_name(3, 4)
    (None, 's003')
    >>> part_name(4, 4)
    Traceback (most recent call last):
    ...
    ValueError: shard: expected 0..3, actual 4
    """
    if shard is None:
        return None
    if not 0 <= shard < shards:
        raise ValueError(f"shard: expected 0..{shards - 1}, actual {shard}")
    return f"s{shard:03d}"


def run_in_threads(run: Collection, jobs: Sequence[EpisodeJob], done: EpisodeCallback) -> None:
    """The default executor: a thread pool sized to the replica pool; a replica fault is retried
    on a fresh replica (:func:`~osgym.collection.collector.collect_with_retries`)."""
    retries = run.recipe.retries
    collector = run.collector
    with ThreadPoolExecutor(max_workers=run.recipe.replicas, thread_name_prefix=f"collect-{run.run_id}") as ex:
        futures = {ex.submit(collect_with_retries, collector, job, retries): job for job in jobs}
        try:
            for fut in as_completed(futures):
                done(collector.summary_of(futures[fut], fut))
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM): queued episodes never start, so the exit waits only for the
            # running ones (each bounded by episode_timeout_s), not for the rest of the batch.
            ex.shutdown(wait=False, cancel_futures=True)
            raise


def _compat_assets_dir(rec: Recipe) -> Path | None:
    """The operator's asset cache as a local directory for compatibility replicas to mount (an OSWorld
    client's ``/setup/download_file`` reads it inside the replica): the cache itself, or a local mirror
    of an S3 one (:func:`osgym.tasks.assets.local_copy`). None without a cache or for native replicas.
    """
    cache = cache_from_settings() if rec.compat else None
    if cache is None:
        return None
    directory = local_copy(cache)
    return directory if directory.is_dir() else None


class Collection:
    """One run of a recipe: plans on construction, collects on :meth:`run` (once).

    Args:
        recipe: a :class:`Recipe`, a dict, or the path of a YAML file (see ``datasets/``).
        run_id: resume this run (episodes already committed are skipped), or name a new one.
        shard: with ``shards`` > 1, run only episodes whose index % shards == shard and write a
            part manifest; ``flows/scaleout.py`` merges the parts into the run's manifest.
        shards: how many shards the run is split into.
        on_episode: called with each finished episode's summary, in the thread that runs the batches.
        on_event: called with each replica lifecycle event, from the pool's threads.
        profile: what one replica uses, measured by an earlier run (:func:`osgym.analysis.profile.measured_profile`);
            the pool admits as many replicas as the cost model's density for it allows (default:
            :data:`osgym.replicas.cost.DEFAULT_PROFILE`).
        metrics: Prometheus metrics (:mod:`osgym.metrics`) the run feeds: its pool's replicas, leases and events
            while it lasts, and each episode the writer takes (outcome, infra error, steps' times).

    Raises:
        ConfigError: if the recipe is invalid, names tasks its suite does not have, names task files
            that cannot run (under ``on_refused: fail``; see :func:`~osgym.collection.collector.plan_task_files`),
            or asks for a privileged switch (``compat``, ``egress: open``, ``force``) the operator's
            settings do not allow, or the operator's price table (``OSGYM_PRICES``) cannot be read;
            before any replica starts.
        ValueError: if ``shard`` is not in ``0..shards-1``.
    """

    def __init__(
        self,
        recipe: Recipe | dict[str, Any] | str | Path,
        *,
        run_id: str | None = None,
        shard: int | None = None,
        shards: int = 1,
        on_episode: EpisodeCallback | None = None,
        on_event: EventCallback | None = None,
        profile: cost.Profile | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.recipe = recipe if isinstance(recipe, Recipe) else load_recipe(recipe)
        self.settings = settings()
        self.recipe.check_consent(self.settings)
        self.prices = cost.load_prices(self.settings.prices)  # read now: a bad table fails before any replica
        self.run_id = run_id or new_run_id()
        self.shard = shard
        self.part = part_name(shard, shards)
        jobs, self.refused = plan(self.recipe, self.run_id)  # every task file is loaded (or refused) here
        self.jobs = [j for j in jobs if shard is None or j.index % shards == shard]
        self.on_episode = on_episode
        self.on_event = on_event
        self.profile = profile
        self.metrics = metrics
        if metrics is not None:
            metrics.declare(outcomes=TERMINATIONS, event_kinds=EVENT_KINDS)
        self.counts = Counts()
        self.skipped = 0
        self.pending = 0
        """Episodes this run has to collect, known once the writer has said which are committed."""
        self._pool: ReplicaPool | None = None
        self._collector: Collector | None = None
        self._started = False

    def __repr__(self) -> str:
        return (f"<Collection {self.run_id} {self.recipe.dataset_name} part={self.part} "
                f"{self.counts.episodes}/{self.pending or len(self.jobs)}>")

    @property
    def collector(self) -> Collector:
        """The collector executors run jobs on (exists while :meth:`run` is running)."""
        if self._collector is None:
            raise RuntimeError(f"run {self.run_id} is not running: its collector exists only inside run()")
        return self._collector

    @property
    def healthy_replicas(self) -> int:
        """Healthy replicas (ready or leased) in this run's pool; 0 before it starts and after it ends."""
        pool = self._pool
        return pool.healthy if pool is not None else 0

    def run(self, execute: Executor | None = None) -> dict[str, Any]:
        """Collect every pending episode in batches of ``recipe.batch_size``; returns the run's summary.

        Args:
            execute: how each batch runs (default :func:`run_in_threads`).

        Raises:
            RuntimeError: if this collection already ran (make a new one with the same run_id to resume).
            StoreError: if the store cannot be written: checked (a probe write and delete) before the
                image is built or any replica starts, and again on every shard.
            ValueError: if the store URI is malformed.
            ReplicaError: if the pool cannot start (image missing, hosts full, Docker unreachable).
        """
        if self._started:
            raise RuntimeError(f"run {self.run_id} already ran; resume it with a new Collection(run_id=...)")
        self._started = True
        execute = execute or run_in_threads
        rec = self.recipe
        # The image on every host, then the store (a write, then a delete), before the pool: a host without the
        # image, or a store that is down, missing or read-only, fails the run in seconds, with nothing written
        # to the dataset, not after replica starts and episodes whose first shard it then refuses.
        hollow = rec.replica_kind == HOLLOW
        image = HOLLOW_IMAGE if hollow else images.require_image(
            rec.tier, self.settings.hosts or None, host_name=self.settings.host_name, image=rec.image)
        open_backend(rec.store, rec.dataset_name).check()
        t0 = time.monotonic()
        with DatasetWriter(rec.store, rec.dataset_name, self.run_id, run_config=run_config(rec, image, self.refused),
                           part=self.part, shard_max_age_s=rec.shard_max_age_s) as writer:
            committed = writer.committed_episode_ids()
            todo = [j for j in self.jobs if j.episode_id not in committed]
            self.skipped, self.pending = len(committed), len(todo)
            # The privileged switches were allowed by the operator in __init__ (check_consent);
            # where replicas run is the operator's alone.
            with ReplicaPool(image, rec.replicas, standby=rec.standby, screen=rec.screen,
                             hosts=None if hollow else self.settings.hosts or None, kind=rec.replica_kind,
                             host_name=self.settings.host_name,
                             compat=rec.compat, assets_dir=_compat_assets_dir(rec),
                             force=rec.force, egress=rec.egress == "open",
                             limits=limits_for(rec.tier), profile=self.profile, reset=rec.reset,
                             warm=warm_state_for((j.task.related_apps for j in self.jobs), rec.tier)
                             if rec.warm == "auto" else rec.warm,
                             on_event=self._event, run_id=self.run_id) as pool:
                self._pool, stats = pool, pool.stats
                self._watch(pool)
                sink = _OnOneThread(self._writing(writer.add), f"write-{self.run_id}")
                self._collector = Collector(rec, pool, image, sink=sink, prices=self.prices)
                try:
                    for start in range(0, len(todo), rec.batch_size):
                        execute(self, todo[start:start + rec.batch_size], self._done)
                finally:
                    self._pool = self._collector = None
                    self._watch(None)
                    sink.close()
                    pool.close()  # first, so the events hold every replica's removal and lifetime usage
                    write_sidecar(rec.store, rec.dataset_name, "pool_events", self.run_id,
                                  f"{self.part or 'events'}-{pool.name}", events_table(pool.events, self.run_id))
            manifest = writer.finalize()
        elapsed = time.monotonic() - t0
        n = self.counts.episodes
        return {"run_id": self.run_id, "shard": self.shard, "dataset": rec.dataset_name, "store": rec.store,
                "image": image, "skipped": self.skipped, **asdict(self.counts),
                "replicas_restored": stats.restored, "restore_failures": stats.restore_failures,
                "refused_task_files": [str(r) for r in self.refused],
                "manifest_episodes": manifest.episodes, "elapsed_s": round(elapsed, 1),
                "episodes_per_min": round(60 * n / elapsed, 2) if elapsed else None}

    def _event(self, event: PoolEvent) -> None:
        if self.metrics is not None:
            self.metrics.pool_event(event)
        if self.on_event is not None:
            self.on_event(event)

    def _watch(self, pool: ReplicaPool | None) -> None:
        if self.metrics is not None:
            self.metrics.watch(None if pool is None else
                               lambda: Snapshot.of(pool.registry.by_state(), lease_queue=pool.waiting))

    def _writing(self, add: Callable[[EpisodeResult], None]) -> Callable[[EpisodeResult], None]:
        """``add``, then each episode it took counted in the metrics (with its steps' environment times)."""
        metrics = self.metrics
        if metrics is None:
            return add

        def add_and_count(result: EpisodeResult) -> None:
            add(result)
            t = result.trajectory
            metrics.episode(t.termination, t.error_class, [s.env_ms / 1000 for s in t.steps])

        return add_and_count

    def _done(self, summary: EpisodeSummary) -> None:
        self.counts.add(summary)
        if self.on_episode is not None:
            self.on_episode(summary)


def run_collection(recipe: Recipe | dict[str, Any] | str | Path, *, execute: Executor | None = None,
                   **options: Any) -> dict[str, Any]:
    """Collect the episodes a recipe asks for into its store; returns the run's summary.

    ``Collection(recipe, **options).run(execute)``: see :class:`Collection` for the options
    (``run_id``, ``shard``, ``shards``, ``on_episode``, ``on_event``) and the errors. The summary
    holds ``run_id``, ``shard``, ``dataset``, ``store``, ``image``, ``skipped`` (already
    committed), the :class:`Counts`, ``refused_task_files`` (skipped under ``on_refused: skip``, each
    ``path: reason``), ``manifest_episodes``, ``elapsed_s`` and ``episodes_per_min``.
    """
    return Collection(recipe, **options).run(execute)


class _OnOneThread:
    """``fn`` called from many threads, run on one thread of its own, each caller waiting for its call's end.

    The writer is fed from every episode thread and wants one call at a time; it runs on one thread too, as
    Arrow's default allocator (mimalloc) keeps a heap per thread and does not give back what a thread freed:
    with every episode thread encoding its own rows, the collecting process grew from 300 to 1,670 MiB over
    1,500 episodes at 250 replicas (bench/bench_fleet.py, hollow replicas), nearly all of it mimalloc's.
    """

    def __init__(self, fn: Callable[[Any], None], name: str):
        self._fn = fn
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    def __call__(self, arg: Any) -> None:
        self._thread.submit(self._fn, arg).result()  # its exception, re-raised here

    def close(self) -> None:
        self._thread.shutdown(wait=True)


__all__ = ["Collection", "Counts", "Executor", "part_name", "run_collection", "run_in_threads"]
