"""The Prefect flow end to end: real replicas, real Parquet, DuckDB on top."""

from __future__ import annotations

import io
import socket
import threading
from pathlib import Path

import duckdb
import httpx
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from flows import collect as collect_mod
from osgym.analysis import analytics
from osgym.collection.collector import EpisodeSummary
from osgym.replicas.pool import PoolEvent


def _recipe(tmp_path: Path, **kw: object) -> dict:
    base = {"name": "flowtest", "episodes": 3, "replicas": 2, "standby": 1, "screen": [1280, 800],
            "store": str(tmp_path / "data"), "max_steps": 15, "episode_timeout_s": 120}
    return {**base, **kw}


def test_flow_collects_every_task_into_parquet_read_by_duckdb(tmp_path: Path) -> None:
    seen: list[str] = []
    scraped: list[str] = []
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def on_episode(summary: EpisodeSummary) -> None:
        seen.append(summary.task_id)
        scraped.append(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text)

    summary = collect_mod.collect(_recipe(tmp_path), on_episode=on_episode, metrics_port=port)
    assert summary["episodes"] == 3 and summary["success"] == 3
    # the run's Prometheus metrics, while it ran: the third episode counted once the writer took it
    last = {(m.name, tuple(m.labels.items())): m.value for f in text_string_to_metric_families(scraped[-1])
            for m in f.samples}
    assert last[("osgym_episodes_total", (("outcome", "done"),))] == 3
    assert last[("osgym_pool_events_total", (("kind", "leased"),))] == last[("osgym_lease_wait_seconds_count", ())] == 3
    assert sorted(seen) == ["editor-save-text", "terminal-create-file", "terminal-rename-file"]

    root = tmp_path / "data" / "flowtest"
    con = duckdb.connect()
    eps = con.sql(f"select task_id, success, num_steps, attempts, termination from "
                  f"read_parquet('{root}/episodes/*/*.parquet') order by task_id").fetchall()
    assert [e[0] for e in eps] == ["editor-save-text", "terminal-create-file", "terminal-rename-file"]
    assert all(e[1] and e[3] == 1 and e[4] == "done" for e in eps)
    steps = con.sql(f"select episode_id, step, screenshot.bytes, screenshot_sha256, width, height from "
                    f"read_parquet('{root}/steps/*/*.parquet') order by episode_id, step").fetchall()
    assert len(steps) == sum(e[2] for e in eps)
    for ep in {s[0] for s in steps}:
        shas = [s[3] for s in steps if s[0] == ep]
        assert len(set(shas)) >= 3, "screenshots should change from step to step"
    for s in steps:
        img = Image.open(io.BytesIO(s[2]))
        assert img.format == "PNG" and img.size == (s[4], s[5]) == (1280, 800)

    events = duckdb.sql(f"select event, count(*) from read_parquet('{root}/pool_events/*/*.parquet') group by 1")
    counts = dict(events.fetchall())
    assert counts["leased"] == 3 and counts["ready"] >= 3 and counts["removed"] >= 3
    waits = duckdb.sql(f"select elapsed_s from read_parquet('{root}/pool_events/*/*.parquet') where event = 'leased'")
    assert all(w is not None and w >= 0 for (w,) in waits.fetchall())  # each lease's wait, as the metrics saw it

    con2 = analytics.connect(str(tmp_path / "data"), "flowtest")
    summ = analytics.summary(con2)
    assert summ["episodes"] == 3 and summ["success_rate"] == 1.0


def test_a_replica_killed_mid_episode_is_retried_on_a_fresh_one(tmp_path: Path, docker_client) -> None:  # type: ignore[no-untyped-def]
    killed: list[str] = []

    def killer(ev: PoolEvent) -> None:
        if ev.event == "leased" and not killed:
            killed.append(ev.replica_id)
            name = f"{ev.pool}-{ev.replica_id}"

            def kill() -> None:
                docker_client.containers.get(name).kill()

            threading.Timer(1.0, kill).start()  # the editor episode runs for several seconds

    summary = collect_mod.collect(_recipe(tmp_path, name="killtest", episodes=1, replicas=1,
                                          tasks=["editor-save-text"]), on_event=killer)
    assert killed and summary["episodes"] == 1
    rows = duckdb.sql(f"select success, attempts, replica_id, termination, error_class, num_steps from "
                      f"read_parquet('{tmp_path}/data/killtest/episodes/*/*.parquet')").fetchall()
    assert len(rows) == 1
    success, attempts, replica_id, termination, error_class, num_steps = rows[0]
    # The second attempt ran the whole episode on another replica, and solved it.
    assert (success, attempts, replica_id != killed[0], termination, error_class) == (True, 2, True, "done", None), rows
    assert num_steps >= 4, rows
