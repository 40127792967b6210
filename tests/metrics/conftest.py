"""The OSWorld reference: ``desktop-env`` in a venv of its own, to score the same documents as osgym.

The venv holds ``desktop-env`` installed without its dependencies (they include torch and a browser
stack), plus only the libraries the compared metric modules import, at the versions desktop-env's
own metadata pins (pandas 2.2 and numpy 1.x, for instance). It is built once per desktop-env version
under the temp dir (``OSGYM_OSWORLD_REF`` overrides the place) and reused by later sessions; it is
built into a scratch folder and renamed into place, so an interrupted build is never reused.
"""

from __future__ import annotations

import email.parser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

OSWORLD_VERSION = "1.0.2"
# What table.py, slides.py, docs.py, pdf.py, general.py, vscode.py, gimp.py, thunderbird.py, basic_os.py, others.py and
# the compared parts of vlc.py and chrome.py import (directly or through utils.py), less what osworld_runner.py
# leaves out (easyocr, acoustid, borb). scikit-image is the reference for osgym's
# own SSIM, opencv for its Laplacian, PyMuPDF for compare_pdfs' text and compare_pdf_images' images,
# imagehash for compare_pdf_images' perceptual hashes, mutagen for ID3 tags, librosa (with soundfile
# and soxr) and fastdtw for compare_audios (fastdtw's C++ extension does not build: its pure-Python version runs).
NEEDED = ("numpy", "pandas", "lxml", "cssselect", "xmltodict", "openpyxl", "python-docx", "python-pptx",
          "rapidfuzz", "formulas", "pyyaml", "pypdf2", "pdfplumber", "tldextract", "pillow", "odfpy", "pypdf",
          "scikit-image", "opencv-python-headless", "beautifulsoup4", "pymupdf", "mutagen", "imagehash",
          "librosa", "fastdtw")
RUNNER = Path(__file__).with_name("osworld_runner.py")
PIP_TIMEOUT_S = 900


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins(venv: Path) -> list[str]:
    """desktop-env's own requirement lines for the libraries in NEEDED (markers dropped)."""
    meta = next(venv.glob(f"lib/python*/site-packages/desktop_env-{OSWORLD_VERSION}.dist-info/METADATA"))
    reqs = email.parser.Parser().parsestr(meta.read_text()).get_all("Requires-Dist") or []
    pins = {}
    for req in reqs:
        spec = req.split(";")[0].strip()
        name = re.split(r"[<>=!~\[ (]", spec, maxsplit=1)[0]
        if _norm(name) in {_norm(n) for n in NEEDED}:
            pins[_norm(name)] = spec
    return [pins.get(_norm(n), n) for n in NEEDED]


def _build(target: Path) -> None:
    scratch = target.with_name(f"{target.name}.incomplete-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(scratch)], check=True, timeout=120)
        py = str(scratch / "bin" / "python")
        pip = [py, "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, "--no-deps", f"desktop-env=={OSWORLD_VERSION}"], check=True, timeout=PIP_TIMEOUT_S)
        subprocess.run([*pip, *_pins(scratch)], check=True, timeout=PIP_TIMEOUT_S)
        try:
            scratch.rename(target)
        except OSError:  # another session finished first: use its venv
            pass
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@dataclass(frozen=True)
class Call:
    """One metric call: OSWorld's module and function, and its arguments."""

    module: str
    func: str
    result: Any
    expected: Any
    options: dict[str, Any]


class OSWorld:
    """Scores calls with OSWorld's functions, a batch per subprocess (each start imports pandas)."""

    def __init__(self, venv: Path):
        self.python = venv / "bin" / "python"

    def scores(self, calls: Sequence[Call]) -> list[float | str]:
        """Each call's score, or its error text when OSWorld's function raised."""
        payload = json.dumps([c.__dict__ for c in calls])
        # in a scratch folder: some of OSWorld's functions write files into the working directory (temp.pdf)
        with tempfile.TemporaryDirectory(prefix="osgym-osworld-run-") as cwd:
            proc = subprocess.run([str(self.python), str(RUNNER)], input=payload, capture_output=True, text=True,
                                  timeout=300, check=False, cwd=cwd)
        assert proc.returncode == 0, proc.stderr[-4000:]
        return [r.get("score", r.get("error")) for r in json.loads(proc.stdout)]


@pytest.fixture(scope="session")
def osworld() -> OSWorld:
    """OSWorld's reference functions; builds the venv on first use (40 s to 2 min, downloads included)."""
    root = Path(os.environ.get("OSGYM_OSWORLD_REF", Path(tempfile.gettempdir()) / "osgym-osworld-ref"))
    # The name changes with the version and the library list, so a stale venv is never reused.
    key = hashlib.sha256(" ".join(NEEDED).encode()).hexdigest()[:8]
    venv = root / f"desktop-env-{OSWORLD_VERSION}-{key}"
    if not (venv / "bin" / "python").exists():
        root.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        _build(venv)
        print(f"built the OSWorld reference venv in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return OSWorld(venv)
