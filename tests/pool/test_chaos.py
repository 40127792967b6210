"""Chaos: 60 episodes on 8 replicas while replicas are killed, hung (SIGSTOP) and pushed past their memory limit.

Every episode must end as exactly one row: successful, or recorded with its error class; every OOM kill
must be recorded as a fault of the replica it hit.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
from pool_support import kernel_oom_kills, push_past_memory_limit, run_jobs, sigstop

from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.dataset import write_sidecar
from osgym.replicas.client import ReplicaState, Timeouts
from osgym.replicas.events import events_table
from osgym.replicas.health import OOM_CAUSE
from osgym.replicas.pool import ReplicaPool


def _chaos(pool: ReplicaPool, stop: threading.Event, log: list[str], period: float = 3.0, rounds: int = 40) -> None:
    """Every ``period`` s: kill one leased replica, SIGSTOP another, push a third past its memory limit."""
    rng = random.Random(7)
    for i in range(rounds):
        if stop.wait(period):
            return
        leased = [r for r in pool.registry.replicas() if r.state is ReplicaState.LEASED]
        rng.shuffle(leased)
        actions = [("kill", lambda c: c.kill()), ("sigstop", sigstop), ("oom", push_past_memory_limit)]
        for (name, act), r in zip(actions[i % 3:] + actions[:i % 3], leased, strict=False):
            try:
                act(r.container)
                log.append(f"{name} {r.id} {r.container.id}")
            except Exception as exc:  # the replica may be gone already
                log.append(f"{name} {r.id} failed: {exc!r}")
            break  # one fault per round, rotating through the three kinds


def test_sixty_episodes_survive_chaos_on_eight_replicas(image, docker_client, pool_name, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = load_recipe({"name": "chaos", "episodes": 60, "replicas": 8, "standby": 2, "screen": [1024, 768],
                          "max_steps": 15, "episode_timeout_s": 60, "settle_s": 0.3, "retries": 2,
                          "store": str(tmp_path)})
    jobs = plan_jobs(recipe, "chaos-run")
    pool = ReplicaPool(image, 8, standby=2, name=pool_name, docker_client=docker_client, screen=(1024, 768),
                       timeouts=Timeouts(read=8.0, health=1.5), health_interval=1.0)
    stop = threading.Event()
    log: list[str] = []
    t0 = time.monotonic()
    try:
        pool.start()
        chaos = threading.Thread(target=_chaos, args=(pool, stop, log), daemon=True)
        chaos.start()
        results = run_jobs(Collector(recipe, pool, image), jobs, workers=8, retries=recipe.retries)
        stop.set()
        chaos.join(timeout=10)
    finally:
        stop.set()
        pool.close()
    elapsed = time.monotonic() - t0

    ids = [r.episode_id for r in results]
    assert len(ids) == 60 and Counter(ids).most_common(1)[0][1] == 1, "an episode is missing or duplicated"
    assert set(ids) == {j.episode_id for j in jobs}
    for r in results:  # each row says how it ended: success, an error class, or a clean failure (task not done)
        t = r.trajectory
        assert t.success or t.error_class or t.termination in ("done", "max_steps", "timeout"), (r.episode_id, t)
    endings = Counter("success" if r.trajectory.success else (r.trajectory.error_class or r.trajectory.termination)
                      for r in results)
    faults = [e for e in pool.events if e.event == "faulted"]
    injected = [entry for entry in log if "failed" not in entry]
    assert len(injected) >= 3 and faults, (log, faults)
    assert sum(r.attempts > 1 for r in results) >= 1
    assert pool.live == 0
    written = write_sidecar(tmp_path, "chaos", "pool_events", "run-1", "events", events_table(pool.events, "run-1"))
    kinds = Counter(pq.read_table(written).column("event").to_pylist())
    ok = sum(r.trajectory.success for r in results)
    print(f"\nchaos: {elapsed:.0f} s, {ok}/60 successful, {sum(r.attempts > 1 for r in results)} retried, "
          f"{len(injected)} faults injected, endings {dict(endings)}, events {dict(kinds)}")
    assert not any(e.event == "quarantined" for e in pool.events), "the only host must never be quarantined"
    # A push counts once the kernel killed something: a replica whose episode ended within a second or two
    # was removed before its allocation reached the limit. The kernel's log says which were hit.
    pushed = {entry.split()[2]: entry.split()[1] for entry in injected if entry.startswith("oom ")}
    oom_faults = {e.replica_id for e in pool.events if e.event == "faulted" and e.cause == OOM_CAUSE}
    killed = kernel_oom_kills(set(pushed))
    print(f"chaos: {len(pushed)} replicas pushed past their memory limit, OOM kills in the kernel log: "
          f"{'unreadable' if killed is None else len(killed)}, OOM faults recorded: {len(oom_faults)}")
    assert oom_faults, "OOM kills were injected but none was recorded as a fault"
    assert oom_faults <= set(pushed.values()), "an OOM fault names a replica that was never pushed past its limit"
    if killed is not None:
        assert oom_faults == {pushed[c] for c in killed}, "every OOM kill is recorded, against the replica it hit"
    assert endings["success"] >= 30, endings
    # how long it took is a figure (printed above), not a check: it depends on the machine's load
