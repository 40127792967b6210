"""Image metrics after OSWorld's ``gimp.py`` (and ``compare_images`` from its ``vlc.py``), with Pillow and numpy.

OSWorld measures structure with scikit-image's SSIM and sharpness with OpenCV's Laplacian; both are
written here in numpy (:func:`ssim`, :func:`laplacian_variance`) and checked against those libraries
in the parity tests. The images are the agent's: one that cannot be read, or that declares more than
``MAX_PIXELS`` pixels (a few bytes of PNG can declare gigapixels), scores 0.

>>> import numpy as np
>>> a = np.arange(100, dtype=np.uint8).reshape(10, 10)
>>> round(ssim(a, a), 6)
1.0
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageChops, ImageStat
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.general import read_text

__all__ = ["MAX_PIXELS", "laplacian_variance", "open_image", "ssim"]

MAX_PIXELS = 64 * 2**20  # 64 megapixels: a large photograph; more is refused before decoding
SSIM_WINDOW = 7  # scikit-image's default window, which OSWorld uses
STRUCTURE_SAME = 0.9  # OSWorld's SSIM threshold for "the same picture"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def open_image(path: str | None) -> Image.Image | None:
    """The decoded image at ``path``, or None if there is none, it is no image, or it is too large."""
    if not path:
        return None
    try:
        # from memory: a multi-frame image (GIF) would otherwise keep its file open after load()
        img = Image.open(io.BytesIO(Path(path).read_bytes()))
        if img.width * img.height > MAX_PIXELS:
            return None
        img.load()
        return img
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None  # PIL reports truncated and malformed files with these


def _window_means(x: NDArray[np.float64], win: int) -> NDArray[np.float64]:
    """The mean of every ``win`` x ``win`` window lying wholly inside ``x`` (running sums along each axis)."""
    c = np.cumsum(np.pad(x, ((1, 0), (0, 0))), axis=0)
    rows = c[win:] - c[:-win]
    c = np.cumsum(np.pad(rows, ((0, 0), (1, 0))), axis=1)
    out: NDArray[np.float64] = (c[:, win:] - c[:, :-win]) / (win * win)
    return out


def ssim(a: NDArray[Any], b: NDArray[Any], win: int = SSIM_WINDOW, data_range: float = 255.0) -> float:
    """Mean structural similarity of two equal-shaped images (2-D, or 3-D with channels last, averaged).

    As scikit-image's ``structural_similarity`` with its defaults: a uniform ``win`` x ``win`` window,
    sample covariances, K1 = 0.01, K2 = 0.03, and the mean over the windows lying wholly inside the image.

    Raises:
        ValueError: if the shapes differ or the image is smaller than the window.
    """
    if a.shape != b.shape:
        raise ValueError(f"ssim: images of different shapes {a.shape} and {b.shape}")
    if min(a.shape[:2]) < win:
        raise ValueError(f"ssim: image {a.shape[:2]} smaller than the {win}-pixel window")
    if a.ndim == 3:
        return float(np.mean([ssim(a[..., c], b[..., c], win, data_range) for c in range(a.shape[2])]))
    x, y = a.astype(np.float64), b.astype(np.float64)
    ux, uy = _window_means(x, win), _window_means(y, win)
    norm = win * win / (win * win - 1)  # sample covariance
    vx = norm * (_window_means(x * x, win) - ux * ux)
    vy = norm * (_window_means(y * y, win) - uy * uy)
    vxy = norm * (_window_means(x * y, win) - ux * uy)
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2))
    return float(s.mean())


def _same_structure(a: Image.Image, b: Image.Image, threshold: float = STRUCTURE_SAME) -> bool:
    """OSWorld's structure test: both as RGB, the same size, at least a window wide, SSIM >= threshold."""
    if a.size != b.size or min(*a.size, *b.size) < SSIM_WINDOW:
        return False
    return ssim(np.asarray(a.convert("RGB")), np.asarray(b.convert("RGB"))) >= threshold


def _pair(result: str | None, expected: str | None) -> tuple[Image.Image, Image.Image] | None:
    a, b = open_image(result), open_image(expected)
    return None if a is None or b is None else (a, b)


class CompareImagesOptions(_Model):
    """``reference_base_result``: the SSIM an unchanged image already reaches; the score is then the gain over
    it, scaled to [0, 1] (0 below it plus 0.01)."""

    reference_base_result: float | None = Field(None, ge=0, lt=1)


@metric("compare_images", CompareImagesOptions, files=True)
def compare_images(result: str | None, expected: str | None, options: CompareImagesOptions) -> float:
    """The SSIM of the two images in grey, both resized (Lanczos) to the smaller size, clamped to [0, 1].

    "Smaller" is the size that sorts first as a (width, height) pair, as OSWorld chooses it.
    """
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    a, b = (im.convert("L") for im in pair)
    size = min(a.size, b.size)
    if min(size) < SSIM_WINDOW:
        return 0.0
    a, b = a.resize(size, Image.Resampling.LANCZOS), b.resize(size, Image.Resampling.LANCZOS)
    score = ssim(np.asarray(a), np.asarray(b))
    base = options.reference_base_result
    if base is not None:
        score = (score - base) / (1 - base) if score >= base + 0.01 else 0.0
    return min(1.0, max(0.0, score))  # SSIM of anti-correlated pictures is negative


@metric("compare_image_list", files=True)
def compare_image_list(result: str | list[str | None] | None, expected: str | list[str | None] | None) -> float:
    """1.0 if each result image has exactly the pixels of its expected image (resized with Lanczos to the
    expected size first if the sizes differ); the lists must be as long as each other."""
    got = result if isinstance(result, list) else [result]
    want = expected if isinstance(expected, list) else [expected]
    if len(got) != len(want):
        return 0.0
    for g, w in zip(got, want, strict=True):
        pair = _pair(g, w)
        if pair is None:
            return 0.0
        a, b = pair
        if a.size != b.size:
            a = a.resize(b.size, Image.Resampling.LANCZOS)
        if a.mode != b.mode:
            a = a.convert(b.mode)
        if ImageChops.difference(a, b).getbbox():
            return 0.0
    return 1.0


@metric("check_structure_sim", files=True)
def check_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the two images have the same size and SSIM (as RGB) of at least 0.9."""
    pair = _pair(result, expected)
    return 1.0 if pair is not None and _same_structure(*pair) else 0.0


@metric("check_structure_sim_resized", files=True)
def check_structure_sim_resized(result: str | None, expected: str | None) -> float:
    """1.0 if the result image, cropped to its opaque part when it has transparency and resized to the expected
    image's size, has SSIM of at least 0.9 with it."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    a, b = pair
    if a.mode in ("RGBA", "LA") or "transparency" in a.info:
        a = a.convert("RGBA")
        box = a.getchannel("A").getbbox()
        if box is None:
            return 0.0  # wholly transparent
        a = a.crop(box).convert("RGB")
    return 1.0 if _same_structure(a.resize(b.size), b) else 0.0


@metric("check_file_exists_and_structure_sim", files=True)
def check_file_exists_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the exported image exists and has the expected image's size and structure (SSIM >= 0.9)."""
    return check_structure_sim(result, expected)


def _brightness(img: Image.Image) -> float:
    return float(ImageStat.Stat(img.convert("L")).mean[0])


def _normalized(img: Image.Image, target: float) -> Image.Image:
    factor = target / _brightness(img)
    return img.point(lambda v: min(255, max(0, int(v * factor))))


@metric("check_brightness_decrease_and_structure_sim", files=True)
def check_brightness_decrease_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the result is darker than the original and, both scaled to the same mean brightness, alike
    (mean squared difference of RGB in [0, 1] under 0.03, the result resized to the original's size)."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    a, b = pair
    if not 0 < _brightness(a) < _brightness(b):
        return 0.0  # not darker (an all-black result cannot be scaled back to compare its structure)
    a, b = _normalized(a, 128), _normalized(b, 128)
    if a.size != b.size:
        a = a.resize(b.size, Image.Resampling.LANCZOS)
    x = np.asarray(a.convert("RGB"), dtype=np.float32) / 255
    y = np.asarray(b.convert("RGB"), dtype=np.float32) / 255
    return 1.0 if float(np.mean((x - y) ** 2)) < 0.03 else 0.0


@metric("check_saturation_increase_and_structure_sim", files=True)
def check_saturation_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the result is more saturated than the original (mean HSV saturation) and its hue and value
    channels each keep the original's structure (SSIM >= 0.9)."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    a, b = (im.convert("HSV") for im in pair)
    more = float(np.mean(np.asarray(a.getchannel(1)))) > float(np.mean(np.asarray(b.getchannel(1))))
    same = _same_structure(a.getchannel(0), b.getchannel(0)) and _same_structure(a.getchannel(2), b.getchannel(2))
    return 1.0 if more and same else 0.0


@metric("check_contrast_increase_and_structure_sim", files=True)
def check_contrast_increase_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the result has more contrast (standard deviation of its pixel values) than the original and
    keeps its structure (SSIM >= 0.65, a lower bar since contrast changes SSIM's luminance terms)."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    a, b = pair
    more = float(np.std(np.asarray(a, dtype=np.float32))) > float(np.std(np.asarray(b, dtype=np.float32)))
    return 1.0 if more and _same_structure(a, b, 0.65) else 0.0


@metric("check_image_mirror", files=True)
def check_image_mirror(result: str | None, expected: str | None) -> float:
    """1.0 if the result is the original flipped left to right (SSIM >= 0.99)."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    return 1.0 if _same_structure(pair[0].transpose(Image.Transpose.FLIP_LEFT_RIGHT), pair[1], 0.99) else 0.0


@metric("check_palette_and_structure_sim", files=True)
def check_palette_and_structure_sim(result: str | None, expected: str | None) -> float:
    """1.0 if the result is a palette (indexed) image and keeps the original's structure (SSIM >= 0.9)."""
    pair = _pair(result, expected)
    if pair is None:
        return 0.0
    return 1.0 if pair[0].mode == "P" and _same_structure(pair[0].convert("RGB"), pair[1]) else 0.0


@metric("check_green_background", files=True)
def check_green_background(result: str | None, expected: str | None) -> float:
    """1.0 if, wherever the reference image is not black (its background), the result's pixel is green
    (more green than red and than blue); the images must have the same size."""
    pair = _pair(result, expected)
    if pair is None or pair[0].size != pair[1].size:
        return 0.0
    src = np.asarray(pair[0].convert("RGB")).astype(np.int16)
    background = np.asarray(pair[1].convert("RGB")).any(axis=2)
    r, g, b = src[..., 0], src[..., 1], src[..., 2]
    return 1.0 if bool(np.all(((g > r) & (g > b))[background])) else 0.0


@metric("check_textbox_on_leftside", files=True)
def check_textbox_on_leftside(result: str | None, expected: Any = None) -> float:
    """1.0 if the leftmost dark pixel (grey below 128) lies within the left 5 % of the image."""
    img = open_image(result)
    if img is None:
        return 0.0
    dark = np.asarray(img.convert("L")) < 128
    cols = np.flatnonzero(dark.any(axis=0))
    return 1.0 if cols.size and cols[0] < img.width * 0.05 else 0.0


@metric("check_triangle_position", files=True)
def check_triangle_position(result: str | None, expected: Any = None) -> float:
    """1.0 if the shape (every pixel not of the most common colour, the background) has its centroid within
    5 % of the image's size from the centre."""
    img = open_image(result)
    if img is None:
        return 0.0
    px = np.asarray(img.convert("RGB")).reshape(-1, 3)
    colours, inverse, counts = np.unique(px, axis=0, return_inverse=True, return_counts=True)
    shape = (inverse.reshape(-1) != int(np.argmax(counts))).reshape(img.height, img.width)
    if len(colours) < 2:
        return 0.0  # a blank image holds no shape
    centroid = np.argwhere(shape).mean(axis=0)
    size = np.array([img.height, img.width], dtype=np.float64)
    return 1.0 if bool(np.all(np.abs(centroid - size / 2) < 0.05 * size)) else 0.0


def laplacian_variance(img: Image.Image) -> float:
    """The variance of the grey image's 4-neighbour Laplacian (OpenCV's ``Laplacian`` with its defaults:
    kernel size 1, borders mirrored without repeating the edge)."""
    g = np.pad(np.asarray(img.convert("L"), dtype=np.float64), 1, mode="reflect")
    lap = g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:] - 4 * g[1:-1, 1:-1]
    return float(np.var(lap))


@metric("check_sharper", files=True)
def check_sharper(result: str | None, expected: str | None) -> float:
    """1.0 if the result is sharper (higher Laplacian variance) than the original."""
    pair = _pair(result, expected)
    if pair is None or min(*pair[0].size, *pair[1].size) < 2:
        return 0.0
    return 1.0 if laplacian_variance(pair[0]) > laplacian_variance(pair[1]) else 0.0


class SizeRules(_Model):
    """``width``, ``height``: the pixels wanted (either may be left out); ``ignore_transparent``: measure only the
    opaque part of an image with transparency."""

    width: StrictInt | None = None
    height: StrictInt | None = None
    ignore_transparent: StrictBool = False


@metric("check_image_size", rules=SizeRules, files=True)
def check_image_size(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the image has the ``width`` and ``height`` given."""
    img = open_image(result)
    if img is None:
        return 0.0
    width, height = img.size
    if rules.get("ignore_transparent") and (img.mode in ("RGBA", "LA") or "transparency" in img.info):
        box = img.convert("RGBA").getchannel("A").getbbox()
        width, height = (box[2] - box[0], box[3] - box[1]) if box else (0, 0)
    ok = rules.get("width") in (None, width) and rules.get("height") in (None, height)
    return 1.0 if ok else 0.0


class FileSizeRules(_Model):
    max_size: StrictInt = Field(gt=0)


@metric("check_image_file_size", rules=FileSizeRules, files=True)
def check_image_file_size(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the file is smaller than ``max_size`` bytes."""
    if result is None or not os.path.isfile(result):
        return 0.0
    return 1.0 if os.path.getsize(result) < rules["max_size"] else 0.0


class ConfigStatusRules(BaseModel):
    """``key``: a setting name, or a pair (name, first argument); ``value``: its last word as written
    (quotes included). OSWorld's task files also write ``"type:": "key-value"`` (sic), accepted and ignored."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    key: StrictStr | Annotated[list[StrictStr], Field(min_length=2, max_length=2)]
    value: StrictStr
    kind: StrictStr | None = Field(None, alias="type:")


@metric("check_config_status", rules=ConfigStatusRules, files=True)
def check_config_status(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if a line of the GIMP configuration file (``gimprc``, ``sessionrc``: ``(key arg... value)``) sets
    ``key`` to ``value``."""
    text = read_text(result)
    if text is None:
        return 0.0
    key = rules["key"]
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        items = line.strip().lstrip("(").rstrip(")").split()
        if not items or items[-1] != rules["value"]:
            continue
        if isinstance(key, str) and items[0] == key:
            return 1.0
        if isinstance(key, list) and len(key) == 2 and items[:2] == key:
            return 1.0
    return 0.0
