"""The options of ``compare_table``: its rules, one model per rule type, checked when a task loads."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from openpyxl.worksheet.cell_range import CellRange
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, field_validator

from osgym.tasks.metrics.rules import ValueRule

_SHEET_IDX = re.compile(r"^(RI\d+|EI\d+|RN.+|EN.+)$")

def _check_idx(v: int | str) -> int | str:
    if isinstance(v, int):
        if v < 0:
            raise ValueError(f"sheet index: expected >= 0, actual {v}")
    elif not _SHEET_IDX.match(v):
        raise ValueError(f"sheet index: expected an int, 'RI<n>', 'RN<name>', 'EI<n>' or 'EN<name>', actual {v!r}")
    return v


SheetIdx = Annotated[int | str, AfterValidator(_check_idx)]


class _Rule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _PairRule(_Rule):
    sheet_idx0: SheetIdx
    sheet_idx1: SheetIdx


class SheetName(_Rule):
    type: Literal["sheet_name"]


class SheetData(_PairRule):
    type: Literal["sheet_data"]
    precision: int = Field(4, ge=0)
    ignore_case: StrictBool = False
    """Accepted and, as in OSWorld, without effect: OSWorld reads ``ignore_case`` for ``sheet_print`` only, so
    a task that sets it here is scored case-sensitively there; osgym scores it the same."""


class SheetPrint(_PairRule):
    type: Literal["sheet_print"]
    ignore_case: StrictBool = False


class FuzzyRule(_Rule):
    """How to compare the cells of ``range`` (OSWorld's order: normalise, trim, drop chars, lower-case)."""

    range: list[str] = Field(min_length=1)
    type: Literal["includes", "included_by", "fuzzy_match", "exact_match"]
    threshold: float = 85.0
    ignore_case: StrictBool = False
    ignore_chars: str = ""
    trim_leadings: str | None = None
    trim_trailings: str | None = None
    normalization: list[tuple[str, str]] = Field(default_factory=list)

    @field_validator("range")
    @classmethod
    def _ranges(cls, v: list[str]) -> list[str]:
        for r in v:
            try:
                CellRange(r)
            except (ValueError, TypeError):
                raise ValueError(f"expected a cell range like 'A1:B6', actual {r!r}") from None
        return v


class SheetFuzzy(_PairRule):
    type: Literal["sheet_fuzzy"]
    rules: list[FuzzyRule]


class Freeze(_PairRule):
    type: Literal["freeze"]


class Zoom(_Rule):
    type: Literal["zoom"]
    sheet_idx: SheetIdx
    method: str
    ref: Any

    @property
    def rule(self) -> ValueRule:
        return ValueRule(method=self.method, ref=self.ref)

    @field_validator("method")
    @classmethod
    def _method(cls, v: str) -> str:
        ValueRule(method=v)
        return v


_STYLES = frozenset({"number_format", "font_name", "font_family", "font_color", "font_bold", "font_italic",
                     "font_underline", "font_size", "fill_type", "bgcolor", "fgcolor", "hyperlink", "merge"})


class CheckCell(_Rule):
    type: Literal["check_cell"]
    sheet_idx: SheetIdx
    coordinate: str
    props: dict[str, ValueRule]

    @field_validator("coordinate")
    @classmethod
    def _coordinate(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Z]{1,3}[1-9]\d*", v):
            raise ValueError(f"expected a cell like 'E3', actual {v!r}")
        return v

    @field_validator("props")
    @classmethod
    def _props(cls, v: dict[str, ValueRule]) -> dict[str, ValueRule]:
        bad = sorted(set(v) - _STYLES - {"value"})
        if bad:
            raise ValueError(f"unknown cell properties {bad}: expected value or {', '.join(sorted(_STYLES))}")
        return v


# ``ranges`` is openpyxl's other name for ``sqref`` (the cells a validation covers, a MultiCellRange).
_DV_ATTRS = frozenset({"sqref", "ranges", "type", "formula1", "formula2", "operator", "allowBlank", "showDropDown",
                       "showInputMessage", "showErrorMessage", "error", "errorTitle", "errorStyle", "prompt",
                       "promptTitle", "imeMode"})


class DataValidation(_Rule):
    type: Literal["data_validation"]
    sheet_idx: SheetIdx
    dv_props: list[dict[str, ValueRule]]

    @field_validator("dv_props")
    @classmethod
    def _attrs(cls, v: list[dict[str, ValueRule]]) -> list[dict[str, ValueRule]]:
        bad = sorted({a for props in v for a in props} - _DV_ATTRS)
        if bad:
            raise ValueError(f"unknown data-validation attributes {bad}: expected {', '.join(sorted(_DV_ATTRS))}")
        return v


_DIM_PROPS = frozenset({"hidden", "height", "width", "outlineLevel", "outline_level", "collapsed", "customHeight",
                        "customWidth", "bestFit", "ht", "thickBot", "thickTop"})


class Dimensions(_PairRule):
    type: Literal["row_props", "col_props"]
    props: list[str] = Field(default_factory=list)

    @field_validator("props")
    @classmethod
    def _props(cls, v: list[str]) -> list[str]:
        bad = sorted(set(v) - _DIM_PROPS)
        if bad:
            raise ValueError(f"unknown row/column properties {bad}: expected {', '.join(sorted(_DIM_PROPS))}")
        return v


_CHART_PROPS = frozenset({"title", "legend", "anchor", "width", "height", "type", "direction", "xtitle", "ytitle",
                          "ztitle"})


class Chart(_PairRule):
    type: Literal["chart"]
    chart_props: list[str] = Field(default_factory=list)

    @field_validator("chart_props")
    @classmethod
    def _props(cls, v: list[str]) -> list[str]:
        bad = sorted(set(v) - _CHART_PROPS)
        if bad:
            raise ValueError(f"unknown chart properties {bad}: expected {', '.join(sorted(_CHART_PROPS))}")
        return v


class Filter(_PairRule):
    type: Literal["filter"]


class Sparkline(_PairRule):
    type: Literal["sparkline"]


class Style(_PairRule):
    type: Literal["style"]
    props: list[str] = Field(default_factory=list)

    @field_validator("props")
    @classmethod
    def _props(cls, v: list[str]) -> list[str]:
        bad = sorted(set(v) - _STYLES)
        if bad:
            raise ValueError(f"unknown style properties {bad}: expected {', '.join(sorted(_STYLES))}")
        return v


# What OSWorld can read of a pivot table; ``ordered`` and ``data_fields_name`` refine ``selection`` and
# ``data_fields`` (see :mod:`._pivot`).
PIVOT_PROPS = frozenset({"name", "show_total", "show_empty_row", "show_empty_col", "show_headers", "location",
                         "selection", "ordered", "filter", "col_fields", "row_fields", "data_fields",
                         "data_fields_name"})


class PivotTable(_PairRule):
    type: Literal["pivot_table"]
    pivot_props: list[str] = Field(default_factory=list)

    @field_validator("pivot_props")
    @classmethod
    def _props(cls, v: list[str]) -> list[str]:
        bad = sorted(set(v) - PIVOT_PROPS)
        if bad:
            raise ValueError(f"unknown pivot-table properties {bad}: expected {', '.join(sorted(PIVOT_PROPS))}")
        return v


TableRule = Annotated[SheetName | SheetData | SheetPrint | SheetFuzzy | Freeze | Zoom | CheckCell | DataValidation
                      | Dimensions | Chart | Filter | Style | Sparkline | PivotTable, Field(discriminator="type")]


class TableOptions(BaseModel):
    """``compare_table``'s options: the rules, checked in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rules: list[TableRule] = Field(min_length=1)
