"""osgym.replicas.disk measures what a container's writable layer holds on the host's disk.

Root steps are the writers it exists for (the agent's account has nothing on the layer to write:
tests/security/test_disk_bound.py), so each case writes as root through ``docker exec --user root``,
the way ``Replica.execute_as_root`` does, into a root-owned directory of the image.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator

import docker
import pytest

from osgym.errors import ReplicaUnreachable
from osgym.replicas.client import Replica
from osgym.replicas.disk import LayerUnmeasurable, LayerUsage, writable_layer_usage
from osgym.replicas.pool import ReplicaPool

pytestmark = pytest.mark.docker

MIB = 2**20
SLACK = MIB // 4
"""What the layer may change by beside a case's own writes: directory blocks (4 KiB each) of the
case's directory and of /var/cache, and whatever the idle replica writes meanwhile (nothing, here)."""


def _as_root(replica: Replica, script: str) -> None:
    res = replica.container.exec_run(["sh", "-c", script], user="root")
    assert res.exit_code == 0, res.output


@pytest.fixture
def layer_replica(make_pool: Callable[..., ReplicaPool]) -> Iterator[Replica]:
    with make_pool(1).lease() as r:
        yield r


def test_the_layer_grows_by_what_a_root_step_writes_each_inode_once(layer_replica: Replica) -> None:
    r = layer_replica
    before = writable_layer_usage(r.container)
    _as_root(r, "mkdir /var/cache/osgym-t && head -c 32M /dev/urandom > /var/cache/osgym-t/fill")
    filled = writable_layer_usage(r.container)
    assert before.complete and filled.complete
    assert abs(filled.bytes - before.bytes - 32 * MIB) <= SLACK, (before, filled)
    # a second name for the same file and a 1 GiB file of holes allocate (almost) nothing
    _as_root(r, "ln /var/cache/osgym-t/fill /var/cache/osgym-t/link && truncate -s 1G /var/cache/osgym-t/sparse")
    linked = writable_layer_usage(r.container)
    assert linked.entries == filled.entries + 2 and abs(linked.bytes - filled.bytes) <= SLACK, (filled, linked)
    _as_root(r, "rm -r /var/cache/osgym-t")
    assert abs(writable_layer_usage(r.container).bytes - before.bytes) <= SLACK


def test_the_walk_stops_at_its_entry_bound_and_says_so(layer_replica: Replica) -> None:
    r = layer_replica
    _as_root(r, "mkdir /var/cache/osgym-many && cd /var/cache/osgym-many && seq 3000 | xargs touch")
    whole = writable_layer_usage(r.container)
    assert whole.complete and whole.entries >= 3000, whole
    cut = writable_layer_usage(r.container, max_entries=1000)
    assert cut == LayerUsage(cut.bytes, 1000, complete=False) and cut.bytes <= whole.bytes, (cut, whole)
    with pytest.raises(ValueError, match="max_entries"):
        writable_layer_usage(r.container, max_entries=0)


def test_a_remote_daemon_or_a_gone_container_is_a_clear_error(layer_replica: Replica,
                                                               docker_client: docker.DockerClient) -> None:
    # Refused before any request: the layer of a daemon on another machine is no directory of this one.
    remote = docker.DockerClient(base_url="tcp://192.0.2.1:2375", version="1.41", timeout=1)  # no version probe
    with pytest.raises(LayerUnmeasurable, match="not local"):
        writable_layer_usage(remote.containers.prepare_model({"Id": layer_replica.container.id}))
    gone = docker_client.containers.prepare_model({"Id": "0" * 64})
    with pytest.raises(ReplicaUnreachable, match="gone"):
        writable_layer_usage(gone)


def _measure_as(uid: int, gid: int, container_id: str) -> str:
    """Measure in a forked child that has become ``uid``/``gid`` (the interpreter under /root is not
    executable by another uid, so no fresh one can run): what it raised, or "measured"."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child touches only objects it makes, and leaves through os._exit
        try:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
            client = docker.DockerClient(base_url="unix:///var/run/docker.sock", version="1.41", timeout=30)
            writable_layer_usage(client.containers.prepare_model({"Id": container_id}))
            out = "measured"
        except BaseException as exc:  # noqa: BLE001 - whatever it was goes to the parent as text
            out = f"{type(exc).__name__}: {exc}"
        os.write(w, out.encode()[:4000])
        os._exit(0)
    os.close(w)
    deadline = time.monotonic() + 60
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError("the measuring child did not finish within 60 s")
        time.sleep(0.05)
    with os.fdopen(r, "rb") as f:
        return f.read().decode()


def test_a_caller_who_cannot_open_the_layer_is_told_it_needs_root(layer_replica: Replica) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test measures as another uid than root, so it must start as root (make test does)")
    # `nobody` in the docker group: it may ask the daemon, not open the daemon's root-only directories
    said = _measure_as(65534, os.stat("/var/run/docker.sock").st_gid, layer_replica.container.id)
    assert said.startswith("LayerUnmeasurable") and "needs root" in said, said
