"""Workbooks with real pivot tables, for the ``pivot_table`` rule of ``compare_table``.

openpyxl has no API to make a pivot table, but it writes the ones it holds: a pivot table definition
and its cache definition attached to a sheet are saved as ``xl/pivotTables/*`` and
``xl/pivotCache/*`` parts, which openpyxl (so osgym and OSWorld alike) reads back. No pivot cache
records are written, so the tables are not refreshed data, only definitions, which is all the rule reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import openpyxl
from openpyxl.pivot.cache import CacheDefinition, CacheField, CacheSource, SharedItems, WorksheetSource
from openpyxl.pivot.fields import Text
from openpyxl.pivot.table import DataField, FieldItem, Location, PageField, PivotField, RowColField, TableDefinition
from openpyxl.utils import get_column_letter
from openpyxl.worksheet.cell_range import CellRange

SALES = [["Region", "Fruit", "Qty", "Price"], ["north", "apple", 3, 1.25], ["south", "pear", 5, 0.8],
         ["north", "plum", 2, 2.5], ["east", "apple", 4, 1.1], ["south", "plum", 1, 2.4], ["east", "pear", 6, 0.9]]


@dataclass(frozen=True)
class Pivot:
    """A pivot table over ``SALES``; fields are numbered from the first column of ``source``."""

    rows: tuple[int, ...] = (0,)
    cols: tuple[int, ...] = (1,)
    data: tuple[tuple[int, str], ...] = ((2, "sum"),)
    """(field, how it is summarised)"""
    page: tuple[int, ...] = ()
    hidden: tuple[tuple[int, int], ...] = ()
    """(field, item) pairs hidden by the table's filters"""
    reversed_items: tuple[int, ...] = ()
    """fields whose items are listed last to first"""
    source: str = "A1:D7"
    source_sheet: str = "Sheet1"
    named_source: str | None = None
    """a defined name as the source instead of ``source``"""
    name: str = "PivotTable1"
    data_name: str = "Sum - Qty"
    show_data_as: str = "normal"
    at: str = "F1"


def _cache(p: Pivot) -> CacheDefinition:
    rng = CellRange(p.source)
    fields = []
    for col in range(rng.min_col, rng.max_col + 1):
        values = [row[col - 1] for row in SALES[1:]]
        if all(isinstance(v, str) for v in values):
            unique = list(dict.fromkeys(values))
            items = SharedItems(_fields=[Text(v=u) for u in unique], count=len(unique))
        else:
            items = SharedItems(containsSemiMixedTypes=False, containsString=False, containsNumber=True,
                                minValue=min(values), maxValue=max(values))
        fields.append(CacheField(name=str(SALES[0][col - 1]), sharedItems=items))
    where = (WorksheetSource(name=p.named_source) if p.named_source is not None
             else WorksheetSource(ref=p.source, sheet=p.source_sheet))
    return CacheDefinition(cacheSource=CacheSource(type="worksheet", worksheetSource=where), cacheFields=fields,
                           refreshOnLoad=True)


def _table(p: Pivot, cache: CacheDefinition, cache_id: int) -> TableDefinition:
    on_axis = {**dict.fromkeys(p.rows, "axisRow"), **dict.fromkeys(p.cols, "axisCol"),
               **dict.fromkeys(p.page, "axisPage")}
    data_fields = {f for f, _ in p.data}
    fields = []
    for i, cf in enumerate(cache.cacheFields):
        axis = on_axis.get(i)
        items = []
        if axis is not None:
            order = range(len(cf.sharedItems._fields))
            for x in reversed(order) if i in p.reversed_items else order:
                items.append(FieldItem(x=x, h=True if (i, x) in p.hidden else None))
            items.append(FieldItem(t="default"))
        fields.append(PivotField(axis=axis, items=items, dataField=True if i in data_fields else None))
    top = CellRange(p.at)
    loc = Location(ref=f"{p.at}:{get_column_letter(top.min_col + 4)}{top.min_row + 5}",
                   firstHeaderRow=1, firstDataRow=2, firstDataCol=1)
    table = TableDefinition(
        name=p.name, cacheId=cache_id, dataCaption="Values", location=loc, pivotFields=fields,
        rowFields=[RowColField(x=f) for f in p.rows], colFields=[RowColField(x=f) for f in p.cols],
        pageFields=[PageField(fld=f, hier=-1) for f in p.page],
        dataFields=[DataField(name=p.data_name, fld=f, subtotal=how, showDataAs=p.show_data_as) for f, how in p.data])
    table.cache = cache
    return table


def pivots(*tables: Pivot, sheet: int = 0) -> Callable[[openpyxl.Workbook], None]:
    """A workbook tweak: SALES-sourced pivot tables on the workbook's ``sheet``-th sheet."""
    def change(wb: openpyxl.Workbook) -> None:
        taken = sum(len(ws._pivots) for ws in wb.worksheets)  # cache ids are numbered over the workbook
        for i, p in enumerate(tables, start=taken + 1):
            wb.worksheets[sheet]._pivots.append(_table(p, _cache(p), i))
    return change
