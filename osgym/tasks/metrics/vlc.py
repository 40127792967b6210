"""VLC metrics after OSWorld's ``vlc.py``: the player's state (its HTTP interface's ``status.xml``), its
configuration file (``vlcrc``) and its window size. (``compare_images`` lives in :mod:`.images`,
``compare_audios`` in :mod:`.audio`, ``compare_videos`` in :mod:`.video`.)

>>> _setting("#qt-bgcone=1\\nqt-bgcone=0\\n", "qt-bgcone=", "1")
'0'
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, StrictInt, StrictStr, create_model, model_validator

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.general import read_text

__all__ = ["is_vlc_playing"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PlayingRules(_Model):
    """``type``: ``file_name`` (then ``file_name``: the file's name) or ``url`` (then ``url``: the stream)."""

    type: Literal["file_name", "url"]
    file_name: StrictStr | None = None
    url: StrictStr | None = None

    @model_validator(mode="after")
    def _named(self) -> PlayingRules:
        if getattr(self, self.type) is None:
            raise ValueError(f"type {self.type} needs {self.type}")
        return self


_META = 'information/category[@name="meta"]/info[@name="{}"]'
_FILE_FIELDS = [_META.format(n) for n in ("filename", "title", "uri", "location", "name")]
_URL_FIELDS = [_META.format(n) for n in ("url", "URI", "location", "title", "filename")] + [
    f'information/category[@name="Stream 0"]/info[@name="{n}"]' for n in ("Codec", "Type", "Language")]


def _first(tree: ET.Element, paths: list[str]) -> str | None:
    for path in paths:
        el = tree.find(path)
        if el is not None and el.text:
            return el.text
    return None


def _url_matches(expected: str, shown: str) -> bool:
    if expected in shown or shown.endswith(expected):
        return True
    want = urlparse(expected)
    if shown == os.path.basename(want.path):
        return True  # VLC shows an HLS stream by its file name
    if "://" in shown:
        got = urlparse(shown)
        # OSWorld ignores the query here, so another YouTube video (watch?v=...) would pass
        return want.netloc == got.netloc and want.path in got.path and want.query in ("", got.query)
    return False


@metric("is_vlc_playing", rules=PlayingRules, files=True)
def is_vlc_playing(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if VLC's status says ``playing`` and the media is the expected file (its name, or a path ending in
    it) or stream (the URL, its file name, or a URL of the same host containing its path, with its query if
    it has one)."""
    text = read_text(result)
    if text is None:
        return 0.0
    try:
        tree = ET.fromstring(text)
    except ET.ParseError:
        return 0.0
    if tree.findtext("state") != "playing":
        return 0.0
    if rules["type"] == "file_name":
        shown = _first(tree, _FILE_FIELDS)
        want = rules["file_name"]
        return 1.0 if shown and (os.path.basename(shown) == want or shown.endswith(want)) else 0.0
    shown = _first(tree, _URL_FIELDS)
    return 1.0 if shown and _url_matches(rules["url"], shown) else 0.0


class RecordingRules(_Model):
    recording_file_path: StrictStr


@metric("is_vlc_recordings_folder", rules=RecordingRules, files=True)
def is_vlc_recordings_folder(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the first setting line naming ``input-record-path`` in ``vlcrc`` sets it to the expected folder."""
    text = read_text(result)
    if text is None:
        return 0.0
    for line in text.split("\n"):
        if line.startswith("#") or not line.strip():
            continue
        if "input-record-path" in line:
            return 1.0 if line.split("=")[-1].strip() == rules["recording_file_path"] else 0.0
    return 0.0


class Size(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)
    width: int
    height: int


@metric("is_vlc_fullscreen")
def is_vlc_fullscreen(result: Any, expected: Any) -> float:
    """1.0 if the window size equals the screen size (both ``{"width", "height"}``; which is which does not
    matter). A size the getter could not read scores 0."""
    try:
        a, b = Size.model_validate(result), Size.model_validate(expected)
    except ValueError:
        return 0.0
    return 1.0 if (a.width, a.height) == (b.width, b.height) else 0.0


def _setting(text: str, marker: str, default: str) -> str:
    """The value after ``=`` on the last line containing ``marker``, commented or not (vlcrc lists every
    setting commented out at its default, and VLC writes a changed one uncommented in its place)."""
    value = default
    for line in text.split("\n"):
        if marker in line:
            value = line.split("=")[-1].strip()
    return value


def _vlc_setting_metric(name: str, marker: str, default: str) -> None:
    field = f"expected_{name.removeprefix('check_')}"
    rules_model = create_model(f"{name}_rules", __base__=_Model, __module__=__name__,
                               **{field: (StrictInt | StrictStr, ...)})  # type: ignore[call-overload]

    def check(result: str | None, rules: dict[str, Any]) -> float:
        text = read_text(result)
        if text is None:
            return 0.0
        return 1.0 if _setting(text, marker, default) == str(rules[field]) else 0.0

    check.__name__ = check.__qualname__ = name
    check.__doc__ = f"1.0 if ``{marker}`` in vlcrc is ``rules[{field!r}]`` (unset: {default})."
    metric(name, rules=rules_model, files=True)(check)


# name, the text that marks its line, VLC's default
for _name, _marker, _default in (("check_qt_bgcone", "qt-bgcone=", "1"),
                                 ("check_qt_max_volume", "qt-max-volume=", "125"),
                                 ("check_qt_minimal_view", "qt-minimal-view=", "0"),
                                 ("check_one_instance_when_started_from_file", "one-instance-when-started-from-file=",
                                  "1")):
    _vlc_setting_metric(_name, _marker, _default)


class PlayPauseRules(_Model):
    """``expected_global_key_play_pause``: 1 if a global play/pause key must be bound, 0 if none may be."""

    expected_global_key_play_pause: Literal[0, 1, "0", "1"]


@metric("check_global_key_play_pause", rules=PlayPauseRules, files=True)
def check_global_key_play_pause(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if a global play/pause key is bound in vlcrc (a non-empty ``global-key-play-pause=``) as expected."""
    text = read_text(result)
    if text is None:
        return 0.0
    bound = "0"
    for line in text.split("\n"):
        if "global-key-play-pause=" in line:
            bound = "0" if line.split("=")[-1].strip() == "" else "1"
    return 1.0 if bound == str(rules["expected_global_key_play_pause"]) else 0.0


DEFAULT_SLIDER = "153;210;153;20;210;20;255;199;15;245;39;29"


class SliderRules(_Model):
    """``type``: ``match`` (then ``expected_qt_slider_colours``, the setting's text) or ``blackish`` (every colour
    dark: each of red, green and blue below 100)."""

    type: Literal["match", "blackish"]
    expected_qt_slider_colours: StrictStr | None = None

    @model_validator(mode="after")
    def _named(self) -> SliderRules:
        if self.type == "match" and self.expected_qt_slider_colours is None:
            raise ValueError("type match needs expected_qt_slider_colours")
        return self


@metric("check_qt_slider_colours", rules=SliderRules, files=True)
def check_qt_slider_colours(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if vlcrc's ``qt-slider-colours`` is the expected text, or (``blackish``) all its colours are dark."""
    text = read_text(result)
    if text is None:
        return 0.0
    value = _setting(text, "qt-slider-colours", DEFAULT_SLIDER)
    if rules["type"] == "match":
        return 1.0 if value == rules.get("expected_qt_slider_colours") else 0.0
    try:
        numbers = [int(v) for v in value.split(";")]
    except ValueError:
        return 0.0
    return 1.0 if all(v < 100 for v in numbers[: len(numbers) - len(numbers) % 3]) else 0.0
