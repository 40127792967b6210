"""Network policy as the pool applies it: default replicas have no network at all, ``egress: open``
ones sit on osgym's own ``osgym-egress`` network, never Docker's default bridge.

No traffic leaves this machine: a default replica's probe fails before sending anything (no
route), and what an egress replica can reach is tested against decoy addresses on this host in
tests/security/test_network.py.
"""

from __future__ import annotations

import pytest

from osgym.replicas.pool import ReplicaPool
from tests.pool.pool_support import assert_loopback_only

PROBE = ("import socket\n"
         "try:\n"
         "    socket.create_connection(('192.0.2.1', 80), timeout=5).close(); print('connected')\n"  # TEST-NET-1
         "except OSError as e:\n"
         "    print('failed', type(e).__name__, e.errno)\n")


@pytest.mark.parametrize("egress", [False, True], ids=["none", "open"])
def test_egress_policy(make_pool, egress: bool) -> None:  # type: ignore[no-untyped-def]
    pool: ReplicaPool = make_pool(1, egress=egress)
    with pool.lease() as r:
        if not egress:
            res = r.execute(["python3", "-c", PROBE], timeout=20)
            assert res.output.strip() == "failed OSError 101", res  # ENETUNREACH: only loopback exists
            routes = r.execute(["cat", "/proc/net/route"], timeout=10).output.splitlines()[1:]
            assert routes == [], routes
            assert_loopback_only(r)
        assert r.health()["status"] == "ok"  # the pool still drives the replica
        assert r.screenshot(max_side=64).data
        net = r.container.client.api.inspect_container(r.container.id)["HostConfig"]["NetworkMode"]
        assert net == ("osgym-egress" if egress else "none")  # never Docker's default bridge
    # the lease's accounting counts network bytes only where there is a network beside loopback
    assert r.usage is not None and r.usage.cpu_s > 0
    if egress:
        assert r.usage.net_bytes is not None and r.usage.net_bytes >= 0
    else:
        assert r.usage.net_bytes is None
