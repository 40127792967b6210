"""Workbooks generated for the spreadsheet metric tests: ``book`` writes one, and each tweak changes one thing in it
(a cell, a font, frozen panes, zoom, a validation, a hidden row, a chart, a filter, a conditional format, a fill);
``sparklined`` adds the sparklines openpyxl cannot write."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
from openpyxl.chart import BarChart, LineChart, Reference
from openpyxl.drawing.spreadsheet_drawing import AnchorMarker, TwoCellAnchor
from openpyxl.formatting.rule import CellIsRule
from openpyxl.styles import Font, PatternFill
from openpyxl.utils import coordinate_to_tuple
from openpyxl.worksheet.datavalidation import DataValidation

ROWS = [["Name", "Qty", "Price"], ["apple", 3, 1.25], ["pear", 5, 0.8], ["plum", 2, 2.5]]


def book(path: Path, rows: list[list[Any]] = ROWS, sheets: tuple[str, ...] = ("Sheet1",),
         tweak: Callable[[openpyxl.Workbook], None] | None = None) -> str:
    """A workbook whose first sheet holds ``rows``; ``tweak`` edits it before saving."""
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.title = sheets[0]
    for row in rows:
        ws.append(row)
    for name in sheets[1:]:
        wb.create_sheet(name).append(["other"])
    if tweak is not None:
        tweak(wb)
    wb.save(path)
    return str(path)


def edit(cell: str, value: Any) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0][cell] = value
    return change


def bold(cell: str) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0][cell].font = Font(bold=True, name="Arial", size=14)
    return change


def freeze(at: str | None) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0].freeze_panes = at
    return change


def zoom(scale: int) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0].sheet_view.zoomScale = scale
    return change


def validation(formula: str, cells: str = "D2:D10") -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        dv = DataValidation(type="list", formula1=formula, allow_blank=True)
        dv.add(cells)
        wb.worksheets[0].add_data_validation(dv)
    return change


def hide_row(n: int) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0].row_dimensions[n].hidden = True
    return change


def chart(kind: str = "bar", title: str = "Stock", col: int = 2, at: str = "E2",
          direction: str = "col") -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        ws = wb.worksheets[0]
        ch = BarChart() if kind == "bar" else LineChart()
        if kind == "bar":
            ch.type = direction
        ch.title = title
        ch.x_axis.title = "Fruit"
        ch.add_data(Reference(ws, min_col=col, min_row=1, max_row=4), titles_from_data=True)
        ch.set_categories(Reference(ws, min_col=1, min_row=2, max_row=4))
        # A two-cell anchor, as LibreOffice saves charts (OSWorld cannot read openpyxl's default one-cell anchor).
        col0, row0 = coordinate_to_tuple(at)[1] - 1, coordinate_to_tuple(at)[0] - 1
        ch.anchor = TwoCellAnchor(editAs="oneCell", _from=AnchorMarker(col=col0, row=row0),
                                  to=AnchorMarker(col=col0 + 6, row=row0 + 12))
        ws.add_chart(ch)
    return change


def auto_filter(values: tuple[str, ...] = ("apple",), sort_desc: bool = False) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        ws = wb.worksheets[0]
        ws.auto_filter.ref = "A1:C4"
        ws.auto_filter.add_filter_column(0, list(values))
        ws.auto_filter.add_sort_condition("B2:B4", descending=sort_desc)
    return change


def highlight(op: str = "greaterThan", formula: str = "3", rgb: str = "FFFF0000",
              where: str = "B2:B4") -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0].conditional_formatting.add(
            where, CellIsRule(operator=op, formula=[formula], fill=PatternFill(bgColor=rgb), font=Font(bold=True)))
    return change


def paint(cell: str, rgb: str) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0][cell].fill = PatternFill(fill_type="solid", fgColor=rgb)
    return change


def both(*changes: Callable[[openpyxl.Workbook], None]) -> Callable[[openpyxl.Workbook], None]:
    def change(wb: openpyxl.Workbook) -> None:
        for c in changes:
            c(wb)
    return change


SPARK = ('<extLst><ext uri="{{05C60535-1F16-4fd2-B633-F4F36F0B64E0}}" '
         'xmlns:x14="http://schemas.microsoft.com/office/spreadsheetml/2009/9/main">'
         '<x14:sparklineGroups xmlns:xm="http://schemas.microsoft.com/office/excel/2006/main"><x14:sparklineGroup>'
         '<x14:sparklines>{}</x14:sparklines></x14:sparklineGroup></x14:sparklineGroups></ext></extLst>')


def sparklined(path: Path, lines: dict[str, str]) -> str:
    """A workbook whose first sheet has sparklines, cell -> data range (openpyxl cannot write them)."""
    book(path)
    with zipfile.ZipFile(path) as z:
        parts = {i.filename: z.read(i.filename) for i in z.infolist()}
    if lines:
        xml = "".join(f"<x14:sparkline><xm:f>{f}</xm:f><xm:sqref>{c}</xm:sqref></x14:sparkline>"
                      for c, f in lines.items())
        sheet = parts["xl/worksheets/sheet1.xml"].decode()
        parts["xl/worksheets/sheet1.xml"] = sheet.replace("</worksheet>", SPARK.format(xml) + "</worksheet>").encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts.items():
            z.writestr(name, data)
    return str(path)
