"""``ControlClient``: the HTTP request layer of one replica's control API.

Every request goes through keep-alive HTTP/1.1 connections (:class:`~osgym.replicas.transport.Connections`),
over the Unix socket the container shares with the host (no network) or over a TCP port published on
127.0.0.1. Every answer is capped by the kind of request (:class:`~osgym.replicas.transport.ResponseCaps`) and
must be in whole within its request's time, so a replica that misbehaves (or a process impersonating one)
costs a replica fault, never the host's memory or a hung episode. Transport failures become osgym's errors.

Reads (``GET``: health, screenshot, windows, accessibility, files) that fail to connect are retried a few
times with a short backoff (:data:`READ_RETRY`), so a server that is briefly unreachable does not cost the
episode. Requests that act (``POST``/``PUT``) are never retried here: whether a retry is safe is the caller's.
"""

from __future__ import annotations

import contextlib
import http.client
import json as jsonlib
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from osgym.errors import ActionFailed, EpisodeTimeout, ReplicaUnreachable, RequestRejected
from osgym.replicas.transport import DEFAULT_CAPS, READS, ConnectFailed, Connections, ResponseCaps, TimedOut
from osgym.retrying import retrying

__all__ = ["DEFAULT_TIMEOUTS", "READ_RETRY", "ControlClient", "ReadRetry", "Timeouts"]


@dataclass(frozen=True)
class Timeouts:
    """Finite deadlines for control traffic, in seconds: ``connect`` bounds making a connection, ``read`` a
    whole request (sending it and reading its answer) unless the call gives its own, ``health`` a health check.
    ``write`` and ``pool`` are kept for configurations that set them; the whole-request bound covers both."""

    connect: float = 2.0
    read: float = 30.0
    write: float = 10.0
    pool: float = 5.0
    health: float = 2.0


DEFAULT_TIMEOUTS = Timeouts()



@dataclass(frozen=True)
class ReadRetry:
    """How idempotent reads are retried when the connection cannot be made.

    Only a failed *connect* is retried: then the request never reached the server. A read that
    timed out may be a hung replica, which the caller must learn about within its deadline.
    """

    attempts: int = 3
    backoff_s: float = 0.2
    backoff_max_s: float = 1.0


READ_RETRY = ReadRetry()
"""At most 0.2 + 0.4 s of waiting: enough for a socket that is being re-created, short enough that a
dead replica is still reported at once."""


def _never_connected(exc: BaseException) -> bool:
    """The request failed before a connection existed, so the server never saw it."""
    return isinstance(exc, ReplicaUnreachable) and isinstance(exc.__cause__, ConnectFailed)


class ControlClient:
    """HTTP client for one replica's control API. Maps transport errors onto osgym errors."""

    def __init__(self, endpoint: str, token: str | None, timeouts: Timeouts = DEFAULT_TIMEOUTS,
                 caps: ResponseCaps = DEFAULT_CAPS, read_retry: ReadRetry = READ_RETRY, *,
                 socket_owner: int | None = None):
        self.endpoint = endpoint
        self.socket_owner = socket_owner
        """The uid a Unix ``endpoint``'s socket must belong to (None: any); it is never reached through a
        symlink (:mod:`osgym.replicas.unix_socket`)."""
        self.read_retry = read_retry
        # The replica never compresses; asking for identity means an encoded answer is a protocol
        # error, never a small body that inflates past its cap in one decoding step.
        self.headers = {"Accept-Encoding": "identity"}
        """Headers sent with every request (the bearer token among them)."""
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.timeouts = timeouts
        self.caps = caps
        self._deadline: float | None = None
        self._conns = Connections(endpoint, socket_owner)

    def set_token(self, token: str) -> None:
        """Send ``token`` from now on (after the replica took it: :meth:`Replica.replace_token`)."""
        self.headers["Authorization"] = f"Bearer {token}"

    def __repr__(self) -> str:
        return f"ControlClient({self.endpoint!r}, token=***)"

    @contextlib.contextmanager
    def deadline(self, at: float | None) -> Iterator[None]:
        """Within the block, no request may end after ``at`` (a ``time.monotonic()`` value).

        Each request's timeout is cut to the time left, and a request that runs out of it
        raises :class:`~osgym.errors.EpisodeTimeout`, not a replica fault: the episode ran out
        of time, the replica did not fail. One thread at a time drives a leased replica, so the
        deadline is a plain attribute.
        """
        previous, self._deadline = self._deadline, at
        try:
            yield
        finally:
            self._deadline = previous

    def request(self, method: str, path: str, *, timeout: float | None = None, **kw: Any) -> httpx.Response:
        """One request, its whole answer read within ``timeout`` (else the client's read timeout).

        The answer is streamed and capped by :attr:`caps` for its path, and the time limit covers
        the whole exchange (connecting, sending, headers and body), so a replica trickling bytes
        cannot hold the caller past it. An idempotent request whose connection could not be made
        is tried again (:attr:`read_retry`), each attempt with the whole time limit.

        Raises:
            ReplicaUnreachable: the replica did not answer, or not in time (for a read: on every attempt).
            ResponseTooLarge: the answer is larger than its cap, or encoded.
            RequestRejected: the replica answered 4xx.
            ActionFailed: the replica answered 5xx.
            EpisodeTimeout: within :meth:`deadline`, the deadline passed first.
        """
        if method.upper() not in READS:
            return self._request_once(method, path, timeout=timeout, **kw)
        try:  # the first try outside the retry policy: building one costs more than the request (hot path)
            return self._request_once(method, path, timeout=timeout, **kw)
        except ReplicaUnreachable as exc:
            if not _never_connected(exc) or self.read_retry.attempts < 2:
                raise
        policy = self.read_retry  # the rest as the policy has them: the first wait, then the backoff doubling
        time.sleep(min(policy.backoff_s, policy.backoff_max_s))
        for attempt in retrying(attempts=policy.attempts - 1, on=_never_connected, backoff_s=policy.backoff_s * 2,
                                backoff_max_s=policy.backoff_max_s):
            with attempt:
                return self._request_once(method, path, timeout=timeout, **kw)
        raise AssertionError("unreachable: retrying returns or raises")  # pragma: no cover

    def _request_once(self, method: str, path: str, *, timeout: float | None = None, **kw: Any) -> httpx.Response:
        r = self.send(method, path, timeout=timeout, **kw)
        if r.status_code >= 400:
            try:
                msg = r.json().get("error", r.text)
            except (ValueError, AttributeError):
                msg = r.text[:500]
            if r.status_code < 500:
                raise RequestRejected(f"{method} {path} -> {r.status_code}: {msg}", r.status_code)
            raise ActionFailed(f"{method} {path} -> {r.status_code}: {msg}")
        return r

    def send(self, method: str, path: str, *, timeout: float | None = None, params: dict[str, Any] | None = None,
             json: Any = None, content: bytes | None = None, headers: dict[str, str] | None = None) -> httpx.Response:
        """One exchange, its answer whatever its status (:meth:`request` turns a 4xx or 5xx into an error): the
        answer capped by :attr:`caps` for its path, the whole exchange within ``timeout`` (else the read
        timeout) and within :meth:`deadline`.

        Raises:
            ReplicaUnreachable: the replica did not answer, or not in time.
            ResponseTooLarge: the answer is larger than its cap, or encoded.
            EpisodeTimeout: within :meth:`deadline`, the deadline passed first.
        """
        method = method.upper()
        limit = self.timeouts.read if timeout is None else timeout
        by_deadline = False
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise EpisodeTimeout(f"{method} {path}: the episode's deadline passed before the request")
            if left < limit:
                limit, by_deadline = left, True
        sent = dict(self.headers)
        if headers:
            sent.update(headers)
        body = content
        if json is not None:
            body = jsonlib.dumps(json).encode()
            sent.setdefault("Content-Type", "application/json")
        target = f"{path}?{urllib.parse.urlencode(params)}" if params else path
        what = f"{method} {path} on {self.endpoint}"
        try:
            answer = self._conns.exchange(method, target, body, sent, limit=limit,
                                          connect_limit=min(self.timeouts.connect, limit),
                                          cap=self.caps.for_path(path), what=what)
        except TimedOut as exc:
            if by_deadline:
                raise EpisodeTimeout(f"{method} {path}: the episode's deadline passed during the request") from exc
            raise ReplicaUnreachable(f"{method} {path} timed out after {limit:g} s on {self.endpoint}: {exc}") \
                from exc
        except (ConnectFailed, OSError, http.client.HTTPException) as exc:
            if isinstance(exc, ReplicaUnreachable):  # the socket is not the replica's: refused before sending
                raise
            raise ReplicaUnreachable(f"{method} {path} failed on {self.endpoint}: {exc!r}") from exc
        return httpx.Response(answer.status, headers=answer.headers, content=answer.content)

    @property
    def is_closed(self) -> bool:
        """Whether no connection is kept open."""
        return self._conns.kept() == 0

    def close(self) -> None:
        """Close the kept connections (idempotent); a later request connects anew."""
        self._conns.close()
