"""Image metrics (GIMP tasks, compare_images) on generated pictures: the intended edit scores 1, each kind of
wrong edit 0; OSWorld's functions (scikit-image's SSIM, OpenCV's Laplacian) agree except where the docs say."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageEnhance, ImageFilter

from osgym.errors import TaskLoadError
from osgym.tasks.metrics import images
from osgym.tasks.spec import load_task
from tests.metrics.cases import Case, File, check, ids, parity
from tests.metrics.conftest import OSWorld

SSIM_TOLERANCE = 1e-6  # osgym's numpy SSIM against scikit-image's, on 8-bit pictures


def picture(seed: int = 0, size: tuple[int, int] = (64, 48)) -> Image.Image:
    """A smooth colour gradient with a disc and some noise: structure SSIM can see."""
    w, h = size
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    r = 40 + 150 * x / w + rng.normal(0, 6, (h, w))
    g = 60 + 120 * y / h + rng.normal(0, 6, (h, w))
    b = 90 + 60 * np.sin(x / 5 + seed) + rng.normal(0, 6, (h, w))
    disc = (x - w * (0.3 + 0.1 * seed)) ** 2 + (y - h / 2) ** 2 < (h / 4) ** 2
    r[disc], g[disc], b[disc] = 230, 200, 40
    return Image.fromarray(np.clip(np.dstack([r, g, b]), 0, 255).astype(np.uint8), "RGB")


def png(img: Image.Image, name: str = "a.png", fmt: str = "PNG") -> File:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return File(buf.getvalue(), name)


BASE = picture()
OTHER = picture(seed=3)
BROKEN = File(b"\x89PNG\r\n\x1a\n not really", "broken.png")


@pytest.mark.parametrize("shape", [(9, 9), (40, 31), (40, 31, 3)])
def test_ssim_matches_scikit_image(shape: tuple[int, ...], osworld: OSWorld, tmp_path: Path) -> None:
    """osgym's numpy SSIM against scikit-image's (in the reference venv, through compare_images' grey path)."""
    rng = np.random.default_rng(7)
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-40, 40, shape), 0, 255).astype(np.uint8)
    assert images.ssim(a, a) == pytest.approx(1.0)
    grey = [Image.fromarray(x if x.ndim == 2 else x[..., 0]) for x in (a, b)]
    cases = [Case(f"{shape}", png(grey[0]), png(grey[1]), 0.0)]
    parity(osworld, "vlc", "compare_images", cases, tmp_path, tolerance=SSIM_TOLERANCE)


COMPARE = [
    Case("same", png(BASE), png(BASE), 1.0),
    Case("jpeg-of-it", png(BASE, "a.jpg", "JPEG"), png(BASE), 0.0),
    Case("other-picture", png(OTHER), png(BASE), 0.0),
    Case("resized", png(BASE.resize((32, 24))), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
    Case("broken", BROKEN, png(BASE), 0.0, osworld="UnidentifiedImageError"),
    Case("base-score-gain", png(ImageEnhance.Brightness(BASE).enhance(0.98)), png(BASE), 0.0,
         options={"reference_base_result": 0.5}),
]


@pytest.mark.parametrize("case", COMPARE[:1] + COMPARE[4:6], ids=ids(COMPARE[:1] + COMPARE[4:6]))
def test_compare_images(case: Case, tmp_path: Path) -> None:
    check("compare_images", case, tmp_path)


def test_compare_images_orders_by_similarity(tmp_path: Path) -> None:
    from tests.metrics.cases import ours

    same, jpeg, other = (ours("compare_images", c, tmp_path) for c in COMPARE[:3])
    assert same == 1.0 > jpeg > 0.8 > 0.5 > other >= 0.0


def test_compare_images_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "vlc", "compare_images", COMPARE, tmp_path, tolerance=SSIM_TOLERANCE)


LIST = [
    Case("same", [png(BASE), png(OTHER)], [png(BASE), png(OTHER)], 1.0),
    Case("single", png(BASE), png(BASE), 1.0),
    Case("one-pixel-differs", [png(BASE), png(OTHER.point(lambda v: v))], [png(BASE), png(picture(seed=4))], 0.0),
    Case("missing-one", [png(BASE), None], [png(BASE), png(OTHER)], 0.0),
    # OSWorld zips the lists: an image the agent never produced goes unchecked
    Case("shorter-list", [png(BASE)], [png(BASE), png(OTHER)], 0.0, osworld=1.0),
]


@pytest.mark.parametrize("case", LIST, ids=ids(LIST))
def test_compare_image_list(case: Case, tmp_path: Path) -> None:
    check("compare_image_list", case, tmp_path)


def test_compare_image_list_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "compare_image_list", LIST, tmp_path)


STRUCTURE = [
    Case("same", png(BASE), png(BASE), 1.0),
    Case("slightly-edited", png(ImageEnhance.Brightness(BASE).enhance(1.03)), png(BASE), 1.0),
    Case("other-picture", png(OTHER), png(BASE), 0.0),
    Case("other-size", png(BASE.resize((60, 48))), png(BASE), 0.0),
    Case("tiny", png(BASE.resize((5, 5))), png(BASE.resize((5, 5))), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", STRUCTURE, ids=ids(STRUCTURE))
def test_check_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_structure_sim", case, tmp_path)


def test_check_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_structure_sim", STRUCTURE, tmp_path)


EXISTS = [c for c in STRUCTURE if c.id != "tiny"]


@pytest.mark.parametrize("case", EXISTS, ids=ids(EXISTS))
def test_check_file_exists_and_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_file_exists_and_structure_sim", case, tmp_path)


def test_check_file_exists_and_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_file_exists_and_structure_sim", EXISTS, tmp_path)


def _with_margin(img: Image.Image, margin: int) -> Image.Image:
    out = Image.new("RGBA", (img.width + 2 * margin, img.height + 2 * margin), (0, 0, 0, 0))
    out.paste(img, (margin, margin))
    return out


RESIZED = [
    Case("resized", png(BASE.resize((128, 96))), png(BASE), 1.0),
    Case("transparent-margin", png(_with_margin(BASE.resize((128, 96)), 20)), png(BASE), 1.0),
    Case("other-picture", png(OTHER.resize((128, 96))), png(BASE), 0.0),
    Case("all-transparent", png(Image.new("RGBA", (20, 20))), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", RESIZED, ids=ids(RESIZED))
def test_check_structure_sim_resized(case: Case, tmp_path: Path) -> None:
    check("check_structure_sim_resized", case, tmp_path)


def test_check_structure_sim_resized_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_structure_sim_resized", RESIZED, tmp_path)


BRIGHTNESS = [
    Case("darker", png(ImageEnhance.Brightness(BASE).enhance(0.7)), png(BASE), 1.0),
    Case("brighter", png(ImageEnhance.Brightness(BASE).enhance(1.2)), png(BASE), 0.0),
    Case("darker-other-picture", png(ImageEnhance.Brightness(OTHER.transpose(Image.Transpose.ROTATE_180))
                                     .enhance(0.7)), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
    # OSWorld divides by the mean brightness
    Case("all-black", png(Image.new("RGB", (64, 48))), png(BASE), 0.0, osworld="ZeroDivisionError"),
]


@pytest.mark.parametrize("case", BRIGHTNESS, ids=ids(BRIGHTNESS))
def test_check_brightness_decrease_and_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_brightness_decrease_and_structure_sim", case, tmp_path)


def test_check_brightness_decrease_and_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_brightness_decrease_and_structure_sim", BRIGHTNESS, tmp_path)


SATURATION = [
    Case("more-saturated", png(ImageEnhance.Color(BASE).enhance(1.4)), png(BASE), 1.0),
    Case("less-saturated", png(ImageEnhance.Color(BASE).enhance(0.6)), png(BASE), 0.0),
    Case("saturated-other", png(ImageEnhance.Color(OTHER).enhance(1.4)), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", SATURATION, ids=ids(SATURATION))
def test_check_saturation_increase_and_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_saturation_increase_and_structure_sim", case, tmp_path)


def test_check_saturation_increase_and_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_saturation_increase_and_structure_sim", SATURATION, tmp_path)


CONTRAST = [
    Case("more-contrast", png(ImageEnhance.Contrast(BASE).enhance(1.5)), png(BASE), 1.0),
    Case("less-contrast", png(ImageEnhance.Contrast(BASE).enhance(0.6)), png(BASE), 0.0),
    Case("contrast-other", png(ImageEnhance.Contrast(OTHER).enhance(1.5)), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", CONTRAST, ids=ids(CONTRAST))
def test_check_contrast_increase_and_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_contrast_increase_and_structure_sim", case, tmp_path)


def test_check_contrast_increase_and_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_contrast_increase_and_structure_sim", CONTRAST, tmp_path)


MIRROR = [
    Case("mirrored", png(BASE.transpose(Image.Transpose.FLIP_LEFT_RIGHT)), png(BASE), 1.0),
    Case("flipped-vertically", png(BASE.transpose(Image.Transpose.FLIP_TOP_BOTTOM)), png(BASE), 0.0),
    Case("unchanged", png(BASE), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", MIRROR, ids=ids(MIRROR))
def test_check_image_mirror(case: Case, tmp_path: Path) -> None:
    check("check_image_mirror", case, tmp_path)


def test_check_image_mirror_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_image_mirror", MIRROR, tmp_path)


PALETTE = [
    Case("indexed", png(BASE.convert("P", palette=Image.Palette.ADAPTIVE, colors=256)), png(BASE), 1.0),
    Case("still-rgb", png(BASE), png(BASE), 0.0),
    Case("indexed-other", png(OTHER.convert("P", palette=Image.Palette.ADAPTIVE)), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0),
]


@pytest.mark.parametrize("case", PALETTE, ids=ids(PALETTE))
def test_check_palette_and_structure_sim(case: Case, tmp_path: Path) -> None:
    check("check_palette_and_structure_sim", case, tmp_path)


def test_check_palette_and_structure_sim_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_palette_and_structure_sim", PALETTE, tmp_path)


def _object_on(background: tuple[int, int, int], size: tuple[int, int] = (40, 40),
               colour: tuple[int, int, int] = (0, 0, 0)) -> Image.Image:
    img = Image.new("RGB", size, background)
    ImageDraw.Draw(img).ellipse((10, 10, 28, 30), fill=colour)
    return img


REFERENCE = png(_object_on((255, 255, 255)))
GREEN = [
    Case("green-background", png(_object_on((20, 200, 30), colour=(90, 40, 40))), REFERENCE, 1.0),
    Case("white-background", png(_object_on((255, 255, 255), colour=(90, 40, 40))), REFERENCE, 0.0),
    Case("teal-background", png(_object_on((20, 200, 200), colour=(90, 40, 40))), REFERENCE, 0.0),
    Case("missing", None, REFERENCE, 0.0),
    # OSWorld indexes the pixel arrays (x, y) instead of (row, column): any non-square picture raises
    Case("wide-picture", png(_object_on((20, 200, 30), (60, 40))), png(_object_on((255, 255, 255), (60, 40))), 1.0,
         osworld="IndexError"),
]


@pytest.mark.parametrize("case", GREEN, ids=ids(GREEN))
def test_check_green_background(case: Case, tmp_path: Path) -> None:
    check("check_green_background", case, tmp_path)


def test_check_green_background_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_green_background", GREEN, tmp_path)


def _text_at(x: int) -> Image.Image:
    img = Image.new("RGB", (100, 40), "white")
    ImageDraw.Draw(img).rectangle((x, 10, x + 30, 20), fill="black")
    return img


TEXTBOX = [
    Case("left", png(_text_at(2)), None, 1.0),
    Case("middle", png(_text_at(40)), None, 0.0),
    Case("no-text", png(Image.new("RGB", (100, 40), "white")), None, 0.0),
    Case("missing", None, None, 0.0),
]


@pytest.mark.parametrize("case", TEXTBOX, ids=ids(TEXTBOX))
def test_check_textbox_on_leftside(case: Case, tmp_path: Path) -> None:
    check("check_textbox_on_leftside", case, tmp_path)


def test_check_textbox_on_leftside_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_textbox_on_leftside", TEXTBOX[:3], tmp_path)


def _triangle(cx: int, cy: int) -> Image.Image:
    img = Image.new("RGB", (80, 80), "white")
    ImageDraw.Draw(img).polygon([(cx - 8, cy + 6), (cx + 8, cy + 6), (cx, cy - 8)], fill=(250, 220, 0))
    return img


TRIANGLE = [
    Case("in-the-middle", png(_triangle(40, 41)), None, 1.0),
    # OSWorld takes the second-rarest colour for the triangle; with two colours that is the background,
    # whose centroid barely moves when the triangle is in a corner
    Case("in-a-corner", png(_triangle(12, 12)), None, 0.0, osworld=1.0),
    Case("blank", png(Image.new("RGB", (80, 80), "white")), None, 0.0, osworld="IndexError"),
    Case("missing", None, None, 0.0),
]


@pytest.mark.parametrize("case", TRIANGLE, ids=ids(TRIANGLE))
def test_check_triangle_position(case: Case, tmp_path: Path) -> None:
    check("check_triangle_position", case, tmp_path)


def test_check_triangle_position_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_triangle_position", TRIANGLE, tmp_path)


SHARPER = [
    Case("sharpened", png(BASE.filter(ImageFilter.SHARPEN)), png(BASE), 1.0),
    Case("blurred", png(BASE.filter(ImageFilter.GaussianBlur(2))), png(BASE), 0.0),
    Case("unchanged", png(BASE), png(BASE), 0.0),
    Case("missing", None, png(BASE), 0.0, osworld="error"),
]


@pytest.mark.parametrize("case", SHARPER, ids=ids(SHARPER))
def test_check_sharper(case: Case, tmp_path: Path) -> None:
    check("check_sharper", case, tmp_path)


def test_check_sharper_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_sharper", SHARPER, tmp_path)


def _palette_with_margin() -> Image.Image:
    img = _with_margin(BASE.resize((128, 128)), 10).convert("P", palette=Image.Palette.ADAPTIVE, colors=255)
    img.info["transparency"] = img.getpixel((0, 0))
    return img


SIZE = [
    Case("both", png(BASE.resize((128, 128))), {"height": 128, "width": 128}, 1.0),
    Case("height-only", png(BASE.resize((300, 512))), {"height": 512}, 1.0),
    Case("wrong-width", png(BASE.resize((127, 128))), {"height": 128, "width": 128}, 0.0),
    Case("opaque-part", png(_with_margin(BASE.resize((128, 128)), 10)), {"height": 128, "width": 128,
                                                                       "ignore_transparent": True}, 1.0),
    Case("whole-canvas", png(_with_margin(BASE.resize((128, 128)), 10)), {"height": 128, "width": 128}, 0.0),
    # OSWorld's `ignore and alpha or "transparency" in info` measures a palette image's opaque part unasked
    Case("palette-transparency-unasked", png(_palette_with_margin()), {"height": 148, "width": 148}, 1.0,
         osworld=0.0),
    Case("missing", None, {"height": 1}, 0.0),
]


@pytest.mark.parametrize("case", SIZE, ids=ids(SIZE))
def test_check_image_size(case: Case, tmp_path: Path) -> None:
    check("check_image_size", case, tmp_path)


def test_check_image_size_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_image_size", SIZE, tmp_path)


FILE_SIZE = [
    Case("small", File(b"x" * 1000, "a.jpeg"), {"max_size": 600000}, 1.0),
    Case("too-big", File(b"x" * 2000, "a.jpeg"), {"max_size": 1000}, 0.0),
    Case("missing", None, {"max_size": 1000}, 0.0),
]


@pytest.mark.parametrize("case", FILE_SIZE, ids=ids(FILE_SIZE))
def test_check_image_file_size(case: Case, tmp_path: Path) -> None:
    check("check_image_file_size", case, tmp_path)


def test_check_image_file_size_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "gimp", "check_image_file_size", FILE_SIZE, tmp_path)


GIMPRC = File('# GIMP gimprc\n\n   \n(theme "Light")\n(undo-levels 100)\n(layer-new-name "Square")\n'
              '(history-item "filters-vignette" 1)\n(hide-docks yes)\n')
CONFIG = [
    Case("theme", GIMPRC, {"type:": "key-value", "key": "theme", "value": '"Light"'}, 1.0),
    Case("number", GIMPRC, {"key": "undo-levels", "value": "100"}, 1.0),
    Case("pair", GIMPRC, {"key": ["history-item", '"filters-vignette"'], "value": "1"}, 1.0),
    Case("other-value", GIMPRC, {"key": "hide-docks", "value": "no"}, 0.0),
    Case("absent", GIMPRC, {"key": "single-window-mode", "value": "yes"}, 0.0),
    Case("missing", None, {"key": "theme", "value": '"Light"'}, 0.0),
]


@pytest.mark.parametrize("case", CONFIG, ids=ids(CONFIG))
def test_check_config_status(case: Case, tmp_path: Path) -> None:
    check("check_config_status", case, tmp_path)


def test_check_config_status_parity(osworld: OSWorld, tmp_path: Path) -> None:
    # OSWorld indexes the words of a blank line that holds spaces, and raises: parity on a file without one
    cases = [Case(c.id, File(GIMPRC.content.replace("   \n", "")) if c.result else None, c.expected, c.want)
             for c in CONFIG]
    parity(osworld, "gimp", "check_config_status", cases, tmp_path)
    parity(osworld, "gimp", "check_config_status", [Case("spaces-line", GIMPRC, CONFIG[0].expected, 1.0,
                                                         osworld="IndexError")], tmp_path)


def test_unreadable_and_oversized_images_score_0(tmp_path: Path) -> None:
    from osgym.tasks import metrics

    huge = tmp_path / "huge.png"
    Image.new("1", (9000, 9000)).save(huge)  # 81 megapixels in a few kilobytes
    (tmp_path / "broken.png").write_bytes(BROKEN.content)
    ok = tmp_path / "ok.png"
    BASE.save(ok)
    for bad in (str(huge), str(tmp_path / "broken.png")):
        for name in ("check_structure_sim", "compare_images", "check_image_mirror", "check_sharper"):
            assert metrics.score(name, bad, str(ok), {}) == 0.0, name


@pytest.mark.parametrize("func, rules, named", [
    ("check_config_status", {"key": ["a", "b", "c"], "value": "1"}, "rules.key"),
    ("check_config_status", {"key": "theme"}, "rules.value: Field required"),
    ("check_image_size", {"height": "512"}, "rules.height"),
    ("check_image_file_size", {"max_size": 0}, "rules.max_size"),
])
def test_bad_rules_fail_at_load(func: str, rules: dict[str, object], named: str) -> None:
    task = {"id": "t-images", "instruction": "x",
            "evaluator": {"func": func, "result": {"type": "vm_file", "path": "/tmp/x"},
                          "expected": {"type": "rule", "rules": rules}}}
    with pytest.raises(TaskLoadError, match=f"'{func}': {named}"):
        load_task(task)


def test_compare_images_reads_an_animated_gif_without_leaking_its_file(tmp_path: Path) -> None:
    import gc
    import sys
    import warnings

    from osgym.tasks import metrics

    frames = [BASE, ImageEnhance.Brightness(BASE).enhance(0.5)]
    gif = tmp_path / "clip.gif"
    frames[0].save(gif, save_all=True, append_images=frames[1:], duration=100, loop=0)
    leaks: list[str] = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: leaks.append(repr(u.exc_value))  # a file closed only by the collector
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            assert metrics.score("compare_images", str(gif), str(gif), {}) == 1.0
            gc.collect()
    finally:
        sys.unraisablehook = hook
    assert not leaks, leaks
