"""The dataset store against both backends: a local directory and a real S3 server."""

from __future__ import annotations

import hashlib
import io
import json
import re
import threading
from collections import Counter
from pathlib import Path

import duckdb
import pyarrow.dataset as pads
import pyarrow.parquet as pq
import pytest
from PIL import Image
from store_support import StoreTarget
from store_synth import POLICIES, make_episode

from osgym.dataset import DatasetWriter, Manifest, open_dataset
from osgym.dataset.schema import EPISODES, STEPS
from osgym.errors import StoreError

SMALL_SHARD = 24 * 1024  # a few episodes per shard, so every test crosses shard boundaries


def write_run(target: StoreTarget, dataset: str, run_id: str, indices: range, **kw: object) -> Manifest:
    with DatasetWriter(target.uri, dataset, run_id, s3=target.s3, shard_max_bytes=SMALL_SHARD, **kw) as w:  # type: ignore[arg-type]
        for i in indices:
            w.add(make_episode(run_id, i))
    return w.finalize()


def visible_files(files: list[str]) -> list[str]:
    return [f for f in files if not Path(f).name.startswith(".")]


def test_run_commits_paired_shards_and_a_manifest(target: StoreTarget) -> None:
    episodes = [make_episode("r1", i) for i in range(25)]
    with DatasetWriter(target.uri, "ds", "r1", s3=target.s3, run_config={"seed": 7}, shard_max_bytes=SMALL_SHARD) as w:
        for ep in episodes:
            w.add(ep)
        assert w.bytes["steps"] > 0, "shards should roll over while the run is going"
        assert open_dataset(target.uri, "ds", s3=target.s3).manifests == [], "no manifest before finalize"
        assert open_dataset(target.uri, "ds", s3=target.s3).episodes.count_rows() == 0
    manifest = w.finalize()  # idempotent after __exit__
    n_steps = sum(len(e.trajectory.steps) for e in episodes)
    assert (manifest.episodes, manifest.steps) == (25, n_steps)
    assert manifest.config == {"seed": 7}
    assert w.rows == {"episodes": 25, "steps": n_steps} and w.episodes_written == 25
    assert len(manifest.tables["steps"]) >= 3

    view = open_dataset(target.uri, "ds", s3=target.s3)
    assert view.runs == ["r1"]
    assert view.episodes.count_rows() == 25 and view.steps.count_rows() == n_steps
    assert [f.name for f in view.episodes.schema] == EPISODES.names + ["run"]

    ep_paths = [e.path for e in manifest.tables["episodes"]]
    st_paths = [e.path for e in manifest.tables["steps"]]
    assert [p.replace("episodes/", "") for p in ep_paths] == [p.replace("steps/", "") for p in st_paths]
    for table in ("episodes", "steps"):
        for entry, full in zip(manifest.tables[table], view.files[table], strict=True):
            assert re.fullmatch(rf"{table}/run=r1/part-\d{{5}}\.parquet", entry.path)
            with view.filesystem.open_input_file(full) as f:
                data = f.read()
            assert (len(data), hashlib.sha256(data).hexdigest()) == (entry.bytes, entry.sha256)
            assert pq.read_metadata(io.BytesIO(data)).num_rows == entry.rows
    for ep_file, st_file in zip(view.files["episodes"], view.files["steps"], strict=True):
        with view.filesystem.open_input_file(ep_file) as f:
            ep_ids = set(pq.read_table(f, columns=["episode_id"]).column(0).to_pylist())
        with view.filesystem.open_input_file(st_file) as f:
            pf = pq.ParquetFile(f)
            assert pf.schema_arrow.remove_metadata().equals(STEPS.remove_metadata())
            assert pf.metadata.row_group(0).column(0).compression == "ZSTD"
            groups = [set(pf.read_row_group(g, columns=["episode_id"]).column(0).to_pylist())
                      for g in range(pf.num_row_groups)]  # fmt: skip
        assert all(len(g) == 1 for g in groups), "one episode per steps row group"
        with_steps = {e.episode_id for e in episodes if e.trajectory.steps}
        assert set().union(*groups) == ep_ids & with_steps, "a shard pair holds the same episodes"
    assert visible_files(target.dataset_files("ds")) == target.dataset_files("ds"), "no temporary files left"


def test_a_shard_closes_after_shard_max_episodes(target: StoreTarget) -> None:
    # Large byte limit: only the episode cap can roll shards over here.
    with DatasetWriter(target.uri, "ds", "cap", s3=target.s3, shard_max_episodes=4) as w:
        for i in range(10):
            w.add(make_episode("cap", i))
    manifest = w.finalize()
    assert [e.rows for e in manifest.tables["episodes"]] == [4, 4, 2]
    for entry in manifest.tables["steps"]:
        assert entry.rows > 0
    assert open_dataset(target.uri, "ds", s3=target.s3).episodes.count_rows() == 10


def test_screenshots_read_back_as_images_with_pyarrow_and_duckdb(target: StoreTarget) -> None:
    episodes = [make_episode("img", i) for i in range(12)]
    with DatasetWriter(target.uri, "ds", "img", s3=target.s3, shard_max_bytes=SMALL_SHARD) as w:
        for ep in episodes:
            w.add(ep)
    expected = {(e.episode_id, s.step): s for e in episodes for s in e.trajectory.steps}
    view = open_dataset(target.uri, "ds", s3=target.s3)

    rows = view.steps.to_table(columns=["episode_id", "step", "screenshot", "screenshot_sha256", "width", "height"])
    con = duckdb.connect()
    con.register("steps", view.steps)
    db_rows = con.sql(
        "SELECT episode_id, step, screenshot.bytes, screenshot.path, screenshot_sha256, width, height FROM steps"
    ).fetchall()
    assert len(db_rows) == rows.num_rows == len(expected)
    for source, records in (
        ("pyarrow", [(r["episode_id"], r["step"], r["screenshot"]["bytes"], r["screenshot"]["path"],
                      r["screenshot_sha256"], r["width"], r["height"]) for r in rows.to_pylist()]),
        ("duckdb", db_rows),
    ):  # fmt: skip
        for eid, step, data, path, sha, width, height in records:
            img = Image.open(io.BytesIO(data))
            img.load()
            original = expected[(eid, step)]
            assert img.format in ("PNG", "JPEG"), source
            assert img.size == (width, height) == (original.width, original.height), source
            assert hashlib.sha256(data).hexdigest() == sha == original.screenshot_sha256, source
            assert path.endswith(".png" if img.format == "PNG" else ".jpeg"), source


def test_crashed_run_is_invisible_and_resumes_each_episode_once(target: StoreTarget) -> None:
    write_run(target, "ds", "done-run", range(5))
    with pytest.raises(RuntimeError, match="collector died"):
        with DatasetWriter(target.uri, "ds", "r2", s3=target.s3, shard_max_bytes=SMALL_SHARD) as w:
            # 21, not a multiple of the episodes a SMALL_SHARD holds (10 at schema 2), so a shard is open at the crash
            for i in range(21):
                w.add(make_episode("r2", i))
            raise RuntimeError("collector died")
    assert w.state == "aborted"
    view = open_dataset(target.uri, "ds", s3=target.s3)
    assert view.runs == ["done-run"] and view.episodes.count_rows() == 5, "a crashed run is not committed"
    survivors = [f for f in target.dataset_files("ds") if f.startswith("steps/run=r2/")]
    assert survivors and visible_files(survivors) == survivors

    # leftovers of a crash in the middle of a commit: an unpaired steps shard, and (locally) a staged file
    target.put("ds", "steps/run=r2/part-00042.parquet", b"not parquet, and unpaired")
    if target.kind == "local":
        target.put("ds", "episodes/run=r2/.part-00043.parquet.incomplete", b"half a shard")

    w2 = DatasetWriter(target.uri, "ds", "r2", s3=target.s3, shard_max_bytes=SMALL_SHARD)
    committed = w2.committed_episode_ids()
    assert 0 < len(committed) < 21
    assert "steps/run=r2/part-00042.parquet" not in target.dataset_files("ds")
    for i in range(30):  # the collector resubmits everything; the writer skips what is committed
        w2.add(make_episode("r2", i))
    manifest = w2.finalize()
    assert w2.episodes_written == 30 - len(committed)
    numbers = [int(e.path[-13:-8]) for e in manifest.tables["steps"]]
    assert numbers == sorted(set(numbers)) and max(numbers) > 42, "new shards are numbered after old ones"

    view = open_dataset(target.uri, "ds", s3=target.s3)
    assert view.runs == ["done-run", "r2"]
    ids = view.episodes.to_table(columns=["episode_id", "run_id"]).to_pylist()
    r2_ids = Counter(r["episode_id"] for r in ids if r["run_id"] == "r2")
    assert len(r2_ids) == 30 and set(r2_ids.values()) == {1}
    expected_steps = sum(len(make_episode("r2", i).trajectory.steps) for i in range(30))
    assert manifest.steps == expected_steps
    assert view.steps.count_rows(filter=pads.field("run") == "r2") == expected_steps
    con = duckdb.connect()
    con.register("steps", view.steps)
    assert con.execute(
        "SELECT count(*), count(DISTINCT (episode_id, step)) FROM steps WHERE run = 'r2'"
    ).fetchone() == (
        expected_steps,
        expected_steps,
    )
    assert visible_files(target.dataset_files("ds")) == target.dataset_files("ds")


def test_duplicate_episode_is_written_once(target: StoreTarget) -> None:
    with DatasetWriter(target.uri, "ds", "dup", s3=target.s3) as w:
        w.add(make_episode("dup", 1))
        w.add(make_episode("dup", 1))
        w.add(make_episode("dup", 2))
    assert w.episodes_written == 2
    assert open_dataset(target.uri, "ds", s3=target.s3).episodes.count_rows() == 2


def test_rerunning_a_finished_run_keeps_its_shards(target: StoreTarget) -> None:
    first = write_run(target, "ds", "again", range(8))
    with DatasetWriter(target.uri, "ds", "again", s3=target.s3) as w:
        assert len(w.committed_episode_ids()) == 8
        for i in range(10):
            w.add(make_episode("again", i))
    second = w.finalize()
    assert second.episodes == 10
    assert {e.path for e in first.tables["steps"]} < {e.path for e in second.tables["steps"]}
    assert open_dataset(target.uri, "ds", s3=target.s3).episodes.count_rows() == 10


def test_invalid_episodes_raise_readable_errors_and_the_writer_goes_on(target: StoreTarget) -> None:
    with DatasetWriter(target.uri, "ds", "val", s3=target.s3) as w:
        bad = make_episode("val", 1, steps=2)
        bad.trajectory.steps[1].step = 5
        with pytest.raises(ValueError, match="step numbers must run 0..n-1"):
            w.add(bad)
        with pytest.raises(ValueError, match="run_id: expected 'val'.*actual 'other'"):
            w.add(make_episode("other", 2))
        wide = make_episode("val", 3, steps=1)
        wide.trajectory.steps[0].width = 2**40
        with pytest.raises(ValueError, match="does not fit the dataset schema"):
            w.add(wide)
        w.add(make_episode("val", 4))
    assert w.finalize().episodes == 1
    with pytest.raises(StoreError, match="finalized; open a new DatasetWriter"):
        w.add(make_episode("val", 5))


def test_abort_discards_the_open_shard(target: StoreTarget) -> None:
    w = DatasetWriter(target.uri, "ds", "ab", s3=target.s3)
    w.add(make_episode("ab", 0))
    w.abort()
    w.abort()
    assert [f for f in target.dataset_files("ds") if "run=ab" in f] == []
    with pytest.raises(StoreError, match="aborted"):
        w.finalize()
    assert open_dataset(target.uri, "ds", s3=target.s3).manifests == []


def test_dataset_card_counts_runs_success_and_policies(target: StoreTarget) -> None:
    write_run(target, "ds", "c1", range(12))
    write_run(target, "ds", "c2", range(12, 18))
    view = open_dataset(target.uri, "ds", s3=target.s3)
    with view.filesystem.open_input_file(f"{view.root}/README.md") as f:
        card = f.read().decode()
    eps = [make_episode("c1", i) for i in range(12)] + [make_episode("c2", i) for i in range(12, 18)]
    ok = sum(e.trajectory.success for e in eps)
    steps = sum(len(e.trajectory.steps) for e in eps)
    assert f"**2 runs, 18 episodes, {steps} steps, success rate {100 * ok / 18:.1f}%**" in card
    assert "| c1 |" in card and "| c2 |" in card
    for policy in POLICIES:
        count = sum(e.policy == policy for e in eps)
        assert f"| {policy} | {count} | {100 * count / 18:.1f}% |" in card
    assert "| screenshot | `struct<bytes: binary, path: string>` |" in card
    assert card.startswith("---\n") and "config_name: steps" in card and 'dtype: "image"' in card


def test_runs_committed_at_once_all_reach_the_dataset_card(target: StoreTarget) -> None:
    # Each finalize rewrites the card; one that read the manifests before another run committed could
    # write last and leave the card a run short (5 of 20 tries of six runs at once, before the re-read).
    for trial in range(4):
        dataset = f"at-once-{trial}"
        writers = [DatasetWriter(target.uri, dataset, f"r{i}", s3=target.s3) for i in range(6)]
        for i, w in enumerate(writers):
            w.add(make_episode(f"r{i}", i))
        start = threading.Barrier(len(writers))

        def commit(w: DatasetWriter, start: threading.Barrier = start) -> None:
            start.wait(timeout=30)
            w.finalize()

        threads = [threading.Thread(target=commit, args=(w,)) for w in writers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        view = open_dataset(target.uri, dataset, s3=target.s3)
        assert sorted(view.runs) == [f"r{i}" for i in range(6)]
        with view.filesystem.open_input_file(f"{view.root}/README.md") as f:
            card = f.read().decode()
        assert "**6 runs, 6 episodes," in card, card[card.index("Computer-use"):][:200]


def test_export_jsonl_writes_agentnet_lines_and_image_files(target: StoreTarget, tmp_path: Path) -> None:
    episodes = [make_episode("ex", i) for i in range(12)]
    with DatasetWriter(target.uri, "ds", "ex", s3=target.s3, shard_max_bytes=SMALL_SHARD) as w:
        for ep in episodes:
            w.add(ep)
    from osgym.dataset import export_jsonl

    out = export_jsonl(target.uri, "ds", tmp_path / "export", s3=target.s3)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(lines) == 12
    by_id = {e.episode_id: e for e in episodes}
    for line in lines:
        ep = by_id[line["task_id"]]
        assert line["instruction"] == ep.instruction and line["task_completed"] == ep.trajectory.success
        assert line["osgym"]["task_id"] == ep.task_id and line["osgym"]["policy"] == ep.policy
        assert [s["index"] for s in line["traj"]] == list(range(len(ep.trajectory.steps)))
        for entry, step in zip(line["traj"], ep.trajectory.steps, strict=True):
            img = Image.open(tmp_path / "export" / "images" / entry["image"])
            assert img.size == (step.width, step.height)
            assert json.loads(entry["value"]["action"]) == step.action
            assert entry["value"]["thought"] == step.thought


def test_part_writers_share_a_run_and_merge_into_one_manifest(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from osgym.dataset import DatasetWriter, merge_parts, open_dataset

    root = str(tmp_path)
    ids = {0: [], 1: []}
    for part in (0, 1):
        with DatasetWriter(root, "ds", "run-x", part=f"s{part:03d}") as w:
            for i in range(part, 6, 2):
                ep = make_episode("run-x", i)
                ids[part].append(ep.episode_id)
                w.add(ep)
        assert open_dataset(root, "ds").episodes.count_rows() == 0  # parts alone are not committed
    with pytest.raises(StoreError, match="expected 3 part manifests"):
        merge_parts(root, "ds", "run-x", expected_parts=3)
    m = merge_parts(root, "ds", "run-x", expected_parts=2)
    assert m.episodes == 6 and len(m.tables["episodes"]) == 2
    view = open_dataset(root, "ds")
    got = sorted(view.episodes.to_table(columns=["episode_id"]).column("episode_id").to_pylist())
    assert got == sorted(ids[0] + ids[1])
    # a resumed part writer only adopts its own shards
    w = DatasetWriter(root, "ds", "run-x", part="s001")
    assert w.committed_episode_ids() == set(ids[1])
    w.abort()


def test_list_datasets_names_those_with_a_committed_run(target: StoreTarget) -> None:
    from osgym.dataset import list_datasets

    assert list_datasets(target.uri, s3=target.s3) == []
    write_run(target, "b-ds", "r1", range(2))
    write_run(target, "a-ds", "r1", range(1))
    target.put("crashed", "episodes/run=r1/part-00000.parquet", b"no manifest: not a dataset yet")
    assert list_datasets(target.uri, s3=target.s3) == ["a-ds", "b-ds"]
