"""Value rules ``{"method": ..., "ref": ...}``: how OSWorld's metrics compare one read value with a reference.

Methods: ``eq ne lt le gt ge`` (Python's operators, value on the left), ``re`` or ``re.FLAG.FLAG`` (a
``re.search`` of ``ref`` in the value), ``approx:T`` (numerically within ``T`` of ``ref``), ``range.XY``
(``ref[0] < value < ref[1]`` with ``X``/``Y`` = ``t`` for strict, ``e`` for or-equal),
``str_list_eq`` / ``str_set_eq`` (the value split on commas equals ``ref`` as a list or set) and
``spreadsheet_range`` (a cell range lying between ``ref[0]`` and ``ref[1]``).

>>> ValueRule(method="approx:0.1", ref=2).matches(2.05)
True
>>> ValueRule(method="re.I", ref="^total").matches("Total: 4")
True
>>> ValueRule(method="range.te", ref=[0, 2]).matches(0)
False
"""

from __future__ import annotations

import functools
import operator
import re
from typing import Any

from openpyxl.worksheet.cell_range import MultiCellRange
from pydantic import BaseModel, ConfigDict, field_validator

_COMPARE = {"eq", "ne", "lt", "le", "gt", "ge"}
_METHOD = re.compile(r"^(eq|ne|lt|le|gt|ge|re(\.[A-Z]+)*|approx:\d+(\.\d*)?|range\.[te][te]|str_list_eq|str_set_eq"
                     r"|spreadsheet_range)$")


class ValueRule(BaseModel):
    """One comparison of a read value with ``ref``; ``method`` is checked when the task loads."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    method: str
    ref: Any = None

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        if not _METHOD.match(v):
            raise ValueError("expected eq, ne, lt, le, gt, ge, re[.FLAG...], approx:T, range.XY, str_list_eq, "
                             f"str_set_eq or spreadsheet_range, actual {v!r}")
        for flag in v.split(".")[1:] if v.startswith("re") else []:
            if not isinstance(getattr(re, flag, None), re.RegexFlag):
                raise ValueError(f"unknown regular-expression flag {flag!r} in {v!r}")
        return v

    def matches(self, value: Any) -> bool:
        """Whether ``value`` passes; a value of the wrong kind (``None`` for an order) does not."""
        m = self.method
        try:
            if m in _COMPARE:
                return bool(getattr(operator, m)(value, self.ref))
            if m.startswith("re"):
                flags = functools.reduce(operator.or_, (getattr(re, f) for f in m.split(".")[1:]), re.RegexFlag(0))
                return re.search(self.ref, value, flags) is not None
            if m.startswith("approx:"):
                return abs(float(value) - float(self.ref)) <= float(m.split(":", 1)[1])
            if m.startswith("range."):
                low = operator.lt if m[6] == "t" else operator.le
                high = operator.lt if m[7] == "t" else operator.le
                return bool(low(self.ref[0], value) and high(value, self.ref[1]))
            if m in ("str_list_eq", "str_set_eq"):
                items = str(value).strip("\"'").split(",")
                return items == list(self.ref) if m == "str_list_eq" else set(items) == set(self.ref)
            # spreadsheet_range: every range in ref[0] lies inside value, and value inside ref[1]
            inner, outer, got = MultiCellRange(self.ref[0]), MultiCellRange(self.ref[1]), MultiCellRange(value)
            return all(r in got for r in inner) and all(r in outer for r in got)
        except (TypeError, ValueError):
            return False
