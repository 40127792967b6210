"""``compare_table`` and ``compare_csv`` on workbooks and CSV files generated here (workbooks.py builds them): a
match scores 1, each kind of mismatch 0, as OSWorld; ``compare_conference_city_in_order`` is in
test_table_cities.py."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openpyxl
import pytest

from osgym.errors import TaskLoadError
from osgym.tasks import metrics
from osgym.tasks.spec import load_task
from tests.metrics.conftest import Call, OSWorld
from tests.metrics.pivots import SALES, Pivot, pivots
from tests.metrics.workbooks import (
    ROWS,
    auto_filter,
    bold,
    book,
    both,
    chart,
    edit,
    freeze,
    hide_row,
    highlight,
    paint,
    sparklined,
    validation,
    zoom,
)


def sparks(result: dict[str, str], expected: dict[str, str]) -> Callable[[Path], tuple[str, str]]:
    def make(tmp: Path) -> tuple[str, str]:
        return sparklined(tmp / "result.xlsx", result), sparklined(tmp / "expected.xlsx", expected)
    return make


@dataclass
class Case:
    """Two generated files, the options, and the score both implementations must give."""

    id: str
    func: str
    make: Callable[[Path], tuple[str | None, Any]]
    options: dict[str, Any]
    want: float
    module: str = "table"
    notes: list[str] = field(default_factory=list)
    osworld: float | str | None = None
    """OSWorld's score where it differs from osgym's, or the start of the error it raises
    (docs/osworld-coverage.md lists each difference)."""


def pair(result: dict[str, Any], expected: dict[str, Any] | None = None) -> Callable[[Path], tuple[str, Any]]:
    def make(tmp: Path) -> tuple[str, Any]:
        return book(tmp / "result.xlsx", **result), book(tmp / "expected.xlsx", **(expected or {}))
    return make


def data(idx0: Any = "RNSheet1", idx1: Any = "ENSheet1", **more: Any) -> dict[str, Any]:
    return {"rules": [{"type": "sheet_data", "sheet_idx0": idx0, "sheet_idx1": idx1, **more}]}


def cell(coordinate: str, idx: Any = "RNSheet1", **props: dict[str, Any]) -> dict[str, Any]:
    return {"rules": [{"type": "check_cell", "sheet_idx": idx, "coordinate": coordinate, "props": props}]}


def fuzzy(**rule: Any) -> dict[str, Any]:
    return {"rules": [{"type": "sheet_fuzzy", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1", "rules": [rule]}]}


def charts(*props: str) -> dict[str, Any]:
    return {"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": list(props)}]}


FILTER = {"rules": [{"type": "filter", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}
SPARKLINE = {"rules": [{"type": "sparkline", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}]}
STYLE = {"rules": [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["bgcolor", "font_bold"]}]}
# The properties every pivot_table rule in OSWorld's Linux task files names.
TASK_PIVOT_PROPS = ["col_fields", "filter", "row_fields", "data_fields"]


def pivot(*props: str, idx0: Any = 0, idx1: Any = "EI0") -> dict[str, Any]:
    return {"rules": [{"type": "pivot_table", "sheet_idx0": idx0, "sheet_idx1": idx1,
                       "pivot_props": list(props or TASK_PIVOT_PROPS)}]}


def pivoted(result: list[Pivot], expected: list[Pivot], on: tuple[int, int] = (0, 0)
            ) -> Callable[[Path], tuple[str, str]]:
    """Sales data on Sheet1, the pivot tables on the ``on[0]``-th sheet of the result, ``on[1]``-th of the
    expected workbook."""
    def make(tmp: Path) -> tuple[str, str]:
        return (book(tmp / "result.xlsx", SALES, ("Sheet1", "Sheet2"), pivots(*result, sheet=on[0])),
                book(tmp / "expected.xlsx", SALES, ("Sheet1", "Sheet2"), pivots(*expected, sheet=on[1])))
    return make


# A list validation covering at least D2:D29 and nothing outside column D (one task file's rule).
DV_RANGES = {"rules": [{"type": "data_validation", "sheet_idx": 0,
                        "dv_props": [{"ranges": {"method": "spreadsheet_range", "ref": ["D2:D29", "D2:D1048576"]},
                                      "type": {"method": "eq", "ref": "list"}}]}]}


def printed(result_lines: str, expected_lines: str) -> Callable[[Path], tuple[str, str]]:
    def make(tmp: Path) -> tuple[str, str]:
        (tmp / "result-Sheet1.csv").write_text(result_lines)
        (tmp / "expected-Sheet1.csv").write_text(expected_lines)
        return book(tmp / "result.xlsx"), book(tmp / "expected.xlsx")
    return make


def files(result: str | None, *expected: str) -> Callable[[Path], tuple[str | None, Any]]:
    def make(tmp: Path) -> tuple[str | None, Any]:
        paths = []
        for i, text in enumerate(expected):
            (tmp / f"expected{i}.csv").write_text(text)
            paths.append(str(tmp / f"expected{i}.csv"))
        if result is not None:
            (tmp / "result.csv").write_text(result)
        return (str(tmp / "result.csv") if result is not None else None,
                paths[0] if len(paths) == 1 else paths)
    return make


def not_a_workbook(tmp: Path) -> tuple[str, str]:
    (tmp / "result.xlsx").write_text("this is not a zip file")
    return str(tmp / "result.xlsx"), book(tmp / "expected.xlsx")


def dated(tmp: Path) -> tuple[str, None]:
    def when(wb: openpyxl.Workbook) -> None:
        wb.worksheets[0]["E2"] = dt.date(2024, 1, 2)
    return book(tmp / "result.xlsx", tweak=when), None


T = "compare_table"
CASES = [
    Case("data-same", T, pair({}), data(), 1.0),
    Case("data-value-differs", T, pair({"tweak": edit("B3", 6)}), data(), 0.0),
    Case("data-text-differs", T, pair({"tweak": edit("A2", "apples")}), data(), 0.0),
    Case("data-extra-row", T, pair({"rows": [*ROWS, ["fig", 1, 3.0]]}), data(), 0.0),
    Case("data-within-precision", T, pair({"tweak": edit("C2", 1.250001)}), data(), 1.0),
    Case("data-beyond-precision", T, pair({"tweak": edit("C2", 1.250001)}), data(precision=6), 0.0),
    Case("data-by-index", T, pair({}), data(0, "EI0"), 1.0),
    Case("data-ri-notation", T, pair({}), data("RI0", "EI0"), 1.0),
    Case("data-ignore-case-same", T, pair({}), data(ignore_case=True), 1.0),
    Case("data-ignore-case-no-effect", T, pair({"tweak": edit("A2", "Apple")}), data(ignore_case=True), 0.0),
    Case("data-missing-sheet", T, pair({}), data("RNTotals", "ENSheet1"), 0.0),
    Case("data-index-out-of-range", T, pair({}), data("RI3", "EI0"), 0.0),
    Case("sheet-names-same", T, pair({"sheets": ("Data", "Sum")}, {"sheets": ("Data", "Sum")}),
         {"rules": [{"type": "sheet_name"}]}, 1.0),
    Case("sheet-names-order", T, pair({"sheets": ("Sum", "Data")}, {"sheets": ("Data", "Sum")}),
         {"rules": [{"type": "sheet_name"}]}, 0.0),
    Case("sheet-names-missing", T, pair({"sheets": ("Data",)}, {"sheets": ("Data", "Sum")}),
         {"rules": [{"type": "sheet_name"}]}, 0.0),
    Case("cell-value-eq", T, pair({}), cell("B2", value={"method": "eq", "ref": 3}), 1.0),
    Case("cell-value-ne", T, pair({}), cell("B2", value={"method": "eq", "ref": 4}), 0.0),
    Case("cell-text-regex", T, pair({}), cell("A3", value={"method": "re.I", "ref": "^PEA"}), 1.0),
    Case("cell-approx", T, pair({}), cell("C3", value={"method": "approx:0.01", "ref": 0.805}), 1.0),
    Case("cell-approx-off", T, pair({}), cell("C3", value={"method": "approx:0.01", "ref": 0.9}), 0.0),
    Case("cell-range", T, pair({}), cell("B3", value={"method": "range.te", "ref": [4, 5]}), 1.0),
    Case("cell-empty-vs-order", T, pair({}), cell("H9", value={"method": "gt", "ref": 0}), 0.0),
    Case("cell-bold-font", T, pair({"tweak": bold("A1")}),
         cell("A1", font_bold={"method": "eq", "ref": True}, font_name={"method": "eq", "ref": "Arial"},
              font_size={"method": "eq", "ref": 14}), 1.0),
    Case("cell-not-bold", T, pair({}), cell("A1", font_bold={"method": "eq", "ref": True}), 0.0),
    Case("cell-number-format", T, pair({}), cell("C2", number_format={"method": "eq", "ref": "General"}), 1.0),
    Case("cell-date-serial", T, dated, cell("E2", value={"method": "eq", "ref": 45293.0}), 1.0),
    Case("cell-in-expected", T, pair({}, {"tweak": edit("B2", 9)}),
         cell("B2", idx="ENSheet1", value={"method": "eq", "ref": 9}), 1.0),
    Case("fuzzy-exact", T, pair({}), fuzzy(range=["A1:C4"], type="exact_match"), 1.0),
    Case("fuzzy-exact-differs", T, pair({"tweak": edit("A4", "plums")}), fuzzy(range=["A1:C4"], type="exact_match"),
         0.0),
    Case("fuzzy-normalised", T, pair({"tweak": edit("A2", "Main Rd")}, {"tweak": edit("A2", "main road")}),
         fuzzy(range=["A2"], type="exact_match", normalization=[["Rd", "Road"]], ignore_case=True), 1.0),
    Case("fuzzy-ratio", T, pair({"tweak": edit("A2", "Main Street 12")}, {"tweak": edit("A2", "Main Str. 12")}),
         fuzzy(range=["A2"], type="fuzzy_match", threshold=80), 1.0),
    Case("fuzzy-ratio-low", T, pair({"tweak": edit("A2", "Elm Avenue")}, {"tweak": edit("A2", "Main Str. 12")}),
         fuzzy(range=["A2"], type="fuzzy_match"), 0.0),
    Case("fuzzy-includes", T, pair({"tweak": edit("A2", "+ apple pie")}), fuzzy(range=["A2"], type="includes"), 1.0),
    Case("fuzzy-included-by", T, pair({"tweak": edit("A2", "+ apple pie")}), fuzzy(range=["A2"], type="included_by"),
         0.0),
    Case("fuzzy-trim-and-drop", T, pair({"tweak": edit("A2", "+ (apple)")}),
         fuzzy(range=["A2"], type="exact_match", trim_leadings="+ ", ignore_chars="()"), 1.0),
    Case("fuzzy-number-vs-text", T, pair({"tweak": edit("B2", "3")}), fuzzy(range=["B2"], type="exact_match"), 0.0),
    Case("freeze-same", T, pair({"tweak": freeze("A2")}, {"tweak": freeze("A2")}),
         {"rules": [{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, 1.0),
    Case("freeze-differs", T, pair({"tweak": freeze("B2")}, {"tweak": freeze("A2")}),
         {"rules": [{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, 0.0),
    Case("freeze-missing", T, pair({}, {"tweak": freeze("A2")}),
         {"rules": [{"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, 0.0),
    Case("zoom-enough", T, pair({"tweak": zoom(150)}),
         {"rules": [{"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 150}]}, 1.0),
    Case("zoom-default", T, pair({}), {"rules": [{"type": "zoom", "sheet_idx": 0, "method": "ge", "ref": 150}]}, 0.0),
    Case("validation-list", T, pair({"tweak": validation('"Yes,No"')}),
         {"rules": [{"type": "data_validation", "sheet_idx": 0,
                     "dv_props": [{"type": {"method": "eq", "ref": "list"},
                                   "formula1": {"method": "str_set_eq", "ref": ["No", "Yes"]}}]}]}, 1.0),
    Case("validation-wrong-list", T, pair({"tweak": validation('"Yes,Maybe"')}),
         {"rules": [{"type": "data_validation", "sheet_idx": 0,
                     "dv_props": [{"formula1": {"method": "str_set_eq", "ref": ["No", "Yes"]}}]}]}, 0.0),
    Case("validation-none", T, pair({}),
         {"rules": [{"type": "data_validation", "sheet_idx": 0,
                     "dv_props": [{"type": {"method": "eq", "ref": "list"}}]}]}, 0.0),
    Case("validation-ranges", T, pair({"tweak": validation('"Yes,No"', "D2:D29")}), DV_RANGES, 1.0),
    Case("validation-ranges-whole-column", T, pair({"tweak": validation('"Yes,No"', "D2:D1048576")}), DV_RANGES, 1.0),
    Case("validation-ranges-too-few-cells", T, pair({"tweak": validation('"Yes,No"', "D2:D20")}), DV_RANGES, 0.0),
    Case("validation-ranges-other-column", T, pair({"tweak": validation('"Yes,No"', "D2:E29")}), DV_RANGES, 0.0),
    Case("rows-hidden-same", T, pair({"tweak": hide_row(3)}, {"tweak": hide_row(3)}),
         {"rules": [{"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}]}, 1.0),
    Case("rows-hidden-differs", T, pair({"tweak": hide_row(2)}, {"tweak": hide_row(3)}),
         {"rules": [{"type": "row_props", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["hidden"]}]}, 0.0),
    Case("chart-same", T, pair({"tweak": chart()}, {"tweak": chart()}),
         charts("title", "legend", "type", "direction", "xtitle", "ytitle", "width", "height", "anchor"), 1.0),
    Case("chart-missing", T, pair({}, {"tweak": chart()}), charts("type"), 0.0),
    Case("chart-other-data", T, pair({"tweak": chart(col=3)}, {"tweak": chart()}), charts(), 0.0),
    Case("chart-title", T, pair({"tweak": chart(title="Stocks")}, {"tweak": chart()}), charts("title"), 0.0),
    Case("chart-title-not-examined", T, pair({"tweak": chart(title="Stocks")}, {"tweak": chart()}), charts("type"),
         1.0),
    Case("chart-kind", T, pair({"tweak": chart(kind="line")}, {"tweak": chart()}), charts("type"), 0.0),
    Case("chart-direction", T, pair({"tweak": chart(direction="bar")}, {"tweak": chart()}), charts("direction"), 0.0),
    Case("chart-place", T, pair({"tweak": chart(at="H9")}, {"tweak": chart()}), charts("anchor"), 0.0),
    Case("filter-same", T, pair({"tweak": auto_filter()}, {"tweak": auto_filter()}), FILTER, 1.0),
    Case("filter-missing", T, pair({}, {"tweak": auto_filter()}), FILTER, 0.0),
    Case("filter-values", T, pair({"tweak": auto_filter(("pear",))}, {"tweak": auto_filter()}), FILTER, 0.0),
    Case("filter-sort", T, pair({"tweak": auto_filter(sort_desc=True)}, {"tweak": auto_filter()}), FILTER, 0.0),
    Case("style-same", T, pair({"tweak": highlight()}, {"tweak": highlight()}), STYLE, 1.0),
    Case("style-cf-as-painted", T, pair({"tweak": highlight()}, {"tweak": both(paint("B3", "FFFF0000"), bold("B3"))}),
         {"rules": [{**STYLE["rules"][0], "props": ["bgcolor"]}]}, 1.0),
    Case("style-cf-missing", T, pair({}, {"tweak": highlight()}), STYLE, 0.0),
    Case("style-cf-other-threshold", T, pair({"tweak": highlight(formula="2")}, {"tweak": highlight()}), STYLE, 0.0),
    Case("style-cf-other-colour", T, pair({"tweak": highlight(rgb="FF00FF00")}, {"tweak": highlight()}), STYLE, 0.0),
    Case("style-cf-between", T, pair({"tweak": highlight("between", "2")}, {"tweak": highlight("between", "2")}),
         STYLE, 1.0),
    Case("style-cf-text", T, pair({"tweak": highlight("equal", '"pear"', where="A2:A4")},
                                  {"tweak": highlight("equal", '"pear"', where="A2:A4")}), STYLE, 1.0),
    Case("style-painted-differently", T, pair({"tweak": paint("A2", "FFFFFF00")}), STYLE, 0.0),
    Case("style-font", T, pair({"tweak": bold("A1")}), {"rules": [{**STYLE["rules"][0], "props": ["font_bold"]}]},
         0.0),
    Case("sparkline-same", T, sparks({"D2": "Sheet1!B2:C2"}, {"D2": "Sheet1!B2:C2"}), SPARKLINE, 1.0),
    Case("sparkline-other-range", T, sparks({"D2": "Sheet1!B2:C3"}, {"D2": "Sheet1!B2:C2"}), SPARKLINE, 0.0),
    Case("sparkline-missing", T, sparks({}, {"D2": "Sheet1!B2:C2"}), SPARKLINE, 0.0),
    Case("sparkline-extra", T, sparks({"D2": "Sheet1!B2:C2", "D3": "Sheet1!B3:C3"}, {"D2": "Sheet1!B2:C2"}),
         SPARKLINE, 0.0),
    Case("pivot-same", T, pivoted([Pivot()], [Pivot()]), pivot(), 1.0),
    Case("pivot-on-second-sheet", T, pivoted([Pivot()], [Pivot()], on=(1, 1)), pivot(idx0="RNSheet2", idx1="ENSheet2"),
         1.0),
    Case("pivot-on-other-sheet", T, pivoted([Pivot()], [Pivot()], on=(1, 0)), pivot(), 0.0),
    Case("pivot-missing", T, pivoted([], [Pivot()]), pivot(), 0.0),
    Case("pivot-extra", T, pivoted([Pivot(), Pivot(source="A1:D6")], [Pivot()]), pivot(), 0.0),
    Case("pivot-source-rows", T, pivoted([Pivot(source="A1:D6")], [Pivot()]), pivot(), 0.0),
    Case("pivot-source-sheet", T, pivoted([Pivot(source_sheet="Sheet2")], [Pivot()]), pivot(), 0.0),
    Case("pivot-unused-first-column", T, pivoted([Pivot(source="B1:D7", rows=(0,), cols=(), data=((1, "sum"),))],
                                                 [Pivot(rows=(1,), cols=(), data=((2, "sum"),))]), pivot(), 1.0),
    Case("pivot-row-field", T, pivoted([Pivot(rows=(1,), cols=(0,))], [Pivot()]), pivot(), 0.0),
    Case("pivot-row-field-not-examined", T, pivoted([Pivot(rows=(1,), cols=(0,))], [Pivot()]),
         pivot("data_fields"), 1.0),
    Case("pivot-col-field", T, pivoted([Pivot(cols=())], [Pivot()]), pivot("col_fields"), 0.0),
    Case("pivot-data-field", T, pivoted([Pivot(data=((3, "sum"),))], [Pivot()]), pivot(), 0.0),
    Case("pivot-aggregation", T, pivoted([Pivot(data=((2, "count"),))], [Pivot()]), pivot(), 0.0),
    Case("pivot-shown-as", T, pivoted([Pivot(show_data_as="percentOfTotal")], [Pivot()]), pivot(), 0.0),
    Case("pivot-second-data-field", T, pivoted([Pivot(data=((2, "sum"), (3, "average")))], [Pivot()]), pivot(), 0.0),
    Case("pivot-filter-field", T, pivoted([Pivot(cols=(), page=(1,))], [Pivot(cols=())]), pivot("filter"), 0.0),
    Case("pivot-filter-selection", T, pivoted([Pivot(page=(1,), cols=(), hidden=((1, 2),))],
                                              [Pivot(page=(1,), cols=(), hidden=((1, 1),))]), pivot(), 0.0),
    Case("pivot-selection-not-examined", T, pivoted([Pivot(hidden=((1, 2),))], [Pivot()]),
         pivot("row_fields", "col_fields", "data_fields"), 1.0),
    Case("pivot-selection-order", T, pivoted([Pivot(reversed_items=(0,))], [Pivot()]), pivot("selection"), 1.0),
    Case("pivot-selection-ordered", T, pivoted([Pivot(reversed_items=(0,))], [Pivot()]),
         pivot("selection", "ordered"), 0.0),
    Case("pivot-data-caption", T, pivoted([Pivot(data_name="Total")], [Pivot()]), pivot(), 1.0),
    Case("pivot-data-caption-examined", T, pivoted([Pivot(data_name="Total")], [Pivot()]),
         pivot("data_fields", "data_fields_name"), 0.0),
    Case("pivot-name", T, pivoted([Pivot(name="Sales")], [Pivot()]), pivot("name"), 0.0),
    Case("pivot-location", T, pivoted([Pivot(at="H3")], [Pivot()]), pivot("location"), 0.0),
    Case("pivot-same-all-props", T, pivoted([Pivot(page=(1,), cols=())], [Pivot(page=(1,), cols=())]),
         pivot("name", "show_total", "show_empty_row", "show_empty_col", "show_headers", "location", "selection",
               "ordered", "filter", "col_fields", "row_fields", "data_fields", "data_fields_name"), 1.0),
    Case("pivot-sheets-missing-both", T, pivoted([], []), pivot(idx0="RNPivots", idx1="ENPivots"), 0.0,
         osworld=1.0),
    Case("pivot-named-source", T, pivoted([Pivot(named_source="Sales")], [Pivot(named_source="Sales")]), pivot(), 1.0,
         osworld="AttributeError"),
    Case("print-same", T, printed("a,b\n1,2\n\n", "a,b\n1,2\n"),
         {"rules": [{"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}]}, 1.0),
    Case("print-differs", T, printed("a,b\n1,3\n", "a,b\n1,2\n"),
         {"rules": [{"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1"}]}, 0.0),
    Case("print-case", T, printed("A,B\n", "a,b\n"),
         {"rules": [{"type": "sheet_print", "sheet_idx0": "RNSheet1", "sheet_idx1": "ENSheet1", "ignore_case": True}]},
         1.0),
    Case("rules-all-must-pass", T, pair({"tweak": freeze("B2")}, {"tweak": freeze("A2")}),
         {"rules": [*data()["rules"], {"type": "freeze", "sheet_idx0": 0, "sheet_idx1": "EI0"}]}, 0.0),
    Case("result-missing", T, lambda tmp: (None, book(tmp / "expected.xlsx")), data(), 0.0),
    Case("result-not-a-workbook", T, not_a_workbook, data(), 0.0),
    Case("csv-same", "compare_csv", files("a,b\n1,2\n", "a,b\n1,2\n"), {}, 1.0),
    Case("csv-differs", "compare_csv", files("a,b\n1,3\n", "a,b\n1,2\n"), {}, 0.0),
    Case("csv-blanks-strict", "compare_csv", files("a,b \n1,2\n", "a,b\n1,2\n"), {}, 0.0),
    Case("csv-blanks-loose", "compare_csv", files("a,b \n 1,2\n", "a,b\n1,2\n"), {"strict": False}, 1.0),
    Case("csv-case", "compare_csv", files("A,B\n", "a,b\n"), {"ignore_case": True}, 1.0),
    Case("csv-any-of", "compare_csv", files("x\n", "y\n", "x\n"), {}, 1.0),
    Case("csv-none-of", "compare_csv", files("z\n", "y\n", "x\n"), {}, 0.0),
    Case("csv-missing", "compare_csv", files(None, "y\n"), {}, 0.0),
]


def _made(case: Case, tmp: Path) -> tuple[str | None, Any]:
    folder = tmp / case.id
    folder.mkdir()
    return case.make(folder)


def _ours(case: Case, tmp: Path) -> float:
    result, expected = _made(case, tmp)
    return metrics.score(case.func, result, expected, case.options)


@pytest.mark.parametrize("case", [c for c in CASES if c.func == "compare_table"], ids=lambda c: c.id)
def test_compare_table(case: Case, tmp_path: Path) -> None:
    assert _ours(case, tmp_path) == case.want


@pytest.mark.parametrize("case", [c for c in CASES if c.func == "compare_csv"], ids=lambda c: c.id)
def test_compare_csv(case: Case, tmp_path: Path) -> None:
    assert _ours(case, tmp_path) == case.want


def _parity(func: str, osworld: OSWorld, tmp_path: Path) -> None:
    cases = [c for c in CASES if c.func == func]
    ours, calls = [], []
    for case in cases:
        result, expected = _made(case, tmp_path)
        ours.append(metrics.score(case.func, result, expected, case.options))
        calls.append(Call(case.module, case.func, result, expected, case.options))
    theirs = osworld.scores(calls)
    differ = [(c.id, o, t) for c, o, t in zip(cases, ours, theirs, strict=True) if not _as_recorded(c, o, t)]
    assert not differ, f"(case, osgym, OSWorld) that differ other than recorded: {differ}"


def _as_recorded(case: Case, ours: float, theirs: float | str) -> bool:
    if case.osworld is None:
        return ours == theirs
    if isinstance(case.osworld, str):
        return isinstance(theirs, str) and theirs.startswith(case.osworld)
    return ours == case.want and theirs == case.osworld


def test_compare_table_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _parity("compare_table", osworld, tmp_path)


def test_compare_csv_parity(osworld: OSWorld, tmp_path: Path) -> None:
    _parity("compare_csv", osworld, tmp_path)


@pytest.mark.parametrize("options, named", [
    ({"rules": [{"type": "pivot_table", "sheet_idx0": 0, "sheet_idx1": "EI0", "pivot_props": ["totals"]}]}, "totals"),
    ({"rules": [{"type": "pivot_table", "sheet_idx0": 0}]}, "rules.0.pivot_table.sheet_idx1"),
    ({"rules": [{"type": "data_validation", "sheet_idx": 0, "dv_props": [{"cells": {"method": "eq"}}]}]}, "cells"),
    ({"rules": [{"type": "sheet_data", "sheet_idx0": 0, "sheet_idx1": "EI0", "ignore_case": "yes"}]},
     "rules.0.sheet_data.ignore_case"),
    ({"rules": [{"type": "style", "sheet_idx0": 0, "sheet_idx1": "EI0", "props": ["shadow"]}]}, "shadow"),
    ({"rules": [{"type": "chart", "sheet_idx0": 0, "sheet_idx1": "EI0", "chart_props": ["colour"]}]}, "colour"),
    ({"rules": [{"type": "sheet_data", "sheet_idx0": "Sheet1", "sheet_idx1": "EI0"}]}, "rules.0.sheet_data.sheet_idx0"),
    ({"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {"glow": {"method": "eq"}}}]},
     "glow"),
    ({"rules": [{"type": "check_cell", "sheet_idx": 0, "coordinate": "A1", "props": {"value": {"method": "like"}}}]},
     "'like'"),
    ({"rules": [{"type": "sheet_fuzzy", "sheet_idx0": 0, "sheet_idx1": 0,
                 "rules": [{"range": ["A1:"], "type": "exact_match"}]}]}, "'A1:'"),
    ({"rules": []}, "rules"),
    ({}, "rules"),
])
def test_bad_table_options_fail_at_load_naming_file_metric_and_option(options: dict[str, Any], named: str,
                                                                      tmp_path: Path) -> None:
    task = tmp_path / "calc-task.json"
    task.write_text(json.dumps({"id": "calc-1", "instruction": "x",
                                "evaluator": {"func": "compare_table", "options": options}}))
    with pytest.raises(TaskLoadError) as info:
        load_task(task)
    msg = str(info.value)
    assert str(task) in msg and "calc-1" in msg and "'compare_table'" in msg and named in msg, msg


def test_compare_table_style_rejects_conditional_formats_it_cannot_evaluate(tmp_path: Path) -> None:
    result = book(tmp_path / "result.xlsx", tweak=highlight(formula="$B$2"))
    expected = book(tmp_path / "expected.xlsx")
    with pytest.raises(ValueError, match="formula '\\$B\\$2': only numbers and quoted texts"):
        metrics.score("compare_table", result, expected, STYLE)
