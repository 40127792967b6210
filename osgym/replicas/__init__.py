"""Replicas: the desktops agents act in, each a container with a control API.

- :mod:`~osgym.replicas.actions` and :mod:`~osgym.replicas.observation`: what a replica does (the typed
  computer_13 actions) and what it shows (:class:`Observation`): the interface agents act through.
- :mod:`~osgym.replicas.client`: :class:`Replica`, one replica's control API (observe, act, files).
- :mod:`~osgym.replicas.transport`: how the client reads answers (a deadline per request, size caps).
- :mod:`~osgym.replicas.pool`: :class:`ReplicaPool` (start, lease, health, replace) and :func:`reap`,
  composed of :mod:`~osgym.replicas.provision` (starting containers), :mod:`~osgym.replicas.health`
  (probes, host quarantine) and :mod:`~osgym.replicas.reaper` (labels, owners, :func:`reap`).
- :mod:`~osgym.replicas.events`: :class:`PoolEvent`, the lifecycle events a pool records.
- :mod:`~osgym.replicas.images`: building the replica images; :mod:`~osgym.replicas.hosts` and
  :mod:`~osgym.replicas.capacity`: the Docker hosts replicas run on and how many fit;
  :mod:`~osgym.replicas.network`: the fenced networks of replicas that need one (egress, compat, tcp);
  :mod:`~osgym.replicas.cost`: the one cost model (price table, measured profile, density), and
  :mod:`~osgym.replicas.accounting`: what each replica uses, read from its cgroup.
"""

from osgym.replicas.client import Replica, ReplicaState, Timeouts
from osgym.replicas.events import PoolEvent
from osgym.replicas.pool import ReplicaPool, reap
from osgym.replicas.transport import ResponseCaps

__all__ = ["PoolEvent", "Replica", "ReplicaPool", "ReplicaState", "ResponseCaps", "Timeouts", "reap"]
