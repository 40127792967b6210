"""The flow's ``episodes`` task over hollow replicas: several episodes in one task run, each with the replica-fault
retry policy of the one-episode task, a fresh replica for each attempt, and every episode stored once."""

from __future__ import annotations

from pathlib import Path

import duckdb

from osgym.collection.collector import Collector, EpisodeSummary, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.dataset import DatasetWriter
from osgym.replicas.hollow import HOLLOW, HOLLOW_IMAGE
from osgym.replicas.pool import PoolEvent, ReplicaPool
from tasks.episode import run_episodes_task


def test_one_task_runs_its_episodes_in_order_and_retries_each_replica_fault_on_a_fresh_replica(
        tmp_path: Path) -> None:
    rec = load_recipe({"name": "chunk", "episodes": 4, "replicas": 2, "replica_kind": "hollow", "screen": [320, 240],
                       "store": str(tmp_path / "data"), "max_steps": 5, "settle_s": 0, "retries": 1,
                       "policy": {"name": "random", "options": {"max_actions": 4}}, "episode_timeout_s": 60})
    jobs = plan_jobs(rec, "run1")
    leases: list[str] = []
    removed: list[str] = []
    pool: ReplicaPool | None = None

    def crash_some(ev: PoolEvent) -> None:
        """Leases 2 and 3 (job 2's two attempts) and 5 (job 4's first) hit a replica that just went away."""
        if ev.event != "leased":
            return
        leases.append(ev.replica_id)
        if len(leases) in (2, 3, 5):
            assert pool is not None
            pool.provisioner.server.call({"op": "remove", "id": ev.replica_id})  # type: ignore[attr-defined]
            removed.append(ev.replica_id)

    stored: list[str] = []
    with DatasetWriter(rec.store, rec.dataset_name, "run1", run_config={}) as writer:
        with ReplicaPool(HOLLOW_IMAGE, 2, standby=1, screen=rec.screen, kind=HOLLOW,
                         on_event=crash_some) as pool:
            collector = Collector(rec, pool, HOLLOW_IMAGE, sink=writer.add)
            summaries = run_episodes_task.fn(collector, jobs, retries=rec.retries, label="#0-3",
                                             on_summary=lambda job, s: stored.append(job.episode_id))
        writer.finalize()

    assert [s.episode_id for s in summaries] == [j.episode_id for j in jobs] == stored
    assert all(isinstance(s, EpisodeSummary) for s in summaries)
    assert [s.attempts for s in summaries] == [1, 2, 1, 2], summaries
    assert len(leases) == 6 and len(set(leases)) == 6, "each attempt leased a fresh replica"
    ok, lost, next_one, retried = summaries
    assert [s.num_steps for s in summaries] == [5, 0, 5, 5], "a retried episode ran whole on its second replica"
    assert lost.error_class == "replica_fault" and not lost.success, "its last attempt's fault became its row"
    assert {ok.error_class, next_one.error_class, retried.error_class} <= {None, "evaluator_error"}
    rows = duckdb.sql(f"select episode_id, attempts, replica_id from "
                      f"read_parquet('{tmp_path}/data/chunk/episodes/*/*.parquet')").fetchall()
    assert sorted(r[0] for r in rows) == sorted(j.episode_id for j in jobs), "every episode stored once"
    by_id = {r[0]: r for r in rows}
    assert by_id[retried.episode_id][1] == 2 and by_id[retried.episode_id][2] == leases[5] not in removed
