"""Word-document metrics on documents generated here: a match scores 1, each kind of mismatch 0, as OSWorld."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from docx import Document

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.spec import load_task
from tests.metrics.conftest import Call, OSWorld

TEXT = ["Dear committee,", "Please find the report attached.", "Kind regards,", "Ada"]


def document(path: Path, paragraphs: list[str]) -> str:
    doc = Document()
    for p in paragraphs:
        doc.add_paragraph(p)
    doc.save(str(path))
    return str(path)


DOCX_CASES: list[tuple[str, list[str], dict[str, Any], float | str]] = [
    ("same", TEXT, {}, 1.0),
    ("word-differs", [*TEXT[:3], "Bob"], {}, 0.0),
    ("paragraph-missing", TEXT[:3], {}, 0.0),
    ("extra-spaces", ["Dear  committee, ", *TEXT[1:]], {}, 1.0),
    ("extra-spaces-strict", ["Dear  committee, ", *TEXT[1:]], {"ignore_blanks": False}, 0.0),
    ("case", [t.upper() for t in TEXT], {}, 0.0),
    ("case-ignored", [t.upper() for t in TEXT], {"ignore_case": True}, 1.0),
    ("case-ignored-strict", [t.upper() for t in TEXT], {"ignore_case": True, "ignore_blanks": False}, 1.0),
    ("order", list(reversed(TEXT)), {}, 0.0),
    ("order-ignored", list(reversed(TEXT)), {"ignore_order": True}, 1.0),
    ("blank-paragraph", [TEXT[0], "", *TEXT[1:]], {}, 1.0),
    ("blank-paragraph-strict", [TEXT[0], "", *TEXT[1:]], {"ignore_blanks": False}, 0.0),
    ("blank-paragraph-deleted", [TEXT[0], "", *TEXT[1:]], {"ignore_blanks": False, "delete_empty_lines": True}, 1.0),
    ("fuzzy-close", [*TEXT[:3], "Adam"], {"fuzzy_match": True}, "between"),
    ("fuzzy-per-paragraph", [*TEXT[:3], "Adam"], {"fuzzy_match": True, "ignore_blanks": False}, "between"),
    ("content-only", [*TEXT[:3], "Adam"], {"content_only": True}, "between"),
    ("content-only-same", TEXT, {"content_only": True}, 1.0),
]


def _files(tmp: Path, name: str, paragraphs: list[str]) -> tuple[str, str]:
    folder = tmp / name
    folder.mkdir()
    return document(folder / "result.docx", paragraphs), document(folder / "expected.docx", TEXT)


@pytest.mark.parametrize("name, paragraphs, options, want", DOCX_CASES, ids=[c[0] for c in DOCX_CASES])
def test_compare_docx_files(name: str, paragraphs: list[str], options: dict[str, Any], want: float | str,
                            tmp_path: Path) -> None:
    got = metrics.score("compare_docx_files", *_files(tmp_path, name, paragraphs), options)
    if want == "between":  # a similarity: close text scores high, but not a match
        assert 0.8 < got < 1.0
    else:
        assert got == want


def test_compare_docx_files_missing_broken_or_other_format_scores_0(tmp_path: Path) -> None:
    expected = document(tmp_path / "expected.docx", TEXT)
    (tmp_path / "broken.docx").write_text("not a document")
    (tmp_path / "notes.txt").write_text("\n".join(TEXT))
    for result in (None, str(tmp_path / "broken.docx"), str(tmp_path / "notes.txt")):
        assert metrics.score("compare_docx_files", result, expected, {}) == 0.0


def test_compare_docx_files_parity(osworld: OSWorld, tmp_path: Path) -> None:
    ours, calls = [], []
    for name, paragraphs, options, _ in DOCX_CASES:
        result, expected = _files(tmp_path, name, paragraphs)
        ours.append(metrics.score("compare_docx_files", result, expected, options))
        calls.append(Call("docs", "compare_docx_files", result, expected, options))
    theirs = osworld.scores(calls)
    differ = [(c[0], o, t) for c, o, t in zip(DOCX_CASES, ours, theirs, strict=True) if o != t]
    assert not differ, f"(case, osgym, OSWorld) that differ: {differ}"


def test_bad_docx_option_fails_at_load() -> None:
    with pytest.raises(TaskLoadError, match="'compare_docx_files': option ignore_spaces"):
        load_task({"id": "t-docx", "instruction": "x",
                   "evaluator": {"func": "compare_docx_files", "options": {"ignore_spaces": True}}})
