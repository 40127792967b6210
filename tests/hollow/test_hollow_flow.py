"""The collect flow over hollow replicas: the real Prefect flow and its batches, the pool and its lease queue,
the writer and the analytics, at 50 replicas; every episode lands once, marked hollow, and the exports refuse
the data unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from flows import collect as collect_mod
from osgym.analysis import analytics
from osgym.cli import app
from osgym.collection.collector import plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.dataset import export_jsonl
from osgym.errors import ConfigError, HollowDataRefused
from osgym.replicas.pool import PoolEvent, ReplicaPool

EPISODES = 300
REPLICAS = 50


def hollow_recipe(store: Path, **kw: object) -> dict:
    return {"name": "hollowflow", "episodes": EPISODES, "replicas": REPLICAS, "standby": 5, "replica_kind": "hollow",
            "screen": [640, 480], "store": str(store), "max_steps": 10, "settle_s": 0, "batch_size": 120,
            "policy": {"name": "random", "options": {"max_actions": 9}}, "episode_timeout_s": 60, **kw}


def test_the_flow_collects_hollow_episodes_once_each_marked_hollow(tmp_path: Path) -> None:
    store = tmp_path / "data"
    events: list[PoolEvent] = []
    summary = collect_mod.collect(hollow_recipe(store), on_event=events.append)
    assert summary["episodes"] == EPISODES and summary["image"] == "osgym/hollow", summary

    root = store / "hollowflow"
    rows = duckdb.sql(f"select episode_id, hollow, image, num_steps, attempts, replica_id from "
                      f"read_parquet('{root}/episodes/*/*.parquet')").fetchall()
    planned = {j.episode_id for j in plan_jobs(load_recipe(hollow_recipe(store)), summary["run_id"])}
    assert len(rows) == EPISODES and {r[0] for r in rows} == planned, "every episode landed, once"
    assert all(r[1] is True and r[2] == "osgym/hollow" for r in rows)
    assert all(r[3] == 10 and r[4] == 1 for r in rows), "ten steps each, no retry"
    assert len({r[5] for r in rows}) > REPLICAS, "each lease had a fresh replica"
    steps = duckdb.sql(f"select count(*), count(distinct episode_id) from "
                       f"read_parquet('{root}/steps/*/*.parquet')").fetchall()[0]
    assert steps == (10 * EPISODES, EPISODES)

    leased = [e for e in events if e.event == "leased"]
    assert len(leased) == EPISODES and len({e.replica_id for e in leased}) == EPISODES
    pool_events = dict(duckdb.sql(f"select event, count(*) from read_parquet('{root}/pool_events/*/*.parquet') "
                                  "group by 1").fetchall())
    assert pool_events["leased"] == EPISODES and pool_events["removed"] >= EPISODES

    con = analytics.connect(str(store), "hollowflow")
    assert analytics.summary(con)["episodes"] == EPISODES

    card = (root / "README.md").read_text()
    assert f"Hollow data: {EPISODES} of {EPISODES} episodes ran on hollow replicas" in card and "- hollow" in card

    with pytest.raises(HollowDataRefused, match=f"{EPISODES} of {EPISODES} episodes ran on hollow replicas"):
        export_jsonl(store, "hollowflow", tmp_path / "refused")
    assert not (tmp_path / "refused" / "episodes.jsonl").exists()
    cli = CliRunner()
    refused = cli.invoke(app, ["dataset", "export", "hollowflow", "--store", str(store), "--out",
                               str(tmp_path / "cli")], env={"COLUMNS": "200"})
    assert refused.exit_code == 2 and "--allow-hollow" in refused.output, refused.output
    sft = cli.invoke(app, ["dataset", "export", "hollowflow", "--store", str(store), "--format", "sft", "--out",
                           str(tmp_path / "sft")], env={"COLUMNS": "200"})
    assert sft.exit_code == 2 and "--allow-hollow" in sft.output, sft.output
    taken = cli.invoke(app, ["dataset", "export", "hollowflow", "--store", str(store), "--out", str(tmp_path / "cli"),
                             "--allow-hollow"], env={"COLUMNS": "200"})
    assert taken.exit_code == 0, taken.output
    lines = (tmp_path / "cli" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == EPISODES and {json.loads(line)["task_id"] for line in lines} == planned


def test_hollow_is_chosen_explicitly_and_bad_values_are_refused(tmp_path: Path) -> None:
    assert load_recipe({"name": "x", "episodes": 1}).replica_kind == "container"
    with pytest.raises(ConfigError, match="replica_kind"):
        load_recipe({"name": "x", "episodes": 1, "replica_kind": "ghost"})
    with pytest.raises(ConfigError, match="remove compat"):
        load_recipe({"name": "x", "episodes": 1, "replica_kind": "hollow", "compat": True})
    with pytest.raises(ConfigError, match="kind: expected one of container, hollow"):
        ReplicaPool("img", 1, kind="ghost", run_dir=tmp_path)
    with pytest.raises(ConfigError, match="remove hosts"):
        ReplicaPool("img", 1, kind="hollow", hosts="unix:///var/run/docker.sock", run_dir=tmp_path)
