"""A cap on request bodies, counted as the bytes arrive rather than taken from ``Content-Length``.

A header is only a claim: h11 accepts ``Content-Length`` together with ``Transfer-Encoding: chunked``
and then reads the chunked body, of any size, which FastAPI buffers whole. :class:`BodyCap` wraps the
ASGI ``receive`` of every HTTP request and counts what it hands on; past the cap the application is
told that the client left (``http.disconnect``), whatever it answers is replaced by a 413 that closes
the connection, and the rest of the body is never read. (Raising from ``receive`` instead would reach
FastAPI wrapped in the task groups of the middleware between, which turns it into a 400.) A declared
length over the cap is refused at once, before the first byte, and a chunked body without a length is
refused (411), as before.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["BodyCap"]


class BodyCap:
    """ASGI middleware: bodies of at most ``max_bytes``, counted as they arrive.

    Args:
        app: the application.
        max_bytes: the largest body read.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
        length = headers.get("content-length")
        if length is not None and (not length.strip().isdigit() or int(length) > self.max_bytes):
            await _answer(send, 413, f"expected a body of at most {self.max_bytes} bytes, actual {length}",
                          "PayloadTooLarge")
            return
        if scope.get("method") in ("POST", "PUT") and length is None and "transfer-encoding" in headers:
            await _answer(send, 411, "expected a Content-Length header (chunked bodies are not read)",
                          "LengthRequired")
            return
        seen = 0
        over = False
        started = False

        async def counted() -> Message:
            nonlocal seen, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            if over:  # the application's answer to a body it never had: ours instead, once
                if not started:
                    started = True
                    await _answer(send, 413, f"expected a body of at most {self.max_bytes} bytes, actual more",
                                  "PayloadTooLarge")
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted, watched)
        if over and not started:
            await _answer(send, 413, f"expected a body of at most {self.max_bytes} bytes, actual more",
                          "PayloadTooLarge")


async def _answer(send: Send, status: int, message: str, kind: str) -> None:
    body = json.dumps({"message": message, "error": kind}).encode()
    headers: list[Any] = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                          (b"connection", b"close")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
