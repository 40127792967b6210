"""A viewer's side of the live view, for the serve tests: an RFB client written from RFC 6143 over a websocket."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

import websockets.exceptions
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

BINARY = [Subprotocol("binary")]


class RFB:
    """The client side of RFB 3.8 (RFC 6143) over a websocket: enough to log in, read frames and send input."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.buf = b""

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            msg = self.ws.recv(timeout=60)
            self.buf += msg if isinstance(msg, bytes) else msg.encode()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def handshake(self) -> tuple[int, int, int, bytes]:
        """Version, security None, ClientInit (shared); returns (width, height, bits per pixel, name)."""
        version = self.read(12)
        assert version.startswith(b"RFB 003."), version
        self.ws.send(b"RFB 003.008\n")
        types = self.read(self.read(1)[0])
        assert 1 in types, f"expected security type None among {list(types)}"
        self.ws.send(b"\x01")
        assert struct.unpack(">I", self.read(4))[0] == 0, "security handshake failed"
        self.ws.send(b"\x01")  # ClientInit: shared
        width, height = struct.unpack(">HH", self.read(4))
        bpp = self.read(16)[0]
        name = self.read(struct.unpack(">I", self.read(4))[0])
        self.ws.send(struct.pack(">BxHi", 2, 1, 0))  # SetEncodings: Raw only
        return width, height, bpp, name

    def frame(self, bpp: int, x: int, y: int, w: int, h: int) -> list[tuple[int, int, int, int, bytes]]:
        """Ask for a full update of a region and read the FramebufferUpdate that answers it."""
        self.ws.send(struct.pack(">BBHHHH", 3, 0, x, y, w, h))
        while True:
            kind = self.read(1)[0]
            if kind == 0:
                break
            if kind == 2:  # Bell
                continue
            if kind == 3:  # ServerCutText
                self.read(3)
                self.read(struct.unpack(">I", self.read(4))[0])
                continue
            raise AssertionError(f"unexpected server message {kind}")
        self.read(1)
        rects = []
        for _ in range(struct.unpack(">H", self.read(2))[0]):
            rx, ry, rw, rh, enc = struct.unpack(">HHHHi", self.read(12))
            assert enc == 0, f"expected Raw rectangles only, actual encoding {enc}"
            rects.append((rx, ry, rw, rh, self.read(rw * rh * bpp // 8)))
        return rects

    def pointer(self, mask: int, x: int, y: int) -> None:
        self.ws.send(struct.pack(">BBHH", 5, mask, x, y))

    def key(self, keysym: int, down: bool) -> None:
        self.ws.send(struct.pack(">BBxxI", 4, int(down), keysym))


def wait_for(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def refused(uri: str) -> bool:
    try:
        with connect(uri, subprotocols=BINARY, open_timeout=30) as ws:
            ws.recv(timeout=30)
    except (websockets.exceptions.InvalidHandshake, websockets.exceptions.ConnectionClosed, OSError, EOFError):
        return True
    return False
