"""The live view: watch a served session's screen in a browser, view-only, with a token.

An authenticated client asks for a view of its session (``POST /v1/sessions/{id}/view``) and gets
a per-view token and a URL. Then:

* the replica's control server starts listening on ``vnc.sock`` in the replica's run directory
  (``POST /view/start``); each connection there gets its own ``x11vnc -inetd -viewonly``, as the
  replica's unprivileged `user` (``replica_images/server/liveview.py``). The replica gets no
  network: the socket is a file in a directory only the host and the control server reach;
* the server itself serves Debian's noVNC (``/usr/share/novnc``) at ``/view/{token}/``, only
  under a live token (403 otherwise), set to connect view-only to ``/view/{token}/websockify`` on
  the same server;
* that websocket is relayed by this process (:func:`relay`) to the replica's ``vnc.sock``, opened
  with :func:`~osgym.replicas.unix_socket.connect_unix`: never through a symlink, and only if it is a
  socket of the replica's server. The run directory is writable from inside the replica, so a
  path-based connect (websockify's, before) would follow a link that the replica put there to any
  socket of the host, its Docker daemon included.

The token is 256 random bits, issued to the session's owner only, and dies with the session: the
manager calls :meth:`LiveViews.end` as the session ends (the open relays are cut, the replica's
viewers are stopped, then the replica is discarded). View-only is the replica's to enforce (x11vnc
drops every input event), not the page's.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc
import anyio.to_thread
from starlette.websockets import WebSocket, WebSocketDisconnect

from osgym.errors import ConfigError, OsgymError
from osgym.replicas.unix_socket import connect_unix
from osgym.serving.auth import new_token
from osgym.serving.sessions import Session

__all__ = ["NOVNC_DIR", "LiveViews", "ViewUnavailable", "ViewTicket", "relay", "vnc_socket_of"]

NOVNC_DIR = Path("/usr/share/novnc")
SETUP_HINT = "install Debian's novnc (scripts/ensure-novnc.sh, run by `make test`)"
CONNECT_TIMEOUT_S = 10.0
RELAY_CHUNK = 64 * 2**10
MAX_VIEWERS = 4
"""Open relays per session: the replica starts an x11vnc per viewer and refuses a fifth."""


class ViewUnavailable(OsgymError):
    """Raised when the host lacks noVNC (503)."""


@dataclass(frozen=True)
class ViewTicket:
    """What a client needs to open a view: the token and the paths of the page and its websocket on the server."""

    token: str
    session_id: int
    page: str
    """The page's path on this server (``/view/{token}/vnc.html?...``)."""

    @property
    def websocket_path(self) -> str:
        return websocket_path(self.token)


def websocket_path(token: str) -> str:
    """The path of view ``token``'s websocket on the server."""
    return f"/view/{token}/websockify"


@dataclass
class _View:
    session_id: int
    socket_path: str
    socket_owner: int | None
    relays: set[socket.socket]


class LiveViews:
    """The live views of one server: their tokens, the replicas' sockets, and the open relays.

    Args:
        novnc_dir: noVNC's files.
    """

    def __init__(self, *, novnc_dir: Path = NOVNC_DIR) -> None:
        self.novnc_dir = novnc_dir
        self._lock = threading.Lock()
        self._views: dict[str, _View] = {}

    def __repr__(self) -> str:  # never the tokens
        return f"LiveViews(views={len(self._views)})"

    @property
    def relays(self) -> int:
        """Relays open now, over every view."""
        with self._lock:
            return sum(len(v.relays) for v in self._views.values())

    def issue(self, session_id: int, vnc_socket: str, socket_owner: int | None) -> ViewTicket:
        """A new view token of session ``session_id``, whose replica listens on ``vnc_socket``, a socket that
        must belong to ``socket_owner`` (the replica's server).

        Raises:
            ViewUnavailable: if noVNC is missing.
        """
        if not (self.novnc_dir / "vnc.html").is_file():
            raise ViewUnavailable(f"the live view needs noVNC on the host: {SETUP_HINT}")
        token = new_token()
        with self._lock:
            self._views[token] = _View(session_id, vnc_socket, socket_owner, set())
        return ViewTicket(token, session_id, self.page(token))

    def page(self, token: str) -> str:
        """The path of the page of view ``token``: noVNC, set to connect view-only to the view's websocket
        on the same server (noVNC takes the page's own host and port)."""
        query = (f"autoconnect=1&view_only=1&shared=1&resize=scale&reconnect=0"
                 f"&path={websocket_path(token).lstrip('/')}")
        return f"/view/{token}/vnc.html?{query}"

    def valid(self, token: str) -> bool:
        with self._lock:
            return token in self._views

    def connect(self, token: str) -> socket.socket:
        """A connection to the replica's view socket for view ``token``, tracked so that :meth:`end` cuts it.

        Raises:
            PermissionError: if the token is not a live view's, or the session has its most viewers.
            UnsafeSocket: if the replica's socket name holds anything but its server's socket.
            OSError: if the replica's socket cannot be reached.
        """
        with self._lock:
            view = self._views.get(token)
            if view is None:
                raise PermissionError("not a live view token (it was never issued, or its session ended)")
            if sum(len(v.relays) for v in self._views.values() if v.session_id == view.session_id) >= MAX_VIEWERS:
                raise PermissionError(f"session {view.session_id} has {MAX_VIEWERS} viewers already")
        sock = connect_unix(view.socket_path, owner=view.socket_owner, timeout=CONNECT_TIMEOUT_S)
        sock.settimeout(None)
        with self._lock:
            if self._views.get(token) is not view:  # the session ended while connecting
                sock.close()
                raise PermissionError("the view's session ended")
            view.relays.add(sock)
        return sock

    def disconnected(self, token: str, sock: socket.socket) -> None:
        """Forget relay ``sock`` of view ``token`` (it ended)."""
        with self._lock:
            view = self._views.get(token)
            if view is not None:
                view.relays.discard(sock)

    def end(self, session_id: int) -> int:
        """Revoke every token of session ``session_id`` and cut its open relays; returns how many tokens."""
        with self._lock:
            gone = [t for t, v in self._views.items() if v.session_id == session_id]
            cut = [s for t in gone for s in self._views.pop(t).relays]
        for sock in cut:  # the relay's reader sees the end of the stream and closes the websocket
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return len(gone)

    def session_ended(self, session: Session) -> None:
        """Revoke the session's views and stop its replica's viewers (a :attr:`SessionManager.end_hooks` hook)."""
        if self.end(session.id):
            session.replica.api.request("POST", "/view/stop", timeout=10)

    def file(self, token: str, path: str) -> Path:
        """noVNC's file ``path``, for a holder of the live token ``token``.

        Raises:
            PermissionError: if the token is not a live view's.
            FileNotFoundError: if noVNC has no such file.
        """
        if not self.valid(token):
            raise PermissionError("not a live view token (it was never issued, or its session ended)")
        root = self.novnc_dir.resolve()
        target = (root / (path or "vnc.html")).resolve()
        if not target.is_relative_to(root) or not target.is_file():
            raise FileNotFoundError(path)
        return target

    def close(self) -> None:
        """Forget every token and cut every relay. Idempotent."""
        with self._lock:
            sessions = {v.session_id for v in self._views.values()}
        for sid in sessions:
            self.end(sid)


async def relay(websocket: WebSocket, views: LiveViews, token: str) -> None:
    """Relay an accepted view websocket and the replica's view socket both ways until either side ends.

    Refused before the upgrade (the handshake answers 403) when the token is not live, the session
    has its most viewers, or the replica's socket is not its server's.
    """
    try:
        sock = await anyio.to_thread.run_sync(views.connect, token)
    except (PermissionError, OsgymError, OSError):
        await websocket.close(code=1008)
        return
    offered = websocket.scope.get("subprotocols") or []
    await websocket.accept(subprotocol="binary" if "binary" in offered else None)
    try:
        async with await anyio.abc.SocketStream.from_socket(sock) as stream, anyio.create_task_group() as tasks:
            tasks.start_soon(_to_replica, websocket, stream, tasks.cancel_scope)
            tasks.start_soon(_to_viewer, websocket, stream, tasks.cancel_scope)
    finally:
        views.disconnected(token, sock)
        sock.close()
        with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):  # the viewer may be gone already
            await websocket.close()


async def _to_replica(websocket: WebSocket, stream: anyio.abc.ByteStream, scope: anyio.CancelScope) -> None:
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                break
            data = message.get("bytes") or (message.get("text") or "").encode()
            if data:
                await stream.send(data)
    except (WebSocketDisconnect, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass
    scope.cancel()


async def _to_viewer(websocket: WebSocket, stream: anyio.abc.ByteStream, scope: anyio.CancelScope) -> None:
    try:
        while True:
            await websocket.send_bytes(await stream.receive(RELAY_CHUNK))
    except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, WebSocketDisconnect,
            RuntimeError, OSError):
        pass
    scope.cancel()


def vnc_socket_of(endpoint: str) -> str:
    """The live view's socket next to a replica's control socket (``unix:DIR/control.sock``).

    Raises:
        ConfigError: for a replica reached over TCP (it has no run directory on this host).
    """
    if not endpoint.startswith("unix:"):
        raise ConfigError("the live view needs a replica reached through its Unix socket; this one is reached "
                          f"at {endpoint}")
    return str(Path(endpoint[len("unix:"):]).parent / "vnc.sock")
