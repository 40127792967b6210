"""apps-images templates: GIMP on a picture that setup draws (seeded shapes on a plain background).

Oracles use GIMP's menus by their access keys, each once the menu it belongs to is shown (a key sent
before its menu opened goes elsewhere), its dialogs by their controls, and Export As (Ctrl+Shift+E)
as a person would; GIMP's title shows the image's size, so a size change is waited for there, and
"(exported)" once the file is written.
"""

from __future__ import annotations

import io
import random
from typing import Any

from PIL import Image, ImageChops, ImageDraw

from osgym.replicas.accounts import AGENT_HOME as HOME
from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import ANIMALS, DONE, WORDS, open_app, write_expected
from osgym.suites.generators import op, vm_file

ASPECTS = [(4, 3), (3, 2), (16, 9), (5, 4), (2, 1), (3, 4), (2, 3)]
"""Width:height ratios of the pictures; the portrait ones make rotation change the title's size."""
COLOURS = [(200, 30, 30), (30, 60, 200), (20, 150, 60), (230, 160, 20), (120, 40, 160), (20, 160, 170)]


def picture(rng: random.Random, width: int, height: int) -> Image.Image:
    """A picture that is neither its own mirror nor its own rotation: a few seeded shapes, all in its left half."""
    bg = tuple(rng.randint(215, 250) for _ in range(3))
    img = Image.new("RGB", (width, height), bg)
    d = ImageDraw.Draw(img)
    for _ in range(rng.randint(3, 5)):
        x0, y0 = rng.randint(0, width // 3), rng.randint(0, height * 2 // 3)
        box = (x0, y0, x0 + rng.randint(width // 10, width // 5), y0 + rng.randint(height // 10, height // 4))
        (d.rectangle if rng.random() < 0.5 else d.ellipse)(box, fill=rng.choice(COLOURS))
    return img


def png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG", compress_level=1)  # the task JSON carries it base64: fast beats small here
    return buf.getvalue()


def _source(rng: random.Random, unit: tuple[int, int]) -> tuple[tuple[int, int], int, str, str]:
    aw, ah = rng.choice(ASPECTS)
    u = rng.randint(*unit)
    stem = f"{rng.choice(ANIMALS)}-{rng.choice(WORDS)}-{rng.randint(1, 99)}"
    return (aw, ah), u, stem, f"{HOME}/Pictures/{stem}.png"


FIRST_OF_IMAGE = "Create a duplicate of this image"
CROP_TO_CONTENT = "Crop the image to the extents of its content (remove empty borders from the image)"
FIRST_OF_TRANSFORM = "Flip image horizontally"
"""What GIMP's status bar says while the first item of its Image menu (and of Image > Transform) is
highlighted, as it is when the menu opens from the keyboard. GTK 2 does not tell the accessibility
tree that a menu is shown, so that text is how the oracle sees that the menu is up before its next key."""


def _image_menu() -> list[dict[str, Any]]:
    return [op("hotkey", keys=["alt", "i"]),
            op("wait_enabled", window="GIMP", control=FIRST_OF_IMAGE, role="status-bar", timeout=30)]


def _export(out: str, kind: str) -> list[dict[str, Any]]:
    """Export As to ``out``: the path in the name field, then the format's options dialog (its Export)."""
    return [op("hotkey", keys=["ctrl", "shift", "e"]),
            op("wait_focused", window="Export Image", role="text", timeout=30), op("hotkey", keys=["ctrl", "a"]),
            op("type", text=out), op("wait_enabled", window="Export Image", control="Export"),
            op("press", key="enter"),
            op("wait_enabled", window=f"Export Image as {kind}", control="Export", timeout=30),
            op("press", key="enter"), op("wait_window", title="(exported)", timeout=60)]


def _evaluator(out: str, expected: Image.Image, name: str) -> dict[str, Any]:
    step, path = write_expected(name, png(expected))
    w, h = expected.size
    return {"func": ["check_image_size", "check_structure_sim"], "conj": "and",
            "result": [vm_file(out), vm_file(out, "result-copy" + out[out.rfind("."):])],
            "expected": [{"type": "rule", "rules": {"width": w, "height": h}}, vm_file(path, name)],
            "postconfig": [step]}


def _target(rng: random.Random, stem: str) -> tuple[str, str, str]:
    ext, kind = rng.choice([("png", "PNG"), ("jpg", "JPEG")])
    name = f"{stem}-{rng.choice(['small', 'web', 'thumb', 'final', 'new', 'out'])}.{ext}"
    return f"{HOME}/Pictures/{name}", name, kind


def img_scale(rng: random.Random) -> dict[str, Any]:
    (aw, ah), u, stem, src = _source(rng, (32, 80))
    img = picture(rng, aw * u, ah * u)
    v = rng.randint(max(20, u // 2), u * 3 // 4)  # smaller, keeping the ratio exactly, and not tiny
    width, height = aw * v, ah * v
    out, name, kind = _target(rng, stem)
    return {
        "instruction": f"Scale the picture open in GIMP to {width} pixels wide, keeping its proportions "
                       f"({width}x{height}), and export it as ~/Pictures/{name}",
        "related_apps": ["gimp"],
        "config": [write_files({src: png(img)}), *open_app(["gimp", src], stem)],
        "evaluator": _evaluator(out, img.resize((width, height), Image.Resampling.LANCZOS), f"expected-{name}.png"),
        # Image > Scale Image...: the width field has the focus; Tab leaves it, and the linked chain sets the
        # height; the dialog's Scale button is Alt+S (Enter would press the chain button, which Tab focuses).
        "oracle": [op("wait_focused", window=stem, timeout=60), *_image_menu(), op("press", key="s"),
                   op("wait_focused", window="Scale Image", role="spin-button", timeout=30),
                   op("hotkey", keys=["ctrl", "a"]), op("type", text=f"{width}\t"),
                   op("wait_enabled", window="Scale Image", control="Scale"), op("hotkey", keys=["alt", "s"]),
                   op("wait_window", title=f") {width}x{height}", focused=True, timeout=60), *_export(out, kind), DONE],
    }


ROTATIONS = {"clockwise": ("Rotate 90° clockwise", "c", Image.Transpose.ROTATE_270),
             "counter-clockwise": ("Rotate 90° counter-clockwise", "w", Image.Transpose.ROTATE_90)}


def _transform(stem: str, key: str, *, done_title: str, out: str, kind: str) -> list[dict[str, Any]]:
    """Image > Transform > the item of access key ``key``, then the export, once the title shows
    ``done_title`` (the swapped size of a rotation, or the leading * of a changed image)."""
    return [op("wait_focused", window=stem, timeout=60), *_image_menu(), op("press", key="t"),
            op("wait_enabled", window=stem, control=FIRST_OF_TRANSFORM, role="status-bar", timeout=30),
            op("press", key=key), op("wait_window", title=done_title, focused=True, timeout=60),
            *_export(out, kind), DONE]


def img_rotate(rng: random.Random) -> dict[str, Any]:
    (aw, ah), u, stem, src = _source(rng, (40, 90))
    while aw == ah:
        aw, ah = rng.choice(ASPECTS)
    img = picture(rng, aw * u, ah * u)
    way = rng.choice(sorted(ROTATIONS))
    item, key, transpose = ROTATIONS[way]
    out, name, kind = _target(rng, stem)
    w, h = img.size
    return {
        "instruction": f"Rotate the picture open in GIMP by 90 degrees {way} and export it as ~/Pictures/{name}",
        "related_apps": ["gimp"],
        "config": [write_files({src: png(img)}), *open_app(["gimp", src], stem)],
        "evaluator": _evaluator(out, img.transpose(transpose), f"expected-{name}.png"),
        # Image > Transform > Rotate 90°...; the title then shows the swapped size.
        "oracle": _transform(stem, key, done_title=f") {h}x{w}", out=out, kind=kind),
    }


def framed(rng: random.Random, width: int, height: int) -> tuple[Image.Image, tuple[int, int, int, int]]:
    """A plain picture with seeded shapes inside a seeded box that keeps a margin on every side, and the
    bounding box of its shapes (what cropping to the content keeps: the background is one exact colour)."""
    bg = tuple(rng.randint(215, 250) for _ in range(3))
    img = Image.new("RGB", (width, height), bg)
    d = ImageDraw.Draw(img)
    left, top = rng.randint(width // 12, width // 3), rng.randint(height // 12, height // 3)
    right, bottom = width - rng.randint(width // 12, width // 3), height - rng.randint(height // 12, height // 3)
    bw, bh = right - left, bottom - top
    for _ in range(rng.randint(3, 5)):
        x0, y0 = rng.randint(left, left + bw * 2 // 3), rng.randint(top, top + bh * 2 // 3)
        box = (x0, y0, min(right, x0 + rng.randint(bw // 6, bw // 3)), min(bottom, y0 + rng.randint(bh // 6, bh // 3)))
        (d.rectangle if rng.random() < 0.5 else d.ellipse)(box, fill=rng.choice(COLOURS))
    bbox = ImageChops.difference(img, Image.new("RGB", img.size, bg)).getbbox()
    assert bbox is not None  # shapes are never the background's colour (theirs are darker)
    return img, bbox


def img_crop(rng: random.Random) -> dict[str, Any]:
    (aw, ah), u, stem, src = _source(rng, (60, 120))
    img, bbox = framed(rng, aw * u, ah * u)
    cropped = img.crop(bbox)
    w, h = cropped.size
    out, name, kind = _target(rng, stem)
    return {
        "instruction": f"Crop the picture open in GIMP to its shapes, removing the plain border around them "
                       f"(it becomes {w}x{h}), and export it as ~/Pictures/{name}",
        "related_apps": ["gimp"],
        "config": [write_files({src: png(img)}), *open_app(["gimp", src], stem)],
        "evaluator": _evaluator(out, cropped, f"expected-{name}.png"),
        # Image > Crop to Content: its access key (o) is also Image Properties', so the key only highlights
        # the first of them (the status bar shows which) and Enter runs it; the title then shows the new size.
        "oracle": [op("wait_focused", window=stem, timeout=60), *_image_menu(), op("press", key="o"),
                   op("wait_enabled", window=stem, control=CROP_TO_CONTENT, role="status-bar", timeout=30),
                   op("press", key="enter"),
                   op("wait_window", title=f") {w}x{h}", focused=True, timeout=60), *_export(out, kind), DONE],
    }


FLIPS = {"horizontally": ("h", Image.Transpose.FLIP_LEFT_RIGHT, "left to right"),
         "vertically": ("v", Image.Transpose.FLIP_TOP_BOTTOM, "top to bottom")}


def img_flip(rng: random.Random) -> dict[str, Any]:
    (aw, ah), u, stem, src = _source(rng, (40, 90))
    img = picture(rng, aw * u, ah * u)
    way = rng.choice(sorted(FLIPS))
    key, transpose, words = FLIPS[way]
    # another format than the source's: a JPEG, or a PNG under a new name (the source is a PNG)
    ext, kind = rng.choice([("jpg", "JPEG"), ("jpeg", "JPEG")]) if rng.random() < 0.8 else ("png", "PNG")
    name = f"{stem}-{rng.choice(['flipped', 'mirror', 'mirrored', 'turned', 'copy'])}.{ext}"
    out = f"{HOME}/Pictures/{name}"
    said = rng.choice([f"Flip the picture open in GIMP {way}", f"Mirror the picture open in GIMP {words}"])
    return {
        "instruction": f"{said}, then export it as {kind} to ~/Pictures/{name}",
        "related_apps": ["gimp"],
        "config": [write_files({src: png(img)}), *open_app(["gimp", src], stem)],
        "evaluator": _evaluator(out, img.transpose(transpose), f"expected-{name}.png"),
        # Image > Transform > Flip Horizontally/Vertically; the size stays, so the title's mark of a changed
        # image (a leading *) is what shows that the flip is done.
        "oracle": _transform(stem, key, done_title=f"*[{stem}]", out=out, kind=kind),
    }
