"""What the apps-smoke templates share: setup that opens an app ready for input, oracle fragments
for the apps' own dialogs, and the expected documents their evaluators compare with."""

from __future__ import annotations

import base64
import io
import random
import zipfile
from typing import Any
from xml.sax.saxutils import escape

from osgym.suites.desktop_basics.common import ANIMALS, NAMES, WORDS
from osgym.suites.generators import execute, launch, op, q, wait

__all__ = ["ANIMALS", "DONE", "NAMES", "WORDS", "docx_bytes", "open_app", "save_as", "unprefixed", "write_expected"]

DONE = op("done")
APP_START_S = 180
"""How long setup waits for an app's window, mapped and focused: GIMP and VS Code took over 60 s at load ~40 on
this 2-core machine (a cold LibreOffice or Chromium start up to ~15 s with two replicas busy). One bound for
every app: it only matters when something is broken, and a window that never comes is then retried on a fresh
replica (a ``wait_window`` step over 60 s, the replica's bound for one wait, waits in turns:
:mod:`osgym.tasks.setup`)."""
SESSION_UP = ("for i in $(seq 150); do xprop -root _NET_SUPPORTING_WM_CHECK 2>/dev/null | grep -q 'window id'"
              " && exit 0; sleep 0.2; done; exit 1")
"""A setup step's check that xfwm4 manages windows (at most 30 s). An app started before it maps at 0,0
without decorations or focus. Immediate once the replica's readiness covers the XFCE session."""


def open_app(command: list[str], title: str) -> list[dict[str, Any]]:
    """Setup steps: wait for the window manager, start ``command``, wait (at most :data:`APP_START_S`) until its
    window (title or class containing ``title``) is mapped and focused.

    The ``launch`` step just before the last ``wait_window`` is where :mod:`osgym.suites.variation` finds the
    app a task is about (and Chromium's command line, which takes its zoom).

    >>> [s["type"] for s in open_app(["gimp"], "GIMP")]
    ['execute', 'launch', 'wait_window']
    """
    return [execute(SESSION_UP), launch(command), wait(title, timeout=APP_START_S)]


def save_as(path: str, app_title: str) -> list[dict[str, Any]]:
    """Oracle ops for LibreOffice's Save As (the GTK file chooser, titled "Save"): once it has the focus
    (it maps a moment before the window manager hands it over), type the full path,
    wait for Save to be sensitive (GTK re-enables it 150 ms after the last keystroke and ignores Enter
    until then), press Enter, wait for the window to carry the new name (the first save to a Microsoft
    format loads its export filter, which took up to ~5 s here; the dialog stays up meanwhile)."""
    name = path.rsplit("/", 1)[-1]
    return [op("hotkey", keys=["ctrl", "shift", "s"]), op("wait_window", title="Save", focused=True, timeout=30),
            op("hotkey", keys=["ctrl", "a"]), op("type", text=path),
            op("wait_enabled", window="Save", control="Save"), op("press", key="enter"),
            op("wait_window", title=f"{name} - {app_title}", timeout=60)]


def unprefixed(rng: random.Random, pool: list[str], k: int) -> list[str]:
    """``k`` distinct words of ``pool`` of which none starts another, so that a spreadsheet's AutoInput
    (which completes a typed prefix of a word already in the column) never changes what is typed.

    >>> words = unprefixed(random.Random(1), ["pea", "peach", "plum", "fig"], 3)
    >>> len(words), not ("pea" in words and "peach" in words)
    (3, True)
    """
    for _ in range(1000):
        words = rng.sample(pool, k)
        if not any(a != b and b.startswith(a) for a in words for b in words):
            return words
    raise ValueError(f"no {k} words of {pool} without a prefix of another")


_CONTENT_TYPES = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                  '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                  '<Default Extension="xml" ContentType="application/xml"/>'
                  '<Override PartName="/word/document.xml" ContentType="application/'
                  'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>')
_RELS = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
         '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
         '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
         'officeDocument" Target="word/document.xml"/></Relationships>')


def docx_bytes(paragraphs: list[str]) -> bytes:
    """The smallest Word document holding ``paragraphs`` as plain text, the same bytes for the same text
    (fixed timestamps), so a variant's task JSON is deterministic.

    >>> from docx import Document
    >>> [p.text for p in Document(io.BytesIO(docx_bytes(["Title", "A & B."]))).paragraphs]
    ['Title', 'A & B.']
    """
    body = "".join(f'<w:p><w:r><w:t xml:space="preserve">{escape(p)}</w:t></w:r></w:p>' for p in paragraphs)
    document = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
                f'<w:body>{body}</w:body></w:document>')
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in (("[Content_Types].xml", _CONTENT_TYPES), ("_rels/.rels", _RELS),
                           ("word/document.xml", document)):
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), text,
                       compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


EXPECTED_DIR = "/tmp/osgym-expected"
"""Where an evaluator's postconfig writes the expected document: after the agent has finished, so that
the agent never sees it."""


def write_expected(name: str, data: bytes, folder: str = EXPECTED_DIR) -> tuple[dict[str, Any], str]:
    """A postconfig step writing ``data`` as ``folder/name`` inside the replica, and that path.

    The folder is made anew and the file created exclusively (``set -C``), so nothing the agent left at
    that path (a symlink to its own result, say) is written through: the step fails instead.
    """
    path = f"{folder}/{name}"
    b64 = base64.b64encode(data).decode()
    return execute(f"rm -rf {q(folder)} && mkdir -m 700 {q(folder)} && "
                   f"set -C && printf '%s' {q(b64)} | base64 -d > {q(path)}"), path
