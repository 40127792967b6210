"""The environment server and the Gymnasium environments: episodes driven step by step from outside.

* :mod:`~osgym.serving.sessions`: :class:`SessionManager`, sessions on leased replicas (open, step,
  close, idle reclaim), each an :class:`~osgym.episodes.episode.Episode` recorded like a collected one;
* :mod:`~osgym.serving.limits`: :class:`ServeLimits`, the operator's bounds; :class:`ObservationOptions`;
* :mod:`~osgym.serving.idle_parking`: idle sessions' replicas parked, woken by their next request;
* :mod:`~osgym.serving.client_task`: :func:`load_client_task`, what a client may send as a task;
* :mod:`~osgym.serving.auth`: bearer tokens, tokenless loopback access by the operator's choice;
* :mod:`~osgym.serving.app`: the HTTP API, OSGym's protocol and the native ``/v1`` API;
* :mod:`~osgym.serving.openenv`: OpenEnv's protocol under ``/openenv`` (its client's WebSocket session);
* :mod:`~osgym.serving.liveview`: view-only noVNC pages of sessions (websockify, view tokens);
* :mod:`~osgym.serving.server`: ``osgym serve`` (pool, writer, manager, uvicorn);
* :mod:`~osgym.serving.servers`: :class:`ServerSet`, a client's list of servers (placement by free capacity,
  a lost server's sessions ended with ``ServerLost``); :mod:`~osgym.serving.osgym_client`: OSGym's protocol over it;
* :mod:`~osgym.serving.gym_env`: ``gymnasium.make("osgym/Desktop-v0")`` and the group-reset vector env
  (:mod:`~osgym.serving.gym_backends`: its sessions in this process or on servers).
"""

from osgym.serving.auth import Access
from osgym.serving.client_task import load_client_task
from osgym.serving.limits import ObservationOptions, ServeLimits
from osgym.serving.osgym_client import OSGymClient
from osgym.serving.server import ServeConfig, ServerThread, serve, serving
from osgym.serving.servers import ServerSet, ServerTimeouts
from osgym.serving.sessions import SessionManager

__all__ = ["Access", "OSGymClient", "ObservationOptions", "ServeConfig", "ServeLimits", "ServerSet", "ServerThread",
           "ServerTimeouts", "SessionManager", "load_client_task", "serve", "serving"]
