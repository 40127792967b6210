"""Fixtures for policy tests: a real OpenAI-compatible server on 127.0.0.1, real PNG screenshots."""

from __future__ import annotations

import functools
import io
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image, ImageDraw

from osgym.replicas.observation import Observation


@dataclass
class Reply:
    """One scripted answer of the fake server."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Recorded:
    """One request the fake server received."""

    path: str
    headers: dict[str, str]
    body: Any


class FakeOpenAI:
    """A stdlib HTTP server answering ``POST /v1/chat/completions`` from a script.

    Each request takes the next scripted :class:`Reply`; with none left it
    answers 599 so that a test notices. Every request is recorded.
    """

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as httpx expects

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw
                with fake._lock:
                    fake.requests.append(Recorded(self.path, dict(self.headers.items()), body))
                    if self.path != "/v1/chat/completions":
                        reply = Reply(404, b'{"error": {"message": "no such route"}}')
                    else:
                        reply = fake.replies.popleft() if fake.replies else Reply(599, b"no scripted reply left")
                self.send_response(reply.status)
                for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-openai", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def chat(self, content: str | None, *, usage: dict[str, int] | None = None, **message: Any) -> None:
        """Script a successful chat completion whose message holds ``content``."""
        body = {
            "id": f"chatcmpl-{len(self.replies)}",
            "object": "chat.completion",
            "model": "fake-model",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content, **message},
                 "finish_reason": "stop"}
            ],
            "usage": usage or {"prompt_tokens": 1000, "completion_tokens": 20, "total_tokens": 1020},
        }
        self.replies.append(Reply(200, json.dumps(body).encode()))

    def error(self, status: int, message: str = "error", headers: dict[str, str] | None = None) -> None:
        """Script an error answer with an OpenAI-style error body."""
        body = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
        self.replies.append(Reply(status, body, headers or {}))

    def raw(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.replies.append(Reply(status, body, headers or {}))

    def completions(self) -> list[dict[str, Any]]:
        """The JSON bodies of the chat-completion requests received so far."""
        return [r.body for r in self.requests if r.path == "/v1/chat/completions"]


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    # The operator allows this endpoint (only this one): the policy refuses any other base_url.
    monkeypatch.setenv("OSGYM_MODEL_BASE_URLS", fake.base_url)
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(timeout=5)


@functools.lru_cache(maxsize=64)
def png_screenshot(width: int = 1920, height: int = 1080, shade: int = 0) -> bytes:
    """A real PNG: a desktop-like picture with a window and a button."""
    img = Image.new("RGB", (width, height), (40 + shade % 200, 60, 90))
    draw = ImageDraw.Draw(img)
    draw.rectangle((width // 8, height // 8, width // 2, height // 2), fill=(230, 230, 230), outline=(0, 0, 0))
    draw.rectangle((width // 4, height // 3, width // 4 + 120, height // 3 + 40), fill=(30, 120, 220))
    draw.text((width // 8 + 10, height // 8 + 10), f"step {shade}", fill=(0, 0, 0))
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


def jpeg_screenshot(width: int = 1280, height: int = 800) -> bytes:
    img = Image.new("RGB", (width, height), (200, 100, 50))
    out = io.BytesIO()
    img.save(out, format="JPEG", quality=80)
    return out.getvalue()


def observation(step: int = 0, *, width: int = 1920, height: int = 1080, shot: bytes | None = None,
                fmt: str = "png", instruction: str = "Save the file as notes.txt") -> Observation:
    return Observation(
        screenshot=shot if shot is not None else png_screenshot(width, height, shade=step * 37),
        screenshot_format=fmt,
        width=width,
        height=height,
        instruction=instruction,
        step=step,
    )


def task(instruction: str = "Save the file as notes.txt", task_id: str = "save-notes") -> SimpleNamespace:
    """A stand-in for TaskSpec: policies may read only ``id`` and ``instruction``."""
    return SimpleNamespace(id=task_id, instruction=instruction)


@pytest.fixture
def make_observation():
    return observation


@pytest.fixture
def make_task():
    return task


@pytest.fixture
def make_png():
    return png_screenshot


@pytest.fixture
def make_jpeg():
    return jpeg_screenshot
