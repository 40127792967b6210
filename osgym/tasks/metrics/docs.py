"""Word-document metrics, after OSWorld's ``compare_docx_files``."""

from __future__ import annotations

import re
import zipfile
from typing import Any

from docx import Document
from docx.opc.exceptions import PackageNotFoundError
from pydantic import BaseModel, ConfigDict, StrictBool
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric

__all__ = ["DocxOptions", "compare_docx_files"]

_UNREADABLE = (OSError, zipfile.BadZipFile, PackageNotFoundError, KeyError, ValueError)


class DocxOptions(BaseModel):
    """How ``compare_docx_files`` compares the paragraphs' text (OSWorld's options and defaults).

    ``ignore_blanks`` (default true): join the paragraphs and compare with every run of whitespace as
    one space; ``ignore_case``; ``ignore_order``: sort the paragraphs first; ``delete_empty_lines``:
    drop blank paragraphs; ``content_only``: score the similarity of the joined texts (0 to 1);
    ``fuzzy_match``: score similarity instead of equality (of the joined texts with ``ignore_blanks``,
    else the mean over paragraphs).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    ignore_blanks: StrictBool = True
    ignore_case: StrictBool = False
    ignore_order: StrictBool = False
    content_only: StrictBool = False
    fuzzy_match: StrictBool = False
    delete_empty_lines: StrictBool = False


def _paragraphs(path: str) -> list[str]:
    return [p.text for p in Document(path).paragraphs]


def _joined(paragraphs: list[str], lower: bool) -> str:
    text = re.sub(r"\s+", " ", "\n".join(paragraphs)).strip()
    return text.lower() if lower else text


@metric("compare_docx_files", DocxOptions)
def compare_docx_files(result: str | None, expected: str | None, options: DocxOptions) -> float:
    """How closely the result document's text matches the expected one's: 1.0 equal, 0.0 different or unreadable.

    Only ``.docx`` files are compared; any other file scores 0.0, as in OSWorld.

    Raises:
        ValueError: if the expected document cannot be read.
    """
    if not result or not expected or not (result.endswith(".docx") and expected.endswith(".docx")):
        return 0.0
    try:
        got = _paragraphs(result)
    except _UNREADABLE:
        return 0.0
    try:
        want = _paragraphs(expected)
    except _UNREADABLE as exc:
        raise ValueError(f"expected document {expected} cannot be read: {exc}") from exc
    if options.ignore_order:
        got, want = sorted(got), sorted(want)
    if options.delete_empty_lines:
        got, want = [p for p in got if p.strip()], [p for p in want if p.strip()]
    if options.content_only or options.ignore_blanks:
        a, b = _joined(got, options.ignore_case), _joined(want, options.ignore_case)
        if options.content_only or options.fuzzy_match:
            return fuzz.ratio(a, b) / 100.0
        return 1.0 if a == b else 0.0
    if len(got) != len(want):
        return 0.0
    pairs: list[tuple[str, Any]] = list(zip(got, want, strict=True))
    if options.ignore_case:
        pairs = [(a.lower(), b.lower()) for a, b in pairs]
    if options.fuzzy_match:
        return sum(fuzz.ratio(a, b) / 100.0 for a, b in pairs) / len(pairs) if pairs else 1.0
    return 1.0 if all(a == b for a, b in pairs) else 0.0
