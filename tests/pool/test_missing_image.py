"""A run on a host whose Docker daemon lacks the replica image fails at once, saying where and how to build it.

The host is a second dockerd with no image at all (a fresh worker's host before `make images`)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest
import yaml

from osgym.replicas import images
from osgym.replicas.hosts import DockerHost
from tests.second_daemon import SecondDaemon

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bare_daemon() -> Iterator[SecondDaemon]:
    """A second dockerd with nothing in it."""
    if os.geteuid() != 0 or shutil.which("dockerd") is None:
        pytest.fail("this test starts a second dockerd, which needs root and dockerd (make test runs as root)")
    d = SecondDaemon(Path(tempfile.mkdtemp(prefix="osgym-d2-bare-", dir="/var/tmp")))
    try:
        d.start()
        yield d
    finally:
        d.destroy()


def _collect(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    recipe = yaml.safe_load((ROOT / "datasets" / "smoke.yaml").read_text())
    recipe.update(episodes=2, replicas=1, standby=0, store=str(tmp_path / "store"))
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return subprocess.run([sys.executable, "-m", "osgym", "collect", str(path)], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "COLUMNS": "400", **env})


@pytest.mark.parametrize("how", ["the worker's daemon (DOCKER_HOST)", "the pool's hosts (OSGYM_HOSTS)"])
def test_a_run_on_a_host_without_the_image_fails_at_once_naming_it(bare_daemon: SecondDaemon, tmp_path: Path,
                                                                   how: str) -> None:
    tag = images.image_tag("desktop")
    env = {"DOCKER_HOST": bare_daemon.url, "OSGYM_HOST_NAME": "worker-7"} if "DOCKER_HOST" in how else \
        {"OSGYM_HOSTS": bare_daemon.url}
    out = _collect(tmp_path, env)

    assert out.returncode == 2, out
    assert "Traceback" not in out.stderr + out.stdout
    message = out.stderr.strip()
    assert message.count("\n") == 0, message  # one message
    where = "worker-7" if "DOCKER_HOST" in how else DockerHost(bare_daemon.url).name  # as pool events name it
    assert f"replica image {tag} is not on Docker host {where} ({bare_daemon.url})" in message, message
    assert "`make images`" in message and "osgym images build --tier desktop" in message, message
    client = docker.DockerClient(base_url=bare_daemon.url, timeout=30)
    try:
        assert client.api.containers(all=True) == []  # nothing started on it
        assert client.api.images() == []  # nor a build begun
    finally:
        client.close()
    store = tmp_path / "store"
    assert not store.exists() or list(store.rglob("*")) == [], sorted(store.rglob("*"))  # no dataset begun
