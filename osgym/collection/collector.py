"""Plain functions that turn a recipe into episodes and episodes into dataset rows.

No Prefect here: :func:`osgym.collection.run_collection` hands each batch of
jobs to an executor (a thread pool, or the Prefect flow's task mapping) that
calls :meth:`Collector.collect` once per attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from osgym.agents.policies import Policy, make_policy
from osgym.collection.recipe import Recipe
from osgym.episodes.limits import EpisodeLimits
from osgym.episodes.record import episode_id, episode_result, failed_trajectory
from osgym.episodes.runner import run_episode
from osgym.episodes.trajectory import EpisodeResult, Trajectory, utcnow
from osgym.errors import ConfigError, ReplicaError
from osgym.replicas import cost
from osgym.replicas.accounting import Usage
from osgym.replicas.client import Replica
from osgym.replicas.hollow import HOLLOW
from osgym.replicas.pool import ReplicaPool
from osgym.retrying import retrying
from osgym.suites import expand, expand_mix
from osgym.tasks.asset_urls import missing_assets
from osgym.tasks.assets import cache_from_settings
from osgym.tasks.spec import TaskSpec
from osgym.tasks.taskdir import LoadedTasks, Refusal, TaskCheck, discover_entries, index_entries, load_entries


@dataclass(frozen=True)
class EpisodeJob:
    """One requested episode: which task variant, which seed, in which run."""

    run_id: str
    task: TaskSpec
    seed: int
    index: int

    @property
    def episode_id(self) -> str:
        return episode_id(self.run_id, self.task.id, self.task.variant, self.seed)


def plan_jobs(recipe: Recipe, run_id: str, checks: Sequence[TaskCheck] | None = None) -> list[EpisodeJob]:
    """Expand a recipe into its episodes: :func:`plan`, less the refused task files."""
    return plan(recipe, run_id, checks)[0]


def plan(recipe: Recipe, run_id: str,
         checks: Sequence[TaskCheck] | None = None) -> tuple[list[EpisodeJob], list[Refusal]]:
    """Expand a recipe into its episodes, seeds ``recipe.seed + i``, and the task files it refused.

    For a suite, episode ``i`` runs a generated variant of template ``i % templates``; for mixed ``suites``,
    a variant of the suite :func:`~osgym.suites.expand_mix` schedules; for a ``task_dir``,
    task file ``i % files`` of those that load (:func:`plan_task_files`, which ``checks`` go to).
    Deterministic, and a plan for more episodes starts with the plan for fewer,
    so a resumed run keeps its episode ids.

    Raises:
        ConfigError: if the recipe names templates that the suite does not have, or task files that
            cannot run (see :func:`plan_task_files`).
        TaskLoadError: if the suite does not exist.
    """
    refused: list[Refusal] = []
    if recipe.task_dir is not None:
        loaded = plan_task_files(recipe, checks)
        tasks, refused = [loaded.tasks[i % len(loaded.tasks)] for i in range(recipe.episodes)], loaded.refused
    elif recipe.suites:
        tasks = expand_mix(recipe.suites, recipe.episodes, recipe.seed)
    else:
        assert recipe.suite is not None  # the recipe fills in the default suite without a task_dir
        tasks = expand(recipe.suite, recipe.tasks, recipe.episodes, recipe.seed)
    return [EpisodeJob(run_id, t, recipe.seed + i, i) for i, t in enumerate(tasks)], refused


def task_checks(recipe: Recipe) -> list[TaskCheck]:
    """The plan-time checks every task file of ``recipe`` must pass (each returns its reasons to refuse).

    Beyond loading: every http(s) URL a task's setup or getters fetch must be in the operator's asset
    cache (``OSGYM_ASSET_CACHE``), since replicas and run time are offline; a task that names one the
    cache lacks is refused, naming the URL, before any replica starts.

    Raises:
        ConfigError: if ``OSGYM_ASSET_CACHE`` is not a directory or an ``s3://`` URI.
    """
    cache = cache_from_settings()

    def cached_assets(task: TaskSpec) -> list[str]:
        return [f"asset not cached: {url}" for url in missing_assets(task, cache)]

    return [cached_assets]


def plan_task_files(recipe: Recipe, checks: Sequence[TaskCheck] | None = None) -> LoadedTasks:
    """Load the task files a recipe's ``task_dir`` (and ``task_index``) names, in plan order.

    Every file is loaded and checked (``checks``, default :func:`task_checks`) now, before any replica
    starts. With ``on_refused: fail`` one refused file fails the run, naming every refused file and
    why; with ``skip`` the refused files are left out and returned in ``refused``.

    Raises:
        ConfigError: a bad index entry or a symlink out of the folder (always); refused files under
            ``on_refused: fail``; no task file left to run.
    """
    assert recipe.task_dir is not None
    entries = (index_entries(recipe.task_dir, recipe.task_index) if recipe.task_index
               else discover_entries(recipe.task_dir, frozenset(recipe.exclude or [])))
    loaded = load_entries(entries, task_checks(recipe) if checks is None else checks)
    where = f"recipe {recipe.name}: task_dir {recipe.task_dir!r}"
    if loaded.refused and recipe.on_refused == "fail":
        listed = "\n".join(f"  {r}" for r in loaded.refused)
        raise ConfigError(f"{where}: {len(loaded.refused)} of {len(entries)} task files refused (add "
                          f"'on_refused: skip' to run the others):\n{listed}")
    if not loaded.tasks:
        raise ConfigError(f"{where}: no task file to run ({len(entries)} found, {len(loaded.refused)} refused)")
    return loaded


@dataclass(frozen=True)
class EpisodeSummary:
    """What a finished episode reports back to the orchestrator (its data went to the store)."""

    episode_id: str
    task_id: str
    success: bool
    attempts: int
    error_class: str | None
    num_steps: int

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class _Future(Protocol):
    """What :meth:`Collector.summary_of` needs of a future (``concurrent.futures`` or Prefect's)."""

    def result(self) -> EpisodeSummary: ...


@dataclass
class Collector:
    """Runs jobs of one recipe on one pool; the unit the flow's tasks call.

    ``sink`` receives each finished :class:`EpisodeResult` (normally the dataset
    writer's ``add``); :meth:`collect` returns only an :class:`EpisodeSummary`.
    ``lease_timeout_s`` bounds the time an attempt waits for a free replica while the pool leases none to
    anybody (a patient lease: a long queue that moves is waited out); a wait that runs out is retried
    like a replica fault (:class:`~osgym.errors.LeaseTimeout`).
    """

    recipe: Recipe
    pool: ReplicaPool
    image: str
    sink: Callable[[EpisodeResult], None] | None = None
    prices: cost.PriceTable | None = None
    lease_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        if self.prices is None:
            self.prices = cost.load_prices()
        r = self.recipe
        self.limits = EpisodeLimits(
            max_steps=r.max_steps, deadline_s=r.episode_timeout_s, settle_s=r.settle_s,
            settle_mode=r.settle_mode, screenshot_format=r.observation.format, screenshot_quality=r.observation.quality,
            screenshot_max_side=r.observation.max_side, a11y=r.observation.a11y,
        )

    def run_job(self, job: EpisodeJob, attempt: int = 1, final: bool = True) -> EpisodeResult:
        """Lease a replica and run one episode.

        A replica fault, or a lease that found no free replica in time, is raised (so the
        caller retries on a fresh replica) unless ``final``, in which case it becomes an
        error row: every requested episode ends up as a row.

        Raises:
            ReplicaError: a replica fault or :class:`~osgym.errors.LeaseTimeout`, unless ``final``.
        """
        policy = make_policy(self.recipe.policy)
        replica_id = host = None
        leased: Replica | None = None
        t0 = time.monotonic()
        started = utcnow()
        try:
            with self.pool.lease(self.lease_timeout_s, patient=True) as replica:
                replica_id, host, leased = replica.id, replica.host, replica
                traj = run_episode(replica, job.task, policy, seed=job.seed, limits=self.limits)
        except ReplicaError as exc:
            if not final:
                raise
            traj = failed_trajectory(exc, started)
        except Exception as exc:  # anything else is recorded, never lost
            traj = failed_trajectory(exc, started)
        usage = leased.usage if leased is not None else None  # the pool set it when the lease ended
        return self._result(job, policy, traj, attempt, replica_id, host, time.monotonic() - t0, usage)

    def collect(self, job: EpisodeJob, attempt: int = 1, final: bool = True) -> EpisodeSummary:
        """:meth:`run_job`, then hand the result to the sink."""
        return self.record(self.run_job(job, attempt, final))

    def record(self, result: EpisodeResult) -> EpisodeSummary:
        """Send a result to the sink and summarise it."""
        if self.sink is not None:
            self.sink(result)
        t = result.trajectory
        return EpisodeSummary(result.episode_id, result.task_id, t.success, result.attempts, t.error_class,
                              len(t.steps))

    def summary_of(self, job: EpisodeJob, future: _Future) -> EpisodeSummary:
        """A finished future's summary. A crash outside :meth:`collect` (a bug, a task-runner
        failure) still becomes an error row, counted as every allowed attempt."""
        try:
            return future.result()
        except Exception as exc:
            return self.record(self.error_result(job, exc, self.recipe.retries + 1))

    def error_result(self, job: EpisodeJob, exc: BaseException, attempts: int) -> EpisodeResult:
        """The row for an episode whose task itself failed outside :meth:`run_job`."""
        return self._result(job, make_policy(self.recipe.policy), failed_trajectory(exc), attempts, None, None, 0.0)

    def _result(self, job: EpisodeJob, policy: Policy, traj: Trajectory, attempts: int,
                replica_id: str | None, host: str | None, replica_s: float,
                usage: Usage | None = None) -> EpisodeResult:
        assert self.prices is not None
        return episode_result(job.task, traj, episode_id=job.episode_id, run_id=job.run_id, policy=policy.name,
                              policy_config={"name": policy.name, **policy.config()}, image=self.image,
                              replica_id=replica_id, host=host, replica_s=replica_s, prices=self.prices,
                              usage=usage, attempts=attempts, hollow=self.pool.kind == HOLLOW)


def new_run_id() -> str:
    """A sortable run id: UTC time plus 6 random hex digits."""
    import secrets

    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def run_config(recipe: Recipe, image: str, refused: Sequence[Refusal] = ()) -> dict[str, Any]:
    """What the manifest records about how a run was made, with the task files it skipped (and why)."""
    out: dict[str, Any] = {"recipe": recipe.model_dump(mode="json"), "image": image}
    if refused:
        out["refused_task_files"] = [{"path": r.path, "reason": r.reason} for r in refused]
    return out


def collect_with_retries(collector: Collector, job: EpisodeJob, retries: int,
                         sleep: Callable[[float], None] = time.sleep) -> EpisodeSummary:
    """What the Prefect task's retry policy does, in plain Python: a replica fault retries on a
    fresh replica after a short backoff, and the last attempt records the fault instead of raising."""
    for attempt in retrying(attempts=retries + 1, on=ReplicaError, backoff_s=0.5, backoff_max_s=5, sleep=sleep):
        with attempt:
            n = attempt.retry_state.attempt_number
            return collector.collect(job, n, final=n > retries)
    raise AssertionError("unreachable: the final attempt records instead of raising")
