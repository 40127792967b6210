"""apps-presentations templates: a new presentation typed into Impress's layout placeholders, saved as
.pptx and compared slide by slide, shape by shape and paragraph by paragraph with an expected deck
built by python-pptx (``compare_pptx_files`` with positions, fonts and bullets left out: those come
from each program's own template)."""

from __future__ import annotations

import copy
import functools
import io
import random
import re
import zipfile
from typing import Any
from xml.sax.saxutils import escape

from pptx import Presentation

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, open_app, save_as, write_expected
from osgym.suites.apps_spreadsheet.calc import CITIES, PEOPLE, PRODUCTS
from osgym.suites.generators import op, vm_file
from osgym.suites.office import fixed_zip

IMPRESS = "LibreOffice Impress"
DOCS = f"{HOME}/Documents"
TEXT_ONLY = {"examine_shape": False, "examine_indent": False, "examine_font_name": False, "examine_font_size": False,
             "examine_font_bold": False, "examine_font_italic": False, "examine_color_rgb": False,
             "examine_font_underline": False, "examine_strike_through": False, "examine_alignment": False,
             "examine_bullets": False, "examine_background_color": False, "examine_note": False}
TOPICS = ["Quarterly Review", "Team Offsite", "Product Launch", "Garden Project", "Budget Plan", "Safety Training",
          "Book Club", "Museum Visit", "Charity Run", "Office Move"]


@functools.cache
def _blank_deck(layouts: tuple[int, ...]) -> bytes:
    """python-pptx's default template with one slide per layout index, each placeholder holding a marker
    ``@@<slide>.<placeholder>@@`` (python-pptx takes ~0.1 s a deck, so variants fill in a copy)."""
    prs = Presentation()
    order = sorted(set(layouts))
    for unused in [la for i, la in enumerate(prs.slide_layouts) if i not in order]:
        prs.slide_layouts.remove(unused)  # a smaller file: the deck travels base64 in the task's JSON
    kept = list(prs.slide_layouts)
    for i, layout in enumerate(layouts):
        slide = prs.slides.add_slide(kept[order.index(layout)])
        for j, shape in enumerate(slide.placeholders):
            shape.text_frame.text = f"@@{i}.{j}@@"
    buf = io.BytesIO()
    prs.save(buf)
    return fixed_zip(buf.getvalue())


def deck_bytes(slides: list[tuple[int, list[str]]]) -> bytes:
    """A .pptx of python-pptx's default template: per slide its layout index (0 Title Slide, 1 Title and
    Content) and the texts of its placeholders in order (a text's lines become paragraphs).

    >>> p = Presentation(io.BytesIO(deck_bytes([(0, ["T", "S"]), (1, ["H & co", "a\\nb"])])))
    >>> [[s.text_frame.text for s in sl.shapes] for sl in p.slides]
    [['T', 'S'], ['H & co', 'a\\nb']]
    """
    texts = {f"@@{i}.{j}@@": t for i, (_, ts) in enumerate(slides) for j, t in enumerate(ts)}

    def paragraphs(m: re.Match[str]) -> str:
        return "".join(f"<a:p><a:r><a:t>{escape(line)}</a:t></a:r></a:p>" for line in texts[m[1]].split("\n"))

    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info, data in _blank_members(tuple(layout for layout, _ in slides)):
            if info.filename.startswith("ppt/slides/slide"):
                data = re.sub(r"<a:p><a:r><a:t>(@@\d+\.\d+@@)</a:t></a:r></a:p>", paragraphs, data.decode()).encode()
            dst.writestr(copy.copy(info), data, compress_type=zipfile.ZIP_DEFLATED)  # writestr fills in its info
    return out.getvalue()


@functools.cache
def _blank_members(layouts: tuple[int, ...]) -> tuple[tuple[zipfile.ZipInfo, bytes], ...]:
    """:func:`_blank_deck`'s members, read once: unpacking the deck again for every variant was a fifth of
    the suite's generation time."""
    with zipfile.ZipFile(io.BytesIO(_blank_deck(layouts))) as src:
        return tuple((info, src.read(info)) for info in src.infolist())


def _placeholder(text: str, first: bool) -> list[dict[str, Any]]:
    """Select the next placeholder of the slide (Tab), edit it (Enter) once selected, type once the caret
    is in it, leave it (Escape). Impress drops the keys typed while it sets up the text edit."""
    return [op("press", key="tab"), *([op("wait_focused", window=IMPRESS, role="panel", timeout=30)] if first else []),
            op("press", key="enter"), op("wait_focused", window=IMPRESS, role="paragraph", timeout=30),
            op("type", text=text), op("press", key="escape")]


def slides_title_bullets(rng: random.Random) -> dict[str, Any]:
    stem = f"{rng.choice(NAMES)}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}"
    out = f"{DOCS}/{stem}.pptx"
    topic = f"{rng.choice(TOPICS)} {rng.randint(2020, 2030)}"
    subtitle = f"Presented by {rng.choice(PEOPLE)} in {rng.choice(CITIES)}"
    heading = rng.choice(["Agenda", "Goals", "Next Steps", "Highlights", "Shopping List", "Open Questions"])
    bullets = rng.sample([*PRODUCTS, *CITIES], rng.randint(2, 4))
    slides = [(0, [topic, subtitle]), (1, [heading, "\n".join(bullets)])]
    postconfig, expected = write_expected(f"{stem}.pptx", deck_bytes(slides))
    return {
        "instruction": f"In LibreOffice Impress, make a presentation of two slides. The first, a title slide: title "
                       f"'{topic}', subtitle '{subtitle}'. The second, a title and content slide: title "
                       f"'{heading}' and one bullet point per item: {', '.join(bullets)}. Save it in PowerPoint "
                       f"format as ~/Documents/{stem}.pptx",
        "related_apps": ["libreoffice_impress"], "config": open_app(["libreoffice", "--impress"], IMPRESS),
        "evaluator": {"func": "compare_pptx_files", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.pptx"), "options": TEXT_ONLY,
                      "postconfig": [postconfig]},
        "oracle": [op("wait_focused", window=IMPRESS, role="document-presentation", timeout=90),
                   *_placeholder(topic, True), *_placeholder(subtitle, False), op_ctrl_m(),
                   *_placeholder(heading, True), *_placeholder("\n".join(bullets), False),
                   *save_as(out, IMPRESS), DONE],
    }


HEADINGS = ["Agenda", "Goals", "Next Steps", "Highlights", "Shopping List", "Open Questions", "Risks", "Budget",
            "Timeline", "Team"]


def _bullets(rng: random.Random) -> list[str]:
    return rng.sample([*PRODUCTS, *CITIES], rng.randint(2, 4))


def slides_append_slide(rng: random.Random) -> dict[str, Any]:
    stem = f"{rng.choice(NAMES)}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}"
    src, out = f"{DOCS}/{stem}.pptx", f"{DOCS}/{stem}-final.pptx"
    topic = f"{rng.choice(TOPICS)} {rng.randint(2020, 2030)}"
    subtitle = f"{rng.choice(['Draft', 'Final', 'Notes'])} by {rng.choice(PEOPLE)}"
    heading = rng.choice(HEADINGS)
    bullets = _bullets(rng)
    first = (0, [topic, subtitle])
    postconfig, expected = write_expected(f"{stem}-final.pptx", deck_bytes([first, (1, [heading, "\n".join(bullets)])]))
    window = f"{stem}.pptx - {IMPRESS}"
    return {
        "instruction": f"The presentation ~/Documents/{stem}.pptx is open in LibreOffice Impress. Add a second "
                       f"slide with a title and content layout: title '{heading}' and one bullet point per item: "
                       f"{', '.join(bullets)}. Save it in PowerPoint format as ~/Documents/{stem}-final.pptx",
        "related_apps": ["libreoffice_impress"],
        "config": [write_files({src: deck_bytes([first])}), *open_app(["libreoffice", "--impress", src], window)],
        "evaluator": {"func": "compare_pptx_files", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.pptx"), "options": TEXT_ONLY,
                      "postconfig": [postconfig]},
        "oracle": [op("wait_focused", window=window, role="document-presentation", timeout=90), op_ctrl_m(),
                   *_placeholder(heading, True), *_placeholder("\n".join(bullets), False), *save_as(out, IMPRESS),
                   DONE],
    }


def op_ctrl_m() -> dict[str, Any]:
    """Slide > New Slide by its shortcut: a slide after the current one, of the Title, Content layout."""
    return op("hotkey", keys=["ctrl", "m"])
