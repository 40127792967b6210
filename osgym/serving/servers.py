"""Several ``osgym serve`` servers behind one client: sessions placed by free capacity, a lost server's
sessions ended with :class:`~osgym.errors.ServerLost`, new ones sent to the others.

:class:`ServerSet` is the client side of a list of servers, used by the Gymnasium env's
:class:`~osgym.serving.gym_env.HttpBackend` and by :class:`~osgym.serving.osgym_client.OSGymClient`:

* **placement**: :meth:`ServerSet.reserve` picks the server where this client may open the most sessions now
  (``GET /v1/capacity``'s ``free``, less what this client is opening there; ties go to the server with the
  larger share of its sessions free, then to more ready replicas, then to the earlier in the list),
  and holds ``n`` places on it while they open: a group reset's ``n`` sessions go to one server;
* **a lost server**: a request that gets no answer (refused, reset, timed out) probes the server; if the probe
  gets none either, the server is marked down and the request raises :class:`~osgym.errors.ServerLost` naming
  it. So does every later request for a session opened before, at once: a down server's sessions are gone. A
  new server process at the same address (another ``run_id`` in a probe, made also when the server answers
  that it knows no such session) ends the sessions of the old one the same way. New sessions go to the
  servers that are up;
* **retry with backoff**: a down server is probed again when placing a session after ``retry_s``, then twice
  as long after each failed probe, up to ``max_retry_s``; the first answer puts it back in the placement;
* **nothing hangs**: every request has a finite timeout (:class:`ServerTimeouts`).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from osgym.errors import ConfigError, OsgymError, PolicyError, ServerLost

__all__ = ["RemoteSession", "Server", "ServerSet", "ServerTimeouts"]

MAX_CONNECTIONS = 512
"""Keep-alive connections per server: one per session stepping at once (a vector env's threads share them)."""


@dataclass(frozen=True)
class ServerTimeouts:
    """Seconds a client waits on a server.

    Attributes:
        connect: to connect (a server that does not accept in this long is not answering).
        probe: for ``GET /v1/capacity``, the probe that decides whether a server is up.
        request: for a step, an observation or an end (a step runs actions and waits for the screen to settle).
        open: for a new session (it may wait for a free replica, up to the server's lease timeout, and run
            the task's setup).
        retry_s, max_retry_s: a down server is probed again after ``retry_s``, doubling to ``max_retry_s``.
        fresh_s: a server's capacity is probed again for a placement once it is this old.
    """

    connect: float = 5.0
    probe: float = 10.0
    request: float = 120.0
    open: float = 300.0
    retry_s: float = 2.0
    max_retry_s: float = 60.0
    fresh_s: float = 1.0


@dataclass(eq=False)
class Server:
    """One server of a :class:`ServerSet` and what this client knows of it (under the set's lock)."""

    url: str
    http: httpx.Client
    up: bool = True
    run_id: str | None = None
    """The server process last seen (``GET /v1/capacity``); sessions opened under another one are gone."""
    free: int = 0
    replicas_free: int = 0
    limit: int = 1
    pending: int = 0
    """Places this client holds there for sessions it is opening."""
    probed_at: float = float("-inf")
    retry_at: float = 0.0
    backoff: float = 0.0
    cause: str = ""
    """Why it was marked down, last."""
    epoch: int = 0
    """How many times it was marked down: a session opened in an earlier epoch went down with it."""

    def __repr__(self) -> str:
        state = "up" if self.up else f"down ({self.cause})"
        return f"<Server {self.url} {state} free={self.free} pending={self.pending}>"


@dataclass(frozen=True)
class RemoteSession:
    """A session on one server of a set: its id there and the server process (``run_id``) that opened it."""

    server: Server
    id: int
    run_id: str | None
    epoch: int

    @property
    def url(self) -> str:
        return self.server.url


def _check_url(url: str) -> str:
    """A server's URL without a trailing slash.

    >>> _check_url("http://host1:20000/")
    'http://host1:20000'
    >>> _check_url("host1:20000")
    Traceback (most recent call last):
    ...
    osgym.errors.ConfigError: server url: expected http(s)://host:port, actual 'host1:20000'
    """
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"server url: expected http(s)://host:port, actual {url!r}")
    return url.rstrip("/")


def message_of(r: httpx.Response) -> str:
    """A server's error message (its JSON ``message``), or the start of its body."""
    try:
        return str(r.json().get("message", r.text))
    except (ValueError, AttributeError):
        return r.text[:500]


class ServerSet:
    """A client's ``osgym serve`` servers: placement by free capacity, lost servers marked down (module docstring).

    Args:
        urls: one server's URL or a list of them (each ``http(s)://host:port``).
        token: the bearer token, the same on every server.
        timeouts: how long to wait on a server.
        clock: monotonic seconds (for the backoff).

    Raises:
        ConfigError: if the list is empty, holds a URL twice, or a URL is not http(s).
    """

    def __init__(self, urls: str | Sequence[str], token: str | None = None,
                 timeouts: ServerTimeouts = ServerTimeouts(), clock: Callable[[], float] = time.monotonic) -> None:
        listed = [urls] if isinstance(urls, str) else list(urls)
        checked = [_check_url(u) for u in listed]
        if not checked:
            raise ConfigError("servers: expected at least one osgym serve URL, actual none")
        if len(set(checked)) != len(checked):
            raise ConfigError(f"servers: expected distinct URLs, actual {checked}")
        self.timeouts = timeouts
        self.clock = clock
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        t = httpx.Timeout(timeouts.request, connect=timeouts.connect)
        limits = httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=MAX_CONNECTIONS)
        self.servers = [Server(u, httpx.Client(base_url=u, headers=headers, timeout=t, limits=limits))
                        for u in checked]
        self._by_url = {s.url: s for s in self.servers}
        self._lock = threading.Lock()
        self._probes = ThreadPoolExecutor(max_workers=min(32, len(checked)), thread_name_prefix="osgym-probe")
        self._closed = False

    @classmethod
    def given_or_new(cls, urls: str | Sequence[str] | ServerSet, token: str | None = None,
                     timeouts: ServerTimeouts = ServerTimeouts()) -> tuple[ServerSet, bool]:
        """``urls`` itself if it is a set already (shared: not the caller's to close), else a new set of those
        URLs; and whether the caller owns it (closes it when done)."""
        if isinstance(urls, ServerSet):
            return urls, False
        return cls(urls, token, timeouts), True

    def __deepcopy__(self, memo: dict[int, Any]) -> ServerSet:
        return self  # shared by the envs it was handed to (gymnasium.make deep-copies its kwargs)

    def __len__(self) -> int:
        return len(self.servers)

    def __repr__(self) -> str:
        return f"<ServerSet {self.servers}>"

    def server(self, url: str) -> Server:
        """The server of this set at ``url``.

        Raises:
            ConfigError: if the set has no such server.
        """
        found = self._by_url.get(url.rstrip("/"))
        if found is None:
            raise ConfigError(f"server: expected one of {list(self._by_url)}, actual {url!r}")
        return found

    # ---- state ---------------------------------------------------------------------------------------
    def _mark_down(self, server: Server, cause: str) -> float:
        with self._lock:
            if server.up:
                server.epoch += 1
                server.backoff = self.timeouts.retry_s
            else:
                server.backoff = min(max(server.backoff * 2, self.timeouts.retry_s), self.timeouts.max_retry_s)
            server.up = False
            server.cause = cause
            server.retry_at = self.clock() + server.backoff
            return server.backoff

    def probe(self, server: Server) -> dict[str, Any]:
        """``GET /v1/capacity`` on ``server``: up (with its capacity) on an answer, down without one.

        Raises:
            ServerLost: if it does not answer (it is marked down, to be probed again after its backoff).
            OsgymError: if it answers with an error (a wrong token: 401; not an osgym server: 404).
        """
        try:
            r = server.http.get("/v1/capacity", timeout=httpx.Timeout(self.timeouts.probe,
                                                                        connect=self.timeouts.connect))
        except httpx.TransportError as exc:
            cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            backoff = self._mark_down(server, f"no answer ({cause})")
            raise ServerLost(server.url, f"no answer ({cause}); marked down, probed again in {backoff:g} s") from exc
        if r.status_code >= 500:
            cause = f"GET /v1/capacity: {r.status_code} {message_of(r)}"
            backoff = self._mark_down(server, cause)
            raise ServerLost(server.url, f"{cause}; marked down, probed again in {backoff:g} s")
        if r.status_code != 200:
            raise OsgymError(f"server {server.url}: GET /v1/capacity: {r.status_code} {message_of(r)}")
        body: dict[str, Any] = r.json()
        with self._lock:
            server.up, server.cause, server.backoff = True, "", 0.0
            server.run_id = str(body.get("run_id"))
            server.free, server.replicas_free = int(body["free"]), int(body["replicas_free"])
            server.limit = max(1, int(body["session_limit"]))
            server.probed_at = self.clock()
        return body

    def _refresh(self) -> None:
        """Probe, in parallel, the servers whose capacity is stale and the down ones due for a retry."""
        now = self.clock()
        with self._lock:
            due = [s for s in self.servers
                   if (s.up and now - s.probed_at >= self.timeouts.fresh_s) or (not s.up and now >= s.retry_at)]

        def quiet(s: Server) -> None:
            with contextlib.suppress(OsgymError):
                self.probe(s)

        list(self._probes.map(quiet, due))

    # ---- placement -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def reserve(self, n: int = 1, exclude: Sequence[Server] = ()) -> Iterator[Server]:
        """Hold ``n`` places on the up server where this client may open the most sessions, while they open.

        Call :meth:`opened` for each session that opened, inside the block.

        Raises:
            ServerLost: if no server (outside ``exclude``) is up; it names them and why each is down.
        """
        if self._closed:
            raise OsgymError("the server set is closed")
        self._refresh()
        with self._lock:
            up = [s for s in self.servers if s.up and s not in exclude]
            if not up:
                causes = "; ".join(f"{s.url}: {'tried' if s in exclude else s.cause or 'down'}" for s in self.servers)
                raise ServerLost(", ".join(s.url for s in self.servers), f"no server can take a session ({causes})")
            # room for all n first, then the most room, then the least loaded for its size
            best = max(up, key=lambda s: (s.free - s.pending >= n, s.free - s.pending, (s.free - s.pending) / s.limit,
                                          s.replicas_free - s.pending))
            best.pending += n
        try:
            yield best
        finally:
            with self._lock:
                best.pending -= n

    def opened(self, server: Server) -> None:
        """Count a session that opened on ``server`` against its free capacity and its ready replicas (it leased
        one), until the next probe."""
        with self._lock:
            server.free -= 1
            server.replicas_free = max(0, server.replicas_free - 1)

    # ---- requests ------------------------------------------------------------------------------------
    def request(self, server: Server, method: str, path: str, *, session: RemoteSession | None = None,
                timeout: float | None = None, **kw: Any) -> dict[str, Any]:
        """Send a request to ``server`` (for ``session``, one of its sessions).

        Raises:
            ServerLost: for a session, if ``server`` was marked down since it opened, or gives no answer and
                no probe answers either, or a new server process answers: the session is gone.
            PolicyError: on a 400 (a bad action or task: nothing ran).
            OsgymError: on any other error status, or no answer from a server that still answers its probe.
        """
        run_id = None
        if session is not None:
            run_id = session.run_id
            with self._lock:
                down = not server.up or server.epoch != session.epoch
                restarted = server.run_id is not None and server.run_id != run_id
                cause = server.cause
            if down:
                raise ServerLost(server.url, f"marked down ({cause}): its sessions are gone")
            if restarted:
                raise ServerLost(server.url, f"restarted (run {server.run_id}, was {run_id}): its sessions are gone")
        if timeout is not None:
            kw["timeout"] = httpx.Timeout(timeout, connect=self.timeouts.connect)
        try:
            r = server.http.request(method, path, **kw)
        except httpx.TransportError as exc:
            raise self._no_answer(server, method, path, run_id, exc) from exc
        if r.status_code == 400:
            raise PolicyError(message_of(r))
        if r.status_code == 404 and session is not None:  # no such session: did a new server process answer?
            now_run = run_id
            with contextlib.suppress(OsgymError):
                now_run = str(self.probe(server).get("run_id"))
            if now_run != run_id:
                raise ServerLost(server.url, f"restarted (run {now_run}, was {run_id}): its sessions are gone")
        if r.status_code >= 400:
            raise OsgymError(f"server {server.url}: {method} {path}: {r.status_code} {message_of(r)}")
        body: dict[str, Any] = r.json()
        return body

    def _no_answer(self, server: Server, method: str, path: str, run_id: str | None,
                   exc: httpx.TransportError) -> OsgymError:
        """What a request that got no answer means: the server is lost, it restarted, or it was a passing fault."""
        what = f"{method} {path}: {type(exc).__name__}: {exc}".rstrip(": ")
        try:
            body = self.probe(server)
        except ServerLost:
            return ServerLost(server.url, f"lost ({what}), and no answer to a probe either: its sessions are "
                                          f"gone; new sessions go to the other servers")
        except OsgymError as other:
            return other
        if run_id is not None and str(body.get("run_id")) != run_id:
            return ServerLost(server.url, f"restarted ({what}): its sessions are gone")
        return OsgymError(f"server {server.url}: {what} (the server still answers)")

    def open(self, path: str, body: dict[str, Any], id_key: str, server: Server | None = None
             ) -> tuple[RemoteSession, dict[str, Any]]:
        """Open a session (``POST path``) on ``server``, or on the server :meth:`reserve` picks, then on the
        next one while a server is lost on the way.

        Raises:
            ServerLost: if ``server`` is lost, or (without ``server``) every server is down.
            PolicyError, OsgymError: as :meth:`request` (a bad task, no free replica: not tried elsewhere).
        """
        if server is not None:
            if server.run_id is None:
                self.probe(server)  # which server process the session opens under
            epoch = server.epoch
            out = self.request(server, "POST", path, json=body, timeout=self.timeouts.open)
            self.opened(server)
            return RemoteSession(server, int(out[id_key]), server.run_id, epoch), out
        tried: list[Server] = []
        while True:
            with self.reserve(1, exclude=tried) as chosen:
                try:
                    return self.open(path, body, id_key, chosen)
                except ServerLost:
                    tried.append(chosen)

    def close(self) -> None:
        """Close every server's connections. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._probes.shutdown(wait=False)
        for s in self.servers:
            s.http.close()


