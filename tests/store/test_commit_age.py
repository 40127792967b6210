"""Shards commit on a time bound too: finished episodes reach the store while a slow run goes on."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from store_support import StoreTarget
from store_synth import make_episode

from osgym.dataset import DatasetWriter, open_dataset


def _committed(target: StoreTarget, run_id: str) -> list[str]:
    """The run's visible episodes shards (a staged ``.part-…incomplete`` file is not one)."""
    return [f for f in target.dataset_files("ds")
            if f.startswith(f"episodes/run={run_id}/") and not Path(f).name.startswith(".")]


def test_an_idle_writer_commits_its_open_shard_after_shard_max_age_s(target: StoreTarget) -> None:
    w = DatasetWriter(target.uri, "ds", "aged", s3=target.s3, shard_max_age_s=1.0)
    for i in range(3):
        w.add(make_episode("aged", i))
    assert _committed(target, "aged") == [], "a shard is not committed before its age bound"
    deadline = time.monotonic() + 20
    while not _committed(target, "aged"):  # no further add(): the timer alone commits it
        assert time.monotonic() < deadline, "the open shard was never committed on its age bound"
        time.sleep(0.05)
    w.add(make_episode("aged", 3))  # the writer goes on, into a new shard
    w.abort()  # and dies with it open: no finalize, no manifest, episode 3 lost

    resumed = DatasetWriter(target.uri, "ds", "aged", s3=target.s3)
    assert resumed.committed_episode_ids() == {make_episode("aged", i).episode_id for i in range(3)}
    for i in range(5):
        resumed.add(make_episode("aged", i))
    assert resumed.finalize().episodes == 5
    assert resumed.episodes_written == 2
    assert open_dataset(target.uri, "ds", s3=target.s3).episodes.count_rows() == 5


def test_finalize_and_abort_stop_the_age_timer(target: StoreTarget) -> None:
    with DatasetWriter(target.uri, "ds", "quick", s3=target.s3, shard_max_age_s=0.3) as w:
        w.add(make_episode("quick", 0))
    aborted = DatasetWriter(target.uri, "ds", "dropped", s3=target.s3, shard_max_age_s=0.3)
    aborted.add(make_episode("dropped", 0))
    aborted.abort()
    time.sleep(0.6)  # past both bounds: a timer that still fired would commit a second or a discarded shard
    assert len(_committed(target, "quick")) == 1
    assert _committed(target, "dropped") == []


@pytest.mark.parametrize("bad", [0, -1.0])
def test_shard_max_age_s_must_be_positive(tmp_path, bad: float) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="shard_max_age_s: expected > 0"):
        DatasetWriter(tmp_path, "ds", "r", shard_max_age_s=bad)
