"""Each named query's numbers on the synthetic dataset of conftest.py (see its table)."""

from __future__ import annotations

import hashlib
import io
import types
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from PIL import Image

from osgym.analysis import analytics, frames
from osgym.dataset.schema import EPISODES
from osgym.errors import ConfigError
from tests.store.store_support import ACCESS_KEY, BUCKET, SECRET_KEY, running_seaweed


def rows(con: duckdb.DuckDBPyConnection, name: str, **params: Any) -> list[dict[str, Any]]:
    return analytics.query(con, name, **params).to_pylist()


def by(items: list[dict[str, Any]], key: str) -> dict[Any, dict[str, Any]]:
    return {r[key]: r for r in items}


def test_list_queries() -> None:
    assert analytics.list_queries() == [
        "cost", "failure_causes", "host_faults", "latency_percentiles", "profile", "quality_by_episode",
        "quality_flags", "success_by_app", "success_by_domain", "success_by_policy", "success_by_task", "summary",
    ]
    info = analytics.query_info("cost")
    assert info.required == ("usd_per_replica_s",)
    assert info.defaults == {"usd_per_input_token": 0, "usd_per_output_token": 0, "usd_per_byte": 0}
    assert "replica-day" in info.description
    assert analytics.query_info("quality_flags").defaults == {"stuck_min_steps": 2}


def test_summary(con: duckdb.DuckDBPyConnection) -> None:
    assert analytics.summary(con) == {
        "runs": 2, "tasks": 3, "episodes": 8, "successes": 2, "success_rate": 0.25, "steps": 19,
        "steps_per_episode": 2.375, "episode_s": 33.75, "replica_s": 325.0,
    }


def test_views_read_only_committed_shards(con: duckdb.DuckDBPyConnection) -> None:
    ids = [r[0] for r in con.sql("SELECT episode_id FROM episodes ORDER BY episode_id").fetchall()]
    assert ids == [f"e{i}" for i in range(1, 9)]  # the unlisted run=r3 shard ("ghost") is not read
    assert con.sql("SELECT count(*) FROM steps").fetchall() == [(19,)]


def test_steps_view_leaves_out_screenshot_bytes(con: duckdb.DuckDBPyConnection, view: Any) -> None:
    cols = [r[0] for r in con.sql("DESCRIBE steps").fetchall()]
    assert "screenshot" not in cols
    assert {"screenshot_sha256", "width", "height", "action", "policy_ms"} <= set(cols)
    with analytics.connect_view(view, screenshots=True) as full:
        assert "screenshot" in [r[0] for r in full.sql("DESCRIBE steps").fetchall()]


def test_frames_view_has_the_stored_bytes(con: duckdb.DuckDBPyConnection, data: types.SimpleNamespace) -> None:
    got = con.sql("SELECT image, image_path, screenshot_sha256 FROM frames WHERE episode_id = 'e7' "
                  "ORDER BY step").fetchall()
    assert got[0][0] == data.FRAMES["BJ"] and got[0][1] == "e7/0000.jpeg"
    assert all(hashlib.sha256(img).hexdigest() == digest for img, _, digest in got)


def test_success_by_task(con: duckdb.DuckDBPyConnection) -> None:
    t = by(rows(con, "success_by_task"), "task_id")
    assert list(t) == ["t1", "t2", "t3"]
    assert t["t1"] == pytest.approx({
        "task_id": "t1", "domain": "os", "episodes": 3, "successes": 1, "success_rate": 1 / 3,
        "infra_errors": 0, "success_rate_excl_infra": 1 / 3, "mean_score": 1 / 3, "mean_steps": 10 / 3})
    assert (t["t2"]["episodes"], t["t2"]["successes"], t["t2"]["infra_errors"]) == (3, 1, 2)
    assert t["t2"]["success_rate_excl_infra"] == 1.0 and t["t2"]["mean_steps"] == 2.0
    assert (t["t3"]["episodes"], t["t3"]["successes"], t["t3"]["infra_errors"]) == (2, 0, 1)
    assert t["t3"]["success_rate_excl_infra"] == 0.0


def test_success_by_domain(con: duckdb.DuckDBPyConnection) -> None:
    d = by(rows(con, "success_by_domain"), "domain")
    assert list(d) == ["editor", "os"]
    assert (d["editor"]["episodes"], d["editor"]["successes"], d["editor"]["infra_errors"]) == (5, 1, 3)
    assert d["editor"]["success_rate"] == pytest.approx(0.2)
    assert d["editor"]["success_rate_excl_infra"] == pytest.approx(0.5)
    assert d["os"]["success_rate"] == pytest.approx(1 / 3)


def test_success_by_policy(con: duckdb.DuckDBPyConnection) -> None:
    p = by(rows(con, "success_by_policy"), "policy")
    assert (p["scripted"]["episodes"], p["scripted"]["successes"], p["scripted"]["infra_errors"]) == (4, 2, 1)
    assert p["scripted"]["success_rate"] == 0.5
    assert p["scripted"]["success_rate_excl_infra"] == pytest.approx(2 / 3)
    assert (p["random"]["episodes"], p["random"]["successes"], p["random"]["success_rate"]) == (4, 0, 0.0)


def test_failure_causes(con: duckdb.DuckDBPyConnection) -> None:
    got = [(r["termination"], r["error_class"], r["episodes"], r["example_episode"]) for r in
           rows(con, "failure_causes")]
    assert got == [
        ("error", "replica_fault", 2, "e3"),
        ("error", "setup_error", 1, "e6"),
        ("fail", "(none)", 1, "e5"),
        ("max_steps", "(none)", 1, "e2"),
        ("timeout", "timeout", 1, "e7"),
    ]
    first = rows(con, "failure_causes")[0]
    assert first["share_of_episodes"] == 0.25
    assert first["example_message"] == "replica unreachable: connection reset"
    assert rows(con, "failure_causes", message_chars=7)[0]["example_message"] == "replica"


def test_host_faults(con: duckdb.DuckDBPyConnection) -> None:
    got = rows(con, "host_faults")
    assert [r["host"] for r in got] == ["h3", "h2", "(unknown)", "h1"]
    h = by(got, "host")
    assert h["h2"] == pytest.approx({
        "host": "h2", "episodes": 3, "attempts": 7, "retried_episodes": 3, "retry_rate": 1.0,
        "replica_faults": 1, "faulted_attempts": 5, "fault_rate": 5 / 7})
    assert (h["h3"]["attempts"], h["h3"]["faulted_attempts"], h["h3"]["fault_rate"]) == (3, 3, 1.0)
    assert (h["h1"]["episodes"], h["h1"]["retry_rate"], h["h1"]["fault_rate"]) == (3, 0.0, 0.0)
    assert h["(unknown)"]["episodes"] == 1


def test_latency_percentiles(con: duckdb.DuckDBPyConnection) -> None:
    m = by(rows(con, "latency_percentiles"), "metric")
    assert list(m) == ["steps_per_episode", "episode_wall_s", "episode_replica_s", "step_policy_ms", "step_env_ms"]
    # steps per episode sorted: 0 1 2 3 3 3 3 4 (linear interpolation between order statistics)
    assert m["steps_per_episode"] == pytest.approx(
        {"metric": "steps_per_episode", "n": 8, "p50": 3.0, "p90": 3.3, "p99": 3.93, "mean": 2.375, "max": 4.0})
    # wall seconds sorted: 5 10 15 20 30 40 60 90
    assert (m["episode_wall_s"]["p50"], m["episode_wall_s"]["p90"]) == pytest.approx((25.0, 69.0))
    assert m["episode_wall_s"]["p99"] == pytest.approx(87.9)
    assert (m["episode_replica_s"]["p50"], m["episode_replica_s"]["mean"]) == pytest.approx((32.5, 40.625))
    # policy_ms over 19 steps: 100 x7, 200 x6, 300 x5, 400 x1
    assert m["step_policy_ms"] == pytest.approx(
        {"metric": "step_policy_ms", "n": 19, "p50": 200.0, "p90": 300.0, "p99": 382.0, "mean": 200.0, "max": 400.0})
    assert m["step_env_ms"]["p99"] == pytest.approx(38.2)


def test_frame_stats_decodes_only_small_candidates(con: duckdb.DuckDBPyConnection,
                                                    data: types.SimpleNamespace) -> None:
    stats = frames.frame_stats(con)
    assert stats == {"checked": 3, "blank": 2, "undecodable": 0}  # B, BJ and NB; noise frames are too big
    blank = {r[0] for r in con.sql("SELECT screenshot_sha256 FROM frame_stats WHERE blank").fetchall()}
    assert blank == {data.sha("B"), data.sha("BJ")}
    assert frames.frame_stats(con) == stats  # cached per connection
    assert frames.frame_stats(con, max_bytes_per_pixel=10, refresh=True)["checked"] == 13


def test_quality_by_episode(con: duckdb.DuckDBPyConnection) -> None:
    q = by(rows(con, "quality_by_episode"), "episode_id")
    flags = {e: (r["steps"], r["blank_frames"], r["duplicate_frames"], r["noop_actions"], r["stuck"])
             for e, r in q.items()}
    assert flags == {
        "e1": (3, 0, 0, 0, False),
        "e2": (4, 0, 2, 1, False),  # WAIT on an unchanged frame is not a no-op; MOVE_TO is
        "e3": (2, 2, 1, 1, True),
        "e4": (3, 1, 0, 0, False),
        "e5": (3, 1, 0, 0, False),  # the zero-size frame is blank, the one-dark-pixel frame is not
        "e6": (0, 0, 0, 0, False),
        "e7": (3, 1, 1, 1, False),
        "e8": (1, 0, 0, 0, False),
    }
    assert q["e3"]["distinct_frames"] == 1
    assert by(rows(con, "quality_by_episode", stuck_min_steps=3), "episode_id")["e3"]["stuck"] is False


def test_quality_flags(con: duckdb.DuckDBPyConnection) -> None:
    got = {r["flag"]: (r["steps"], r["episodes"]) for r in rows(con, "quality_flags")}
    assert got == {"blank_frame": (5, 4), "duplicate_frame": (4, 3), "noop_action": (3, 3), "stuck_episode": (2, 1)}
    shares = by(rows(con, "quality_flags"), "flag")["blank_frame"]
    assert (shares["step_share"], shares["episode_share"]) == pytest.approx((5 / 19, 0.5))


def test_cost(con: duckdb.DuckDBPyConnection) -> None:
    (row,) = rows(con, "cost", usd_per_replica_s=0.0001)
    assert row == pytest.approx({
        "episodes": 8, "successes": 2, "replica_hours": 325 / 3600, "compute_usd": 0.0325, "tokens_usd": 0.0,
        "storage_usd": 0.0, "total_usd": 0.0325,
        "usd_per_episode": 0.0325 / 8, "usd_per_success": 0.0325 / 2, "usd_per_replica_day": 8.64,
        "episodes_per_replica_day": 86400 / (325 / 8), "recorded_usd": 325 * 0.0002})


def test_query_errors(con: duckdb.DuckDBPyConnection) -> None:
    with pytest.raises(ConfigError, match="expected one of .*success_by_task.*actual 'nope'"):
        analytics.query(con, "nope")
    with pytest.raises(ConfigError, match="actual '_step_flags'"):
        analytics.query(con, "_step_flags")
    with pytest.raises(ConfigError, match="missing required parameter.*usd_per_replica_s"):
        analytics.query(con, "cost")
    with pytest.raises(ConfigError, match="unknown.*'bogus'"):
        analytics.query(con, "success_by_task", bogus=1)


def test_connect_opens_through_the_store(dataset_root: Path) -> None:
    with analytics.connect(str(dataset_root), "demo") as c:
        assert analytics.summary(c)["episodes"] == 8
        assert c.sql("SELECT value FROM osgym_meta WHERE key = 'route'").fetchall() == [("parquet",)]


def test_routes_agree(view: Any) -> None:
    with analytics.connect_view(view, route="parquet") as a, analytics.connect_view(view, route="arrow") as b:
        for name in analytics.list_queries():
            params = {"usd_per_replica_s": 1e-4} if name == "cost" else {}
            assert analytics.query(a, name, **params) == analytics.query(b, name, **params), name


def test_route_errors(view: Any) -> None:
    with pytest.raises(ConfigError, match="route"):
        analytics.connect_view(view, route="httpfs")
    remote = types.SimpleNamespace(files={"episodes": ["s3://b/x.parquet"], "steps": []}, filesystem=None,
                                   episodes=None, steps=None)
    with pytest.raises(ConfigError, match="needs local files"):
        analytics.connect_view(remote, route="parquet")


def test_empty_dataset(tmp_path: Path, data: types.SimpleNamespace) -> None:
    empty = data.FixtureView(root=str(tmp_path), manifests=[], files={"episodes": [], "steps": []})
    with analytics.connect_view(empty) as c:
        assert analytics.summary(c) == {
            "runs": 0, "tasks": 0, "episodes": 0, "successes": 0, "success_rate": None, "steps": 0,
            "steps_per_episode": None, "episode_s": None, "replica_s": None}
        for name in analytics.list_queries():
            analytics.query(c, name, **({"usd_per_replica_s": 1.0} if name == "cost" else {}))
        assert rows(c, "latency_percentiles")[0]["n"] == 0


def test_missing_columns_read_as_null(tmp_path: Path, data: types.SimpleNamespace) -> None:
    """An older shard without a column still opens; the column reads as NULL (union_by_name)."""
    old_schema = pa.schema([f for f in EPISODES if f.name != "cost_usd"])
    ep, steps = data.episode_rows("e1", "r1")
    del ep["cost_usd"]
    v = data.write_view(tmp_path, {"episodes": [[ep]], "steps": [steps]}, {"episodes": old_schema})
    for route in ("parquet", "arrow"):
        with analytics.connect_view(v, route=route) as c:
            assert c.sql("SELECT episode_id, cost_usd FROM episodes").fetchall() == [("e1", None)]


def test_undecodable_small_frame_is_reported_not_blank(tmp_path: Path, data: types.SimpleNamespace) -> None:
    ep, steps = data.episode_rows("e8", "r1")
    garbage = b"\x89PNG\r\n\x1a\nnot really"
    steps[0]["screenshot"] = {"bytes": garbage, "path": "e8/0000.png"}
    steps[0]["screenshot_sha256"] = hashlib.sha256(garbage).hexdigest()
    v = data.write_view(tmp_path, {"episodes": [[ep]], "steps": [steps]})
    with analytics.connect_view(v) as c:
        assert frames.frame_stats(c) == {"checked": 1, "blank": 0, "undecodable": 1}
        assert rows(c, "quality_flags")[0]["steps"] == 0
        (err,) = c.sql("SELECT error FROM frame_stats").fetchall()[0]
        assert err.startswith(("UnidentifiedImageError", "OSError", "SyntaxError", "ValueError"))


def _encode(im: Image.Image, fmt: str, **kw: Any) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def test_is_blank_image() -> None:
    plain = Image.new("RGB", (32, 16), (1, 2, 3))
    assert frames.is_blank_image(_encode(plain, "PNG"))
    assert frames.is_blank_image(_encode(plain, "JPEG", quality=80))
    assert frames.is_blank_image(_encode(plain.convert("P", palette=Image.Palette.ADAPTIVE), "PNG"))
    assert frames.is_blank_image(_encode(Image.new("L", (8, 8), 0), "PNG"))
    dot = plain.copy()
    dot.putpixel((3, 3), (9, 2, 3))
    assert not frames.is_blank_image(_encode(dot, "PNG"))
    assert frames.is_blank_image(_encode(dot, "PNG"), tolerance=8)


def test_s3_route_with_registered_arrow_datasets(dataset_root: Path, data: types.SimpleNamespace) -> None:
    """The arrow route over a real S3 server (SeaweedFS, as the store tests start it) via pyarrow's
    S3FileSystem; no httpfs."""
    import pyarrow.dataset as pads
    import pyarrow.fs as pafs

    from osgym.dataset.schema import STEPS

    with running_seaweed("osgym-weed-arrow-") as server:
        client: Any = server.client()
        local = data.open_fixture_view(dataset_root, "demo")
        files: dict[str, list[str]] = {"episodes": [], "steps": []}
        for table, paths in local.files.items():
            for p in paths:
                key = "root/demo/" + Path(p).relative_to(dataset_root / "demo").as_posix()
                client.put_object(Bucket=BUCKET, Key=key, Body=Path(p).read_bytes())
                files[table].append(f"s3://{BUCKET}/{key}")
        host, _, port = server.endpoint.removeprefix("http://").partition(":")
        fs = pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, endpoint_override=f"{host}:{port}",
                               scheme="http", region="us-east-1")

        def ds(table: str, schema: pa.Schema) -> pads.Dataset:
            return pads.dataset([f.removeprefix("s3://") for f in files[table]], schema=schema, format="parquet",
                                filesystem=fs)

        remote = types.SimpleNamespace(files=files, filesystem=fs, episodes=ds("episodes", EPISODES),
                                       steps=ds("steps", STEPS))
        with analytics.connect_view(remote) as c:
            assert c.sql("SELECT value FROM osgym_meta WHERE key = 'route'").fetchall() == [("arrow",)]
            assert analytics.summary(c)["episodes"] == 8
            assert {r["flag"]: r["episodes"] for r in rows(c, "quality_flags")}["blank_frame"] == 4
