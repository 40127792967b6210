"""A killed S3 run's local staging files (``$TMPDIR/osgym-shards-*``) do not accumulate.

A writer of an S3 store builds its open shard in a local temporary directory and uploads it whole. A
process SIGKILLed with a shard open never removes that directory; the next writer on the machine (a
resume of the run, or any other run) reclaims it, and leaves alone those of writers that are alive.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from store_support import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3
from store_synth import make_episode

from osgym.dataset import DatasetWriter

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# a writer with its first shard open (one episode staged, not committed), then nothing until it is killed
_HOLD_A_SHARD = """
import sys, time
from osgym.dataset import DatasetWriter
from store_synth import make_episode
w = DatasetWriter(sys.argv[1], "ds", sys.argv[2], shard_max_age_s=None)
w.add(make_episode(sys.argv[2], 0, steps=3))
print("staged", flush=True)
time.sleep(600)
"""


@pytest.fixture
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temporary directory of this test's own, for this process and its children."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    yield tmp


def _holder(store: str, run_id: str, server: SeaweedS3) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}", "AWS_ENDPOINT_URL_S3": server.endpoint,
           "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    proc = subprocess.Popen([sys.executable, "-c", _HOLD_A_SHARD, store, run_id], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # bounded: the child exits (EOF) if it fails
    assert line == "staged\n", f"the writer did not stage a shard: {line!r} {proc.stderr.read() if proc.stderr else ''}"
    return proc


def _staging(tmp: Path) -> set[str]:
    return {p.name for p in tmp.glob("osgym-shards-*")}


def test_a_killed_writers_staging_files_are_reclaimed_by_the_next_writer(seaweed: SeaweedS3, tmpdir_env: Path) -> None:
    store = f"s3://{BUCKET}/reclaim-{uuid.uuid4().hex[:12]}"
    killed = _holder(store, "killed", seaweed)
    alive = _holder(store, "alive", seaweed)
    try:
        staged = _staging(tmpdir_env)
        assert len(staged) == 2, f"each writer stages its open shard locally: {staged}"
        assert any(f.stat().st_size for d in tmpdir_env.glob("osgym-shards-*") for f in d.iterdir())
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert _staging(tmpdir_env) == staged, "SIGKILL leaves the open shard's staging files behind"

        resumed = DatasetWriter(store, "ds", "killed", s3=seaweed.options())  # the killed run's resume
        left = _staging(tmpdir_env)
        assert len(left) == 1 and left < staged, f"the dead writer's staging directory is reclaimed: {left}"
        resumed.add(make_episode("killed", 0, steps=2))
        assert resumed.finalize().episodes == 1
        assert _staging(tmpdir_env) == left, "the live writer's staging directory is left alone"
        assert alive.poll() is None
    finally:
        for proc in (killed, alive):
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=30)
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
    deadline = time.monotonic() + 10
    DatasetWriter(store, "ds", "after", s3=seaweed.options()).abort()  # any later writer reclaims the other one
    while _staging(tmpdir_env):
        assert time.monotonic() < deadline, f"a dead writer's staging directory stayed: {_staging(tmpdir_env)}"
        time.sleep(0.1)
