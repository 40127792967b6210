"""``osgym pool list`` over two hosts (the main daemon and the second one) and one that does not answer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import docker

from osgym.replicas.hosts import DockerHost
from osgym.replicas.pool import ReplicaPool
from tests.conftest import TEST_SCREEN
from tests.second_daemon import SecondDaemon

ROOT = Path(__file__).resolve().parents[2]
MAIN = "unix:///var/run/docker.sock"
DOWN = "tcp://127.0.0.1:1"  # nothing listens on port 1: refused at once


def _list(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "osgym", "pool", "list", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "COLUMNS": "300"})


def test_one_command_lists_every_host_s_replicas_and_names_the_one_that_did_not_answer(
        second_daemon: SecondDaemon, image: str, make_pool: Callable[..., ReplicaPool], pool_name: str) -> None:
    run_id = f"fleet-{uuid.uuid4().hex[:6]}"
    main_pool = make_pool(1, run_id=run_id)
    client2 = docker.DockerClient(base_url=second_daemon.url, timeout=30)
    other = client2.containers.create(image, command="true", name=f"not-osgym-{uuid.uuid4().hex[:6]}")
    pool2 = ReplicaPool(image, 2, standby=0, name=f"{pool_name}-d2", screen=TEST_SCREEN, run_id=run_id,
                        hosts=[DockerHost(url=second_daemon.url, name="d2", client=client2, capacity=4)])
    try:
        pool2.start()
        held = pool2.acquire()
        try:
            out = _list("--host", MAIN, "--host", second_daemon.url, "--host", DOWN, "--replicas", "--timeout", "5")
        finally:
            pool2.release(held)
    finally:
        pool2.close()
        other.remove(force=True)
        client2.close()

    assert out.returncode == 1, out  # a host did not answer
    lines = out.stdout.splitlines()
    summary = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in lines if not line.startswith(" ")
               and ": " in line}
    # the second daemon holds only this test's replicas: two, both running desktop ones, one leased; the
    # container without osgym's labels is not counted
    assert summary[second_daemon.url].split("; ")[0] == "2 replica(s)", out.stdout
    assert "running 2" in summary[second_daemon.url] and "desktop 2" in summary[second_daemon.url], out.stdout
    assert "leased 1" in summary[second_daemon.url] and "idle 1" in summary[second_daemon.url], out.stdout
    assert other.name not in out.stdout
    assert summary[DOWN].startswith("unreachable (") and "Connection refused" in summary[DOWN], out.stdout
    assert re.search(r"^3 host\(s\), \d+ replica\(s\), 1 unreachable$", lines[-1]), out.stdout
    # each replica: name, tier, image tag, age, state, lease, run id, on the host it runs on
    mine = [line.split() for line in lines if line.startswith("  ") and pool_name in line]
    assert len(mine) == 3, out.stdout
    for fields in mine:
        assert fields[1:3] == ["desktop", image] and re.fullmatch(r"\d+[smhd]\w*", fields[3]), fields
        assert fields[4] == "running" and fields[5] in ("leased", "idle") and fields[6:] == ["run", run_id], fields
    assert sorted(f[5] for f in mine) == ["idle", "idle", "leased"]
    main_names = {f"{main_pool.name}-{r.id}" for r in main_pool.registry.replicas()}
    assert main_names and main_names <= {f[0] for f in mine}


def test_a_host_list_that_is_not_docker_urls_is_refused(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# the fleet\nunix:///var/run/docker.sock\nbox-7\n")
    out = _list("--hosts-file", str(hosts))
    assert out.returncode == 2 and "expected a Docker URL" in out.stderr and "box-7" in out.stderr, out
    assert "Traceback" not in out.stderr


def test_the_lease_mark_never_writes_through_a_link_the_replica_left(tmp_path: Path) -> None:
    """The replica's server can write its control directory: a link it put at the mark's name is not followed."""
    from types import SimpleNamespace

    from osgym.replicas.provision import Provisioner
    from osgym.replicas.reaper import LEASE_FILE

    victim = tmp_path / "host-file"
    victim.write_text("the host's\n")
    for rid, planted in (("r1", True), ("r2", False)):
        (tmp_path / rid).mkdir()
        if planted:
            (tmp_path / rid / LEASE_FILE).symlink_to(victim)
        Provisioner.mark_leased(SimpleNamespace(spec=SimpleNamespace(transport="unix", run_dir=tmp_path)),  # type: ignore[arg-type]
                                SimpleNamespace(id=rid))  # type: ignore[arg-type]
    assert victim.read_text() == "the host's\n"
    assert (tmp_path / "r2" / LEASE_FILE).read_text().strip().isdigit()
