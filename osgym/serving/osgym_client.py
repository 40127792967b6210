"""A client of OSGym's protocol (``/reset``, ``/step``, ``/shutdown``, ``/screenshot``) over one or several servers.

OSGym's own client talks to one server. :class:`OSGymClient` takes a list of ``osgym serve`` URLs and keeps
OSGym's calls and answers (``reset`` gives ``{screenshot, problem, vm_id}``, ``step`` gives ``{screenshot,
is_finish, reward}``), with ``vm_id`` this client's own number for a session, whichever server holds it.
Each reset goes to the server with the most free capacity (:class:`~osgym.serving.servers.ServerSet`); a
session whose server is lost raises :class:`~osgym.errors.ServerLost` naming the server, and the next reset
goes to one that is up.

Example::

    client = OSGymClient(["http://gpu-host-1:20000", "http://gpu-host-2:20000"], token=token)
    first = client.reset(task_config, timeout=600)
    out = client.step(first["vm_id"], "click(100,200)&type(hello)")
    client.shutdown(first["vm_id"])
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Sequence
from typing import Any, Literal

from osgym.errors import OsgymError, ServerLost
from osgym.serving.servers import RemoteSession, ServerSet, ServerTimeouts

__all__ = ["OSGymClient"]


class OSGymClient:
    """OSGym's protocol over a :class:`~osgym.serving.servers.ServerSet` (see the module docstring).

    Args:
        urls: one ``osgym serve`` URL, a list of them, or a server set shared with other clients.
        token: the servers' bearer token.
        timeouts: how long to wait on a server.

    Raises:
        ConfigError: if ``urls`` is empty, repeats a URL or holds one that is not http(s).
    """

    def __init__(self, urls: str | Sequence[str] | ServerSet, token: str | None = None,
                 timeouts: ServerTimeouts = ServerTimeouts()) -> None:
        self.servers, self.own = ServerSet.given_or_new(urls, token, timeouts)
        self._vms: dict[int, RemoteSession] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def _vm(self, vm_id: int) -> RemoteSession:
        with self._lock:
            found = self._vms.get(vm_id)
        if found is None:
            raise OsgymError(f"vm_id: expected a session this client opened, actual {vm_id}")
        return found

    def server_of(self, vm_id: int) -> str:
        """The URL of the server that holds session ``vm_id``."""
        return self._vm(vm_id).url

    def reset(self, task_config: dict[str, Any], timeout: float = 600) -> dict[str, Any]:
        """``POST /reset`` on the server with the most free capacity: ``{screenshot, problem, vm_id, server}``.

        Raises:
            ServerLost: if every server is down.
            PolicyError: if the task file is refused (400).
            OsgymError: on another error (no free replica within the server's lease timeout: 503).
        """
        session, out = self.servers.open("/reset", {"task_config": task_config, "timeout": timeout}, "vm_id")
        with self._lock:
            vm_id = next(self._ids)
            self._vms[vm_id] = session
        return {**out, "vm_id": vm_id, "server": session.url}

    def _call(self, vm_id: int, method: str, path: str, **kw: Any) -> dict[str, Any]:
        session = self._vm(vm_id)
        try:
            return self.servers.request(session.server, method, path, session=session, **kw)
        except ServerLost:
            with self._lock:
                self._vms.pop(vm_id, None)  # gone with its server
            raise

    def step(self, vm_id: int, action: str) -> dict[str, Any]:
        """``POST /step``: ``{screenshot, is_finish, reward}``.

        Raises:
            ServerLost: if the session's server is lost: the session is gone.
            PolicyError: if the action cannot be parsed (nothing ran).
            OsgymError: on another error (the session ended: 404; a replica fault: 502).
        """
        return self._call(vm_id, "POST", "/step", json={"action": action, "vm_id": self._vm(vm_id).id})

    def screenshot(self, vm_id: int) -> dict[str, Any]:
        """``GET /screenshot``: ``{screenshot, vm_id}`` (a fresh screenshot, not a step)."""
        session = self._vm(vm_id)
        out = self._call(vm_id, "GET", "/screenshot", params={"vmId": session.id})
        return {**out, "vm_id": vm_id}

    def shutdown(self, vm_id: int | Literal["all"]) -> None:
        """``POST /shutdown``: end session ``vm_id``, or every session of this client (``"all"``).

        A session whose server is gone, or that ended already, is simply forgotten.
        """
        with self._lock:
            ids = list(self._vms) if vm_id == "all" else [vm_id]
        for one in ids:
            session = self._vm(one)
            try:
                self.servers.request(session.server, "POST", "/shutdown", session=session,
                                     json={"vm_id": session.id}, timeout=self.servers.timeouts.probe)
            except OsgymError:
                pass  # ended already (finished, reclaimed), or gone with its server
            with self._lock:
                self._vms.pop(one, None)

    def close(self) -> None:
        """Shut every session down and close the connections (the set's, if this client made it). Idempotent."""
        self.shutdown("all")
        if self.own:
            self.servers.close()
