"""compare_videos on videos the test encodes with OpenCV (MPEG-4 part 2 in MP4, Motion JPEG in AVI: the
wheel's ffmpeg has no H.264 encoder): the same frames score 1 however they were encoded; an upside-down
video (OSWorld's task is to flip one), a shorter or longer one, more than 5 frames of other content, or no
video scores 0. OSWorld's function agrees except where docs/osworld-coverage.md says."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import cv2
import numpy as np
import pytest
from cv2.typing import MatLike as Frame

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.metrics import video
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, materialize, parity
from tests.metrics.conftest import OSWorld

LENGTH = 30


def scene(i: int, size: tuple[int, int] = (64, 48)) -> Frame:
    """Frame ``i`` (BGR): a diagonal gradient under a square moving right and a disc moving left; the
    gradient gives every frame structure in both directions, so flipping it either way changes its hash."""
    w, h = size
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3), np.uint8)
    img[..., 0] = (x * 3 + y * 2) % 256
    img[..., 1] = 200 - y * 3
    img[..., 2] = 80 + x
    cv2.rectangle(img, (4 + i, 8), (20 + i, 24), (20, 20, 200), -1)
    cv2.circle(img, (48 - i // 2, 34), 8, (240, 240, 40), -1)
    return img


def upside_down(frame: Frame) -> Frame:
    return cv2.flip(frame, 0)


def encode(frames: Sequence[Frame], name: str = "clip.mp4", fourcc: str = "mp4v") -> File:
    h, w = frames[0].shape[:2]
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / name)
        writer = cv2.VideoWriter(path, cv2.CAP_FFMPEG, cv2.VideoWriter.fourcc(*fourcc), 10.0, (w, h))
        assert writer.isOpened(), fourcc
        for frame in frames:
            writer.write(frame)
        writer.release()
        return File(Path(path).read_bytes(), name)


def clip(length: int = LENGTH, change: Callable[[int, Frame], Frame] = lambda i, f: f, **kw: str) -> File:
    return encode([change(i, scene(i)) for i in range(length)], **kw)


def some_upside_down(count: int) -> Callable[[int, Frame], Frame]:
    """The first ``count`` odd frames turned upside down (each then differs in about 30 of 64 bits)."""
    return lambda i, f: upside_down(f) if i % 2 and i < 2 * count else f


def damaged(file: File) -> File:
    """The file with its frames' data (the MP4 ``mdat`` box) zeroed: it opens, and no frame decodes."""
    data = bytearray(file.content if isinstance(file.content, bytes) else b"")
    at = data.index(b"mdat")
    end = at - 4 + int.from_bytes(data[at - 4:at], "big")
    data[at + 4:end] = bytes(end - at - 4)
    return File(bytes(data), file.name)


PLAYLIST = "#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3.0,\n{}\n#EXT-X-ENDLIST\n"
# OSWorld's task names its files differently (the result, and the gold copy): so do the cases
GOLD = clip(name="commercial_gold.mp4")
CASES = [
    Case("same", clip(), GOLD, 1.0),
    Case("motion-jpeg-in-avi", clip(name="clip.avi", fourcc="MJPG"), GOLD, 1.0),
    Case("larger-frames", encode([cv2.resize(scene(i), (128, 96)) for i in range(LENGTH)]), GOLD, 1.0),
    Case("upside-down", clip(change=lambda i, f: upside_down(f)), GOLD, 0.0),
    Case("mirrored", clip(change=lambda i, f: cv2.flip(f, 1)), GOLD, 0.0),
    Case("flipped-back", clip(change=lambda i, f: upside_down(f)),
         clip(change=lambda i, f: upside_down(f), name="commercial_gold.mp4"), 1.0),
    Case("shorter", clip(LENGTH - 10), GOLD, 0.0),
    Case("longer", clip(LENGTH + 5), GOLD, 0.0),
    Case("longer-past-frames-checked", clip(LENGTH + 5), GOLD, 1.0, {"max_frames_to_check": LENGTH}),
    Case("five-frames-differ", clip(change=some_upside_down(5)), GOLD, 1.0),
    Case("six-frames-differ", clip(change=some_upside_down(6)), GOLD, 0.0),
    Case("six-differ-past-frames-checked", clip(change=some_upside_down(6)), GOLD, 1.0, {"max_frames_to_check": 10}),
    Case("eight-differ-threshold-10", clip(change=some_upside_down(8)), GOLD, 1.0, {"threshold": 10}),
    Case("two-differ-threshold-1", clip(change=some_upside_down(2)), GOLD, 0.0, {"threshold": 1}),
    Case("frames-damaged", damaged(clip()), GOLD, 0.0),
    Case("not-a-video", File(b"\x00\x00\x00\x18ftypisom not really a movie", "clip.mp4"), GOLD, 0.0),
    Case("picture-not-video", File(cv2.imencode(".png", scene(0))[1].tobytes(), "clip.mp4"), GOLD, 0.0),
    Case("empty-file", File(b"", "clip.mp4"), GOLD, 0.0),
    Case("missing-file", None, GOLD, 0.0),
    # an HLS playlist naming the expected file (beside the result here): OSWorld's ffmpeg follows it and plays
    # that file, and could as well fetch an address; osgym hands ffmpeg no playlist
    Case("playlist-of-the-expected-file", File(PLAYLIST.format("../expected/commercial_gold.mp4"), "clip.mp4"), GOLD,
         0.0, osworld=1.0),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_videos(case: Case, tmp_path: Path) -> None:
    check("compare_videos", case, tmp_path)


def test_compare_videos_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "compare_videos", CASES, tmp_path)


@pytest.mark.parametrize("content, why", [
    (b"", "is not in a video container"),
    (b"#EXTM3U\n", "is not in a video container"),
    (b"\x00\x00\x00\x18ftypisom not really a movie", "cannot be opened as a video"),
    (damaged(GOLD).content, "has no frame that can be decoded"),
])
def test_compare_videos_unreadable_expected_file_is_an_error(content: bytes, why: str, tmp_path: Path) -> None:
    result = materialize(GOLD, tmp_path / "r")
    expected = materialize(File(content, "gold.mp4"), tmp_path / "e")
    with pytest.raises(ValueError, match=f"compare_videos: the expected file .*gold.mp4' {why}"):
        metrics.score("compare_videos", result, expected, {})


def test_compare_videos_missing_expected_file_is_an_error(tmp_path: Path) -> None:
    result = materialize(GOLD, tmp_path / "r")
    with pytest.raises(ValueError, match="the expected file .* cannot be read"):
        metrics.score("compare_videos", result, str(tmp_path / "nothing.mp4"), {})


def test_compare_videos_bounds_frame_size_and_file_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = materialize(GOLD, tmp_path / "e")
    large = materialize(encode([cv2.resize(scene(i), (128, 96)) for i in range(LENGTH)]), tmp_path / "l")
    assert metrics.score("compare_videos", large, expected, {}) == 1.0
    with monkeypatch.context() as patch:
        patch.setattr(video, "MAX_FRAME_PIXELS", 64 * 48)
        assert metrics.score("compare_videos", large, expected, {}) == 0.0
        with pytest.raises(ValueError, match="has frames of more than 3072 pixels"):
            metrics.score("compare_videos", expected, large, {})
    monkeypatch.setattr(video, "MAX_BYTES", Path(expected).stat().st_size)
    assert Path(large).stat().st_size > video.MAX_BYTES
    assert metrics.score("compare_videos", large, expected, {}) == 0.0
    with pytest.raises(ValueError, match=f"is larger than {video.MAX_BYTES} bytes"):
        metrics.score("compare_videos", expected, large, {})


@pytest.mark.parametrize("options, named", [
    ({"threshold": -1}, "option threshold: Input should be greater than or equal to 0"),
    ({"threshold": 65}, "option threshold: Input should be less than or equal to 64"),
    ({"threshold": "5"}, "option threshold: Input should be a valid integer"),
    ({"max_frames_to_check": 0}, "option max_frames_to_check: Input should be greater than or equal to 1"),
    ({"max_frames_to_check": 10**6}, "option max_frames_to_check: Input should be less than or equal to 10000"),
    ({"frames": 5}, "option frames: Extra inputs are not permitted"),
])
def test_compare_videos_bad_options_fail_at_load(options: dict[str, object], named: str) -> None:
    task = {"id": "t-v", "instruction": "x", "evaluator": {"func": "compare_videos", "options": options}}
    with pytest.raises(TaskLoadError, match=named):
        load_task(task)
