"""Schema 2: model replies (capped), token usage, resource accounting and bytes in the dataset rows."""

from __future__ import annotations

import json

import pyarrow as pa

from osgym.collection.recipe import Recipe
from osgym.dataset.schema import EPISODES, SCHEMA_VERSION, STEPS
from osgym.episodes.trajectory import MAX_RAW_CHARS, EpisodeResult, Step, Trajectory, utcnow
from osgym.replicas.accounting import Usage


def _step(i: int, **kw: object) -> Step:
    return Step(step=i, ts=utcnow(), screenshot=b"\x89PNG" + bytes(96), screenshot_format="png", width=8, height=8,
                action={"action_type": "DONE"}, action_type="DONE", **kw)  # type: ignore[arg-type]


def test_rows_carry_replies_tokens_usage_and_bytes() -> None:
    long_reply = "x" * (MAX_RAW_CHARS + 10)
    steps = [_step(0, raw="click it", usage={"prompt_tokens": 100, "completion_tokens": 7}, a11y="<tree/>"),
             _step(1, raw=long_reply, usage={"input_tokens": 50, "output_tokens": 3, "calls": 2}),
             _step(2)]
    result = EpisodeResult(
        episode_id="e", run_id="r", task_id="t", variant="0", domain="d", instruction="i", policy="p",
        policy_config={"model": "m"}, image="img", replica_id="x", host="h",
        trajectory=Trajectory(steps=steps, termination="done", score=1.0, ended_at=utcnow()), replica_s=10.0,
        usage=Usage(seconds=9.5, cpu_s=2.0, mem_avg_mib=70.0, mem_peak_mib=90.0, net_bytes=None, pss=True))
    rows = result.step_rows()
    assert rows[0]["raw"] == "click it" and (rows[0]["input_tokens"], rows[0]["output_tokens"]) == (100, 7)
    assert len(rows[1]["raw"]) < MAX_RAW_CHARS + 60 and rows[1]["raw"].endswith("[10 more characters not stored]")
    assert json.loads(rows[1]["usage"]) == {"input_tokens": 50, "output_tokens": 3, "calls": 2}
    assert (rows[2]["raw"], rows[2]["usage"], rows[2]["input_tokens"], rows[2]["a11y"]) == (None, None, None, None)
    row = result.episode_row()
    assert (row["input_tokens"], row["output_tokens"]) == (150, 10)
    assert (row["cpu_s"], row["mem_avg_mib"], row["mem_peak_mib"], row["net_bytes"]) == (2.0, 70.0, 90.0, None)
    assert row["bytes_written"] == 3 * 100 + len("<tree/>") + len("click it") + len(rows[1]["raw"].encode())
    # the rows fit the version-2 schemas as they are
    pa.RecordBatch.from_pylist(rows, schema=STEPS)
    pa.RecordBatch.from_pylist([row | {"schema_version": SCHEMA_VERSION}], schema=EPISODES)
    assert row["hollow"] is False  # a real replica's episode (5 added hollow: tests/hollow/test_hollow_flow.py)
    assert SCHEMA_VERSION == 5  # 3 added related_apps (tests/analytics/test_success_by_app.py), 4 setup_failures


def test_an_episode_without_accounting_or_a_model_has_null_columns() -> None:
    result = EpisodeResult(
        episode_id="e", run_id="r", task_id="t", variant="0", domain="d", instruction="i", policy="p",
        policy_config={}, image="img", replica_id=None, host=None, trajectory=Trajectory(steps=[_step(0)]))
    row = result.episode_row()
    assert (row["cpu_s"], row["input_tokens"], row["output_tokens"]) == (None, None, None)


def test_the_recipe_asks_for_the_tree() -> None:
    assert Recipe(name="x", episodes=1).observation.a11y is False
    assert Recipe.model_validate({"name": "x", "episodes": 1, "observation": {"a11y": True}}).observation.a11y
