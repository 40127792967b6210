"""``GET /metrics`` of ``osgym serve``: the server's :class:`~osgym.metrics.Metrics` in Prometheus' text format.

:func:`metrics_route` wires one server's metrics to its parts and adds the route:

* the gauges are read at each scrape: the sessions open, the pool's replicas by state (a parked session's replica
  as ``parked``), the leases waiting;
* each step that returns is timed by the session manager (``step_hooks``), each ended session counted by its
  outcome (``end_hooks``), each pool event counted, those from before the server started too
  (:meth:`~osgym.replicas.events.EventRecorder.chain`).

The route takes a client's bearer token like every route but ``/v1/health`` (the app's middleware checks it before
any route runs): the counts are the whole server's, never a session's or a client's (docs/security.md).
"""

from __future__ import annotations

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from osgym.episodes.trajectory import TERMINATIONS
from osgym.metrics import Metrics, Snapshot
from osgym.replicas.events import EVENT_KINDS
from osgym.serving.sessions import Session, SessionManager

__all__ = ["METRICS_PATH", "metrics_route", "watch_server"]

METRICS_PATH = "/metrics"


def watch_server(manager: SessionManager, metrics: Metrics | None = None) -> Metrics:
    """Feed ``metrics`` (default: new ones) from ``manager``, its pool and its sessions; returns them."""
    metrics = metrics if metrics is not None else Metrics()
    pool = manager.pool

    def snapshot() -> Snapshot:
        parked = len(manager.parking.parked) if manager.parking is not None else 0
        return Snapshot.of(pool.registry.by_state(), sessions=len(manager), parked=parked, lease_queue=pool.waiting)

    def step(_session: Session, seconds: float) -> None:
        metrics.step(seconds)

    def ended(session: Session) -> None:
        t = session.trajectory
        metrics.episode(t.termination, t.error_class)

    metrics.declare(outcomes=TERMINATIONS, event_kinds=EVENT_KINDS)
    metrics.watch(snapshot)
    manager.step_hooks.append(step)
    manager.end_hooks.append(ended)
    for event in pool.recorder.chain(metrics.pool_event):  # those of the replicas that started before the server
        metrics.pool_event(event)
    return metrics


def metrics_route(app: FastAPI, manager: SessionManager) -> Metrics:
    """Add ``GET /metrics`` to ``app``, serving new metrics fed from ``manager``; returns them."""
    metrics = watch_server(manager)

    @app.get(METRICS_PATH)
    def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return metrics
