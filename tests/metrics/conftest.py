"""The OSWorld reference: ``desktop-env`` in a venv of its own, to score the same documents as osgym.

The venv (tests/osworld_venv.py) holds ``desktop-env`` installed without its dependencies, plus only
the libraries the compared metric modules import, at the versions desktop-env's own metadata pins
(pandas 2.2 and numpy 1.x, for instance).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.osworld_venv import desktop_env_venv

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
    return OSWorld(desktop_env_venv(NEEDED))
