"""Network policy: default replicas have no route out; ``egress: open`` ones do.

The only outside traffic: one bounded TCP connection attempt to Debian's archive per test.
"""

from __future__ import annotations

import pytest

from osgym.replicas.pool import ReplicaPool

PROBE = ("import socket\n"
         "try:\n"
         "    socket.create_connection(('deb.debian.org', 80), timeout=5).close(); print('connected')\n"
         "except OSError as e:\n"
         "    print('failed', type(e).__name__)\n")


@pytest.mark.parametrize("egress", [False, True], ids=["none", "open"])
def test_egress_policy(make_pool, egress: bool) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1, egress=egress)
    with pool.lease() as r:
        res = r.execute(["python3", "-c", PROBE], timeout=20)
        assert res.output.strip().startswith("connected" if egress else "failed"), res
        assert r.health()["status"] == "ok"  # the pool still drives the replica
        assert r.screenshot(max_side=64).data
        net = r.container.client.api.inspect_container(r.container.id)["HostConfig"]["NetworkMode"]
        assert net == ("osgym-egress" if egress else "none")  # never Docker's default bridge
