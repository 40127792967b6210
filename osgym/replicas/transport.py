"""How the host's client speaks to a replica: keep-alive connections, a deadline that covers connect, send,
headers and body of each request, and a size cap per kind of answer.

A replica that misbehaves, or a process impersonating one on its socket, can answer without end,
slowly, or with a compression bomb; :class:`~osgym.replicas.client.ControlClient` reads every
answer through this module so none of these holds the host or fills its memory.
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from osgym.errors import ReplicaUnreachable, ResponseTooLarge
from osgym.replicas.unix_socket import connect_unix


@dataclass(frozen=True)
class ResponseCaps:
    """The largest answer the client reads from a replica, in bytes, by kind of request.

    An answer is read as a stream and dropped as soon as it passes its cap, so a replica
    that misbehaves (or a process impersonating one) cannot fill the host's memory. Each
    cap sits above what the replica's own server can send for that kind.
    """

    json: int = 4 * 2**20
    """Small JSON answers: health, windows, pointer, actions, launch, ..."""
    screenshot: int = 64 * 2**20
    """An encoded screenshot (a noisy 4K PNG is about 25 MiB)."""
    a11y: int = 200 * 2**20
    """An accessibility tree: at most 64 MiB of XML, or OSWorld's JSON-escaped copy of it in compat mode."""
    execute: int = 200 * 2**20
    """``/execute``: output and error, each at most 16 MiB of text, JSON-escaped."""
    file: int = 257 * 2**20
    """A file or a recording (the server sends at most 256 MiB)."""

    def for_path(self, path: str) -> int:
        """The cap for an answer from ``path``.

        >>> ResponseCaps().for_path("/screenshot") == 64 * 2**20
        True
        """
        kind = _CAP_KIND.get(path, "json")
        cap: int = getattr(self, kind)
        return cap


_CAP_KIND = {"/screenshot": "screenshot", "/accessibility": "a11y", "/execute": "execute", "/setup/execute": "execute",
             "/files": "file", "/recording": "file", "/file": "file", "/end_recording": "file"}

DEFAULT_CAPS = ResponseCaps()


KEEPALIVE_S = 5.0
"""How long an idle connection is kept for the next request. The replica's server closes an idle keep-alive
connection after 10 s (``replica_images/server/limits.py``), so a kept connection is never one it closed
for idling, and no liveness check (a syscall, and a turn of the GIL among a flow's 2,500 threads) is needed."""


READS = frozenset({"GET", "HEAD", "OPTIONS"})
"""Methods the control server only reads on (every GET route of ``replica_images/server`` is one): one sent on a
connection the server had closed is sent again, and one that could not connect is retried (``control.py``)."""


class TimedOut(Exception):
    """The request's time ran out (connecting, sending, or reading headers or body)."""


class ConnectFailed(Exception):
    """No connection could be made: the request never reached the server."""


class _DeadlineSocket(socket.socket):
    """A connected socket whose every send and receive ends by the current request's deadline.

    A per-operation timeout would let a server that sends a byte just within each one hold the caller
    for ever; here each operation gets what is left of the request's whole time.
    """

    ends: float | None = None

    def _cut(self) -> None:
        if self.ends is None:
            return
        left = self.ends - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's time was up")
        self.settimeout(left)

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._cut()
        return super().recv_into(buffer, nbytes, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._cut()
        super().sendall(data, flags)


class _Connection(http.client.HTTPConnection):
    """One keep-alive HTTP/1.1 connection, over a socket made by :meth:`Connections._connect`."""

    def __init__(self, sock: _DeadlineSocket, host: str) -> None:
        super().__init__(host, timeout=None)
        self.sock = sock
        self.idle_since = 0.0

    def connect(self) -> None:  # http.client reconnects a closed connection; a lost one must fail instead
        raise ConnectionResetError("the connection was closed")


@dataclass(frozen=True)
class Answer:
    """A replica's answer, read whole."""

    status: int
    headers: list[tuple[str, str]]
    content: bytes


class Connections:
    """Keep-alive connections to one replica, over its Unix socket or a TCP port, used one request at a time each.

    The standard library's ``http.client`` speaks HTTP here, not httpx: at 2,500 replicas the flow process's one
    interpreter spent 63 % of its time in the replica protocol's client, a third of it in httpx's and httpcore's
    own layers (URL parsing, header models, a liveness poll per request); the same request costs a third of
    the CPU through ``http.client`` (BENCHMARKS.md, issue 42). What this keeps of the old client: one deadline
    for the whole exchange, capped answers, a Unix socket reached without following a symlink and owned by
    ``socket_owner`` (:func:`osgym.replicas.unix_socket.connect_unix`).
    """

    def __init__(self, endpoint: str, socket_owner: int | None = None) -> None:
        if endpoint.startswith("unix:"):
            self._uds: str | None = endpoint[len("unix:"):]
            self._addr: tuple[str, int] | None = None
            self.host = "replica"
        else:
            url = urllib.parse.urlsplit(endpoint)
            if url.scheme != "http" or not url.hostname:
                raise ValueError(f"replica endpoint: expected unix:PATH or http://HOST:PORT, actual {endpoint!r}")
            self._uds, self._addr, self.host = None, (url.hostname, url.port or 80), url.netloc
        self._owner = socket_owner
        self._idle: list[_Connection] = []
        self._lock = threading.Lock()
        self._closed = False

    def _connect(self, timeout: float) -> _Connection:
        try:
            if self._uds is not None:
                plain = connect_unix(self._uds, owner=self._owner, timeout=timeout)
            else:
                assert self._addr is not None
                plain = socket.create_connection(self._addr, timeout=timeout)
                plain.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except TimeoutError as exc:
            raise ConnectFailed(f"connect timed out after {timeout:g} s") from exc
        except OSError as exc:
            if isinstance(exc, ReplicaUnreachable):  # an unsafe socket: refused before a byte was sent
                raise
            raise ConnectFailed(str(exc)) from exc
        sock = _DeadlineSocket(fileno=plain.detach())
        return _Connection(sock, self.host)

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if now - conn.idle_since < KEEPALIVE_S:
                    return conn
                conn.close()
        return None

    @staticmethod
    def _usable(conn: _Connection, method: str) -> bool:
        """Whether a kept connection may carry a request that acts. A read (or a request) sent on a connection
        the server had closed fails at once, and the caller retries a read (``ConnectionResetError``); a
        request that acts is never sent twice, so for one the connection is first checked for a close."""
        if method in READS:
            return True
        try:
            conn.sock.settimeout(0)  # with a timeout, Python would first wait for the socket to be readable
            conn.sock.recv(1, socket.MSG_PEEK)  # anything at all (an end, stray bytes): not for this request
        except BlockingIOError:
            return True
        except OSError:
            pass
        conn.close()
        return False

    def _give_back(self, conn: _Connection) -> None:
        conn.idle_since = time.monotonic()
        with self._lock:
            if not self._closed:
                self._idle.append(conn)
                return
        conn.close()

    def exchange(self, method: str, target: str, body: bytes | None, headers: dict[str, str], *,
                 limit: float, connect_limit: float, cap: int, what: str) -> Answer:
        """Send one request and read its whole answer, all within ``limit`` seconds.

        Raises:
            ConnectFailed: no connection could be made (the server never saw the request).
            TimedOut: the time ran out.
            ResponseTooLarge: the answer is larger than ``cap``, or encoded.
            OSError, http.client.HTTPException: the connection failed or the answer was not HTTP.
        """
        ends = time.monotonic() + limit
        kept = self._take()
        if kept is not None and self._usable(kept, method):
            try:
                return self._over(kept, ends, method, target, body, headers, cap, what)
            except ConnectionError:  # the server closed it while it was kept (a reset, a pipe, no answer)
                if method not in READS or time.monotonic() >= ends:
                    raise
        return self._over(self._connect(min(connect_limit, max(ends - time.monotonic(), 0.0))), ends, method,
                          target, body, headers, cap, what)

    def _over(self, conn: _Connection, ends: float, method: str, target: str, body: bytes | None,
              headers: dict[str, str], cap: int, what: str) -> Answer:
        sock = conn.sock
        assert isinstance(sock, _DeadlineSocket)
        sock.ends = ends
        try:
            conn.request(method, target, body=body, headers=headers)
            resp = conn.getresponse()
            content = _read_capped(resp, cap, what)
        except TimeoutError as exc:
            conn.close()
            raise TimedOut(str(exc) or "timed out") from exc
        except BaseException:
            conn.close()
            raise
        sock.ends = None
        if resp.will_close or conn.sock is None:  # http.client dropped the socket of a closing answer itself
            conn.close()
        else:
            self._give_back(conn)
        return Answer(resp.status, resp.getheaders(), content)

    def kept(self) -> int:
        """Connections kept open for the next request."""
        with self._lock:
            return len(self._idle)

    def close(self) -> None:
        """Close every kept connection; later requests connect anew."""
        with self._lock:
            self._closed = True  # a request still running keeps no connection after this
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


def _read_capped(resp: http.client.HTTPResponse, cap: int, what: str) -> bytes:
    """The body of ``resp``, at most ``cap`` bytes of it.

    Raises:
        ResponseTooLarge: if it announces or sends more than ``cap`` bytes, or is encoded.
    """
    encoding = (resp.getheader("Content-Encoding") or "identity").strip().lower()
    if encoding != "identity":
        raise ResponseTooLarge(f"{what}: answer encoded as {encoding!r}; the replica sends identity only")
    if resp.length is not None:  # a declared length: read it in one go (a screenshot is on the hot path)
        if resp.length > cap:
            raise ResponseTooLarge(f"{what}: answer of {resp.length} bytes announced, more than the {cap} it may have")
        return resp.read()
    chunks: list[bytes] = []
    size = 0
    while chunk := resp.read1(2**16):
        size += len(chunk)
        if size > cap:
            raise ResponseTooLarge(f"{what}: answer passed {cap} bytes, more than it may have")
        chunks.append(chunk)
    return b"".join(chunks)


__all__ = ["DEFAULT_CAPS", "Answer", "ConnectFailed", "Connections", "ResponseCaps", "TimedOut"]
