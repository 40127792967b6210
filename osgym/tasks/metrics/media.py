"""Audio file metadata after OSWorld's ``check_mp3_meta`` (``others.py``), which reads ID3 tags with mutagen.

osgym reads the ID3v2 text frames itself (versions 2.2 to 2.4, the four text encodings, unsynchronisation,
extended headers); the parity tests compare it with mutagen on generated tags.

>>> tag = b"ID3\\x04\\x00\\x00" + bytes([0, 0, 0, 22]) + b"TIT2" + bytes([0, 0, 0, 12, 0, 0]) + b"\\x03Missing You"
>>> _text_frames(tag)
{'TIT2': ['Missing You']}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.rules import ValueRule

__all__ = ["check_mp3_meta"]

MAX_TAG = 16 * 2**20  # bytes of ID3 tag read at most; real tags with cover art are well under this

# mutagen's EasyID3 names for the text frames, and ID3v2.2's three-letter ids of the same frames
FRAMES = {"title": "TIT2", "artist": "TPE1", "album": "TALB", "albumartist": "TPE2", "composer": "TCOM",
          "tracknumber": "TRCK", "discnumber": "TPOS"}
_V22 = {"TT2": "TIT2", "TP1": "TPE1", "TAL": "TALB", "TP2": "TPE2", "TCM": "TCOM", "TRK": "TRCK", "TPA": "TPOS"}
_ENCODINGS = {0: ("latin-1", b"\x00"), 1: ("utf-16", b"\x00\x00"), 2: ("utf-16-be", b"\x00\x00"),
              3: ("utf-8", b"\x00")}


def _syncsafe(b: bytes) -> int:
    return (b[0] << 21) | (b[1] << 14) | (b[2] << 7) | b[3]


def _decode(data: bytes) -> list[str]:
    if not data or data[0] not in _ENCODINGS:
        return []
    codec, null = _ENCODINGS[data[0]]
    raw = data[1:]
    # values are separated (and may be ended) by a null of the encoding's width, aligned to it
    parts, start, step = [], 0, len(null)
    for i in range(0, len(raw) - step + 1, step):
        if raw[i:i + step] == null:
            parts.append(raw[start:i])
            start = i + step
    parts.append(raw[start:])
    values = [p.decode(codec, errors="replace") for p in parts]
    while values and values[-1] == "":
        values.pop()
    return values


def _text_frames(tag: bytes) -> dict[str, list[str]]:
    """The text frames (``T...``) of an ID3v2 tag, id to values; an empty dict if there is no tag."""
    if len(tag) < 10 or tag[:3] != b"ID3" or tag[3] not in (2, 3, 4):
        return {}
    major, flags, body = tag[3], tag[5], tag[10:10 + _syncsafe(tag[6:10])]
    if flags & 0x80 and major < 4:
        body = body.replace(b"\xff\x00", b"\xff")  # the whole tag was unsynchronised
    pos = 0
    if flags & 0x40 and major >= 3 and len(body) >= 4:  # skip the extended header
        pos = _syncsafe(body[:4]) if major == 4 else 4 + int.from_bytes(body[:4], "big")
    id_len, header = (3, 6) if major == 2 else (4, 10)
    frames: dict[str, list[str]] = {}
    while pos + header <= len(body) and body[pos] != 0:
        fid = body[pos:pos + id_len].decode("latin-1")
        size_bytes = body[pos + id_len:pos + 2 * id_len]
        size = _syncsafe(size_bytes) if major == 4 else int.from_bytes(size_bytes, "big")
        fflags = body[pos + 9] if major >= 3 else 0
        data = body[pos + header:pos + header + size]
        pos += header + size
        if major == 4:
            if fflags & 0x02:
                data = data.replace(b"\xff\x00", b"\xff")
            if fflags & 0x01:
                data = data[4:]  # data-length indicator
        if (major == 3 and fflags & 0xC0) or (major == 4 and fflags & 0x0C):
            continue  # compressed or encrypted: not text we can read
        fid = _V22.get(fid, fid)
        if fid.startswith("T") and fid != "TXXX":
            frames.setdefault(fid, []).extend(_decode(data))
    return frames


class Mp3Rules(BaseModel):
    """Tag name (``title``, ``artist``, ``album``, ``albumartist``, ``composer``, ``tracknumber``,
    ``discnumber``) to the rule its value (values joined by commas) must pass."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    title: ValueRule | None = None
    artist: ValueRule | None = None
    album: ValueRule | None = None
    albumartist: ValueRule | None = None
    composer: ValueRule | None = None
    tracknumber: ValueRule | None = None
    discnumber: ValueRule | None = None


def read_tags(path: str) -> dict[str, str]:
    """The file's ID3 text tags by their EasyID3 names, multiple values joined by commas (none if untagged)."""
    with open(path, "rb") as f:
        head = f.read(10)
        size = _syncsafe(head[6:10]) if len(head) == 10 and head[:3] == b"ID3" else 0
        tag = head + f.read(min(size, MAX_TAG))
    frames = _text_frames(tag)
    return {name: ",".join(frames[fid]) for name, fid in FRAMES.items() if fid in frames}


@metric("check_mp3_meta", rules=Mp3Rules, files=True)
def check_mp3_meta(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if each named tag of the MP3's ID3 tag (an absent one reads as the empty text) passes its rule."""
    if result is None or not Path(result).is_file():
        return 0.0
    try:
        tags = read_tags(result)
    except OSError:
        return 0.0
    for name, rule in rules.items():
        if not ValueRule.model_validate(rule).matches(tags.get(name, "")):
            return 0.0
    return 1.0
