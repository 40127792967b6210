"""apps-presentations templates that edit one slide of a given deck: its layout, a picture onto it, or
its deletion. The deck (a title slide, then title-and-content slides) is written by the setup and open
in Impress; the oracle goes to the slide by Page Down (keys in the document need no wait, Impress
handles them in order), then works the Slide and Insert menus by access key and arrow keys, waiting
for each menu item before the next key.

Layout and picture are checked on the saved file's package by a ``vm_command_line`` getter (OSWorld
has no metric for either, and ``compare_pptx_files`` sees neither a layout's name nor image bytes):
it prints each slide's layout name and the SHA-256 of each image it links, which ``check_include_exclude``
matches.
"""

from __future__ import annotations

import hashlib
import io
import random
from typing import Any

from PIL import Image, ImageDraw

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_presentations.impress import (
    DOCS,
    HEADINGS,
    IMPRESS,
    TEXT_ONLY,
    TOPICS,
    _bullets,
    deck_bytes,
)
from osgym.suites.apps_smoke.common import ANIMALS, DONE, NAMES, open_app, save_as, write_expected
from osgym.suites.apps_spreadsheet.calc import PEOPLE
from osgym.suites.generators import cmd, op, q, rule, vm_file
from osgym.suites.office import dialog_closed, file_dialog, menu

PICTURES = f"{HOME}/Pictures"
SLIDE_FACTS = (
    "import hashlib, posixpath, re, sys, zipfile\n"
    "z = zipfile.ZipFile(sys.argv[1])\n"
    "def rels(part):\n"
    "    d, b = posixpath.split(part)\n"
    "    x = z.read(d + '/_rels/' + b + '.rels').decode()\n"
    "    out = {}\n"
    "    for r in re.findall(r'<Relationship\\b[^>]*>', x):\n"
    "        a = dict(re.findall(r'(\\w+)=\"([^\"]*)\"', r))\n"
    "        out[a['Id']] = posixpath.normpath(posixpath.join(d, a['Target']))\n"
    "    return out\n"
    "ids = re.findall(r'<p:sldId\\b[^>]*r:id=\"([^\"]+)\"', z.read('ppt/presentation.xml').decode())\n"
    "print('slides=[%d]' % len(ids))\n"
    "top = rels('ppt/presentation.xml')\n"
    "for i, rid in enumerate(ids):\n"
    "    for t in sorted(set(rels(top[rid]).values())):\n"
    "        if '/slideLayouts/' in t:\n"
    "            m = re.search(r'<p:cSld\\b[^>]*name=\"([^\"]*)\"', z.read(t).decode())\n"
    "            print('slide%d.layout=[%s]' % (i, m[1] if m else ''))\n"
    "        elif '/media/' in t:\n"
    "            print('slide%d.image=[%s]' % (i, hashlib.sha256(z.read(t)).hexdigest()))\n"
)
"""A Python script run in the replica on a .pptx (argv: its path): the slide count, then per slide (from
0, in the deck's order) its layout's name and each linked image's SHA-256, one ``key=[value]`` a line
(the brackets end a value, so that one name is never taken for the start of a longer one)."""


def slide_facts(path: str) -> dict[str, Any]:
    """A getter printing :data:`SLIDE_FACTS` of ``path`` (nothing but an error if the file is missing or no
    presentation, which matches no rule)."""
    return cmd(f"python3 -c {q(SLIDE_FACTS)} {q(path)} 2>&1")


def _deck(rng: random.Random) -> tuple[str, list[tuple[int, list[str]]]]:
    """A file stem and a deck of 3 to 5 slides: a title slide, then title-and-content slides of distinct
    headings."""
    stem = f"{rng.choice(NAMES)}-{rng.choice(ANIMALS)}-{rng.randint(10, 99)}"
    topic = f"{rng.choice(TOPICS)} {rng.randint(2020, 2030)}"
    slides = [(0, [topic, f"{rng.choice(['Draft', 'Final', 'Notes'])} by {rng.choice(PEOPLE)}"])]
    slides += [(1, [h, "\n".join(_bullets(rng))]) for h in rng.sample(HEADINGS, rng.randint(2, 4))]
    return stem, slides


def _to_slide(k: int) -> list[dict[str, Any]]:
    return [op("press", key="pagedown") for _ in range(k)]


def _down(n: int) -> list[dict[str, Any]]:
    return [op("press", key="down") for _ in range(n)]


def _setup(stem: str, slides: list[tuple[int, list[str]]],
           extra: dict[str, str | bytes] | None = None) -> tuple[str, list[dict[str, Any]]]:
    src = f"{DOCS}/{stem}.pptx"
    window = f"{stem}.pptx - {IMPRESS}"
    return window, [write_files({src: deck_bytes(slides), **(extra or {})}),
                    *open_app(["libreoffice", "--impress", src], window)]


def _which(k: int, slides: list[tuple[int, list[str]]]) -> str:
    return f"slide {k + 1} (titled '{slides[k][1][0]}')"


LAYOUTS = [("Blank Slide", 0, "Blank Slide"), ("Title Only", 1, "Title Only"), ("Title Slide", 2, "Title Slide"),
           ("Title, Content", 3, "Title, Content"), ("Centered Text", 4, "Centered Text"),
           ("Title and 2 Content", 5, "Title, 2 Content")]
"""Impress's Slide > Layout items: the name in the menu, how many Down presses from the first, and the name
Impress gives the layout in a saved .pptx."""
_SAME = {0: "Title Slide", 1: "Title, Content"}
"""The layout a deck's slide already has (by its python-pptx layout index), as Impress names it."""


def slides_change_layout(rng: random.Random) -> dict[str, Any]:
    stem, slides = _deck(rng)
    k = rng.randrange(len(slides))
    item, downs, saved = rng.choice([la for la in LAYOUTS if la[0] != _SAME[slides[k][0]]])
    out = f"{DOCS}/{stem}-final.pptx"
    window, config = _setup(stem, slides)
    return {
        "instruction": f"The presentation ~/Documents/{stem}.pptx is open in LibreOffice Impress. Change the "
                       f"layout of {_which(k, slides)} to '{item}'. Save it in PowerPoint format as "
                       f"~/Documents/{stem}-final.pptx",
        "related_apps": ["libreoffice_impress"], "config": config,
        "evaluator": {"func": "check_include_exclude", "result": slide_facts(out),
                      "expected": rule(include=[f"slides=[{len(slides)}]", f"slide{k}.layout=[{saved}]"],
                                       exclude=[])},
        "oracle": [op("wait_focused", window=window, role="document-presentation", timeout=90), *_to_slide(k),
                   *menu(window, ["alt", "l"], "Layout", role="menu"), op("press", key="l"),
                   op("wait_enabled", window=window, control="Blank Slide", role="menu-item", timeout=30),
                   *_down(downs), op("press", key="enter"), *save_as(out, IMPRESS), DONE],
    }


def picture_png(rng: random.Random) -> bytes:
    """A small PNG of a coloured disc on a coloured ground, its size and colours drawn from ``rng``
    (deterministic bytes for the same draws)."""
    w, h = rng.randrange(120, 320, 8), rng.randrange(90, 240, 8)
    ground = tuple(rng.randrange(256) for _ in range(3))
    disc = tuple(255 - c for c in ground)
    img = Image.new("RGB", (w, h), ground)
    r = min(w, h) // rng.randint(3, 5)
    cx, cy = rng.randint(r, w - r), rng.randint(r, h - r)
    ImageDraw.Draw(img).ellipse((cx - r, cy - r, cx + r, cy + r), fill=disc)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def slides_insert_image(rng: random.Random) -> dict[str, Any]:
    stem, slides = _deck(rng)
    k = rng.randrange(len(slides))
    png = picture_png(rng)
    picture = f"{PICTURES}/{rng.choice(['photo', 'logo', 'chart', 'sketch', 'badge', 'map'])}-{rng.randint(1, 99)}.png"
    sha = hashlib.sha256(png).hexdigest()
    out = f"{DOCS}/{stem}-final.pptx"
    window, config = _setup(stem, slides, {picture: png})
    return {
        "instruction": f"The presentation ~/Documents/{stem}.pptx is open in LibreOffice Impress. Insert the "
                       f"image ~/Pictures/{picture.rsplit('/', 1)[1]} on {_which(k, slides)}, and on no other "
                       f"slide. Save it in PowerPoint format as ~/Documents/{stem}-final.pptx",
        "related_apps": ["libreoffice_impress"], "config": config,
        "evaluator": {"func": "check_include_exclude", "result": slide_facts(out),
                      "expected": rule(include=[f"slides=[{len(slides)}]", f"slide{k}.image=[{sha}]"],
                                       exclude=[f"slide{i}.image=[{sha}]" for i in range(len(slides)) if i != k])},
        # Insert > Image... is the Insert menu's first item, highlighted when the menu opens by its key.
        "oracle": [op("wait_focused", window=window, role="document-presentation", timeout=90), *_to_slide(k),
                   *menu(window, ["alt", "i"], "Image..."), op("press", key="enter"),
                   *file_dialog("Insert Image", "Open", picture), *dialog_closed("Insert Image", window),
                   *save_as(out, IMPRESS), DONE],
    }


def slides_delete_slide(rng: random.Random) -> dict[str, Any]:
    stem, slides = _deck(rng)
    k = rng.randrange(len(slides))
    out = f"{DOCS}/{stem}-final.pptx"
    postconfig, expected = write_expected(f"{stem}-final.pptx", deck_bytes(slides[:k] + slides[k + 1:]))
    window, config = _setup(stem, slides)
    return {
        "instruction": f"The presentation ~/Documents/{stem}.pptx is open in LibreOffice Impress. Delete "
                       f"{_which(k, slides)}. Save it in PowerPoint format as ~/Documents/{stem}-final.pptx",
        "related_apps": ["libreoffice_impress"], "config": config,
        "evaluator": {"func": "compare_pptx_files", "result": vm_file(out),
                      "expected": vm_file(expected, "expected.pptx"), "options": TEXT_ONLY,
                      "postconfig": [postconfig]},
        # Slide > Delete Slide: the fifth item (New Slide, Duplicate Slide, Insert Slide from File, Layout).
        "oracle": [op("wait_focused", window=window, role="document-presentation", timeout=90), *_to_slide(k),
                   *menu(window, ["alt", "l"], "Delete Slide"), *_down(4), op("press", key="enter"),
                   *save_as(out, IMPRESS), DONE],
    }
