"""PDF image metric: OSWorld's ``compare_pdf_images`` (``chrome.py`` in desktop-env 1.0.2).

OSWorld takes the images each page draws from its resources (PyMuPDF's ``get_images`` and
``extract_image``; inline images are not among them), in page order, and pairs the two files' lists:
lists of different lengths score 0, two files without images 1, otherwise the share of pairs whose
perceptual hashes (imagehash's ``phash``) differ in at most 5 of their 64 bits. osgym reads the same
images with pypdf and computes the same hash with numpy (:func:`phash`).

An image that cannot be decoded is left out of its list, as OSWorld does; one that declares more than
:data:`~osgym.tasks.metrics.images.MAX_PIXELS` pixels is left out before decoding.

>>> from PIL import Image
>>> picture = Image.effect_mandelbrot((128, 128), (-2, -1.5, 1, 1.5), 100)
>>> phash(picture) - phash(picture.resize((64, 64))) <= 5   # the same picture, smaller
True
>>> phash(picture) - phash(picture.transpose(Image.Transpose.FLIP_LEFT_RIGHT)) > 5
True
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from pypdf import PageObject, PdfReader
from pypdf.errors import PyPdfError

from osgym.tasks.metrics import metric
from osgym.tasks.metrics.images import MAX_PIXELS

__all__ = ["Hash", "compare_pdf_images", "phash"]

HASH_SIZE = 8  # imagehash's default: 8 x 8 bits
HIGHFREQ_FACTOR = 4  # the picture is shrunk to 32 x 32 before the transform
SAME_BITS = 5  # OSWorld's threshold: at most this many differing bits is the same picture
MAX_IMAGES = 1_000  # images read per file at most; a receipt or a scan has a handful


def _dct_matrix(n: int) -> NDArray[np.float64]:
    # scipy.fftpack.dct's unnormalised type II (what imagehash calls): y_k = 2 * sum_j x_j cos(pi k (2j + 1) / 2n)
    k = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    return 2.0 * np.cos(np.pi * k * (2 * j + 1) / (2 * n))


_DCT = _dct_matrix(HASH_SIZE * HIGHFREQ_FACTOR)


@dataclass(frozen=True)
class Hash:
    """A perceptual hash; ``a - b`` is the number of bits in which two differ."""

    bits: NDArray[np.bool_]

    def __sub__(self, other: Hash) -> int:
        return int(np.count_nonzero(self.bits != other.bits))


def phash(img: Image.Image) -> Hash:
    """imagehash's ``phash``: the grey picture shrunk to 32 x 32 (Lanczos), its 2-D DCT, and the low 8 x 8
    frequencies compared with their median. Pictures whose low frequencies are all (nearly) equal, a
    single flat colour for instance, have no stable hash: rounding decides their bits."""
    size = HASH_SIZE * HIGHFREQ_FACTOR
    pixels = np.asarray(img.convert("L").resize((size, size), Image.Resampling.LANCZOS), dtype=np.float64)
    low = (_DCT @ pixels @ _DCT.T)[:HASH_SIZE, :HASH_SIZE]
    return Hash(low > np.median(low))


def _image_ids(page: PageObject) -> Iterator[str | list[str]]:
    """The page's image XObjects as pypdf names them (a path through form XObjects), without inline images."""
    for key in page.images.keys():
        if isinstance(key, str) and key.startswith("~") and key.endswith("~"):
            continue
        yield key


def _declared_pixels(page: PageObject, key: str | list[str]) -> float:
    obj: Any = page
    path = [key] if isinstance(key, str) else list(key)
    for name in path:
        obj = obj["/Resources"].get_object()["/XObject"].get_object()[name].get_object()
    width, height = obj.get("/Width", 0), obj.get("/Height", 0)
    return float(width) * float(height) if isinstance(width, int) and isinstance(height, int) else math.inf


def _hashes(path: str) -> list[Hash] | None:
    """The hashes of the images the PDF's pages draw, in order (``None``: no readable PDF)."""
    try:
        reader = PdfReader(path)
        out: list[Hash] = []
        for page in reader.pages:
            for key in _image_ids(page):
                if len(out) >= MAX_IMAGES:
                    return out
                try:
                    if _declared_pixels(page, key) > MAX_PIXELS:
                        continue
                    img = page.images[key].image
                    if img is not None:
                        out.append(phash(img))
                except (PyPdfError, OSError, ValueError, KeyError, TypeError, AttributeError,
                        NotImplementedError, Image.DecompressionBombError):
                    continue  # an image that cannot be decoded is left out, as OSWorld does
        return out
    except (PyPdfError, OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


@metric("compare_pdf_images", files=True)
def compare_pdf_images(result: str | None, expected: str) -> float:
    """The share of the expected PDF's images that the result PDF draws in the same place of its image list
    with a perceptual hash within 5 bits; 0 if the two draw different numbers of images, 1 if neither
    draws any, 0 for no file or one that is not a readable PDF.

    Raises:
        ValueError: if the expected file is not a readable PDF.
    """
    if result is None:
        return 0.0
    gold = _hashes(expected)
    if gold is None:
        raise ValueError(f"compare_pdf_images: the expected file {expected!r} is not a readable PDF")
    mine = _hashes(result)
    if mine is None or len(mine) != len(gold):
        return 0.0
    if not gold:
        return 1.0
    return sum(a - b <= SAME_BITS for a, b in zip(mine, gold, strict=True)) / len(gold)
