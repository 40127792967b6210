"""Spreadsheet and CSV metrics, after OSWorld's ``compare_table`` and ``compare_csv``.

``compare_table`` reads the agent's workbook (``result``) and, when given, a golden one
(``expected``), then checks ``options.rules`` in order; the score is 1.0 only if every rule passes.
A rule names sheets as OSWorld does: an ``int`` or ``"RI<n>"`` is the n-th sheet of the result,
``"RN<name>"`` the result's sheet by name, ``"EI<n>"`` / ``"EN<name>"`` the expected workbook's.

Rule types (``type``):

- ``sheet_name``: both workbooks have the same sheet names in the same order.
- ``sheet_data``: two sheets hold the same table (pandas, first row as header), numbers rounded to
  ``precision`` decimals (default 4).
- ``sheet_print``: two sheets print the same: the ``<book>-<sheet>.csv`` files exported beside each
  workbook have the same lines, trailing blank lines dropped (``ignore_case`` optional).
- ``sheet_fuzzy``: cell by cell over ranges, after optional normalisation, one sheet's text
  ``includes``, is ``included_by``, ``exact_match``-es or ``fuzzy_match``-es (rapidfuzz ratio >=
  ``threshold``) the other's.
- ``freeze``: two sheets have the same frozen panes.
- ``zoom``: a sheet's zoom (100 when unset) passes a value rule (see :mod:`.rules`).
- ``check_cell``: a cell's ``value`` and style properties each pass a value rule.
- ``data_validation``: every data validation of a sheet matches one of ``dv_props``, and there are at
  least as many validations as entries in ``dv_props``.
- ``row_props`` / ``col_props``: two sheets' row or column dimensions agree on ``props``.
- ``chart``: two sheets have charts over the same data ranges, agreeing on ``chart_props``
  (``title legend anchor width height type direction xtitle ytitle ztitle``).
- ``filter``: two sheets have the same auto-filter: range, filtered columns and sort state.
- ``style``: every cell of two sheets agrees on the style properties ``props`` (those of
  ``check_cell``), as shown: a cell that a conditional format highlights takes that format's style.
  Conditional formats of type ``cellIs`` comparing with a number or a quoted text are evaluated;
  any other kind raises ``ValueError`` when the rule is checked (OSWorld evaluates formulas with a
  spreadsheet engine).

- ``sparkline``: two sheets have the same sparklines (each cell's sparkline and its data range).

The rule type OSWorld also knows, ``pivot_table``, is not implemented: a task using it fails to load,
naming the rule type.

Cell values are read as OSWorld reads them from the file: the value the spreadsheet program last
computed (not the formula), numbers and dates as floats (dates as Excel serial numbers). Where
OSWorld's reader fails, these read something comparable instead: booleans read as ``True``/``False``
(OSWorld: nothing), a chart's one-cell anchor as ``None`` parts (OSWorld raises), a hyperlink as its
target (OSWorld: an object no rule can match).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
import warnings
import zipfile
from collections.abc import Iterator
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal
from xml.etree import ElementTree

import openpyxl
import pandas as pd
from openpyxl.cell.cell import MergedCell
from openpyxl.utils import get_column_letter
from openpyxl.utils.datetime import to_excel
from openpyxl.utils.exceptions import InvalidFileException
from openpyxl.worksheet.cell_range import CellRange, MultiCellRange
from openpyxl.worksheet.worksheet import Worksheet
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, field_validator
from rapidfuzz import fuzz

from osgym.tasks.metrics import metric
from osgym.tasks.metrics._files import too_big
from osgym.tasks.metrics.rules import ValueRule

__all__ = ["CsvOptions", "TableOptions", "compare_conference_city_in_order", "compare_csv", "compare_table"]

_SHEET_IDX = re.compile(r"^(RI\d+|EI\d+|RN.+|EN.+)$")
# Errors a damaged or foreign file raises while openpyxl or pandas read it.
_UNREADABLE = (OSError, zipfile.BadZipFile, InvalidFileException, KeyError, ValueError, TypeError)

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


_DV_ATTRS = frozenset({"sqref", "type", "formula1", "formula2", "operator", "allowBlank", "showDropDown",
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


TableRule = Annotated[SheetName | SheetData | SheetPrint | SheetFuzzy | Freeze | Zoom | CheckCell | DataValidation
                      | Dimensions | Chart | Filter | Style | Sparkline, Field(discriminator="type")]


class TableOptions(BaseModel):
    """``compare_table``'s options: the rules, checked in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    rules: list[TableRule] = Field(min_length=1)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """openpyxl warns that it drops parts it cannot model (sparklines, slicers); reading, we don't mind."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*extension is not supported", category=UserWarning)
        yield


class _Book:
    """One workbook file, each view of it read once: formulas and styles, computed values, pandas frames."""

    def __init__(self, path: str):
        """Raises what openpyxl raises on a file that is not a workbook (see ``_UNREADABLE``)."""
        self.path = path
        with _quiet():
            self.styled = openpyxl.load_workbook(path)
        self.names: list[str] = list(self.styled.sheetnames)

    @cached_property
    def computed(self) -> openpyxl.Workbook:
        with _quiet():
            return openpyxl.load_workbook(self.path, data_only=True)

    def frame(self, sheet: str) -> pd.DataFrame:
        with _quiet():
            return pd.read_excel(self.path, sheet_name=sheet, engine="openpyxl")

    def value(self, sheet: str, coordinate: str) -> Any:
        """The computed value of a cell as OSWorld reads it: floats for numbers and dates, else the text."""
        v = self.computed[sheet][coordinate].value
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return v
        if isinstance(v, dt.datetime | dt.date | dt.time | dt.timedelta):
            return float(to_excel(v))  # type: ignore[no-untyped-call]
        return float(v)

    def printed(self, sheet: str) -> list[str] | None:
        """The lines of the sheet's CSV export beside the workbook, stripped, trailing blank lines dropped."""
        csv = Path(f"{Path(self.path).with_suffix('')}-{sheet}.csv")
        try:
            lines = [line.strip() for line in _read_text(csv).splitlines()]
        except OSError:
            return None
        while lines and not lines[-1]:
            lines.pop()
        return lines


def _read_text(path: Path) -> str:
    """UTF-8 text, else Latin-1 (which reads any bytes), as OSWorld's CSV reader falls back."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


class _Pair:
    """The result and expected workbooks, and OSWorld's sheet-index notation over them."""

    def __init__(self, result: _Book, expected: _Book | None):
        self.result, self.expected = result, expected

    def sheet(self, idx: int | str) -> tuple[_Book, str] | None:
        """The workbook and sheet name ``idx`` names, or None if there is no such sheet.

        Raises:
            ValueError: if ``idx`` names the expected workbook and the task gives none.
        """
        book: _Book | None = self.result
        key: int | str = idx
        if isinstance(idx, str):
            book = self.result if idx[0] == "R" else self.expected
            key = int(idx[2:]) if idx[1] == "I" else idx[2:]
        if book is None:
            raise ValueError(f"sheet {idx!r} is in the expected workbook, but the task gives no expected file")
        names = book.names
        if isinstance(key, int):
            return (book, names[key]) if key < len(names) else None
        return (book, key) if key in names else None


def _fuzzy_cell(rule: FuzzyRule, a: str, b: str) -> bool:
    for old, new in rule.normalization:
        a, b = a.replace(old, new), b.replace(old, new)
    if rule.trim_leadings is not None:
        a, b = a.lstrip(rule.trim_leadings), b.lstrip(rule.trim_leadings)
    if rule.trim_trailings is not None:
        a, b = a.rstrip(rule.trim_trailings), b.rstrip(rule.trim_trailings)
    if rule.ignore_chars:
        drop = set(rule.ignore_chars)
        a, b = "".join(c for c in a if c not in drop), "".join(c for c in b if c not in drop)
    if rule.ignore_case:
        a, b = a.lower(), b.lower()
    if rule.type == "includes":
        return b in a
    if rule.type == "included_by":
        return a in b
    if rule.type == "fuzzy_match":
        return fuzz.ratio(a, b) >= rule.threshold
    return a == b


def _style(cell: Any, prop: str, dxf: Any = None) -> Any:
    """A cell's style property, None for an empty cell (as OSWorld reads it).

    With ``dxf`` (a conditional format's style) the property is read from it instead, where it has one.
    """
    if prop == "merge":
        return isinstance(cell, MergedCell)
    if prop == "fill_type":
        return getattr((dxf or cell).fill, "tagname", None)
    if prop in ("bgcolor", "fgcolor"):
        if dxf is not None:
            return getattr(getattr(dxf.fill, "bgColor", None), "rgb", None)
        return getattr(cell.fill.fgColor, "rgb", None)
    if cell.value is None:
        return None
    if prop == "number_format":
        if cell.data_type != "n":
            return None
        return cell.number_format if dxf is None else getattr(dxf.numFmt, "formatCode", None)
    if prop == "hyperlink":
        return cell.hyperlink.target if cell.hyperlink is not None else ""
    font = (dxf or cell).font
    if prop == "font_color":
        return getattr(getattr(font, "color", None), "rgb", None)
    return getattr(font, prop.removeprefix("font_"), None)


_CELL_IS = {
    "lessThan": lambda v, r: v < r[0], "lessThanOrEqual": lambda v, r: v <= r[0], "equal": lambda v, r: v == r[0],
    "notEqual": lambda v, r: v != r[0], "greaterThan": lambda v, r: v > r[0],
    "greaterThanOrEqual": lambda v, r: v >= r[0], "between": lambda v, r: min(r) <= v <= max(r),
    "notBetween": lambda v, r: v < min(r) or v > max(r),
}


def _literal(formula: str) -> float | str:
    """A conditional format's constant: a number or a quoted text.

    Raises:
        ValueError: for anything else (a reference or a function), which osgym does not evaluate.
    """
    f = formula.strip()
    if len(f) >= 2 and f[0] == f[-1] == '"':
        return f[1:-1].replace('""', '"')
    try:
        return float(f)
    except ValueError:
        raise ValueError(f"conditional format formula {formula!r}: only numbers and quoted texts are evaluated"
                         ) from None


def _styles(book: _Book, sheet: str, rule: Style) -> dict[str, list[Any]]:
    """Each cell's style properties as shown, conditional formats applied."""
    ws: Worksheet = book.styled[sheet]
    out = {c.coordinate: [_style(c, p) for p in rule.props] for col in ws.iter_cols() for c in col}
    for fmt in ws.conditional_formatting:
        for cf in fmt.rules:
            test = _CELL_IS.get(cf.operator or "") if cf.type == "cellIs" else None
            if test is None:
                raise ValueError(f"conditional format of type {cf.type!r} ({cf.operator!r}) on {sheet}!{fmt.sqref}: "
                                 "only 'cellIs' comparisons are evaluated")
            refs = [_literal(f) for f in cf.formula]
            for rng in fmt.cells:
                for coordinate in _coordinates(rng):
                    value = book.value(sheet, coordinate)
                    try:
                        active = value is not None and bool(test(value, refs))
                    except (TypeError, IndexError):  # a text against a number: not highlighted
                        active = False
                    if active:
                        out[coordinate] = [_style(ws[coordinate], p, cf.dxf) for p in rule.props]
    return out


def _dimensions(book: _Book, sheet: str, rule: Dimensions) -> dict[Any, dict[str, Any]]:
    ws: Worksheet = book.styled[sheet]
    dims = ws.row_dimensions if rule.type == "row_props" else ws.column_dimensions
    return {key: {p: getattr(d, p) for p in rule.props} for key, d in dims.items()}


def _ref(data: Any) -> str:
    """The formula of a series' values or categories (``Sheet1!$B$2:$B$4``), or ``""``."""
    for kind in ("numRef", "strRef"):
        ref = getattr(data, kind, None)
        if ref is not None and getattr(ref, "f", None) is not None:
            return str(ref.f)
    return ""


def _title(title: Any) -> Any:
    try:
        return title.tx.rich.p[0].r[0].t
    except (AttributeError, IndexError, TypeError):
        return None


def _chart_prop(ch: Any, prop: str) -> Any:
    """One chart property as OSWorld reads it (None where the chart has no such thing)."""
    if prop == "title":
        return _title(ch.title)
    if prop == "legend":
        return ch.legend.position if ch.legend is not None else None
    if prop == "anchor":  # OSWorld's list: the anchor kind, the start column, then end row, column and row again
        to = getattr(ch.anchor, "to", None)
        start = getattr(ch.anchor, "_from", None)
        return [getattr(ch.anchor, "editAs", None), getattr(start, "col", None), getattr(to, "row", None),
                getattr(to, "col", None), getattr(to, "row", None)]
    if prop == "type":
        return ch.tagname
    if prop == "direction":
        return getattr(ch, "barDir", None)
    if prop in ("xtitle", "ytitle", "ztitle"):
        return _title(getattr(getattr(ch, f"{prop[0]}_axis", None), "title", None))
    return getattr(ch, prop)  # width, height


def _charts(book: _Book, sheet: str, rule: Chart) -> dict[str, dict[str, Any]]:
    """Each chart keyed by its series' data ranges, with the properties the rule names."""
    charts: list[Any] = getattr(book.styled[sheet], "_charts", [])  # openpyxl keeps the charts it read here
    return {";".join(f"{_ref(s.val)},{_ref(s.cat)}" for s in ch.series):
            {p: _chart_prop(ch, p) for p in rule.chart_props} for ch in charts}


def _filters(book: _Book, sheet: str) -> dict[str, Any]:
    """The sheet's auto-filter: its range, its filtered columns (by column) and its sort state."""
    af = book.styled[sheet].auto_filter
    columns = []
    for fc in af.filterColumn:
        col: dict[str, Any] = {"col_id": fc.colId, "hidden_button": fc.hiddenButton, "show_button": fc.showButton}
        if fc.filters is not None:
            col["filters_blank"] = fc.filters.blank
            col["filters"] = set(fc.filters.filter)
        if fc.customFilters is not None:
            col["custom_filters_op"] = fc.customFilters._and
            col["custom_filters"] = {(f.operator, f.val) for f in fc.customFilters.customFilter}
        columns.append(col)
    out: dict[str, Any] = {"ref": af.ref, "filter_column": sorted(columns, key=lambda c: c["col_id"])}
    ss = af.sortState
    if ss is not None:
        out["sort_state"] = {
            "sort": ss.columnSort, "case": ss.caseSensitive, "method": ss.sortMethod, "ref": ss.ref,
            "condition": [{"descending": c.descending, "key": c.sortBy, "ref": c.ref, "custom_list": c.customList,
                           "dxf_id": c.dxfId, "icon": c.iconSet, "iconid": c.iconId} for c in ss.sortCondition]}
    return out


_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_X14 = "http://schemas.microsoft.com/office/spreadsheetml/2009/9/main"
_XM = "http://schemas.microsoft.com/office/excel/2006/main"


def _sparklines(book: _Book, sheet: str) -> dict[str | None, str | None]:
    """The sheet's sparklines, cell (``F3``) to data range (``Sheet1!C3:E3``); openpyxl drops them, so
    they are read from the sheet's XML, found through the workbook's relationships."""
    with zipfile.ZipFile(book.path) as z:
        wb = ElementTree.fromstring(z.read("xl/workbook.xml"))
        rels = ElementTree.fromstring(z.read("xl/_rels/workbook.xml.rels"))
        rid = next((s.get(f"{{{_REL}}}id") for s in wb.iter(f"{{{_MAIN}}}sheet") if s.get("name") == sheet), None)
        target = next((r.get("Target") for r in rels.iter(f"{{{_PKG_REL}}}Relationship") if r.get("Id") == rid), None)
        if target is None:
            return {}
        name = target.lstrip("/") if target.startswith("/") else f"xl/{target}"
        root = ElementTree.fromstring(z.read(name))
    return {sp.findtext(f"{{{_XM}}}sqref"): sp.findtext(f"{{{_XM}}}f") for sp in root.iter(f"{{{_X14}}}sparkline")}


def _passes(rule: Any, pair: _Pair) -> bool:
    if isinstance(rule, SheetName):
        return pair.expected is not None and pair.result.names == pair.expected.names
    if isinstance(rule, Zoom | CheckCell | DataValidation):
        where = pair.sheet(rule.sheet_idx)
        if where is None:
            return False
        book, name = where
        ws: Worksheet = book.styled[name]
        if isinstance(rule, Zoom):
            return rule.rule.matches(ws.sheet_view.zoomScale or 100.0)
        if isinstance(rule, CheckCell):
            cell = ws[rule.coordinate]
            return all(r.matches(book.value(name, rule.coordinate) if p == "value" else _style(cell, p))
                       for p, r in rule.props.items())
        found = ws.data_validations.dataValidation
        return len(found) >= len(rule.dv_props) and all(
            any(all(r.matches(getattr(v, a)) for a, r in props.items()) for props in rule.dv_props) for v in found)
    a, b = pair.sheet(rule.sheet_idx0), pair.sheet(rule.sheet_idx1)
    if a is None or b is None:
        return False
    (book1, sheet1), (book2, sheet2) = a, b
    if isinstance(rule, SheetData):
        return bool(book1.frame(sheet1).round(rule.precision).equals(book2.frame(sheet2).round(rule.precision)))
    if isinstance(rule, SheetPrint):
        p1, p2 = book1.printed(sheet1), book2.printed(sheet2)
        if p1 is None or p2 is None:
            return False
        if rule.ignore_case:
            p1, p2 = [s.lower() for s in p1], [s.lower() for s in p2]
        return p1 == p2
    if isinstance(rule, SheetFuzzy):
        return all(_fuzzy_cell(fr, str(book1.value(sheet1, c)), str(book2.value(sheet2, c)))
                   for fr in rule.rules for rng in MultiCellRange(fr.range) for c in _coordinates(rng))
    if isinstance(rule, Freeze):
        return bool(book1.styled[sheet1].freeze_panes == book2.styled[sheet2].freeze_panes)
    if isinstance(rule, Chart):
        return _charts(book1, sheet1, rule) == _charts(book2, sheet2, rule)
    if isinstance(rule, Filter):
        return _filters(book1, sheet1) == _filters(book2, sheet2)
    if isinstance(rule, Style):
        return _styles(book1, sheet1, rule) == _styles(book2, sheet2, rule)
    if isinstance(rule, Sparkline):
        return _sparklines(book1, sheet1) == _sparklines(book2, sheet2)
    assert isinstance(rule, Dimensions)
    return _dimensions(book1, sheet1, rule) == _dimensions(book2, sheet2, rule)


def _coordinates(rng: CellRange) -> list[str]:
    return [f"{get_column_letter(col)}{row}" for row, col in rng.cells]


@metric("compare_table", TableOptions, files=True)
def compare_table(result: str | None, expected: str | None, options: TableOptions) -> float:
    """1.0 if the result workbook passes every rule (module docstring); 0.0 if missing, unreadable or too big.

    Raises:
        ValueError: if the expected workbook cannot be read, or a rule names it and the task gives none.
    """
    if result is None or not Path(result).is_file() or too_big(result):
        return 0.0
    try:
        book = _Book(result)
    except _UNREADABLE:
        return 0.0  # the agent left something that is not a workbook: a failed task, not a broken evaluator
    gold = None
    if expected is not None:
        try:
            gold = _Book(expected)
        except _UNREADABLE as exc:
            raise ValueError(f"expected workbook {expected} cannot be read: {exc}") from exc
    pair = _Pair(book, gold)
    return 1.0 if all(_passes(rule, pair) for rule in options.rules) else 0.0


class CsvOptions(BaseModel):
    """``strict`` (default true): compare lines as they are, else stripped; ``ignore_case``: lower-case both."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    strict: StrictBool = True
    ignore_case: StrictBool = False


@metric("compare_csv", CsvOptions, files=True)
def compare_csv(result: str | None, expected: str | list[str] | None, options: CsvOptions) -> float:
    """1.0 if the result CSV has the same lines as the expected file (or as any one of a list of them).

    Raises:
        ValueError: if no expected file is given.
    """
    if result is None:
        return 0.0
    if expected is None:
        raise ValueError("compare_csv needs an expected file")
    try:
        got = _csv_lines(result, options)
    except OSError:
        return 0.0
    for path in [expected] if isinstance(expected, str) else expected:
        try:
            if got == _csv_lines(path, options):
                return 1.0
        except OSError:
            continue  # OSWorld skips a missing alternative
    return 0.0


def _csv_lines(path: str, options: CsvOptions) -> list[str]:
    lines = _read_text(Path(path)).splitlines()
    if not options.strict:
        lines = [s.strip() for s in lines]
    if options.ignore_case:
        lines = [s.lower() for s in lines]
    return lines


class CityRules(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    expected: list[str | list[str]]


@metric("compare_conference_city_in_order", rules=CityRules, files=True)
def compare_conference_city_in_order(result: str | None, rules: dict[str, Any]) -> float:
    """1.0 if each of cells C2:C22 of the active sheet contains its expected city, in order.

    ``rules["expected"]`` lists one entry per cell: a text the cell must contain, or a list of texts
    of which it must contain one. A missing entry or an empty cell scores 0, as in OSWorld.
    """
    if result is None or too_big(result):
        return 0.0
    try:
        with _quiet():
            ws = openpyxl.load_workbook(result).active
    except _UNREADABLE:
        return 0.0
    if ws is None:
        return 0.0
    want = rules["expected"]
    got = [c.value for row in ws["C2:C22"] for c in row]
    if len(want) < len(got):
        return 0.0
    for cell, city in zip(got, want, strict=False):
        options = [city] if isinstance(city, str) else city if isinstance(city, list) else None
        if options is None or not isinstance(cell, str) or not any(o in cell for o in options):
            return 0.0
    return 1.0
