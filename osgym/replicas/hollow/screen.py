"""The synthetic screen of hollow replicas: a few frames, encoded once and shared by every replica.

A frame is a flat desktop with one bright block whose place depends on the frame's number, so a screenshot
changes when the replica's state does (every action moves to the next frame) and the writer stores what it
would store for a real screen: an encoded PNG or JPEG of the screen's size. Encoding is the only costly
part, so each (size, format, quality, frame) is encoded once and kept (at most :data:`MAX_CACHED`).
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict

from PIL import Image, ImageDraw

__all__ = ["FRAMES", "MAX_CACHED", "Frames", "scaled"]

FRAMES = 16
"""Distinct frames a hollow screen cycles through."""
MAX_CACHED = 256
"""Encoded frames kept; the least recently used goes first."""


def scaled(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """The size a screenshot of ``width`` x ``height`` is sent at, its longer side at most ``max_side``.

    >>> scaled(1920, 1080, 960), scaled(800, 600, None), scaled(100, 50, 400)
    ((960, 540), (800, 600), (100, 50))
    """
    if max_side is None or max(width, height) <= max_side:
        return width, height
    k = max_side / max(width, height)
    return max(1, round(width * k)), max(1, round(height * k))


class Frames:
    """Encoded frames, cached; safe to share between threads."""

    def __init__(self) -> None:
        self._cache: OrderedDict[tuple[int, int, str, int, int], bytes] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, size: tuple[int, int], fmt: str, quality: int, frame: int) -> bytes:
        """Frame ``frame % FRAMES`` at ``size``, as ``png`` or ``jpeg`` (``quality`` for JPEG only)."""
        key = (size[0], size[1], fmt, quality if fmt == "jpeg" else 0, frame % FRAMES)
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
                return data
        data = _encode(*key)
        with self._lock:
            self._cache[key] = data
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        return data


def _encode(width: int, height: int, fmt: str, quality: int, frame: int) -> bytes:
    img = Image.new("RGB", (width, height), (32, 48, 64))
    side = max(1, min(width, height) // 8)
    cols = max(1, width // side)
    x, y = (frame % cols) * side, (frame // cols) * side % max(1, height - side)
    ImageDraw.Draw(img).rectangle((x, y, x + side - 1, y + side - 1), fill=(230, 200, 40))
    out = io.BytesIO()
    if fmt == "png":
        img.save(out, "PNG", compress_level=1)
    else:
        img.save(out, "JPEG", quality=quality)
    return out.getvalue()
