"""The maintenance flow's reap task removes orphaned replicas and spares live pools and foreign containers."""

from __future__ import annotations

import docker
import pytest

from flows import maintenance
from osgym.replicas.pool import OWNER_LABEL, POOL_LABEL, owner_id


def test_reap_host_task_removes_orphans_only(docker_client, image, pool_name) -> None:  # type: ignore[no-untyped-def]
    kw = dict(entrypoint=["sleep", "60"], detach=True, network_mode="none")
    dead_owner = owner_id().split(":")[0] + ":999999999:1"
    orphan = docker_client.containers.run(image, labels={POOL_LABEL: pool_name + "-o", OWNER_LABEL: dead_owner}, **kw)
    live = docker_client.containers.run(image, labels={POOL_LABEL: pool_name + "-l", OWNER_LABEL: owner_id()}, **kw)
    foreign = docker_client.containers.run(image, labels={"someone.else": "1"}, **kw)
    try:
        assert maintenance.reap_host.fn(None) >= 1
        with pytest.raises(docker.errors.NotFound):
            orphan.reload()
        for c in (live, foreign):
            c.reload()
            assert c.status == "running"
        assert maintenance.reap_host.fn(None, pool=pool_name + "-l") == 1
        with pytest.raises(docker.errors.NotFound):
            live.reload()
    finally:
        for c in (orphan, live, foreign):
            try:
                c.remove(force=True)
            except docker.errors.NotFound:
                pass
