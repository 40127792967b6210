"""PNG for screenshots: rows left unfiltered, then deflated.

Pillow's PNG encoder picks one of PNG's five filters for every row by trying them all, which is most of its
time on a screen: 36 ms for a 1920x1080 frame before any compression, 55 ms at level 1. A desktop is flat
colour, text and repeated texture, which deflate finds as long matches in the raw rows: unfiltered, the same
frame took 23 ms at level 1 and came out a quarter smaller; only photographs grow, by a fifth
(BENCHMARKS.md, "The step, end to end"). Levels above 1 ask for the smallest file, so they keep Pillow's
filters.
"""

import io
import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
FAST_LEVELS = (0, 1)


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))


def encode(img, level=1):
    """The PNG file of an RGB (or L) image at zlib ``level`` (0-9)."""
    if level not in FAST_LEVELS or img.mode not in ("RGB", "L"):
        buf = io.BytesIO()
        img.save(buf, "PNG", compress_level=int(level))
        return buf.getvalue()
    width, height = img.size
    stride = width * (3 if img.mode == "RGB" else 1)
    raw = memoryview(img.tobytes())
    z = zlib.compressobj(level, zlib.DEFLATED, 15, 9)
    parts = []
    for row in range(0, stride * height, stride):
        parts.append(z.compress(b"\0"))  # filter type 0: the row as it is
        parts.append(z.compress(raw[row:row + stride]))
    parts.append(z.flush())
    header = struct.pack(">IIBBBBB", width, height, 8, 2 if img.mode == "RGB" else 0, 0, 0, 0)
    return SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", b"".join(parts)) + _chunk(b"IEND", b"")
