"""Run OSWorld's own metric functions, inside the reference venv (see ``conftest.py``); not imported by osgym.

Reads a JSON list of calls ``{"module", "func", "result", "expected", "options"}`` from stdin
(``expected`` null: the function is called without it) and
prints a JSON list of ``{"score": float}`` or ``{"error": "Type: message"}``.

OSWorld's ``desktop_env/evaluators/metrics/__init__.py`` imports every metric family, among them
``docs.py``, which needs easyocr (and so torch) at import time. So the three packages above a metric
module are entered in ``sys.modules`` as plain packages whose ``__path__`` is the real folder, without
running their ``__init__``: the metric module itself and everything it imports load from OSWorld's
real files and run unchanged.

``docs.py`` itself imports easyocr at the top, for its OCR metric (scikit-image, for its colour
metric, is in the venv), and ``pdf.py`` imports PyMuPDF for a helper no metric here uses; ``vlc.py`` imports
audio fingerprinting (acoustid), and ``chrome.py`` a PDF-rewriting library (borb), for code osgym does not
compare (librosa, fastdtw, OpenCV and imagehash, for ``compare_audios`` and ``compare_videos``, are in the venv). For
these modules the runner compiles the module's own source without those import statements (named in
``HEAVY``), and before calling a function checks that neither its code nor any code nested in it names
what they would have bound: the function that runs is OSWorld's, unchanged, and could not have used them.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the shared loader
from osworld_reference import enter_packages, load, names  # noqa: E402

# Per module: the top-level imports left out, and the names they would have bound.
HEAVY = {"docs": ({"easyocr"}, {"easyocr"}),
         "pdf": ({"fitz"}, {"fitz"}),
         # audio fingerprints (compare_audios runs with librosa and fastdtw, compare_videos with OpenCV and imagehash)
         "vlc": ({"acoustid"}, {"acoustid"}),
         # PDF rewriting (compare_pdf_images no longer uses it)
         "chrome": ({"borb.pdf"}, {"Document", "PDF"})}


def _offline_tldextract() -> None:
    """OSWorld's URL comparison splits host names with tldextract, which by default downloads the public
    suffix list: the tests use the snapshot tldextract ships instead, and send nothing off this machine."""
    try:
        import tldextract
    except ImportError:
        return
    tldextract.extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def main() -> None:
    calls = json.load(sys.stdin)
    enter_packages("metrics")
    _offline_tldextract()
    out = []
    # OSWorld's metrics print as they go: keep stdout for the answer.
    with contextlib.redirect_stdout(sys.stderr):
        for call in calls:
            try:
                module = load("metrics", call["module"], HEAVY)
                func = getattr(module, call["func"])
                unused = HEAVY.get(call["module"], (set(), set()))[1]
                assert not (names(func.__code__) & unused), f"{call['func']} uses {unused}: cannot run it here"
                # OSWorld passes the expected value only when the task has an expected getter.
                args = [call["result"]] if call["expected"] is None else [call["result"], call["expected"]]
                out.append({"score": float(func(*args, **call["options"]))})
            except Exception as exc:  # reported to the test, which decides what a crash means
                out.append({"error": f"{type(exc).__name__}: {exc}"})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
