"""compare_pdf_images on generated PDFs (a receipt picture saved as PDF, as in OSWorld's task): the same picture
scores 1 however it was re-encoded or placed; another picture, a missing or extra image, or no PDF scores 0, and
a partly different file its share. OSWorld's function agrees except where docs/osworld-coverage.md says."""

from __future__ import annotations

import io
import random
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw
from pypdf import PdfWriter

from osgym.tasks import metrics
from osgym.tasks.metrics import pdf_images
from osgym.tasks.metrics.pdf_images import phash
from tests.metrics.cases import Case, File, check, ids, materialize, parity
from tests.metrics.conftest import OSWorld


def receipt(seed: int = 0, lines: int = 12, size: tuple[int, int] = (300, 420)) -> Image.Image:
    """A picture with some structure (a flat colour has no stable perceptual hash)."""
    rnd = random.Random(seed)
    img = Image.new("RGB", size, (250, 248, 240))
    d = ImageDraw.Draw(img)
    d.rectangle((10, 10, size[0] - 10, 60), fill=(40, 60, 120))
    for i in range(lines):
        y = 80 + i * 25
        d.rectangle((20, y, 20 + rnd.randint(60, 200), y + 10), fill=(30, 30, 30))
        d.rectangle((size[0] - 80, y, size[0] - 20, y + 10), fill=(120, 20, 20))
    d.ellipse((size[0] - 110, size[1] - 110, size[0] - 20, size[1] - 20), outline=(0, 120, 0), width=6)
    return img


def pdf(*pages: Image.Image, name: str = "receipt.pdf", **save: object) -> File:
    """One page per picture, as Pillow writes them (JPEG for RGB, hex-coded palette for P)."""
    buf = io.BytesIO()
    pages[0].save(buf, "PDF", save_all=True, append_images=list(pages[1:]), **save)
    return File(buf.getvalue(), name)


def gold(*pages: Image.Image, **save: object) -> File:
    # OSWorld copies both files into one folder under their own names: the task's files differ in name
    # (receipt.pdf, receipt_Gold.pdf), and equal names would compare the expected file with itself there
    return pdf(*pages, name="receipt_Gold.pdf", **save)


def blank_pdf(name: str = "receipt.pdf") -> File:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    buf = io.BytesIO()
    writer.write(buf)
    return File(buf.getvalue(), name)


GOLD = gold(receipt())
CASES = [
    Case("same", GOLD, GOLD, 1.0),
    Case("re-encoded-and-placed-otherwise", pdf(receipt(), quality=40, resolution=150.0), GOLD, 1.0),
    Case("palette-picture", pdf(receipt().quantize(64)), gold(receipt().quantize(64)), 1.0),
    Case("other-picture", pdf(receipt(seed=2, lines=5)), GOLD, 0.0),
    Case("upside-down", pdf(receipt().rotate(180)), GOLD, 0.0),
    Case("one-of-two-differs", pdf(receipt(), receipt(seed=2, lines=5)), gold(receipt(), receipt(seed=1)), 0.5),
    Case("extra-page", pdf(receipt(), receipt(seed=1)), GOLD, 0.0),
    Case("no-image", blank_pdf(), GOLD, 0.0),
    Case("neither-has-images", blank_pdf(), blank_pdf("receipt_Gold.pdf"), 1.0),
    # OSWorld removes its scratch folder twice when PyMuPDF cannot open a file, and the second time raises
    Case("not-a-pdf", File(b"%PDF-1.4 truncated", "receipt.pdf"), GOLD, 0.0, osworld="FileNotFoundError"),
    Case("picture-not-pdf", File(receipt().tobytes()[:4096], "receipt.pdf"), GOLD, 0.0,
         osworld="FileNotFoundError"),
    Case("missing-file", None, GOLD, 0.0),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_compare_pdf_images(case: Case, tmp_path: Path) -> None:
    check("compare_pdf_images", case, tmp_path)


def test_compare_pdf_images_parity(osworld: OSWorld, tmp_path: Path) -> None:
    parity(osworld, "chrome", "compare_pdf_images", CASES, tmp_path)


def test_compare_pdf_images_unreadable_expected_file_is_an_error(tmp_path: Path) -> None:
    result, expected = materialize(GOLD, tmp_path / "r"), materialize(File(b"nothing", "g.pdf"), tmp_path / "e")
    with pytest.raises(ValueError, match="compare_pdf_images: the expected file .* is not a readable PDF"):
        metrics.score("compare_pdf_images", result, expected, {})


def test_compare_pdf_images_skips_an_image_declaring_too_many_pixels(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    result, expected = materialize(pdf(receipt(), receipt(seed=1)), tmp_path / "r"), materialize(GOLD, tmp_path / "e")
    assert metrics.score("compare_pdf_images", result, expected, {}) == 0.0  # two images against one
    small = pdf(receipt(), receipt(seed=1).resize((600, 840)))
    result = materialize(small, tmp_path / "r2")
    monkeypatch.setattr(pdf_images, "MAX_PIXELS", 300 * 420)
    assert metrics.score("compare_pdf_images", result, expected, {}) == 1.0  # the large one is left out


def test_phash_matches_imagehash_on_structured_pictures() -> None:
    # bits imagehash 4.3 computes for receipt() (scipy's DCT); the parity test compares whole files
    a, b = phash(receipt()), phash(receipt(seed=1))
    assert a - a == 0 and a - phash(receipt().convert("L")) == 0 and a - b == 12
    assert a.bits.shape == (8, 8) and np.count_nonzero(a.bits) == 32
