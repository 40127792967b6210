"""The OCI runtime is selectable per pool (``runtime``, default ``OSGYM_REPLICA_RUNTIME``): Debian's crun,
registered with dockerd by scripts/ensure-docker.sh, runs a replica as runc does, with the same limits."""

from __future__ import annotations

from collections.abc import Callable

import docker
import pytest

from osgym.errors import ConfigError
from osgym.replicas.pool import ReplicaPool

pytestmark = [pytest.mark.docker]


def _runtime_of(r: object) -> str:
    c = r.container  # type: ignore[attr-defined]
    return c.client.api.inspect_container(c.id)["HostConfig"]["Runtime"]  # type: ignore[no-any-return]


def test_a_replica_runs_under_crun_with_its_limits(make_pool: Callable[..., ReplicaPool],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # scripts/ensure-docker.sh (make test runs it) installs and registers crun
    monkeypatch.setenv("OSGYM_REPLICA_RUNTIME", "crun")
    pool = make_pool(1)
    with pool.lease() as r:
        assert _runtime_of(r) == "crun"
        shot = r.screenshot()
        assert (shot.width, shot.height) == pool.screen and shot.data[:4] == b"\x89PNG"
        assert r.execute("id -un", shell=True, timeout=20).output.strip() == "user"
        mem = r.execute("cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes",
                        shell=True, timeout=20).output.strip()
        assert int(mem) == pool.limits.mem_mib * 2**20
    with make_pool(1, runtime="runc").lease() as r:
        assert _runtime_of(r) == "runc"


def test_an_unknown_runtime_is_refused_before_any_container(image: str, docker_client: docker.DockerClient,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pool = ReplicaPool(image, 1, runtime="nosuch", docker_client=docker_client, standby=0)
    with pytest.raises(ConfigError, match=r"runtime 'nosuch': Docker on local has .*runc.*daemon\.json"):
        pool.start()
    pool.close()
    monkeypatch.setenv("OSGYM_REPLICA_RUNTIME", "bad name!")
    with pytest.raises(ConfigError, match="OSGYM_REPLICA_RUNTIME"):
        ReplicaPool(image, 1, docker_client=docker_client)
