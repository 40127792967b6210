"""Presentation metrics, after OSWorld's, that check one property each: the slides' orientation,
background colour and transitions, a struck-through paragraph, a stretched picture, the slide-number
colour, and Impress's settings (presenter console, autosave interval).

``compare_pptx_files``, which compares two presentations in full, lives in :mod:`.slides_compare`.
"""

from __future__ import annotations

import zipfile
from math import sqrt
from typing import Any, Literal
from xml.etree import ElementTree

from pptx import Presentation
from pptx.enum.dml import MSO_FILL
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.exc import PackageNotFoundError
from pptx.slide import Slide
from pptx.util import Inches
from pydantic import BaseModel, ConfigDict, Field

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big

UNREADABLE = (OSError, zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError)
"""What python-pptx raises on a file that is no presentation."""
_PNS = {"p": "http://schemas.openxmlformats.org/presentationml/2006/main"}


class _Rules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StrikeRules(_Rules):
    slide_index_s: list[int]
    shape_index_s: list[int]
    paragraph_index_s: list[int]


class TransitionRules(_Rules):
    slide_idx: int = Field(ge=0)
    transition_type: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$")  # an element name, e.g. "dissolve"


class FillRules(_Rules):
    rgb: tuple[int, int, int]
    original_rgb: tuple[int, int, int] | None = None


def _open(path: str | None) -> Any:
    """The agent's presentation, or None if missing, unreadable or too big unpacked (which scores 0)."""
    if not path or too_big(path):
        return None
    try:
        return Presentation(path)
    except UNREADABLE:
        return None


@metric("check_slide_orientation_Portrait", files=True)
def check_slide_orientation_Portrait(result: str | None, expected: Any = None) -> float:  # noqa: N802 (OSWorld's name)
    """1.0 if the presentation's slides are taller than wide."""
    prs = _open(result)
    return 1.0 if prs is not None and prs.slide_width < prs.slide_height else 0.0


@metric("check_strikethrough", rules=StrikeRules, files=True)
def check_strikethrough(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if, on each slide x shape x paragraph the rules list (``slide_index_s``, ``shape_index_s``,
    ``paragraph_index_s``), the paragraph's first run sets strike-through; a missing one scores 0."""
    prs = _open(result)
    if prs is None:
        return 0.0
    try:
        for i in rules["slide_index_s"]:
            slide = prs.slides[i]
            for j in rules["shape_index_s"]:
                paragraphs = slide.shapes[j].text_frame.paragraphs
                for k in rules["paragraph_index_s"]:
                    if "strike" not in paragraphs[k].runs[0].font._element.attrib:
                        return 0.0
    except (IndexError, AttributeError):
        return 0.0  # no such slide, shape, paragraph or run: the agent's file is not as asked
    return 1.0


@metric("check_transition", rules=TransitionRules, files=True)
def check_transition(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if slide ``rules["slide_idx"]`` (from 0) has a transition of kind ``rules["transition_type"]``."""
    prs = _open(result)
    idx = int(rules["slide_idx"])
    if prs is None or not 0 <= idx < len(prs.slides):
        return 0.0
    root = ElementTree.fromstring(prs.slides[idx].part.blob)
    transition = root.find(".//p:transition", _PNS)
    found = transition is not None and transition.find(f".//p:{rules['transition_type']}", _PNS) is not None
    return 1.0 if found else 0.0


def _fill_distance(slide: Slide, rgb: tuple[int, int, int], original: tuple[int, int, int] | None) -> float:
    """How far the slide's background (or its master's) is from ``rgb``, 0 to 1.

    1 if it has no solid colour, or kept ``original``.
    """
    fill = slide.background.fill
    if fill.type == MSO_FILL.BACKGROUND:
        fill = slide.slide_layout.slide_master.background.fill
    if fill.type != MSO_FILL.SOLID:
        return 1.0
    try:
        got = tuple(fill.fore_color.rgb)
    except AttributeError:
        return 1.0
    if original is not None and got == tuple(original):
        return 1.0
    return float(sqrt(sum((a - b) ** 2 for a, b in zip(got, rgb, strict=True))) / sqrt(3 * 255 ** 2))


@metric("evaluate_presentation_fill_to_rgb_distance", rules=FillRules, files=True)
def evaluate_presentation_fill_to_rgb_distance(result: str | None, rules: dict[str, Any]) -> float:
    """How close, 0 to 1, the slides' background colours are to ``rules["rgb"]`` on average.

    A slide that kept ``rules["original_rgb"]``, or has no solid background, counts as farthest.
    """
    prs = _open(result)
    if prs is None or not len(prs.slides):
        return 0.0
    rgb, original = tuple(rules["rgb"]), rules.get("original_rgb")
    return 1.0 - sum(_fill_distance(s, rgb, original) for s in prs.slides) / len(prs.slides)


@metric("check_image_stretch_and_center", files=True)
def check_image_stretch_and_center(result: str | None, expected: str | None) -> float:
    """1.0 if the first picture of the original's first slide fills the slide in the result, centred (0.5 in slack).

    Raises:
        ValueError: if the original presentation cannot be read.
    """
    if expected is None:
        raise ValueError("check_image_stretch_and_center needs the original presentation")
    try:
        original = Presentation(expected)
    except UNREADABLE as exc:
        raise ValueError(f"original presentation {expected} cannot be read: {exc}") from exc
    modified = _open(result)
    if modified is None or not len(modified.slides) or not len(original.slides):
        return 0.0
    pictures = [s for s in original.slides[0].shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE]
    if not pictures:
        return 0.0
    blob = pictures[0].image.blob
    same = [s for s in modified.slides[0].shapes if s.shape_type == MSO_SHAPE_TYPE.PICTURE and s.image.blob == blob]
    if not same:
        return 0.0
    img, w, h, slack = same[-1], original.slide_width, original.slide_height, Inches(0.5)
    fits = (abs(img.width - w) <= slack and abs(img.height - h) <= slack
            and abs(img.left - (w - img.width) / 2) <= slack and abs(img.top - (h - img.height) / 2) <= slack)
    return 1.0 if fits else 0.0


class PageNumberRules(_Rules):
    color: Literal["red", "green", "blue", "black"]


_DOMINANT_BY = 50  # how far a channel must exceed the others (or, for black, all stay under)


def _looks(colour: str, rgb: tuple[int, int, int]) -> bool:
    r, g, b = rgb
    m = _DOMINANT_BY
    return {"red": r > g + m and r > b + m, "green": g > r + m and g > b + m,
            "blue": b > r + m and b > g + m, "black": max(r, g, b) < m}[colour]


@metric("check_page_number_colors", rules=PageNumberRules, files=True)
def check_page_number_colors(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the slide number the first slide master sets is of colour ``rules["color"]`` (red, green, blue
    or black: that channel leads the others by more than 50 of 255; black: all under 50).

    The colour read is OSWorld's: the second-to-last RGB colour filled anywhere in the master's XML (an
    ``a:srgbClr`` inside an ``a:solidFill``), taken to be the slide number's in the task's deck. A master
    with fewer than two such colours scores 0.
    """
    prs = _open(result)
    if prs is None or not len(prs.slide_masters):
        return 0.0
    fills = prs.slide_masters[0].element.xpath(".//a:solidFill//a:srgbClr")
    if len(fills) < 2:
        return 0.0
    try:
        rgb = bytes.fromhex(fills[-2].get("val") or "")
    except ValueError:
        return 0.0
    return 1.0 if len(rgb) == 3 and _looks(rules["color"], (rgb[0], rgb[1], rgb[2])) else 0.0
