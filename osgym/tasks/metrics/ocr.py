"""Text in a picture, after OSWorld's ``compare_image_text`` (in its ``docs.py``), read with Tesseract.

OSWorld reads the picture with easyocr (a torch model it downloads on first use) and joins the pieces it
finds with spaces; osgym runs Debian's Tesseract (``tesseract-ocr``, ``tesseract-ocr-eng``) in a
subprocess and joins its words with single spaces. The two engines read some characters differently,
so the scores agree only where both read the text alike (docs/osworld-coverage.md).

The picture is the agent's: any format Pillow reads, or an X11 screen dump (``xwd``, which
desktop-env 1.0.2 converts too) of 24 or 32 bits a pixel. One that cannot be read, declares more than
``images.MAX_PIXELS`` pixels (a screen dump: ``XWD_MAX_PIXELS``), or that Tesseract cannot finish
within ``TIMEOUT_S`` scores 0. Tesseract is handed a PNG osgym encoded, never the agent's bytes.

>>> joined("user@host:~$ ls\\n\\nDesktop   Music\\n")
'user@host:~$ ls Desktop Music'
"""

from __future__ import annotations

import io
import os
import struct
import subprocess
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from pydantic import BaseModel, ConfigDict, StrictStr

from osgym.errors import EvaluatorError
from osgym.tasks.metrics import metric
from osgym.tasks.metrics.images import open_image

__all__ = ["TIMEOUT_S", "TextRules", "compare_image_text", "joined", "read_text_in_image", "read_xwd"]

TIMEOUT_S = 120.0  # a 1920x1080 screenshot takes about a second on one core
XWD_MAX_PIXELS = 16 * 2**20  # a 5K screen; its conversion takes some 20 bytes a pixel
UPSCALE_MAX_PIXELS = 4 * 2**20  # up to 2560x1440: screen fonts are small for Tesseract, so these are doubled
INSTALL_HINT = ("compare_image_text reads pictures with Tesseract OCR and its English data: install them with "
                "`apt-get install tesseract-ocr tesseract-ocr-eng` on Debian or Ubuntu (`make ocr` does it as root)")


class TextRules(BaseModel):
    """``type``: ``text`` (the only kind OSWorld defines); ``text``: what the picture must show, case and
    spaces included."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["text"]
    text: StrictStr


def joined(text: str) -> str:
    """Tesseract's words in reading order, one space between each (easyocr's pieces are joined so)."""
    return " ".join(text.split())


_XWD_HEADER = struct.Struct(">25I")  # XWDFileHeader: 25 big-endian CARD32, then the window name
_XWD_VERSION, _ZPIXMAP, _TRUE_COLOR, _DIRECT_COLOR, _XWD_COLOUR_SIZE = 7, 2, 4, 5, 12


def _channel(pixels: NDArray[np.uint32], mask: int) -> NDArray[np.uint8] | None:
    if mask == 0:
        return None
    shift = (mask & -mask).bit_length() - 1
    top = mask >> shift
    if top & (top + 1):
        return None  # not one run of bits
    out: NDArray[np.uint8] = ((((pixels & mask) >> shift).astype(np.uint64) * 255) // top).astype(np.uint8)
    return out


def read_xwd(path: str) -> Image.Image | None:
    """The X11 screen dump at ``path`` (a colour ZPixmap of 24 or 32 bits a pixel), or None if it is none.

    >>> import tempfile
    >>> px = bytes([0x30, 0x20, 0x10, 0]) * 2  # two pixels, 32 bits each, blue byte first
    >>> head = struct.pack(">25I", 100 + 4, 7, 2, 24, 2, 1, 0, 0, 32, 0, 32, 32, 8, 4,
    ...                    0xFF0000, 0xFF00, 0xFF, 8, 256, 0, 2, 1, 0, 0, 0)
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "x.xwd").write_bytes(head + b"win!" + px)
    ...     read_xwd(str(Path(d, "x.xwd"))).getpixel((1, 0))
    (16, 32, 48)
    """
    try:
        with open(path, "rb") as f:
            head = f.read(_XWD_HEADER.size)
            if len(head) < _XWD_HEADER.size:
                return None
            (size, version, fmt, _depth, width, height, _xoffset, byte_order, _unit, _bit_order, _pad, bpp, per_line,
             visual, red, green, blue, _bits, _entries, ncolours, *_window) = _XWD_HEADER.unpack(head)
            start, row = size + ncolours * _XWD_COLOUR_SIZE, width * bpp // 8
            # rows are padded to at most 32 bits; a dump must hold every row it declares
            if (version != _XWD_VERSION or fmt != _ZPIXMAP or bpp not in (24, 32) or visual not in (_TRUE_COLOR,
                    _DIRECT_COLOR) or not 0 < width * height <= XWD_MAX_PIXELS or not row <= per_line < row + 8
                    or size < _XWD_HEADER.size or os.fstat(f.fileno()).st_size < start + per_line * height):
                return None
            f.seek(start)
            data = f.read(per_line * height)
    except OSError:
        return None
    if len(data) < per_line * height:
        return None
    rows = np.frombuffer(data, np.uint8).reshape(height, per_line)[:, :row]
    octets = rows.reshape(height, width, bpp // 8).astype(np.uint32)
    if byte_order == 1:  # MSBFirst: the most significant byte comes first
        octets = octets[:, :, ::-1]
    pixels: NDArray[np.uint32] = np.zeros((height, width), np.uint32)
    for i in range(bpp // 8):
        pixels |= octets[:, :, i] << np.uint32(8 * i)
    channels = []
    for mask in (red, green, blue):
        channel = _channel(pixels, mask)
        if channel is None:
            return None
        channels.append(channel)
    return Image.fromarray(np.dstack(channels))


def _open(path: str | None) -> Image.Image | None:
    img = open_image(path)
    if img is None and path and Path(path).is_file():
        img = read_xwd(path)
    return img


def _grey_png(img: Image.Image) -> bytes:
    if img.mode in ("RGBA", "LA", "PA", "P") or "transparency" in img.info:
        # a transparent pixel keeps whatever colour it hides (often black): show it as white paper
        rgba = img.convert("RGBA")
        img = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    grey = img.convert("L")
    if grey.width * grey.height <= UPSCALE_MAX_PIXELS:
        grey = grey.resize((grey.width * 2, grey.height * 2), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    grey.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def read_text_in_image(path: str | None) -> str | None:
    """The words Tesseract reads in the picture at ``path``, joined by single spaces; None if there is no
    readable picture there or Tesseract did not finish within ``TIMEOUT_S``.

    Raises:
        EvaluatorError: if Tesseract or its English data is not installed (naming how to install them).
    """
    img = _open(path)
    if img is None:
        return None
    data = _grey_png(img)
    # one thread: its OpenMP threads slow it down on a shared machine and gain nothing on one page
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    try:
        done = subprocess.run(["tesseract", "stdin", "stdout", "-l", "eng", "--psm", "3"], input=data,
                              capture_output=True, timeout=TIMEOUT_S, env=env, check=False)
    except FileNotFoundError:
        raise EvaluatorError(f"{INSTALL_HINT}; no `tesseract` on PATH") from None
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        # the PNG is osgym's own, so a failure is Tesseract's setup (most often missing English data)
        said = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise EvaluatorError(f"{INSTALL_HINT}; tesseract exited with {done.returncode}: {said}")
    return joined(done.stdout.decode("utf-8", "replace"))


@metric("compare_image_text", rules=TextRules, files=("result",))
def compare_image_text(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if ``rules["text"]`` is a substring (case-sensitive, spaces included) of the text read in the
    picture; 0.0 otherwise, or if there is no readable picture.

    Raises:
        ValueError: if ``rules`` are not ``{"type": "text", "text": ...}`` (OSWorld raises it for another type).
        EvaluatorError: if Tesseract is not installed.
    """
    want = TextRules.model_validate(rules).text  # a task built in code skips the check at load
    text = read_text_in_image(result)
    if text is None:
        return 0.0
    return 1.0 if want in text else 0.0
