"""An agent's office file that would unpack past the limit scores 0 without being unpacked."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from osgym.tasks import metrics
from osgym.tasks.metrics import _files
from tests.metrics.test_docs import TEXT, document
from tests.metrics.test_slides import deck
from tests.metrics.test_table import data
from tests.metrics.workbooks import book

PAD = 2 * 2**20  # zeros: a few kilobytes packed


def _pad(path: str) -> None:
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("padding.bin", b"\0" * PAD)


CASES: list[tuple[str, Callable[[Path], str], dict[str, Any]]] = [
    ("compare_table", lambda p: book(p / "f.xlsx"), data()),
    ("compare_docx_files", lambda p: document(p / "f.docx", TEXT), {}),
    ("compare_pptx_files", lambda p: deck(p / "f.pptx"), {}),
    ("compare_docx_tables", lambda p: document(p / "f.docx", TEXT), {}),
]


@pytest.mark.parametrize("func, make, options", CASES, ids=[c[0] for c in CASES])
def test_result_unpacking_past_the_limit_scores_0(func: str, make: Callable[[Path], str], options: dict[str, Any],
                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "r").mkdir()
    (tmp_path / "e").mkdir()
    result, expected = make(tmp_path / "r"), make(tmp_path / "e")
    _pad(result)
    assert Path(result).stat().st_size < PAD // 50  # packed small, declares much more
    # Under the default limit the padded file is still a good document: the 0 below is the guard's doing.
    assert metrics.score(func, result, expected, options) == 1.0
    monkeypatch.setattr(_files, "MAX_UNPACKED", PAD)
    assert metrics.score(func, result, expected, options) == 0.0
