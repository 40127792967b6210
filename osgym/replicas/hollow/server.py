"""The hollow server: one process, one event loop, every hollow replica of a pool, each on its own Unix socket.

``python -m osgym.replicas.hollow.server`` reads commands from its standard input, one JSON object a line, and
answers each on its standard output, one line each, in order:

- ``{"op": "add", "id": ID, "path": SOCKET, "token": TOKEN, "screen": [W, H]}``: serve a new replica on
  ``SOCKET`` (made at ``SOCKET.tmp`` and renamed, so it appears only once it accepts, as a real replica's);
- ``{"op": "remove", "id": ID}``: stop serving it and close its connections;
- ``{"op": "ping"}``: ``{"ok": true, "replicas": N}``.

Answers are ``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``. The token comes through the pipe, never
the environment or the command line. The server stops when its input closes (the pool closed, or its process
died): no hollow replica outlives its pool.

HTTP is spoken as the replica's server speaks it (``replica_images/server/osgym_replica.py``): keep-alive
HTTP/1.1, a request refused on its headers before its body is read (401 without the token, 411 for a chunked
body, 400 for a bad Content-Length, 404/405, 413 past the route's limit), a body that is not in within
:data:`BODY_TIMEOUT_S` refused with 408, and every error as JSON ``{"error": message}``. A replica costs one
listening socket and one per open connection, and no thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import sys
import threading
import time
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, urlsplit

from osgym.replicas.hollow.desktop import HollowDesktop, HttpError
from osgym.replicas.hollow.screen import Frames

__all__ = ["HollowServer", "main", "raise_fd_limit"]

MAX_HEAD = 64 * 1024
"""Largest request line plus headers (http.server's line limit)."""
MAX_HEADERS = 100
BODY_TIMEOUT_S = 10.0
IDLE_S = 300.0
"""A connection that sends no request for this long is closed."""


def raise_fd_limit() -> int:
    """Raise this process's soft limit on open files to its hard limit; returns the new soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft < hard:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


class _Served:
    def __init__(self, desktop: HollowDesktop, server: asyncio.AbstractServer, path: str):
        self.desktop, self.server, self.path = desktop, server, path
        self.conns: set[asyncio.StreamWriter] = set()


class HollowServer:
    """Serves hollow replicas on the running event loop; :meth:`command` adds and removes them."""

    def __init__(self) -> None:
        self.frames = Frames()
        self.served: dict[str, _Served] = {}

    async def command(self, msg: dict[str, Any]) -> dict[str, Any]:
        op = msg.get("op")
        try:
            if op == "add":
                await self.add(str(msg["id"]), str(msg["path"]), str(msg["token"]),
                               (int(msg["screen"][0]), int(msg["screen"][1])))
                return {"ok": True}
            if op == "remove":
                await self.remove(str(msg["id"]))
                return {"ok": True}
            if op == "ping":
                return {"ok": True, "replicas": len(self.served)}
            return {"ok": False, "error": f"op: expected add, remove or ping, actual {op!r:.40}"}
        except (KeyError, TypeError, ValueError, IndexError, OSError) as exc:
            return {"ok": False, "error": f"{op}: {type(exc).__name__}: {exc}"}

    async def add(self, rid: str, path: str, token: str, screen: tuple[int, int]) -> None:
        if rid in self.served:
            raise ValueError(f"replica {rid} is served already")
        desktop = HollowDesktop(token, screen, self.frames)
        tmp = path + ".tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        served: _Served | None = None

        async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            assert served is not None
            await self._connection(served, reader, writer)

        server = await asyncio.start_unix_server(connected, path=tmp, limit=MAX_HEAD)
        served = _Served(desktop, server, path)
        os.chmod(tmp, 0o660)
        os.rename(tmp, path)
        self.served[rid] = served

    async def remove(self, rid: str) -> None:
        served = self.served.pop(rid, None)
        if served is None:
            return
        served.server.close()
        for w in list(served.conns):
            w.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(served.path)

    async def _connection(self, served: _Served, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        served.conns.add(writer)
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), IDLE_S)
                except asyncio.LimitOverrunError:
                    await _send(writer, 431, {"error": "request line and headers too long"}, close=True)
                    return
                except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                    return
                if not await self._request(served.desktop, head, reader, writer):
                    return
        except ConnectionError:
            return
        finally:
            served.conns.discard(writer)
            writer.close()

    async def _request(self, desktop: HollowDesktop, head: bytes, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> bool:
        """Answer one request; whether the connection stays open."""
        t0 = time.perf_counter()
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _send(writer, 400, {"error": f"bad request line {lines[0]!r:.80}"}, close=True)
            return False
        method, target, version = parts
        headers: dict[str, str] = {}
        for line in lines[1:]:
            if not line:
                continue
            name, sep, value = line.partition(":")
            if not sep:
                await _send(writer, 400, {"error": f"bad header line {line!r:.80}"}, close=True)
                return False
            headers[name.strip().lower()] = value.strip()
        if len(headers) > MAX_HEADERS:
            await _send(writer, 431, {"error": f"more than {MAX_HEADERS} headers"}, close=True)
            return False
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        url = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        if not desktop.authorized(headers.get("authorization", "")):
            await _send(writer, 401, {"error": "missing or wrong bearer token"}, close=True, t0=t0)
            return False
        if headers.get("transfer-encoding"):
            await _send(writer, 411, {"error": "chunked bodies are not supported: send Content-Length"}, close=True)
            return False
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            await _send(writer, 400, {"error": "Content-Length: expected an integer"}, close=True)
            return False
        if length < 0:
            await _send(writer, 400, {"error": "Content-Length: expected >= 0"}, close=True)
            return False
        try:
            limit = desktop.body_limit(method, url.path)
        except HttpError as exc:  # no such route: its body stays unread, so the connection ends if it has one
            await _send(writer, exc.status, {"error": exc.message}, close=length > 0 or not keep, t0=t0)
            return keep and length == 0
        if length > limit:
            await _send(writer, 413, {"error": f"body of {length} bytes exceeds the {limit} that {method} {url.path} "
                                               "accepts"}, close=True)
            return False
        try:
            body = await asyncio.wait_for(reader.readexactly(length), BODY_TIMEOUT_S) if length else b""
        except TimeoutError:
            await _send(writer, 408, {"error": "request body: not in within its time"}, close=True)
            return False
        try:
            status, payload, extra, delay = desktop.route(method, url.path)(query, body)
        except HttpError as exc:
            status, payload, extra, delay = exc.status, {"error": exc.message}, None, 0.0
        if delay:
            await asyncio.sleep(delay)
        await _send(writer, status, payload, extra, close=not keep, t0=t0)
        return keep


async def _send(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any] | bytes,
                headers: dict[str, str] | None = None, *, close: bool = False, t0: float | None = None) -> None:
    if isinstance(payload, (bytes, bytearray)):
        data, kind = bytes(payload), "application/octet-stream"
    else:
        data, kind = json.dumps(payload).encode(), "application/json"
    extra = {"Content-Type": kind, **(headers or {})}
    if close:
        extra["Connection"] = "close"
    if t0 is not None:
        extra["Server-Timing"] = f"app;dur={(time.perf_counter() - t0) * 1000:.2f}"
    try:
        reason = HTTPStatus(status).phrase
    except ValueError:
        reason = "Status"
    head = [f"HTTP/1.1 {status} {reason}", "Server: osgym-hollow/1", f"Content-Length: {len(data)}",
            *(f"{k}: {v}" for k, v in extra.items())]
    writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)
    with contextlib.suppress(ConnectionError):
        await writer.drain()


def main() -> None:
    """Serve commands from standard input until it closes (see the module's docstring)."""
    raise_fd_limit()
    loop = asyncio.new_event_loop()
    server = HollowServer()
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

    def read_commands() -> None:
        try:
            for line in stdin:
                try:
                    msg = json.loads(line)
                    if not isinstance(msg, dict):
                        raise ValueError("expected a JSON object")
                    answer = asyncio.run_coroutine_threadsafe(server.command(msg), loop).result()
                except ValueError as exc:
                    answer = {"ok": False, "error": f"bad command: {exc}"}
                stdout.write(json.dumps(answer).encode() + b"\n")
                stdout.flush()
        finally:
            loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=read_commands, name="hollow-commands", daemon=True).start()
    try:
        loop.run_forever()
    finally:
        for rid in list(server.served):
            loop.run_until_complete(server.remove(rid))
        loop.close()


if __name__ == "__main__":
    main()
