"""``compare_pptx_files`` on presentations generated here: a match scores 1, each kind of mismatch 0, as OSWorld."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image
from pptx import Presentation
from pptx.dml.color import RGBColor
from pptx.enum.text import PP_ALIGN
from pptx.oxml.ns import qn
from pptx.util import Emu, Inches, Pt

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import Call, OSWorld


def deck(path: Path, **t: Any) -> str:
    """A two-slide deck; each keyword changes one thing (see the uses below)."""
    prs = Presentation()
    title = prs.slides.add_slide(prs.slide_layouts[0])
    title.shapes.title.text = t.get("title", "Quarterly report")
    title.placeholders[1].text = "Sales and costs"
    slide = prs.slides.add_slide(prs.slide_layouts[6])  # blank
    if "background" in t:
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = RGBColor.from_string(t["background"])
    left = Inches(1) + Emu(t.get("shift", 0))
    box = slide.shapes.add_textbox(left, Inches(1), Inches(6), Inches(2))
    para = box.text_frame.paragraphs[0]
    para.alignment = t.get("align", PP_ALIGN.LEFT)
    run = para.add_run()
    run.text = t.get("text", "Revenue grew")
    run.font.bold = t.get("bold", True)
    run.font.italic = t.get("italic")
    run.font.underline = t.get("underline")
    run.font.size = Pt(t.get("size", 24))
    run.font.name = t.get("font", "Arial")
    run.font.color.rgb = RGBColor.from_string(t.get("colour", "1F4E79"))
    if t.get("strike"):
        run.font._element.set("strike", "sngStrike")
    second = box.text_frame.add_paragraph()
    second.level = t.get("level", 1)
    second.add_run().text = "by 12 %"
    if "bullet" in t:
        second._p.get_or_add_pPr().append(second._p.makeelement(qn("a:buChar"), {"char": t["bullet"]}))
    table = slide.shapes.add_table(2, 2, Inches(1), Inches(4), Inches(4), Inches(1)).table
    for r in range(2):
        for c in range(2):
            table.cell(r, c).text = f"r{r}c{c}"
    table.cell(0, 0).text_frame.paragraphs[0].runs[0].font.bold = t.get("cell_bold", False)
    if t.get("extra_shape"):
        slide.shapes.add_textbox(Inches(7), Inches(5), Inches(1), Inches(1)).text_frame.text = "extra"
    slide.notes_slide.notes_text_frame.text = t.get("notes", "Mention the new stores.")
    if t.get("third_slide"):
        prs.slides.add_slide(prs.slide_layouts[6])
    prs.save(path)
    return str(path)


CASES: list[tuple[str, dict[str, Any], dict[str, Any], float]] = [
    ("same", {}, {}, 1.0),
    ("extra-slide", {"third_slide": True}, {}, 0.0),
    ("extra-slide-not-examined", {"third_slide": True}, {"examine_number_of_slides": False}, 1.0),
    ("title-text", {"title": "Quarterly reports"}, {}, 0.0),
    ("run-text", {"text": "Revenue fell"}, {}, 0.0),
    ("run-text-not-examined", {"text": "Revenue fell"}, {"examine_text": False, "examine_bullets": False}, 1.0),
    ("moved", {"shift": Inches(0.5)}, {}, 0.0),
    ("moved-within-tolerance", {"shift": 100}, {}, 1.0),
    ("moved-not-examined", {"shift": Inches(0.5)}, {"examine_shape": False}, 1.0),
    ("bold", {"bold": False}, {}, 0.0),
    ("bold-not-examined", {"bold": False}, {"examine_font_bold": False}, 1.0),
    ("italic", {"italic": True}, {}, 0.0),
    ("italic-unset-vs-false", {"italic": False}, {}, 1.0),
    ("underline", {"underline": True}, {}, 0.0),
    ("font-size", {"size": 28}, {}, 0.0),
    ("font-name", {"font": "Calibri"}, {}, 0.0),
    ("font-name-not-examined", {"font": "Calibri"}, {"examine_font_name": False}, 1.0),
    ("colour", {"colour": "C00000"}, {}, 0.0),
    ("colour-not-examined", {"colour": "C00000"}, {"examine_color_rgb": False}, 1.0),
    ("strike", {"strike": True}, {}, 0.0),
    ("alignment", {"align": PP_ALIGN.CENTER}, {}, 0.0),
    ("alignment-not-examined", {"align": PP_ALIGN.CENTER}, {"examine_alignment": False}, 1.0),
    ("indent", {"level": 2}, {}, 0.0),
    ("indent-not-examined", {"level": 2}, {"examine_indent": False, "examine_bullets": False}, 1.0),
    ("bullet", {"bullet": "•"}, {}, 0.0),
    ("bullet-not-examined", {"bullet": "•"}, {"examine_bullets": False}, 1.0),
    ("notes", {"notes": "Skip the stores."}, {}, 0.0),
    ("notes-not-examined", {"notes": "Skip the stores."}, {"examine_note": False}, 1.0),
    ("background", {"background": "FFEE00"}, {}, 0.0),
    ("background-not-examined", {"background": "FFEE00"}, {"examine_background_color": False}, 1.0),
    ("table-cell-bold", {"cell_bold": True}, {}, 0.0),
    ("extra-shape", {"extra_shape": True}, {}, 0.0),
    # OSWorld never reads its misspelt option: alignment is still examined
    ("misspelt-alignment-option", {}, {"examine_aligment": False}, 1.0),
    ("misspelt-alignment-option-examines-alignment", {"align": PP_ALIGN.CENTER}, {"examine_aligment": False}, 0.0),
]


def _files(tmp: Path, name: str, tweaks: dict[str, Any]) -> tuple[str, str]:
    folder = tmp / name
    folder.mkdir()
    return deck(folder / "result.pptx", **tweaks), deck(folder / "expected.pptx")


@pytest.mark.parametrize("name, tweaks, options, want", CASES, ids=[c[0] for c in CASES])
def test_compare_pptx_files(name: str, tweaks: dict[str, Any], options: dict[str, Any], want: float,
                            tmp_path: Path) -> None:
    result, expected = _files(tmp_path, name, tweaks)
    assert metrics.score("compare_pptx_files", result, expected, options) == want


def test_compare_pptx_files_missing_or_broken_result_scores_0(tmp_path: Path) -> None:
    expected = deck(tmp_path / "expected.pptx")
    (tmp_path / "broken.pptx").write_text("not a presentation")
    assert metrics.score("compare_pptx_files", None, expected, {}) == 0.0
    assert metrics.score("compare_pptx_files", str(tmp_path / "broken.pptx"), expected, {}) == 0.0


def test_compare_pptx_files_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, tweaks, options, _ in CASES:
        result, expected = _files(tmp_path, name, tweaks)
        ours.append(metrics.score("compare_pptx_files", result, expected, options))
        calls.append(Call("slides", "compare_pptx_files", result, expected, options))
    theirs = osworld.scores(calls)
    differ = [(c[0], o, t) for c, o, t in zip(CASES, ours, theirs, strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


@pytest.mark.parametrize("options, named", [
    ({"examine_top_position": "yes"}, "examine_top_position"),
    ({"examine_shape": "yes"}, "examine_shape"),
    ({"examine_everything": True}, "examine_everything"),
])
def test_bad_pptx_options_fail_at_load(options: dict[str, Any], named: str) -> None:
    with pytest.raises(TaskLoadError, match=f"'compare_pptx_files': option {named}"):
        load_task({"id": "t-pptx", "instruction": "x", "evaluator": {"func": "compare_pptx_files", "options": options}})


def moved(path: Path, **t: Any) -> str:
    """Three slides laid out as the task-specific options expect (see MOVE_CASES); keywords move or resize one shape.

    Slide 1: a title and the box whose size may change; slide 2: the "Product Comparison" title and a
    picture; slide 3: a table.
    """
    prs = Presentation()
    blank = prs.slide_layouts[6]
    one = prs.slides.add_slide(blank)
    one.shapes.add_textbox(Inches(1) + Emu(t.get("overview_shift", 0)), Inches(0.5), Inches(8), Inches(1)
                           ).text_frame.text = "Overview"
    one.shapes.add_textbox(Inches(1), Inches(2), Inches(8), t.get("box_height", Inches(3))
                           ).text_frame.text = "Elaborate on what you want to discuss."
    two = prs.slides.add_slide(blank)
    two.shapes.add_textbox(Inches(1), t.get("title_top", Inches(0.3)), Inches(8), Inches(1)
                           ).text_frame.text = "Product Comparison"
    img = picture(path.with_suffix(".png"))
    two.shapes.add_picture(img, t.get("picture_left", Inches(1)), t.get("picture_top", Inches(3)), Inches(2),
                           Inches(1.5))
    three = prs.slides.add_slide(blank)
    three.shapes.add_textbox(Inches(1), Inches(0.3), Inches(8), Inches(1)).text_frame.text = "Figures"
    table = three.shapes.add_table(2, 2, Inches(1), t.get("table_top", Inches(1.5)), Inches(6), Inches(1.5)).table
    for r in range(2):
        for c in range(2):
            table.cell(r, c).text = f"{r}.{c}"
    prs.save(path)
    return str(path)


TITLE = {"examine_shape": False, "examine_title_bottom_position": True}
TABLE = {"examine_shape": False, "examine_table_bottom_position": True}
RIGHT = {"examine_shape": False, "examine_right_position": True}
TOP = {"examine_shape": False, "examine_top_position": True}
RESIZE = {"examine_shape": False, "examine_shape_for_shift_size": True}
MOVE_CASES: list[tuple[str, dict[str, Any], dict[str, Any], float]] = [
    ("title-to-bottom", {"title_top": Inches(5.5)}, TITLE, 1.0),
    ("title-kept", {}, TITLE, 0.0),
    ("title-not-low-enough", {"title_top": Inches(2)}, TITLE, 0.0),
    ("title-and-picture-moved", {"title_top": Inches(5.5), "picture_left": Inches(6)}, TITLE, 0.0),
    ("table-to-bottom", {"table_top": Inches(5)}, TABLE, 1.0),
    ("table-kept", {}, TABLE, 0.0),
    ("table-and-title-moved", {"table_top": Inches(5), "title_top": Inches(5.5)}, TABLE, 0.0),
    ("picture-to-right", {"picture_left": Inches(6)}, RIGHT, 1.0),
    ("picture-kept-left", {}, RIGHT, 0.0),
    ("picture-not-right-enough", {"picture_left": Inches(3)}, RIGHT, 0.0),
    ("picture-to-top", {"picture_top": Inches(0.5)}, TOP, 1.0),
    ("picture-kept-low", {}, TOP, 0.0),
    ("picture-not-high-enough", {"picture_top": Inches(2.5)}, TOP, 0.0),
    ("placeholder-resized", {"box_height": Inches(4)}, RESIZE, 1.0),
    ("other-box-moved", {"overview_shift": Inches(0.5)}, RESIZE, 0.0),
    ("nothing-changed", {}, RESIZE, 1.0),
]


def _moved_files(tmp: Path, name: str, tweaks: dict[str, Any]) -> tuple[str, str]:
    folder = tmp / name
    folder.mkdir()
    return moved(folder / "result.pptx", **tweaks), moved(folder / "original.pptx")


@pytest.mark.parametrize("name, tweaks, options, want", MOVE_CASES, ids=[c[0] for c in MOVE_CASES])
def test_compare_pptx_files_task_specific_moves(name: str, tweaks: dict[str, Any], options: dict[str, Any],
                                                want: float, tmp_path: Path) -> None:
    assert metrics.score("compare_pptx_files", *_moved_files(tmp_path, name, tweaks), options) == want


def test_compare_pptx_files_task_specific_moves_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, tweaks, options, _ in MOVE_CASES:
        result, original = _moved_files(tmp_path, name, tweaks)
        ours.append(metrics.score("compare_pptx_files", result, original, options))
        calls.append(Call("slides", "compare_pptx_files", result, original, options))
    differ = [(c[0], o, t) for c, o, t in zip(MOVE_CASES, ours, osworld.scores(calls), strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def picture(path: Path) -> str:
    Image.new("RGB", (64, 48), (200, 30, 30)).save(path)
    return str(path)


def shaped(path: Path, img: str, **t: Any) -> str:
    """One-slide deck for the single-property checks; each keyword changes one thing."""
    prs = Presentation()
    if t.get("portrait"):
        prs.slide_width, prs.slide_height = prs.slide_height, prs.slide_width
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    box = slide.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1))
    box.text_frame.text = "first"
    box.text_frame.add_paragraph().text = "second"
    if t.get("strike"):
        box.text_frame.paragraphs[1].runs[0].font._element.set("strike", "sngStrike")
    if "background" in t:
        slide.background.fill.solid()
        slide.background.fill.fore_color.rgb = RGBColor(*t["background"])
    if "transition" in t:
        p = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
        tr = slide._element.makeelement(f"{p}transition", {})
        tr.append(slide._element.makeelement(f"{p}{t['transition']}", {}))
        slide._element.append(tr)
    w, h = prs.slide_width, prs.slide_height
    if t.get("stretched"):
        slide.shapes.add_picture(img, 0, 0, w, h)
    else:
        slide.shapes.add_picture(img, Inches(1), Inches(3), Inches(2), Inches(1.5))
    prs.save(path)
    return str(path)


STRIKE_RULES = {"slide_index_s": [0], "shape_index_s": [0], "paragraph_index_s": [1]}
SINGLE_CASES: list[tuple[str, str, dict[str, Any], Any, float]] = [
    ("check_slide_orientation_Portrait", "portrait", {"portrait": True}, None, 1.0),
    ("check_slide_orientation_Portrait", "landscape", {}, None, 0.0),
    ("check_strikethrough", "struck", {"strike": True}, STRIKE_RULES, 1.0),
    ("check_strikethrough", "plain", {}, STRIKE_RULES, 0.0),
    ("check_strikethrough", "no-such-paragraph", {"strike": True}, {**STRIKE_RULES, "paragraph_index_s": [5]}, 0.0),
    ("check_transition", "dissolve", {"transition": "dissolve"}, {"slide_idx": 0, "transition_type": "dissolve"}, 1.0),
    ("check_transition", "other", {"transition": "fade"}, {"slide_idx": 0, "transition_type": "dissolve"}, 0.0),
    ("check_transition", "none", {}, {"slide_idx": 0, "transition_type": "dissolve"}, 0.0),
    ("check_transition", "no-such-slide", {"transition": "dissolve"}, {"slide_idx": 3, "transition_type": "dissolve"},
     0.0),
    ("evaluate_presentation_fill_to_rgb_distance", "exact", {"background": (255, 255, 0)}, {"rgb": [255, 255, 0]}, 1.0),
    ("evaluate_presentation_fill_to_rgb_distance", "near", {"background": (250, 250, 0)}, {"rgb": [255, 255, 0]},
     "between"),
    ("evaluate_presentation_fill_to_rgb_distance", "unchanged", {"background": (0, 0, 255)},
     {"rgb": [255, 255, 0], "original_rgb": [0, 0, 255]}, 0.0),
    ("evaluate_presentation_fill_to_rgb_distance", "no-fill", {}, {"rgb": [255, 255, 0]}, 0.0),
    ("check_image_stretch_and_center", "stretched", {"stretched": True}, "original", 1.0),
    ("check_image_stretch_and_center", "small", {}, "original", 0.0),
]


def _single_files(tmp: Path, case: tuple[str, str, dict[str, Any], Any, float]) -> tuple[str, Any]:
    func, name, tweaks, expected, _ = case
    folder = tmp / f"{func}-{name}"
    folder.mkdir()
    img = picture(folder / "photo.png")
    result = shaped(folder / "result.pptx", img, **tweaks)
    if expected == "original":
        return result, shaped(folder / "original.pptx", img)
    return result, expected


def _single(func: str, tmp_path: Path) -> None:
    cases = [c for c in SINGLE_CASES if c[0] == func]
    assert 1.0 in {c[4] for c in cases} and 0.0 in {c[4] for c in cases}, func
    for case in cases:
        got = metrics.score(func, *_single_files(tmp_path, case), {})
        assert (0.9 < got < 1.0) if case[4] == "between" else got == case[4], (case[1], got)


def _single_parity(func: str, osworld: OSWorld, tmp_path: Path) -> None:
    cases = [c for c in SINGLE_CASES if c[0] == func]
    ours, calls = [], []
    for case in cases:
        result, expected = _single_files(tmp_path, case)
        ours.append(metrics.score(func, result, expected, {}))
        calls.append(Call("slides", func, result, expected, {}))
    differ = [(c[1], o, t) for c, o, t in zip(cases, ours, osworld.scores(calls), strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def test_check_slide_orientation_Portrait(tmp_path: Path) -> None:  # noqa: N802 (OSWorld's name)
    _single("check_slide_orientation_Portrait", tmp_path)


def test_check_strikethrough(tmp_path: Path) -> None:
    _single("check_strikethrough", tmp_path)


def test_check_transition(tmp_path: Path) -> None:
    _single("check_transition", tmp_path)


def test_evaluate_presentation_fill_to_rgb_distance(tmp_path: Path) -> None:
    _single("evaluate_presentation_fill_to_rgb_distance", tmp_path)


def test_check_image_stretch_and_center(tmp_path: Path) -> None:
    _single("check_image_stretch_and_center", tmp_path)


def test_check_slide_orientation_Portrait_parity(osworld: OSWorld, tmp_path: Path) -> None:  # noqa: N802
    _single_parity("check_slide_orientation_Portrait", osworld, tmp_path)


def test_check_strikethrough_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _single_parity("check_strikethrough", osworld, tmp_path)


def test_check_transition_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _single_parity("check_transition", osworld, tmp_path)


def test_evaluate_presentation_fill_to_rgb_distance_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _single_parity("evaluate_presentation_fill_to_rgb_distance", osworld, tmp_path)


def test_check_image_stretch_and_center_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _single_parity("check_image_stretch_and_center", osworld, tmp_path)


def test_single_property_checks_score_0_for_a_missing_or_broken_result(tmp_path: Path) -> None:
    (tmp_path / "broken.pptx").write_text("not a presentation")
    original = shaped(tmp_path / "original.pptx", picture(tmp_path / "photo.png"))
    for func, _, _, expected, _ in SINGLE_CASES:
        arg = original if expected == "original" else expected
        for result in (None, str(tmp_path / "broken.pptx")):
            assert metrics.score(func, result, arg, {}) == 0.0, func


def xcu(path: Path, items: list[tuple[str, str, str]]) -> str:
    """LibreOffice's registrymodifications.xcu with (item path, property, value) settings."""
    body = "".join(f'<item oor:path="{p}"><prop oor:name="{n}" oor:op="fuse"><value>{v}</value></prop></item>'
                   for p, n, v in items)
    path.write_text('<?xml version="1.0" encoding="UTF-8"?><oor:items xmlns:oor="http://openoffice.org/2001/registry"'
                    f' xmlns:xs="http://www.w3.org/2001/XMLSchema">{body}</oor:items>')
    return str(path)


PRESENTER = "/org.openoffice.Office.Impress/Misc/Start"
AUTOSAVE = "/org.openoffice.Office.Common/Save/Document"
XCU_CASES: list[tuple[str, str, list[tuple[str, str, str]], Any, float]] = [
    ("check_presenter_console_disable", "off", [(PRESENTER, "EnablePresenterScreen", "false")], None, 1.0),
    ("check_presenter_console_disable", "on", [(PRESENTER, "EnablePresenterScreen", "true")], None, 0.0),
    ("check_presenter_console_disable", "unset", [(AUTOSAVE, "AutoSaveTimeIntervall", "3")], None, 0.0),
    ("check_auto_saving_time", "right", [(AUTOSAVE, "AutoSaveTimeIntervall", "3")], {"minutes": 3}, 1.0),
    ("check_auto_saving_time", "other", [(AUTOSAVE, "AutoSaveTimeIntervall", "10")], {"minutes": 3}, 0.0),
    ("check_auto_saving_time", "unset", [(PRESENTER, "EnablePresenterScreen", "false")], {"minutes": 3}, 0.0),
]


def _xcu_cases(func: str, tmp_path: Path) -> list[tuple[str, Any, float]]:
    return [(xcu(tmp_path / f"{func}-{name}.xcu", items), rules, want)
            for f, name, items, rules, want in XCU_CASES if f == func]


def test_check_presenter_console_disable(tmp_path: Path) -> None:
    for path, rules, want in _xcu_cases("check_presenter_console_disable", tmp_path):
        assert metrics.score("check_presenter_console_disable", path, rules, {}) == want, path
    assert metrics.score("check_presenter_console_disable", str(tmp_path / "missing.xcu"), None, {}) == 0.0


def test_check_auto_saving_time(tmp_path: Path) -> None:
    for path, rules, want in _xcu_cases("check_auto_saving_time", tmp_path):
        assert metrics.score("check_auto_saving_time", path, rules, {}) == want, path
    assert metrics.score("check_auto_saving_time", str(tmp_path / "missing.xcu"), {"minutes": 3}, {}) == 0.0


def test_check_presenter_console_disable_parity(osworld: OSWorld, tmp_path: Path) -> None:
    cases = _xcu_cases("check_presenter_console_disable", tmp_path)
    ours = [metrics.score("check_presenter_console_disable", p, r, {}) for p, r, _ in cases]
    assert osworld.scores([Call("slides", "check_presenter_console_disable", p, r, {}) for p, r, _ in cases]) == ours


def test_check_auto_saving_time_parity(osworld: OSWorld, tmp_path: Path) -> None:
    cases = _xcu_cases("check_auto_saving_time", tmp_path)
    ours = [metrics.score("check_auto_saving_time", p, r, {}) for p, r, _ in cases]
    assert osworld.scores([Call("slides", "check_auto_saving_time", p, r, {}) for p, r, _ in cases]) == ours


def numbered(colours: list[str]) -> bytes:
    """A deck whose master's slide-number field and its paragraph end take ``colours`` (RGB hex), in that order."""
    prs = Presentation()
    master = prs.slide_masters[0].element
    field = master.xpath(".//p:sp[.//p:ph[@type='sldNum']]//a:p")[0]
    for props, colour in zip([field.xpath(".//a:fld/a:rPr")[0], field.xpath("a:endParaRPr")[0]], colours,
                             strict=False):
        fill = props.makeelement(qn("a:solidFill"), {})
        fill.append(props.makeelement(qn("a:srgbClr"), {"val": colour}))
        props.append(fill)
    prs.slides.add_slide(prs.slide_layouts[6])
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def _deck(colours: list[str]) -> File:
    return File(numbered(colours), "deck.pptx")


RED, BLUE = {"color": "red"}, {"color": "blue"}
PAGE_NUMBER_CASES = [
    Case("red", _deck(["FF0000", "FF0000"]), RED, 1.0),
    Case("green", _deck(["00FF00", "00FF00"]), {"color": "green"}, 1.0),
    Case("black", _deck(["000000", "000000"]), {"color": "black"}, 1.0),
    Case("blue-not-red", _deck(["0000FF", "0000FF"]), RED, 0.0),
    Case("grey-not-red", _deck(["808080", "808080"]), RED, 0.0),
    # the number's colour is the second-to-last one: here black, whatever the paragraph end says
    Case("only-the-paragraph-end-red", _deck(["000000", "FF0000"]), RED, 0.0),
    # OSWorld reads the hex value one digit late (it expects "#RRGGBB"): from "C00000" it sees red 0,
    # from "808080" (8, 8, 0): black, and no blue ever passes
    Case("dark-red", _deck(["C00000", "C00000"]), RED, 1.0, osworld=0.0),
    Case("grey-not-black", _deck(["808080", "808080"]), {"color": "black"}, 0.0, osworld=1.0),
    Case("blue", _deck(["0000FF", "0000FF"]), BLUE, 1.0, osworld=0.0),
    # fewer than two colours in the master: OSWorld raises on its missing second-to-last one
    Case("one-colour", _deck(["FF0000"]), RED, 0.0, osworld="IndexError"),
    Case("no-colour", _deck([]), RED, 0.0, osworld="IndexError"),
]


@pytest.mark.parametrize("case", PAGE_NUMBER_CASES, ids=ids(PAGE_NUMBER_CASES))
def test_check_page_number_colors(case: Case, tmp_path: Path) -> None:
    check("check_page_number_colors", case, tmp_path)


def test_check_page_number_colors_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "slides", "check_page_number_colors", PAGE_NUMBER_CASES, tmp_path)


def test_check_page_number_colors_missing_broken_or_bad_rules(tmp_path: Path) -> None:
    (tmp_path / "broken.pptx").write_text("not a presentation")
    for result in (None, str(tmp_path / "broken.pptx")):
        assert metrics.score("check_page_number_colors", result, RED, {}) == 0.0
    task = {"id": "t-num", "instruction": "x", "evaluator": {
        "func": "check_page_number_colors", "result": {"type": "vm_file", "path": "/tmp/x.pptx"},
        "expected": {"type": "rule", "rules": {"color": "purple"}}}}
    with pytest.raises(TaskLoadError, match="'check_page_number_colors': rules.color"):
        load_task(task)
