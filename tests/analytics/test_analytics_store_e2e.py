"""The real writer (``osgym.dataset.DatasetWriter``) feeding ``analytics.connect``, locally and over S3.

These pin the contract between the store and analytics: whatever the writer
commits, the views read, through ``read_parquet`` locally and through
registered pyarrow datasets on S3 (a real SeaweedFS server, the store tests' ``running_seaweed``).
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from osgym import dataset as store
from osgym.analysis import analytics
from osgym.episodes.trajectory import EpisodeResult, Step, Trajectory
from tests.store.store_support import BUCKET, SeaweedS3, running_seaweed


def results(data: types.SimpleNamespace, run_id: str, eids: list[str]) -> list[EpisodeResult]:
    out = []
    for eid in eids:
        ep, rows = data.episode_rows(eid, run_id)
        steps = [
            Step(step=r["step"], ts=r["ts"], screenshot=r["screenshot"]["bytes"],
                 screenshot_format=r["screenshot"]["path"].rsplit(".", 1)[-1], width=r["width"],
                 height=r["height"], action=json.loads(r["action"]), action_type=r["action_type"],
                 thought=r["thought"], policy_ms=r["policy_ms"], env_ms=r["env_ms"], done=r["done"])
            for r in rows
        ]
        traj = Trajectory(steps=steps, score=ep["score"], termination=ep["termination"],
                          error_class=ep["error_class"], error_message=ep["error_message"],
                          started_at=ep["started_at"], ended_at=ep["ended_at"])
        assert traj.ended_at == traj.started_at + timedelta(seconds=data.SPECS[eid][9])
        out.append(EpisodeResult(
            episode_id=eid, run_id=run_id, task_id=ep["task_id"], variant="v0", domain=ep["domain"],
            instruction=ep["instruction"], policy=ep["policy"], policy_config={}, image="img",
            replica_id=ep["replica_id"], host=ep["host"], trajectory=traj, attempts=ep["attempts"],
            replica_s=ep["replica_s"], cost_usd=ep["cost_usd"]))
    return out


def write_runs(uri: str, data: types.SimpleNamespace, s3: Any = None) -> None:
    for run_id, eids in (("r1", ["e1", "e2", "e3", "e4"]), ("r2", ["e5", "e6", "e7", "e8"])):
        with store.DatasetWriter(uri, "demo", run_id, s3=s3) as writer:
            for r in results(data, run_id, eids):
                writer.add(r)


def check(con: Any) -> None:
    assert analytics.summary(con) == {
        "runs": 2, "tasks": 3, "episodes": 8, "successes": 2, "success_rate": 0.25, "steps": 19,
        "steps_per_episode": 2.375, "episode_s": 33.75, "replica_s": 325.0,
    }
    flags = {r["flag"]: (r["steps"], r["episodes"]) for r in analytics.query(con, "quality_flags").to_pylist()}
    assert flags == {"blank_frame": (5, 4), "duplicate_frame": (4, 3), "noop_action": (3, 3), "stuck_episode": (2, 1)}
    faults = {r["host"]: r["faulted_attempts"] for r in analytics.query(con, "host_faults").to_pylist()}
    assert faults == {"h1": 0, "h2": 5, "h3": 3, "(unknown)": 0}


def test_local_store(tmp_path: Path, data: types.SimpleNamespace) -> None:
    write_runs(str(tmp_path), data)
    with analytics.connect(str(tmp_path), "demo") as con:
        assert con.sql("SELECT value FROM osgym_meta WHERE key = 'route'").fetchall() == [("parquet",)]
        check(con)


@pytest.fixture(scope="module")
def seaweed() -> Iterator[SeaweedS3]:
    with running_seaweed("osgym-weed-analytics-") as server:
        yield server


def test_s3_store(seaweed: SeaweedS3, data: types.SimpleNamespace) -> None:
    uri, options = f"s3://{BUCKET}/analytics-e2e", seaweed.options()
    write_runs(uri, data, s3=options)
    with analytics.connect(uri, "demo", s3=options) as con:
        assert con.sql("SELECT value FROM osgym_meta WHERE key = 'route'").fetchall() == [("arrow",)]
        check(con)
        # Frames come back byte for byte through the registered pyarrow dataset.
        (img,) = con.sql("SELECT image FROM frames WHERE episode_id = 'e7' AND step = 0").fetchall()[0]
        assert img == data.FRAMES["BJ"]
