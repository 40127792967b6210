"""How the host's client reads a replica's answers: one TLS context for all clients, a deadline that
covers connect, send, headers and body of each request, and a size cap per kind of answer.

A replica that misbehaves, or a process impersonating one on its socket, can answer without end,
slowly, or with a compression bomb; :class:`~osgym.replicas.client.ControlClient` reads every
answer through this module so none of these holds the host or fills its memory.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx
from httpcore._backends.sync import SyncStream

from osgym.errors import ResponseTooLarge
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


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose reads and writes all end by the current request's deadline.

    httpx's timeouts bound each read; a server sending a byte just within each one (headers
    or body) would hold the caller for ever. Here every read and write gets at most what is
    left of the request's time, and fails with a timeout once it is up.
    """

    def __init__(self, inner: httpcore.NetworkStream, ends: Callable[[], float | None]):
        self._inner = inner
        self._ends = ends

    def _cut(self, timeout: float | None, error: type[Exception]) -> float | None:
        ends = self._ends()
        if ends is None:
            return timeout
        left = ends - time.monotonic()
        if left <= 0:
            raise error("the request's time was up")
        return left if timeout is None else min(timeout, left)

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._cut(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._cut(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, self._cut(timeout, httpcore.ConnectTimeout))
        return _DeadlineStream(tls, self._ends)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore.SyncBackend):
    """httpcore's socket backend, its connections wrapped in :class:`_DeadlineStream`; a Unix socket is
    connected without following a symlink, and only if it belongs to ``socket_owner``
    (:func:`osgym.replicas.unix_socket.connect_unix`)."""

    def __init__(self, ends: Callable[[], float | None], socket_owner: int | None = None):
        self._ends = ends
        self._owner = socket_owner

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        return _DeadlineStream(super().connect_tcp(host, port, timeout, local_address, socket_options), self._ends)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        try:
            sock = connect_unix(path, owner=self._owner, timeout=timeout)
        except TimeoutError as exc:  # socket.timeout
            raise httpcore.ConnectTimeout(str(exc)) from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            sock.setsockopt(*option)
        return _DeadlineStream(SyncStream(sock), self._ends)


class Transport(httpx.HTTPTransport):
    """httpx's transport over :class:`_DeadlineBackend`.

    httpx takes no network backend, so the connection pool it built is replaced by one with
    the same settings (httpx's default limits, no retries) and that backend. ``socket_owner`` is the uid
    that a Unix socket ``uds`` must belong to (None: any).
    """

    def __init__(self, uds: str | None, ends: Callable[[], float | None], socket_owner: int | None = None):
        super().__init__(uds=uds, retries=0, verify=_tls_context())
        limits = httpx.Limits()
        self._pool = httpcore.ConnectionPool(
            ssl_context=_tls_context(), max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
            uds=uds, retries=0, network_backend=_DeadlineBackend(ends, socket_owner))


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying TLS context for every client. httpx builds a new one per transport by
    default, loading the CA bundle each time (~25 ms of CPU), and a run opens a client per replica."""
    return ssl.create_default_context()


def read_capped(r: httpx.Response, cap: int, what: str) -> bytes:
    """The body of streamed answer ``r``, at most ``cap`` bytes of it.

    Raises:
        ResponseTooLarge: if it announces or sends more than ``cap`` bytes, or is encoded.
    """
    encoding = r.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity":
        raise ResponseTooLarge(f"{what}: answer encoded as {encoding!r}; the replica sends identity only")
    declared = r.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > cap:
        raise ResponseTooLarge(f"{what}: answer of {declared} bytes announced, more than the {cap} it may have")
    chunks: list[bytes] = []
    size = 0
    for chunk in r.iter_raw():
        size += len(chunk)
        if size > cap:
            raise ResponseTooLarge(f"{what}: answer passed {cap} bytes, more than it may have")
        chunks.append(chunk)
    return b"".join(chunks)  # one copy (a screenshot is on the hot path)


__all__ = ["DEFAULT_CAPS", "ResponseCaps", "Transport", "read_capped"]
