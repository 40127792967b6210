"""A collect run killed with SIGKILL keeps what it committed, and its re-run skips exactly that.

``osgym collect`` runs in its own process group with a 1 s shard age bound
(``shard_max_age_s``), so finished episodes reach the store while it runs. Once
some have, the whole group is SIGKILLed: no ``finally``, no manifest. The test
then reads the store itself (complete shard pairs only, as a resume must), removes
the killed run's replicas, re-runs the same ``--run-id`` and checks that the
re-run skipped exactly the committed episodes and that the dataset holds every
requested episode once. Against a local directory and against S3 (SeaweedFS),
whose commit path differs (an upload, not a rename).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import docker
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from store_support import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3

from osgym.collection.collector import plan_jobs
from osgym.collection.recipe import load_recipe
from osgym.dataset import open_dataset
from osgym.dataset.layout import SHARD_RE, run_dir
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, reap
from osgym.storage import open_backend

ROOT = Path(__file__).resolve().parents[2]
EPISODES = 16
RUN_ID = "crash-run"
DATASET = "crashed"
WAIT_S = 300  # for the first committed episodes (replica starts included), on a loaded machine


def _committed_ids(store: str) -> set[str]:
    """Episode ids in complete shard pairs of the run, read straight from the store (no writer)."""
    backend = open_backend(store, DATASET)
    names = {t: {n for n in backend.list(run_dir(t, RUN_ID)) if SHARD_RE.match(n)} for t in ("episodes", "steps")}
    ids: set[str] = set()
    for name in sorted(names["episodes"] & names["steps"]):
        data = backend.read(f"{run_dir('episodes', RUN_ID)}/{name}")
        ids.update(pq.read_table(pa.BufferReader(data), columns=["episode_id"]).column("episode_id").to_pylist())
    return ids


def _pools_of(client: docker.DockerClient, pid: int) -> set[str]:
    return {c["Labels"][POOL_LABEL] for c in client.api.containers(all=True, filters={"label": POOL_LABEL})
            if (c["Labels"].get(OWNER_LABEL) or "").split(":")[1:2] == [str(pid)]}


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["local", "s3"])
def test_a_killed_collect_keeps_its_committed_episodes_and_the_rerun_skips_them(  # type: ignore[no-untyped-def]
        kind: str, image: str, docker_client, tmp_path: Path, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    staging = tmp_path / "tmp"  # where an S3 run stages its open shard ($TMPDIR/osgym-shards-*)
    staging.mkdir(mode=0o700)
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
           "PREFECT_HOME": str(tmp_path / "prefect"), "COLUMNS": "400", "PYTHONPATH": str(ROOT),
           "TMPDIR": str(staging)}
    if kind == "local":
        store = str(tmp_path / "data")
    else:
        server: SeaweedS3 = request.getfixturevalue("seaweed")
        store = f"s3://{BUCKET}/crash-{uuid.uuid4().hex[:12]}"
        # the CLI takes its S3 endpoint and keys from the standard AWS variables, as an operator's would
        aws = {"AWS_ENDPOINT_URL_S3": server.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
               "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
        env.update(aws)
        for k, v in aws.items():  # for this process's own reads of the store
            monkeypatch.setenv(k, v)
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump({
        "name": DATASET, "episodes": EPISODES, "replicas": 2, "standby": 1, "screen": [800, 600], "image": image,
        "max_steps": 10, "settle_s": 0.2, "store": store, "shard_max_age_s": 1}))
    planned = {j.episode_id for j in plan_jobs(load_recipe(recipe), RUN_ID)}
    cmd = [sys.executable, "-m", "osgym", "collect", str(recipe), "--run-id", RUN_ID, "--no-report"]

    log = tmp_path / "first.log"  # a file, not a pipe: a full pipe would stall the run
    with open(log, "wb") as out:
        first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=out,
                                 start_new_session=True)
    pools: set[str] = set()
    try:
        deadline = time.monotonic() + WAIT_S
        while len(_committed_ids(store)) < 3:  # killed only once a few episodes are committed
            assert first.poll() is None, f"the run ended before it was killed: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "no episode was committed while the run was going on"
            pools |= _pools_of(docker_client, first.pid)
            time.sleep(0.2)
        pools |= _pools_of(docker_client, first.pid)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        committed = _committed_ids(store)  # what a shard the kill may have interrupted did not add to
        left_staged = sorted(p.name for p in staging.glob("osgym-shards-*"))
        assert 0 < len(committed) < EPISODES, f"{len(committed)} of {EPISODES} committed: kill it earlier"
        assert committed <= planned
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
        for name in pools | _pools_of(docker_client, first.pid):  # the killed run's replicas, and only those
            reap(docker_client, pool=name)

    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    m = re.search(r"run (\S+): (\d+) episodes written \((\d+) already committed\)", second.stdout)
    assert m is not None, second.stdout[-3000:]
    assert m.group(1) == RUN_ID
    written, skipped = int(m.group(2)), int(m.group(3))
    print(f"\n{kind}: {len(committed)} of {EPISODES} episodes committed before SIGKILL; the re-run skipped "
          f"{skipped} and wrote {written}")
    assert skipped == len(committed), "the re-run must skip exactly the episodes committed before the kill"
    print(f"{kind}: staging directories the kill left: {left_staged}")
    assert not list(staging.glob("osgym-shards-*")), "the re-run reclaims the killed run's staging files"
    assert written == EPISODES - skipped

    ids = Counter(open_dataset(store, DATASET).episodes.to_table(columns=["episode_id"]).column("episode_id")
                  .to_pylist())
    assert set(ids) == planned and set(ids.values()) == {1}, "every requested episode exactly once"
