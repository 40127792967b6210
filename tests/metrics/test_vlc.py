"""VLC metrics on generated status.xml and vlcrc files: a match scores 1, each kind of mismatch 0; OSWorld's
functions agree except where docs/osworld-coverage.md says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from osgym.errors import TaskLoadError
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

SONG = "Rick Astley - Never Gonna Give You Up (Official Music Video).mp4"


def status(state: str, **meta: str) -> File:
    infos = "".join(f'<info name="{k}">{v}</info>' for k, v in meta.items())
    return File(f'<?xml version="1.0" encoding="utf-8"?><root><state>{state}</state><information>'
                f'<category name="meta">{infos}</category></information></root>', "status.xml")


PLAYING = [
    Case("file-playing", status("playing", filename=SONG), {"type": "file_name", "file_name": SONG}, 1.0),
    Case("file-path", status("playing", uri=f"/home/user/{SONG}"), {"type": "file_name", "file_name": SONG}, 1.0),
    Case("file-paused", status("paused", filename=SONG), {"type": "file_name", "file_name": SONG}, 0.0),
    Case("file-other", status("playing", filename="other.mp4"), {"type": "file_name", "file_name": SONG}, 0.0),
    Case("file-no-meta", status("playing"), {"type": "file_name", "file_name": SONG}, 0.0),
    Case("url", status("playing", url="https://www.youtube.com/watch?v=pgBsyTKAwLw"),
         {"type": "url", "url": "https://www.youtube.com/watch?v=pgBsyTKAwLw"}, 1.0),
    Case("url-hls-name", status("playing", title="index.m3u8"),
         {"type": "url", "url": "https://cdn.example.org/live/index.m3u8"}, 1.0),
    Case("url-same-host", status("playing", url="https://cdn.example.org/live/index.m3u8?token=1"),
         {"type": "url", "url": "https://cdn.example.org/live/index.m3u8x"}, 0.0),
    # OSWorld compares host and path only, so any other video of the site passes
    Case("url-other-video", status("playing", url="https://www.youtube.com/watch?v=other"),
         {"type": "url", "url": "https://www.youtube.com/watch?v=pgBsyTKAwLw"}, 0.0, osworld=1.0),
    Case("url-other-site", status("playing", url="https://vimeo.com/watch?v=pgBsyTKAwLw"),
         {"type": "url", "url": "https://www.youtube.com/watch?v=pgBsyTKAwLw"}, 0.0),
    Case("not-xml", File("<root><state>playing", "status.xml"), {"type": "file_name", "file_name": SONG}, 0.0,
         osworld="ParseError"),
]


@pytest.mark.parametrize("case", PLAYING, ids=ids(PLAYING))
def test_is_vlc_playing(case: Case, tmp_path: Path) -> None:
    check("is_vlc_playing", case, tmp_path)


def test_is_vlc_playing_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "is_vlc_playing", PLAYING, tmp_path)


VLCRC = ("# VLC media player preferences\n\n[qt] # Qt interface\n#qt-bgcone=1\n#qt-max-volume=125\n"
         "#qt-minimal-view=0\n#qt-slider-colours=153;210;153;20;210;20;255;199;15;245;39;29\n"
         "[core]\n#input-record-path=\n#global-key-play-pause=\n#one-instance-when-started-from-file=1\n")


def vlcrc(**changes: str) -> File:
    """vlcrc with the given settings changed: VLC writes a changed setting uncommented in place of its
    commented default line."""
    lines = VLCRC.split("\n")
    for key, value in changes.items():
        key = key.replace("_", "-")
        lines = [f"{key}={value}" if line.startswith(f"#{key}=") else line for line in lines]
    return File("\n".join(lines), "vlcrc")


RECORDINGS = [
    Case("set", vlcrc(input_record_path="/home/user/Desktop"), {"recording_file_path": "/home/user/Desktop"}, 1.0),
    Case("other", vlcrc(input_record_path="/home/user/Videos"), {"recording_file_path": "/home/user/Desktop"}, 0.0),
    Case("default", vlcrc(), {"recording_file_path": "/home/user/Desktop"}, 0.0),
]


@pytest.mark.parametrize("case", RECORDINGS, ids=ids(RECORDINGS))
def test_is_vlc_recordings_folder(case: Case, tmp_path: Path) -> None:
    check("is_vlc_recordings_folder", case, tmp_path)


def test_is_vlc_recordings_folder_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "is_vlc_recordings_folder", RECORDINGS, tmp_path)


FULLSCREEN = [
    Case("same", {"width": 1920, "height": 1080}, {"width": 1920, "height": 1080}, 1.0),
    Case("smaller", {"width": 1920, "height": 1080}, {"width": 1280, "height": 720}, 0.0),
    Case("no-window", {"width": 1920, "height": 1080}, None, 0.0),
]


@pytest.mark.parametrize("case", FULLSCREEN, ids=ids(FULLSCREEN))
def test_is_vlc_fullscreen(case: Case, tmp_path: Path) -> None:
    check("is_vlc_fullscreen", case, tmp_path)


def test_is_vlc_fullscreen_parity(osworld: OSWorld, tmp_path: Path) -> None:
    # OSWorld's runner calls without the expected value when it is None: give it one it reads as "no window"
    parity(osworld, "vlc", "is_vlc_fullscreen", FULLSCREEN[:2], tmp_path)


def _setting_cases(func: str, key: str, set_to: str, default: str, want_set: Any) -> list[Case]:
    field = f"expected_{func.removeprefix('check_')}"
    return [Case(f"{func}-set", vlcrc(**{key: set_to}), {field: want_set}, 1.0),
            Case(f"{func}-default", vlcrc(), {field: want_set}, 0.0),
            Case(f"{func}-default-wanted", vlcrc(), {field: default}, 1.0),
            Case(f"{func}-missing", None, {field: want_set}, 0.0, osworld="TypeError")]


BGCONE = _setting_cases("check_qt_bgcone", "qt_bgcone", "0", "1", 0)
MAX_VOLUME = _setting_cases("check_qt_max_volume", "qt_max_volume", "200", "125", 200)
MINIMAL = _setting_cases("check_qt_minimal_view", "qt_minimal_view", "1", "0", 1)
ONE_INSTANCE = _setting_cases("check_one_instance_when_started_from_file", "one_instance_when_started_from_file",
                              "0", "1", 0)


@pytest.mark.parametrize("case", BGCONE, ids=ids(BGCONE))
def test_check_qt_bgcone(case: Case, tmp_path: Path) -> None:
    check("check_qt_bgcone", case, tmp_path)


def test_check_qt_bgcone_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_qt_bgcone", BGCONE, tmp_path)


@pytest.mark.parametrize("case", MAX_VOLUME, ids=ids(MAX_VOLUME))
def test_check_qt_max_volume(case: Case, tmp_path: Path) -> None:
    check("check_qt_max_volume", case, tmp_path)


def test_check_qt_max_volume_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_qt_max_volume", MAX_VOLUME, tmp_path)


@pytest.mark.parametrize("case", MINIMAL, ids=ids(MINIMAL))
def test_check_qt_minimal_view(case: Case, tmp_path: Path) -> None:
    check("check_qt_minimal_view", case, tmp_path)


def test_check_qt_minimal_view_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_qt_minimal_view", MINIMAL, tmp_path)


@pytest.mark.parametrize("case", ONE_INSTANCE, ids=ids(ONE_INSTANCE))
def test_check_one_instance_when_started_from_file(case: Case, tmp_path: Path) -> None:
    check("check_one_instance_when_started_from_file", case, tmp_path)


def test_check_one_instance_when_started_from_file_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_one_instance_when_started_from_file", ONE_INSTANCE, tmp_path)


PLAY_PAUSE = [
    Case("bound", vlcrc(global_key_play_pause="Ctrl+Alt+p"), {"expected_global_key_play_pause": 1}, 1.0),
    Case("unbound", vlcrc(), {"expected_global_key_play_pause": 1}, 0.0),
    Case("unbound-wanted", vlcrc(), {"expected_global_key_play_pause": "0"}, 1.0),
]


@pytest.mark.parametrize("case", PLAY_PAUSE, ids=ids(PLAY_PAUSE))
def test_check_global_key_play_pause(case: Case, tmp_path: Path) -> None:
    check("check_global_key_play_pause", case, tmp_path)


def test_check_global_key_play_pause_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_global_key_play_pause", PLAY_PAUSE, tmp_path)


SLIDER = [
    Case("blackish", vlcrc(qt_slider_colours="0;0;0;20;20;20;50;50;50;99;99;99"), {"type": "blackish"}, 1.0),
    Case("default-not-blackish", vlcrc(), {"type": "blackish"}, 0.0),
    Case("one-light", vlcrc(qt_slider_colours="0;0;0;20;20;20;50;50;50;99;99;100"), {"type": "blackish"}, 0.0),
    Case("match", vlcrc(qt_slider_colours="1;2;3"), {"type": "match", "expected_qt_slider_colours": "1;2;3"}, 1.0),
    Case("no-match", vlcrc(), {"type": "match", "expected_qt_slider_colours": "1;2;3"}, 0.0),
    Case("not-numbers", vlcrc(qt_slider_colours="a;b;c"), {"type": "blackish"}, 0.0),
]


@pytest.mark.parametrize("case", SLIDER, ids=ids(SLIDER))
def test_check_qt_slider_colours(case: Case, tmp_path: Path) -> None:
    check("check_qt_slider_colours", case, tmp_path)


def test_check_qt_slider_colours_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "check_qt_slider_colours", SLIDER, tmp_path)


@pytest.mark.parametrize("func, rules, named", [
    ("is_vlc_playing", {"type": "file_name"}, "rules: Value error, type file_name needs file_name"),
    ("is_vlc_playing", {"type": "title", "title": "x"}, "rules.type"),
    ("check_qt_bgcone", {"expected_bgcone": 0}, "rules.expected_qt_bgcone: Field required"),
    ("check_global_key_play_pause", {"expected_global_key_play_pause": 2}, "rules.expected_global_key_play_pause"),
    ("check_qt_slider_colours", {"type": "match"}, "rules: Value error, type match needs"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-vlc", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)
