"""Screenshots resized for a model: a size under a longest side and a pixel budget, and the re-encoding.

Exports resize each screenshot once and scale the actions' coordinates by the same factors
(:func:`osgym.agents.formats.scale_actions`, screen to image), so a click lands on the same element
of the smaller picture. Resampling is the one :class:`~osgym.agents.policies.openai.OpenAIPolicy` uses
when it downscales screenshots for a model (bicubic), so a model trained on an export sees at
inference the kind of picture it was trained on.
"""

from __future__ import annotations

import io
import math

from PIL import Image

__all__ = ["encoded_size", "fit_size", "resize_frame"]

JPEG_QUALITY = 90


def fit_size(size: tuple[int, int], max_side: int | None = None, max_pixels: int | None = None) -> tuple[int, int]:
    """The largest size with ``size``'s aspect ratio, no side over ``max_side`` and at most ``max_pixels`` pixels.

    Never enlarges; each side stays at least 1.

    >>> fit_size((1920, 1080), max_side=1280)
    (1280, 720)
    >>> fit_size((1920, 1080), max_pixels=1280 * 720)
    (1280, 720)
    >>> fit_size((800, 600), max_side=1280)
    (800, 600)
    """
    w, h = size
    scale = 1.0
    if max_side is not None and max(w, h) > max_side:
        scale = max_side / max(w, h)
    if max_pixels is not None and w * h * scale * scale > max_pixels:
        scale = math.sqrt(max_pixels / (w * h))
    if scale >= 1.0:
        return w, h
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    while max_pixels is not None and nw * nh > max_pixels and (nw > 1 or nh > 1):  # rounding up can pass the budget
        nw, nh = max(1, nw - (nw >= nh)), max(1, nh - (nh > nw))
    return nw, nh


def encoded_size(data: bytes) -> tuple[tuple[int, int], str]:
    """The pixel size and format (``png``, ``jpeg``, ...) of an encoded image, from its header.

    Raises:
        PIL.UnidentifiedImageError, OSError: if the bytes are not an image Pillow reads.
    """
    with Image.open(io.BytesIO(data)) as img:
        return img.size, (img.format or "png").lower()


def resize_frame(data: bytes, size: tuple[int, int]) -> tuple[bytes, str]:
    """``data`` resized to ``size`` and encoded in its own format (JPEG stays JPEG, anything else PNG).

    Returns the bytes unchanged when they already have that size.

    Raises:
        PIL.UnidentifiedImageError, OSError: if the bytes are not an image Pillow reads.
    """
    with Image.open(io.BytesIO(data)) as img:
        fmt = (img.format or "png").lower()
        if img.size == size:
            return data, fmt
        source = img if img.mode in ("RGB", "L") else img.convert("RGB")
        small = source.resize(size, Image.Resampling.BICUBIC, reducing_gap=2.0)
    out = io.BytesIO()
    if fmt == "jpeg":
        small.save(out, format="JPEG", quality=JPEG_QUALITY)
    else:
        fmt = "png"
        small.save(out, format="PNG", compress_level=6)
    return out.getvalue(), fmt
