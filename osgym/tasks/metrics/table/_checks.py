"""How each ``compare_table`` rule reads its sheets and compares them (the rules: :mod:`.`)."""

from __future__ import annotations

import zipfile
from typing import Any
from xml.etree import ElementTree

from openpyxl.cell.cell import MergedCell
from openpyxl.worksheet.cell_range import MultiCellRange
from openpyxl.worksheet.worksheet import Worksheet
from rapidfuzz import fuzz

from osgym.tasks.metrics.table._book import Book, Pair, coordinates
from osgym.tasks.metrics.table._options import (
    Chart,
    CheckCell,
    DataValidation,
    Dimensions,
    Filter,
    Freeze,
    FuzzyRule,
    PivotTable,
    SheetData,
    SheetFuzzy,
    SheetName,
    SheetPrint,
    Sparkline,
    Style,
    TableRule,
    Zoom,
)
from osgym.tasks.metrics.table._pivot import pivot_tables


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


def _styles(book: Book, sheet: str, rule: Style) -> dict[str, list[Any]]:
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
                for coordinate in coordinates(rng):
                    value = book.value(sheet, coordinate)
                    try:
                        active = value is not None and bool(test(value, refs))
                    except (TypeError, IndexError):  # a text against a number: not highlighted
                        active = False
                    if active:
                        out[coordinate] = [_style(ws[coordinate], p, cf.dxf) for p in rule.props]
    return out


def _dimensions(book: Book, sheet: str, rule: Dimensions) -> dict[Any, dict[str, Any]]:
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


def _charts(book: Book, sheet: str, rule: Chart) -> dict[str, dict[str, Any]]:
    """Each chart keyed by its series' data ranges, with the properties the rule names."""
    charts: list[Any] = getattr(book.styled[sheet], "_charts", [])  # openpyxl keeps the charts it read here
    return {";".join(f"{_ref(s.val)},{_ref(s.cat)}" for s in ch.series):
            {p: _chart_prop(ch, p) for p in rule.chart_props} for ch in charts}


def _filters(book: Book, sheet: str) -> dict[str, Any]:
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


def _sparklines(book: Book, sheet: str) -> dict[str | None, str | None]:
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


def passes(rule: TableRule, pair: Pair) -> bool:
    """Whether ``pair`` passes ``rule`` (a sheet the rule names but the workbook lacks fails it)."""
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
                   for fr in rule.rules for rng in MultiCellRange(fr.range) for c in coordinates(rng))
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
    if isinstance(rule, PivotTable):
        props = frozenset(rule.pivot_props)
        return pivot_tables(book1.styled[sheet1], props) == pivot_tables(book2.styled[sheet2], props)
    assert isinstance(rule, Dimensions)
    return _dimensions(book1, sheet1, rule) == _dimensions(book2, sheet2, rule)
