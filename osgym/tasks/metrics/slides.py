"""Presentation metrics, after OSWorld's: ``compare_pptx_files`` and checks of one property each.

``compare_pptx_files`` walks two presentations slide by slide and shape by shape (in z-order) and
scores 1.0 only if they agree on everything the ``examine_*`` options leave on: the slide count, each
slide's background colour and notes, the shape count and each shape's position and size (within
``approximately_tolerance``, relative), the text, paragraph alignment and indent level, each run's
font name, size, bold, italic, colour, underline and strike-through, the bullets, and the formatting
of table cells' runs. Paragraph and run counts must always agree.

OSWorld's options that hard-code the coordinates or texts of one particular task
(``examine_title_bottom_position``, ``examine_table_bottom_position``, ``examine_right_position``,
``examine_top_position``, ``examine_shape_for_shift_size``) are not supported: a task setting one
fails to load, naming it.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from math import sqrt
from typing import Any, Literal
from xml.etree import ElementTree

from pptx import Presentation
from pptx.enum.dml import MSO_FILL
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.enum.text import PP_ALIGN
from pptx.exc import PackageNotFoundError
from pptx.slide import Slide
from pptx.util import Inches
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big

__all__ = ["PptxOptions", "compare_pptx_files"]  # the others are used through the registry

_UNREADABLE = (OSError, zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError)
_NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}
_PNS = {"p": "http://schemas.openxmlformats.org/presentationml/2006/main"}


class PptxOptions(BaseModel):
    """What ``compare_pptx_files`` examines (OSWorld's option names and defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    examine_number_of_slides: StrictBool = True
    examine_shape: StrictBool = True
    examine_text: StrictBool = True
    examine_indent: StrictBool = True
    examine_font_name: StrictBool = True
    examine_font_size: StrictBool = True
    examine_font_bold: StrictBool = True
    examine_font_italic: StrictBool = True
    examine_color_rgb: StrictBool = True
    examine_font_underline: StrictBool = True
    examine_strike_through: StrictBool = True
    examine_alignment: StrictBool = True
    examine_bullets: StrictBool = True
    examine_background_color: StrictBool = True
    examine_note: StrictBool = True
    examine_image_size: StrictBool = False
    examine_modify_height: StrictBool = False
    approximately_tolerance: float = Field(0.005, ge=0)
    enable_debug: StrictBool = True  # OSWorld's logging switch; accepted and ignored
    examine_title_bottom_position: Literal[False] = False
    examine_table_bottom_position: Literal[False] = False
    examine_right_position: Literal[False] = False
    examine_top_position: Literal[False] = False
    examine_shape_for_shift_size: Literal[False] = False


class _Differs(Exception):
    """Raised inside the walk at the first difference the options examine."""


def _close(a: Any, b: Any, tolerance: float) -> bool:
    """Equal, or within ``tolerance`` of the larger magnitude (EMU lengths; None only equals None)."""
    if a == b:
        return True
    if a is None or b is None or a == 0 or b == 0:
        return False
    return bool(abs(a - b) / max(abs(a), abs(b)) <= tolerance)


def _same_box(s1: Any, s2: Any, tol: float) -> bool:
    return all(_close(getattr(s1, k), getattr(s2, k), tol) for k in ("left", "top", "width", "height"))


def _background(slide: Slide) -> Any:
    """The slide's solid background colour, else its master's, else None (as OSWorld reads it)."""
    fill = slide.background.fill
    if fill.type == MSO_FILL.SOLID:
        return _colour_of(fill.fore_color)
    if fill.type == MSO_FILL.BACKGROUND:  # no fill of its own: the master's shows through
        master = slide.slide_layout.slide_master.background.fill
        return _colour_of(master.fore_color) if master.type == MSO_FILL.SOLID else None
    return None


def _colour_of(colour: Any) -> Any:
    try:
        return colour.rgb
    except AttributeError:  # a theme colour has no RGB value
        return getattr(colour, "theme_color", None)


def _notes(slide: Slide) -> str:
    frame = slide.notes_slide.notes_text_frame if slide.has_notes_slide else None
    return frame.text.strip() if frame is not None else ""


def _rgb(font: Any) -> Any:
    """The run's explicit RGB colour, or None when it has none (OSWorld then skips the comparison)."""
    try:
        return font.color.rgb
    except AttributeError:
        return None


def _flags_differ(a: Any, b: Any) -> bool:
    """Bold or italic differ, where unset and False count as the same."""
    return a != b and not (not a and not b)


def _underline_differs(a: Any, b: Any) -> bool:
    # OSWorld's rule: two set values must agree, and unset differs from True (not from False).
    if a == b:
        return False
    return (a is not None and b is not None) or {a, b} == {None, True}


def _text_shapes(shapes: Any) -> Iterator[Any]:
    """Every shape holding text, groups searched recursively."""
    for shape in shapes:
        if hasattr(shape, "text") and hasattr(shape, "text_frame"):
            yield shape
        if hasattr(shape, "shapes"):
            yield from _text_shapes(shape.shapes)


def _bullets(slide: Slide) -> list[tuple[str | None, str | None, str]]:
    """Each non-blank paragraph's (level, bullet character, text), from the slide's XML."""
    out: list[tuple[str | None, str | None, str]] = []
    for p in ElementTree.fromstring(slide.part.blob).iterfind(".//a:p", _NS):
        ppr = p.find("a:pPr", _NS)
        lvl = ppr.get("lvl") if ppr is not None else "No Level"
        bu = ppr.find("a:buChar", _NS) if ppr is not None else None
        text = "".join(t.text or "" for t in p.iterfind(".//a:t", _NS))
        if text.strip():
            out.append(("0" if lvl is None else lvl, bu.get("char") if bu is not None else "No Bullet", text))
    return out


def _check(cond: bool) -> None:
    if cond:
        raise _Differs


def _compare_runs(r1: Any, r2: Any, o: PptxOptions, table: bool) -> None:
    f1, f2 = r1.font, r2.font
    rgb1, rgb2 = _rgb(f1), _rgb(f2)
    _check(o.examine_color_rgb and rgb1 is not None and rgb2 is not None and rgb1 != rgb2)
    _check((table or o.examine_font_bold) and _flags_differ(f1.bold, f2.bold))
    _check((table or o.examine_font_italic) and _flags_differ(f1.italic, f2.italic))
    _check((table or o.examine_font_underline) and _underline_differs(f1.underline, f2.underline))
    if table:
        return
    _check(o.examine_font_name and f1.name != f2.name)
    _check(o.examine_font_size and f1.size != f2.size)
    _check(o.examine_strike_through
           and f1._element.get("strike", "noStrike") != f2._element.get("strike", "noStrike"))


def _compare_table(t1: Any, t2: Any, o: PptxOptions) -> None:
    _check(len(t1.rows) != len(t2.rows) or len(t1.columns) != len(t2.columns))
    for row in range(len(t1.rows)):
        for col in range(len(t1.columns)):
            p1s, p2s = t1.cell(row, col).text_frame.paragraphs, t2.cell(row, col).text_frame.paragraphs
            _check(len(p1s) != len(p2s))
            for p1, p2 in zip(p1s, p2s, strict=True):
                _check(len(p1.runs) != len(p2.runs))
                for r1, r2 in zip(p1.runs, p2.runs, strict=True):
                    _compare_runs(r1, r2, o, table=True)


def _alignment(p: Any) -> Any:
    return PP_ALIGN.LEFT if p.alignment is None else p.alignment


def _compare_text(s1: Any, s2: Any, o: PptxOptions) -> bool:
    """Compare two text shapes; True if they had a pair of runs (which brings the bullets in)."""
    _check(o.examine_text and s1.text.strip() != s2.text.strip())
    p1s, p2s = s1.text_frame.paragraphs, s2.text_frame.paragraphs
    _check(len(p1s) != len(p2s))
    had_runs = False
    for p1, p2 in zip(p1s, p2s, strict=True):
        _check(o.examine_alignment and _alignment(p1) != _alignment(p2))
        _check(o.examine_text and p1.text != p2.text)
        _check(o.examine_indent and p1.level != p2.level)
        _check(len(p1.runs) != len(p2.runs))
        for r1, r2 in zip(p1.runs, p2.runs, strict=True):
            had_runs = True
            _compare_runs(r1, r2, o, table=False)
    return had_runs


def _compare_shape(s1: Any, s2: Any, o: PptxOptions) -> bool:
    tol = o.approximately_tolerance
    _check(o.examine_shape and not _same_box(s1, s2, tol))
    if o.examine_image_size:
        if s1.shape_type == MSO_SHAPE_TYPE.PICTURE and s2.shape_type == MSO_SHAPE_TYPE.PICTURE:
            _check(not (_close(s1.width, s2.width, tol) and _close(s1.height, s2.height, tol)))
        else:
            _check(not _same_box(s1, s2, tol))
    if o.examine_modify_height:
        text1, text2 = hasattr(s1, "text"), hasattr(s2, "text")
        if (not text1 and not text2) or (s1.shape_type == MSO_SHAPE_TYPE.FREEFORM
                                         and s2.shape_type == MSO_SHAPE_TYPE.FREEFORM):
            _check(not _close(s1.height, s2.height, tol))
        else:
            _check(not _same_box(s1, s2, tol))
    if s1.shape_type == MSO_SHAPE_TYPE.TABLE or s2.shape_type == MSO_SHAPE_TYPE.TABLE:
        _check(s1.shape_type != s2.shape_type)
        _compare_table(s1.table, s2.table, o)
    if hasattr(s1, "text") and hasattr(s2, "text"):
        return _compare_text(s1, s2, o)
    return False


def _compare_slide(sl1: Slide, sl2: Slide, o: PptxOptions) -> None:
    _check(o.examine_background_color and _background(sl1) != _background(sl2))
    _check(o.examine_note and _notes(sl1) != _notes(sl2))
    _check(len(sl1.shapes) != len(sl2.shapes))
    had_runs = False
    for s1, s2 in zip(sl1.shapes, sl2.shapes, strict=True):
        had_runs = _compare_shape(s1, s2, o) or had_runs
    # OSWorld compares the bullets of the whole slide once it meets a pair of runs.
    _check(o.examine_bullets and had_runs and _bullets(sl1) != _bullets(sl2))
    t1s, t2s = list(_text_shapes(sl1.shapes)), list(_text_shapes(sl2.shapes))
    _check(len(t1s) != len(t2s))
    if o.examine_alignment:
        for t1, t2 in zip(t1s, t2s, strict=True):
            _check(o.examine_text and t1.text.strip() != t2.text.strip())
            p1s, p2s = t1.text_frame.paragraphs, t2.text_frame.paragraphs
            _check(len(p1s) != len(p2s))
            _check(any(_alignment(p1) != _alignment(p2) for p1, p2 in zip(p1s, p2s, strict=True)))


@metric("compare_pptx_files", PptxOptions, files=True)
def compare_pptx_files(result: str | None, expected: str | None, options: PptxOptions) -> float:
    """1.0 if the result presentation matches the expected one in everything examined (module docstring).

    Raises:
        ValueError: if the expected presentation is missing or cannot be read.
    """
    if expected is None:
        raise ValueError("compare_pptx_files needs an expected presentation")
    if result is None or too_big(result):
        return 0.0
    try:
        got = Presentation(result)
    except _UNREADABLE:
        return 0.0
    try:
        want = Presentation(expected)
    except _UNREADABLE as exc:
        raise ValueError(f"expected presentation {expected} cannot be read: {exc}") from exc
    try:
        _check(options.examine_number_of_slides and len(got.slides) != len(want.slides))
        for sl1, sl2 in zip(got.slides, want.slides, strict=False):
            _compare_slide(sl1, sl2, options)
    except _Differs:
        return 0.0
    return 1.0


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
    except _UNREADABLE:
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
    except _UNREADABLE as exc:
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


_OOR = "http://openoffice.org/2001/registry"


def _settings(path: str | None, item_path: str, prop: str) -> list[str | None] | None:
    """The values LibreOffice's settings file (``registrymodifications.xcu``) gives ``prop`` under
    ``item_path``, in file order; None if the file is missing or not XML."""
    if not path:
        return None
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError):
        return None
    return [None if (v := p.find("value")) is None else v.text
            for item in root.iterfind(f".//item[@{{{_OOR}}}path='{item_path}']")
            for p in item.iterfind(f"prop[@{{{_OOR}}}name='{prop}']")]


@metric("check_presenter_console_disable", files=True)
def check_presenter_console_disable(result: str | None, expected: Any = None) -> float:
    """1.0 if LibreOffice's settings turn Impress's presenter console off (its first setting counts)."""
    values = _settings(result, "/org.openoffice.Office.Impress/Misc/Start", "EnablePresenterScreen")
    return 1.0 if values and (values[0] or "").lower() == "false" else 0.0


class AutosaveRules(_Rules):
    minutes: int


@metric("check_auto_saving_time", rules=AutosaveRules, files=True)
def check_auto_saving_time(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if LibreOffice's settings save documents automatically every ``rules["minutes"]`` minutes."""
    values = _settings(result, "/org.openoffice.Office.Common/Save/Document", "AutoSaveTimeIntervall")
    if not values or values[-1] is None:
        return 0.0
    try:
        return 1.0 if int(values[-1]) == rules["minutes"] else 0.0
    except ValueError:
        return 0.0
