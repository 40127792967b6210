"""Blank frames: which screenshots are a single colour, decoded once per connection.

A quality check of its own beside the SQL views: it decodes images in Python (Pillow) and fills
the ``frame_stats`` table that ``step_flags`` and the quality queries join.

SQL cannot decode a PNG, so blankness is computed in Python with Pillow and
kept in ``frame_stats``. A frame is *blank* when every band of the decoded
image spans at most ``tolerance`` levels (``Image.getextrema()``; the default
4 absorbs lossy-codec noise, a lossless single-colour frame spans 0), or when
its recorded ``width`` or ``height`` is 0. Only *candidates* are decoded: a
single-colour image compresses to almost nothing in every codec (about 0.004
bytes/pixel as PNG and 0.016 as JPEG at 1920x1080, measured), so frames larger
than ``min_bytes + max_bytes_per_pixel * width * height`` are taken as not
blank without decoding. Each distinct sha256 is decoded once, a few in
parallel. Finding the candidates reads the screenshot column once (on S3 that
means downloading it). The size bound assumes a compressing encoder: a PNG
written with ``compress_level=0`` stores raw pixels and its blank frames are
not caught; frames with a single JPEG 4:4:4 colour at quality 100 take 0.028
bytes/pixel, the largest single-colour case measured.
"""

from __future__ import annotations

import io
import json
import os
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pyarrow as pa
from PIL import Image, UnidentifiedImageError

from osgym.analysis.duck import arrow_batches, meta_get, meta_set

DEFAULT_BLANK_TOLERANCE = 4
DEFAULT_MAX_BYTES_PER_PIXEL = 0.03
DEFAULT_MIN_BYTES = 1024


def is_blank_image(data: bytes, tolerance: int = DEFAULT_BLANK_TOLERANCE) -> bool:
    """Whether an encoded image is a single colour (every band spans at most ``tolerance`` levels).

    Args:
        data: PNG, JPEG or any image bytes Pillow can decode.
        tolerance: the largest max-min spread per band still called one colour.

    Raises:
        PIL.UnidentifiedImageError: if Pillow cannot identify the bytes.
        OSError: if the image is truncated or corrupt.

    >>> buf = io.BytesIO(); Image.new("RGB", (8, 8), (9, 9, 9)).save(buf, "PNG")
    >>> is_blank_image(buf.getvalue())
    True
    """
    with Image.open(io.BytesIO(data)) as im:
        extrema = (im.convert("RGBA") if im.mode in ("P", "PA") else im).getextrema()
    bands = extrema if isinstance(extrema[0], tuple) else (extrema,)
    return all(hi - lo <= tolerance for lo, hi in bands)


def frame_stats(
    con: duckdb.DuckDBPyConnection,
    *,
    tolerance: int = DEFAULT_BLANK_TOLERANCE,
    max_bytes_per_pixel: float = DEFAULT_MAX_BYTES_PER_PIXEL,
    min_bytes: int = DEFAULT_MIN_BYTES,
    refresh: bool = False,
) -> dict[str, int]:
    """Decode the candidate blank frames once and fill the ``frame_stats`` table.

    A frame is a candidate when its encoded size is at most
    ``min_bytes + max_bytes_per_pixel * width * height``; larger frames cannot
    be a single colour and are not decoded. Runs once per connection unless
    ``refresh`` is set.

    Args:
        con: a connection from :func:`osgym.analysis.analytics.connect` or ``connect_view``.
        tolerance: passed to :func:`is_blank_image`.
        max_bytes_per_pixel: the size bound's per-pixel part.
        min_bytes: the size bound's fixed part (headers).
        refresh: recompute even if it already ran.

    Returns:
        ``{"checked": distinct frames decoded, "blank": of which blank,
        "undecodable": of which Pillow could not decode}``.
    """
    done = meta_get(con, "frame_stats")
    if done is not None and not refresh:
        return dict(json.loads(done))
    rel = con.sql(
        "SELECT screenshot_sha256, image FROM frames "
        "WHERE width > 0 AND height > 0 AND image IS NOT NULL AND screenshot_sha256 IS NOT NULL "
        "AND octet_length(image) <= $min_bytes + $bpp * width * height",
        params={"min_bytes": min_bytes, "bpp": max_bytes_per_pixel},
    )
    seen: set[str] = set()
    rows: list[tuple[str, bool | None, int | None, int | None, str | None]] = []
    # Pillow releases the GIL while decoding, so a few threads decode a batch in parallel.
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        for batch in arrow_batches(rel, 64):
            todo = []
            for sha, data in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                if sha not in seen:
                    seen.add(sha)
                    todo.append((sha, data))
            rows.extend(pool.map(lambda item: _check_frame(item[0], item[1], tolerance), todo))
    con.execute("DELETE FROM frame_stats")
    if rows:
        table = pa.table(
            {
                "screenshot_sha256": [r[0] for r in rows],
                "blank": pa.array([r[1] for r in rows], pa.bool_()),
                "image_width": pa.array([r[2] for r in rows], pa.int32()),
                "image_height": pa.array([r[3] for r in rows], pa.int32()),
                "error": pa.array([r[4] for r in rows], pa.string()),
            }
        )
        con.register("_osgym_frame_stats_new", table)
        con.execute("INSERT INTO frame_stats SELECT * FROM _osgym_frame_stats_new")
        con.unregister("_osgym_frame_stats_new")
    stats = {
        "checked": len(rows),
        "blank": sum(1 for r in rows if r[1]),
        "undecodable": sum(1 for r in rows if r[4] is not None),
    }
    meta_set(con, "frame_stats", json.dumps(stats))
    return stats


def _check_frame(sha: str, data: bytes, tolerance: int) -> tuple[str, bool | None, int | None, int | None, str | None]:
    try:
        with Image.open(io.BytesIO(data)) as im:
            size = im.size
        return sha, is_blank_image(data, tolerance), size[0], size[1], None
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        return sha, None, None, None, f"{type(exc).__name__}: {exc}"[:200]
