"""Reset by restore in the pool (issue 41): apps replicas restored from a checkpoint of a warmed one.

On the main daemon, which `make criu` puts in experimental mode with osgym's CRIU runtime (a failure, not a
skip, where it has not: a skipped test would prove nothing). Checkpoints go to this session's
``OSGYM_CHECKPOINT_DIR`` (tests/conftest.py), removed at its end.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from pathlib import Path

import docker
import duckdb
import pytest
from PIL import Image, ImageChops
from pydantic import ValidationError

from osgym.collection import load_recipe, run_collection
from osgym.errors import ConfigError, RequestRejected
from osgym.replicas.checkpoint import RUNC_CRIU, CheckpointError, check_daemon
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool
from osgym.replicas.provision import SERVER_UID
from osgym.replicas.restore import WARM_SCREENSHOT, RestoringProvisioner
from osgym.serving.server import ServeConfig
from osgym.settings import settings
from tests.conftest import TEST_SCREEN, remove_checkpoints
from tests.pool.pool_support import assert_loopback_only

HOME_FILE = "/home/user/Documents/episode-1.txt"
TMP_FILE = "/tmp/episode-1"


@pytest.fixture(scope="module")
def criu_main(docker_client: docker.DockerClient) -> docker.DockerClient:
    if not RUNC_CRIU.exists():
        pytest.fail(f"needs CRIU 4.2 and its runtime wrapper {RUNC_CRIU}: run `make criu` as root (make test does)")
    try:
        check_daemon(docker_client)
    except CheckpointError as exc:
        pytest.fail(f"{exc}: `make criu` registers both in /etc/docker/daemon.json and restarts an idle dockerd")
    return docker_client


@pytest.fixture
def restoring(image: str, criu_main: docker.DockerClient, pool_name: str) -> Iterator[ReplicaPool]:
    pool = ReplicaPool(image, 2, standby=0, name=pool_name, docker_client=criu_main, screen=TEST_SCREEN,
                       reset="restore", start_timeout=120)
    try:
        pool.start()
        yield pool
    finally:
        pool.close()


def events(pool: ReplicaPool, kind: str) -> list[str]:
    return [e.cause or "" for e in pool.events if e.event == kind]


def netns(client: docker.DockerClient, replica: Replica) -> int:
    assert replica.container is not None
    pid = client.api.inspect_container(replica.container.id)["State"]["Pid"]
    return os.stat(f"/proc/{pid}/ns/net").st_ino


def sh(replica: Replica, command: str) -> str:
    r = replica.execute(command, shell=True)
    assert r.returncode == 0, (command, r.output)
    return r.output.strip()


def test_an_episode_leaves_nothing_for_the_next_restored_replica(  # type: ignore[no-untyped-def]
    restoring, criu_main
) -> None:
    pool = restoring
    with pool.lease() as first, pool.lease() as other:  # two clones of one checkpoint at once
        assert netns(criu_main, first) != netns(criu_main, other) != os.stat("/proc/self/ns/net").st_ino
        assert_loopback_only(other)
        first.write_file(HOME_FILE, b"one\n")
        sh(first, f"echo one > {TMP_FILE}; printf one | xsel --clipboard --input")
        first.launch(["mousepad"])
        first.wait_window("Mousepad", timeout=60)
        assert sh(first, "xsel --clipboard --output") == "one"
        assert other.execute(["test", "-e", HOME_FILE]).returncode == 1
        assert sh(other, "xsel --clipboard --output || true") == ""
        seen = (first.id, first.container.id, first.api.endpoint)
    with pool.lease(timeout=120) as second:
        assert second.execute(["test", "-e", HOME_FILE]).returncode == 1
        assert second.execute(["test", "-e", TMP_FILE]).returncode == 1
        assert sh(second, "xsel --clipboard --output || true") == ""
        assert not [w.title for w in second.windows() if "mousepad" in (w.wm_class or "").lower()]
        mine = (second.id, second.container.id, second.api.endpoint)
        assert all(a != b for a, b in zip(seen, mine, strict=True)), (seen, mine)
        # the template's token, which every clone holds at first, was replaced before the lease
        # this pool's own checkpoint (other pools on the host keep theirs beside it), as its provisioner holds it
        assert isinstance(pool.provisioner, RestoringProvisioner)
        cp_dir = pool.provisioner.checkpoint(pool.hosts[0]).directory.parent
        assert cp_dir.parent == Path(settings().checkpoint_dir) and (cp_dir / "meta.json").is_file(), cp_dir
        with Replica("template", second.api.endpoint, (cp_dir / "token").read_text(),
                     socket_owner=SERVER_UID) as old:
            with pytest.raises(RequestRejected, match="401"):
                old.health()
        box = ImageChops.difference(Image.open(cp_dir / WARM_SCREENSHOT).convert("RGB"),
                                    Image.open(io.BytesIO(second.screenshot().data)).convert("RGB")).getbbox()
        assert box is None or (box[2] - box[0] <= 200 and box[3] - box[1] <= 60), f"differs from warm in {box}"
    assert len(events(pool, "checkpointed")) == 1
    assert events(pool, "created").count("restored") == pool.stats.started >= 3
    assert not events(pool, "restore_failed")


def test_a_failed_restore_starts_the_replica_cold_and_says_why(  # type: ignore[no-untyped-def]
    image, criu_main, pool_name, tmp_path, monkeypatch
) -> None:
    root = tmp_path / "checkpoints"
    monkeypatch.setenv("OSGYM_CHECKPOINT_DIR", str(root))
    try:
        with ReplicaPool(image, 1, standby=0, name=f"{pool_name}-a", docker_client=criu_main, screen=TEST_SCREEN,
                         reset="restore", start_timeout=120) as pool:
            with pool.lease():
                pass
            # the precondition: this pool made the checkpoint that the next one finds and fails to restore
            assert events(pool, "checkpointed") and not events(pool, "restore_failed"), pool.events
        trees = list(root.glob("*/checkpoint/warm/pstree.img"))
        assert len(trees) == 1, trees
        trees[0].unlink()  # which processes to restore: CRIU's restore must fail
        with ReplicaPool(image, 1, standby=0, name=f"{pool_name}-b", docker_client=criu_main, screen=TEST_SCREEN,
                         reset="restore", start_timeout=120) as pool:
            with pool.lease() as replica:
                assert replica.health()["status"] == "ok"
            failed = events(pool, "restore_failed")
            assert failed and all("CRIU's log" in cause for cause in failed), pool.events
            assert events(pool, "created")[0] != "restored" and pool.stats.restore_failures >= 1
    finally:
        remove_checkpoints(criu_main, root)


def test_the_oracle_scores_one_and_noop_zero_on_restored_replicas(  # type: ignore[no-untyped-def]
    tmp_path: Path, criu_main
) -> None:
    """sheet-save-csv: the warm state is LibreOffice resident (every task of the run is Calc's)."""
    store = tmp_path / "data"
    for policy, score in (("scripted", 1.0), ("noop", 0.0)):
        rec = load_recipe({"name": f"restore-{policy}", "suite": "apps-spreadsheet", "tasks": ["sheet-save-csv"],
                           "tier": "apps", "episodes": 2, "replicas": 1, "standby": 1, "reset": "restore",
                           "policy": {"name": policy}, "store": str(store), "max_steps": 20,
                           "episode_timeout_s": 240})
        out = run_collection(rec)
        assert out["episodes"] == 2 and out["errors"] == 0 and out["restore_failures"] == 0, out
        assert out["replicas_restored"] >= 2, out
        scores = duckdb.sql(f"select score from '{store}/restore-{policy}/episodes/*/*.parquet'").fetchall()
        assert sorted(s for (s,) in scores) == [score, score], (policy, scores)
        created = duckdb.sql(f"select cause from '{store}/restore-{policy}/pool_events/*/*.parquet' "
                             "where event = 'created'").fetchall()
        assert created and all(c == "restored" for (c,) in created), created


def test_restore_is_refused_where_a_pool_cannot_restore(image: str, docker_client: docker.DockerClient) -> None:
    for kw, expected in (({"compat": True}, "compat"), ({"transport": "tcp"}, "the tcp transport"),
                         ({"egress": True}, "a network")):
        with pytest.raises(ConfigError, match=expected):
            ReplicaPool(image, 1, docker_client=docker_client, reset="restore", **kw)
    with pytest.raises(ConfigError, match="reset: expected one of cold, restore"):
        ReplicaPool(image, 1, docker_client=docker_client, reset="warm")
    with pytest.raises(ConfigError, match="warm: expected one of"):
        ReplicaPool(image, 1, docker_client=docker_client, reset="restore", warm="chrome")
    with pytest.raises(ConfigError, match="warm: libreoffice needs the apps tier"):
        load_recipe({"name": "x", "episodes": 1, "reset": "restore", "warm": "libreoffice"})
    with pytest.raises(ConfigError, match="reset: restore starts container replicas"):
        load_recipe({"name": "x", "episodes": 1, "reset": "restore", "replica_kind": "hollow"})
    with pytest.raises(ValidationError, match="warm: libreoffice needs the apps tier"):
        ServeConfig(tier="desktop", reset="restore", warm="libreoffice")
    with pytest.raises(ValidationError, match="add --reset restore"):
        ServeConfig(tier="apps", warm="libreoffice")
    assert ServeConfig(tier="apps", reset="restore", warm="libreoffice").warm == "libreoffice"


def test_the_operators_default_restores_every_pool_that_can(  # type: ignore[no-untyped-def]
    image, criu_main, pool_name, monkeypatch
) -> None:
    monkeypatch.setenv("OSGYM_REPLICA_RESET", "restore")
    with ReplicaPool(image, 1, standby=0, name=pool_name, docker_client=criu_main, screen=TEST_SCREEN,
                     start_timeout=120) as pool:
        with pool.lease() as replica:
            assert replica.health()["status"] == "ok"
        assert pool.reset == "restore" and events(pool, "created")[0] == "restored", pool.events
    # a pool that cannot be restored (the tcp transport) starts cold rather than failing
    assert ReplicaPool(image, 1, docker_client=criu_main, transport="tcp").reset == "cold"
