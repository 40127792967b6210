"""The pivot tables of a sheet, as the ``pivot_table`` rule compares them (OSWorld's ``load_pivot_tables``).

A sheet's pivot tables are keyed by their data source: the source type, the first and last cell of
the source range as ``(row, column)`` and the source sheet. Two pivot tables over the same source on
one sheet count once (the later wins), as in OSWorld.

Fields at either end of the source that show no items (no row, column or filter use) are cut off:
the source range narrows by as many columns, and row, column and data fields are numbered from the
first field kept. So a pivot table over ``A1:E9`` that leaves column A unused equals one over
``B1:E9``. Filter fields keep their plain numbers (OSWorld does not shift them).

Properties (``pivot_props``), each read only when named:

- ``name``; ``show_total``, ``show_empty_row``, ``show_empty_col``, ``show_headers`` (flags);
  ``location`` (where the table sits on the sheet).
- ``row_fields``, ``col_fields``: the fields on each axis, in order.
- ``data_fields``: per data field its field, how it is summarised (``sum``, ``count``...) and shown
  (``normal``, ``percentOfTotal``...), and its caption too with ``data_fields_name``.
- ``filter``: the filter (page) fields, and the item selection as ``selection`` gives it.
- ``selection``: per field the items it lists, each ``(hidden, index)``; as sets, or in order with
  ``ordered``.
"""

from __future__ import annotations

from typing import Any

from openpyxl.pivot.table import TableDefinition
from openpyxl.worksheet.cell_range import CellRange
from openpyxl.worksheet.worksheet import Worksheet

Source = tuple[Any, ...]


def pivot_tables(ws: Worksheet, props: frozenset[str]) -> dict[Source, dict[str, Any]]:
    """The pivot tables on ``ws`` by data source, each with the properties ``props`` names (module docstring)."""
    tables: list[TableDefinition] = getattr(ws, "_pivots", [])  # openpyxl keeps the pivot tables it read here
    return dict(_read(pt, props) for pt in tables)


def _read(pt: TableDefinition, props: frozenset[str]) -> tuple[Source, dict[str, Any]]:
    shown = [[(item.h, item.x) for item in f.items if item.x is not None] for f in pt.pivotFields]
    left = next((i for i, items in enumerate(shown) if items), len(shown))
    kept = shown[left:]
    right = next((i for i, items in enumerate(reversed(kept)) if items), len(kept))
    selection = kept[:len(kept) - right]
    info: dict[str, Any] = {}
    if "name" in props:
        info["name"] = pt.name
    for prop, attr in (("show_total", "visualTotals"), ("show_empty_row", "showEmptyRow"),
                       ("show_empty_col", "showEmptyCol"), ("show_headers", "showHeaders")):
        if prop in props:
            info[prop] = getattr(pt, attr)
    if "location" in props:
        loc = pt.location
        info["location"] = None if loc is None else (loc.ref, loc.firstHeaderRow, loc.firstDataRow, loc.firstDataCol,
                                                     loc.rowPageCount, loc.colPageCount)
    if "filter" in props or "selection" in props:
        info["selection"] = selection if "ordered" in props else [set(items) for items in selection]
    if "filter" in props:
        info["filter_fields"] = {f.fld for f in pt.pageFields}
    if "col_fields" in props:
        info["col_fields"] = [f.x - left for f in pt.colFields]
    if "row_fields" in props:
        info["row_fields"] = [f.x - left for f in pt.rowFields]
    if "data_fields" in props:
        info["data_fields"] = [(f.fld - left, f.name if "data_fields_name" in props else "", f.subtotal, f.showDataAs)
                               for f in pt.dataFields]
    return _source(pt, left, right), info


def _source(pt: TableDefinition, left: int, right: int) -> Source:
    """The data source, its range narrowed by the unused fields at either end.

    A source OSWorld cannot read (a named range, another workbook, a consolidation: OSWorld raises)
    is keyed by what it names instead.
    """
    src = pt.cache.cacheSource if pt.cache is not None else None
    if src is None:
        return (None,)
    ws = src.worksheetSource
    if ws is None or ws.ref is None:
        return (src.type, None, None, getattr(ws, "name", None), getattr(ws, "sheet", None))
    try:
        rng = CellRange(ws.ref)
    except (ValueError, TypeError):
        return (src.type, ws.ref, None, None, ws.sheet)
    return (src.type, (rng.min_row, rng.min_col + left), (rng.max_row, rng.max_col - right), None, ws.sheet)
