"""PDF metrics, after OSWorld's ``check_pdf_pages``."""

from __future__ import annotations

import operator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pypdf import PdfReader
from pypdf.errors import PyPdfError

from osgym.tasks.metrics import metric

__all__ = ["check_pdf_pages"]

_RELATIONS = ("eq", "ne", "lt", "le", "gt", "ge")


class PagesRules(BaseModel):
    """``relation``: an order (``eq ne lt le gt ge``); ``ref_value``: the page count it compares with."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    relation: Literal["eq", "ne", "lt", "le", "gt", "ge"]
    ref_value: int


@metric("check_pdf_pages", rules=PagesRules, files=True)
def check_pdf_pages(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if the PDF's page count stands in ``rules["relation"]`` (``eq ne lt le gt ge``) to ``rules["ref_value"]``.

    >>> check_pdf_pages(None, {"relation": "eq", "ref_value": 1})
    0.0

    Raises:
        ValueError: if the relation is not one of those.
    """
    relation = rules["relation"]
    if relation not in _RELATIONS:
        raise ValueError(f"check_pdf_pages relation: expected one of {', '.join(_RELATIONS)}, actual {relation!r}")
    if result is None:
        return 0.0
    try:
        pages = len(PdfReader(result).pages)
    except (OSError, PyPdfError, ValueError):
        return 0.0  # the agent's file is not a PDF
    return 1.0 if getattr(operator, relation)(pages, rules["ref_value"]) else 0.0
