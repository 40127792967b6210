"""Video metric: OSWorld's ``compare_videos`` (``vlc.py`` in desktop-env 1.0.2).

OSWorld reads the two files frame by frame with OpenCV, turns each frame (BGR) into an RGB picture and
hashes it with imagehash's ``phash``. Up to ``max_frames_to_check`` frames are compared, pair by pair:
a pair whose hashes differ in more than ``threshold`` bits is a mismatch, and the score is 0 as soon as
there are more than ``threshold`` mismatches (the one option bounds both), or when one video ends before
the other; else 1. osgym decodes with the same library (``opencv-python-headless``: its bundled ffmpeg,
its conversion to BGR, its rotation of frames by the file's orientation metadata) and hashes with
:func:`~osgym.tasks.metrics.pdf_images.phash`, which computes imagehash's bits with numpy.

The files are the replica's, so a file is only handed to ffmpeg when its first bytes name a container
that cannot point ffmpeg at other files or addresses (:func:`container`): a playlist could.

>>> container(b"\\x00\\x00\\x00\\x1cftypisom")
'mp4'
>>> container(b"#EXTM3U\\n") is None
True
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import Annotated, Any

from PIL import Image
from pydantic import BaseModel, ConfigDict, Field, StrictInt

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.pdf_images import Hash, phash

__all__ = ["VideoOptions", "compare_videos", "container"]

MAX_BYTES = 8 * 2**30  # a file larger than this is refused unread; an hour of 1080p H.264 is a few GiB
MAX_FRAME_PIXELS = 7680 * 4320  # 8K UHD; a larger frame would take over 100 MB per picture
MAX_FRAMES = 10_000  # the most frames an option may ask to compare (OSWorld's default: 100)
HASH_BITS = 64

# First bytes of containers whose ffmpeg demuxers read only the file itself (QuickTime's references to
# other files, "drefs", are off by default): (offset, bytes) pairs that must all match.
_SIGNATURES: dict[str, tuple[tuple[int, bytes], ...]] = {
    "mp4": ((4, b"ftyp"),),
    "quicktime": ((4, b"moov"),),
    "quicktime-mdat": ((4, b"mdat"),),
    "quicktime-wide": ((4, b"wide"),),
    "matroska": ((0, b"\x1aE\xdf\xa3"),),
    "avi": ((0, b"RIFF"), (8, b"AVI ")),
    "ogg": ((0, b"OggS"),),
    "flv": ((0, b"FLV\x01"),),
    "mpeg-ps": ((0, b"\x00\x00\x01\xba"),),
    "asf": ((0, b"\x30\x26\xb2\x75\x8e\x66\xcf\x11"),),
}
HEAD_BYTES = 12


class VideoOptions(BaseModel):
    """OSWorld's keyword arguments: frames compared at most, and the bits (and frames) that may differ."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_frames_to_check: Annotated[StrictInt, Field(ge=1, le=MAX_FRAMES)] = 100
    threshold: Annotated[StrictInt, Field(ge=0, le=HASH_BITS)] = 5


def container(head: bytes) -> str | None:
    """The container the file's first bytes name, among those handed to ffmpeg (``None``: another)."""
    for name, marks in _SIGNATURES.items():
        if all(head[at:at + len(mark)] == mark for at, mark in marks):
            return name
    return None


class _Unreadable(Exception):
    """The file is not a video this metric decodes; the message says why."""


def _open(path: str) -> Any:
    """OpenCV's reader of the file (a ``cv2.VideoCapture``; the caller releases it).

    Raises:
        _Unreadable: if the file cannot be read, is too large, is in no accepted container, or OpenCV
            cannot open it.
    """
    import cv2  # loaded on first use: OpenCV takes a while to import and most evaluations never need it

    # An absolute path: ffmpeg would read "name:..." as a protocol (concat:, subfile:, http:).
    path = os.path.abspath(path)
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError as exc:
        raise _Unreadable(f"cannot be read ({exc.strerror or exc})") from None
    if size > MAX_BYTES:
        raise _Unreadable(f"is larger than {MAX_BYTES} bytes")
    if container(head) is None:
        raise _Unreadable("is not in a video container this metric reads (MP4, QuickTime, Matroska/WebM, "
                          "AVI, Ogg, FLV, MPEG program stream, ASF)")
    # FFmpeg alone, as OpenCV would pick it for such a file; its other readers take image sequences.
    cap = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    if not cap.isOpened():
        cap.release()
        raise _Unreadable("cannot be opened as a video")
    if cap.get(cv2.CAP_PROP_FRAME_WIDTH) * cap.get(cv2.CAP_PROP_FRAME_HEIGHT) > MAX_FRAME_PIXELS:
        cap.release()
        raise _Unreadable(f"has frames of more than {MAX_FRAME_PIXELS} pixels")
    return cap


def _hashes(cap: Any, limit: int) -> Iterator[Hash]:
    """The hashes of the video's first ``limit`` frames, up to its end or a frame that cannot be decoded."""
    import cv2

    for _ in range(limit):
        ok, frame = cap.read()
        if not ok or frame is None or frame.shape[0] * frame.shape[1] > MAX_FRAME_PIXELS:
            return  # the size is checked again: a stream may change it midway
        # OSWorld's picture is RGB: the grey one the hash starts from weighs the channels unequally.
        yield phash(Image.fromarray(cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)))


@metric("compare_videos", VideoOptions, files=True)
def compare_videos(result: str | None, expected: str, options: VideoOptions | None = None) -> float:
    """1 if the first ``max_frames_to_check`` frames of the two videos look alike (at most ``threshold``
    pairs whose perceptual hashes differ in more than ``threshold`` bits) and neither ends before the
    other within them; else 0. No file, or one that is no readable video, scores 0.

    Raises:
        ValueError: if the expected file is not a readable video or has no frame that can be decoded.
    """
    opts = options or VideoOptions()
    if result is None:
        return 0.0
    try:
        gold_cap = _open(expected)
    except _Unreadable as exc:
        raise ValueError(f"compare_videos: the expected file {expected!r} {exc}") from None
    try:
        gold = _hashes(gold_cap, opts.max_frames_to_check)
        first = next(gold, None)
        if first is None:
            raise ValueError(f"compare_videos: the expected file {expected!r} has no frame that can be decoded")
        try:
            cap = _open(result)
        except _Unreadable:
            return 0.0  # OSWorld's OpenCV gives no frame for it, against a video that has some
        try:
            return _compare(_hashes(cap, opts.max_frames_to_check), itertools.chain([first], gold), opts.threshold)
        finally:
            cap.release()
    finally:
        gold_cap.release()


def _compare(mine: Iterator[Hash], gold: Iterator[Hash], threshold: int) -> float:
    """OSWorld's loop: both sequences hold at most the frames to check; one ending first scores 0."""
    mismatches = 0
    while True:
        a, b = next(mine, None), next(gold, None)
        if a is None or b is None:
            return float(a is None and b is None)
        if a - b > threshold:
            mismatches += 1
            if mismatches > threshold:
                return 0.0
