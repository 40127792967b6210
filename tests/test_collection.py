"""``run_collection`` without Prefect: real replicas, real Parquet, DuckDB on top; runs kept apart."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from osgym.collection import Collection, run_collection
from osgym.collection.collector import Collector, EpisodeSummary, collect_with_retries
from osgym.collection.recipe import Recipe
from osgym.errors import ConfigError, ReplicaUnreachable
from osgym.replicas.events import PoolEvent
from osgym.settings import settings


def _recipe(tmp_path: Path, image: str, **kw: Any) -> dict[str, Any]:
    base = {"name": "plain", "episodes": 2, "replicas": 1, "standby": 0, "screen": [800, 600], "image": image,
            "tasks": ["terminal-create-file", "terminal-rename-file"], "store": str(tmp_path / "data"),
            "max_steps": 15, "episode_timeout_s": 120}
    return {**base, **kw}


@pytest.fixture
def host_name(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("OSGYM_HOST_NAME", "worker-a1")
    assert settings().host_name == "worker-a1"  # read at each call, so the run below sees it
    yield "worker-a1"


def test_a_bad_recipe_or_shard_fails_before_any_replica_starts(tmp_path: Path) -> None:
    # No image is named and none is built here: reaching for replicas would fail differently.
    with pytest.raises(ConfigError, match="no-such-task"):
        Collection({"name": "x", "episodes": 1, "tasks": ["no-such-task"], "store": str(tmp_path)})
    with pytest.raises(ValueError, match="expected 0..1, actual 2"):
        Collection({"name": "x", "episodes": 1, "store": str(tmp_path)}, shard=2, shards=2)
    with pytest.raises(ConfigError, match="settle_mode"):
        Collection({"name": "x", "episodes": 1, "store": str(tmp_path), "settle_mode": "pixels"})
    assert not (tmp_path / "x").exists()


def test_the_recipes_settle_reaches_every_episode(tmp_path: Path) -> None:
    recipe = Recipe.model_validate({"name": "x", "episodes": 1, "store": str(tmp_path), "settle_s": 0.7,
                                    "settle_mode": "frames"})
    limits = Collector(recipe, pool=None, image="unused").limits  # type: ignore[arg-type]  # no replica is leased
    assert (limits.settle_s, limits.settle_mode) == (0.7, "frames")
    assert Collector(Recipe.model_validate({"name": "x", "episodes": 1}), pool=None,  # type: ignore[arg-type]
                     image="unused").limits.settle_mode == "damage"


def test_the_retry_loop_retries_replica_faults_and_records_the_last() -> None:
    calls: list[tuple[int, bool]] = []

    class Flaky:
        def collect(self, job: object, attempt: int, final: bool) -> EpisodeSummary:
            calls.append((attempt, final))
            if not final:
                raise ReplicaUnreachable("gone")
            return EpisodeSummary("e", "t", success=False, attempts=attempt, error_class="replica_unreachable",
                                  num_steps=0)

    waits: list[float] = []
    summary = collect_with_retries(Flaky(), object(), retries=2, sleep=waits.append)  # type: ignore[arg-type]
    assert calls == [(1, False), (2, False), (3, True)] and summary.attempts == 3
    assert waits == [0.5, 1.0]


def test_run_collection_writes_a_dataset_duckdb_reads_and_resumes(tmp_path: Path, image: str, host_name: str) -> None:
    seen: list[EpisodeSummary] = []
    events: list[PoolEvent] = []
    summary = run_collection(_recipe(tmp_path, image), run_id="plain-run", on_episode=seen.append,
                             on_event=events.append)
    assert {k: summary[k] for k in ("run_id", "shard", "dataset", "image", "skipped", "episodes", "success",
                                    "errors", "retried", "manifest_episodes")} == {
        "run_id": "plain-run", "shard": None, "dataset": "plain", "image": image, "skipped": 0, "episodes": 2,
        "success": 2, "errors": 0, "retried": 0, "manifest_episodes": 2}
    assert summary["steps"] == sum(s.num_steps for s in seen) and summary["episodes_per_min"] > 0
    assert sorted(s.task_id for s in seen) == ["terminal-create-file", "terminal-rename-file"]

    root = tmp_path / "data" / "plain"
    eps = duckdb.sql(f"select episode_id, task_id, success, attempts, termination, host, run_id from "
                     f"read_parquet('{root}/episodes/*/*.parquet') order by task_id").fetchall()
    assert [(e[1], e[2], e[3], e[4], e[5], e[6]) for e in eps] == [
        ("terminal-create-file", True, 1, "done", host_name, "plain-run"),
        ("terminal-rename-file", True, 1, "done", host_name, "plain-run")]
    assert {e[0] for e in eps} == {s.episode_id for s in seen}
    (n_steps,) = duckdb.sql(f"select count(*) from read_parquet('{root}/steps/*/*.parquet')").fetchall()[0]
    assert n_steps == summary["steps"]
    stored = duckdb.sql(f"select pool, host, event from read_parquet('{root}/pool_events/*/*.parquet')").fetchall()
    # The sidecar is written before the pool closes; the callback also hears the closing events.
    heard = Counter((e.pool, e.host, e.event) for e in events)
    assert Counter(stored) <= heard and {e[2] for e in stored} >= {"ready", "leased"}
    assert {e[1] for e in stored if e[2] == "leased"} == {host_name}
    assert [e[2] for e in stored].count("leased") == 2

    # Resuming the run with one more episode collects only that one.
    again: list[EpisodeSummary] = []
    more = run_collection(_recipe(tmp_path, image, episodes=3), run_id="plain-run", on_episode=again.append)
    assert (more["skipped"], more["episodes"], more["manifest_episodes"]) == (2, 1, 3)
    assert len(again) == 1 and again[0].episode_id not in {s.episode_id for s in seen}
    ids = duckdb.sql(f"select episode_id from read_parquet('{root}/episodes/*/*.parquet')").fetchall()
    assert len(ids) == len(set(ids)) == 3


def test_two_runs_in_one_process_keep_their_listeners_apart(tmp_path: Path, image: str) -> None:
    runs = {name: Collection(_recipe(tmp_path, image, name=name, episodes=1, tasks=["terminal-create-file"]))
            for name in ("left", "right")}
    seen: dict[str, list[EpisodeSummary]] = {name: [] for name in runs}
    events: dict[str, list[PoolEvent]] = {name: [] for name in runs}
    summaries: dict[str, dict[str, Any]] = {}
    for name, run in runs.items():
        run.on_episode, run.on_event = seen[name].append, events[name].append

    def go(name: str) -> None:
        summaries[name] = runs[name].run()

    threads = [threading.Thread(target=go, args=(name,)) for name in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert set(summaries) == {"left", "right"}, "a run did not finish"
    for name, run in runs.items():
        assert [s.episode_id for s in seen[name]] == [run.jobs[0].episode_id]
        pools = {e.pool for e in events[name]}
        assert len(pools) == 1 and "leased" in {e.event for e in events[name]}
        assert summaries[name]["episodes"] == run.counts.episodes == 1
        assert run.healthy_replicas == 0  # the pool is gone with the run
    assert {e.pool for e in events["left"]}.isdisjoint({e.pool for e in events["right"]})
    assert seen["left"][0].episode_id != seen["right"][0].episode_id
    with pytest.raises(RuntimeError, match="already ran"):
        runs["left"].run()
