"""``compare_pptx_files``, after OSWorld's: two presentations compared slide by slide, shape by shape.

It walks both presentations slide by slide and shape by shape (in z-order) and scores 1.0 only if
they agree on everything the ``examine_*`` options leave on: the slide count, each slide's background
colour and notes, the shape count and each shape's position and size (within
``approximately_tolerance``, relative), the text, paragraph alignment and indent level, each run's
font name, size, bold, italic, colour, underline and strike-through, the bullets, and the formatting
of table cells' runs. Paragraph and run counts must always agree.

Five of OSWorld's options were written for one task file each and carry that task's slide number,
coordinates or text (see :func:`_moved_as_asked`); they are kept because those task files need them.
The result is the agent's presentation, the expected one the original (or gold) it is compared to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from xml.etree import ElementTree

from pptx import Presentation
from pptx.enum.dml import MSO_FILL
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.enum.text import PP_ALIGN
from pptx.slide import Slide
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics.slides import UNREADABLE

__all__ = ["PptxOptions", "compare_pptx_files"]

_NS = {"a": "http://schemas.openxmlformats.org/drawingml/2006/main"}


class PptxOptions(BaseModel):
    """What ``compare_pptx_files`` examines (OSWorld's option names and defaults).

    ``examine_aligment`` (sic) is accepted and ignored: one OSWorld task file sets it to false, but
    OSWorld's function never reads that name, so the task is scored there with ``examine_alignment``
    at its default (true), and here too.
    """

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
    examine_aligment: StrictBool = True  # OSWorld's misspelling, never read (see above)
    examine_title_bottom_position: StrictBool = False
    examine_table_bottom_position: StrictBool = False
    examine_right_position: StrictBool = False
    examine_top_position: StrictBool = False
    examine_shape_for_shift_size: StrictBool = False


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


# The task-specific options' constants, from OSWorld's function (lengths in EMU, 360,000 to the cm).
_LOW = 3_600_000  # a title or table moved "to the bottom" starts at least this far down
_RIGHT = 4_320_000  # a picture moved "to the right side" starts at least this far right
_HIGH = 1_980_000  # a picture moved "to the top" starts at most this far down
_MOVED_TITLE = "Product Comparison"
_PLACEHOLDER_TEXT = "Elaborate on what you want to discuss."  # the one box that may change size


def _past(a: Any, b: Any, edge: int) -> bool:
    """The agent's ``a`` is further (down or right) than the original ``b`` and reaches ``edge`` (either may
    be unset)."""
    return a is not None and b is not None and a > b and a >= edge


def _moved_as_asked(s1: Any, s2: Any, slide_no: int, o: PptxOptions) -> None:
    """OSWorld's five options written for one task file each (``s1`` the agent's shape, ``s2`` the original's,
    ``slide_no`` counted from 1): the shape the task moves must have moved past an edge, the others kept their box
    (the right and top options leave the others alone, as OSWorld's do)."""
    tol = o.approximately_tolerance
    texts = hasattr(s1, "text") and hasattr(s2, "text")
    if o.examine_title_bottom_position:
        if texts and s1.text == s2.text:
            _check(s1.text == _MOVED_TITLE and not _past(s1.top, s2.top, _LOW))
        else:
            _check(not _same_box(s1, s2, tol))
    if o.examine_table_bottom_position:
        if slide_no == 3 and s1.shape_type == s2.shape_type == MSO_SHAPE_TYPE.TABLE:
            _check(not _past(s1.top, s2.top, _LOW))
        else:
            _check(not _same_box(s1, s2, tol))
    if o.examine_right_position and slide_no == 2 and not hasattr(s1, "text") and not hasattr(s2, "text"):
        _check(not _past(s1.left, s2.left, _RIGHT))
    if o.examine_top_position and slide_no == 2 and s1.shape_type == s2.shape_type == MSO_SHAPE_TYPE.PICTURE:
        _check(s1.top is None or s2.top is None or not (s1.top < s2.top and s1.top <= _HIGH))
    if o.examine_shape_for_shift_size and not _same_box(s1, s2, tol):
        _check(not (texts and s1.text == s2.text == _PLACEHOLDER_TEXT))


def _compare_shape(s1: Any, s2: Any, slide_no: int, o: PptxOptions) -> bool:
    tol = o.approximately_tolerance
    _moved_as_asked(s1, s2, slide_no, o)
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


def _compare_slide(sl1: Slide, sl2: Slide, slide_no: int, o: PptxOptions) -> None:
    _check(o.examine_background_color and _background(sl1) != _background(sl2))
    _check(o.examine_note and _notes(sl1) != _notes(sl2))
    _check(len(sl1.shapes) != len(sl2.shapes))
    had_runs = False
    for s1, s2 in zip(sl1.shapes, sl2.shapes, strict=True):
        had_runs = _compare_shape(s1, s2, slide_no, o) or had_runs
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
    except UNREADABLE:
        return 0.0
    try:
        want = Presentation(expected)
    except UNREADABLE as exc:
        raise ValueError(f"expected presentation {expected} cannot be read: {exc}") from exc
    try:
        _check(options.examine_number_of_slides and len(got.slides) != len(want.slides))
        for slide_no, (sl1, sl2) in enumerate(zip(got.slides, want.slides, strict=False), start=1):
            _compare_slide(sl1, sl2, slide_no, options)
    except _Differs:
        return 0.0
    return 1.0
