"""Reset by restore (issue 41): a warmed replica checkpointed once and restored into new containers.

Runs on the shared second dockerd, which tests/conftest.py starts in experimental mode with osgym's CRIU
runtime once `make criu` has installed it; before test_two_hosts.py (alphabetical order), which kills that
daemon. The main daemon is never touched.
"""

from __future__ import annotations

import contextlib
import io
import os
import secrets
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import pytest
from PIL import Image, ImageChops

from osgym.errors import RequestRejected
from osgym.replicas.checkpoint import (
    CRIU_RUNTIME,
    RUNC_CRIU,
    Checkpoint,
    CheckpointError,
    check_daemon,
    make_checkpoint,
    remove_checkpoint,
    restore,
)
from osgym.replicas.client import Replica
from osgym.replicas.pool import ReplicaPool
from osgym.replicas.provision import SERVER_UID
from tests.conftest import TEST_SCREEN

WRAPPER = Path(__file__).resolve().parents[2] / "scripts" / "criu" / "runc-criu"
# where CRIU keeps its kernel cache: the wrapper's `kdat=`, which `make criu` builds CRIU with (RUNDIR)
KDAT_DIR = Path(next(ln.split("=", 1)[1] for ln in WRAPPER.read_text().splitlines() if ln.startswith("kdat=")))
CLONE_LABEL = "osgym.test.clone"
WARM_FILE = "/home/user/Documents/warm.txt"


@pytest.fixture
def criu_daemon(second_daemon) -> Iterator[docker.DockerClient]:  # type: ignore[no-untyped-def]
    if not RUNC_CRIU.exists():
        # a failure, not a skip: `make test` runs `make criu` first, and a skipped test would prove nothing
        pytest.fail(f"needs CRIU 4.2 and its runtime wrapper {RUNC_CRIU}: run `make criu` as root (make test does)")
    client = docker.DockerClient(base_url=second_daemon.url, timeout=120)
    check_daemon(client)
    yield client
    for c in client.containers.list(all=True, filters={"label": CLONE_LABEL}):
        with contextlib.suppress(docker.errors.APIError):
            c.remove(force=True)
    client.close()


def differs_only_in_clock(a: bytes, b: bytes) -> tuple[bool, object]:
    """Whether two screenshots are the same apart from at most one clock-sized box (the panel's clock)."""
    box = ImageChops.difference(Image.open(io.BytesIO(a)).convert("RGB"),
                                Image.open(io.BytesIO(b)).convert("RGB")).getbbox()
    return box is None or (box[2] - box[0] <= 200 and box[3] - box[1] <= 60), box


def merge_any(cid: str) -> dict[str, str]:
    """``ksm_merge_any`` of each process of container ``cid`` by its name (Linux 6.4+; empty before)."""
    flags = {}
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if proc.name.isdigit() and cid in (proc / "cgroup").read_text():
                stat = dict(ln.split(None, 1) for ln in (proc / "ksm_stat").read_text().splitlines())
                flags[(proc / "comm").read_text().strip()] = stat.get("ksm_merge_any:", "").strip()
    return flags


def clone(client: docker.DockerClient, cp: Checkpoint, run_root: Path) -> Replica:
    """Restore one clone with its own run directory and token, as the pool will."""
    rid = uuid.uuid4().hex[:10]
    rdir = run_root / rid
    rdir.mkdir(mode=0o700)
    os.chown(rdir, SERVER_UID, SERVER_UID)
    res = restore(client, cp, name=f"osgym-clone-{rid}", labels={CLONE_LABEL: rid}, run_dir=rdir)
    assert res.restore_s < 30, res
    r = Replica(rid, f"unix:{rdir}/control.sock", cp.token, container=client.containers.get(res.container_id),
                socket_owner=SERVER_UID)
    r.replace_token(secrets.token_urlsafe(24))
    return r


def test_clones_of_a_checkpoint_answer_look_like_it_and_share_nothing(  # type: ignore[no-untyped-def]
    criu_daemon, image, pool_name, tmp_path
) -> None:
    client = criu_daemon
    run_root = tmp_path / "run"
    run_root.mkdir()
    pool = ReplicaPool(image, 1, standby=0, name=pool_name, docker_client=client, runtime=CRIU_RUNTIME,
                       screen=TEST_SCREEN, start_timeout=90)
    cp: Checkpoint | None = None
    clones: list[Replica] = []
    try:
        pool.start()
        with pool.lease() as template:
            template.write_file(WARM_FILE, b"warm")
            before = template.screenshot().data
            merging = {name for name, v in merge_any(template.container.id).items() if v == "yes"}
            assert "Xvfb" in merging or not Path("/proc/self/ksm_stat").exists()  # Linux 6.4+
            token = template.api.headers["Authorization"].split()[1]  # what the pool gave it
            template.api.close()  # CRIU cannot dump a connection whose peer is on the host
            cp = make_checkpoint(client, template.container.id, tmp_path / "checkpoint", token)
        assert cp.size_bytes() > 1 << 20

        with ThreadPoolExecutor(2) as starts:  # at once, as a pool starts them: Docker uploads each to containerd
            futures = [starts.submit(clone, client, cp, run_root) for _ in range(2)]
        clones = [f.result() for f in futures]
        a, b = clones
        for r in clones:
            assert r.health()["status"] == "ok"
            with Replica("old", r.api.endpoint, cp.token, socket_owner=SERVER_UID) as old:
                with pytest.raises(RequestRejected, match="401"):
                    old.health()  # the template's token, which every clone started with, opens nothing
            same, box = differs_only_in_clock(before, r.screenshot().data)
            assert same, f"clone {r.id}'s screenshot differs from the template's in {box}"
            assert r.read_file(WARM_FILE) == b"warm"  # the template's home came with the checkpoint
            # KSM's opt-in, which CRIU does not restore, is given back by the runtime wrapper
            assert merging <= {name for name, v in merge_any(r.container.id).items() if v == "yes"}
        # CRIU kept what it learnt of the kernel where the wrapper looks after it, so later restores skip probing
        cache = KDAT_DIR / "criu.kdat"
        assert cache.is_file() and (cache.stat().st_uid, cache.stat().st_mode & 0o777) == (0, 0o600)
        assert (KDAT_DIR.stat().st_uid, KDAT_DIR.stat().st_mode & 0o777) == (0, 0o700)
        # Docker sees each clone as its own running container: its labels, and exec into it
        seen = {c.labels[CLONE_LABEL]: c.status for c in client.containers.list(filters={"label": CLONE_LABEL})}
        assert seen == {a.id: "running", b.id: "running"}
        out = client.api.exec_start(client.api.exec_create(b.container.id, ["cat", WARM_FILE], user="user")["Id"])
        assert out == b"warm"
        # each clone's cgroup mounts show its own cgroup, as a cold container's do: restored from another
        # process's cgroups, a clone saw every v1 hierarchy from its root and memory from the wrong cgroup
        for r in clones:
            def read(path: str, cid: str = r.container.id) -> str:
                return client.api.exec_start(client.api.exec_create(cid, ["cat", path])).decode()
            roots = {ln.split()[4]: ln.split()[3] for ln in read("/proc/self/mountinfo").splitlines()
                     if " - cgroup " in ln}
            own = {ln.split(":", 2)[2] for ln in read("/proc/1/cgroup").splitlines()}  # the host's paths
            assert len(own) == 1 and r.container.id in next(iter(own)), own
            assert roots and set(roots.values()) == own, roots

        a.write_file("/home/user/Documents/only-a.txt", b"a\n")
        a.execute("echo a-was-here > /tmp/only-a", shell=True)
        assert a.execute(["cat", "/home/user/Documents/only-a.txt", "/tmp/only-a"]).output.split() == \
            ["a", "a-was-here"]
        for path in ("/home/user/Documents/only-a.txt", "/tmp/only-a"):
            assert b.execute(["test", "-e", path]).returncode == 1, f"{path}, written in clone a, is in clone b"
    finally:
        for r in clones:
            r.close()
            with contextlib.suppress(docker.errors.APIError):
                r.container.remove(force=True)
        pool.close()
        if cp is not None:
            remove_checkpoint(client, cp)
        shutil.rmtree(run_root, ignore_errors=True)


@pytest.mark.parametrize("case", ["relative", "no-inventory", "world-writable", "group-writable", "not-roots"])
def test_the_runtime_wrapper_refuses_images_it_cannot_trust(tmp_path: Path, case: str) -> None:
    """The file in a clone's checkpoint redirects CRIU to other images only if they are a checkpoint in a
    directory only root can write; anything else stops the restore before runc starts."""
    images = tmp_path / "images"
    images.mkdir(mode=0o700)
    if case != "no-inventory":
        (images / "inventory.img").write_bytes(b"")
    if case.endswith("-writable"):
        images.chmod(0o777 if case == "world-writable" else 0o770)
    if case == "not-roots":
        os.chown(images, 1000, 1000)
    handed = tmp_path / "handed"
    handed.mkdir()
    (handed / "osgym-images").write_text("images" if case == "relative" else str(images))
    r = subprocess.run(["sh", str(WRAPPER), "--root", str(tmp_path / "root"), "restore", "--image-path", str(handed),
                        "--work-path", str(tmp_path / "work"), "clone"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    expected = "not an absolute path" if case == "relative" else "is not a checkpoint (inventory.img) in a directory"
    assert expected in r.stderr, r.stderr


@pytest.mark.parametrize("case", ["missing", "not-roots", "group-writable", "symlink"])
def test_the_runtime_wrapper_keeps_criu_s_kernel_cache_root_s_alone(tmp_path: Path, case: str) -> None:
    """CRIU reads its cache of the kernel's features from a directory compiled in, on a tmpfs anyone may write
    to (/dev/shm): the wrapper makes it root's with mode 0700 when it is missing and refuses to run CRIU when it is
    anyone else's, group-writable or a link. Run on a copy of the wrapper pointed at a directory of this test, so
    restores running meanwhile keep the real one."""
    kdat = tmp_path / "kdat"
    if case == "not-roots":
        kdat.mkdir(mode=0o700)
        os.chown(kdat, 1000, 1000)
    elif case == "group-writable":
        kdat.mkdir()
        kdat.chmod(0o770)
    elif case == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        kdat.symlink_to(tmp_path / "elsewhere")
    text = WRAPPER.read_text()
    assert f"kdat={KDAT_DIR}\n" in text
    wrapper = tmp_path / "runc-criu"
    wrapper.write_text(text.replace(f"kdat={KDAT_DIR}\n", f"kdat={kdat}\n"))
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "config.json").write_text("{}")
    r = subprocess.run(["sh", str(wrapper), "--root", str(tmp_path / "root"), "restore", "--image-path",
                        str(tmp_path / "images"), "--work-path", str(tmp_path / "work"), "--bundle",
                        str(tmp_path / "bundle"), "clone"], capture_output=True, text=True, timeout=30)
    refused = "where CRIU keeps its kernel cache, is not a directory of root's with mode 0700"
    if case == "missing":
        assert refused not in r.stderr, r.stderr  # made, and the wrapper went on (to fail later: no such runc)
        assert (kdat.stat().st_uid, kdat.stat().st_mode & 0o777) == (0, 0o700) and not kdat.is_symlink()
        assert r.returncode != 0
    else:
        assert r.returncode == 1 and refused in r.stderr, r.stderr


def test_a_restore_that_runs_past_its_bound_is_stopped_and_leaves_nothing(  # type: ignore[no-untyped-def]
    criu_daemon, image, pool_name, tmp_path
) -> None:
    """A checkpoint whose page files were emptied makes CRIU's restored tasks spin for minutes (seen here);
    the wrapper stops the restore at its bound, kills what CRIU had restored, and the clone is removed."""
    client = criu_daemon
    pool = ReplicaPool(image, 1, standby=0, name=pool_name, docker_client=client, runtime=CRIU_RUNTIME,
                       screen=TEST_SCREEN, start_timeout=90)
    cp: Checkpoint | None = None
    try:
        pool.start()
        with pool.lease() as template:
            token = template.api.headers["Authorization"].split()[1]
            template.api.close()
            cp = make_checkpoint(client, template.container.id, tmp_path / "checkpoint", token)
        damaged = tmp_path / "damaged"
        shutil.copytree(cp.directory, damaged / "checkpoint")
        emptied = list((damaged / "checkpoint").rglob("pages-*.img"))
        assert emptied
        for pages in emptied:
            pages.write_bytes(b"")
        broken = Checkpoint(damaged / "checkpoint", cp.image, cp.create, cp.token)
        run_dir = tmp_path / "clone"
        run_dir.mkdir(mode=0o700)
        os.chown(run_dir, SERVER_UID, SERVER_UID)
        name = f"osgym-clone-{uuid.uuid4().hex[:10]}"
        t0 = time.monotonic()
        with pytest.raises(CheckpointError, match=r"ran past its 3 s \(OSGYM_RESTORE_TIMEOUT_S\)"):
            restore(client, broken, name=name, labels={CLONE_LABEL: "damaged"}, run_dir=run_dir, time_limit_s=3)
        assert time.monotonic() - t0 < 30, "the bound (3 s, then 5 s to kill) held"
        assert not client.containers.list(all=True, filters={"name": name}), "the clone was removed"
        stray = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and _comm(p) == "criu"]
        assert not stray, f"CRIU processes left: {stray}"
    finally:
        pool.close()
        if cp is not None:
            remove_checkpoint(client, cp)


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return ""
