"""Not collected by itself: ``test_leak_check`` runs it as a pytest session of its own.

It starts a pool under a name the session's ``pool_name`` fixture did not make (as a
subprocess's ``osgym collect`` would) and never closes it; the session's leak check
must still find its container, remove it and fail the session.
"""

from __future__ import annotations

import os

from osgym.replicas.pool import ReplicaPool


def test_leave_a_pool_behind() -> None:
    pool = ReplicaPool(os.environ["LEAK_PROBE_IMAGE"], 1, standby=0, name=os.environ["LEAK_PROBE_POOL"],
                       screen=(800, 600), health_interval=0)  # no health thread: nothing restarts it once reaped
    pool.start()
