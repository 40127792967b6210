"""The environment server and the Gymnasium environments: episodes driven step by step from outside.

* :mod:`~osgym.serving.sessions`: :class:`SessionManager`, sessions on leased replicas (open, step,
  close, idle reclaim), each ended episode recorded like a collected one;
* :mod:`~osgym.serving.auth`: bearer tokens, tokenless loopback access by the operator's choice;
* :mod:`~osgym.serving.app`: the HTTP API, OSGym's protocol and the native ``/v1`` API;
* :mod:`~osgym.serving.liveview`: view-only noVNC pages of sessions (websockify, view tokens);
* :mod:`~osgym.serving.server`: ``osgym serve`` (pool, writer, manager, uvicorn);
* :mod:`~osgym.serving.gym_env`: ``gymnasium.make("osgym/Desktop-v0")`` and the group-reset vector env.
"""

from osgym.serving.auth import Access
from osgym.serving.server import ServeConfig, ServerThread, serve, serving
from osgym.serving.sessions import ObservationOptions, ServeLimits, SessionManager, load_client_task

__all__ = ["Access", "ObservationOptions", "ServeConfig", "ServeLimits", "ServerThread", "SessionManager",
           "load_client_task", "serve", "serving"]
