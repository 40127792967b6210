"""Hollow replicas: osgym's control protocol over the real transport, with a synthetic screen and no container.

Like the hollow nodes Kubernetes uses to test 5,000-node clusters (kubemark), they exist to load the host's
control plane (the pool, the lease queue, the flow and its batches, the writer, the analytics) at a scale no
machine could hold in containers. A pool of ``kind="hollow"`` leases them like any replica; only their start
and stop differ. Their data is marked hollow in every episode row and in the dataset card, and
``osgym dataset export`` refuses it unless asked: it is never agent data.

- :mod:`~osgym.replicas.hollow.screen`: the synthetic frames a hollow replica shows.
- :mod:`~osgym.replicas.hollow.desktop`: one hollow replica's state and its answers to each route.
- :mod:`~osgym.replicas.hollow.server`: the one process that serves every replica of a pool, each on its
  own Unix socket with its own token.
- :mod:`~osgym.replicas.hollow.provision`: starting that process, and the pool's provisioner for hollow replicas.
"""

HOLLOW = "hollow"
"""The pool kind (``ReplicaPool(kind=...)``, a recipe's ``replica_kind``) of hollow replicas."""
CONTAINER = "container"
"""The pool kind of real replicas, each a Docker container: the default."""
REPLICA_KINDS = (CONTAINER, HOLLOW)
HOLLOW_IMAGE = "osgym/hollow"
"""What episodes of hollow replicas record as their image: there is none."""

__all__ = ["CONTAINER", "HOLLOW", "HOLLOW_IMAGE", "REPLICA_KINDS"]
