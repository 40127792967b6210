"""check_mp3_meta on MP3 files with generated ID3 tags (versions 2.2-2.4, every text encoding): the right tags
score 1, a wrong or missing one 0; OSWorld's function (mutagen's EasyID3) agrees except where the docs say."""

from __future__ import annotations

from pathlib import Path

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

AUDIO = b"\xff\xfb\x90\x64" + b"\x00" * 400  # an MPEG frame header and silence: the metric reads only the tag


def _syncsafe(n: int) -> bytes:
    return bytes([(n >> 21) & 0x7F, (n >> 14) & 0x7F, (n >> 7) & 0x7F, n & 0x7F])


def _text(encoding: int, *values: str) -> bytes:
    codec, null = {0: ("latin-1", b"\0"), 1: ("utf-16", b"\0\0"), 2: ("utf-16-be", b"\0\0"), 3: ("utf-8", b"\0")}[
        encoding]
    return bytes([encoding]) + null.join(v.encode(codec) for v in values)


def mp3(frames: dict[str, bytes], version: int = 4, name: str = "song.mp3", extended: bool = False) -> File:
    body = b""
    if extended and version == 3:
        body += (6).to_bytes(4, "big") + b"\0" * 6
    elif extended and version == 4:
        body += _syncsafe(6) + b"\x01\x00"
    for fid, data in frames.items():
        if version == 2:
            body += fid.encode() + len(data).to_bytes(3, "big") + data
        else:
            size = _syncsafe(len(data)) if version == 4 else len(data).to_bytes(4, "big")
            body += fid.encode() + size + b"\0\0" + data
    body += b"\0" * 32  # padding
    header = b"ID3" + bytes([version, 0, 0x40 if extended else 0]) + _syncsafe(len(body))
    return File(header + body + AUDIO, name)


WANT = {"title": {"method": "eq", "ref": "Missing You"}, "artist": {"method": "eq", "ref": "Cheng Xiang"}}
TAGS = [
    Case("v24-utf8", mp3({"TIT2": _text(3, "Missing You"), "TPE1": _text(3, "Cheng Xiang")}), WANT, 1.0),
    Case("v23-latin1", mp3({"TIT2": _text(0, "Missing You"), "TPE1": _text(0, "Cheng Xiang")}, 3), WANT, 1.0),
    Case("v23-utf16", mp3({"TIT2": _text(1, "Missing You"), "TPE1": _text(1, "Cheng Xiang")}, 3), WANT, 1.0),
    Case("v24-utf16be", mp3({"TIT2": _text(2, "Missing You"), "TPE1": _text(2, "Cheng Xiang")}), WANT, 1.0),
    Case("v22", mp3({"TT2": _text(0, "Missing You"), "TP1": _text(0, "Cheng Xiang")}, 2), WANT, 1.0),
    Case("extended-header-v23", mp3({"TIT2": _text(0, "Missing You"), "TPE1": _text(0, "Cheng Xiang")}, 3,
                                    extended=True), WANT, 1.0),
    Case("extended-header-v24", mp3({"TIT2": _text(3, "Missing You"), "TPE1": _text(3, "Cheng Xiang")}, 4,
                                    extended=True), WANT, 1.0),
    Case("two-artists", mp3({"TIT2": _text(3, "Missing You"), "TPE1": _text(3, "Cheng", "Xiang")}),
         {"artist": {"method": "eq", "ref": "Cheng,Xiang"}}, 1.0),
    Case("non-ascii", mp3({"TIT2": _text(1, "想你"), "TPE1": _text(3, "成翔")}),
         {"title": {"method": "eq", "ref": "想你"}, "artist": {"method": "eq", "ref": "成翔"}}, 1.0),
    Case("wrong-title", mp3({"TIT2": _text(3, "Missing Me"), "TPE1": _text(3, "Cheng Xiang")}), WANT, 0.0),
    Case("no-artist", mp3({"TIT2": _text(3, "Missing You")}), WANT, 0.0),
    Case("regex-album", mp3({"TALB": _text(3, "Best of 1990")}), {"album": {"method": "re", "ref": r"\d{4}$"}}, 1.0),
    # mutagen raises on a file without an ID3 tag
    Case("untagged", File(AUDIO, "song.mp3"), WANT, 0.0, osworld="ID3NoHeaderError"),
    Case("missing", None, WANT, 0.0),
]


@pytest.mark.parametrize("case", TAGS, ids=ids(TAGS))
def test_check_mp3_meta(case: Case, tmp_path: Path) -> None:
    check("check_mp3_meta", case, tmp_path)


def test_check_mp3_meta_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "others", "check_mp3_meta", TAGS, tmp_path)


def test_unknown_tag_fails_at_load() -> None:
    task = {"id": "t-mp3", "instruction": "x",
            "evaluator": {"func": "check_mp3_meta", "result": {"type": "vm_file", "path": "/tmp/a.mp3"},
                          "expected": {"type": "rule", "rules": {"mood": {"method": "eq", "ref": "sad"}}}}}
    with pytest.raises(TaskLoadError, match="'check_mp3_meta': rules.mood: Extra inputs are not permitted"):
        load_task(task)
