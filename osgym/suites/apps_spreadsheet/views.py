"""apps-spreadsheet templates judged against an expected workbook: a chart over a range, frozen panes and
a standard filter.

``compare_table``'s ``chart``, ``freeze`` and ``filter`` rules compare the agent's sheet with a sheet of
an expected workbook, which the evaluator's postconfig writes into the replica after the agent has
finished. Only the chart (type, bar direction, series ranges), the panes or the auto-filter (range,
column, kept values) of that workbook matter to the rule, so it is built once per distinct chart, pane
or filter (cached) with openpyxl, its bytes fixed by ``fixed_zip``; ``check_cell`` rules beside it check
that the agent's table is still there.

LibreOffice 7.4 crashes when its accessibility tree is walked while a new chart is in edit mode (right
after the Chart Wizard closes), so the chart oracle reads no tree after the wizard (see its comment).
"""

from __future__ import annotations

import functools
import io
import random
from typing import Any

import openpyxl
from openpyxl.chart import AreaChart, BarChart, LineChart, PieChart
from openpyxl.chart.data_source import AxDataSource, NumDataSource, NumRef, StrRef
from openpyxl.chart.series import Series
from openpyxl.worksheet.filters import FilterColumn, Filters

from osgym.suites.app_files import write_files
from osgym.suites.apps_smoke.common import DONE, open_app, save_as, write_expected
from osgym.suites.apps_spreadsheet.calc import CALC, CITIES, DOCS, PEOPLE, PRODUCTS, _down, _ready, _right, _stem
from osgym.suites.generators import op, vm_file
from osgym.suites.office import cell, dialog_closed, fixed_zip, menu, xlsx_bytes

CHARTS = {
    # the instruction's name: (position in the Chart Wizard's type list, openpyxl's class, bar direction)
    "column": (0, BarChart, "col"),
    "bar": (1, BarChart, "bar"),
    "pie": (2, PieChart, None),
    "area": (3, AreaChart, None),
    "line": (4, LineChart, None),
}
SHEETS = ["Sheet1", "Sales", "Stock", "Data", "Report"]


def _saved(wb: openpyxl.Workbook) -> bytes:
    buf = io.BytesIO()
    wb.save(buf)
    return fixed_zip(buf.getvalue())


@functools.cache
def chart_book(kind: str, sheet: str, last: int) -> bytes:
    """A workbook whose sheet ``sheet`` has one chart of ``kind`` over B2:B``last``, categories A2:A``last``,
    written with the range formulas LibreOffice writes (``Sales!$B$2:$B$5``)."""
    _, cls, direction = CHARTS[kind]
    wb = openpyxl.Workbook()
    ws = wb.worksheets[0]
    ws.title = sheet
    chart = cls()
    if direction is not None:
        chart.type = direction
    # openpyxl's Series() factory would quote the sheet's name ('Sales'!$B$2:...)
    chart.series.append(Series(idx=0, order=0, val=NumDataSource(numRef=NumRef(f=f"{sheet}!$B$2:$B${last}")),
                               cat=AxDataSource(strRef=StrRef(f=f"{sheet}!$A$2:$A${last}"))))
    ws.add_chart(chart, "E2")
    return _saved(wb)


def sheet_insert_chart(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-chart.xlsx"
    kind = rng.choice(sorted(CHARTS))
    sheet = rng.choice(SHEETS)
    head = [rng.choice(["Item", "Product", "Article"]), rng.choice(["Sales", "Units", "Orders", "Revenue"]),
            rng.choice(["Shelf", "Aisle", "Bin"])]
    n = rng.randint(3, 8)
    items = rng.sample(PRODUCTS, n)
    rows: list[list[Any]] = [head, *([a, rng.randint(5, 999), rng.randint(1, 40)] for a in items)]
    last = n + 1
    postconfig, expected = write_expected(f"{stem}-chart.xlsx", chart_book(kind, sheet, last))
    rules = [cell("A2", items[0]), cell(f"B{last}", rows[-1][1]),
             {"type": "chart", "sheet_idx0": "RI0", "sheet_idx1": "EI0", "chart_props": ["type", "direction"]}]
    title, saved = f"{stem}.xlsx - {CALC}", f"{stem}-chart.xlsx - {CALC}"
    position = CHARTS[kind][0]
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Insert a {kind} chart of "
                       f"the {head[1]} column with the {head[0]} names as categories (the range A1:B{last}, first "
                       f"row as labels, series in columns) and leave the {head[2]} column out of it. Save the "
                       f"workbook in Excel format as ~/Documents/{stem}-chart.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes(rows, sheet)}), *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": {"func": "compare_table", "result": vm_file(out), "expected": vm_file(expected, "expected.xlsx"),
                      "options": {"rules": rules}, "postconfig": [postconfig]},
        # Saved under the new name first: Calc 7.4 crashes when its accessibility tree is walked while the new
        # chart is (or has just been) in edit mode, and the Save dialog's waits walk it. After the chart,
        # Ctrl+S saves in place and Ctrl+Q quits once that save is done (keys are handled in order), so the
        # window going away shows the file is written, without reading the tree.
        "oracle": [_ready(title), *save_as(out, CALC), _ready(saved), op("hotkey", keys=["ctrl", "Home"]),
                   # Ctrl+Shift+Down extends the selection to the table's last row (no blank cell in A or B)
                   op("hotkey", keys=["shift", "right"]), op("hotkey", keys=["ctrl", "shift", "down"]),
                   # Insert > Chart... (access key C) opens the wizard on its type list; Alt+F is its Finish.
                   *menu(saved, ["alt", "i"], "Chart..."), op("press", key="c"),
                   op("wait_focused", window="Chart Type", role="tree-table", timeout=60), *_down(position),
                   op("hotkey", keys=["alt", "f"]), op("wait_gone", title="Chart Type", timeout=60),
                   # Escape leaves the chart's edit mode, then its selection; a third in case the first came before
                   # the chart took the focus back from the closing wizard (Ctrl+S is lost in edit mode)
                   *(op("press", key="Escape") for _ in range(3)), op("hotkey", keys=["ctrl", "s"]),
                   op("hotkey", keys=["ctrl", "q"]), op("wait_gone", title=saved, timeout=90), DONE],
    }


@functools.cache
def frozen_book(cell_ref: str) -> bytes:
    """A workbook whose first sheet is frozen at ``cell_ref`` (rows above it, columns left of it)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.freeze_panes = cell_ref
    return _saved(wb)


def _plural(k: int, word: str) -> str:
    return f"{'first ' + word if k == 1 else f'first {k} {word}s'}"


def sheet_freeze_panes(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-frozen.xlsx"
    rows_k, cols_k = rng.choice([(1, 0), (1, 1), (2, 0), (2, 1), (1, 2), (3, 1), (0, 1), (2, 2)])
    anchor = f"{'ABC'[cols_k]}{rows_k + 1}"
    head = ["Name", *rng.sample(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug"], rng.randint(3, 6))]
    n = rng.randint(4, 9)
    people = rng.sample(PEOPLE, n)
    rows: list[list[Any]] = [head, *([p, *(rng.randint(0, 99) for _ in head[1:])] for p in people)]
    postconfig, expected = write_expected(f"{stem}-frozen.xlsx", frozen_book(anchor))
    rules = [cell("A2", people[0]), cell(f"A{n + 1}", people[-1]),
             {"type": "freeze", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]
    parts = [_plural(k, w) for k, w in ((rows_k, "row"), (cols_k, "column")) if k]
    stay = "it stays" if len(parts) == 1 and " " not in parts[0].removeprefix("first ") else "they stay"
    title = f"{stem}.xlsx - {CALC}"
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Freeze the "
                       f"{' and the '.join(parts)} of the sheet so that {stay} in view while scrolling, and "
                       f"nothing else. Save the workbook in Excel format as ~/Documents/{stem}-frozen.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes(rows, rng.choice(SHEETS))}),
                   *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": {"func": "compare_table", "result": vm_file(out), "expected": vm_file(expected, "expected.xlsx"),
                      "options": {"rules": rules}, "postconfig": [postconfig]},
        # View > Freeze Rows and Columns (access key R) freezes above and left of the cell cursor.
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), *_down(rows_k), *_right(cols_k),
                   *menu(title, ["alt", "v"], "Freeze Rows and Columns", role="check-menu-item"),
                   op("press", key="r"), *save_as(out, CALC), DONE],
    }


DEPTS = ["Sales", "Legal", "Finance", "Support", "Design", "Research", "Audit", "Payroll"]
"""No entry starts another: the Standard Filter's value box completes what is typed from the column."""


@functools.cache
def filtered_book(ref: str, col: int, value: str) -> bytes:
    """A workbook whose first sheet has an auto-filter over ``ref`` keeping ``value`` in column ``col`` (0-based)."""
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    ws.auto_filter.ref = ref
    ws.auto_filter.filterColumn.append(FilterColumn(colId=col, filters=Filters(filter=[value])))
    return _saved(wb)


def sheet_standard_filter(rng: random.Random) -> dict[str, Any]:
    stem = _stem(rng)
    src, out = f"{DOCS}/{stem}.xlsx", f"{DOCS}/{stem}-filtered.xlsx"
    head = ["Name", rng.choice(["Score", "Hours", "Sales"]), "City", "Department"]
    n = rng.randint(4, 9)
    people = rng.sample(PEOPLE, n)
    col = rng.choice([2, 3])
    pool = rng.sample(CITIES if col == 2 else DEPTS, rng.randint(2, 4))
    keys = [rng.choice(pool) for _ in people]
    keys[rng.randrange(n)] = pool[0]  # the value kept occurs, and so does another one
    keys[rng.choice([i for i in range(n) if keys[i] == pool[0]]) - 1] = pool[1]
    value = pool[0]
    rows: list[list[Any]] = [head]
    for p, k in zip(people, keys, strict=True):
        rows.append([p, rng.randint(1, 500), k if col == 2 else rng.choice(CITIES), k if col == 3 else
                     rng.choice(DEPTS)])
    last = n + 1
    postconfig, expected = write_expected(f"{stem}-filtered.xlsx", filtered_book(f"A1:D{last}", col, value))
    rules = [cell("A2", people[0]), cell(f"A{last}", people[-1]),
             {"type": "filter", "sheet_idx0": "RI0", "sheet_idx1": "EI0"}]
    title = f"{stem}.xlsx - {CALC}"
    return {
        "instruction": f"The workbook ~/Documents/{stem}.xlsx is open in LibreOffice Calc. Filter the table (A1:D"
                       f"{last}, headers in row 1) so that only the rows whose {head[col]} is {value} are shown; "
                       f"hide the others with a filter, do not delete them. Save the workbook in Excel format as "
                       f"~/Documents/{stem}-filtered.xlsx",
        "related_apps": ["libreoffice_calc"],
        "config": [write_files({src: xlsx_bytes(rows)}), *open_app(["libreoffice", "--calc", src], title)],
        "evaluator": {"func": "compare_table", "result": vm_file(out), "expected": vm_file(expected, "expected.xlsx"),
                      "options": {"rules": rules}, "postconfig": [postconfig]},
        # Data > More Filters > Standard Filter... opens on the field of the cursor's column; Tab twice
        # reaches the value (past the condition, "="); Alt+O is OK.
        "oracle": [_ready(title), op("hotkey", keys=["ctrl", "Home"]), op("press", key="down"), *_right(col),
                   *menu(title, ["alt", "d"], "More Filters", role="menu"), *_down(4), op("press", key="right"),
                   op("wait_enabled", window=title, control="Standard Filter...", role="menu-item", timeout=30),
                   op("press", key="enter"),
                   op("wait_focused", window="Standard Filter", role="toggle-button", timeout=60),
                   op("press", key="tab"), op("press", key="tab"), op("type", text=value),
                   op("wait_enabled", window="Standard Filter", control="OK"), op("hotkey", keys=["alt", "o"]),
                   *dialog_closed("Standard Filter", title), *save_as(out, CALC), DONE],
    }
