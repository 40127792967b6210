"""Media inside a slide deck on the replica: audio_in_slide (embedded and linked) and
background_image_in_slide, on decks the test generates; each against OSWorld's own getter."""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lxml import etree
from PIL import Image
from pptx import Presentation
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pptx.opc.package import Part
from pptx.opc.packuri import PackURI

from osgym.tasks import getters
from osgym.tasks.getters import Context

pytestmark = [pytest.mark.docker]

AUDIO = b"ID3\x03\x00\x00\x00\x00\x00\x00osgym-audio-bytes"


def _png(rgb: tuple[int, int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), rgb).save(buf, format="PNG")
    return buf.getvalue()


def _deck(*, background: bytes | None = None, audio: bytes | None = None, linked: str | None = None) -> bytes:
    prs = Presentation()
    blank = prs.slide_layouts[6]
    prs.slides.add_slide(blank)  # slide 0: nothing
    slide = prs.slides.add_slide(blank)  # slide 1: the media
    if background is not None:
        _, rid = slide.part.get_or_add_image_part(io.BytesIO(background))
        ns = ('xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" '
              'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" '
              'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"')
        bg = etree.fromstring(f'<p:bg {ns}><p:bgPr><a:blipFill><a:blip r:embed="{rid}"/><a:stretch><a:fillRect/>'
                              '</a:stretch></a:blipFill><a:effectLst/></p:bgPr></p:bg>')
        slide._element.cSld.insert(0, bg)
        # a picture on the slide that is not its background: not what the getter returns
        slide.shapes.add_picture(io.BytesIO(_png((1, 2, 3))), 0, 0)
    if audio is not None:
        part = Part(PackURI("/ppt/media/media1.mp3"), "audio/mpeg", prs.part.package, audio)
        slide.part.relate_to(part, RT.AUDIO)
    if linked is not None:
        slide.part.relate_to(f"file://{linked}", RT.AUDIO, is_external=True)
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _fetch(ctx: Context, name: str, **options: Any) -> Any:
    getters.check(name, options, where="evaluator.result")
    return getters.fetch(ctx, name, options, "task t: evaluator.result")


def _put(ctx: Context, data: bytes) -> str:
    path = f"/home/user/slides-{uuid.uuid4().hex[:8]}.pptx"
    ctx.replica.write_file(path, data)
    return path


def test_background_image_in_slide(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    picture = _png((200, 10, 10))
    deck = _put(ctx, _deck(background=picture))
    config = {"ppt_file_path": deck, "slide_index": 1, "dest": "bg.png"}
    got = _fetch(ctx, "background_image_in_slide", **config)
    assert Path(got).read_bytes() == picture
    assert _fetch(ctx, "background_image_in_slide", **{**config, "slide_index": 0}) is None
    assert _fetch(ctx, "background_image_in_slide", **{**config, "slide_index": 9}) is None
    assert osworld_get(ctx.replica, ("impress", "get_background_image_in_slide", config),
                       ("impress", "get_background_image_in_slide", {**config, "slide_index": 0})) == [picture, None]


def test_audio_in_slide(ctx: Context, osworld_get: Callable[..., list[Any]]) -> None:
    embedded = _put(ctx, _deck(audio=AUDIO))
    linked_file = f"/home/user/linked-{uuid.uuid4().hex[:6]}.mp3"
    ctx.replica.write_file(linked_file, AUDIO + b"-linked")
    linked = _put(ctx, _deck(linked=linked_file))
    configs = [{"ppt_file_path": embedded, "slide_index": 1, "dest": "a.mp3"},
               {"ppt_file_path": linked, "slide_index": 1, "dest": "b.mp3"},
               {"ppt_file_path": embedded, "slide_index": 0, "dest": "c.mp3"}]
    ours = [_fetch(ctx, "audio_in_slide", **c) for c in configs]
    assert [None if p is None else Path(p).read_bytes() for p in ours] == [AUDIO, AUDIO + b"-linked", None]
    assert osworld_get(ctx.replica, *[("impress", "get_audio_in_slide", c) for c in configs]) == \
        [AUDIO, AUDIO + b"-linked", None]
