"""Episodes queued far behind a moving lease queue wait their turn instead of being recorded as replica faults.

At 2,500 replicas the flow's task runs all needed a replacement replica at once, and 7.8 % of the episodes
waited past the collector's lease bound and were stored as ``replica_fault`` without having run (BENCHMARKS.md,
issue 42). Here 24 episodes share 2 hollow replicas with a bound far shorter than the queue's length: every
episode must run, on its first attempt; a pool whose replicas are all held still times out at the bound.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from osgym.collection.collector import Collector, collect_with_retries, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.episodes.trajectory import EpisodeResult
from osgym.errors import LeaseTimeout
from osgym.replicas.hollow import HOLLOW, HOLLOW_IMAGE
from osgym.replicas.pool import PoolEvent, ReplicaPool

EPISODES = 24
BOUND_S = 1.0


def test_a_long_queue_that_moves_loses_no_episode_and_a_stopped_one_still_times_out(tmp_path: Path) -> None:
    rec = load_recipe({"name": "queue", "episodes": EPISODES, "replicas": 2, "replica_kind": "hollow",
                       "screen": [320, 240], "store": str(tmp_path / "data"), "max_steps": 5, "settle_s": 0,
                       "retries": 0, "policy": {"name": "random", "options": {"max_actions": 4}},
                       "episode_timeout_s": 60})
    jobs = plan_jobs(rec, "queue-run")


    def slow_lease(ev: PoolEvent) -> None:
        """The sink runs on the leasing thread: each lease lasts 0.25 s more, so the queue is ~3 s long."""
        if ev.event == "leased":
            time.sleep(0.25)

    with ReplicaPool(HOLLOW_IMAGE, 2, standby=0, screen=rec.screen, kind=HOLLOW, on_event=slow_lease) as pool:
        pool.start(wait=True)
        results: list[EpisodeResult] = []
        collector = Collector(rec, pool, HOLLOW_IMAGE, sink=results.append, lease_timeout_s=BOUND_S)
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=EPISODES) as ex:  # every episode asks at once, as a batch does
            list(ex.map(lambda job: collect_with_retries(collector, job, retries=0), jobs))
        waited = time.monotonic() - t0
        faults = [r.trajectory.error_message for r in results if r.trajectory.error_class == "replica_fault"]
        assert not faults, faults
        assert sorted(r.episode_id for r in results) == sorted(j.episode_id for j in jobs)
        assert all(r.attempts == 1 and len(r.trajectory.steps) == 5 for r in results)
        assert max(pool.stats.acquire_s) > BOUND_S, f"the queue was not longer than the bound ({waited:.1f} s)"

        held = [pool.acquire(10), pool.acquire(10)]  # nobody is served any more
        t1 = time.monotonic()
        with pytest.raises(LeaseTimeout):
            pool.acquire(BOUND_S, patient=True)
        assert BOUND_S <= time.monotonic() - t1 < BOUND_S + 5
        for replica in held:
            pool.release(replica)
