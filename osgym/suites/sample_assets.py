"""The files that ``osgym tasks sample --tier apps`` tasks download: generated here, in the shapes OSWorld's
tasks download (an ``.xlsx``, ``.docx``, ``.pptx``, ``.png``, a ``.wav``, a ``.tar.gz``, web pages, text).

Every generator returns the same bytes on every call (fixed timestamps and metadata), so the task files,
whose URLs name these files, and a cache filled from them agree wherever they are made.

>>> sorted(ASSETS) == sorted(set(ASSETS))
True
>>> all(ASSETS[name]() == ASSETS[name]() for name in ASSETS)
True
"""

from __future__ import annotations

import datetime as dt
import io
import math
import tarfile
import wave
import zipfile
from collections.abc import Callable, Sequence

from osgym.suites.apps_smoke.common import docx_bytes

_EPOCH = dt.datetime(2024, 1, 1)

_NUMBERS = [("North", 120, 80), ("South", 95, 110), ("East", 60, 75)]
SALES: list[tuple[object, ...]] = [("Region", "Q1", "Q2"), *_NUMBERS]
LETTER = ["Meeting notes", "The team met on Monday.", "We agreed on the budget."]
LETTER_ADDED = "The next meeting is on Friday."
NOTES = ["Shopping list", "Bread and milk.", "Three apples."]
SLIDE_TITLE, SLIDE_NEW_TITLE, SLIDE_SUBTITLE = "Quarterly Review", "Annual Review", "Draft for the team"
LOG_LINES = [f"2024-01-0{1 + i % 9} 10:{i:02d}:00 {'ERROR' if i % 3 == 0 else 'INFO'} job {i}" for i in range(14)]
LOG_ERRORS = sum(1 for line in LOG_LINES if " ERROR " in line)
PHOTOS = ["beach.jpg", "forest.jpg", "harbor.jpg"]


def _xlsx(rows: Sequence[Sequence[object]]) -> bytes:
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = "Sheet1"
    for row in rows:
        ws.append(list(row))
    wb.properties.created = wb.properties.modified = _EPOCH
    buf = io.BytesIO()
    wb.save(buf)
    return _fixed_zip(buf.getvalue())


def _fixed_zip(data: bytes) -> bytes:
    """The zip ``data`` with every member's timestamp fixed (openpyxl and python-pptx stamp the current time)."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = _fixed_core(body)
            dst.writestr(zipfile.ZipInfo(info.filename, date_time=(1980, 1, 1, 0, 0, 0)), body,
                         compress_type=zipfile.ZIP_DEFLATED)
    return out.getvalue()


def _fixed_core(body: bytes) -> bytes:
    import re

    return re.sub(rb"(<dcterms:(?:created|modified)[^>]*>)[^<]*", rb"\g<1>2024-01-01T00:00:00Z", body)


def sales_xlsx() -> bytes:
    return _xlsx(SALES)


def sales_expected_xlsx() -> bytes:
    rows: list[tuple[object, ...]] = [(*SALES[0], "Total")]
    rows += [(r, a, b, a + b) for r, a, b in _NUMBERS]
    return _xlsx(rows)


def letter_docx() -> bytes:
    return docx_bytes(LETTER)


def letter_expected_docx() -> bytes:
    return docx_bytes([*LETTER, LETTER_ADDED])


def notes_expected_docx() -> bytes:
    return docx_bytes(NOTES)


def _pptx(title: str) -> bytes:
    from pptx import Presentation

    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[0])
    slide.shapes.title.text = title
    slide.placeholders[1].text = SLIDE_SUBTITLE
    prs.core_properties.created = prs.core_properties.modified = _EPOCH
    prs.core_properties.last_modified_by = "osgym"
    buf = io.BytesIO()
    prs.save(buf)
    return _fixed_zip(buf.getvalue())


def review_pptx() -> bytes:
    return _pptx(SLIDE_TITLE)


def review_expected_pptx() -> bytes:
    return _pptx(SLIDE_NEW_TITLE)


def poster_png() -> bytes:
    """A 640x480 picture that is not its own mirror image: shapes on the left only."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (640, 480), (240, 240, 230))
    d = ImageDraw.Draw(img)
    d.rectangle((40, 40, 260, 200), fill=(200, 30, 30))
    d.ellipse((60, 260, 220, 420), fill=(30, 60, 200))
    d.polygon([(300, 60), (360, 200), (240, 200)], fill=(20, 150, 60))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def tune_wav(seconds: int = 120, rate: int = 8000) -> bytes:
    """A quiet two-tone WAV, long enough to be still playing when the episode is scored."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(bytes(128 + int(20 * math.sin(2 * math.pi * (440 if (i // rate) % 2 else 330) * i / rate))
                            for i in range(seconds * rate)))
    return buf.getvalue()


def photos_tar_gz() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in PHOTOS:
            body = f"not really a {name}\n".encode()
            info = tarfile.TarInfo(f"photos/{name}")
            info.size, info.mtime, info.mode = len(body), 1704067200, 0o644
            tar.addfile(info, io.BytesIO(body))
    import gzip

    return gzip.compress(raw.getvalue(), mtime=0)


def access_log() -> bytes:
    return "".join(line + "\n" for line in LOG_LINES).encode()


def notes_txt() -> bytes:
    return "\n".join(NOTES).encode() + b"\n"


def app_py() -> bytes:
    return b'def greet(name):\n    return "Hello, " + name\n'


def inbox_mbox() -> bytes:
    msgs = [("alice@example.org", "Invoice 1042", "Please find the invoice attached."),
            ("bob@example.org", "Team lunch", "Lunch is on Friday at noon.")]
    return "".join(f"From - Mon Jan  1 00:00:00 2024\nFrom: {a}\nTo: user@osgym.invalid\nSubject: {s}\n"
                   f"Date: Mon, 1 Jan 2024 09:00:00 +0000\nMessage-ID: <{i}@example.org>\n\n{b}\n\n"
                   for i, (a, s, b) in enumerate(msgs)).encode()


FORM_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Order form</title></head>
<body><h1>Order form</h1>
<form><label>Customer <input name="customer" autofocus></label> <label>Tickets <input name="tickets" type="number">
</label> <button type="submit">Send</button></form>
<script>if (location.search) { document.title = 'Received'; document.querySelector('h1').textContent = 'Received'; }
</script></body></html>
"""
HOME_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Harbor Cafe</title></head>
<body><h1>Harbor Cafe</h1><nav><a id="menu" href="menu.html">Menu</a> <a href="pricing.html">Pricing</a></nav>
<script>document.getElementById('menu').focus();</script></body></html>
"""
PRICING_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Pricing</title></head><body><h1>Pricing</h1><p>Coffee 2.50</p></body></html>
"""
MENU_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Menu</title></head><body><h1>Menu</h1><p>Coffee, tea</p></body></html>
"""

ASSETS: dict[str, Callable[[], bytes]] = {
    "sales.xlsx": sales_xlsx, "sales-expected.xlsx": sales_expected_xlsx,
    "letter.docx": letter_docx, "letter-expected.docx": letter_expected_docx,
    "notes.txt": notes_txt, "notes-expected.docx": notes_expected_docx,
    "review.pptx": review_pptx, "review-expected.pptx": review_expected_pptx,
    "poster.png": poster_png, "tune.wav": tune_wav, "photos.tar.gz": photos_tar_gz, "access.log": access_log,
    "app.py": app_py, "Inbox": inbox_mbox,
    "order-form.html": FORM_PAGE.encode, "cafe-index.html": HOME_PAGE.encode,
    "cafe-pricing.html": PRICING_PAGE.encode, "cafe-menu.html": MENU_PAGE.encode,
}
"""Each downloadable file by its name (the last part of its URL)."""

__all__ = ["ASSETS"]
