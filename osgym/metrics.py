"""The operator's Prometheus metrics: one set of names for ``osgym serve`` and ``osgym collect``.

(The task metrics that score an episode are :mod:`osgym.tasks.metrics`; these are about the service.)

Every name, its type and its labels (the README's "Metrics" section lists them with their meaning):

=================================  =========  ==========  ==========================================================
``osgym_sessions``                 gauge                  episodes under way: served sessions open (serve), episodes
                                                          holding a leased replica (collect)
``osgym_replicas``                 gauge      ``state``   the pool's replicas by state (:data:`REPLICA_STATES`)
``osgym_lease_queue``              gauge                  leases waiting for a ready replica
``osgym_lease_wait_seconds``       histogram              how long each lease waited for its replica
``osgym_step_seconds``             histogram              the environment's time for one step (actions, settle,
                                                          observation; the last step's evaluation)
``osgym_episodes_total``           counter    ``outcome`` episodes ended, by how (``Trajectory.termination``)
``osgym_infra_errors_total``       counter    ``error``   episodes lost to the environment, by ``error_class``
                                                          (:data:`~osgym.errors.INFRA_ERROR_CLASSES`)
``osgym_pool_events_total``        counter    ``kind``    the pool's lifecycle events (``osgym.replicas.events``)
=================================  =========  ==========  ==========================================================

Label values come from fixed sets in the code (states, terminations, error classes, event kinds): never a session,
replica, task or client id, so a fleet's series stay few. Each server or run has its own :class:`Metrics` with its
own ``CollectorRegistry`` (never the process-wide default), so several in one process do not mix.

This module sits below every package (it imports none of them): its callers hand it plain values, and the gauges
are read at scrape time from a :class:`Snapshot` their source returns.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Histogram, start_http_server
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from osgym.errors import INFRA_ERROR_CLASSES, ConfigError

__all__ = ["EPISODES", "INFRA_ERRORS", "LEASE_QUEUE", "LEASE_WAIT", "NAMES", "POOL_EVENTS", "REPLICAS",
           "REPLICA_STATES", "SESSIONS", "STEP", "Exposition", "Metrics", "Snapshot", "exposition"]

SESSIONS = "osgym_sessions"
REPLICAS = "osgym_replicas"
LEASE_QUEUE = "osgym_lease_queue"
LEASE_WAIT = "osgym_lease_wait_seconds"
STEP = "osgym_step_seconds"
EPISODES = "osgym_episodes"
INFRA_ERRORS = "osgym_infra_errors"
POOL_EVENTS = "osgym_pool_events"
NAMES = (SESSIONS, REPLICAS, LEASE_QUEUE, LEASE_WAIT, STEP, EPISODES, INFRA_ERRORS, POOL_EVENTS)
"""Every metric's name (a counter's samples add ``_total``, a histogram's ``_bucket``, ``_count`` and ``_sum``)."""

REPLICA_STATES = ("starting", "ready", "leased", "parked", "faulted", "closed")
"""The ``state`` label of :data:`REPLICAS`: a replica's lifecycle state (``osgym.replicas.client.ReplicaState``),
with ``parked`` for a leased replica whose idle session is parked (``osgym serve --park-after``); ``faulted`` and
``closed`` replicas were given back and their containers are being removed."""

STEP_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
"""Seconds: a desktop step is ~20 ms on a quiet host, an apps-tier step with its settle a second or more."""
LEASE_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
"""Seconds: a lease served from the standby takes a millisecond, one that waits for a replica to start seconds."""


@dataclass(frozen=True)
class Snapshot:
    """What the gauges show, read when Prometheus scrapes.

    >>> Snapshot.of({"ready": 2, "leased": 1}, lease_queue=3).replicas["leased"]
    1
    """

    sessions: int = 0
    replicas: Mapping[str, int] = field(default_factory=dict)
    lease_queue: int = 0

    @classmethod
    def of(cls, replicas: Mapping[str, int], *, sessions: int | None = None, parked: int = 0,
           lease_queue: int = 0) -> Snapshot:
        """A snapshot from a pool's replicas by state; ``parked`` of the leased ones are shown as ``parked``, and
        without ``sessions`` the episodes under way are the leased replicas (each running episode holds one)."""
        counts = {s: replicas.get(s, 0) for s in REPLICA_STATES}
        leased = counts["leased"] + counts["parked"]
        counts["parked"] = min(parked, leased)
        counts["leased"] = leased - counts["parked"]
        return cls(leased if sessions is None else sessions, counts, lease_queue)


class _Event(Protocol):
    """What :meth:`Metrics.pool_event` reads of an ``osgym.replicas.events.PoolEvent``."""

    @property
    def event(self) -> str: ...

    @property
    def elapsed_s(self) -> float | None: ...


class _Gauges(Collector):
    """The gauges, read from a source at each scrape (a pool's state is not pushed, it is looked at)."""

    def __init__(self) -> None:
        self.source: Callable[[], Snapshot] | None = None

    def describe(self) -> Iterable[Metric]:
        return self._families(Snapshot())

    def collect(self) -> Iterable[Metric]:
        source = self.source
        return self._families(source() if source is not None else Snapshot())

    @staticmethod
    def _families(snap: Snapshot) -> list[Metric]:
        replicas = GaugeMetricFamily(REPLICAS, "The pool's replicas by state.", labels=["state"])
        for state in REPLICA_STATES:
            replicas.add_metric([state], snap.replicas.get(state, 0))
        return [GaugeMetricFamily(SESSIONS, "Episodes under way: served sessions open, or collected episodes "
                                            "holding a replica.", value=snap.sessions),
                replicas,
                GaugeMetricFamily(LEASE_QUEUE, "Leases waiting for a ready replica.", value=snap.lease_queue)]


class Metrics:
    """One server's or one run's metrics, in a registry of their own.

    >>> m = Metrics()
    >>> m.episode("done", None, step_seconds=[0.02, 0.03])
    >>> m.value("osgym_episodes_total", outcome="done"), m.value("osgym_step_seconds_count")
    (1.0, 2.0)

    Args:
        registry: where the metrics are registered (default: a new ``CollectorRegistry``).
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self._gauges = _Gauges()
        self.registry.register(self._gauges)
        self.lease_wait = Histogram(LEASE_WAIT, "Seconds each lease waited for a ready replica.",
                                    buckets=LEASE_BUCKETS, registry=self.registry)
        self.step_seconds = Histogram(STEP, "Seconds of environment time per step: actions, settle, observation.",
                                      buckets=STEP_BUCKETS, registry=self.registry)
        self.episodes = Counter(EPISODES, "Episodes ended, by outcome (termination).", ["outcome"],
                                registry=self.registry)
        self.infra_errors = Counter(INFRA_ERRORS, "Episodes lost to the environment, by error class.", ["error"],
                                    registry=self.registry)
        for error in INFRA_ERROR_CLASSES:  # every class shows, at 0 until one happens
            self.infra_errors.labels(error)
        self.pool_events = Counter(POOL_EVENTS, "The pool's replica lifecycle events, by kind.", ["kind"],
                                   registry=self.registry)

    def declare(self, *, outcomes: Iterable[str] = (), event_kinds: Iterable[str] = ()) -> None:
        """Show these label values at 0 until they happen (Prometheus' ``rate`` needs a series to exist)."""
        for outcome in outcomes:
            self.episodes.labels(outcome)
        for kind in event_kinds:
            self.pool_events.labels(kind)

    def watch(self, source: Callable[[], Snapshot] | None) -> None:
        """Read the gauges from ``source`` at each scrape (None: zeros, as when the pool is gone)."""
        self._gauges.source = source

    def pool_event(self, event: _Event) -> None:
        """Count a pool event; a ``leased`` event's ``elapsed_s`` is its lease's wait."""
        self.pool_events.labels(event.event).inc()
        if event.event == "leased" and event.elapsed_s is not None:
            self.lease_wait.observe(event.elapsed_s)

    def step(self, seconds: float) -> None:
        """Observe one step's environment time."""
        self.step_seconds.observe(seconds)

    def episode(self, outcome: str, error_class: str | None, step_seconds: Iterable[float] = ()) -> None:
        """Count an ended episode by outcome (and its error class if the environment lost it), and observe its
        steps' times (for callers that did not observe each step as it ran)."""
        for seconds in step_seconds:
            self.step_seconds.observe(seconds)
        self.episodes.labels(outcome).inc()
        if error_class in INFRA_ERROR_CLASSES:
            self.infra_errors.labels(error_class).inc()

    def value(self, name: str, **labels: str) -> float | None:
        """A sample's current value (None if there is none), e.g. ``value("osgym_replicas", state="ready")``."""
        return self.registry.get_sample_value(name, labels)


@dataclass
class Exposition:
    """A running metrics endpoint (see :func:`exposition`)."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/metrics"


@contextlib.contextmanager
def exposition(metrics: Metrics, port: int, host: str = "127.0.0.1") -> Iterator[Exposition]:
    """Serve ``metrics`` at ``http://host:port/metrics`` (Prometheus' text format) until the block ends.

    Loopback by default: the endpoint has no token (the counts carry no ids, but say what the host does).
    ``port`` 0 takes a free port (the :class:`Exposition` names it).

    Raises:
        ConfigError: if the address cannot be bound (in use, not this host's, a port out of range).
    """
    if not 0 <= port <= 65535:
        raise ConfigError(f"metrics port: expected 0..65535, actual {port}")
    try:
        server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"metrics endpoint: cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    try:
        yield Exposition(host, server.server_port)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
