"""One pool over two Docker hosts (a second dockerd on this machine); the second dies mid-run."""

from __future__ import annotations

import threading
import time
from collections import Counter

import docker
from pool_support import run_jobs

from osgym.collection.collector import Collector, plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.episodes.trajectory import TERMINATIONS
from osgym.errors import INFRA_ERROR_CLASSES
from osgym.replicas.client import Timeouts
from osgym.replicas.hosts import DockerHost
from osgym.replicas.pool import POOL_LABEL, ReplicaPool


def test_replicas_spread_over_two_hosts_and_the_run_survives_one_dying(  # type: ignore[no-untyped-def]
    second_daemon, image, docker_client, pool_name, tmp_path
) -> None:
    client2 = docker.DockerClient(base_url=second_daemon.url, max_pool_size=32, timeout=30)
    hosts = [DockerHost(name="h1", client=docker_client, capacity=6),
             DockerHost(url=second_daemon.url, name="h2", client=client2, capacity=6)]
    recipe = load_recipe({"name": "twohosts", "episodes": 16, "replicas": 4, "standby": 0, "screen": [1024, 768],
                          "max_steps": 15, "episode_timeout_s": 60, "settle_s": 0.3, "retries": 2,
                          "store": str(tmp_path)})
    jobs = plan_jobs(recipe, "two-hosts")
    pool = ReplicaPool(image, 4, standby=0, name=pool_name, hosts=hosts, screen=(1024, 768),
                       timeouts=Timeouts(read=8.0, health=1.5), health_interval=1.0)
    killed_at: list[float] = []

    def kill_when_busy() -> None:
        while pool.stats.leased < 6 and not pool.closed:
            time.sleep(0.1)
        second_daemon.kill()
        killed_at.append(time.time())

    try:
        pool.start()
        placed = Counter(e.host for e in pool.events if e.event == "ready")
        assert placed == {"h1": 2, "h2": 2}, placed
        killer = threading.Thread(target=kill_when_busy, daemon=True)
        killer.start()
        results = run_jobs(Collector(recipe, pool, image), jobs, workers=4, retries=recipe.retries)
        killer.join(timeout=30)
    finally:
        pool.close()

    assert killed_at, "the second daemon was never killed"
    ids = [r.episode_id for r in results]
    assert sorted(ids) == sorted(j.episode_id for j in jobs)
    # every episode ends as a row, and none is lost to the dead host: its interrupted episodes were retried on h1
    lost = [(r.episode_id, r.host, r.trajectory.error_class, r.trajectory.error_message) for r in results
            if r.trajectory.error_class in INFRA_ERROR_CLASSES]
    assert lost == [], lost
    assert all(r.trajectory.termination in TERMINATIONS for r in results)
    assert all(r.trajectory.error_message for r in results if r.trajectory.error_class), \
        "a failed episode must say why"
    quarantined = [e for e in pool.events if e.event == "quarantined"]
    assert [e.host for e in quarantined] == ["h2"], quarantined
    after = [e for e in pool.events if e.event == "ready" and e.ts > killed_at[0]]
    assert after and all(e.host == "h1" for e in after)
    assert {r.host for r in results} == {"h1", "h2"}
    report = {h["host"]: h for h in pool.hosts_report()}
    assert report["h2"]["quarantined"] and not report["h1"]["quarantined"]
    assert docker_client.containers.list(all=True, filters={"label": f"{POOL_LABEL}={pool_name}"}) == []
    ok = sum(r.trajectory.success for r in results)
    print(f"\ntwo hosts: {ok}/16 successful, {sum(r.attempts > 1 for r in results)} retried, "
          f"hosts {Counter(r.host for r in results)}, quarantine: {quarantined[0].cause}")
